// Query → SQL and bound parameters. Pure: no I/O, no database. Identifiers come only from the catalog
// (Field.column, quoted); every client value is a `?` parameter, never spliced into the text.
import { CSV_LINE_COLUMN, foldedColumn, ROW_JSON_COLUMN, versionKeyColumn } from '../catalog/catalog.js';
import { isNegative } from '../catalog/operators.js';
import type { Field, View } from '../catalog/types.js';
import { sortKeys, type BoundValue, type Condition, type Query, type SortKey } from './query.js';

export type SqlValue = BoundValue | bigint;

export interface CompiledQuery {
  /** SELECT count(*) of the matching rows. */
  count: { sql: string; params: SqlValue[] };
  /**
   * The requested page: row id first, then the selected fields as JSON-ready values, then — when
   * `pageCountsTotal` — the count of every matching row in each row, so that a page with rows needs no
   * count statement of its own.
   */
  page: { sql: string; params: SqlValue[] };
  pageCountsTotal: boolean;
  /**
   * Set when the page reads the row JSON: the page's second column is each row's JSON array of values,
   * and these are the positions in it of the selected fields, in order. Unset: one column per field.
   */
  valueIndexes?: number[];
  /** The total, when it is known without counting: an unfiltered query of an organization whose rows the snapshot records. */
  knownTotal?: number;
  /** Every matching row, every value as a non-null VARCHAR ready for CSV (interface §6). */
  export: { sql: string; params: SqlValue[] };
  /** The export reads stored lines (one VARCHAR column, already quoted), in stored order: write them as they are. */
  exportLines: boolean;
}

/** Where the view's rows are: a relation expression chosen by the snapshot registry, never by a client. */
export interface CompileTarget {
  relation: string;
  organization: string;
  /** The organization's rows in this view, when the snapshot knows them: chooses the page's plan. */
  organizationRows?: number;
  /** The relation has each row's values as one JSON array (`_json`): pages read it instead of every column. */
  rowJson?: boolean;
  /**
   * The relation stores each row's CSV line (`_csv`) of these fields (Field.index, in line order), with
   * the rows in the view's default order: an export of exactly those fields in that order reads the lines.
   */
  csvLines?: readonly number[];
  /** Rows of the whole view table: the row-id fetch plan's fixed cost grows with it (wholeOrganizationLimit). */
  tableRows?: number;
  /** Each organization's rows are stored in the view's default order: a page in that order sorts by rowid. */
  defaultOrderStored?: boolean;
}

/**
 * Up to this many rows, a page always reads the organization's rows whole, then sorts them; in a large table
 * the line is higher (wholeOrganizationLimit). Above it, DuckDB's own plan (top-N over the sort columns,
 * then fetching the page's rows by row id) is faster; below it, that fetch costs more than reading the rows
 * outright (docs/performance.md).
 */
export const SMALL_ORGANIZATION_ROWS = 1000;

/**
 * The largest organization whose page reads its rows whole. The fetch plan scans the table for the page's
 * row ids, which costs more the larger the table: measured on the bench snapshot, the two plans cost the
 * same near 3,000 rows of a 1M-row table (workspaces) and near 60,000 of a 21M-row one (resources), about
 * a four-hundredth of the table either way (docs/performance.md).
 */
export const wholeOrganizationLimit = (tableRows = 0) => Math.max(SMALL_ORGANIZATION_ROWS, Math.round(tableRows / 400));

export const ident = (name: string) => {
  // Catalog names are snake_case; refusing anything else keeps a catalog typo from becoming SQL.
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a catalog identifier: ${name}`);
  return `"${name}"`;
};
const col = (f: Field) => ident(f.column);
/** interface §4: case-insensitive means ASCII A–Z fold to a–z only; the loader stores that form beside each string. */
const folded = (f: Field) => ident(foldedColumn(f.column));

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
/**
 * The folded form of a string column (interface §4: ASCII A–Z to a–z only), as the loader stores it and as a
 * compacted snapshot computes it. translate() costs about a microsecond a value; on ASCII text (as many
 * bytes as characters) lower() folds exactly A–Z and is twenty times faster, so only other text needs it.
 */
export const foldSql = (column: string) =>
  `CASE WHEN strlen(${column}) = length(${column}) THEN lower(${column}) ELSE translate(${column}, '${UPPER}', '${UPPER.toLowerCase()}') END`;

/** One condition's SQL over the view's columns; its values are appended to `params` in text order. */
export function condition(c: Condition, params: SqlValue[]): string {
  const c0 = col(c.field);
  const cast = c.field.type === 'datetime' ? 'CAST(? AS TIMESTAMP)' : c.field.type === 'number' ? 'CAST(? AS DOUBLE)' : '?';
  const bind = (v: SqlValue) => (params.push(v), cast);
  const any = (test: (placeholder: string) => string) => {
    const parts = c.values.map((v) => test(bind(v)));
    return parts.length === 1 ? parts[0]! : `(${parts.join(' OR ')})`;
  };
  const emptyTest = c.field.type === 'string' ? `(${c0} IS NULL OR ${c0} = '')` : `${c0} IS NULL`;
  switch (c.operator) {
    case 'is_empty': return emptyTest;
    case 'is_not_empty': return `NOT ${emptyTest}`;
    case 'is': return any((p) => `${c0} = ${p}`);
    case 'is_not': return `(${c0} IS NULL OR NOT ${any((p) => `${c0} = ${p}`)})`;
    case 'contains': return any((p) => `contains(${folded(c.field)}, ${p})`);
    case 'does not contain': return `(${c0} IS NULL OR NOT ${any((p) => `contains(${folded(c.field)}, ${p})`)})`;
    case 'gt': return any((p) => `${c0} > ${p}`);
    case 'lt': return any((p) => `${c0} < ${p}`);
    case 'gteq': return any((p) => `${c0} >= ${p}`);
    case 'lteq': return any((p) => `${c0} <= ${p}`);
    case 'is_before': return any((p) => `${c0} < ${p}`);
    case 'is_after': return any((p) => `${c0} > ${p}`);
  }
  // Negative operators keep nulls (handled above); the exhaustive switch makes this unreachable.
  throw new Error(`unknown operator ${c.operator satisfies never} (negative: ${isNegative(c.operator)})`);
}

/** ORDER BY terms for one key (interface §5). Nulls are last in both directions. */
export function orderTerms({ field, descending }: SortKey): string[] {
  const dir = descending ? 'DESC' : 'ASC';
  const c0 = col(field);
  if (field.version) {
    const vk = ident(versionKeyColumn(field.column));
    // Versions, then non-versions, then nulls — in both directions; versions compare by key, then exactly.
    return [
      `(CASE WHEN ${vk} IS NOT NULL THEN 0 WHEN ${c0} IS NOT NULL THEN 1 ELSE 2 END) ASC`,
      `${vk} ${dir} NULLS LAST`,
      `(CASE WHEN ${vk} IS NULL THEN ${folded(field)} END) ${dir} NULLS LAST`,
      `${c0} ${dir} NULLS LAST`,
    ];
  }
  if (field.type === 'string') return [`${folded(field)} ${dir} NULLS LAST`, `${c0} ${dir} NULLS LAST`];
  return [`${c0} ${dir} NULLS LAST`];
}

/** A field's value as a page returns it: datetimes already in the JSON form of interface §6, the rest typed. */
export function jsonValueSql(f: Field, column = col(f)): string {
  return f.type === 'datetime' ? `strftime(${column}, '%Y-%m-%dT%H:%M:%S.%g+00:00')` : column;
}
const jsonValue = (f: Field) => jsonValueSql(f);

/**
 * A row's values as one JSON array in declaration order (Field.index): what the loader stores as `_json`, and
 * what history computes from the columns of a compacted snapshot, which does not store it. One expression,
 * so that both give the same text for the same values.
 */
export function rowJsonSql(view: View, column: (f: Field) => string = col): string {
  const byIndex = [...view.fields].sort((a, b) => a.index - b.index);
  return `json_array(${byIndex.map((f) => jsonValueSql(f, column(f))).join(', ')})::VARCHAR`;
}

/**
 * The CSV text of a field. Its output name must not be a column name: ORDER BY binds a name to the
 * SELECT list before the table, so `AS "drifted"` made the export sort by the text ('' first, "10" before
 * "2") instead of the value. The header is written apart, from the catalog, so the name is free.
 */
function csvValue(f: Field, i: number): string {
  return `${csvText(f)} AS ${ident(`_csv${i}`)}`;
}

/** A field's CSV text before quoting (interface §6): datetimes in whole seconds, null as ''. */
export function csvText(f: Field, column = col(f)): string {
  const text = f.type === 'datetime' ? `strftime(${column}, '%Y-%m-%dT%H:%M:%S') || '+00:00'` : `CAST(${column} AS VARCHAR)`;
  return `coalesce(${text}, '')`;
}

/**
 * A row's whole CSV line, every value quoted as COPY's FORCE_QUOTE quotes it (`"` doubled), without the
 * line end: the loader stores it (`_csv`) so that an export in the default order of every field is a read
 * of stored lines, not a sort and a formatting of each value.
 */
export function csvLineSql(fields: Field[], column: (f: Field) => string): string {
  // One concat() call: a chain of || costs twice as much over tens of millions of rows.
  return `concat('"', ${fields.map((f) => `replace(${csvText(f, column(f))}, '"', '""')`).join(`, '","', `)}, '"')`;
}

/** The row order of a view's default sort, which the loader also stores the rows in (after `_org`). */
export function defaultOrder(view: View): string[] {
  return [...sortKeys(view, view.defaultSort).flatMap(orderTerms), '"_id" ASC'];
}

/** What a row-JSON page reads of each row: its id, its JSON, and the columns its filters and sort test. */
function readColumns(query: Query): string[] {
  const columns = new Set(['"_id"', ident(ROW_JSON_COLUMN)]);
  for (const field of [...query.conditions.map((c) => c.field), ...query.sort.map((k) => k.field)]) {
    columns.add(col(field));
    if (field.type === 'string') columns.add(folded(field));
    if (field.version) columns.add(ident(versionKeyColumn(field.column)));
  }
  return [...columns];
}

export function compileQuery(query: Query, target: CompileTarget): CompiledQuery {
  const params: SqlValue[] = [target.organization];
  const where = ['"_org" = ?', ...query.conditions.map((c) => condition(c, params))].join('\n  AND ');
  const from = `FROM ${target.relation}\nWHERE ${where}`;
  const sameList = <T>(a: readonly T[], b: readonly T[], same: (x: T, y: T) => boolean) => a.length === b.length && a.every((x, i) => same(x, b[i]!));
  const defaultSorted = sameList(query.sort, sortKeys(query.view, query.view.defaultSort), (x, y) => x.field === y.field && x.descending === y.descending);
  const offset = BigInt(query.page.number - 1) * BigInt(query.page.size);
  const rowJson = target.rowJson === true;
  const exportLines = target.csvLines !== undefined && sameList(query.fields.map((f) => f.index), target.csvLines, (x, y) => x === y) && defaultSorted;
  const select = rowJson ? `SELECT "_id", ${ident(ROW_JSON_COLUMN)}` : `SELECT "_id", ${query.fields.map(jsonValue).join(', ')}`;
  const small = target.organizationRows !== undefined && target.organizationRows <= wholeOrganizationLimit(target.tableRows);
  const knownTotal = query.conditions.length === 0 ? target.organizationRows : undefined;
  // A small organization's matching rows are read whole anyway: counting them there is nearly free.
  const pageCountsTotal = small && knownTotal === undefined;
  const sortTerms = [...query.sort.flatMap(orderTerms), '"_id" ASC'];
  // Rows stored in the default order: that order is the row number's, an integer instead of folded strings.
  const byRowid = target.defaultOrderStored === true && defaultSorted;
  const orderBy = `ORDER BY ${byRowid ? (small ? '"_rowid" ASC' : 'rowid ASC') : sortTerms.join(', ')}`;
  // MATERIALIZED keeps the optimizer from turning the small case back into the row-id fetch plan.
  const pageSql = small
    ? `WITH org_rows AS MATERIALIZED (SELECT ${rowJson ? readColumns(query).join(', ') : '*'}${byRowid ? ', rowid AS "_rowid"' : ''}\n${from})\n${select}${pageCountsTotal ? ', (SELECT count(*) FROM org_rows) AS "_total"' : ''}\nFROM org_rows\n${orderBy}\nLIMIT ? OFFSET ?`
    : `${select}\n${from}\n${orderBy}\nLIMIT ? OFFSET ?`;
  return {
    count: { sql: `SELECT count(*) AS n\n${from}`, params: [...params] },
    page: { sql: pageSql, params: [...params, BigInt(query.page.size), offset] },
    pageCountsTotal,
    ...(rowJson ? { valueIndexes: query.fields.map((f) => f.index) } : {}),
    ...(knownTotal === undefined ? {} : { knownTotal }),
    export: exportLines
      // No ORDER BY: the rows are stored in this order, and DuckDB keeps the order of a plain scan
      // (preserve_insertion_order), so the first line leaves before the last row is read.
      ? { sql: `SELECT ${ident(CSV_LINE_COLUMN)}\n${from}`, params: [...params] }
      : { sql: `SELECT ${query.fields.map(csvValue).join(', ')}\n${from}\nORDER BY ${sortTerms.join(', ')}`, params: [...params] },
    exportLines,
  };
}
