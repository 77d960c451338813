import type { ParameterizedContext } from 'koa';
import { ApiError } from '../errors.js';

export const JSONAPI = 'application/vnd.api+json';

export function errorBody(e: ApiError): string {
  const error: Record<string, unknown> = { status: String(e.status), title: e.title, detail: e.detail };
  if (e.source) error.source = e.source;
  return JSON.stringify({ errors: [error] });
}

export function sendError(ctx: ParameterizedContext, e: ApiError): void {
  ctx.status = e.status;
  for (const [k, v] of Object.entries(e.headers)) ctx.set(k, v);
  ctx.type = JSONAPI;
  ctx.body = errorBody(e);
}

export function sendJson(ctx: ParameterizedContext, status: number, body: unknown): void {
  ctx.status = status;
  ctx.type = JSONAPI;
  ctx.body = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
}
