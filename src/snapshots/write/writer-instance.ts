// The DuckDB instance a follower keeps from one batch to the next. A build on an instance of its own attaches
// the snapshot's layers afresh: every block of the base it reads (the touched organizations' rows, the
// validation's lookups of names and ids) comes from the file again, with the tables' metadata, and goes with
// the instance. Kept, the layers that outlive a batch stay attached (build-steps.ts attachLayers) and what
// DuckDB read of them stays in its buffer pool for the next batch (docs/performance.md, "Change batches: one
// instance kept by the follower").
// Each build runs on a connection of its own; what it makes besides its temporary tables (the schemas over the
// layers, the batch's attachments, the staging's tables) goes when it ends (`afterBuild`). A build that fails,
// or whose leftovers cannot be dropped, closes the instance, and the next opens another: nothing a failed
// build left can reach the next.
// Batches coalesced are validated before their build, and again beside it, on a second instance kept the same
// way (`sourceState`). Closing a DuckDB instance returns the freed pages of every instance in the process to
// the system (docs/development.md), so one opened and closed for each coalesced build made the next build take
// its pages from the system again, which the follower's allocator setting (duckdb/allocator.ts) is there to spare.
import type { DuckDBInstance } from '@duckdb/node-api';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { openInstance } from '../../duckdb/open-instance.js';
import { BATCH_THREADS } from '../delta-layout.js';
import { attachLayers, type KeptLayers, type LayerPaths } from './build-steps.js';
import { openStateInstance, stateOn, type SnapshotState } from './snapshot-state.js';

/** Where a kept instance spills (DuckDB cannot move its temporary directory once it has used it): one per process. */
const spillRoot = (dataDir: string) => join(dataDir, 'writer-tmp');

export class WriterInstance {
  private opened: { instance: DuckDBInstance; layers: KeptLayers } | null = null;
  private reader: { instance: DuckDBInstance; layers: KeptLayers } | null = null;

  constructor(private readonly settings: { dataDir: string; threads?: number; memoryLimit?: string }) {}

  /** The instance and what it keeps attached, opened on first use and after a failed build. */
  async take(): Promise<{ instance: DuckDBInstance; layers: KeptLayers }> {
    if (this.opened) return this.opened;
    const dir = this.spillDir();
    await removeStale(spillRoot(this.settings.dataDir));
    await fs.rm(dir, { recursive: true, force: true });
    await fs.mkdir(dir, { recursive: true });
    const instance = await openInstance(':memory:', {
      threads: String(this.settings.threads ?? BATCH_THREADS),
      memory_limit: this.settings.memoryLimit ?? '2GB',
      temp_directory: dir,
    });
    this.opened = { instance, layers: new Map() };
    return this.opened;
  }

  /** Drops what a build made that outlives its connection: every attachment but the kept layers, every schema, table and view it created. */
  async afterBuild(): Promise<void> {
    if (!this.opened) return;
    const { instance, layers } = this.opened;
    const db = await instance.connect();
    try {
      const databases = (await db.runAndReadAll(`SELECT database_name FROM duckdb_databases() WHERE NOT internal AND database_name <> 'memory'`)).getRows();
      for (const [name] of databases) if (!layers.has(name as string)) await db.run(`DETACH "${name as string}"`);
      const schemas = (await db.runAndReadAll(`SELECT schema_name FROM duckdb_schemas() WHERE database_name = 'memory' AND NOT internal AND schema_name <> 'main'`)).getRows();
      for (const [name] of schemas) await db.run(`DROP SCHEMA "${name as string}" CASCADE`);
      // The staging's tables and views (staging.ts), made in the instance's own catalog like a load's.
      for (const kind of ['VIEW', 'TABLE'] as const) {
        const objects = (await db.runAndReadAll(`SELECT ${kind === 'VIEW' ? 'view_name' : 'table_name'} FROM ${kind === 'VIEW' ? 'duckdb_views()' : 'duckdb_tables()'}
          WHERE database_name = 'memory' AND schema_name = 'main' AND NOT internal`)).getRows();
        for (const [name] of objects) await db.run(`DROP ${kind} "${name as string}" CASCADE`);
      }
    } finally {
      db.closeSync();
    }
  }

  /**
   * The source state of the layers `paths`, read on the second kept instance through a connection of its own.
   * What it attaches besides the kept layers goes when it closes; if that fails, the instance goes with it.
   */
  async sourceState(paths: LayerPaths): Promise<SnapshotState> {
    this.reader ??= { instance: await openStateInstance(this.settings.threads), layers: new Map() };
    const { instance, layers } = this.reader;
    const db = await instance.connect();
    try {
      const attached = await attachLayers((sql) => db.run(sql), paths, layers);
      return await stateOn(db, attached.stack, async () => {
        const dropped = await attached.detach().then(() => true, () => false);
        db.closeSync();
        if (!dropped) this.closeReader();
      });
    } catch (e) {
      db.closeSync();
      this.closeReader();
      throw e;
    }
  }

  private closeReader(): void {
    this.reader?.instance.closeSync();
    this.reader = null;
  }

  /** Closes both instances (the follower's at its end). */
  async close(): Promise<void> {
    this.closeReader();
    await this.closeBuilder();
  }

  /**
   * Closes the builds' instance (a failed build's); the next take() opens another. The reader stays: a
   * coalesced batch's validation may still be reading on it.
   */
  async closeBuilder(): Promise<void> {
    if (!this.opened) return;
    this.opened.instance.closeSync();
    this.opened = null;
    await fs.rm(this.spillDir(), { recursive: true, force: true });
  }

  private spillDir(): string {
    return join(spillRoot(this.settings.dataDir), String(process.pid));
  }
}

/** Spill directories of processes that are gone (killed before their close). */
async function removeStale(root: string): Promise<void> {
  for (const name of await fs.readdir(root).catch(() => [] as string[])) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    let alive = true;
    try { process.kill(pid, 0); } catch (e) { alive = (e as NodeJS.ErrnoException).code === 'EPERM'; }
    if (!alive) await fs.rm(join(root, name), { recursive: true, force: true });
  }
}
