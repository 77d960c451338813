// decisions §9 rate limit with koa-ratelimit: per user, team or organization token, or per client address
// for requests without a valid token. In memory by default; in Redis (shared by every instance) when
// configured. If Redis cannot be reached the limiter fails open: answering is worth more than counting.
import type { Middleware } from 'koa';
import ratelimit from 'koa-ratelimit';
import { ApiError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { RedisConnection } from '../../redis.js';
import { sendError } from '../jsonapi.js';
import type { RequestState } from '../state.js';

export interface RateLimitOptions {
  max: number;
  windowMs: number;
  redis?: RedisConnection;
  prefix: string;
  logger: Logger;
}

// koa-ratelimit writes an absolute epoch time; decisions §9 wants the seconds until the reset.
const EPOCH_RESET = 'X-Explorer-RateLimit-Reset-Epoch';

export function rateLimit(opts: RateLimitOptions): Middleware<RequestState> {
  const memory = new Map<string, { reset: number }>();
  if (!opts.redis) {
    // koa-ratelimit never deletes expired entries; without this, every client address seen stays forever.
    setInterval(() => {
      const now = Date.now() / 1000;
      for (const [key, entry] of memory) if (entry.reset < now) memory.delete(key);
    }, Math.max(opts.windowMs, 10_000)).unref();
  }
  const limiter = ratelimit({
    driver: opts.redis ? 'redis' : 'memory',
    db: opts.redis ? opts.redis.client : memory,
    duration: opts.windowMs,
    max: opts.max,
    namespace: `${opts.prefix}ratelimit`,
    id: (ctx: { state: RequestState; ip: string }) => ctx.state.rateKey ?? `ip:${ctx.ip}`,
    headers: { remaining: 'X-RateLimit-Remaining', reset: EPOCH_RESET, total: 'X-RateLimit-Limit' },
    throw: false,
  } as Parameters<typeof ratelimit>[0]);
  let lastWarning = 0;

  return async (ctx, next) => {
    let passed = false;
    try {
      await limiter(ctx, async () => { passed = true; resetHeader(); await next(); });
    } catch (e) {
      if (passed) throw e;
      if (Date.now() - lastWarning > 10_000) {
        lastWarning = Date.now();
        opts.logger.log('warn', 'rate limiter unavailable: letting requests through', { error: (e as Error).message });
      }
      return next();
    }
    if (!passed && ctx.status === 429) {
      const seconds = resetHeader();
      const retry = Math.max(1, Math.ceil(seconds));
      sendError(ctx, new ApiError(429, 'too many requests',
        `Rate limit of ${opts.max} requests per ${opts.windowMs / 1000} s exceeded for this token; retry in ${retry} s.`,
        undefined, { 'Retry-After': String(retry) }));
    }

    /** Rewrites the epoch reset as seconds from now, with millisecond precision; returns it. */
    function resetHeader(): number {
      const epoch = Number(ctx.response.get(EPOCH_RESET));
      ctx.remove(EPOCH_RESET);
      const seconds = Math.min(opts.windowMs / 1000, Math.max(0, epoch - Date.now() / 1000));
      ctx.set('X-RateLimit-Reset', String(Math.round(seconds * 1000) / 1000));
      return seconds;
    }
  };
}
