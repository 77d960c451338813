// The Redis connection shared by the state store and the rate limiter: one Redis (REDIS_URL) or a Redis
// Cluster (REDIS_CLUSTER). Commands fail fast while Redis is unreachable (no offline queue), so that callers
// can degrade — queries keep running, the limiter fails open, store operations answer 503 — and ioredis
// reconnects by itself when Redis returns. In a cluster, ioredis also follows the slots to a promoted
// replica after a failover: routing and failover are the cluster's and the client's, none of them ours.
import { Cluster, Redis } from 'ioredis';
import { redisConfigured, type Config } from './config.js';
import type { Logger } from './log.js';

export type RedisState = 'connecting' | 'ready' | 'down';
export type RedisClient = Redis | Cluster;

/** What the connection needs of the configuration: where Redis is, and how long a write may wait for replicas. */
export type RedisConfig = Partial<Pick<Config, 'redisUrl' | 'redisCluster' | 'redisWaitReplicas' | 'redisWaitMs'>>;

export interface RedisConnection {
  client: RedisClient;
  /** True for a Redis Cluster: every multi-key operation must then keep to one slot (hash tags). */
  clustered: boolean;
  state(): RedisState;
  close(): Promise<void>;
}

/**
 * Connects to the configured Redis or Redis Cluster. A command counts as failed after 2 s, or, when writes
 * wait for replicas, after REDIS_WAIT_MS and a little more.
 */
export function connectRedis(config: RedisConfig, logger: Logger): RedisConnection {
  const waitMs = (config.redisWaitReplicas ?? 0) > 0 ? config.redisWaitMs ?? 2000 : 0;
  const FAIL_FAST = { enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: 2000, commandTimeout: Math.max(2000, waitMs + 1000) } as const;
  if (!redisConfigured(config)) throw new Error('no Redis configured (REDIS_URL or REDIS_CLUSTER)');
  let state: RedisState = 'connecting';
  const client: RedisClient = !config.redisCluster
    ? new Redis(config.redisUrl!, { ...FAIL_FAST, retryStrategy: (times) => Math.min(100 * times, 2000), lazyConnect: false })
    : new Cluster(config.redisCluster.map((node) => {
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
