import type { ParameterizedContext } from 'koa';
import { ApiError } from '../errors.js';
import { entityTag, notModified, REVALIDATE } from './etag.js';

export const JSONAPI = 'application/vnd.api+json';

export function errorBody(e: ApiError): string {
  const error: Record<string, unknown> = { status: String(e.status), title: e.title, detail: e.detail };
  if (e.source) error.source = e.source;
  return JSON.stringify({ errors: [error] });
}

export function sendError(ctx: ParameterizedContext, e: ApiError): void {
  ctx.status = e.status;
  // An error is no representation of what a handler set out to answer before it failed (a query that timed
  // out after its snapshot and tag were chosen): it carries neither's validators.
  ctx.remove('Last-Modified');
  ctx.remove('ETag');
  for (const [k, v] of Object.entries(e.headers)) ctx.set(k, v);
  ctx.type = JSONAPI;
  ctx.body = errorBody(e);
}

export function sendJson(ctx: ParameterizedContext, status: number, body: unknown): void {
  ctx.status = status;
  ctx.type = JSONAPI;
  ctx.body = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
}

/** A 200 GET document with an ETag of its own bytes; 304 when the client holds them already. */
export function sendJsonTagged(ctx: ParameterizedContext, body: unknown): void {
  const text = JSON.stringify(body);
  const etag = entityTag([text]);
  ctx.set('Cache-Control', REVALIDATE);
  if (notModified(ctx, etag)) return;
  sendJson(ctx, 200, text);
  ctx.set('ETag', etag);
}
