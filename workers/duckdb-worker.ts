// Two DuckDB instances per worker thread (engine.ts: one for pages, a small one for exports of stored
// lines); a kept connection per concurrent task, with its prepared statements (slots.ts).
// A running query is only ever stopped with connection.interrupt() (deadline timer here, or a cancel
// message from the main thread): terminating a worker mid-query takes the whole process down.
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { getHeapStatistics } from 'node:v8';
import { BroadcastChannel, threadId, workerData } from 'node:worker_threads';
import Piscina from 'piscina';
import { cursorRows, nextCursor } from '../src/query/cursor.js';
import { pageNavigation } from '../src/query/links.js';
import { pageJson, pageRows } from './page-json.js';
import { Engine, type Attached } from './engine.js';
import type { Slot } from './slots.js';
import {
  MEMORY_REPORT_MS,
  type Attachment, type ControlMessage, type ExportResult, type ExportTask, type FailureCode, type MemoryReport,
  type PageResult, type PageTask, type RowsResult, type RowsTask, type Task, type WorkerConfig,
} from './protocol.js';
import { sqlLiteral } from '../src/duckdb/sql.js';
import { jsonLogger } from '../src/log.js';
import { inFlight, settled, tracked } from './calls.js';

const config = workerData as WorkerConfig;
const settings = {
  threads: String(config.threads),
  memory_limit: config.memoryLimit,
  temp_directory: config.tempDirectory,
  autoinstall_known_extensions: 'false',
};
/** Pages, history and exports that sort: the instance whose buffer pool keeps what pages read warm. */
const pages = new Engine(settings, config.attachedMax);
/**
 * Exports of stored lines: a scan in stored order that needs no memory of its own. In the pages' instance
 * its blocks filled the buffer pool (RSS +514 MB after the largest organization's 592 MB resources export,
 * docs/performance.md, "The export instance"); here a small limit evicts them as the scan moves on.
 */
const lineExports = new Engine({ ...settings, memory_limit: config.exportMemoryLimit }, config.attachedMax);

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

async function run<T>(task: Task, engine: Engine, body: (slot: Slot, state: Running, aliases: readonly string[]) => Promise<T>): Promise<T | { ok: false; code: FailureCode; message: string }> {
  const cancelled = early.get(task.id);
  if (cancelled) {
    early.delete(task.id);
    return { ok: false, code: cancelled.reason, message: 'cancelled before it started' };
  }
  if (Date.now() >= task.deadline) return { ok: false, code: 'timeout', message: 'deadline passed while queued' };
  const db = await engine.database();
  const read = readBy(task);
  const snapshots: Attached[] = [];
  try {
    try {
      for (const target of read) snapshots.push(await engine.attach(target));
    } catch (e) {
      return { ok: false, code: 'unavailable', message: `cannot attach the snapshot: ${(e as Error).message}` };
    }
    const slot = await engine.slots.take(db);
    const state: Running = { connection: slot.connection };
    running.set(task.id, state);
    const timer = setTimeout(() => stop(state, 'timeout'), Math.max(0, task.deadline - Date.now()));
    let failed = false;
    try {
      return await body(slot, state, read.map((a) => a.alias));
    } catch (e) {
      failed = true;
      if (state.reason) return { ok: false, code: state.reason, message: (e as Error).message };
      return { ok: false, code: 'error', message: (e as Error).message };
    } finally {
      clearTimeout(timer);
      if (state.repeat) clearInterval(state.repeat);
      running.delete(task.id);
      engine.slots.give(slot, !failed && !state.reason);
    }
  } finally {
    // Attached snapshots are counted from attach() on: none is detached while this task may still read it.
    for (const snapshot of snapshots) engine.done(snapshot);
  }
}

let lastReport = 0;

/** DuckDB's own memory, for /metrics (native growth: DuckDB's, or the allocator's?); at most every MEMORY_REPORT_MS. */
async function memoryReport(connection: DuckDBConnection): Promise<MemoryReport | undefined> {
  if (Date.now() - lastReport < MEMORY_REPORT_MS) return undefined;
  lastReport = Date.now();
  try {
    const [bytes, temporary] = (await tracked(connection.runAndReadAll(
      'SELECT sum(memory_usage_bytes)::BIGINT, sum(temporary_storage_bytes)::BIGINT FROM duckdb_memory()',
    ))).getRows()[0]!;
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


/** The SQL a task runs. */
const statementsOf = (task: Task): string[] => {
  switch (task.kind) {
    case 'page': return [task.count.sql, task.page.sql, ...(task.cursorKeys ? [task.cursorKeys.statement.sql] : [])];
    case 'export': return [task.query.sql];
    case 'rows': return task.statements.map((s) => s.sql);
  }
};

/**
 * The snapshot files of `task.attach` that its statements read (aliases are ours and always quoted in the SQL,
 * current-snapshot.ts). A page of an organization no batch touched reads the base alone: it neither waits for
 * a new batch snapshot's delta to be attached nor holds it.
 */
const readBy = (task: Task) => {
  const sql = statementsOf(task);
  return task.attach.filter((a) => sql.some((s) => s.includes(`"${a.alias}"`)));
};

async function page(task: PageTask): Promise<PageResult> {
  return run(task, pages, async (slot, state, aliases) => {
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
    const { number, size, base, carried, cursor } = task.document;
    let next: string | null = null;
    const shown = cursor ? cursorRows(all, size) : { rows: all, more: false };
    if (cursor && shown.more) {
      // The row past the page's size only says that another follows: the next cursor names the page's last row.
      all = shown.rows;
      const keysAt = 1 + (task.valueIndexes ? 1 : task.attributes.length);
      const last = all.at(-1)!;
      if (task.cursorKeys) {
        // Sought by position: the row's sort term values, read by its position, then the position in its layout.
        const { statement, layout } = task.cursorKeys;
        const position = last[keysAt] as string;
        const terms = (await slot.readAll(statement.sql, [...statement.params, position], aliases)).getRows()[0]!;
        next = nextCursor(cursor, terms, 0, undefined, [position, layout]);
      } else {
        next = nextCursor(cursor, last, keysAt, cursor.keyCount);
      }
    }
    const { links, pagination } = pageNavigation(base, carried, { number, size }, total, cursor && { received: cursor.received, next });
    const body = pageJson(all, task, '{"data":', `,"links":${JSON.stringify(links)},"meta":${JSON.stringify({ pagination })}}`);
    const result = { ok: true as const, total, rows: all.length, body, memory: await memoryReport(slot.connection) };
    // The body's ArrayBuffer (its own: Pieces.finish) moves to the main thread instead of being copied.
    return Piscina.move({ [Piscina.transferableSymbol]: body.buffer, [Piscina.valueSymbol]: result }) as unknown as PageResult;
  });
}

async function exportFile(task: ExportTask): Promise<ExportResult> {
  return run(task, task.lines ? lineExports : pages, async ({ connection }) => {
    const target = sqlLiteral(task.fifo);
    // The header is written by the main thread: COPY would quote it under FORCE_QUOTE (interface §6 wants it bare).
    // Stored lines are quoted already, and an NDJSON line is JSON: QUOTE '' and ESCAPE '' write each as it is,
    // with its line feed. Parquet is written by DuckDB's own writer, row groups in order, its footer last.
    const options = task.format === 'parquet' ? 'FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1'
      : `FORMAT csv, HEADER false, ${task.lines || task.format === 'ndjson' ? `QUOTE '', ESCAPE ''` : 'FORCE_QUOTE *'}`;
    const copy = `COPY (${task.query.sql}) TO ${target} (${options}, USE_TMP_FILE false)`;
    const result = await tracked(connection.run(copy, task.query.params as DuckDBValue[]));
    // The report stands for the worker's pages' instance (metrics); the small export instance is bounded.
    return { ok: true as const, rows: Number(result.rowsChanged), memory: task.lines ? undefined : await memoryReport(connection) };
  });
}

async function rows(task: RowsTask): Promise<RowsResult> {
  return run(task, pages, async (slot, state, aliases) => {
    const results: unknown[][][] = [];
    for (const statement of task.statements) {
      checkNotStopped(state);
      results.push((await slot.readAll(statement.sql, statement.params, aliases)).getRows());
    }
    return { ok: true as const, results, memory: await memoryReport(slot.connection) };
  });
}

const log = jsonLogger((line) => process.stderr.write(line));

// Stopping this thread while a DuckDB call's completion is pending takes the whole process down, and Piscina
// stops a worker whose code threw outside a task: such an error is logged, and the worker goes on.
process.on('uncaughtException', (e) => log.log('error', 'uncaught error in a query worker', { thread: threadId, error: String(e.stack ?? e) }));
process.on('unhandledRejection', (e) => log.log('error', 'unhandled rejection in a query worker', { thread: threadId, error: String((e as Error)?.stack ?? e) }));

/** Tasks begun and not yet ended here. */
let active = 0;

export default async function handle(task: Task): Promise<PageResult | ExportResult | RowsResult> {
  active++;
  try {
    return await (task.kind === 'page' ? page(task) : task.kind === 'export' ? exportFile(task) : rows(task));
  } finally {
    // The last task to end keeps the worker out of Piscina's idle wait until every DuckDB call has settled
    // (calls.ts). Every call belongs to a task, so this should find none: one found is a fault, and logged.
    if (--active === 0 && inFlight() > 0) {
      log.log('warn', 'DuckDB calls outlived their task', { thread: threadId, calls: inFlight(), kind: task.kind });
      await settled();
    }
  }
}
