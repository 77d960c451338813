import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { RequestState } from '../state.js';

const SAFE = /^[A-Za-z0-9._:-]{1,128}$/;

/** Accepts a caller's X-Request-Id when it is harmless to log, otherwise makes one; echoes it back. */
export const requestId = (): Middleware<RequestState> => async (ctx, next) => {
  const given = ctx.get('X-Request-Id');
  ctx.state.requestId = SAFE.test(given) ? given : randomUUID();
  ctx.set('X-Request-Id', ctx.state.requestId);
  await next();
};
