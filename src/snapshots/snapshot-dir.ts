// The contract between what writes snapshots (write/: load, compaction) and what reads them (read/: the
// server's registry): the on-disk layout under DATA_DIR/snapshots, the manifest, CURRENT and retention.
//   <id>/            a snapshot: its manifest.json names its files (Parquet per view, a DuckDB file), access.json
//   .tmp-<id>/       a snapshot being written (never current; removed when stale)
//   .whole-<pid>…    a whole layer being compacted (write/whole-layer.ts), removed by the next compaction
//   CURRENT          the id of the current snapshot, replaced atomically (write, fsync, rename, fsync dir)
// A snapshot's id is stamped with the moment it was loaded, so that id order is load order: the history
// (docs/history.md) keeps the newest SNAPSHOT_KEEP of them.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { HiddenRows } from './delta-layout.js';

/** How many snapshots history keeps when SNAPSHOT_KEEP is not set, and the fewest it may keep. */
export const DEFAULT_SNAPSHOT_KEEP = 30;
export const MIN_SNAPSHOT_KEEP = 2;
/** Of how many recent UTC days the newest snapshot is kept besides those (SNAPSHOT_KEEP_DAYS; 0: none). */
export const DEFAULT_SNAPSHOT_KEEP_DAYS = 30;

/**
 * What history keeps: the newest `keep` snapshots and, besides them, the newest snapshot of each of the
 * last `keepDays` UTC days (today included), so that frequent snapshots keep the last minutes densely and
 * a month of days.
 */
export interface Retention {
  keep: number;
  keepDays: number;
}
/**
 * How many of the newest snapshots keep their serving layout (SNAPSHOT_KEEP_FULL); older ones are compacted
 * (compact.ts). Never fewer than two: the current one and the one a lagging server or a running request
 * may still read as current.
 */
export const DEFAULT_SNAPSHOT_KEEP_FULL = 2;
export const MIN_SNAPSHOT_KEEP_FULL = 2;
const ID = /^\d{8}T\d{6}\d{3}Z-[a-z0-9]{6}$/;

export interface Manifest {
  id: string;
  /** When the load finished and made the snapshot current: ISO 8601 in UTC; the snapshot's `loaded-at`. */
  createdAt: string;
  /** A label given at load (`--label`), 1–255 characters; absent when none was given. */
  label?: string;
  source: string;
  counts: Record<string, number>;
  /** View name → file name inside the snapshot directory. */
  files: Record<string, string>;
  /** The DuckDB file derived from the Parquet files, holding one table per view; absent in older snapshots. */
  database?: string;
  /** Rows per view file, for sanity checks. */
  rows: Record<string, number>;
  /** View → organization → rows: the total of an unfiltered page, so that it needs no count query. */
  organizationRows?: Record<string, Record<string, number>>;
  /** Organization → its `_org_key` in every view table; absent in older snapshots (their pages find `_org`). */
  organizationKeys?: Record<string, number>;
  /** The DuckDB file's view tables hold each row's values as one JSON array (`_json`); absent in older snapshots. */
  rowJson?: boolean;
  /** View → the fields (Field.index, in order) of each row's stored CSV line (`_csv`); absent in older snapshots. */
  csvLines?: Record<string, number[]>;
  /**
   * View → the columns of its indexed fields whose index tables the DuckDB file holds (catalog.ts indexTable);
   * absent in older and compacted snapshots, whose pages read the view's table.
   */
  indexes?: Record<string, string[]>;
  /**
   * The views whose table in the DuckDB file has an index on its rows' positions (catalog.ts
   * POSITION_COLUMN): those with an organization large enough for a page to fetch its rows by position.
   * Absent in older and compacted snapshots, whose pages fetch rows by rowid.
   */
  positions?: string[];
  /**
   * The DuckDB file also holds the source state a change batch is checked against (`source_*` tables,
   * write/staging.ts sourceStateStatements); absent in older and compacted snapshots.
   */
  sourceState?: boolean;
  /**
   * Every view's list fields have their elements stored beside their text (catalog.ts membersColumn), which a
   * summary by a list field reads; absent in snapshots loaded before they were, and in batch snapshots on such a base.
   */
  listMembers?: boolean;
  /** Size in bytes of every data file, so that a truncated or replaced file is noticed before it is used. */
  sizes?: Record<string, number>;
  /**
   * Of each delta file, the bytes its blocks in use hold: its size less the free blocks that the rows it no
   * longer holds left (a delta is changed in place, docs/changes.md §5), which later writes reuse. What the
   * compaction's bound (INGEST_COMPACT_MB) counts. Absent for files written before it was recorded: their size.
   */
  usedBytes?: Record<string, number>;
  /**
   * A snapshot made by change batches (docs/changes.md): `database` is a link to the DuckDB file of `base`,
   * the loaded snapshot the batches since apply to, and `delta` the DuckDB file of what they changed since.
   * Absent in loaded snapshots.
   */
  base?: string;
  /** The newer delta file (delta-layout.ts), and the organizations whose rows it holds. */
  delta?: string;
  deltaOrganizations?: string[];
  /** How many workspaces the newer delta replaces: past apply.ts FOLD_WORKSPACES, the next batch folds it. */
  deltaWorkspaces?: number;
  /**
   * The older delta file, the snapshot that wrote it (its files are links to that one's), and the
   * organizations whose rows it holds. Every organization held by neither delta reads the base as it is.
   */
  major?: string;
  majorId?: string;
  majorOrganizations?: string[];
  /**
   * The whole layer (write/whole-layer.ts), between the base and the deltas: the file, the snapshot it was
   * first placed in (later snapshots' files are links to that one's), and the organizations it holds whole,
   * in the base's layout. An organization it holds reads it instead of the base; one no delta holds reads it alone.
   */
  whole?: string;
  wholeId?: string;
  wholeOrganizations?: string[];
  /**
   * The organizations the whole layer holds as runs (delta-layout.ts RUN_ROWS), each with the file the run lies
   * over, its lowest layer then (the base's, or a file a compaction wrote, kept among the overlays): they read
   * that layer's rows less those of the workspaces the run replaces, then the run's. A run stands while that
   * file is still the organization's lowest layer (delta-layout.ts standingRuns).
   */
  wholeRuns?: Record<string, string>;
  /**
   * Files that hold organizations whole under the deltas other than the whole layer: written by batches and by
   * tidying (delta-layout.ts), or an earlier compaction's whole layer that a later one left in place
   * (write/whole-layer.ts planCompaction). Each with the snapshot that wrote it (later snapshots' files are
   * links to that one's) and the organizations it is the current copy of, by name with the key their rows
   * carry. No organization is in two. Oldest first.
   */
  overlays?: OverlayEntry[];
  /**
   * For the organizations the deltas hold: the rows of each one's lowest layer that the deltas replace, by
   * position (delta-layout.ts HiddenRows). Read only where the lowest layer is still the one named.
   */
  hidden?: Record<string, HiddenRows>;
  /** Batches applied since the base was loaded: the next one numbers its rows' positions after theirs. */
  sequence?: number;
  /** The change batches applied since the base, oldest first, the newest BATCHES_RECORDED of them. */
  batches?: AppliedBatch[];
  /**
   * The organizations this snapshot's own batches touched, against the snapshot before it: those a notifier
   * checks. Absent for a load, which may change any organization.
   */
  changedOrganizations?: string[];
  /** The snapshot was compacted (compact.ts): one DuckDB file without row JSON, CSV lines or Parquet files, folded copies only where they differ. */
  compacted?: boolean;
}

/** One of a snapshot's overlays (Manifest.overlays). */
export interface OverlayEntry {
  file: string;
  id: string;
  organizations: Record<string, number>;
  /**
   * A tidying unit's overlay (write/tidy.ts): the sequence of the snapshot whose layers it read, so that each of
   * its organizations holds every row the batches up to that one wrote. A fold leaves those rows out of the
   * older delta it writes (write/delta.ts). Absent for a batch's overlay, which may carry organizations read
   * from the layers under the deltas alone.
   */
  sequence?: number;
}

/** A change batch a snapshot includes: what makes applying it exactly once checkable after a crash. */
export interface AppliedBatch {
  /** The batch directory's name. */
  name: string;
  /** sha256 of the batch's files (names and contents). */
  digest: string;
  /** When it arrived (its directory's change time when it was applied from a spool), ISO 8601. */
  arrivedAt: string;
}
/** How many applied batches a manifest records: a batch older than these is not recognised if sent again. */
export const BATCHES_RECORDED = 10_000;

/** Who may read what in a snapshot (access.json), from the source's organizations and teams. */
export interface AccessData {
  organizations: string[];
  /** Teams that grant explorer access (owners, read_workspaces or read_projects), per organization. */
  qualifyingTeams: Record<string, string[]>;
  /** Every team, per organization (to check a team token's target at creation). */
  teams: Record<string, string[]>;
  /** Organizations where the user belongs to a qualifying team. */
  userOrganizations: Record<string, string[]>;
}

export const snapshotsDir = (dataDir: string) => join(dataDir, 'snapshots');
export const snapshotPath = (dataDir: string, id: string) => join(snapshotsDir(dataDir), id);

/** Six random lower-case letters and digits: what makes a snapshot id, or a server's links directory, unique. */
export const randomSuffix = () => [...randomBytes(6)].map((b) => 'abcdefghijklmnopqrstuvwxyz0123456789'[b % 36]).join('');

/** Sortable by creation time, unique across processes. */
export function newSnapshotId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:.]/g, '').replace(/^(\d{8}T\d{6})(\d{3})Z$/, '$1$2Z');
  const suffix = randomSuffix();
  return `${stamp}-${suffix}`;
}

export async function readCurrentId(dataDir: string): Promise<string | null> {
  try {
    const id = (await fs.readFile(join(snapshotsDir(dataDir), 'CURRENT'), 'utf8')).trim();
    return ID.test(id) ? id : null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

export async function fsyncPath(path: string): Promise<void> {
  const handle = await fs.open(path, 'r');
  try { await handle.sync(); } finally { await handle.close(); }
}

export async function writeCurrentId(dataDir: string, id: string): Promise<void> {
  const dir = snapshotsDir(dataDir);
  const tmp = join(dir, `.CURRENT.${process.pid}.${Date.now()}`);
  const handle = await fs.open(tmp, 'w');
  try {
    await handle.writeFile(`${id}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(tmp, join(dir, 'CURRENT'));
  await fsyncPath(dir);
}

export async function listSnapshotIds(dataDir: string): Promise<string[]> {
  try {
    return (await fs.readdir(snapshotsDir(dataDir))).filter((n) => ID.test(n)).sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}

/** Replaces a snapshot's manifest atomically (write, fsync, rename, fsync dir): readers see the old one or the new one. */
export async function writeManifest(dataDir: string, manifest: Manifest): Promise<void> {
  const dir = snapshotPath(dataDir, manifest.id);
  const tmp = join(dir, `.manifest.${process.pid}.${Date.now()}.json`);
  const handle = await fs.open(tmp, 'w');
  try {
    await handle.writeFile(JSON.stringify(manifest, null, 2));
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(tmp, join(dir, 'manifest.json'));
  await fsyncPath(dir);
}

/**
 * Removes what a snapshot's directory holds that its manifest does not name: the files a compaction replaced
 * when it was stopped between the switch and their removal. Returns the names removed. Only for a snapshot
 * no writer is adding files to (an older one, or the current one under the writer lock).
 */
export async function removeUnnamed(dataDir: string, manifest: Manifest): Promise<string[]> {
  const dir = snapshotPath(dataDir, manifest.id);
  const named = new Set(['manifest.json', 'access.json', ...Object.values(manifest.files)]);
  for (const name of [manifest.database, manifest.major, manifest.delta, manifest.whole, ...(manifest.overlays ?? []).map((o) => o.file)]) if (name) named.add(name);
  const removed: string[] = [];
  for (const name of await fs.readdir(dir)) {
    if (named.has(name)) continue;
    await fs.rm(join(dir, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

export async function readManifest(dataDir: string, id: string): Promise<Manifest> {
  return JSON.parse(await fs.readFile(join(snapshotPath(dataDir, id), 'manifest.json'), 'utf8')) as Manifest;
}

export async function readAccess(dataDir: string, id: string): Promise<AccessData> {
  return JSON.parse(await fs.readFile(join(snapshotPath(dataDir, id), 'access.json'), 'utf8')) as AccessData;
}

/** The UTC day (YYYYMMDD) a snapshot was made on: its id starts with it. */
const dayOf = (id: string) => id.slice(0, 8);

/** The retained snapshots among `ids` (sorted, oldest first) by `retention`, on the UTC day of `now`. */
export function retainedIds(ids: readonly string[], retention: Retention, now = new Date()): string[] {
  const kept = new Set(ids.slice(Math.max(0, ids.length - retention.keep)));
  if (retention.keepDays > 0) {
    const days = new Set<string>();
    for (let d = 0; d < retention.keepDays; d++) {
      days.add(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - d)).toISOString().slice(0, 10).replace(/-/g, ''));
    }
    const newest = new Map<string, string>();
    for (const id of ids) if (days.has(dayOf(id))) newest.set(dayOf(id), id); // ids ascend: the last one wins
    for (const id of newest.values()) kept.add(id);
  }
  return ids.filter((id) => kept.has(id));
}

/**
 * Removes the snapshots `retention` does not keep, never the current one nor any in `inUse`, and abandoned
 * temporary directories older than an hour (a load killed midway).
 */
export async function pruneSnapshots(dataDir: string, retention: Retention, inUse: ReadonlySet<string> = new Set()): Promise<string[]> {
  const current = await readCurrentId(dataDir);
  const ids = await listSnapshotIds(dataDir);
  const kept = new Set(retainedIds(current === null ? ids : ids.filter((id) => id <= current), retention));
  const removed: string[] = [];
  for (const id of ids) {
    if (kept.has(id) || id === current || inUse.has(id) || (current !== null && id > current)) continue;
    await fs.rm(snapshotPath(dataDir, id), { recursive: true, force: true });
    removed.push(id);
  }
  const dir = snapshotsDir(dataDir);
  for (const name of await fs.readdir(dir).catch(() => [] as string[])) {
    if (!name.startsWith('.tmp-')) continue;
    const stat = await fs.stat(join(dir, name)).catch(() => null);
    if (stat && Date.now() - stat.mtimeMs > 3600_000) await fs.rm(join(dir, name), { recursive: true, force: true });
  }
  return removed;
}

/**
 * Rejected change batches, one JSON line each (name, digest, when, how many problems), appended by `apply`
 * and `ingest`: what /metrics counts as rejected, since a rejected batch makes no snapshot that could say so.
 */
export const rejectedBatchesPath = (dataDir: string) => join(snapshotsDir(dataDir), 'rejected-batches.ndjson');

export async function recordRejectedBatch(dataDir: string, entry: { name: string; digest: string; problems: number }): Promise<void> {
  await fs.mkdir(snapshotsDir(dataDir), { recursive: true });
  await fs.appendFile(rejectedBatchesPath(dataDir), `${JSON.stringify({ ...entry, at: new Date().toISOString() })}\n`);
}

/** How many batches were rejected in this DATA_DIR. */
export async function rejectedBatchCount(dataDir: string): Promise<number> {
  const text = await fs.readFile(rejectedBatchesPath(dataDir), 'utf8').catch(() => '');
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}
