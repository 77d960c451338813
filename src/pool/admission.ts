// Admission to the DuckDB workers. At most `slots` queries run at once, and at most `exportSlots` of them
// are exports. The rest wait in one queue, oldest first, except that an organization already holding
// `slots - 1` running queries lets any other organization's waiting request go first: one organization's
// burst or exports can never hold every slot, so another's page waits for at most one query to end, yet a
// busy organization is not starved either (taking strict turns between organizations gave the one with
// most of the demand one slot in n and refused its requests after `maxWaitMs`). Waiting is bounded: with
// `maxQueued` already waiting, or after `maxWaitMs` in the queue, a request is refused (503 with
// Retry-After) instead of latency growing without bound. An export may wait longer (`maxExportWaitMs`):
// a download started by a script is still worth its wait once a page would be stale, and under load an
// export waits for one of few export slots while each runs for seconds.

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
  /** How long an export may wait; `maxWaitMs` when absent. */
  maxExportWaitMs?: number;
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
  /** Running queries per organization. */
  private readonly held = new Map<string, number>();
  /** Map order is arrival order. */
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
    if (this.canRun(kind)) return Promise.resolve(this.start(key, kind));
    if (this.waiters.size >= this.opts.maxQueued) return Promise.reject(this.refusal());
    return new Promise<Release>((resolve, reject) => {
      const waiter: Waiter = {
        id, key, kind,
        timer: setTimeout(() => this.remove(waiter, this.refusal()), kind === 'export' ? this.opts.maxExportWaitMs ?? this.opts.maxWaitMs : this.opts.maxWaitMs),
        admit: () => resolve(this.start(key, kind)),
        refuse: reject,
      };
      this.waiters.set(id, waiter);
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

  private start(key: string, kind: Kind): Release {
    this.running++;
    if (kind === 'export') this.exportsRunning++;
    this.held.set(key, (this.held.get(key) ?? 0) + 1);
    const started = Date.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      if (kind === 'export') this.exportsRunning--;
      const held = this.held.get(key)! - 1;
      if (held === 0) this.held.delete(key);
      else this.held.set(key, held);
      this.holdMs = 0.9 * this.holdMs + 0.1 * (Date.now() - started);
      this.dispatch();
    };
  }

  private dispatch(): void {
    while (this.running < this.opts.slots) {
      const next = this.nextEligible();
      if (!next) return;
      this.detach(next);
      next.admit();
    }
  }

  /** The oldest waiter that can run whose organization holds fewer than `slots - 1`; else the oldest that can run. */
  private nextEligible(): Waiter | undefined {
    const share = Math.max(1, this.opts.slots - 1);
    let oldest: Waiter | undefined;
    for (const waiter of this.waiters.values()) {
      if (!this.canRun(waiter.kind)) continue;
      if ((this.held.get(waiter.key) ?? 0) < share) return waiter;
      oldest ??= waiter;
    }
    return oldest;
  }

  private remove(waiter: Waiter, e: Error): void {
    if (!this.waiters.has(waiter.id)) return;
    this.detach(waiter);
    waiter.refuse(e);
  }

  private detach(waiter: Waiter): void {
    clearTimeout(waiter.timer);
    this.waiters.delete(waiter.id);
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
