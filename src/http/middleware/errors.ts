import type { Middleware } from 'koa';
import { ApiError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { sendError } from '../jsonapi.js';
import type { RequestState } from '../state.js';

/** Renders ApiErrors as JSON:API; anything else is a bug: logged with its stack, answered as a bare 500. */
export const errors = (logger: Logger): Middleware<RequestState> => async (ctx, next) => {
  try {
    await next();
    // Nothing answered: render the router's bare statuses as JSON:API too (Allow stays set by the router).
    // OPTIONS and methods the router has never heard of (its 501) are wrong methods like any other: 405 on
    // a known route, 404 elsewhere — bad input never yields a 5xx.
    const allow = ctx.response.get('Allow');
    const routerOptions = ctx.method === 'OPTIONS' && ctx.status === 200 && !ctx.body && allow !== '';
    if ((ctx.body === undefined || routerOptions) && ctx.respond !== false) {
      if (ctx.status === 405 || routerOptions || (ctx.status === 501 && allow !== '')) {
        sendError(ctx, new ApiError(405, 'method not allowed', `${ctx.method} is not allowed here; use ${allow}.`));
      } else if (ctx.status === 404 || ctx.status === 501) {
        ctx.remove('Allow');
        sendError(ctx, new ApiError(404, 'not found', `No route matches ${ctx.method} ${ctx.path}.`));
      }
    }
  } catch (e) {
    if (ctx.headerSent || ctx.respond === false) {
      logger.log('error', 'failure after the response started', { request_id: ctx.state.requestId, error: String(e) });
      ctx.res.destroy();
      return;
    }
    if (e instanceof ApiError) {
      if (e.internalCause !== undefined) ctx.state.error = e.internalCause;
      return sendError(ctx, e);
    }
    const status = (e as { status?: number; expose?: boolean }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return sendError(ctx, new ApiError(status, 'bad request', (e as Error).message));
    }
    logger.log('error', 'unhandled error', { request_id: ctx.state.requestId, error: (e as Error).stack ?? String(e) });
    sendError(ctx, new ApiError(500, 'internal error', `Something went wrong on our side; quote request id ${ctx.state.requestId} when reporting it.`));
  }
};
