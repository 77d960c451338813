import { join } from 'node:path';
import type { Config } from '../config.js';
import { silentLogger, type Logger } from '../log.js';
import type { RedisConnection } from '../redis.js';
import { openJournalStore } from './journal-store.js';
import type { StateStore } from './state-store.js';

type StoreConfig = Pick<Config, 'dataDir'> & Partial<Pick<Config, 'redisUrl' | 'redisPrefix'>>;

/**
 * The configured state store: Redis when REDIS_URL is set (shared by every instance), otherwise the
 * embedded journal under DATA_DIR/state. Pass `redis` to share a connection (the server does); without
 * it, a connection is opened and closed with the store (the CLI does). The Redis client is imported only
 * when Redis is configured: a token command on a single node does not pay for loading it.
 */
export async function openStateStore(config: StoreConfig, redis?: RedisConnection, logger: Logger = silentLogger): Promise<StateStore> {
  if (!config.redisUrl) return openJournalStore(join(config.dataDir, 'state'));
  const [{ connectRedis, whenReady }, { RedisStateStore }] = await Promise.all([import('../redis.js'), import('./redis-store.js')]);
  if (redis) return new RedisStateStore(redis.client, config.redisPrefix);
  const own = connectRedis(config.redisUrl, logger);
  try {
    await whenReady(own, 5000);
  } catch (e) {
    await own.close();
    throw e;
  }
  return new RedisStateStore(own.client, config.redisPrefix, () => own.close());
}
