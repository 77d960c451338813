// Size limits answered before any other work (docs/decisions.md): a long URL is refused with 414 before
// its query string is decoded or a token is looked up.
import type { Middleware } from 'koa';
import { ApiError } from '../../errors.js';
import type { RequestState } from '../state.js';

export const MAX_URL_BYTES = 8 * 1024;

export const urlLimit = (): Middleware<RequestState> => async (ctx, next) => {
  if (Buffer.byteLength(ctx.originalUrl) > MAX_URL_BYTES) {
    throw new ApiError(414, 'URI too long', `The request URL may be at most ${MAX_URL_BYTES} bytes; send fewer filters or shorter values.`);
  }
  await next();
};
