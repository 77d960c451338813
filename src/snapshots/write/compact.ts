// History without thirty copies of the serving layout (docs/history.md, "What history costs on disk").
// A snapshot's DuckDB file is mostly what makes the current snapshot fast: each row's JSON and CSV line, and
// a folded copy of every string for case-insensitive filters and sorts. Once a snapshot is older than the
// newest SNAPSHOT_KEEP_FULL, it is compacted: one DuckDB file without the JSON and CSV lines, whose folded
// copies are null wherever folding changes nothing (most names are lower case already), rows in the same
// order, no Parquet files. Its relation puts each folded copy back with a coalesce (Snapshot.target), its
// pages take the column path, its exports format each value, history computes its row JSON with the
// loader's own expression: the same answers, from a fraction of the bytes.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { catalogFor, foldedColumn, SERVING_COLUMNS, VIEW_NAMES } from '../../catalog/catalog.js';
import { openInstance } from '../../duckdb/open-instance.js';
import { storedFoldSql } from '../../query/compile.js';
import {
  fsyncPath, listSnapshotIds, readCurrentId, readManifest, removeUnnamed, snapshotPath, writeManifest, type Manifest,
} from '../snapshot-dir.js';
import { ident, sqlLiteral } from '../../duckdb/sql.js';


export const COMPACT_FILE = 'compact.duckdb';

/** Each string column of `view` with the folded copy stored beside it (engine-independent names). */
export const foldedColumns = (view: string): { column: string; folded: string }[] =>
  catalogFor().view(view)!.fields.filter((f) => f.type === 'string').map((f) => ({ column: f.column, folded: foldedColumn(f.column) }));

/**
 * The moments of a compaction a reader can see: `started` (nothing changed yet), `written` (the compact file
 * is in place, the manifest still names the full files), `switched` (the manifest names the compact file,
 * the full files are still there) and `removed` (they are gone).
 */
export type CompactStep = 'started' | 'written' | 'switched' | 'removed';

export interface CompactOptions {
  memoryLimit?: string;
  threads?: number;
  /** Awaited at each step of each snapshot's compaction: the suite holds it there to read it meanwhile. */
  atStep?: (step: CompactStep, id: string) => Promise<void>;
}

/**
 * Compacts every snapshot older than the newest `keepFull` (never the current one), oldest first; returns
 * the ids it compacted. Safe to repeat after a crash: a snapshot's manifest names either its full files or
 * its compact file, and files the manifest does not name are removed.
 */
export async function compactSnapshots(dataDir: string, keepFull: number, opts: CompactOptions = {}): Promise<string[]> {
  const current = await readCurrentId(dataDir);
  const ids = await listSnapshotIds(dataDir);
  const done: string[] = [];
  // A batch snapshot shares its base's file (a link) and adds a small delta: compacting either would only
  // add a file (docs/changes.md, "Disk").
  const manifests = await Promise.all(ids.map((id) => readManifest(dataDir, id).catch(() => null)));
  const bases = new Set(manifests.map((m) => m?.base).filter((b): b is string => b !== undefined));
  for (const id of ids.slice(0, Math.max(0, ids.length - keepFull))) {
    if (id === current || bases.has(id)) continue;
    const manifest = await readManifest(dataDir, id).catch(() => null);
    // Any snapshot made by batches, with a newer delta or only an older one: its rows are not its base's alone.
    if (manifest?.base !== undefined) continue;
    // Snapshots from before row JSON have nothing to drop; a damaged one is left for retention to remove.
    if (!manifest?.database || manifest.rowJson !== true) continue;
    if (manifest.compacted) {
      await removeUnnamed(dataDir, manifest);
      continue;
    }
    await compactOne(dataDir, manifest, opts);
    done.push(id);
  }
  return done;
}

async function compactOne(dataDir: string, manifest: Manifest, opts: CompactOptions): Promise<void> {
  const step = async (name: CompactStep) => opts.atStep?.(name, manifest.id);
  await step('started');
  const dir = snapshotPath(dataDir, manifest.id);
  const tmp = join(dir, `.compact-${process.pid}.duckdb`);
  const scratch = join(dir, '.compact-tmp');
  await fs.rm(tmp, { force: true });
  await fs.mkdir(scratch, { recursive: true });
  const views = VIEW_NAMES.filter((v) => manifest.rows[v] !== undefined);
  const instance = await openInstance(':memory:', {
    threads: String(opts.threads ?? 2),
    memory_limit: opts.memoryLimit ?? '1GB',
    temp_directory: scratch,
    preserve_insertion_order: 'true', // the rows keep their stored order: organization, then default order
  });
  const db = await instance.connect();
  try {
    await db.run(`ATTACH ${sqlLiteral(join(dir, manifest.database!))} AS full_snapshot (READ_ONLY)`);
    await db.run(`ATTACH ${sqlLiteral(tmp)} AS compact_snapshot`);
    for (const view of views) {
      const sparse = foldedColumns(view).map(({ column, folded }) => `${storedFoldSql(`"${column}"`, `"${folded}"`)} AS "${folded}"`);
      await db.run(`CREATE TABLE compact_snapshot."${view}" AS SELECT * EXCLUDE (${SERVING_COLUMNS.map(ident).join(', ')}) REPLACE (${sparse.join(', ')}) FROM full_snapshot."${view}"`);
      const rows = Number((await db.runAndReadAll(`SELECT count(*) FROM compact_snapshot."${view}"`)).getRows()[0]![0] as bigint);
      if (rows !== manifest.rows[view]) throw new Error(`compacting ${manifest.id}: ${view} has ${rows} rows, not ${manifest.rows[view]}`);
    }
    await db.run('CHECKPOINT compact_snapshot');
    await db.run('DETACH compact_snapshot');
    await db.run('DETACH full_snapshot');
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw e;
  } finally {
    db.closeSync();
    instance.closeSync();
    await fs.rm(scratch, { recursive: true, force: true });
  }
  await fsyncPath(tmp);
  await fs.rename(tmp, join(dir, COMPACT_FILE));
  await step('written');
  const { csvLines: _lines, indexes: _indexes, positions: _positions, sourceState: _state, ...kept } = manifest;
  const compacted: Manifest = {
    ...kept,
    files: {},
    database: COMPACT_FILE,
    rowJson: false,
    compacted: true,
    sizes: { [COMPACT_FILE]: (await fs.stat(join(dir, COMPACT_FILE))).size },
  };
  // The switch: a reader sees the old manifest with the old files, or the new one with the new file. A
  // server that opened the old form reads its own links to the old files (pins.ts), so removing them here
  // takes nothing from it.
  await writeManifest(dataDir, compacted);
  await step('switched');
  await removeUnnamed(dataDir, compacted);
  await step('removed');
}
