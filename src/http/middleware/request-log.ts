import type { Middleware } from 'koa';
import type { Logger } from '../../log.js';
import type { RequestState } from '../state.js';

/** One JSON line per request. The route pattern is logged, never headers (tokens) or the query string. */
export const requestLog = (logger: Logger): Middleware<RequestState> => async (ctx, next) => {
  const started = performance.now();
  try {
    await next();
  } finally {
    const s = ctx.state;
    logger.log(ctx.status >= 500 ? 'error' : 'info', 'request', {
      request_id: s.requestId,
      method: ctx.method,
      route: s.route ?? (ctx as { _matchedRoute?: string })._matchedRoute ?? null,
      organization: s.organization ?? null,
      status: ctx.status,
      duration_ms: Math.round((performance.now() - started) * 10) / 10,
      rows: s.rows ?? null,
      ...(s.outcome ? { outcome: s.outcome } : {}),
      ...(s.error ? { error: s.error } : {}),
      snapshot: s.lease?.snapshot.id ?? null,
    });
    s.lease?.release();
    for (const lease of s.history ?? []) lease.release();
  }
};
