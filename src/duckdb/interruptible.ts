// A writer's connection that an AbortSignal stops: the statement in flight is interrupted (DuckDB's own
// interrupt), and every statement after the signal throws before it starts. A load's build stops when its
// validation fails, a batch's delta when the batch's validation does, a layer compaction when a batch arrives.
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';

export interface Interruptible {
  run(sql: string): Promise<unknown>;
  rows(sql: string): Promise<DuckDBValue[][]>;
  /** Stops listening to the signal: call once the connection is done with. */
  release(): void;
}

export function interruptible(db: DuckDBConnection, signal: AbortSignal | undefined): Interruptible {
  const interrupt = () => db.interrupt();
  signal?.addEventListener('abort', interrupt);
  return {
    run: (sql) => { signal?.throwIfAborted(); return db.run(sql); },
    rows: async (sql) => { signal?.throwIfAborted(); return (await db.runAndReadAll(sql)).getRows(); },
    release: () => signal?.removeEventListener('abort', interrupt),
  };
}
