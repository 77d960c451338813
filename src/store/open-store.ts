import { join } from 'node:path';
import { redisConfigured, type Config } from '../config.js';
import { silentLogger, type Logger } from '../log.js';
import type { RedisConnection } from '../redis.js';
import { openJournalStore } from './journal-store.js';
import type { StateStore } from './state-store.js';

type StoreConfig = Pick<Config, 'dataDir'> & Partial<Pick<Config, 'redisUrl' | 'redisCluster' | 'redisPrefix' | 'redisWaitReplicas' | 'redisWaitMs'>>;

/**
 * The configured state store: Redis when REDIS_URL or REDIS_CLUSTER is set (shared by every instance),
 * otherwise the embedded journal under DATA_DIR/state. Pass `redis` to share a connection (the server
 * does); without it, a connection is opened and closed with the store (the CLI does). The Redis client is
 * imported only when Redis is configured: a token command on a single node does not pay for loading it.
 */
export async function openStateStore(config: StoreConfig, redis?: RedisConnection, logger: Logger = silentLogger): Promise<StateStore> {
  if (!redisConfigured(config)) return openJournalStore(join(config.dataDir, 'state'));
  const [{ connectRedis, whenReady }, { redisStateStore }] = await Promise.all([import('../redis.js'), import('./redis-store.js')]);
  const options = (connection: RedisConnection) => ({ clustered: connection.clustered, waitReplicas: config.redisWaitReplicas ?? 0, waitMs: config.redisWaitMs ?? 2000 });
  if (redis) return redisStateStore(redis.client, config.redisPrefix, options(redis));
  const own = connectRedis(config, logger);
  try {
    await whenReady(own, 5000);
  } catch (e) {
    await own.close();
    throw e;
  }
  return redisStateStore(own.client, config.redisPrefix, { ...options(own), onClose: () => own.close() });
}
