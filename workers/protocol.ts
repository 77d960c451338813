// Messages between the main thread and the DuckDB workers. Kept free of imports so that both sides can
// load it cheaply.

export type SqlParam = string | number | boolean | bigint;

export interface Statement {
  sql: string;
  params: SqlParam[];
}

export interface WorkerConfig {
  /** BroadcastChannel used for cancel messages; unique per pool so that pools in one process stay apart. */
  channel: string;
  threads: number;
  memoryLimit: string;
  /** The memory limit of the instance that runs exports of stored lines (engine.ts). */
  exportMemoryLimit: string;
  tempDirectory: string;
  /** Snapshot databases a worker keeps attached when idle (history reads several at once). */
  attachedMax: number;
}

/** A snapshot's DuckDB file, attached read-only under `alias` (an identifier we make, never a client's). */
export interface Attachment {
  alias: string;
  path: string;
}

interface TaskBase {
  /** Unique per task; cancel messages name it. */
  id: string;
  /** The snapshot databases the task reads, attached read-only (once per worker) before it runs; none for Parquet relations. */
  attach: Attachment[];
  /** Epoch milliseconds at which the worker interrupts the query. */
  deadline: number;
}

export interface PageTask extends TaskBase {
  kind: 'page';
  count: Statement;
  /** The total when it is known without counting (an unfiltered query: the manifest has it). */
  knownTotal?: number;
  page: Statement;
  /** The page's last column is the count of every matching row (compile.ts). */
  pageCountsTotal: boolean;
  /** The page reads each row's JSON array of values: the selected fields' positions in it (compile.ts). */
  valueIndexes?: number[];
  offset: number;
  /** A cursor page sought by position: the statement that reads a row's sort term values by position (compile.ts). */
  cursorKeys?: { statement: Statement; layout: string };
  /** JSON:API row type and, per selected field, its JSON attribute name. */
  rowType: string;
  attributes: string[];
  /** What the document's links and meta are made of (src/query/links.ts): the worker writes the whole document. */
  document: PageDocument;
}

export interface PageDocument {
  number: number;
  size: number;
  /** Scheme, host and path of the request; `carried`, the parameters its links repeat. */
  base: string;
  carried: [string, string][];
  /**
   * Set on a cursor page (docs/data-out.md): what the next cursor is made of. The page's rows carry
   * `keyCount` sort term values after their values, and one row more than `size` when another row follows.
   */
  cursor?: { scope: string; snapshots: string[]; received: string; keyCount: number };
}

export interface ExportTask extends TaskBase {
  kind: 'export';
  query: Statement;
  /** NDJSON: the query's one column is a row's line, written as it is (src/query/compile.ts exportSelect). */
  format: 'csv' | 'parquet' | 'ndjson';
  /** The query's one column is a stored CSV line, quoted already: written as it is. */
  lines: boolean;
  /** A FIFO whose read end the main thread has already opened. */
  fifo: string;
}

/** Statements run in order on one connection; their rows come back as DuckDB gives them (history, docs/history.md). */
export interface RowsTask extends TaskBase {
  kind: 'rows';
  statements: Statement[];
}

export type Task = PageTask | ExportTask | RowsTask;

/** `unavailable`: the snapshot's data cannot be read (missing or damaged file); the client gets a 503. */
export type FailureCode = 'timeout' | 'cancelled' | 'unavailable' | 'error';

/** What a worker's DuckDB instance holds (duckdb_memory()); a result carries one at most every MEMORY_REPORT_MS. */
export interface MemoryReport {
  worker: number;
  bytes: number;
  temporaryBytes: number;
  /** The worker's own V8 heap (an isolate of its own, not in the main thread's heap figures): used and committed. */
  heapUsed: number;
  heapTotal: number;
}

/** Idle Piscina workers block in Atomics.wait (no timers run), so reports ride on task results instead. */
export const MEMORY_REPORT_MS = 10_000;

export type PageResult =
  /** `body`: the whole JSON:API document, in an ArrayBuffer of its own that is transferred, not copied. */
  | { ok: true; total: number; rows: number; body: Uint8Array; memory?: MemoryReport }
  | { ok: false; code: FailureCode; message: string };

export type ExportResult =
  | { ok: true; rows: number; memory?: MemoryReport }
  | { ok: false; code: FailureCode; message: string };

export type RowsResult =
  | { ok: true; results: unknown[][][]; memory?: MemoryReport }
  | { ok: false; code: FailureCode; message: string };

export type ControlMessage =
  | { type: 'cancel'; id: string; reason: 'timeout' | 'cancelled' }
  | { type: 'cancel-all' };
