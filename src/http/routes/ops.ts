// Routes without a token: ping (clients call it first, interface §7), liveness and readiness.
import { Router } from '@koa/router';
import type { QueryPool } from '../../pool/query-pool.js';
import type { RedisConnection } from '../../redis.js';
import type { SnapshotRegistry } from '../../snapshots/read/current-snapshot.js';
import type { RequestState } from '../state.js';

export function opsRoutes(router: Router<RequestState>, deps: { snapshots: SnapshotRegistry; pool: QueryPool; redis?: RedisConnection; isDraining: () => boolean }): void {
  router.get('/api/v2/ping', (ctx) => { ctx.status = 204; });
  router.get('/healthz', (ctx) => { ctx.body = { status: 'ok' }; });
  router.get('/readyz', (ctx) => {
    const s = deps.snapshots.current;
    const ready = s.status === 'ready' && !deps.isDraining();
    ctx.status = ready ? 200 : 503;
    ctx.body = {
      status: ready ? 'ready' : 'not ready',
      snapshot: s.status === 'ready' ? { status: 'ready', id: s.snapshot.id } : s.status === 'broken' ? { status: 'broken', id: s.id, error: s.error } : { status: 'none' },
      pool: { concurrency: deps.pool.concurrency, queued: deps.pool.queueSize },
      // Reported, not required: without Redis, queries still run on cached tokens and the limiter fails open.
      redis: deps.redis ? { state: deps.redis.state() } : { state: 'not configured' },
      draining: deps.isDraining(),
    };
  });
}
