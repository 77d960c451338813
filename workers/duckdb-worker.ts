// One DuckDB instance per worker thread; a kept connection per concurrent task, with its prepared
// statements (slots.ts).
// A running query is only ever stopped with connection.interrupt() (deadline timer here, or a cancel
// message from the main thread): terminating a worker mid-query takes the whole process down.
import type { DuckDBConnection, DuckDBInstance, DuckDBValue } from '@duckdb/node-api';
import { existsSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import { BroadcastChannel, threadId, workerData } from 'node:worker_threads';
import { openServingInstance } from '../src/duckdb/open-instance.js';
import Piscina from 'piscina';
import { pageLinks, pagination } from '../src/query/links.js';
import { pageJson, pageRows } from './page-json.js';
import { Slot, Slots } from './slots.js';
import {
  MEMORY_REPORT_MS,
  type Attachment, type ControlMessage, type ExportResult, type ExportTask, type FailureCode, type MemoryReport,
  type PageResult, type PageTask, type RowsResult, type RowsTask, type Task, type WorkerConfig,
} from './protocol.js';

const config = workerData as WorkerConfig;
let instance: Promise<DuckDBInstance> | undefined;

function database(): Promise<DuckDBInstance> {
  instance ??= openServingInstance({
    threads: String(config.threads),
    memory_limit: config.memoryLimit,
    temp_directory: config.tempDirectory,
    autoinstall_known_extensions: 'false',
  });
  instance.catch(() => { instance = undefined; }); // a failed start is retried by the next task
  return instance;
}

const slots = new Slots();

interface Running {
  connection: DuckDBConnection;
  reason?: 'timeout' | 'cancelled';
  repeat?: NodeJS.Timeout;
}
const running = new Map<string, Running>();
/** Cancels that arrived before their task started (it may still be queued). */
const early = new Map<string, { reason: 'timeout' | 'cancelled'; at: number }>();

function stop(task: Running, reason: 'timeout' | 'cancelled'): void {
  task.reason ??= reason;
  task.connection.interrupt();
  // interrupt() only reaches a statement that is running; repeat it so that one about to start is caught too.
  task.repeat ??= setInterval(() => task.connection.interrupt(), 50);
}

const channel = new BroadcastChannel(config.channel);
channel.onmessage = (event) => {
  const message = (event as { data: ControlMessage }).data;
  if (message.type === 'cancel-all') {
    for (const task of running.values()) stop(task, 'cancelled');
    return;
  }
  const task = running.get(message.id);
  if (task) stop(task, message.reason);
  else {
    early.set(message.id, { reason: message.reason, at: Date.now() });
    for (const [id, e] of early) if (Date.now() - e.at > 600_000) early.delete(id);
  }
};
channel.unref();

// Snapshot databases attached to this worker's instance (instance-wide: every connection sees them).
// Attached once per snapshot, serialized; detached when idle and no longer among the most recently
// attached `attachedMax` (history reads up to SNAPSHOT_KEEP of them at once; pages read one).
interface Attached { ready: Promise<void>; running: number; order: number; path: string }
const attached = new Map<string, Attached>();
let attachOrder = 0;

async function attach(db: DuckDBInstance, target: Attachment): Promise<Attached> {
  let entry = attached.get(target.alias);
  if (!entry) {
    const ready = (async () => {
      const setup = await db.connect();
      try {
        await setup.run(`ATTACH '${target.path.replace(/'/g, "''")}' AS "${target.alias}" (READ_ONLY)`);
      } finally {
        setup.closeSync();
      }
    })();
    entry = { ready, running: 0, order: ++attachOrder, path: target.path };
    attached.set(target.alias, entry);
    ready.catch(() => attached.delete(target.alias));
    // Awaited by the task that attaches, never left running on its own: the pool waits for its tasks
    // before it stops the workers, and a thread stopped during a DETACH takes the process down.
    await detachStale(db);
  }
  await entry.ready;
  return entry;
}

async function detachStale(db: DuckDBInstance): Promise<void> {
  const newest = [...attached.entries()].sort((a, b) => b[1].order - a[1].order).slice(0, config.attachedMax).map(([alias]) => alias);
  for (const [alias, entry] of attached) {
    // Prepared statements must never outlive the database they read: a running task's are dropped when it
    // ends, and the snapshot is detached at a later attach. A file removed since (retention, compaction)
    // goes at once: its disk space is freed only when the last handle on it closes.
    const removed = !existsSync(entry.path);
    if ((newest.includes(alias) && !removed) || entry.running > 0 || !slots.releasable(alias)) continue;
    attached.delete(alias);
    const setup = await db.connect();
    try {
      await entry.ready;
      await setup.run(`DETACH "${alias}"`);
    } catch {
      // A failed detach leaves a read-only handle open until the worker ends; nothing else depends on it.
    } finally {
      setup.closeSync();
    }
  }
}

async function run<T>(task: Task, body: (slot: Slot, state: Running) => Promise<T>): Promise<T | { ok: false; code: FailureCode; message: string }> {
  const cancelled = early.get(task.id);
  if (cancelled) {
    early.delete(task.id);
    return { ok: false, code: cancelled.reason, message: 'cancelled before it started' };
  }
  if (Date.now() >= task.deadline) return { ok: false, code: 'timeout', message: 'deadline passed while queued' };
  const db = await database();
  const snapshots: Attached[] = [];
  try {
    for (const target of task.attach) snapshots.push(await attach(db, target));
  } catch (e) {
    return { ok: false, code: 'unavailable', message: `cannot attach the snapshot: ${(e as Error).message}` };
  }
  const slot = await slots.take(db);
  // Counted only once the task holds a connection, so that a failed connect cannot pin the snapshot.
  for (const snapshot of snapshots) snapshot.running++;
  const state: Running = { connection: slot.connection };
  running.set(task.id, state);
  const timer = setTimeout(() => stop(state, 'timeout'), Math.max(0, task.deadline - Date.now()));
  let failed = false;
  try {
    return await body(slot, state);
  } catch (e) {
    failed = true;
    if (state.reason) return { ok: false, code: state.reason, message: (e as Error).message };
    return { ok: false, code: 'error', message: (e as Error).message };
  } finally {
    clearTimeout(timer);
    if (state.repeat) clearInterval(state.repeat);
    running.delete(task.id);
    slots.give(slot, !failed && !state.reason);
    for (const snapshot of snapshots) snapshot.running--;
  }
}

let lastReport = 0;

/** DuckDB's own memory, for /metrics (native growth: DuckDB's, or the allocator's?); at most every MEMORY_REPORT_MS. */
async function memoryReport(connection: DuckDBConnection): Promise<MemoryReport | undefined> {
  if (Date.now() - lastReport < MEMORY_REPORT_MS) return undefined;
  lastReport = Date.now();
  try {
    const [bytes, temporary] = (await connection.runAndReadAll(
      'SELECT sum(memory_usage_bytes)::BIGINT, sum(temporary_storage_bytes)::BIGINT FROM duckdb_memory()',
    )).getRows()[0]!;
    const heap = getHeapStatistics();
    return {
      worker: threadId, bytes: Number(bytes ?? 0), temporaryBytes: Number(temporary ?? 0),
      heapUsed: heap.used_heap_size, heapTotal: heap.total_heap_size,
    };
  } catch {
    return undefined;
  }
}

function checkNotStopped(state: Running): void {
  if (state.reason) throw new Error(`stopped: ${state.reason}`);
}


const aliasesOf = (task: Task) => task.attach.map((a) => a.alias);

async function page(task: PageTask): Promise<PageResult> {
  const aliases = aliasesOf(task);
  return run(task, async (slot, state) => {
    const count = async () => Number((await slot.readAll(task.count.sql, task.count.params, aliases)).getRows()[0]![0] as bigint);
    let total = task.knownTotal ?? (task.pageCountsTotal ? undefined : await count());
    let all: unknown[][] = [];
    if (total === undefined || task.offset < total) {
      checkNotStopped(state);
      all = await pageRows(await slot.run(task.page.sql, task.page.params, aliases), task.valueIndexes !== undefined);
      // No rows (nothing matches, or a page past the end) carry no total: only then is it counted apart.
      if (total === undefined) total = all.length > 0 ? Number(all[0]![all[0]!.length - 1] as bigint) : await count();
    }
    // The whole document is written here, not in the main thread: structured-cloning row objects cost as
    // much as the query, and a second buffer there for the envelope made its collector run every few pages.
    const { number, size, base, carried } = task.document;
    const meta = pagination(number, size, total);
    const body = pageJson(all, task, '{"data":', `,"links":${JSON.stringify(pageLinks(base, carried, meta))},"meta":${JSON.stringify({ pagination: meta })}}`);
    const result = { ok: true as const, total, rows: all.length, body, memory: await memoryReport(slot.connection) };
    // The body's ArrayBuffer (its own: Pieces.finish) moves to the main thread instead of being copied.
    return Piscina.move({ [Piscina.transferableSymbol]: body.buffer, [Piscina.valueSymbol]: result }) as unknown as PageResult;
  });
}

async function exportCsv(task: ExportTask): Promise<ExportResult> {
  return run(task, async ({ connection }) => {
    const target = `'${task.fifo.replace(/'/g, "''")}'`;
    // The header is written by the main thread: COPY would quote it under FORCE_QUOTE (interface §6 wants it bare).
    // Stored lines are quoted already: QUOTE '' and ESCAPE '' write each as it is, with its line feed.
    const format = task.lines ? `QUOTE '', ESCAPE ''` : 'FORCE_QUOTE *';
    const copy = `COPY (${task.query.sql}) TO ${target} (FORMAT csv, HEADER false, ${format}, USE_TMP_FILE false)`;
    const result = await connection.run(copy, task.query.params as DuckDBValue[]);
    return { ok: true as const, rows: Number(result.rowsChanged), memory: await memoryReport(connection) };
  });
}

async function rows(task: RowsTask): Promise<RowsResult> {
  const aliases = aliasesOf(task);
  return run(task, async (slot, state) => {
    const results: unknown[][][] = [];
    for (const statement of task.statements) {
      checkNotStopped(state);
      results.push((await slot.readAll(statement.sql, statement.params, aliases)).getRows());
    }
    return { ok: true as const, results, memory: await memoryReport(slot.connection) };
  });
}

export default async function handle(task: Task): Promise<PageResult | ExportResult | RowsResult> {
  switch (task.kind) {
    case 'page': return page(task);
    case 'export': return exportCsv(task);
    case 'rows': return rows(task);
  }
}
