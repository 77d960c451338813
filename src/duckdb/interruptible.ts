// A writer's connection that an AbortSignal stops: the statement in flight is interrupted (DuckDB's own
// interrupt), and every statement after the signal throws before it starts. A load's build stops when its
// validation fails, a batch's delta when the batch's validation does, a layer compaction when a batch arrives.
//
// With EXPLORER_STATEMENT_TIMES set to a file, each statement's milliseconds and text are appended to it as
// one JSON line: where a writer's time goes, statement by statement (docs/development.md).
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { appendFileSync } from 'node:fs';
import { statementTimesFile } from '../config.js';

export interface Interruptible {
  run(sql: string): Promise<unknown>;
  rows(sql: string): Promise<DuckDBValue[][]>;
  /** Stops listening to the signal: call once the connection is done with. */
  release(): void;
}



async function timed<T>(sql: string, body: () => Promise<T>): Promise<T> {
  const timesFile = statementTimesFile();
  if (!timesFile) return body();
  const started = performance.now();
  try {
    return await body();
  } finally {
    appendFileSync(timesFile, `${JSON.stringify({ ms: Math.round((performance.now() - started) * 100) / 100, sql: sql.replace(/\s+/g, ' ').slice(0, 240) })}\n`);
  }
}

export function interruptible(db: DuckDBConnection, signal: AbortSignal | undefined): Interruptible {
  const interrupt = () => db.interrupt();
  signal?.addEventListener('abort', interrupt);
  return {
    run: (sql) => { signal?.throwIfAborted(); return timed(sql, () => db.run(sql)); },
    rows: (sql) => { signal?.throwIfAborted(); return timed(sql, async () => (await db.runAndReadAll(sql)).getRows()); },
    release: () => signal?.removeEventListener('abort', interrupt),
  };
}
