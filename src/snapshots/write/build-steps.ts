// Steps that a load and a change batch take alike when they write a view's rows into a snapshot's DuckDB
// file: the version order keys the views join, and a view table's column definitions; and how the writers
// that read a batch snapshot's layers (a batch's delta, the layers' compaction) attach them.
import type { DuckDBConnection } from '@duckdb/node-api';
import { versionKey } from '../../catalog/version-order.js';
import { CSV_LINE_COLUMN, ROW_JSON_COLUMN } from '../../catalog/catalog.js';
import { join } from 'node:path';
import type { Manifest } from '../snapshot-dir.js';
import { sqlLiteral } from '../../duckdb/sql.js';


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

/** A batch snapshot's layer files (delta-layout.ts): the base's, and the whole layer's and each delta's where it has one. */
export interface LayerPaths {
  base: string;
  whole: string | null;
  major: string | null;
  minor: string | null;
}

/** The layer files of the snapshot in `dir` that `manifest` describes. */
export const layerPaths = (dir: string, manifest: Manifest): LayerPaths => {
  const inDir = (name: string | undefined) => (name ? join(dir, name) : null);
  return { base: join(dir, manifest.database!), whole: inDir(manifest.whole), major: inDir(manifest.major), minor: inDir(manifest.delta) };
};

/**
 * Attaches `paths` read-only as `f_base`, `f_whole`, `f_major` and `f_minor`, the names the writers' SQL reads
 * them by; returns the aliases attached, the base first.
 */
export async function attachLayers(run: (sql: string) => Promise<unknown>, paths: LayerPaths): Promise<string[]> {
  const aliases: string[] = [];
  for (const [alias, path] of [['f_base', paths.base], ['f_whole', paths.whole], ['f_major', paths.major], ['f_minor', paths.minor]] as const) {
    if (path === null) continue;
    await run(`ATTACH ${sqlLiteral(path)} AS ${alias} (READ_ONLY)`);
    aliases.push(alias);
  }
  return aliases;
}
