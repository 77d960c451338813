// The Redis connection shared by the state store and the rate limiter. Commands fail fast while Redis is
// unreachable (no offline queue), so that callers can degrade — queries keep running, the limiter fails
// open, store operations answer 503 — and ioredis reconnects by itself when Redis returns.
import { Redis } from 'ioredis';
import type { Logger } from './log.js';

export type RedisState = 'connecting' | 'ready' | 'down';

export interface RedisConnection {
  client: Redis;
  state(): RedisState;
  close(): Promise<void>;
}

export function connectRedis(url: string, logger: Logger): RedisConnection {
  let state: RedisState = 'connecting';
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 2000,
    commandTimeout: 2000,
    retryStrategy: (times) => Math.min(100 * times, 2000),
    lazyConnect: false,
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
  return {
    client,
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
