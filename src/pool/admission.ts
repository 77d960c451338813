// Admission to the DuckDB workers. At most `slots` queries run at once, and at most `exportSlots` of them
// are exports; the rest wait in one queue per organization, and the queues take turns, so that one
// organization's burst or exports cannot starve everyone else's pages. Waiting is bounded: with `maxQueued`
// already waiting, or after `maxWaitMs` in the queue, a request is refused (503 with Retry-After) instead
// of latency growing without bound.

export type Kind = 'page' | 'export';

export class PoolOverloadedError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super('the query queue is full');
    this.name = 'PoolOverloadedError';
  }
}

/** A request cancelled (deadline or client gone) while it was still waiting for a slot. */
export class WithdrawnError extends Error {
  constructor(readonly reason: 'timeout' | 'cancelled') {
    super(`${reason} while waiting for a worker`);
    this.name = 'WithdrawnError';
  }
}

export interface AdmissionOptions {
  slots: number;
  exportSlots: number;
  maxQueued: number;
  maxWaitMs: number;
}

interface Waiter {
  id: string;
  key: string;
  kind: Kind;
  timer: NodeJS.Timeout;
  admit(): void;
  refuse(e: Error): void;
}

export type Release = () => void;

export class Admission {
  private running = 0;
  private exportsRunning = 0;
  /** Map order is turn order: a queue that is served moves to the back. */
  private readonly queues = new Map<string, Waiter[]>();
  private readonly waiters = new Map<string, Waiter>();
  /** Smoothed time a slot is held, for Retry-After. */
  private holdMs = 50;
  /** Requests refused so far (queue full or waited too long). */
  refused = 0;

  constructor(private readonly opts: AdmissionOptions) {}

  get waiting(): number {
    return this.waiters.size;
  }

  get active(): number {
    return this.running;
  }

  /** Resolves when `id` may run; the caller must call the returned release exactly once when it ends. */
  admit(id: string, key: string, kind: Kind): Promise<Release> {
    // Anyone still waiting is ineligible (dispatch runs on every release), so a free slot is fair to take.
    if (this.canRun(kind)) return Promise.resolve(this.start(kind));
    if (this.waiters.size >= this.opts.maxQueued) return Promise.reject(this.refusal());
    return new Promise<Release>((resolve, reject) => {
      const waiter: Waiter = {
        id, key, kind,
        timer: setTimeout(() => this.remove(waiter, this.refusal()), this.opts.maxWaitMs),
        admit: () => resolve(this.start(kind)),
        refuse: reject,
      };
      this.waiters.set(id, waiter);
      const queue = this.queues.get(key);
      if (queue) queue.push(waiter);
      else this.queues.set(key, [waiter]);
    });
  }

  /** Takes `id` out of the queue if it is still waiting; returns whether it was. */
  withdraw(id: string, reason: 'timeout' | 'cancelled'): boolean {
    const waiter = this.waiters.get(id);
    if (!waiter) return false;
    this.remove(waiter, new WithdrawnError(reason));
    return true;
  }

  /** Refuses everything still waiting (the pool is closing). */
  refuseAll(e: Error): void {
    for (const waiter of [...this.waiters.values()]) this.remove(waiter, e);
  }

  private canRun(kind: Kind): boolean {
    return this.running < this.opts.slots && (kind === 'page' || this.exportsRunning < this.opts.exportSlots);
  }

  private start(kind: Kind): Release {
    this.running++;
    if (kind === 'export') this.exportsRunning++;
    const started = Date.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      if (kind === 'export') this.exportsRunning--;
      this.holdMs = 0.9 * this.holdMs + 0.1 * (Date.now() - started);
      this.dispatch();
    };
  }

  private dispatch(): void {
    while (this.running < this.opts.slots) {
      const next = this.nextEligible();
      if (!next) return;
      this.detach(next, true);
      next.admit();
    }
  }

  private nextEligible(): Waiter | undefined {
    for (const queue of this.queues.values()) {
      const waiter = queue.find((w) => this.canRun(w.kind));
      if (waiter) return waiter;
    }
    return undefined;
  }

  private remove(waiter: Waiter, e: Error): void {
    if (!this.waiters.has(waiter.id)) return;
    this.detach(waiter, false);
    waiter.refuse(e);
  }

  private detach(waiter: Waiter, served: boolean): void {
    clearTimeout(waiter.timer);
    this.waiters.delete(waiter.id);
    const queue = this.queues.get(waiter.key)!;
    queue.splice(queue.indexOf(waiter), 1);
    if (queue.length === 0) this.queues.delete(waiter.key);
    else if (served) {
      // The organization just served goes to the back of the turn order.
      this.queues.delete(waiter.key);
      this.queues.set(waiter.key, queue);
    }
  }

  private refusal(): PoolOverloadedError {
    this.refused++;
    return new PoolOverloadedError(this.retryAfter());
  }

  private retryAfter(): number {
    const seconds = (this.holdMs * (this.waiters.size + 1)) / this.opts.slots / 1000;
    return Math.min(60, Math.max(1, Math.ceil(seconds)));
  }
}
