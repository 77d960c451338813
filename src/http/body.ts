// Request bodies (interface §6): JSON:API or plain JSON, at most 64 KiB. Wrong type → 415, too large →
// 413 (checked on Content-Length first, then while reading), unparsable → 400. Never a 500.
import type { ParameterizedContext } from 'koa';
import { ApiError } from '../errors.js';

export const MAX_BODY_BYTES = 64 * 1024;
const TYPES = new Set(['application/vnd.api+json', 'application/json']);

export async function readJsonBody(ctx: ParameterizedContext): Promise<unknown> {
  const type = (ctx.get('Content-Type').split(';')[0] ?? '').trim().toLowerCase();
  if (!TYPES.has(type)) {
    throw new ApiError(415, 'unsupported media type', 'Send the body as application/vnd.api+json or application/json.', { header: 'Content-Type' });
  }
  const tooLarge = () => new ApiError(413, 'payload too large', `The body may be at most ${MAX_BODY_BYTES} bytes.`);
  const declared = Number(ctx.get('Content-Length') || 0);
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      // Stop reading; the connection is closed after the answer so the rest of the upload is not waited for.
      ctx.set('Connection', 'close');
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new ApiError(400, 'malformed body', 'The body is not valid UTF-8.', { pointer: '' });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ApiError(400, 'malformed body', `The body is not valid JSON: ${(e as Error).message}.`, { pointer: '' });
  }
}
