// Each view's table in the snapshot's DuckDB file, and its Parquet file: one row per view row, every field
// precomputed, hidden `_org`, `_org_key` and `_id` columns, a `<column>__f` ASCII-folded copy beside each
// string field (null where folding changes nothing), a `<column>__vk` order key beside each version field and
// a `<column>__m` list of elements beside each list field;
// the DuckDB table also holds each row's JSON, CSV line and position (`_pos`). Sorted by organization (its
// key orders as its name does), then the view's default order, so that a query reads only its organization's
// row groups and a default-ordered page or export needs no sort of strings.
import { VIEW_DECLS } from '../../catalog/views.js';
import {
  catalogFor, CSV_LINE_COLUMN, declaredColumn, membersColumn, INDEX_ROW_COLUMN, indexFields, indexTable, ORGANIZATION_KEY_COLUMN, foldedColumn, POSITION_COLUMN, ROW_JSON_COLUMN, SERVING_COLUMNS, versionKeyColumn,
} from '../../catalog/catalog.js';
import { csvLineSql, defaultOrder, rowJsonSql, storedFoldSql, testedColumns } from '../../query/compile.js';
import { sortKeys } from '../../query/query.js';
import type { Field } from '../../catalog/types.js';

import { listTextSql } from '../../catalog/list-text.js';
import { ident, sqlLiteral } from '../../duckdb/sql.js';

export const ROW_GROUP_SIZE = 16384;

/**
 * Per view: its Parquet file name and the two statements that build its rows. `sorted` computes the fields
 * (with `_org`, `_id`, the version order keys and the folded copies the default order needs) and sorts
 * them; `derive(table, offset)` then adds the wide serving columns — the other folded copies, the row JSON
 * and the CSV line — and each row's position, reading `table` in its stored order: appended to a view table
 * that holds `offset` rows, its rows land at positions offset + their rowid in `table`. Sorting the narrow rows, not the wide ones, keeps what
 * a hundred million rows spill to disk during the sort about three times smaller.
 */
export interface ViewStatements {
  view: string;
  file: string;
  /** The view's rows sorted; given a range of organization names (inclusive), only theirs. */
  sorted: (organizations?: readonly [string, string]) => string;
  derive: (table: string, offset: number) => string;
  /** The columns `derive` adds: a stored row without them is a row as `sorted` gives it. */
  derived: string[];
  /** The stored order (organization key, then the view's default order), as ORDER BY terms. */
  order: string;
  csvLines: number[];
  indexes: IndexStatement[];
}

/**
 * An index of a view by one field (FieldDecl.indexed): `select(table)` reads the view's built table and
 * orders its rows by organization key, the field's value, then their position, so that each organization's
 * rows of one value lie together and stay in the view's stored order; given a range of organization keys
 * (inclusive), only theirs.
 */
export interface IndexStatement {
  column: string;
  table: string;
  /** `row` names each row's position: its rowid where that is the position (a loaded snapshot), else its column. */
  select: (table: string, keys?: readonly [number, number], row?: string) => string;
}

export function viewStatements(): ViewStatements[] {
  const catalog = catalogFor('terraform');
  return VIEW_DECLS.map((decl) => {
    const view = catalog.view(decl.name)!;
    // A list field's elements are computed once (an aggregate over thousands of names in the grouped views);
    // its text is derived from them a level up, by the catalog's own expression.
    const columns = decl.fields.map((f) => (f.members === undefined ? `${f.build} AS ${ident(declaredColumn(f))}`
      : `${f.members} AS ${ident(membersColumn(declaredColumn(f)))}`));
    const texts = decl.fields.filter((f) => f.members !== undefined)
      .map((f) => `${listTextSql(`t.${ident(membersColumn(declaredColumn(f)))}`)} AS ${ident(declaredColumn(f))}`);
    const versionFields = view.fields.filter((f) => f.version);
    const joins = versionFields.map((f, i) => `LEFT JOIN version_keys vk${i} ON vk${i}.v = t."${f.column}"`);
    const keys = versionFields.map((f, i) => `vk${i}.k AS "${versionKeyColumn(f.column)}"`);
    // Null where folding leaves the value as it is: most values are lower case already, and a column of
    // nulls costs almost nothing to write.
    const fold = (f: Field) => `${storedFoldSql(`t."${f.column}"`)} AS "${foldedColumn(f.column)}"`;
    const sortFields = new Set(sortKeys(view, view.defaultSort).map((k) => k.field));
    const strings = view.fields.filter((f) => f.type === 'string');
    // Values in declaration order (Field.index), each in its JSON form: the same SQL a column page uses.
    const json = `${rowJsonSql(view, (f) => `t."${f.column}"`)} AS "${ROW_JSON_COLUMN}"`;
    // Every field in default order (alphabetical for the default engine); the manifest records which.
    const csv = `${csvLineSql(view.fields, (f) => `t."${f.column}"`)} AS "${CSV_LINE_COLUMN}"`;
    // Within an organization, rows are stored in the view's default order, which a default export reads.
    // A range of organization names is a filter on a grouping column, which DuckDB pushes below the
    // aggregate into the source scans: each range aggregates only its own rows.
    // The order is applied to a subquery: its terms (coalesce of a folded copy and its value) then name
    // the rows' columns, not the joined tables'.
    const sorted = (organizations?: readonly [string, string]) => `
      SELECT * FROM (
        SELECT t.*, ok.k AS "${ORGANIZATION_KEY_COLUMN}"${[...texts, ...keys, ...strings.filter((f) => sortFields.has(f)).map(fold)].map((k) => `, ${k}`).join('')}
        FROM (SELECT ${decl.organization} AS _org, ${decl.id} AS _id, ${columns.join(', ')} FROM ${decl.from}) t
        JOIN org_keys ok ON ok.name = t._org
        ${joins.join('\n        ')}
        ${organizations ? `WHERE t._org BETWEEN ${sqlLiteral(organizations[0])} AND ${sqlLiteral(organizations[1])}` : ''})
      ORDER BY "${ORGANIZATION_KEY_COLUMN}", ${defaultOrder(view).join(', ')}`;
    const derive = (table: string, offset: number) => `
      SELECT t.*${[...strings.filter((f) => !sortFields.has(f)).map(fold), json, csv].map((k) => `, ${k}`).join('')},
        t.rowid + ${Math.trunc(offset)} AS ${ident(POSITION_COLUMN)}
      FROM ${table} t`;
    const indexes = view.fields.filter((f) => f.indexed).map((field): IndexStatement => {
      const columns = [ident(ORGANIZATION_KEY_COLUMN), '"_id"', ...testedColumns(indexFields(view, field))];
      return {
        column: field.column,
        table: indexTable(decl.name, field.column),
        select: (table, keys, row = 'rowid') => `
          SELECT ${row} AS ${ident(INDEX_ROW_COLUMN)}, ${columns.join(', ')} FROM ${table}
          ${keys ? `WHERE ${ident(ORGANIZATION_KEY_COLUMN)} BETWEEN ${keys[0]} AND ${keys[1]}` : ''}
          ORDER BY ${ident(ORGANIZATION_KEY_COLUMN)}, ${ident(field.column)}, ${row}`,
      };
    });
    const derived = [...strings.filter((f) => !sortFields.has(f)).map((f) => foldedColumn(f.column)), ...SERVING_COLUMNS];
    const order = [ident(ORGANIZATION_KEY_COLUMN), ...defaultOrder(view)].join(', ');
    return { view: decl.name, file: view.file, sorted, derive, derived, order, csvLines: view.fields.map((f) => f.index), indexes };
  });
}

/** Writes `table` (already in organization order) to `path` as the view's Parquet file. */
export function parquetCopy(table: string, path: string): string {
  // The row JSON, CSV lines and positions are the DuckDB file's serving layout, not data: the portable Parquet form leaves them out.
  return `COPY (SELECT * EXCLUDE (${SERVING_COLUMNS.map(ident).join(', ')}) FROM ${table}) TO ${sqlLiteral(path)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${ROW_GROUP_SIZE})`;
}
