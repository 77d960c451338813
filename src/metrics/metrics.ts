// Prometheus metrics (prom-client), one registry per app so that several servers in one process (tests)
// never share counters. Request facts come from the request's state after it ends (the handlers annotate
// it, as they do for the request log); pool, snapshot and Redis gauges are read at scrape time.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ResponseCache } from '../http/response-cache.js';
import type { QueryPool } from '../pool/query-pool.js';
import type { RedisConnection } from '../redis.js';
import type { SnapshotRegistry } from '../snapshots/read/current-snapshot.js';
import type { QueryKind } from '../http/state.js';
import { rejectedBatchCount } from '../snapshots/snapshot-dir.js';

export interface MetricSources {
  pool: QueryPool;
  cache: ResponseCache;
  snapshots: SnapshotRegistry;
  redis?: RedisConnection;
  config: { dataDir: string };
}

/** What one finished request contributes. */
export interface RequestFacts {
  route: string;
  method: string;
  status: number;
  /** The kind of the request's valid token (organization, team, user, auditor), or `none`. */
  tokenKind: string;
  seconds: number;
  rows?: number;
  outcome?: string;
  query?: { view: string; kind: QueryKind; seconds?: number; bytes?: number };
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'route' | 'method' | 'status' | 'token_kind'>;
  private readonly requestSeconds: Histogram<'route'>;
  private readonly querySeconds: Histogram<'view' | 'kind'>;
  private readonly rows: Counter<'view' | 'kind'>;
  private readonly bytes: Counter<'view' | 'kind'>;
  private readonly timeouts: Counter<'view' | 'kind'>;
  private readonly cancellations: Counter<'view' | 'kind'>;
  private readonly rateLimited: Counter;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'explorer_' });
    this.requests = new Counter({ name: 'explorer_http_requests_total', help: 'HTTP requests by route pattern, method, status and the kind of token that made them (none without a valid one).', labelNames: ['route', 'method', 'status', 'token_kind'], registers });
    this.requestSeconds = new Histogram({ name: 'explorer_http_request_duration_seconds', help: 'Time to answer a request, whole CSV exports included.', labelNames: ['route'], buckets: LATENCY_BUCKETS, registers });
    this.querySeconds = new Histogram({ name: 'explorer_query_duration_seconds', help: 'Time from handing a query to the pool until its result (page) or last byte (export), by view.', labelNames: ['view', 'kind'], buckets: LATENCY_BUCKETS, registers });
    this.rows = new Counter({ name: 'explorer_rows_returned_total', help: 'Rows sent to clients.', labelNames: ['view', 'kind'], registers });
    this.bytes = new Counter({ name: 'explorer_bytes_returned_total', help: 'Bytes of query results sent to clients.', labelNames: ['view', 'kind'], registers });
    this.timeouts = new Counter({ name: 'explorer_query_timeouts_total', help: 'Queries stopped at their deadline (504, or a cut-off export).', labelNames: ['view', 'kind'], registers });
    this.cancellations = new Counter({ name: 'explorer_query_cancellations_total', help: 'Queries cancelled because the client went away.', labelNames: ['view', 'kind'], registers });
    this.rateLimited = new Counter({ name: 'explorer_rate_limited_total', help: 'Requests refused with 429 by the rate limit.', registers });

    const { pool, snapshots, redis, cache } = sources;
    const gauge = (name: string, help: string, value: () => number) =>
      new Gauge({ name, help, registers, collect() { this.set(value()); } });
    gauge('explorer_pool_queue_depth', 'Requests waiting for a worker slot.', () => pool.queueSize);
    gauge('explorer_pool_active_queries', 'Queries running in the workers now.', () => pool.active);
    gauge('explorer_pool_slots', 'Queries that may run at once.', () => pool.concurrency);
    type WorkerMemory = typeof pool.workerMemory extends ReadonlyMap<number, infer M> ? M : never;
    const perWorker = (name: string, help: string, value: (m: WorkerMemory) => number) => new Gauge({
      name, help, labelNames: ['worker'], registers,
      collect() {
        this.reset();
        for (const [worker, m] of pool.workerMemory) this.set({ worker: String(worker) }, value(m));
      },
    });
    perWorker('explorer_duckdb_memory_bytes', "Memory each worker's DuckDB instance holds (duckdb_memory()), at its last report.", (m) => m.bytes);
    perWorker('explorer_worker_heap_used_bytes', "Each worker thread's own V8 heap in use, at its last report.", (m) => m.heapUsed);
    perWorker('explorer_worker_heap_total_bytes', "Each worker thread's own V8 heap committed, at its last report.", (m) => m.heapTotal);
    gauge('explorer_pool_utilization', 'Share of worker capacity in use since the pool started (Piscina).', () => pool.utilization);

    const sinceScrape = (name: string, help: string, value: () => number) => {
      let seen = 0;
      return new Counter({ name, help, registers, collect() { this.inc(value() - seen); seen = value(); } });
    };
    sinceScrape('explorer_pool_tasks_started_total', 'Tasks handed to a DuckDB worker.', () => pool.tasksStarted);
    sinceScrape('explorer_pool_refused_total', 'Requests refused with 503 because too many were waiting.', () => pool.refused);
    sinceScrape('explorer_response_cache_hits_total', 'JSON pages answered from the response cache.', () => cache.hits);
    sinceScrape('explorer_response_cache_misses_total', 'JSON pages that had to be queried (not in the response cache).', () => cache.misses);
    gauge('explorer_response_cache_bytes', 'Bytes of JSON pages held by the response cache.', () => cache.bytes);
    gauge('explorer_response_cache_entries', 'JSON pages held by the response cache.', () => cache.size);
    gauge('explorer_snapshot_ready', '1 when a snapshot is loaded and readable.', () => (snapshots.current.status === 'ready' ? 1 : 0));
    gauge('explorer_snapshot_age_seconds', 'Seconds since the current snapshot was loaded.', () => {
      const s = snapshots.current;
      return s.status === 'ready' ? (Date.now() - Date.parse(s.snapshot.manifest.createdAt)) / 1000 : Number.NaN;
    });
    // Change batches (docs/changes.md): counted as this server sees the snapshots that include them.
    const batches = new Counter({ name: 'explorer_batches_applied_total', help: 'Change batches included in the snapshots this server switched to.', registers });
    const delay = new Histogram({
      name: 'explorer_batch_delay_seconds', help: 'From a change batch\'s arrival (in a spool\'s incoming/, or the start of apply) to its snapshot becoming current.',
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300], registers,
    });
    snapshots.onBatches = (applied, manifest) => {
      batches.inc(applied.length);
      for (const b of applied) delay.observe(Math.max(0, (Date.parse(manifest.createdAt) - Date.parse(b.arrivedAt)) / 1000));
    };
    new Gauge({
      name: 'explorer_batches_rejected', help: 'Change batches rejected in this DATA_DIR (by apply or ingest), since it was created.', registers,
      async collect() { this.set(await rejectedBatchCount(sources.config.dataDir)); },
    });
    gauge('explorer_snapshots_retained', 'Snapshots kept as history (SNAPSHOT_KEEP and SNAPSHOT_KEEP_DAYS), the current one included.', () => snapshots.retainedCount);
    new Gauge({
      name: 'explorer_snapshot_info', help: 'The current snapshot, as a label.', labelNames: ['snapshot'], registers,
      collect() {
        this.reset();
        const s = snapshots.current;
        if (s.status !== 'none') this.set({ snapshot: s.status === 'ready' ? s.snapshot.id : s.id }, 1);
      },
    });
    gauge('explorer_redis_configured', '1 when REDIS_URL or REDIS_CLUSTER is set.', () => (redis ? 1 : 0));
    gauge('explorer_redis_up', '1 when Redis is connected (0 while connecting, down, or not configured).', () => (redis?.state() === 'ready' ? 1 : 0));
  }

  observe(r: RequestFacts): void {
    this.requests.inc({ route: r.route, method: r.method, status: String(r.status), token_kind: r.tokenKind });
    this.requestSeconds.observe({ route: r.route }, r.seconds);
    if (r.status === 429) this.rateLimited.inc();
    const q = r.query;
    if (!q) return;
    const labels = { view: q.view, kind: q.kind };
    if (r.status === 504 || r.outcome === 'aborted: timeout') this.timeouts.inc(labels);
    if (r.status === 499 || r.outcome === 'aborted: cancelled') this.cancellations.inc(labels);
    if (q.seconds !== undefined) this.querySeconds.observe(labels, q.seconds);
    if (r.rows !== undefined) this.rows.inc(labels, r.rows);
    if (q.bytes !== undefined) this.bytes.inc(labels, q.bytes);
  }
}
