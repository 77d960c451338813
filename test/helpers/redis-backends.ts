// The two homes of shared state a suite runs against: one Redis, and a Redis Cluster of three primaries and
// three replicas (shared by the run, each caller under its own key prefix). A suite written once over these
// answers for both.
import { startTestRedis } from './redis.js';
import { sharedTestCluster } from './redis-cluster.js';

export interface StartedBackend {
  /** REDIS_URL or REDIS_CLUSTER, and REDIS_PREFIX: what a server or a command needs. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export interface RedisBackend {
  name: string;
  start(): Promise<StartedBackend>;
}

export const REDIS_BACKENDS: readonly RedisBackend[] = [
  {
    name: 'Redis',
    async start() {
      const r = await startTestRedis();
      return { env: { REDIS_URL: r.url, REDIS_PREFIX: r.prefix }, close: () => r.close() };
    },
  },
  {
    name: 'a Redis Cluster',
    async start() {
      const c = await sharedTestCluster();
      return { env: c.env, close: () => c.close() };
    },
  },
];
