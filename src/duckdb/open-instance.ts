// Every DuckDB instance of the project is opened here, so that none depends on the host. DuckDB takes its
// TimeZone from the host (TZ) and applies it to every TIMESTAMPTZ ↔ TIMESTAMP cast: under a zone other than
// UTC the loader shifted every stored time by the host's offset. The setting belongs to the ICU extension,
// which is not loaded while the instance is being created, so it is set right after, for the whole instance.
import { DuckDBInstance } from '@duckdb/node-api';
import { MAX_PAGE_SIZE } from '../query/validate.js';

/** Opens an instance with the host-independent settings, then `settings` (statements run once, instance-wide). */
export async function openInstance(path: string, options: Record<string, string> = {}, settings: readonly string[] = []): Promise<DuckDBInstance> {
  const instance = await DuckDBInstance.create(path, options);
  const setup = await instance.connect();
  try {
    for (const sql of [`SET GLOBAL TimeZone = 'UTC'`, ...settings]) await setup.run(sql);
  } catch (e) {
    instance.closeSync();
    throw e;
  } finally {
    setup.closeSync();
  }
  return instance;
}

/**
 * The settings of an instance that answers queries (the workers, and the bench's in-process figures, which
 * must plan as the workers do).
 */
export const SERVING_SETTINGS = [
  // Snapshots are immutable, so caching Parquet footers across queries is always right.
  'SET GLOBAL parquet_metadata_cache = true',
  // DuckDB's default, stated because pages and exports in stored order rely on it: a plain scan returns
  // rows in stored order (compile.ts).
  'SET GLOBAL preserve_insertion_order = true',
  // Late materialization rewrites a LIMIT of up to 50 rows into a second scan of the whole table joined on
  // rowid: on the 22M-row resources table that scan cost 20 ms where the plain scan in stored order stops
  // after 1 ms. The compiler writes the row-id fetch itself where it pays, with the organization's key on
  // both scans (compile.ts, docs/performance.md).
  "SET GLOBAL disabled_optimizers = 'late_materialization'",
  // A join passes the scan on its other side an `IN` filter of its build side's values only up to this many
  // (DuckDB's default: 50), and a min-max range beyond. A page's fetch of its rows by position is such a join:
  // with a page of 51 to 100 rows the range covered most of a large organization, and the page took 250 ms
  // instead of 10 (docs/performance.md, "Stored positions"). Every page fits: the largest is MAX_PAGE_SIZE rows.
  `SET GLOBAL dynamic_or_filter_threshold = ${MAX_PAGE_SIZE}`,
];

export const openServingInstance = (options: Record<string, string>) => openInstance(':memory:', options, SERVING_SETTINGS);
