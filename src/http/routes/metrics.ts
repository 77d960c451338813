// GET /metrics in the Prometheus text format. Off unless configured: METRICS_TOKEN turns it on behind that
// bearer token (what a Prometheus scrape config sends); METRICS_PUBLIC=1 serves it without one, for a
// deployment where only the scraper reaches the port.
import type { Router } from '@koa/router';
import { timingSafeEqual } from 'node:crypto';
import { bearerOf } from '../../access/tokens.js';
import { notFound, unauthorized } from '../../errors.js';
import type { Metrics } from '../../metrics/metrics.js';
import type { RequestState } from '../state.js';

export interface MetricsAccess {
  token: string | null;
  public: boolean;
}

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

export function metricsRoutes(router: Router<RequestState>, metrics: Metrics, access: MetricsAccess): void {
  router.get('/metrics', async (ctx) => {
    if (!access.public && !access.token) throw notFound();
    if (access.token) {
      const bearer = bearerOf(ctx.get('Authorization') || undefined);
      if (!bearer || !same(bearer, access.token)) throw unauthorized('The metrics token is required: send "Authorization: Bearer <METRICS_TOKEN>".');
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  });
}
