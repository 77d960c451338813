// Query → SQL and bound parameters. Pure: no I/O, no database. Identifiers come only from the catalog
// (Field.column, quoted); every client value is a `?` parameter, never spliced into the text.
import { CSV_LINE_COLUMN, foldedColumn, INDEX_ROW_COLUMN, indexFields, ORGANIZATION_KEY_COLUMN, POSITION_COLUMN, ROW_JSON_COLUMN, versionKeyColumn } from '../catalog/catalog.js';
import { isNegative } from '../catalog/operators.js';
import type { Field, View } from '../catalog/types.js';
import { sortKeys, type BoundValue, type Condition, type Query, type SortKey } from './query.js';
import { ident } from '../duckdb/sql.js';

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
  /**
   * Every matching row in the export's format: for CSV every value as a non-null VARCHAR (interface §6); for
   * Parquet and NDJSON typed columns named as the CSV header (exportValueSql).
   */
  export: { sql: string; params: SqlValue[] };
  /** The export reads stored lines (one VARCHAR column, already quoted), in stored order: write them as they are. */
  exportLines: boolean;
  /** A cursor page: how many values each of its rows has after its values (keyColumns), for the next cursor. */
  keyCount?: number;
  /**
   * A cursor page sought by position: its rows carry only their position; this statement reads the sort term
   * values of the row at the position bound last, and the next cursor is those values, the position and `layout`.
   */
  cursorKeys?: { statement: { sql: string; params: SqlValue[] }; layout: string };
}

/** Where the view's rows are: a relation expression chosen by the snapshot registry, never by a client. */
export interface CompileTarget {
  relation: string;
  organization: string;
  /**
   * Across organizations (docs/access.md): the test that keeps the rows of the organizations read, written by
   * the snapshot from its manifest's keys (never a client's text), in place of the one organization's test.
   */
  organizationFilter?: string;
  /** The organization's `_org_key`, when the snapshot stores one: the page finds its rows by it. */
  organizationKey?: number;
  /** The organization's rows in this view, when the snapshot knows them: chooses the page's plan. */
  organizationRows?: number;
  /** The relation has each row's values as one JSON array (`_json`): pages read it instead of every column. */
  rowJson?: boolean;
  /** The relation stores each list field's elements (catalog.ts membersColumn): a summary can group by them. */
  listMembers?: boolean;
  /**
   * The relation stores each row's CSV line (`_csv`) of these fields (Field.index, in line order), with
   * the rows in the view's default order: an export of exactly those fields in that order reads the lines.
   */
  csvLines?: readonly number[];
  /** Each organization's rows are stored in the view's default order: a page or an export in that order is a plain scan. */
  defaultOrderStored?: boolean;
  /**
   * What the relation's row positions belong to (the snapshot's files as its manifest names them): a cursor's
   * position is sought only in the layout it was read from, since a compaction rewrites a snapshot's files.
   */
  layout?: string;
  /**
   * How the relation names a row's position (`rowid` for a table, a column where the relation is a
   * query over one): a large organization's page finds its rows by it. Absent: DuckDB plans the fetch.
   */
  rowid?: string;
  /**
   * The position is a column with an ART index on it (catalog.ts POSITION_COLUMN). The fetch then tests it
   * alone: DuckDB looks a scan's `IN` filter up in an index only when it is the scan's one filter, and the
   * positions come from the organization's own rows, so the organization test adds nothing there.
   */
  rowidIndexed?: boolean;
  /**
   * Where the row-id fetch reads the page's rows by their positions, when not `relation`: for an
   * organization a change batch touched, each layer's table as it is. Positions are unique across the
   * layers and come from the matching rows of `relation`, which already left out the rows later layers
   * replaced, so the fetch needs no anti join (docs/performance.md, "Change batches applied to the bench snapshot").
   */
  fetchRelation?: string;
  /**
   * `relation` and `fetchRelation` reading only `columns` (quoted catalog names): for an organization read
   * through layers, where every layer's `SELECT *` would bind each of the view's columns at every execution.
   * A page's statements and its count read through these (and `upper` for storedMerge's); an export reads `relation`.
   */
  narrowed?: (columns: readonly string[]) => { relation: string; fetchRelation?: string; upper?: string };
  /**
   * The view's indexes in the snapshot (catalog.ts indexFields): by the indexed field's column, the relation
   * holding its rows in (organization key, value) order. Given only with `organizationKey`.
   */
  indexes?: readonly IndexTarget[];
  /**
   * An organization whose rows lie in layers over one that stores them in the default order
   * (delta-layout.ts storedMerge). A page in that order reads the lowest layer's first rows, as an
   * untouched organization's page does, and sorts them with the few rows of the layers over it: those
   * first rows are as many as the page reaches plus every row of that layer the layers over it replace,
   * so the rows left once the replaced ones are dropped still reach the page's end.
   */
  storedMerge?: StoredMerge;
}

export interface StoredMerge {
  /** The lowest layer's table. */
  stored: string;
  /** The workspaces the layers over it replace, as a relation of one `id` column. */
  replaced: string;
  /** The standing rows of the layers over it. */
  upper: string;
  /** The column naming a row's workspace, quoted. */
  column: string;
  /** How many rows of the organization in the lowest layer the layers over it replace, when the snapshot records it. */
  hiddenRows?: number;
  /**
   * The positions of those rows, where a delta lists them: a relation of one `pos` column (the snapshot's
   * table, never a client's value). The lowest layer stores the organization's rows in the default order with
   * their positions rising in it, so a page finds its first rows there by position.
   */
  hidden?: string;
  /**
   * Where the snapshot records them as a few runs of positions: those runs (first, last), which the scan of
   * the lowest layer leaves out itself, as constants of ours (the snapshot's, never a client's).
   */
  hiddenRanges?: readonly (readonly [number, number])[];
}

export interface IndexTarget { column: string; relation: string }

/**
 * Up to this many rows, a page in any order but the stored one reads the organization's rows whole, then
 * sorts them; above it, the row-id fetch (top-N over the sort columns, then only the page's rows) costs less.
 * With the organization's key on both of the fetch's scans its cost follows the organization, not the
 * table: measured on the bench snapshot, the two cost the same near 10,000 rows in the 1M-row workspaces
 * table and in the 22M-row resources table alike (docs/performance.md).
 */
export const SMALL_ORGANIZATION_ROWS = 10_000;

/**
 * Up to this many rows in its organization, a filtered page in stored order counts its matches with
 * `count(*) OVER ()` over its own scan instead of a second scan in a subquery. The window keeps every
 * matching row (row JSON included) until the scan ends, so it wins only for small organizations: measured
 * on the bench snapshot per page, 1.20 against 1.74 ms up to 500 rows, equal between 2,000 and 5,000, 4.6
 * against 2.9 ms near 10,000 (docs/performance.md, "Counting matches").
 */
export const WINDOW_COUNT_ROWS = 2_000;

const col = (f: Field) => ident(f.column);
/**
 * interface §4: case-insensitive means ASCII A–Z fold to a–z only. The loader stores that form beside each
 * string only where it differs from the value (most values are lower case already): null means "as the
 * value", which is what writing the copies cost most of (docs/performance.md). `folded` names the stored
 * column, `foldedValue` is what a filter or an order compares.
 */
const folded = (f: Field) => ident(foldedColumn(f.column));
const foldedValue = (f: Field) => (f.foldComputed ? foldSql(col(f)) : `coalesce(${folded(f)}, ${col(f)})`);

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
/**
 * The folded form of a string column (interface §4: ASCII A–Z to a–z only), as the loader stores it and as a
 * compacted snapshot computes it. translate() costs about a microsecond a value; on ASCII text (as many
 * bytes as characters) lower() folds exactly A–Z and is twenty times faster, so only other text needs it.
 */
export const foldSql = (column: string) =>
  `CASE WHEN strlen(${column}) = length(${column}) THEN lower(${column}) ELSE translate(${column}, '${UPPER}', '${UPPER.toLowerCase()}') END`;

/**
 * The folded copy as a snapshot stores it: null where it equals the value (`foldedValue` puts it back).
 * The loader folds as it goes; compaction passes the copy an older snapshot stored for every value.
 */
export const storedFoldSql = (column: string, fold = foldSql(column)) => `nullif(${fold}, ${column})`;

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
    case 'contains': return any((p) => `contains(${foldedValue(c.field)}, ${p})`);
    case 'does not contain': return `(${c0} IS NULL OR NOT ${any((p) => `contains(${foldedValue(c.field)}, ${p})`)})`;
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

/** The SQL type of a sort term's value: a cursor carries it as text, and its page binds it back as this type. */
export type KeyType = 'VARCHAR' | 'BIGINT' | 'HUGEINT' | 'INTEGER' | 'BOOLEAN' | 'TIMESTAMP';

/** One term of an ORDER BY (nulls last in either direction), with the type of its value for a keyset (cursor.ts). */
export interface SortTerm {
  expr: string;
  descending: boolean;
  type: KeyType;
}

export const termSql = (t: SortTerm) => `${t.expr} ${t.descending ? 'DESC' : 'ASC'} NULLS LAST`;

/** The term that ends every order of a view's rows: ids are unique, so the order is total. */
export const ID_TERM: SortTerm = { expr: '"_id"', descending: false, type: 'VARCHAR' };

const KEY_TYPES: Record<Field['type'], KeyType> = { string: 'VARCHAR', number: 'BIGINT', boolean: 'BOOLEAN', datetime: 'TIMESTAMP' };

/** ORDER BY terms for one key (interface §5). Nulls are last in both directions. */
export function orderTerms(key: SortKey): string[] {
  return sortTerms(key).map(termSql);
}

/** The terms of one key, as orderTerms writes them. */
export function sortTerms({ field, descending }: SortKey): SortTerm[] {
  return sortTermsOver(field, descending, { value: col(field), folded: foldedValue(field), versionKey: ident(versionKeyColumn(field.column)) });
}

/** Every term of a query's order: its keys', then the row id. */
export const queryTerms = (query: Query): SortTerm[] => [...query.sort.flatMap(sortTerms), ID_TERM];

/**
 * ORDER BY terms for a value of `field`'s type held in other columns than the field's own (a summary's
 * group): `value`, its folded form (strings) and its version order key (versions), as SQL expressions.
 */
export function orderTermsOver(field: Field, descending: boolean, columns: { value: string; folded: string; versionKey: string }): string[] {
  return sortTermsOver(field, descending, columns).map(termSql);
}

export function sortTermsOver(field: Field, descending: boolean, columns: { value: string; folded: string; versionKey: string }): SortTerm[] {
  const { value: c0, folded: f0, versionKey: vk } = columns;
  const type = KEY_TYPES[field.type];
  if (field.version) {
    // Versions, then non-versions, then nulls — in both directions; versions compare by key, then exactly.
    return [
      { expr: `(CASE WHEN ${vk} IS NOT NULL THEN 0 WHEN ${c0} IS NOT NULL THEN 1 ELSE 2 END)`, descending: false, type: 'INTEGER' },
      { expr: vk, descending, type: 'VARCHAR' },
      { expr: `(CASE WHEN ${vk} IS NULL THEN ${f0} END)`, descending, type: 'VARCHAR' },
      { expr: c0, descending, type },
    ];
  }
  if (field.type === 'string') return [{ expr: f0, descending, type: 'VARCHAR' }, { expr: c0, descending, type }];
  return [{ expr: c0, descending, type }];
}

/**
 * The keyset test of a cursor page (docs/data-out.md): the rows that come after the row whose term values
 * are `after` (as text, null for null) in the order of `terms`, nulls last in either direction. Values
 * are bound and cast back to each term's type; a null is decided here, so it binds nothing.
 */
export function keysetAfter(terms: readonly SortTerm[], after: readonly (string | null)[], params: SqlValue[]): string {
  const bound = (t: SortTerm, v: string) => (params.push(v), `CAST(? AS ${t.type})`);
  const alternatives: string[] = [];
  for (let i = 0; i < terms.length; i++) {
    const term = terms[i]!;
    const value = after[i]!;
    // Nothing sorts after a null: nulls are last in both directions.
    if (value === null) continue;
    const equal = terms.slice(0, i).map((t, j) => (after[j] === null ? `${t.expr} IS NULL` : `${t.expr} = ${bound(t, after[j]!)}`));
    const later = `(${term.expr} ${term.descending ? '<' : '>'} ${bound(term, value)} OR ${term.expr} IS NULL)`;
    alternatives.push([...equal, later].join(' AND '));
  }
  return alternatives.length === 0 ? 'false' : `(${alternatives.map((a) => `(${a})`).join('\n    OR ')})`;
}

/** Each term's value as text, for the cursor of a page's last row: `_key0`, `_key1`, … */
export const keyColumns = (terms: readonly SortTerm[]) => terms.map((t, i) => `CAST(${t.expr} AS VARCHAR) AS ${ident(`_key${i}`)}`);

/** A field's value as a page returns it: datetimes already in the JSON form of interface §6, the rest typed. */
export function jsonValueSql(f: Field, column = col(f)): string {
  return f.type === 'datetime' ? jsonDatetime(column) : column;
}
const jsonDatetime = (column: string) => `strftime(${column}, '%Y-%m-%dT%H:%M:%S.%g+00:00')`;
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

/** A field's CSV text before quoting (interface §6): datetimes in whole seconds, null as ''. */
export function csvText(f: Field, column = col(f)): string {
  const text = f.type === 'datetime' ? `strftime(${column}, '%Y-%m-%dT%H:%M:%S') || '+00:00'` : `CAST(${column} AS VARCHAR)`;
  return `coalesce(${text}, '')`;
}

/** What an export writes (docs/data-out.md): CSV text, or typed columns as Parquet or NDJSON. */
export type ExportFormat = 'csv' | 'parquet' | 'ndjson';
export const EXPORT_FORMATS: readonly ExportFormat[] = ['csv', 'parquet', 'ndjson'];

/**
 * A value as a typed export writes it: the JSON answer's value, typed (docs/data-out.md). Parquet: numbers
 * BIGINT (exact); a datetime the instant to the millisecond as TIMESTAMP WITH TIME ZONE (timezone('UTC', …)
 * reads the stored UTC wall time whatever the connection's TimeZone); the rest as stored. NDJSON: the
 * value's JSON text, `null` for null; a datetime the JSON answer's text.
 */
export function typedValueSql(type: Field['type'] | 'list', format: Exclude<ExportFormat, 'csv'>, column: string): string {
  const typed = type === 'number' ? `CAST(${column} AS BIGINT)` : column;
  if (format === 'parquet') return type === 'datetime' ? `timezone('UTC', date_trunc('millisecond', ${column}))` : typed;
  const json = type === 'datetime' ? `'"' || ${jsonDatetime(column)} || '"'`
    : type === 'string' || type === 'list' ? `to_json(${column})::VARCHAR` : `CAST(${typed} AS VARCHAR)`;
  return `coalesce(${json}, 'null')`;
}

/**
 * An export's statement: `values` (SQL over `body`'s rows, in column order) as CSV text, typed and named
 * `names` for Parquet, or as one NDJSON line a row with `names` for keys. The names are given outside the
 * statement that orders: ORDER BY binds a name to the SELECT list before the table, so naming a value
 * `drifted` there made the export sort by its text ('' first, "10" before "2") instead of the value. The CSV
 * header is written apart, from the catalog. A projection keeps its input's order.
 *
 * An NDJSON line is made here and written as stored CSV lines are (unquoted): DuckDB's own JSON writer
 * built a document a row and was a third slower on the bench's resources (docs/performance.md).
 */
export function exportSelect(format: ExportFormat, values: readonly string[], names: readonly string[], body: string): string {
  const inner = `SELECT ${values.map((v, i) => `${v} AS ${ident(`_out${i}`)}`).join(', ')}\n${body}`;
  if (format === 'csv') return inner;
  if (format === 'parquet') return `SELECT ${names.map((n, i) => `${ident(`_out${i}`)} AS ${ident(n)}`).join(', ')}\nFROM (${inner})`;
  // Names are catalog names (ident() refuses anything else), so their JSON needs no escaping.
  const parts = names.map((n, i) => `'${i === 0 ? '{' : ','}${ident(n)}:', ${ident(`_out${i}`)}`);
  return `SELECT concat(${parts.join(', ')}, '}') AS "_line"\nFROM (${inner})`;
}

/** A field's value for an export in `format`. */
export const exportValue = (f: Field, format: ExportFormat, column = col(f)) => (format === 'csv' ? csvText(f, column) : typedValueSql(f.type, format, column));

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

/** The columns that `fields`' filters and sort terms read: each field's, its folded copy, its version key. */
export function testedColumns(fields: Field[]): string[] {
  return fields.flatMap((field) => [
    col(field),
    ...(field.type === 'string' && !field.foldComputed ? [folded(field)] : []),
    ...(field.version ? [ident(versionKeyColumn(field.column))] : []),
  ]);
}

/** What a row-JSON page reads of each row: its id, its JSON, and the columns its filters and sort test. */
function readColumns(query: Query): string[] {
  return [...new Set(['"_id"', ident(ROW_JSON_COLUMN), ...testedColumns([...query.conditions.map((c) => c.field), ...query.sort.map((k) => k.field)])])];
}

/** What the sort terms of a query read (orderTerms), with the row id that ends every order. */
function sortColumns(query: Query): string[] {
  return [...new Set(['"_id"', ...testedColumns(query.sort.map((k) => k.field))])];
}

/**
 * The test that keeps a statement to the target's organization, its value appended to `params`. By the
 * integer key where the snapshot has one: rows are stored in key order, so the scan's zone maps skip every
 * other organization's row groups, where the name's string statistics (8-byte prefixes) could not.
 */
export function organizationTest(target: CompileTarget, params: SqlValue[]): string {
  if (target.organizationFilter !== undefined) return target.organizationFilter;
  if (target.organizationKey === undefined) {
    params.push(target.organization);
    return '"_org" = ?';
  }
  params.push(target.organizationKey);
  return `${ident(ORGANIZATION_KEY_COLUMN)} = CAST(? AS INTEGER)`;
}

/**
 * The index a query's matching rows can be found in: one whose field the query tests with `is` (the index
 * stores each value's rows together, so the scan's zone maps skip the others) and that holds every field the
 * query's conditions test; `sorted` when it holds the sort's fields too, so that the page's top rows can be
 * ranked from it. Large organizations only: a small one's rows are few enough to read whole.
 */
function chooseIndex(query: Query, target: CompileTarget): { relation: string; sorted: boolean } | undefined {
  if (target.organizationKey === undefined || target.organizationRows === undefined || target.organizationRows <= SMALL_ORGANIZATION_ROWS) return undefined;
  for (const index of target.indexes ?? []) {
    const field = query.view.fields.find((f) => f.column === index.column);
    if (!field?.indexed) continue;
    const held = new Set(indexFields(query.view, field));
    if (!query.conditions.some((c) => c.field === field && c.operator === 'is')) continue;
    if (!query.conditions.every((c) => held.has(c.field))) continue;
    return { relation: index.relation, sorted: query.sort.every((k) => held.has(k.field)) };
  }
  return undefined;
}

/** The test that leaves a layered organization's replaced rows out of its lowest layer, where their positions are known. */
function unhiddenTest(merge: StoredMerge): string {
  const ranges = merge.hiddenRanges ?? [];
  const position = ident(POSITION_COLUMN);
  // Positions are the snapshot's integers, never a client's: written out as constants. Single positions (a
  // replaced workspace's one row) as one list, longer runs (its resources) each as a range: DuckDB plans a list
  // once, while each range is an expression its optimizer visits at every execution (14 single positions:
  // 0.15 ms over no test as a list, 0.7 ms as ranges; 409 positions in 12 runs: 1.0 ms as ranges, 3.5 ms as a list).
  const singles = ranges.filter(([a, b]) => a === b).map(([a]) => Math.trunc(a));
  const runs = ranges.filter(([a, b]) => a !== b).map(([a, b]) => `${position} BETWEEN ${Math.trunc(a)} AND ${Math.trunc(b)}`);
  return [
    ...(singles.length > 0 ? [`\n  AND ${position} NOT IN (${singles.join(', ')})`] : []),
    ...(runs.length > 0 ? [`\n  AND NOT (${runs.join(' OR ')})`] : []),
  ].join('');
}

/**
 * A query's page, count and export. `format` shapes the export. With `query.page.after` the page is a cursor
 * page (docs/data-out.md): the rows after that position by the sort's terms (keysetAfter), one more than the
 * page's size so that the next cursor is known to lead somewhere, each with its term values (keyColumns)
 * after its values, before the total.
 */
export function compileQuery(query: Query, target: CompileTarget, format: ExportFormat = 'csv'): CompiledQuery {
  const params: SqlValue[] = [];
  const where = [organizationTest(target, params), ...query.conditions.map((c) => condition(c, params))].join('\n  AND ');
  // What a page and its count read: with row JSON, the columns readColumns names and the organization's key and
  // position; an export reads every field.
  const narrowed = target.rowJson === true && target.narrowed
    ? target.narrowed([...new Set([ident(ORGANIZATION_KEY_COLUMN), ident(POSITION_COLUMN), ...readColumns(query), ...(target.storedMerge ? [target.storedMerge.column] : [])])])
    : undefined;
  const from = `FROM ${narrowed?.relation ?? target.relation}\nWHERE ${where}`;
  const exportFrom = `FROM ${target.relation}\nWHERE ${where}`;
  // The index holds the same columns under the same names: the same conditions, read from fewer rows.
  const index = chooseIndex(query, target);
  const matchFrom = index ? `FROM ${index.relation}\nWHERE ${where}` : from;
  const sameList = <T>(a: readonly T[], b: readonly T[], same: (x: T, y: T) => boolean) => a.length === b.length && a.every((x, i) => same(x, b[i]!));
  const defaultSorted = sameList(query.sort, sortKeys(query.view, query.view.defaultSort), (x, y) => x.field === y.field && x.descending === y.descending);
  const after = query.page.after;
  const offset = after ? 0n : BigInt(query.page.number - 1) * BigInt(query.page.size);
  const limit = BigInt(query.page.size + (after ? 1 : 0));
  const rowJson = target.rowJson === true;
  const exportLines = format === 'csv' && target.csvLines !== undefined && sameList(query.fields.map((f) => f.index), target.csvLines, (x, y) => x === y) && defaultSorted;
  const terms = queryTerms(query);
  // The row JSON as a BLOB (encode() only retypes it): the worker copies its bytes to the page unread.
  const values = rowJson ? [`encode(${ident(ROW_JSON_COLUMN)})`] : query.fields.map(jsonValue);
  // Rows stored in the default order: a page in that order is a plain scan, which returns rows in stored
  // order (the workers keep preserve_insertion_order, as exports of stored lines do), so LIMIT ends the
  // scan at the page's last row: no sort, and no reading the organization whole, at any size.
  const storedOrder = target.defaultOrderStored === true && defaultSorted;
  // A cursor page in stored order of a table seeks the row after the cursor's by its position (rowid,
  // monotonic in stored order), which the scan finds by skipping every row group before it; the keyset test
  // read the organization's rows up to there, a cost that grew with the depth (docs/performance.md, "Cursor
  // pages"). The snapshot is the cursor's, so in the same layout the position names the same row as its sort
  // term values, which the cursor carries too: in another layout (compacted since) it falls back to them.
  // The page's rows carry only their position; the last row's term values are read apart, by position.
  const positioned = after !== undefined && storedOrder && target.rowid !== undefined && target.layout !== undefined;
  const keys = !after ? [] : positioned ? [`CAST(rowid AS VARCHAR) AS "_key0"`] : keyColumns(terms);
  // The seek, its values bound after the conditions' (it follows them in every plan's text).
  const seekParams: SqlValue[] = [];
  const position = positioned && after.length === terms.length + 2 && after[terms.length + 1] === target.layout ? after[terms.length] : null;
  const seek = position ? (seekParams.push(position), 'rowid > CAST(? AS BIGINT)')
    : after && after.length > 0 ? keysetAfter(terms, after.slice(0, terms.length), seekParams) : undefined;
  const select = `SELECT "_id", ${[...values, ...keys].join(', ')}`;
  const merge = !after && defaultSorted && target.storedMerge !== undefined ? { ...target.storedMerge, upper: narrowed?.upper ?? target.storedMerge.upper } : undefined;
  const small = !merge && !storedOrder && target.organizationRows !== undefined && target.organizationRows <= SMALL_ORGANIZATION_ROWS;
  const knownTotal = query.conditions.length === 0 ? target.organizationRows : undefined;
  // A window would count only the rows after a cursor: a cursor page counts apart.
  const windowCount = !after && storedOrder && target.organizationRows !== undefined && target.organizationRows <= WINDOW_COUNT_ROWS;
  // The page counts its matching rows itself wherever its plan reads them anyway (interface: every page
  // carries the total): one statement instead of two, and for a large organization one scan of its rows
  // instead of two (docs/performance.md). Not a larger organization's page in stored order: beside a scalar
  // count subquery, DuckDB returned a rare value's rows out of stored order (a later vector's rows first),
  // so that page is a plain scan and its count a statement of its own (docs/performance.md, "Counting matches").
  // A small layered organization whose replaced rows are runs of positions: its rows read whole (a filter
  // on each layer, no join) and counted by a window, as an untouched one's are.
  const mergeWindow = merge?.hiddenRanges !== undefined && knownTotal === undefined && target.organizationRows !== undefined && target.organizationRows <= WINDOW_COUNT_ROWS;
  const pageCountsTotal = knownTotal === undefined && (merge ? mergeWindow : small || windowCount || (!storedOrder && target.rowid !== undefined));
  const total = (rows: string) => (pageCountsTotal ? `, (SELECT count(*) FROM ${rows}) AS "_total"` : '');
  const orderSql = `ORDER BY ${terms.map(termSql).join(', ')}`;
  const orderBy = storedOrder ? '' : `${orderSql}\n`;
  const andSeek = seek ? `\n  AND ${seek}` : '';
  let pageSql: string;
  let pageParams: SqlValue[] = [...params, ...seekParams, limit, offset];
  if (merge && mergeWindow) {
    // A small organization's rows of every layer read whole (each layer tested by a filter alone) and counted by a window.
    const columns = rowJson ? readColumns(query).join(', ') : '*';
    pageSql = `${select}, count(*) OVER () AS "_total"\nFROM (SELECT ${columns}\n  FROM ${merge.stored}\n  WHERE ${where}${unhiddenTest(merge)}\n  UNION ALL SELECT ${columns}\n  FROM ${merge.upper} u\n  WHERE ${where})\n${orderSql}\nLIMIT ? OFFSET ?`;
    pageParams = [...params, ...params, limit, offset];
  } else if (merge && merge.hiddenRanges === undefined && merge.hidden !== undefined && merge.hiddenRows !== undefined) {
    // Many replaced rows whose positions a delta lists: the lowest layer's first rows found narrow, by
    // position. Its first matching positions by a plain scan (stored order, as the other merges read it), as
    // many as the page reaches plus the replaced ones (among which every replaced one before the page's end
    // lies); of those, the ones the list does not name (read only up to the last candidate), the page's reach of
    // them in position order, which is the default order there; then those rows' columns, by position. No row
    // is read whole but the page's, where the scan with its LIMIT read every replaced row's columns and dropped
    // them by a key anti join after it. The LIMIT is bound: with a count subquery in it, DuckDB sorted the
    // organization's rows in full.
    const columns = rowJson ? [...new Set([...readColumns(query), merge.column])].join(', ') : '*';
    const pos = ident(POSITION_COLUMN);
    pageSql = `WITH candidates AS MATERIALIZED (SELECT ${pos}\nFROM ${merge.stored}\nWHERE ${where}\nLIMIT ? + ?),\n`
      + `first_rows AS (SELECT ${columns}\nFROM ${merge.stored}\nWHERE ${pos} IN (SELECT ${pos} FROM candidates\n`
      + `  WHERE ${pos} NOT IN (SELECT h.pos FROM ${merge.hidden} h WHERE h.pos <= (SELECT max(${pos}) FROM candidates))\n  ORDER BY ${pos}\n  LIMIT ?))\n`
      + `${select}\nFROM (SELECT * FROM first_rows\n  UNION ALL SELECT ${columns}\n  FROM ${merge.upper} u\n  WHERE ${where})\n${orderSql}\nLIMIT ? OFFSET ?`;
    pageParams = [...params, offset + limit, BigInt(merge.hiddenRows), offset + limit, ...params, limit, offset];
  } else if (merge) {
    // The lowest layer's first rows by a plain scan (it returns them in stored order, as the untouched
    // organization's page relies on), limited before any replaced one is dropped by a join: no join stands
    // between the scan and its LIMIT, whose order DuckDB would not promise to keep. Where the replaced rows'
    // positions are known, the scan leaves them out itself and needs no more rows than the page reaches;
    // else it reads as many more as there are replaced rows (counted here when the snapshot does not record
    // them) and the join drops them after the LIMIT.
    const columns = rowJson ? [...new Set([...readColumns(query), merge.column])].join(', ') : '*';
    const known = merge.hiddenRanges !== undefined;
    const extra: SqlValue[] = [];
    const hidden = known ? '' : merge.hiddenRows !== undefined ? (extra.push(BigInt(merge.hiddenRows)), ' + ?')
      : (extra.push(target.organizationKey ?? 0),
      ` + (SELECT count(*) FROM ${merge.stored} h SEMI JOIN ${merge.replaced} r ON r.id = h.${merge.column} WHERE h.${ident(ORGANIZATION_KEY_COLUMN)} = CAST(? AS INTEGER))`);
    const standing = known ? 'SELECT * FROM first_rows' : `SELECT f.* FROM first_rows f ANTI JOIN ${merge.replaced} r ON r.id = f.${merge.column}`;
    pageSql = `WITH first_rows AS (SELECT ${columns}\nFROM ${merge.stored}\nWHERE ${where}${unhiddenTest(merge)}\nLIMIT ?${hidden})\n${select}\nFROM (${standing}\n  UNION ALL SELECT ${columns}\n  FROM ${merge.upper} u\n  WHERE ${where})\n${orderSql}\nLIMIT ? OFFSET ?`;
    pageParams = [...params, offset + limit, ...extra, ...params, limit, offset];
  } else if (small) {
    // MATERIALIZED keeps the optimizer from turning the small case back into the row-id fetch plan.
    pageSql = `WITH org_rows AS MATERIALIZED (SELECT ${rowJson ? readColumns(query).join(', ') : '*'}\n${from})\n${select}${total('org_rows')}\nFROM org_rows\n${seek ? `WHERE ${seek}\n` : ''}${orderBy}LIMIT ? OFFSET ?`;
  } else if (windowCount && pageCountsTotal) {
    // An empty OVER () keeps the scan's order (DuckDB preserves insertion order through it), and LIMIT
    // applies after the window has counted every matching row.
    pageSql = `${select}, count(*) OVER () AS "_total"\n${from}\nLIMIT ? OFFSET ?`;
  } else if (storedOrder || target.rowid === undefined) {
    // The count, when one is wanted, is the `count` statement: from the index where one holds the conditions.
    pageSql = `${select}\n${from}${andSeek}\n${orderBy}LIMIT ? OFFSET ?`;
  } else {
    // The row-id fetch, written out: the page's row ids are the top of the matching rows by the sort
    // columns alone; only those rows' wide columns are then read, by a scan that the organization's key
    // keeps to its row groups (DuckDB's own rewrite scanned the whole table: docs/performance.md). When the
    // total is wanted, the matching rows' ids and sort columns are kept once and both count and rank read them.
    // With an index that holds the sort's fields, the matching rows are the index's: their positions in the
    // view's table (`_row`) are what the fetch looks up.
    const outer: SqlValue[] = [];
    const rowid = target.rowid;
    const ranked = index?.sorted ? { from: matchFrom, rowid: ident(INDEX_ROW_COLUMN) } : { from, rowid };
    const organization = target.rowidIndexed ? '' : `${organizationTest(target, outer)}\n  AND `;
    const fetch = (ids: string) => `${select}${total('matching')}\nFROM ${narrowed?.fetchRelation ?? target.fetchRelation ?? narrowed?.relation ?? target.relation}\nWHERE ${organization}${rowid} IN (${ids}\n${orderBy}LIMIT ? OFFSET ?)\n${orderBy.trimEnd()}`;
    pageSql = pageCountsTotal
      ? `WITH matching AS MATERIALIZED (SELECT ${ranked.rowid} AS "_rowid", ${sortColumns(query).join(', ')}\n${ranked.from})\n${fetch(`SELECT "_rowid" FROM matching${seek ? ` WHERE ${seek}` : ''}`)}`
      : fetch(`SELECT ${rowid}\n${from}${andSeek}`);
    pageParams = pageCountsTotal ? [...params, ...outer, ...seekParams, limit, offset] : [...outer, ...pageParams];
  }
  return {
    // Where the replaced rows' positions are known, each layer counts its own rows, with no join.
    count: merge?.hiddenRanges !== undefined
      ? { sql: `SELECT (SELECT count(*) FROM ${merge.stored}\n  WHERE ${where}${unhiddenTest(merge)})\n  + (SELECT count(*) FROM ${merge.upper} u\n  WHERE ${where}) AS n`, params: [...params, ...params] }
      : { sql: `SELECT count(*) AS n\n${matchFrom}`, params: [...params] },
    page: { sql: pageSql, params: pageParams },
    pageCountsTotal,
    ...(rowJson ? { valueIndexes: query.fields.map((f) => f.index) } : {}),
    ...(knownTotal === undefined ? {} : { knownTotal }),
    // No ORDER BY where the rows are stored in this order: DuckDB keeps the order of a plain scan
    // (preserve_insertion_order), so the first line leaves before the last row is read.
    export: exportLines
      ? { sql: `SELECT ${ident(CSV_LINE_COLUMN)}\n${exportFrom}`, params: [...params] }
      : { sql: exportSelect(format, query.fields.map((f) => exportValue(f, format)), query.fields.map((f) => f.name), `${exportFrom}${storedOrder ? '' : `\n${orderSql}`}`), params: [...params] },
    exportLines,
    ...(after ? { keyCount: keys.length } : {}),
    ...(positioned ? { cursorKeys: { statement: { sql: `SELECT ${keyColumns(terms).join(', ')}\nFROM ${target.relation}\nWHERE rowid = CAST(? AS BIGINT)`, params: [] }, layout: target.layout! } } : {}),
  };
}
