// `explorer load <dir>`: validate the whole source, build a new snapshot beside the current one, and make
// it current atomically. Any failure leaves the current snapshot untouched and removes the partial one.
import { promises as fs } from 'node:fs';
import { join, resolve } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { interruptible } from '../../duckdb/interruptible.js';
import { openInstance } from '../../duckdb/open-instance.js';
import { sourceFiles, type SourceFile, type ValidationResult } from './source-validator.js';
import { validateInWorker } from './validate-in-worker.js';
import { sourceStateIndexes, sourceStateStatements, stagingStatements } from './staging.js';
import { parquetCopy, viewStatements } from './view-files.js';
import { compactSnapshots } from './compact.js';
import { acquireWriterLock, DEFAULT_WRITER_WAIT_MS, type LockOptions } from '../writer-lock.js';
import { POSITION_COLUMN, positionIndex } from '../../catalog/catalog.js';
import { createViewTable, fillVersionKeys, STORAGE_VERSION } from './build-steps.js';
import { SMALL_ORGANIZATION_ROWS } from '../../query/compile.js';

/** The DuckDB file of a snapshot, derived from its Parquet files. */
export const DATABASE_FILE = 'snapshot.duckdb';
import {
  DEFAULT_SNAPSHOT_KEEP, DEFAULT_SNAPSHOT_KEEP_DAYS, DEFAULT_SNAPSHOT_KEEP_FULL, fsyncPath, newSnapshotId, pruneSnapshots, readCurrentId, snapshotPath, snapshotsDir, writeCurrentId, type Manifest,
} from '../snapshot-dir.js';
import { ident, sqlLiteral } from '../../duckdb/sql.js';

export class SourceInvalidError extends Error {
  constructor(readonly errors: string[], readonly errorCount: number) {
    super(`the source has ${errorCount} problem${errorCount === 1 ? '' : 's'}`);
    this.name = 'SourceInvalidError';
  }
}

export interface LoadOptions {
  dataDir: string;
  /** Snapshots to keep (config.snapshotKeep); older ones are removed after this load. */
  keep?: number;
  /** Recent UTC days whose newest snapshot is kept besides (config.snapshotKeepDays). */
  keepDays?: number;
  /** How long to wait for another writer of DATA_DIR (writer-lock.ts); ten minutes unless given. */
  writerLock?: LockOptions;
  /** Of those, the newest to keep whole (config.snapshotKeepFull); older ones are compacted after this load. */
  keepFull?: number;
  /** The snapshot's label (docs/history.md): 1–255 characters. */
  label?: string;
  memoryLimit?: string;
  /** DuckDB threads of the build: by default one for a source of at most ONE_THREAD_SOURCE_BYTES, else two. */
  threads?: number;
  onProgress?: (message: string) => void;
  /** Workspaces per range of organizations a view is built in (tests make it small). */
  sliceWorkspaces?: number;
  /**
   * Make the snapshot current only while there is none, checked under the writer lock (a first sync: a
   * load must not replace what another writer made current meanwhile). Else DataDirNotEmptyError.
   */
  onlyIfEmpty?: boolean;
  /**
   * Validate the whole source before the build starts rather than beside it: slower by the validation's
   * time, but the validating worker's heap (about 170 MB for 2M resources) is gone before DuckDB's peak.
   */
  validateFirst?: boolean;
}

/** A load made with `onlyIfEmpty` found a current snapshot: nothing was changed. */
export class DataDirNotEmptyError extends Error {}

export interface LoadResult {
  manifest: Manifest;
  validation: ValidationResult;
  seconds: number;
  /** Snapshots compacted after the load, and why compacting failed if it did (the load itself stands). */
  compacted: string[];
  compactionError?: string;
}

export async function loadSnapshot(sourceDir: string, opts: LoadOptions): Promise<LoadResult> {
  const started = performance.now();
  const source = resolve(sourceDir);
  const stat = await fs.stat(source).catch(() => null);
  if (!stat?.isDirectory()) throw new SourceInvalidError([`${sourceDir}: not a directory`], 1);
  const progress = opts.onProgress ?? (() => {});
  if (opts.label !== undefined) {
    const length = [...opts.label].length;
    if (length < 1 || length > 255) throw new SourceInvalidError([`--label: must be 1 to 255 characters, not ${length}`], 1);
  }

  // Validation (a worker thread, one core) and the build (DuckDB) run side by side: the build reads the
  // files as they are validated, into a directory that becomes a snapshot only once validation has passed.
  // When validation fails, the build is interrupted and removed, and the validation's problems are what
  // the load reports, whatever the build made of the same bad lines.
  let checking = '';
  let building = '';
  const show = () => progress([checking, building].filter(Boolean).join(' · '));
  const validating = validateInWorker(source, (file, lines) => { checking = `validating ${file}: ${lines.toLocaleString('en')} lines`; show(); })
    .finally(() => { checking = ''; });
  const failed = new AbortController();
  const validated = validating.then((v) => {
    if (v.errorCount > 0) throw new SourceInvalidError(v.errors, v.errorCount);
    return v;
  }).catch((e: Error) => { failed.abort(); throw e; });
  // Settled here so that a failed validation is not an unhandled rejection while the build still runs.
  validated.catch(() => {});
  if (opts.validateFirst) await validated;

  const root = snapshotsDir(opts.dataDir);
  // The id is stamped when the snapshot is made current, not now: id order is then load order.
  let release: (() => Promise<void>) | undefined;
  const tmp = join(root, `.tmp-${newSnapshotId()}`);
  await fs.mkdir(join(tmp, 'duckdb-tmp'), { recursive: true });
  try {
    const views = viewStatements();
    const files = sourceFiles(source);
    const threads = opts.threads ?? await loadThreads(files);
    const built = await buildViewFiles(files, views, tmp, { ...opts, threads }, (m) => { building = m; show(); }, failed.signal)
      .catch(async (e: Error) => { await validated; throw e; });
    const validation = await validated;
    const { rows, organizationRows, organizationKeys, positions } = built;
    await fs.rm(join(tmp, 'duckdb-tmp'), { recursive: true, force: true });
    // From here to the end of compaction the load changes DATA_DIR: one writer at a time. Taken before the
    // id is stamped, so that id order stays the order in which snapshots became current.
    release = await acquireWriterLock(opts.dataDir, 'load', opts.writerLock ?? { waitMs: DEFAULT_WRITER_WAIT_MS });
    if (opts.onlyIfEmpty && (await readCurrentId(opts.dataDir)) !== null) throw new DataDirNotEmptyError(`${opts.dataDir} has a current snapshot`);
    const loadedAt = new Date();
    const id = newSnapshotId(loadedAt);
    const manifest: Manifest = {
      id,
      createdAt: loadedAt.toISOString(),
      ...(opts.label === undefined ? {} : { label: opts.label }),
      source,
      counts: validation.counts,
      files: Object.fromEntries(views.map((v) => [v.view, v.file])),
      database: DATABASE_FILE,
      rows,
      organizationRows,
      organizationKeys,
      rowJson: true,
      csvLines: Object.fromEntries(views.map((v) => [v.view, v.csvLines])),
      indexes: Object.fromEntries(views.filter((v) => v.indexes.length > 0).map((v) => [v.view, v.indexes.map((i) => i.column)])),
      positions,
      sourceState: true,
      listMembers: true,
    };
    const sizes: Record<string, number> = {};
    for (const name of [...Object.values(manifest.files), DATABASE_FILE]) sizes[name] = (await fs.stat(join(tmp, name))).size;
    manifest.sizes = sizes;
    await fs.writeFile(join(tmp, 'access.json'), JSON.stringify(validation.access));
    await fs.writeFile(join(tmp, 'manifest.json'), JSON.stringify(manifest, null, 2));
    for (const name of await fs.readdir(tmp)) await fsyncPath(join(tmp, name));
    await fs.rename(tmp, snapshotPath(opts.dataDir, id));
    await fsyncPath(root);
    await writeCurrentId(opts.dataDir, id);
    await pruneSnapshots(opts.dataDir, { keep: opts.keep ?? DEFAULT_SNAPSHOT_KEEP, keepDays: opts.keepDays ?? DEFAULT_SNAPSHOT_KEEP_DAYS });
    const compaction = await compactSnapshots(opts.dataDir, opts.keepFull ?? DEFAULT_SNAPSHOT_KEEP_FULL, { memoryLimit: opts.memoryLimit, threads: opts.threads })
      .then((compacted) => ({ compacted }), (e: Error) => ({ compacted: [] as string[], compactionError: e.message }));
    return { manifest, validation, seconds: (performance.now() - started) / 1000, ...compaction };
  } catch (e) {
    await fs.rm(tmp, { recursive: true, force: true });
    throw e;
  } finally {
    await release?.();
  }
}

/** DuckDB threads of a load whose caller gives none, beyond a small source. */
const LOAD_THREADS = 2;

/**
 * A source of at most this many bytes loads on one DuckDB thread. Its validation runs on the other core beside
 * the build, and a second DuckDB thread competed with it: measured 2026-12-03 on the 2-core machine, one thread
 * took 20–30 % less CPU and was no slower from 1.2 MB (150 workspaces) to 24 MB (3,000), and 16–19 CPU-s against
 * 23 for the same time at 158 MB (20,000): docs/performance.md, "The load's threads".
 */
export const ONE_THREAD_SOURCE_BYTES = 64 * 1024 * 1024;
/** A gzip file counts as this many times its size: the sample's files compress about fifteen times. */
const GZIP_EXPANSION = 10;

/** The DuckDB threads a load of these files uses when its caller gives none. */
export async function loadThreads(files: Partial<Record<SourceFile, string>>): Promise<number> {
  let bytes = 0;
  for (const path of Object.values(files)) {
    const size = (await fs.stat(path)).size;
    bytes += path.endsWith('.gz') ? size * GZIP_EXPANSION : size;
  }
  return bytes <= ONE_THREAD_SOURCE_BYTES ? 1 : LOAD_THREADS;
}

/**
 * Workspaces per range of organizations a view is built in. The grouped views' lists of workspace names are
 * aggregate states DuckDB does not spill, and a sort spills all it holds: a range bounds both. At a hundred
 * million resources the resources view sorted whole spilled 40 GB, half this machine's free disk, before
 * it wrote a byte (docs/performance.md, "Building in ranges").
 */
const SLICE_WORKSPACES = 1_000_000;

/** A range of consecutive organizations, inclusive: by name for the view builds, by key for the indexes. */
interface OrganizationRange { names: [string, string]; keys: [number, number] }

/**
 * Consecutive ranges of organizations, in name order (which is key order), each holding at most
 * `workspaces` workspaces unless one organization alone holds more.
 */
async function organizationRanges(db: DuckDBConnection, workspaces: number): Promise<OrganizationRange[]> {
  const counts = (await db.runAndReadAll(
    'SELECT o.name, o.k, count(w.id) FROM org_keys o LEFT JOIN src_workspaces w ON w.organization = o.name GROUP BY o.name, o.k ORDER BY o.k',
  )).getRows().map(([name, k, n]) => [name as string, Number(k), Number(n)] as const);
  const ranges: OrganizationRange[] = [];
  let held = 0;
  for (const [name, k, n] of counts) {
    if (ranges.length === 0 || held + n > workspaces) {
      ranges.push({ names: [name, name], keys: [k, k] });
      held = 0;
    }
    const last = ranges[ranges.length - 1]!;
    last.names[1] = name;
    last.keys[1] = k;
    held += n;
  }
  return ranges;
}

async function buildViewFiles(files: Partial<Record<SourceFile, string>>, views: ReturnType<typeof viewStatements>, dir: string, opts: LoadOptions,
  progress: (m: string) => void, cancelled: AbortSignal) {
  const instance = await openInstance(':memory:', {
    threads: String(opts.threads ?? LOAD_THREADS),
    memory_limit: opts.memoryLimit ?? '3GB',
    temp_directory: join(dir, 'duckdb-tmp'),
    preserve_insertion_order: 'false',
  });
  const db = await instance.connect();
  // Joins run as the view declarations write them, the largest relation first (the probe side). DuckDB
  // guesses a few dozen rows for read_json, so its join order put the resources file, tens of millions of
  // rows, on the build side of every join: each join materialized (and spilled) all of them, and the
  // resources view's sort took 176 s instead of 52 (docs/performance.md, "Joins as written").
  await db.run(`SET disabled_optimizers = 'join_order,build_side_probe_side'`);
  const { run, release } = interruptible(db, cancelled);
  // Tracked, not printed: the loader reports it itself (a big view's sort and write take minutes).
  await db.run('SET enable_progress_bar = true');
  await db.run('SET enable_progress_bar_print = false');
  /** Runs one long statement, reporting DuckDB's own estimate of how far it is, every second. */
  const step = async (label: string, sql: string) => {
    cancelled.throwIfAborted();
    progress(label);
    const started = performance.now();
    const ticker = setInterval(() => {
      const { percentage } = db.progress;
      const seconds = Math.round((performance.now() - started) / 1000);
      progress(`${label}: ${percentage >= 0 ? `${Math.floor(percentage)} %, ` : ''}${seconds} s`);
    }, 1000);
    try {
      await run(sql);
    } finally {
      clearInterval(ticker);
    }
  };
  try {
    progress('reading the source into DuckDB');
    for (const sql of stagingStatements(files)) await run(sql);
    progress('computing version order keys');
    await fillVersionKeys(db);
    // Each view is computed and sorted once, into the read-only DuckDB file the workers query
    // (docs/performance.md: DuckDB's own storage answers pages about four times faster than Parquet); its
    // Parquet file, the snapshot's portable form, is then copied from that table in the same order.
    await db.run(`ATTACH ${sqlLiteral(join(dir, DATABASE_FILE))} AS snapshot_out (STORAGE_VERSION '${STORAGE_VERSION}')`);
    // Rows must land in organization order: that is what lets a query read only its organization's blocks.
    await db.run('SET preserve_insertion_order = true');
    const rows: Record<string, number> = {};
    const organizationRows: Record<string, Record<string, number>> = {};
    const positions: string[] = [];
    const ranges = await organizationRanges(db, opts.sliceWorkspaces ?? SLICE_WORKSPACES);
    for (const { view, file, sorted, derive, indexes } of views) {
      // A range of organizations at a time, in name order: each range is sorted, derived and appended before
      // the next, so the rows land in the view's stored order and a sort spills one range's rows at most.
      let written = 0;
      for (const [i, range] of ranges.entries()) {
        const of = ranges.length > 1 ? ` (organizations ${i + 1} of ${ranges.length})` : '';
        await step(`sorting ${view}${of}`, `CREATE TEMP TABLE sorted_rows AS ${ranges.length > 1 ? sorted(range.names) : sorted()}`);
        if (i === 0) await createViewTable(db, `snapshot_out."${view}"`, derive('sorted_rows', 0));
        await step(`writing ${view}${of}`, `INSERT INTO snapshot_out."${view}" ${derive('sorted_rows', written)}`);
        written += Number((await db.runAndReadAll('SELECT count(*) FROM sorted_rows')).getRows()[0]![0] as bigint);
        await db.run('DROP TABLE sorted_rows');
      }
      // Pages fetch rows by the stored position: it must be each row's rowid, which holds while every append
      // keeps its rows' order (preserve_insertion_order). Checked, because a wrong position is a wrong row.
      const misplaced = await db.runAndReadAll(`SELECT count(*) FROM snapshot_out."${view}" WHERE ${ident(POSITION_COLUMN)} <> rowid`);
      if (misplaced.getRows()[0]![0] !== 0n) throw new Error(`${view}: rows stored out of their positions`);
      const perOrganization = await db.runAndReadAll(`SELECT _org, count(*) FROM snapshot_out."${view}" GROUP BY _org`);
      organizationRows[view] = Object.fromEntries(perOrganization.getRows().map(([org, n]) => [org as string, Number(n)]));
      rows[view] = Object.values(organizationRows[view]!).reduce((a, b) => a + b, 0);
      // Only a large organization's page fetches rows by position (compile.ts); an index costs at least a few
      // hundred KB of blocks however few its rows, so a view whose organizations are all small has none.
      if (Object.values(organizationRows[view]!).some((n) => n > SMALL_ORGANIZATION_ROWS)) {
        await step(`indexing ${view} by position`, `CREATE INDEX ${ident(positionIndex(view))} ON snapshot_out."${view}" (${ident(POSITION_COLUMN)})`);
        positions.push(view);
      }
      for (const index of indexes) {
        // By ranges of organization keys as the view was built (names and keys order alike): each range's
        // sort holds its own rows only.
        for (const [i, range] of ranges.entries()) {
          const of = ranges.length > 1 ? ` (organizations ${i + 1} of ${ranges.length})` : '';
          const select = index.select(`snapshot_out."${view}"`, ranges.length > 1 ? range.keys : undefined);
          await step(`indexing ${view} by ${index.column}${of}`, i === 0 ? `CREATE TABLE snapshot_out."${index.table}" AS ${select}` : `INSERT INTO snapshot_out."${index.table}" ${select}`);
        }
      }
      await step(`writing ${file}`, parquetCopy(`snapshot_out."${view}"`, join(dir, file)));
    }
    for (const sql of sourceStateStatements(files, 'snapshot_out')) await step('storing the source state', sql);
    for (const sql of sourceStateIndexes('snapshot_out')) await step('indexing the source state', sql);
    const keys = await db.runAndReadAll('SELECT name, k FROM org_keys');
    const organizationKeys = Object.fromEntries(keys.getRows().map(([org, k]) => [org as string, Number(k)]));
    await db.run('CHECKPOINT snapshot_out');
    await db.run('DETACH snapshot_out');
    return { rows, organizationRows, organizationKeys, positions };
  } finally {
    release();
    db.closeSync();
    instance.closeSync();
  }
}
