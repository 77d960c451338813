// Organizations written whole into a layer file, as the base stores them: every row of every view in the
// base's order (organization key, then the view's default order), at positions of the layer's own, with the
// base's position index and index tables. What the whole layer (whole-layer.ts) and a batch's overlay
// (delta.ts writeOverlay) hold: an organization read from such a file reads one table with every plan of the base's.
import { POSITION_COLUMN, positionIndex, VIEW_NAMES } from '../../catalog/catalog.js';
import { ident } from '../../duckdb/sql.js';
import type { Manifest } from '../snapshot-dir.js';
import { createViewTable } from './build-steps.js';
import { viewStatements } from './view-files.js';
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';

export interface WholeViewsInput {
  db: DuckDBConnection;
  run: (sql: string) => Promise<unknown>;
  all: (sql: string) => Promise<DuckDBValue[][]>;
  /** The attached file written into. */
  out: string;
  /** The rows of `view` to write (any order). */
  rows: (view: string) => string;
  /** The first position, and how many the layer may number. */
  first: number;
  positions: number;
  /** Which position indexes and index tables the base has. */
  layout: Pick<Manifest, 'positions' | 'indexes'>;
  /**
   * Tests on a row (`t`) that split the rows into parts written one after another, each a range of
   * organization keys, in key order (writeParts): every view's rows are sorted a part at a time. One part
   * when absent.
   */
  parts?: readonly string[];
}

/**
 * The organizations `keys` (name → key) in parts of consecutive keys holding at most `rows` rows of the view with
 * the most (an organization larger than that a part of its own), each as a test on a row's key: what
 * writeWholeViews sorts at once. DuckDB's sort of a whole layer's rows in one statement ran out of memory at the
 * follower's 2 GB once they were about 3.2 million resource rows of 150 organizations (the largest's 2.1 million
 * alone sorted within it): docs/performance.md, "A compaction costs the change since the last one".
 */
export function writeParts(keys: Readonly<Record<string, number>>, rowsOf: (organization: string) => number, rows = PART_ROWS): string[] {
  const ordered = Object.entries(keys).sort((a, b) => a[1] - b[1]);
  const parts: [number, number][] = [];
  let inPart = 0;
  for (const [org, key] of ordered) {
    const n = rowsOf(org);
    const last = parts.at(-1);
    if (last && inPart + n <= rows) {
      last[1] = key;
      inPart += n;
    } else {
      parts.push([key, key]);
      inPart = n;
    }
  }
  return parts.map(([lo, hi]) => `t."_org_key" BETWEEN ${Math.trunc(lo)} AND ${Math.trunc(hi)}`);
}

/** The rows a part of writeWholeViews holds at most, of the view with the most (writeParts). */
export const PART_ROWS = 1_000_000;

/** Writes every view's table of `out`; returns the rows written per view. */
export async function writeWholeViews(w: WholeViewsInput): Promise<Record<string, number>> {
  const statements = new Map(viewStatements().map((v) => [v.view, v]));
  const written: Record<string, number> = {};
  for (const view of VIEW_NAMES) {
    const { order, indexes } = statements.get(view)!;
    // The base's columns, whatever the code builds today: every layer then has the base's columns in its order.
    const columns = (await w.all(`SELECT column_name FROM (DESCRIBE f_base.${ident(view)})`)).map(([c]) => ident(c as string));
    const table = `${w.out}.${ident(view)}`;
    await createViewTable(w.db, table, `SELECT ${columns.join(', ')} FROM f_base.${ident(view)} LIMIT 0`);
    // Part after part in key order (each sorted by the view's order, which begins with the key), numbered on
    // from the rows before: the same rows at the same positions as one statement would write.
    let n = 0;
    for (const part of w.parts ?? ['true']) {
      const position = `(${w.first + n} + row_number() OVER (ORDER BY ${order}) - 1)::BIGINT AS ${ident(POSITION_COLUMN)}`;
      await w.run(`INSERT INTO ${table} SELECT ${columns.map((c) => (c === ident(POSITION_COLUMN) ? position : c)).join(', ')} FROM ${w.rows(view)} t WHERE ${part} ORDER BY ${order}`);
      n = Number((await w.all(`SELECT count(*) FROM ${table}`))[0]![0]);
    }
    if (n >= w.positions) throw new Error(`${view}: ${n} rows, more than a layer numbers (${w.positions})`);
    written[view] = n;
    if (w.layout.positions?.includes(view)) await w.run(`CREATE INDEX ${ident(positionIndex(view))} ON ${table} (${ident(POSITION_COLUMN)})`);
    for (const index of indexes) {
      if (!w.layout.indexes?.[view]?.includes(index.column)) continue;
      await w.run(`CREATE TABLE ${w.out}.${ident(index.table)} AS ${index.select(table, undefined, ident(POSITION_COLUMN))}`);
    }
  }
  return written;
}
