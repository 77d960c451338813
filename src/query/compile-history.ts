// History queries → SQL over several snapshots (docs/history.md). Pure, like compile.ts, whose pieces it
// reuses: the same conditions, order terms and CSV text, so that a change set or a trend point answers
// exactly what a query of that snapshot answers.
import { foldedColumn, ROW_JSON_COLUMN, versionKeyColumn } from '../catalog/catalog.js';
import type { Field, View } from '../catalog/types.js';
import { condition, exportSelect, exportValue, keyColumns, typedValueSql, type ExportFormat, keysetAfter, orderTerms, organizationTest, queryTerms, rowJsonSql, termSql, type CompileTarget, type SqlValue } from './compile.js';
import type { Query } from './query.js';
import { ident } from '../duckdb/sql.js';

interface Statement { sql: string; params: SqlValue[] }

export interface CompiledChanges {
  /**
   * The page, with the counts of the whole filtered change set riding on it: every row starts with how many
   * rows were added, removed and changed, then the change's id, kind, changed field names joined with ', ',
   * and the row's JSON values before and after; on a cursor page (`query.page.after`), each sort term's
   * value (compile.ts keyColumns) after those, and one row more than the page's size when another follows.
   * A page past the end is one row of counts with nulls.
   */
  page: Statement;
  /** Every listed change in the export's format: change, changed_fields, then each selected field and its previous value. */
  export: Statement;
  /** Positions of the selected fields in a row's JSON values. */
  valueIndexes: number[];
}

/** A catalog name as an SQL string literal (names are snake_case: ident() refuses anything else). */
const nameLiteral = (name: string) => `'${ident(name).slice(1, -1)}'`;

/** The columns a sort key reads: the value, its folded copy for strings, its order key for versions. */
function sortColumns(query: Query): string[] {
  const columns = new Set<string>();
  for (const { field } of query.sort) {
    columns.add(field.column);
    if (field.type === 'string') columns.add(foldedColumn(field.column));
    if (field.version) columns.add(versionKeyColumn(field.column));
  }
  return [...columns];
}

/**
 * The names of the fields whose JSON values differ between two rows' JSON arrays, alphabetical (the view's
 * field order), joined with ', '; '' when either row is missing.
 */
function changedFieldsSql(view: View, before: string, after: string): string {
  const tests = view.fields.map((f) =>
    `CASE WHEN json_extract(${before}, '$[${f.index}]') IS DISTINCT FROM json_extract(${after}, '$[${f.index}]') THEN ${nameLiteral(f.name)} END`);
  return `CASE WHEN ${before} IS NULL OR ${after} IS NULL THEN '' ELSE concat_ws(', ', ${tests.join(', ')}) END`;
}

/**
 * One snapshot's rows of the organization: id, row JSON, the `carried` columns, and whether the query's
 * filter matches the row (`_match`).
 */
function side(query: Query, target: CompileTarget, params: SqlValue[], carried: readonly string[]): string {
  const json = ident(ROW_JSON_COLUMN);
  const match = query.conditions.length === 0 ? 'true' : query.conditions.map((c) => condition(c, params)).join(' AND ');
  const organization = organizationTest(target, params);
  // A compacted snapshot does not store the row JSON: it is computed by the loader's own expression.
  const rowJson = target.rowJson === true ? json : `${rowJsonSql(query.view)} AS ${json}`;
  const columns = ['"_id"', rowJson, ...carried.map(ident)].join(', ');
  return `SELECT ${columns}, (${match}) AS "_match" FROM ${target.relation} WHERE ${organization}`;
}

/**
 * The change set between two snapshots of one view for one organization (docs/history.md §4): a row is
 * added, removed or changed (its JSON values differ); it is listed when the filter matches it in either
 * snapshot. The sort's columns, and the `previous` fields', are carried from the row as it is in `to` (in
 * `from` for a removed row); each `previous` field is carried as it is in `from` too.
 */
function changeSet(query: Query, from: CompileTarget, to: CompileTarget, params: SqlValue[], previous: Field[], materialized = false): string {
  const carried = [...new Set([...sortColumns(query), ...previous.map((f) => f.column)])];
  const json = ident(ROW_JSON_COLUMN);
  const f = side(query, from, params, carried);
  const t = side(query, to, params, carried);
  const merged = carried.map((c) => `CASE WHEN t."_id" IS NULL THEN f.${ident(c)} ELSE t.${ident(c)} END AS ${ident(c)}`);
  const before = previous.map((p) => `f.${ident(p.column)} AS ${ident(`_prev_${p.column}`)}`);
  return `WITH f AS (${f}),
t AS (${t}),
d AS${materialized ? ' MATERIALIZED' : ''} (
  SELECT coalesce(t."_id", f."_id") AS "_id",
    CASE WHEN f."_id" IS NULL THEN 'added' WHEN t."_id" IS NULL THEN 'removed' ELSE 'changed' END AS "_change",
    f.${json} AS "_before", t.${json} AS "_after"${[...merged, ...before].map((c) => `,\n    ${c}`).join('')}
  FROM f FULL OUTER JOIN t ON f."_id" = t."_id"
  WHERE (f."_id" IS NULL OR t."_id" IS NULL OR f.${json} <> t.${json})
    AND (coalesce(f."_match", false) OR coalesce(t."_match", false))
)`;
}

export function compileChanges(query: Query, from: CompileTarget, to: CompileTarget, format: ExportFormat = 'csv'): CompiledChanges {
  const terms = queryTerms(query);
  const orderBy = `ORDER BY ${terms.map(termSql).join(', ')}`;
  const changed = changedFieldsSql(query.view, '"_before"', '"_after"');
  const after = query.page.after;

  const pageParams: SqlValue[] = [];
  // The change set is joined once (MATERIALIZED) for both its counts and its page. The changed fields are
  // named for the page's rows only: the JSON is taken apart once per row shown.
  const page = `${changeSet(query, from, to, pageParams, [], true)},
counts AS (
  SELECT count(*) FILTER (WHERE "_change" = 'added') AS "_added", count(*) FILTER (WHERE "_change" = 'removed') AS "_removed",
    count(*) FILTER (WHERE "_change" = 'changed') AS "_changed_rows"
  FROM d
),
p AS (SELECT * FROM d${after && after.length > 0 ? ` WHERE ${keysetAfter(terms, after, pageParams)}` : ''} ${orderBy} LIMIT ? OFFSET ?)
SELECT "_added", "_removed", "_changed_rows", "_id", "_change", ${changed} AS "_changed", "_before", "_after"${after ? `, ${keyColumns(terms).join(', ')}` : ''}
FROM counts LEFT JOIN p ON true
${orderBy}`;
  pageParams.push(BigInt(query.page.size + (after ? 1 : 0)), after ? 0n : BigInt(query.page.number - 1) * BigInt(query.page.size));

  const exportParams: SqlValue[] = [];
  const value = (type: Field['type'] | 'list', column: string) => (format === 'csv' ? column : typedValueSql(type, format, column));
  // changed_fields: the names joined in CSV, a list of them in Parquet and NDJSON (empty for an added or removed row).
  const changedList = `CASE WHEN ${changed} = '' THEN []::VARCHAR[] ELSE string_split(${changed}, ', ') END`;
  const values = [
    value('string', '"_change"'),
    format === 'csv' ? changed : value('list', changedList),
    ...query.fields.flatMap((field) => [exportValue(field, format), exportValue(field, format, ident(`_prev_${field.column}`))]),
  ];
  const exported = `${changeSet(query, from, to, exportParams, query.fields)}
${exportSelect(format, values, changesColumns(query.fields), `FROM d\n${orderBy}`)}`;

  return {
    page: { sql: page, params: pageParams },
    export: { sql: exported, params: exportParams },
    valueIndexes: query.fields.map((f) => f.index),
  };
}

/** The columns of a change export, as its CSV header names them (docs/history.md §4). */
export const changesColumns = (fields: readonly Field[]) => ['change', 'changed_fields', ...fields.flatMap((f) => [f.name, `previous_${f.name}`])];

/**
 * One row per snapshot, in the order of `targets`: its position, how many rows match, and the sum of each
 * of `sums` over them as JSON number text (null when no row matches).
 */
export function compileTrend(query: Query, targets: readonly CompileTarget[], sums: readonly Field[]): Statement {
  const params: SqlValue[] = [];
  const parts = targets.map((target, point) => {
    const where = [organizationTest(target, params), ...query.conditions.map((c) => condition(c, params))].join(' AND ');
    const totals = sums.map((f) => `, CAST(sum(${ident(f.column)}) AS VARCHAR)`).join('');
    return `SELECT ${point} AS "_point", count(*) AS "_count"${totals} FROM ${target.relation} WHERE ${where}`;
  });
  return { sql: `${parts.join('\nUNION ALL ')}\nORDER BY "_point"`, params };
}

/** What a notification's threshold measures: the matching rows, or the sum of a number field over them. */
export type Measure = { kind: 'count' } | { kind: 'sum'; field: Field };

export interface CompiledNotificationCheck {
  /**
   * One row: how many rows were added, removed and changed in the notifications' sense, then each measure
   * before and after, in the order given (a sum over no rows is null).
   */
  counts: Statement;
  /**
   * Up to `limit` rows of each kind in the query's order (as of `to`; a removed row as of `from`): the kind,
   * the row's id, then the JSON values of the view's identifying fields.
   */
  rows: Statement;
  /** The identifying fields whose values `rows` carries, in order. */
  identifying: Field[];
}

/**
 * A saved query checked between two snapshots for its notifications (docs/notifications.md, "Triggers"): a
 * row is added when the query matches it in `to` and did not in `from` (a new row, or one that changed into
 * the query), removed the other way round, and changed when the query matches it in both and a value of
 * the view differs. Unlike /changes, a row that only moved into or out of the filter is added or removed.
 */
export function compileNotificationCheck(query: Query, from: CompileTarget, to: CompileTarget, measures: readonly Measure[], limit: number): CompiledNotificationCheck {
  const json = ident(ROW_JSON_COLUMN);
  const identifying = query.view.identifying.map((name) => query.view.fields.find((f) => f.name === name)!);
  const matched = (params: SqlValue[], extra: readonly string[]) => {
    const carried = [...new Set([...sortColumns(query), ...extra])];
    const merged = carried.map((c) => `CASE WHEN t."_id" IS NULL OR NOT coalesce(t."_match", false) THEN f.${ident(c)} ELSE t.${ident(c)} END AS ${ident(c)}`);
    return `WITH f AS (${side(query, from, params, carried)}),
t AS (${side(query, to, params, carried)}),
d AS (
  SELECT coalesce(t."_id", f."_id") AS "_id",
    coalesce(f."_match", false) AS "_in_from", coalesce(t."_match", false) AS "_in_to",
    CASE WHEN coalesce(t."_match", false) AND NOT coalesce(f."_match", false) THEN 'added'
      WHEN coalesce(f."_match", false) AND NOT coalesce(t."_match", false) THEN 'removed'
      WHEN f.${json} <> t.${json} THEN 'changed' END AS "_change",
    CASE WHEN coalesce(t."_match", false) THEN t.${json} ELSE f.${json} END AS "_shown"${merged.map((c) => `,\n    ${c}`).join('')}${
      extra.map((c) => `,\n    f.${ident(c)} AS ${ident(`_from_${c}`)}, t.${ident(c)} AS ${ident(`_to_${c}`)}`).join('')}
  FROM f FULL OUTER JOIN t ON f."_id" = t."_id"
  WHERE coalesce(f."_match", false) OR coalesce(t."_match", false)
)`;
  };
  const countParams: SqlValue[] = [];
  const summed = [...new Set(measures.flatMap((m) => (m.kind === 'sum' ? [m.field.column] : [])))];
  const sides = measures.map((m) => (m.kind === 'count'
    ? 'count(*) FILTER (WHERE "_in_from"), count(*) FILTER (WHERE "_in_to")'
    : `sum(${ident(`_from_${m.field.column}`)}) FILTER (WHERE "_in_from"), sum(${ident(`_to_${m.field.column}`)}) FILTER (WHERE "_in_to")`));
  const counts = `${matched(countParams, summed)}
SELECT count(*) FILTER (WHERE "_change" = 'added'), count(*) FILTER (WHERE "_change" = 'removed'),
  count(*) FILTER (WHERE "_change" = 'changed')${sides.map((x) => `, ${x}`).join('')}
FROM d`;
  const rowParams: SqlValue[] = [];
  const orderBy = [...query.sort.flatMap(orderTerms), '"_id" ASC'].join(', ');
  const rows = `${matched(rowParams, [])},
ranked AS (SELECT *, row_number() OVER (PARTITION BY "_change" ORDER BY ${orderBy}) AS "_rank" FROM d WHERE "_change" IS NOT NULL)
SELECT "_change", "_id"${identifying.map((f) => `, json_extract("_shown", '$[${f.index}]')`).join('')}
FROM ranked WHERE "_rank" <= ?
ORDER BY "_change", "_rank"`;
  rowParams.push(BigInt(limit));
  return { counts: { sql: counts, params: countParams }, rows: { sql: rows, params: rowParams }, identifying };
}
