// The Redis connection shared by the state store and the rate limiter: one Redis (REDIS_URL) or a Redis
// Cluster (REDIS_CLUSTER). Commands fail fast while Redis is unreachable (no offline queue), so that callers
// can degrade — queries keep running, the limiter fails open, store operations answer 503 — and ioredis
// reconnects by itself when Redis returns. In a cluster, ioredis also follows the slots to a promoted
// replica after a failover: routing and failover are the cluster's and the client's, none of them ours.
import { Cluster, Redis } from 'ioredis';
import type { Config } from './config.js';
import type { Logger } from './log.js';

export type RedisState = 'connecting' | 'ready' | 'down';
export type RedisClient = Redis | Cluster;

/** Where the shared state lives: one Redis by URL, or a cluster by its seed nodes. */
export type RedisTarget = { url: string } | { cluster: readonly string[] };

export interface RedisConnection {
  client: RedisClient;
  /** True for a Redis Cluster: every multi-key operation must then keep to one slot (hash tags). */
  clustered: boolean;
  state(): RedisState;
  close(): Promise<void>;
}

/** The configured Redis, if any. */
export function redisTarget(config: Pick<Config, 'redisUrl'> & Partial<Pick<Config, 'redisCluster'>>): RedisTarget | null {
  if (config.redisCluster) return { cluster: config.redisCluster };
  if (config.redisUrl) return { url: config.redisUrl };
  return null;
}

/**
 * `waitMs`: how long a write may wait for replicas (REDIS_WAIT_MS); a command may take that long and a
 * little more before it counts as failed, every other command 2 s.
 */
export function connectRedis(target: RedisTarget | string, logger: Logger, waitMs = 0): RedisConnection {
  const FAIL_FAST = { enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: 2000, commandTimeout: Math.max(2000, waitMs + 1000) } as const;
  const where: RedisTarget = typeof target === 'string' ? { url: target } : target;
  let state: RedisState = 'connecting';
  const client: RedisClient = 'url' in where
    ? new Redis(where.url, { ...FAIL_FAST, retryStrategy: (times) => Math.min(100 * times, 2000), lazyConnect: false })
    : new Cluster(where.cluster.map((node) => {
      const i = node.lastIndexOf(':');
      return { host: node.slice(0, i), port: Number(node.slice(i + 1)) };
    }), {
      enableOfflineQueue: false,
      clusterRetryStrategy: (times) => Math.min(100 * times, 2000),
      // A command that meets a slot in failover (CLUSTERDOWN, TRYAGAIN, a MOVED to the promoted replica) is
      // tried again shortly after; a node that does not answer fails the command at once (commandTimeout).
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 200,
      maxRedirections: 4,
      slotsRefreshTimeout: 2000,
      slotsRefreshInterval: 1000,
      redisOptions: FAIL_FAST,
    });
  const set = (next: RedisState, fields: Record<string, unknown> = {}) => {
    if (next === state) return;
    const previous = state;
    state = next;
    logger.log(next === 'ready' ? 'info' : 'warn', `redis ${next}`, { previous, ...fields });
  };
  client.on('ready', () => set('ready'));
  client.on('error', (e: Error) => set('down', { error: e.message }));
  client.on('close', () => { if (state === 'ready') set('down', { error: 'connection closed' }); });
  // A cluster stays ready while one node fails: its slots fail over to a replica. Logged, not a state change.
  if (client instanceof Cluster) client.on('node error', (e: Error, node: string) => logger.log('warn', 'redis node error', { node, error: e.message }));
  return {
    client,
    clustered: client instanceof Cluster,
    state: () => state,
    async close() {
      client.disconnect(false);
    },
  };
}

/** Resolves once the client is ready, or rejects after `ms`. */
export function whenReady(connection: RedisConnection, ms: number): Promise<void> {
  if (connection.state() === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { connection.client.off('ready', onReady); reject(new Error(`Redis not ready within ${ms} ms`)); }, ms);
    const onReady = () => { clearTimeout(timer); resolve(); };
    connection.client.once('ready', onReady);
  });
}
