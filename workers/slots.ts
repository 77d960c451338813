// Kept connections, one per task this worker runs at once, each with the statements it has prepared.
// A new connection and an unprepared statement are parsed, bound and planned every time (docs/performance.md:
// a kept connection with a statement prepared once cut a small page from 7.4 to 5.3 ms of DuckDB time); the
// compiler binds every value, so one SQL text serves every request of its shape. One statement at a time
// runs on a connection (docs/duckdb-in-workers.md): a slot belongs to one task from take() to give().
import type { DuckDBConnection, DuckDBInstance, DuckDBPreparedStatement, DuckDBValue } from '@duckdb/node-api';
import { tracked } from './calls.js';

/** Prepared statements kept per connection, least recently used out first. */
const STATEMENTS_PER_SLOT = 64;

interface Prepared { statement: DuckDBPreparedStatement; aliases: readonly string[] }

export class Slot {
  private readonly statements = new Map<string, Prepared>();

  constructor(readonly connection: DuckDBConnection) {}

  /** Runs `sql` with `params` bound and reads every row; `aliases` name the attached snapshots the statement reads. */
  async readAll(sql: string, params: readonly unknown[], aliases: readonly string[]) {
    return tracked((await this.bound(sql, params, aliases)).runAndReadAll());
  }

  /** The same, as DuckDB's chunks: a page reads its row JSON from them as bytes (workers/page-json.ts). */
  async run(sql: string, params: readonly unknown[], aliases: readonly string[]) {
    return tracked((await this.bound(sql, params, aliases)).run());
  }

  private async bound(sql: string, params: readonly unknown[], aliases: readonly string[]): Promise<DuckDBPreparedStatement> {
    let prepared = this.statements.get(sql);
    if (prepared) this.statements.delete(sql); // re-inserted below: Map order is the recency order
    // Kept with the aliases it reads, not every one its first task attached: a statement of an organization no
    // batch touched reads only the base, and outlives the deltas of the snapshots it ran against.
    else prepared = { statement: await tracked(this.connection.prepare(sql)), aliases: aliases.filter((a) => sql.includes(`"${a}"`)) };
    this.statements.set(sql, prepared);
    for (const [oldest, p] of this.statements) {
      if (this.statements.size <= STATEMENTS_PER_SLOT) break;
      this.statements.delete(oldest);
      p.statement.destroySync();
    }
    prepared.statement.bind(params as DuckDBValue[]);
    return prepared.statement;
  }

  holds(alias: string): boolean {
    for (const p of this.statements.values()) if (p.aliases.includes(alias)) return true;
    return false;
  }

  /** Drops the statements that read `alias`, before that snapshot is detached. */
  forget(alias: string): void {
    for (const [sql, p] of this.statements) {
      if (!p.aliases.includes(alias)) continue;
      this.statements.delete(sql);
      p.statement.destroySync();
    }
  }

  close(): void {
    for (const p of this.statements.values()) p.statement.destroySync();
    this.statements.clear();
    this.connection.closeSync();
  }
}

export class Slots {
  private readonly idle: Slot[] = [];
  private readonly busy = new Set<Slot>();

  async take(db: DuckDBInstance): Promise<Slot> {
    const slot = this.idle.pop() ?? new Slot(await tracked(db.connect()));
    this.busy.add(slot);
    return slot;
  }

  /** Back for the next task, or closed when its task was stopped (an interrupt must not reach the next task). */
  give(slot: Slot, reusable: boolean): void {
    this.busy.delete(slot);
    if (reusable) this.idle.push(slot);
    else slot.close();
  }

  /** Whether `alias` can be detached now: no running task holds statements that read it. */
  releasable(alias: string): boolean {
    for (const slot of this.busy) if (slot.holds(alias)) return false;
    for (const slot of this.idle) slot.forget(alias);
    return true;
  }
}
