// The Koa application: thin middleware (request id, log, errors, access) and one router file per resource.
import { Router } from '@koa/router';
import Koa from 'koa';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { RedisConnection } from '../redis.js';
import type { QueryPool } from '../pool/query-pool.js';
import type { SnapshotRegistry } from '../snapshots/read/current-snapshot.js';
import type { StateStore } from '../store/state-store.js';
import { acrossOrganizations, authorizeOrganization, identify, requireToken, refuseWritesOfReaders, refuseWritesOfReadersWithoutRoute } from './middleware/access.js';
import { auditRequests } from './middleware/audit.js';
import type { AuditLog } from '../audit/audit-log.js';
import { rateLimit } from './middleware/rate-limit.js';
import { errors } from './middleware/errors.js';
import { urlLimit } from './middleware/limits.js';
import { requestId } from './middleware/request-id.js';
import { requestLog } from './middleware/request-log.js';
import { recordMetrics } from './middleware/metrics.js';
import { metricsRoutes } from './routes/metrics.js';
import { Metrics } from '../metrics/metrics.js';
import { explorerRoutes } from './routes/explorer.js';
import { explorerHistoryRoutes, historyRoutes } from './routes/history.js';
import { explorerPageRoutes } from './routes/explorer-page.js';
import { opsRoutes } from './routes/ops.js';
import { ResponseCache } from './response-cache.js';
import { openApiRoutes } from './routes/openapi.js';
import { notificationConfigurationRoutes } from './routes/notification-configurations.js';
import { savedViewRoutes } from './routes/saved-views.js';
import { explorerSummaryRoutes, savedSummaryRoutes } from './routes/summary.js';
import type { RequestState } from './state.js';
import type { OrganizationReads } from '../metrics/organization-reads.js';

export interface Services {
  config: Config;
  logger: Logger;
  snapshots: SnapshotRegistry;
  pool: QueryPool;
  store: StateStore;
  /** Where the requests of auditor tokens are accounted for (AUDIT_LOG). */
  audit: AuditLog;
  redis?: RedisConnection;
  /** Which organizations this server reads (for the follower's tidying); none in a test that does not ask. */
  reads?: OrganizationReads;
  isDraining: () => boolean;
}

export function createApp(services: Services): Koa<RequestState> {
  // Behind HAProxy (TRUST_PROXY) the client's address is the last X-Forwarded-For entry, the one our
  // balancer appended: the rate limit of requests without a token counts clients, not the balancer.
  const app = new Koa<RequestState>({ proxy: services.config.trustProxy, maxIpsCount: 1 });
  app.silent = true; // failures are logged by the error middleware, as JSON lines

  const cache = new ResponseCache(services.config.responseCacheBytes);
  const metrics = new Metrics({ ...services, cache });
  const ops = new Router<RequestState>();
  opsRoutes(ops, services);
  metricsRoutes(ops, metrics, { token: services.config.metricsToken, public: services.config.metricsPublic });
  explorerPageRoutes(ops, { engine: services.config.engine }); // the page's static files: no data, no token
  openApiRoutes(ops, services); // token-checked inside: it is not an organization route

  const organization = new Router<RequestState>({ prefix: '/api/v2/organizations/:organization_name' });
  const { config } = services;
  const limit = rateLimit({ max: config.rateLimitMax, windowMs: config.rateLimitWindowMs, redis: services.redis, prefix: config.redisPrefix, logger: services.logger });
  organization.use(
    identify(services.store, config.tokenMaxTtlMs),
    auditRequests(services.audit, services.logger),
    limit,
    requireToken(),
    authorizeOrganization(services.snapshots, services.reads),
    refuseWritesOfReaders(),
  );
  explorerRoutes(organization, { ...services, cache });
  explorerHistoryRoutes(organization, { ...services, cache });
  explorerSummaryRoutes(organization, { ...services, cache });
  const saved = savedViewRoutes(organization, { ...services, cache });
  // A saved view's changes, trend and summary: the history and summary routes under its path, with its query.
  historyRoutes(organization, { ...services, cache }, '/explorer/views/:view_id', (ctx) => saved.query(ctx, true), (ctx) => saved.query(ctx, false));
  savedSummaryRoutes(organization, { ...services, cache }, '/explorer/views/:view_id', (ctx, paging) => saved.query(ctx, paging));
  notificationConfigurationRoutes(organization, services);

  // Across organizations (docs/access.md): the explorer's queries, exports and summaries over every
  // organization the token reaches, each request in the audit log.
  const platform = new Router<RequestState>({ prefix: '/api/v2' });
  platform.use(
    '/explorer',
    identify(services.store, config.tokenMaxTtlMs),
    auditRequests(services.audit, services.logger, true),
    limit,
    requireToken(),
    acrossOrganizations(services.snapshots),
  );
  explorerRoutes(platform, { ...services, cache }, true);
  explorerSummaryRoutes(platform, { ...services, cache }, true);

  app.use(requestId());
  app.use(requestLog(services.logger));
  app.use(recordMetrics(metrics));
  app.use(errors(services.logger));
  app.use(urlLimit());
  app.use(ops.routes());
  app.use(refuseWritesOfReadersWithoutRoute(services.store, config.tokenMaxTtlMs, services.snapshots, { log: services.audit, logger: services.logger }));
  app.use(organization.routes());
  app.use(organization.allowedMethods({ throw: false }));
  app.use(platform.routes());
  app.use(platform.allowedMethods({ throw: false }));
  return app;
}
