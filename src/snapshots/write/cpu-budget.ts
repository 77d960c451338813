// A share of a core that background work may spend on average (the follower's tidying): it earns `cores`
// CPU-seconds a second of wall time, keeps at most `burstSeconds` of them, and may start a piece of work while
// it has any. A piece costs what it cost, measured afterwards, so the balance can go below zero: the next one
// waits until the debt is earned back. Over any stretch of time T the work spends at most cores × T +
// burstSeconds + one piece's cost, however busy the machine is and however much there is to do.
export class CpuBudget {
  private balance: number;
  private at: number;

  constructor(readonly cores: number, readonly burstSeconds: number, now: number) {
    if (!(cores >= 0) || !(burstSeconds >= 0)) throw new Error('a CPU budget is a share of a core and a burst, neither negative');
    this.balance = 0;
    this.at = now;
  }

  private earn(now: number): void {
    if (now > this.at) this.balance = Math.min(this.burstSeconds, this.balance + (this.cores * (now - this.at)) / 1000);
    this.at = Math.max(this.at, now);
  }

  /** CPU-seconds the work may spend at `now` (ms); it may start a piece while this is above zero. */
  available(now: number): number {
    this.earn(now);
    return this.balance;
  }

  /** Records a piece of work that ended at `now` and cost `cpuSeconds`. */
  spend(cpuSeconds: number, now: number): void {
    this.earn(now);
    this.balance -= Math.max(0, cpuSeconds);
  }

  /** Milliseconds from `now` until the work may start a piece again (0 when it may now). */
  waitMs(now: number): number {
    const balance = this.available(now);
    if (balance > 0) return 0;
    return this.cores > 0 ? Math.ceil(((-balance) * 1000) / this.cores) + 1 : Infinity;
  }
}
