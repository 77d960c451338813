// Every setting comes from the environment, and this is the one place that reads it; docs/configuration.md
// lists every variable with its default (test/unit/configuration.test.ts holds the two together).
import { availableParallelism, homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { ENGINE_PATTERN } from './catalog/catalog.js';
import {
  DEFAULT_SNAPSHOT_KEEP, DEFAULT_SNAPSHOT_KEEP_DAYS, DEFAULT_SNAPSHOT_KEEP_FULL, MIN_SNAPSHOT_KEEP, MIN_SNAPSHOT_KEEP_FULL,
} from './snapshots/snapshot-dir.js';
import { DEFAULT_WRITER_WAIT_MS } from './snapshots/writer-lock.js';
import { BATCH_THREADS, COALESCE_MAX_MS, LIFT_ROWS, TIDY_CPU, TIDY_ROWS, TIDY_SHARE, TIDY_UNIT_ROWS, WHOLE_ROWS } from './snapshots/delta-layout.js';
import { parseDuration } from './access/lifetimes.js';

export interface Config {
  dataDir: string;
  host: string;
  port: number;
  publicUrl: string | null;
  engine: string;
  queryTimeoutMs: number;
  poolWorkers: number;
  workerConcurrency: number;
  duckdbThreads: number;
  duckdbMemoryLimit: string;
  /** DuckDB's memory limit per worker for exports of stored lines (workers/engine.ts). */
  exportMemoryLimit: string;
  /** DuckDB's memory limit while loading a snapshot (sorts past it spill to the snapshot's temporary directory). */
  loadMemoryLimit: string;
  poolMaxQueue: number;
  poolMaxWaitMs: number;
  poolMaxExportWaitMs: number;
  /** Bearer token that GET /metrics requires; with none and metricsPublic false, /metrics is off. */
  metricsToken: string | null;
  metricsPublic: boolean;
  /** NOTIFY_ALLOW_HOSTS: hosts (lower case, with or without a port) notifications may reach over http or at a private address. */
  notifyAllowHosts: string[];
  /** How long a notification request may take (NOTIFY_TIMEOUT_MS), how many tries it gets, the first retry's wait. */
  notifyTimeoutMs: number;
  notifyMaxAttempts: number;
  notifyBackoffMs: number;
  /** How long the sender's lease lasts unrenewed (NOTIFY_LEASE_MS): a dead sender's successor takes over after it. */
  notifyLeaseMs: number;
  /** The notifier's /metrics port on HOST (NOTIFY_METRICS_PORT); 0: none. */
  notifyMetricsPort: number;
  exportConcurrency: number | null;
  snapshotPollMs: number;
  /**
   * After SIGTERM: how long the instance keeps serving while /readyz answers 503, so that a balancer's
   * health checks take it out before it stops accepting (docs/deployment.md). Then the grace period.
   */
  shutdownDrainMs: number;
  shutdownGraceMs: number;
  /** Behind a balancer that sets X-Forwarded-For: the client's address is its last entry. */
  trustProxy: boolean;
  /** Shared state (tokens, saved views, rate-limit counters) lives in Redis when set. */
  redisUrl: string | null;
  /** …or in a Redis Cluster reached through these seed nodes (host:port). */
  redisCluster: string[] | null;
  redisPrefix: string;
  /**
   * Replicas a token or saved-view write waits for (Redis WAIT) before it is acknowledged, and for how long:
   * a write a primary acknowledged and lost in a failover would otherwise be gone. 1 with a cluster, 0 with one Redis.
   */
  redisWaitReplicas: number;
  redisWaitMs: number;
  rateLimitMax: number;
  rateLimitWindowMs: number;
  /** Bytes of finished JSON pages kept by entity tag (0: off). */
  responseCacheBytes: number;
  /** Snapshots kept for history (docs/history.md): the newest this many. */
  snapshotKeep: number;
  /** Recent UTC days whose newest snapshot history keeps besides the newest SNAPSHOT_KEEP (0: none). */
  snapshotKeepDays: number;
  /** How long a load waits for another writer of DATA_DIR before it gives up. */
  writerWaitMs: number;
  /** The `ingest` follower's CPU niceness (0–19): above the servers', so that they keep their pace. */
  ingestNice: number;
  /** Seconds without a batch after which the follower compacts the current snapshot's layers (0: never). */
  ingestCompactIdleMs: number;
  ingestCompactBytes: number;
  /** AUDIT_LOG: the file the requests of auditor tokens are logged to (`-`: standard output). */
  auditLog: string;
  /** TOKEN_MAX_TTL: the longest a token lives (access/lifetimes.ts); null: no maximum. */
  tokenMaxTtlMs: number | null;
  /** DuckDB threads of a batch's build and validation (delta-layout.ts BATCH_THREADS). */
  batchThreads: number;
  /** A touched organization with at most this many rows of workspaces and resources is written whole (delta-layout.ts WHOLE_ROWS). */
  batchWholeRows: number;
  /** A touched organization the older delta holds with at most this many rows moves whole into the newer delta (delta-layout.ts LIFT_ROWS); 0: never. */
  batchLiftRows: number;
  /** Organizations of at most this many rows the follower tidies after each batch (0: never), and the rows of a unit. */
  ingestTidyRows: number;
  /** Organizations of any size whose workspaces the deltas replace at least this share of are tidied too (0: never). */
  ingestTidyShare: number;
  ingestTidyUnitRows: number;
  /** The share of a core the follower's tidying spends on average. */
  ingestTidyCpu: number;
  /** The longest a lone batch waits for company while organizations are in debt (tidying on). */
  ingestCoalesceMaxMs: number;
  /** Of those, the newest this many keep their serving layout; older ones are compacted. */
  snapshotKeepFull: number;
  /** libuv's threads (UV_THREADPOOL_SIZE, node's default 4): every running DuckDB call holds one. */
  uvThreadpoolSize: number;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new Error(`${name} must be a whole number ≥ ${min}; got ${JSON.stringify(raw)}`);
  return Number(raw);
}

function decimal(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+(\.\d+)?$/.test(raw)) throw new Error(`${name} must be a number ≥ 0; got ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** A share of something: a number from 0 to 1. */
function share(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = decimal(env, name, fallback);
  if (value > 1) throw new Error(`${name} must be a share from 0 to 1; got ${JSON.stringify(env[name])}`);
  return value;
}

/** TOKEN_MAX_TTL: a duration (`90d`), or unset for no maximum. */
function maxTtl(env: NodeJS.ProcessEnv): number | null {
  const raw = env.TOKEN_MAX_TTL;
  if (raw === undefined || raw === '') return null;
  const ms = parseDuration(raw);
  if (ms === null) throw new Error(`TOKEN_MAX_TTL must be a whole positive number with s, m, h or d (90d); got ${JSON.stringify(raw)}`);
  return ms;
}

function niceness(env: NodeJS.ProcessEnv): number {
  const nice = int(env, 'INGEST_NICE', 10, 0);
  if (nice > 19) throw new Error(`INGEST_NICE must be 0 to 19; got ${nice}`);
  return nice;
}

/** REDIS_CLUSTER: the seed nodes of a Redis Cluster, `host:port` separated by commas. */
function clusterNodes(env: NodeJS.ProcessEnv): string[] | null {
  const raw = env.REDIS_CLUSTER;
  if (!raw) return null;
  if (env.REDIS_URL) throw new Error('set REDIS_URL (one Redis) or REDIS_CLUSTER (a Redis Cluster), not both');
  const nodes = raw.split(',').map((n) => n.trim()).filter((n) => n !== '');
  for (const node of nodes) {
    const m = /^(.+):(\d{1,5})$/.exec(node);
    if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) throw new Error(`REDIS_CLUSTER must list host:port nodes separated by commas; got ${JSON.stringify(node)}`);
  }
  if (nodes.length === 0) throw new Error('REDIS_CLUSTER lists no node');
  return nodes;
}

/** Whether shared state lives in a Redis (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER). */
export const redisConfigured = (config: Partial<Pick<Config, 'redisUrl' | 'redisCluster'>>) => Boolean(config.redisUrl || config.redisCluster);

/** A Redis Cluster places a key by the text inside its first {…}: the prefix must not hold one. */
function prefix(env: NodeJS.ProcessEnv): string {
  const value = env.REDIS_PREFIX || 'explorer:';
  if (/[{}]/.test(value)) throw new Error(`REDIS_PREFIX may not contain { or }; got ${JSON.stringify(value)}`);
  return value;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const engine = env.EXPLORER_ENGINE || 'terraform';
  if (!ENGINE_PATTERN.test(engine)) throw new Error(`EXPLORER_ENGINE must match ${ENGINE_PATTERN}; got ${JSON.stringify(engine)}`);
  const publicUrl = env.PUBLIC_URL ? env.PUBLIC_URL.replace(/\/+$/, '') : null;
  if (publicUrl && !/^https?:\/\/[^/]+(\/.*)?$/.test(publicUrl)) throw new Error(`PUBLIC_URL must be an http(s) URL; got ${JSON.stringify(env.PUBLIC_URL)}`);
  const cores = availableParallelism();
  return {
    dataDir: resolve(env.DATA_DIR || './data'),
    host: env.HOST || '127.0.0.1',
    port: int(env, 'PORT', 8080),
    publicUrl,
    engine,
    queryTimeoutMs: int(env, 'QUERY_TIMEOUT_MS', 60_000, 1),
    poolWorkers: int(env, 'POOL_WORKERS', Math.max(2, cores), 1),
    workerConcurrency: int(env, 'WORKER_CONCURRENCY', 3, 1),
    duckdbThreads: int(env, 'DUCKDB_THREADS', 1, 1),
    duckdbMemoryLimit: env.DUCKDB_MEMORY_LIMIT || '1GB',
    exportMemoryLimit: env.EXPORT_MEMORY_LIMIT || '32MB',
    loadMemoryLimit: env.LOAD_MEMORY_LIMIT || '2GB',
    poolMaxQueue: int(env, 'POOL_MAX_QUEUE', 512, 1),
    poolMaxWaitMs: int(env, 'POOL_MAX_WAIT_MS', 5_000, 1),
    poolMaxExportWaitMs: int(env, 'POOL_MAX_EXPORT_WAIT_MS', 30_000, 1),
    metricsToken: env.METRICS_TOKEN || null,
    metricsPublic: /^(1|true|yes)$/i.test(env.METRICS_PUBLIC ?? ''),
    notifyAllowHosts: (env.NOTIFY_ALLOW_HOSTS ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean),
    notifyTimeoutMs: int(env, 'NOTIFY_TIMEOUT_MS', 10_000, 1),
    notifyMaxAttempts: int(env, 'NOTIFY_MAX_ATTEMPTS', 12, 1),
    notifyBackoffMs: int(env, 'NOTIFY_BACKOFF_MS', 1000, 1),
    notifyLeaseMs: int(env, 'NOTIFY_LEASE_MS', 15_000, 100),
    notifyMetricsPort: int(env, 'NOTIFY_METRICS_PORT', 9464),
    exportConcurrency: env.EXPORT_CONCURRENCY ? int(env, 'EXPORT_CONCURRENCY', 1, 1) : null,
    snapshotPollMs: int(env, 'SNAPSHOT_POLL_MS', 1000, 10),
    shutdownDrainMs: int(env, 'SHUTDOWN_DRAIN_MS', 0, 0),
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 10_000, 0),
    trustProxy: /^(1|true|yes)$/i.test(env.TRUST_PROXY ?? ''),
    redisUrl: env.REDIS_URL || null,
    redisCluster: clusterNodes(env),
    redisPrefix: prefix(env),
    redisWaitReplicas: int(env, 'REDIS_WAIT_REPLICAS', env.REDIS_CLUSTER ? 1 : 0, 0),
    redisWaitMs: int(env, 'REDIS_WAIT_MS', 2_000, 1),
    rateLimitMax: int(env, 'RATE_LIMIT_MAX', 30, 1),
    rateLimitWindowMs: int(env, 'RATE_LIMIT_WINDOW_MS', 1000, 1),
    responseCacheBytes: int(env, 'RESPONSE_CACHE_MB', 64, 0) * 1024 * 1024,
    snapshotKeep: int(env, 'SNAPSHOT_KEEP', DEFAULT_SNAPSHOT_KEEP, MIN_SNAPSHOT_KEEP),
    snapshotKeepDays: int(env, 'SNAPSHOT_KEEP_DAYS', DEFAULT_SNAPSHOT_KEEP_DAYS, 0),
    writerWaitMs: int(env, 'WRITER_WAIT_MS', DEFAULT_WRITER_WAIT_MS, 0),
    ingestNice: niceness(env),
    ingestCompactIdleMs: int(env, 'INGEST_COMPACT_IDLE_SECONDS', 60, 0) * 1000,
    ingestCompactBytes: Math.round(decimal(env, 'INGEST_COMPACT_MB', 256) * 1024 * 1024),
    batchThreads: int(env, 'BATCH_THREADS', BATCH_THREADS, 1),
    batchWholeRows: int(env, 'BATCH_WHOLE_ROWS', WHOLE_ROWS, 0),
    batchLiftRows: int(env, 'BATCH_LIFT_ROWS', LIFT_ROWS, 0),
    ingestTidyRows: int(env, 'INGEST_TIDY_ROWS', TIDY_ROWS, 0),
    ingestTidyShare: share(env, 'INGEST_TIDY_SHARE', TIDY_SHARE),
    ingestTidyUnitRows: int(env, 'INGEST_TIDY_UNIT_ROWS', TIDY_UNIT_ROWS, 1),
    ingestTidyCpu: decimal(env, 'INGEST_TIDY_CPU', TIDY_CPU),
    ingestCoalesceMaxMs: Math.round(decimal(env, 'INGEST_COALESCE_MAX_SECONDS', COALESCE_MAX_MS / 1000) * 1000),
    tokenMaxTtlMs: maxTtl(env),
    auditLog: env.AUDIT_LOG === '-' ? '-' : resolve(env.AUDIT_LOG || join(resolve(env.DATA_DIR || './data'), 'audit.log')),
    snapshotKeepFull: int(env, 'SNAPSHOT_KEEP_FULL', DEFAULT_SNAPSHOT_KEEP_FULL, MIN_SNAPSHOT_KEEP_FULL),
    // libuv reads it itself and ignores what it cannot use: read as given, only to warn when it is too small.
    uvThreadpoolSize: Number(env.UV_THREADPOOL_SIZE ?? 4),
  };
}

/** DuckDB's memory for a first sync's load into an empty DATA_DIR unless SYNC_MEMORY_LIMIT says otherwise: the lowest the largest bench organization's first load completes with (docs/sync.md §5). */
export const SYNC_MEMORY_LIMIT = '300MB';

/** `explorer sync`'s own settings (docs/sync.md). */
export interface SyncSettings {
  /** Requests sent to the upstream at once. */
  concurrency: number;
  /** The first wait before a failed request is tried again. */
  backoffMs: number;
  /** How long a request may receive nothing before it counts as failed. */
  idleTimeoutMs: number;
  /** DuckDB's memory limit for a first sync's load. */
  memoryLimit: string;
}

export function loadSyncSettings(env: NodeJS.ProcessEnv = process.env): SyncSettings {
  const memoryLimit = env.SYNC_MEMORY_LIMIT || SYNC_MEMORY_LIMIT;
  if (!/^\d+(\.\d+)?\s*(KB|MB|GB|KiB|MiB|GiB)$/i.test(memoryLimit)) throw new Error(`SYNC_MEMORY_LIMIT must be a size such as 300MB or 1GB, not ${JSON.stringify(memoryLimit)}`);
  return {
    concurrency: int(env, 'SYNC_CONCURRENCY', 2, 1),
    backoffMs: int(env, 'SYNC_BACKOFF_MS', 500, 1),
    idleTimeoutMs: int(env, 'SYNC_IDLE_TIMEOUT_MS', 60_000, 1),
    memoryLimit,
  };
}

/**
 * Where `explorer sync` may find its token, as the engine's own CLI looks (docs/sync.md): EXPLORER_SYNC_TOKEN,
 * the TF_TOKEN_<host> variables, and the directory of the CLI's credentials file.
 */
export interface SyncCredentials {
  syncToken: string | null;
  /** Every TF_TOKEN_… variable that is set, by its name as given. */
  hostTokens: Record<string, string>;
  /** `$TF_CLI_CONFIG_DIR`, else `~/.terraform.d`. */
  cliConfigDir: string;
}

export function syncCredentials(env: NodeJS.ProcessEnv = process.env): SyncCredentials {
  return {
    syncToken: env.EXPLORER_SYNC_TOKEN || null,
    hostTokens: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => /^TF_TOKEN_/i.test(e[0]) && Boolean(e[1]))),
    cliConfigDir: env.TF_CLI_CONFIG_DIR ?? join(env.HOME ?? homedir(), '.terraform.d'),
  };
}

/** EXPLORER_STATEMENT_TIMES: a file each writer's statement appends its time to (for profiling a load or a batch); null: none. */
export const statementTimesFile = (env: NodeJS.ProcessEnv = process.env): string | null => env.EXPLORER_STATEMENT_TIMES || null;
