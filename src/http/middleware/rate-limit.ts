// interface §9 rate limit: per user, team or organization token, or per client address for requests
// without a valid token. Counted in memory by default, in Redis (shared by every instance) when configured,
// by the same fixed-window rule either way (rate-limit/window-counter.ts). If Redis cannot be reached the
// limiter fails open: answering is worth more than counting.
import type { Middleware } from 'koa';
import { ApiError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { MemoryWindowCounter, RedisWindowCounter, type WindowCounter, type WindowHit } from '../../rate-limit/window-counter.js';
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

export function rateLimit(opts: RateLimitOptions): Middleware<RequestState> {
  const counter: WindowCounter = opts.redis
    ? new RedisWindowCounter(opts.redis.client, `${opts.prefix}ratelimit:`)
    : new MemoryWindowCounter(Math.max(opts.windowMs, 10_000));
  let lastWarning = 0;

  return async (ctx, next) => {
    let hit: WindowHit;
    try {
      hit = await counter.hit(ctx.state.rateKey ?? `ip:${ctx.ip}`, opts.windowMs);
    } catch (e) {
      if (Date.now() - lastWarning > 10_000) {
        lastWarning = Date.now();
        opts.logger.log('warn', 'rate limiter unavailable: letting requests through', { error: (e as Error).message });
      }
      return next();
    }
    // Seconds until the window closes, to the millisecond, rounded up: a client that waits this long gets
    // through. Never more than the window: a window just opened is `windowMs` away, and the float error of
    // (now + window) - now rounded up made it 1.501 s of a 1.5 s window.
    const reset = Math.min(opts.windowMs, Math.ceil(Math.max(0, hit.resetMs))) / 1000;
    ctx.set('X-RateLimit-Limit', String(opts.max));
    ctx.set('X-RateLimit-Remaining', String(Math.max(0, opts.max - hit.count)));
    ctx.set('X-RateLimit-Reset', String(reset));
    if (hit.count <= opts.max) return next();
    const retry = Math.max(1, Math.ceil(reset));
    sendError(ctx, new ApiError(429, 'too many requests',
      `Rate limit of ${opts.max} requests per ${opts.windowMs / 1000} s exceeded for this token; retry in ${retry} s.`,
      undefined, { 'Retry-After': String(retry) }));
  };
}
