// Steps that a load and a change batch take alike when they write a view's rows into a snapshot's DuckDB
// file: the version order keys the views join, and a view table's column definitions.
import type { DuckDBConnection } from '@duckdb/node-api';
import { versionKey } from '../../catalog/version-order.js';
import { CSV_LINE_COLUMN, ROW_JSON_COLUMN } from '../../catalog/catalog.js';

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
