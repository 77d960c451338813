// Steps that a load and a change batch take alike when they write a view's rows into a snapshot's DuckDB
// file: the version order keys the views join, and a view table's column definitions; and how the writers
// that read a batch snapshot's layers (a batch's delta, the layers' compaction) attach them.
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { promises as fs } from 'node:fs';
import { interruptible } from '../../duckdb/interruptible.js';
import { openInstance } from '../../duckdb/open-instance.js';
import { versionKey } from '../../catalog/version-order.js';
import { CSV_LINE_COLUMN, ROW_JSON_COLUMN } from '../../catalog/catalog.js';
import { join } from 'node:path';
import { fsyncPath, type Manifest } from '../snapshot-dir.js';
import { sqlLiteral } from '../../duckdb/sql.js';
import { organizationLayers, overlayHolding, standingRuns, underStatements, type OverlayPart } from '../delta-layout.js';


/**
 * How the serving columns are stored. The row JSON is uncompressed: a page reads a few rows of it, and DuckDB
 * decodes a compressed string column a whole vector at a time, so each row a page fetched cost as much as a
 * vector. The CSV lines are only ever read in runs, by exports, so zstd costs little (a stored-lines export
 * of 2M resource rows: 323 ms instead of 262) and stores them in a tenth of the bytes, 38 % of the bench
 * snapshot (docs/performance.md, "Serving-column compression"). The data columns keep DuckDB's own choice.
 */
const SERVING_COMPRESSION: Record<string, string> = { [ROW_JSON_COLUMN]: 'uncompressed', [CSV_LINE_COLUMN]: 'zstd' };
/** zstd for strings needs this storage version or later; DuckDB 1.2 and later read the file. */
export const STORAGE_VERSION = 'v1.2.0';

/** Adds to `version_keys` (v, k) the order key (interface §5) of every version in `seen` (one column v) it lacks. */
export async function fillVersionKeys(db: DuckDBConnection, seen = 'versions_seen'): Promise<void> {
  const missing = await db.runAndReadAll(`SELECT v FROM ${seen} WHERE v NOT IN (SELECT v FROM version_keys)`);
  const appender = await db.createAppender('version_keys');
  for (const [v] of missing.getRows() as [string][]) {
    appender.appendVarchar(v);
    const key = versionKey(v);
    if (key === null) appender.appendNull(); else appender.appendVarchar(key);
    appender.endRow();
  }
  appender.closeSync();
}

/** Creates `table` with the columns `select` gives, the serving columns stored as SERVING_COMPRESSION says. */
export async function createViewTable(db: DuckDBConnection, table: string, select: string): Promise<void> {
  const columns = (await db.runAndReadAll(`DESCRIBE ${select}`)).getRows().map(([name, type]) =>
    `"${name as string}" ${type as string}${name as string in SERVING_COMPRESSION ? ` USING COMPRESSION ${SERVING_COMPRESSION[name as string]}` : ''}`);
  await db.run(`CREATE TABLE ${table} (${columns.join(', ')})`);
}

/** A batch snapshot's layer files (delta-layout.ts): the base's, and the whole layer's, each overlay's and each delta's where it has them. */
export interface LayerPaths {
  base: string;
  whole: string | null;
  /** Each overlay, the organizations it is the current copy of, and those of them the whole layer holds a run over. */
  overlays: { path: string; organizations: Readonly<Record<string, number>>; runs?: Readonly<Record<string, number>> }[];
  major: string | null;
  minor: string | null;
}

/** The layer files of the snapshot in `dir` that `manifest` describes. */
export const layerPaths = (dir: string, manifest: Manifest): LayerPaths => {
  const inDir = (name: string | undefined) => (name ? join(dir, name) : null);
  const standing = standingRuns(manifest);
  return {
    base: join(dir, manifest.database!), whole: inDir(manifest.whole), major: inDir(manifest.major), minor: inDir(manifest.delta),
    overlays: (manifest.overlays ?? []).map((o) => {
      const runs = Object.fromEntries(Object.entries(o.organizations).filter(([org]) => standing.has(org)));
      return { path: join(dir, o.file), organizations: o.organizations, ...(Object.keys(runs).length > 0 ? { runs } : {}) };
    }),
  };
};

/** A snapshot's layers as attached: what the writers' SQL reads them by. */
export interface AttachedLayers {
  /**
   * The layers under the deltas read as one: `f_base` when there is nothing else under them, else the schema
   * `f_under` (delta-layout.ts underStatements) over `f_base`, `f_whole` and the overlays `f_overlay<i>`.
   */
  under: string;
  major: string | null;
  minor: string | null;
  /** Every layer read, `under` first. */
  stack: string[];
  /** The layers above the base whose replaced workspaces hide base rows: the whole layer and the deltas. */
  replacing: string[];
  /** The overlays, as attached. */
  overlays: OverlayPart[];
  /** The whole layer, as attached, if any. */
  whole: string | null;
  /** Detaches them all. */
  detach(): Promise<void>;
}

/** The layers `organization` of `manifest` reads, lowest first (delta-layout.ts organizationLayers), as `attached` names them. */
export const attachedStack = (attached: AttachedLayers, manifest: Manifest, organization: string): string[] => organizationLayers(organization, {
  base: 'f_base', whole: attached.whole, major: attached.major, minor: attached.minor, overlayOf: (o) => overlayHolding(attached.overlays, o),
  wholeHolds: new Set(manifest.wholeOrganizations ?? []), runHolds: standingRuns(manifest),
  majorHolds: new Set(manifest.majorOrganizations ?? []), minorHolds: new Set(manifest.deltaOrganizations ?? []),
}).stack;

/**
 * The layer files an instance kept from one batch to the next has attached (writer-instance.ts): alias → the
 * file's identity (device and inode: each snapshot's directory links the same file under its own path).
 */
export type KeptLayers = Map<string, string>;

const fileIdentity = async (path: string) => {
  const s = await fs.stat(path);
  return `${s.dev}:${s.ino}`;
};

/**
 * Attaches `paths` read-only (aliases above). With `kept`, the layers that outlive a batch (the base, the whole
 * layer, the overlays and the older delta) stay attached after it, and a later call attaches only those that
 * are not attached already: what DuckDB has read of them stays in its buffer pool. The newer delta, new at
 * every batch, is attached each time.
 */
export async function attachLayers(run: (sql: string) => Promise<unknown>, paths: LayerPaths, kept?: KeptLayers): Promise<AttachedLayers> {
  const attached: string[] = [];
  const wanted = new Set<string>();
  const attach = async (alias: string, path: string | null, keep = true) => {
    if (path === null) return null;
    if (kept && keep) {
      wanted.add(alias);
      const identity = await fileIdentity(path);
      if (kept.get(alias) === identity) return alias;
      if (kept.has(alias)) await run(`DETACH ${alias}`);
      kept.delete(alias);
      await run(`ATTACH ${sqlLiteral(path)} AS ${alias} (READ_ONLY)`);
      kept.set(alias, identity);
      return alias;
    }
    await run(`ATTACH ${sqlLiteral(path)} AS ${alias} (READ_ONLY)`);
    attached.push(alias);
    return alias;
  };
  await attach('f_base', paths.base);
  const whole = await attach('f_whole', paths.whole);
  const overlays: OverlayPart[] = [];
  for (const [i, o] of paths.overlays.entries()) overlays.push({ alias: (await attach(`f_overlay${i}`, o.path))!, organizations: o.organizations, ...(o.runs ? { runs: o.runs } : {}) });
  const major = await attach('f_major', paths.major);
  const minor = await attach('f_minor', paths.minor, false);
  // What an earlier batch kept that this snapshot no longer has (a whole layer compacted away, fewer overlays).
  for (const alias of kept?.keys() ?? []) {
    if (wanted.has(alias)) continue;
    await run(`DETACH ${alias}`);
    kept!.delete(alias);
  }
  const under = whole === null && overlays.length === 0 ? 'f_base' : 'f_under';
  // One call: the statements run in turn, without a round trip each.
  if (under === 'f_under') await run(underStatements(under, ['f_base', ...(whole ? [whole] : [])], overlays).join(';\n'));
  return {
    under, major, minor, overlays, whole,
    stack: [under, ...(major ? [major] : []), ...(minor ? [minor] : [])],
    replacing: [...(whole ? [whole] : []), ...(major ? [major] : []), ...(minor ? [minor] : [])],
    async detach() {
      if (under === 'f_under') await run('DROP SCHEMA f_under CASCADE');
      for (const alias of attached.reverse()) await run(`DETACH ${alias}`);
    },
  };
}

/** What writes one layer file beside the snapshots: its connection, interruptible statements and reads. */
export interface LayerWriter {
  db: DuckDBConnection;
  run: (sql: string) => Promise<unknown>;
  all: (sql: string) => Promise<DuckDBValue[][]>;
}

/**
 * Runs `work` on an in-memory DuckDB instance of its own that writes the layer file `tmp`, its temporary files
 * in `scratch` (a compaction's whole layer, a tidying unit's overlay). On failure the half-written file goes;
 * either way the instance and the scratch directory do; on success the file is synced, ready to be renamed
 * into a snapshot.
 */
export async function writeLayerFile(tmp: string, scratch: string, settings: { threads: number; memoryLimit: string; signal?: AbortSignal },
  work: (w: LayerWriter) => Promise<void>): Promise<void> {
  await fs.mkdir(scratch, { recursive: true });
  const instance = await openInstance(':memory:', {
    threads: String(settings.threads), memory_limit: settings.memoryLimit, temp_directory: scratch, preserve_insertion_order: 'true',
  });
  const db = await instance.connect();
  const { run, rows: all, release } = interruptible(db, settings.signal);
  try {
    await work({ db, run, all });
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw e;
  } finally {
    release();
    db.closeSync();
    instance.closeSync();
    await fs.rm(scratch, { recursive: true, force: true });
  }
  await fsyncPath(tmp);
}
