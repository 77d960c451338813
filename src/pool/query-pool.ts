// The Piscina side: run a page or start an export on a DuckDB worker, with a deadline and cancellation.
// Workers are never terminated while they run a query (see docs/duckdb-in-workers.md):
// stopping is always an interrupt message, and the pool is destroyed only once every task has settled.
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BroadcastChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { Admission, WithdrawnError, type Kind } from './admission.js';
import { Fifos } from './fifos.js';
import type {
  ControlMessage, ExportResult, ExportTask, MemoryReport, PageResult, PageTask, RowsResult, RowsTask, Task, WorkerConfig,
} from '../../workers/protocol.js';

/**
 * The workers' Node options: the process's own, with require() of ES modules off where Node has it on
 * (20.19 and later). Piscina first tries require() on a worker's file and imports it when that fails; on
 * Node 20.20 the require() of our ES module worker has aborted the whole process now and then (an assertion
 * in Node's module facade, `CreateRequiredModuleFacade`, SIGABRT, once in a full test run on 2026-11-29).
 * With it off, require() fails at once and the worker is imported, as before Node loaded ES modules by require().
 */
export function workerExecArgv(execArgv: readonly string[] = process.execArgv, allowed: { has(flag: string): boolean } = process.allowedNodeEnvironmentFlags): string[] {
  const off = '--no-experimental-require-module';
  return [...execArgv, ...(allowed.has(off) && !execArgv.includes(off) ? [off] : [])];
}

export interface PoolOptions {
  workers: number;
  concurrencyPerWorker: number;
  threads: number;
  memoryLimit: string;
  /** DuckDB's memory limit for exports of stored lines, apart from the pages' (default 32MB). */
  exportMemoryLimit?: string;
  tempDirectory: string;
  /** Requests that may wait for a slot; more are refused at once. */
  maxQueue: number;
  /** Longest wait for a slot before a request is refused. */
  maxWaitMs?: number;
  maxExportWaitMs?: number;
  /** Exports that may run at once; the rest wait, so that pages always find a free slot. */
  exportConcurrency?: number;
  /** Snapshot databases each worker keeps attached while idle (default 2: the current and the previous). */
  attachedMax?: number;
}

export { PoolOverloadedError } from './admission.js';

type Omitted<T extends Task> = Omit<T, 'id' | 'kind'>;

export class QueryPool {
  private readonly piscina: Piscina;
  private readonly channel: BroadcastChannel;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly closing = new Set<() => void>();
  private readonly admission: Admission;
  /** This pool's export FIFOs, in a directory of their own that is removed when the pool closes. */
  readonly fifos: Fifos;
  private closed = false;
  private started = 0;
  private readonly memory = new Map<number, Omit<MemoryReport, 'worker'>>();
  private channelClosed = false;

  constructor(opts: PoolOptions) {
    mkdirSync(opts.tempDirectory, { recursive: true });
    const name = `explorer-pool-${randomUUID()}`;
    this.fifos = new Fifos(join(tmpdir(), `explorer-${process.pid}-${name.slice(-8)}`));
    this.fifos.warm();
    const workerData: WorkerConfig = {
      channel: name, threads: opts.threads, memoryLimit: opts.memoryLimit, exportMemoryLimit: opts.exportMemoryLimit ?? '32MB', tempDirectory: opts.tempDirectory,
      attachedMax: opts.attachedMax ?? 2,
    };
    this.piscina = new Piscina({
      filename: new URL('../../workers/duckdb-worker.js', import.meta.url).href,
      minThreads: opts.workers,
      maxThreads: opts.workers,
      concurrentTasksPerWorker: opts.concurrencyPerWorker,
      // Each worker owns a warm DuckDB instance and page cache: never retire an idle one.
      idleTimeout: Number.MAX_SAFE_INTEGER,
      workerData,
      execArgv: workerExecArgv(),
    });
    this.channel = new BroadcastChannel(name);
    this.channel.unref();
    const slots = opts.workers * opts.concurrencyPerWorker;
    this.admission = new Admission({
      slots,
      // One export per worker by default. An export holds its slot for seconds, mostly waiting for its
      // client, so the other slots are for pages: with 3 a worker, the largest organization's pages under
      // make bench E waited p50 43-59 ms instead of 373-384 (docs/performance.md, "Query and export slots"). A stalled
      // client keeps its export's slot until the deadline; exports never take them all.
      exportSlots: opts.exportConcurrency ?? Math.max(1, Math.min(opts.workers, slots - 1)),
      maxQueued: opts.maxQueue,
      maxWaitMs: opts.maxWaitMs ?? 5_000,
      maxExportWaitMs: opts.maxExportWaitMs,
    });
  }

  /** Capacity of the pool: queries that run at once. */
  get concurrency(): number {
    return this.piscina.options.maxThreads * this.piscina.options.concurrentTasksPerWorker;
  }

  /** Requests waiting for a slot. */
  get queueSize(): number {
    return this.admission.waiting;
  }

  /** Each worker's DuckDB memory at its last report (reports ride on results, at most every 10 s). */
  get workerMemory(): ReadonlyMap<number, Omit<MemoryReport, 'worker'>> {
    return this.memory;
  }

  /** Tasks handed to a worker since the pool started. */
  get tasksStarted(): number {
    return this.started;
  }

  /** Requests refused with 503 since the pool started (queue full or waited too long). */
  get refused(): number {
    return this.admission.refused;
  }

  /** Queries running now. */
  get active(): number {
    return this.admission.active;
  }

  get utilization(): number {
    return this.piscina.utilization;
  }

  newTaskId(): string {
    return randomUUID();
  }

  /** Runs a page for organization `key`, once admitted (see admission.ts). */
  runPage(id: string, key: string, task: Omitted<PageTask>): Promise<PageResult> {
    return this.admitted(id, key, 'page', { ...task, id, kind: 'page' });
  }

  runExport(id: string, key: string, task: Omitted<ExportTask>): Promise<ExportResult> {
    return this.admitted(id, key, 'export', { ...task, id, kind: 'export' });
  }

  /** Runs statements for organization `key`, admitted as a page is (history's changes and trends). */
  runRows(id: string, key: string, task: Omitted<RowsTask>): Promise<RowsResult> {
    return this.admitted(id, key, 'page', { ...task, id, kind: 'rows' });
  }

  /** Interrupts the task wherever it is: waiting (it is withdrawn) or running (DuckDB stops). */
  cancel(id: string, reason: 'timeout' | 'cancelled'): void {
    if (this.admission.withdraw(id, reason)) return;
    // After close every task has settled: there is nothing left to cancel (and the channel is closed).
    if (this.channelClosed) return;
    const message: ControlMessage = { type: 'cancel', id, reason };
    this.channel.postMessage(message);
  }

  /**
   * Calls `listener` when the pool starts closing; returns the function that unregisters it. Exports use it:
   * a COPY blocked on a stalled client is freed only by draining its FIFO, which an interrupt cannot do.
   */
  onClose(listener: () => void): () => void {
    this.closing.add(listener);
    return () => this.closing.delete(listener);
  }

  /** Interrupts every running task, waits for all to settle, then stops the workers. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const listener of [...this.closing]) listener();
    this.admission.refuseAll(new WithdrawnError('cancelled'));
    const message: ControlMessage = { type: 'cancel-all' };
    this.channel.postMessage(message);
    await Promise.allSettled([...this.inFlight]);
    this.channelClosed = true;
    this.channel.close();
    await this.piscina.destroy();
    await rm(this.fifos.directory, { recursive: true, force: true });
  }

  private async admitted<R extends PageResult | ExportResult | RowsResult>(id: string, key: string, kind: Kind, task: Task): Promise<R> {
    if (this.closed) throw new Error('the query pool is closed');
    let release;
    try {
      release = await this.admission.admit(id, key, kind);
    } catch (e) {
      if (e instanceof WithdrawnError) return { ok: false, code: e.reason, message: e.message } as R;
      throw e;
    }
    try {
      return await this.submit<R>(task);
    } finally {
      release();
    }
  }

  private submit<R>(task: Task): Promise<R> {
    if (this.closed) return Promise.reject(new Error('the query pool is closed'));
    this.started++;
    const p = this.piscina.run(task) as Promise<R>;
    this.inFlight.add(p);
    const forget = () => this.inFlight.delete(p);
    p.then((result) => {
      forget();
      const memory = (result as { memory?: MemoryReport } | undefined)?.memory;
      if (memory) {
        const { worker, ...rest } = memory;
        this.memory.set(worker, rest);
      }
    }, forget);
    return p;
  }
}
