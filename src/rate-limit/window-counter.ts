// The counting behind the rate limit (interface §9): a fixed window per context that opens with the
// context's first request and lasts `windowMs`; every request in it counts. One algorithm with two homes —
// a Map for one instance, Redis for many — so the answer is the same either way. koa-ratelimit could not
// give that: its memory driver counts fixed windows, its Redis driver a sliding log whose reset it rounds
// down to whole seconds, so a client that waited the reset it was told was refused again.

export interface WindowHit {
  /** Requests counted in the context's current window, this one included. */
  count: number;
  /** Milliseconds until the window closes: the context's next request after that opens a fresh one. */
  resetMs: number;
}

export interface WindowCounter {
  hit(key: string, windowMs: number): Promise<WindowHit>;
}

export class MemoryWindowCounter implements WindowCounter {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(sweepEveryMs: number, private readonly now: () => number = () => performance.now()) {
    // Closed windows are dropped, so that every client address ever seen does not stay in memory.
    this.sweeper = setInterval(() => this.sweep(), sweepEveryMs).unref();
  }

  async hit(key: string, windowMs: number): Promise<WindowHit> {
    const now = this.now();
    let w = this.windows.get(key);
    if (!w || w.endsAt <= now) {
      w = { count: 0, endsAt: now + windowMs };
      this.windows.set(key, w);
    }
    w.count++;
    return { count: w.count, resetMs: w.endsAt - now };
  }

  get size(): number {
    return this.windows.size;
  }

  sweep(): void {
    const now = this.now();
    for (const [key, w] of this.windows) if (w.endsAt <= now) this.windows.delete(key);
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}

/** The window is a key whose TTL is the window: Redis expires it exactly, and PTTL tells the reset. */
const HIT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

/** The subset of an ioredis client this needs. */
export interface RedisEval {
  eval(script: string, keys: number, ...args: (string | number)[]): Promise<unknown>;
}

export class RedisWindowCounter implements WindowCounter {
  constructor(private readonly redis: RedisEval, private readonly prefix: string) {}

  async hit(key: string, windowMs: number): Promise<WindowHit> {
    const [count, ttl] = (await this.redis.eval(HIT, 1, `${this.prefix}${key}`, windowMs)) as [number, number];
    return { count: Number(count), resetMs: Number(ttl) };
  }
}
