// Starts and stops the whole service: state store, snapshot registry, DuckDB pool and HTTP server.
import { once } from 'node:events';
import { MAX_OVERLAYS } from './snapshots/delta-layout.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { redisConfigured, type Config } from './config.js';
import { createApp } from './http/app.js';
import { openAuditLog } from './audit/audit-log.js';
import { errorBody, JSONAPI } from './http/jsonapi.js';
import { ApiError } from './errors.js';
import { MAX_HEADER_BYTES } from './limits.js';
import type { Logger } from './log.js';
import { QueryPool } from './pool/query-pool.js';
import { SnapshotRegistry } from './snapshots/read/current-snapshot.js';
import { openStateStore } from './store/open-store.js';
import { connectRedis, whenReady } from './redis.js';
import { OrganizationReads } from './metrics/organization-reads.js';

/** How long a starting server waits for its Redis connection before it listens anyway. */
const REDIS_START_WAIT_MS = 3000;

export interface RunningServer {
  url: string;
  server: Server;
  /** The snapshots it serves; the suite polls it by hand. */
  snapshots: SnapshotRegistry;
  /** The query pool, for its counters (tests, metrics). */
  pool: QueryPool;
  /** Stops accepting, lets in-flight requests finish for the grace period, interrupts the rest, closes. */
  shutdown(): Promise<void>;
}

export async function startServer(config: Config, logger: Logger): Promise<RunningServer> {
  const redis = redisConfigured(config) ? connectRedis(config, logger) : undefined;
  // Commands fail at once until the connection is ready (no offline queue): an instance that listened
  // before then answered its first requests 503 (token checks) and let them past the rate limit uncounted.
  // Redis down does not stop the start: the service serves without it, degraded.
  if (redis) await whenReady(redis, REDIS_START_WAIT_MS).catch((e: Error) => logger.log('warn', 'starting before Redis is ready', { error: e.message }));
  const store = await openStateStore(config, redis, logger);
  const snapshots = new SnapshotRegistry(config.dataDir, config.snapshotPollMs, logger, { keep: config.snapshotKeep, keepDays: config.snapshotKeepDays });
  await snapshots.start();
  const pool = new QueryPool({
    workers: config.poolWorkers,
    concurrencyPerWorker: config.workerConcurrency,
    threads: config.duckdbThreads,
    memoryLimit: config.duckdbMemoryLimit,
    exportMemoryLimit: config.exportMemoryLimit,
    tempDirectory: join(config.dataDir, 'tmp', 'duckdb'),
    maxQueue: config.poolMaxQueue,
    maxWaitMs: config.poolMaxWaitMs,
    maxExportWaitMs: config.poolMaxExportWaitMs,
    exportConcurrency: config.exportConcurrency ?? undefined,
    // History reads every retained snapshot for a trend: keep them attached rather than re-attach each time,
    // with the layer files a batch snapshot reads besides its base (the whole layer, overlays, two deltas).
    attachedMax: config.snapshotKeep + config.snapshotKeepDays + 1 + MAX_OVERLAYS + 3,
  });
  let draining = false;
  const audit = await openAuditLog(config.auditLog);
  if (audit.broken !== null) logger.log('error', 'the audit log cannot be written: auditor tokens are answered 503', { error: audit.broken });
  const reads = new OrganizationReads(config.dataDir, undefined, (e) => logger.log('warn', 'organization reads not written', { error: e.message }));
  reads.start();
  const app = createApp({ config, logger, snapshots, pool, store, audit, redis, reads, isDraining: () => draining });
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, app.callback());
  // Requests Node rejects before Koa sees them (oversized or malformed headers) still get a JSON:API body.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const [status, title, detail] = err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', `The request headers may be at most ${MAX_HEADER_BYTES} bytes.`]
      : [400, 'Bad Request', 'The request is not valid HTTP.'];
    const body = errorBody(new ApiError(status, title.toLowerCase(), detail));
    socket.end(`HTTP/1.1 ${status} ${title}\r\nContent-Type: ${JSONAPI}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  server.keepAliveTimeout = 5000;
  server.listen(config.port, config.host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  logger.log('info', 'listening', { url, snapshot: snapshots.current.status === 'ready' ? snapshots.current.snapshot.id : null, pool: pool.concurrency });

  let stopping: Promise<void> | undefined;
  const shutdown = () => (stopping ??= (async () => {
    draining = true;
    logger.log('info', 'shutting down', { drain_ms: config.shutdownDrainMs, grace_ms: config.shutdownGraceMs });
    // Still serving, /readyz answering 503: a balancer takes the instance out before it stops accepting.
    if (config.shutdownDrainMs > 0) await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs));
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const grace = new Promise<'grace'>((resolve) => setTimeout(() => resolve('grace'), config.shutdownGraceMs).unref());
    if ((await Promise.race([closed.then(() => 'closed' as const), grace])) === 'grace') {
      logger.log('warn', 'grace period over: interrupting the remaining queries');
    }
    await pool.close(); // interrupts whatever still runs, waits for every task to settle
    server.closeAllConnections();
    await closed;
    await snapshots.close(); // its links, once no worker reads them
    await store.close();
    await audit.close();
    await reads.close();
    await redis?.close();
    logger.log('info', 'stopped');
  })());
  return { url, server, snapshots, pool, shutdown };
}
