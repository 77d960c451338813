import type { Middleware } from 'koa';
import type { Metrics } from '../../metrics/metrics.js';
import type { RequestState } from '../state.js';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS']);

/** Counts every request once it is answered, labelled by route pattern (never the path: it holds names) and token kind. */
export const recordMetrics = (metrics: Metrics): Middleware<RequestState> => async (ctx, next) => {
  const started = performance.now();
  try {
    await next();
  } finally {
    const s = ctx.state;
    metrics.observe({
      route: s.route ?? (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched',
      method: METHODS.has(ctx.method) ? ctx.method : 'other',
      status: ctx.status,
      tokenKind: s.token?.kind ?? 'none',
      seconds: (performance.now() - started) / 1000,
      rows: s.rows,
      outcome: s.outcome,
      query: s.query,
    });
  }
};
