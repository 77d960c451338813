// Summary → SQL (docs/summaries.md). Pure, like compile.ts, whose pieces it reuses: the same organization
// test and conditions select the rows, the same order terms rank the groups, the same JSON and CSV text
// write their values. A list field is grouped by the elements stored beside its text (catalog.ts
// membersColumn), never by splitting the text again.
import { createHash } from 'node:crypto';
import { membersColumn, versionKeyColumn } from '../catalog/catalog.js';
import type { Field } from '../catalog/types.js';
import { condition, csvText, exportSelect, foldSql, typedValueSql, type ExportFormat, jsonValueSql, keyColumns, keysetAfter, organizationTest, sortTermsOver, termSql, type CompileTarget, type SortTerm, type SqlValue } from './compile.js';
import type { GroupKey, Period, Summary, SummarySortKey } from './summary.js';
import { ident } from '../duckdb/sql.js';

interface Statement { sql: string; params: SqlValue[] }

export interface CompiledSummary {
  /**
   * The page of groups, with the summary's totals riding on it: every row starts with the number of groups
   * and of matching rows, then each group value as CSV text (for its id: summaryGroupId), each in its JSON
   * form, its count and each sum as JSON number text (on a cursor page, then each sort term's value). A page
   * past the end has no rows: `totals` then gives the two numbers.
   */
  page: Statement;
  /** One row: the number of groups and of matching rows. */
  totals: Statement;
  /** Every group in the export's format: each group value, the count, then each sum. */
  export: Statement;
}

/** date_trunc's part for each period, written from this table, never from the request. */
const PERIOD_PART: Record<Period, string> = { day: `'day'`, week: `'week'`, month: `'month'`, year: `'year'` };

const group = (i: number) => ident(`_g${i}`);
const versionKey = (i: number) => ident(`_k${i}`);
const total = (j: number) => ident(`_s${j}`);
const summed = (j: number) => ident(`_sum${j}`);

/** The test that selects a summary's rows, as a query's: its organization, then each condition. */
const matching = (summary: Summary, target: CompileTarget, params: SqlValue[]) =>
  [organizationTest(target, params), ...summary.query.conditions.map((c) => condition(c, params))].join('\n  AND ');

/**
 * The matching rows, one per combination of their groups' values: each group value (a period's first
 * instant for a datetime; one element of a list, each list unnested in a query of its own, so that two lists
 * give every combination of their elements where one SELECT would pair them), the version order key of a
 * version field, and each summed value.
 */
function groupedRows(summary: Summary, target: CompileTarget, params: SqlValue[]): string {
  const { groups, sums } = summary;
  const where = matching(summary, target, params);
  const columns = groups.flatMap((g, i) => {
    const column = ident(g.field.column);
    if (g.field.list) return [`${ident(membersColumn(g.field.column))} AS ${ident(`_l${i}`)}`];
    const value = g.period ? `date_trunc(${PERIOD_PART[g.period]}, ${column})` : column;
    return [`${value} AS ${group(i)}`, ...(g.field.version ? [`${ident(versionKeyColumn(g.field.column))} AS ${versionKey(i)}`] : [])];
  });
  const rows = `SELECT ${[...columns, ...sums.map((f, j) => `${ident(f.column)} AS ${total(j)}`)].join(', ')}\nFROM ${target.relation}\nWHERE ${where}`;
  // A row whose list is null counts once, in the null group.
  return groups.reduce((inner, g, i) => (!g.field.list ? inner
    : `SELECT * EXCLUDE (${ident(`_l${i}`)}), unnest(coalesce(${ident(`_l${i}`)}, [NULL::VARCHAR])) AS ${group(i)}\nFROM (${inner})`), rows);
}

/**
 * The order of the groups: the requested keys, then every group field ascending, nulls last. The group
 * fields' terms tell every two groups apart, so the order is total, as a cursor page needs.
 */
export function summaryTerms(summary: Summary): SortTerm[] {
  const groupTerms = (g: GroupKey, i: number, descending: boolean) =>
    sortTermsOver(g.field, descending, { value: group(i), folded: g.field.type === 'string' ? foldSql(group(i)) : group(i), versionKey: versionKey(i) });
  const terms = (key: SummarySortKey): SortTerm[] => {
    if (key.by === 'count') return [{ expr: '"_count"', descending: key.descending, type: 'BIGINT' }];
    if (key.by === 'sum') return [{ expr: summed(key.index), descending: key.descending, type: 'HUGEINT' }];
    return groupTerms(summary.groups[key.index]!, key.index, key.descending);
  };
  const all = [...summary.sort.flatMap(terms), ...summary.groups.flatMap((g, i) => groupTerms(g, i, false))];
  // A term already ordered by does not order again (a group sorted ascending, then every group).
  return all.filter((t, i) => all.findIndex((u) => u.expr === t.expr) === i);
}

/** A group value as the CSV export writes it, unquoted (null as ''): also what a group's id hashes (summaryGroupId). */
const csvValue = (g: GroupKey, i: number) => csvText(g.field, group(i));

export function compileSummary(summary: Summary, target: CompileTarget, format: ExportFormat = 'csv'): CompiledSummary {
  const { query, groups, sums } = summary;
  const terms = summaryTerms(summary);
  const order = `ORDER BY ${terms.map(termSql).join(', ')}`;
  const after = query.page.after;
  const keys = groups.flatMap((g, i) => [group(i), ...(g.field.version ? [versionKey(i)] : [])]);
  const aggregates = ['count(*) AS "_count"', ...sums.map((_, j) => `sum(${total(j)}) AS ${summed(j)}`)];
  const grouped = (params: SqlValue[]) => `WITH r AS (${groupedRows(summary, target, params)}),
s AS (SELECT ${[...keys, ...aggregates].join(', ')} FROM r GROUP BY ${keys.join(', ')})`;
  // Without a list, every matching row is in exactly one group; with one, a row may be in several or (with
  // an empty list) in the null group, so the matching rows are counted apart.
  const list = groups.some((g) => g.field.list);
  const matched = (params: SqlValue[], total: string) => {
    if (!list) return total;
    return `(SELECT count(*) FROM ${target.relation} WHERE ${matching(summary, target, params)})`;
  };

  // The totals ride on the page's rows as windows over every group, counted before LIMIT, and the page is the
  // statement's own top level: one statement, no join of totals and page and no query around the page
  // (docs/performance.md, "Summaries: totals on the page's rows"). Each group's CSV values come back for its id.
  // A cursor page (`after`) counts in a subquery, so that its WHERE leaves the windows every group; it
  // returns each term's value after the row's, and one row more than its size when another follows.
  const pageParams: SqlValue[] = [];
  const withGroups = grouped(pageParams);
  const windows = (rows: string) => `count(*) OVER () AS "_groups", ${rows} AS "_rows"`;
  const values = [
    ...groups.map((g, i) => `${csvValue(g, i)} AS ${ident(`_c${i}`)}`),
    ...groups.map((g, i) => `${jsonValueSql(g.field, group(i))} AS ${ident(`_v${i}`)}`),
    '"_count"',
    ...sums.map((_, j) => `CAST(${summed(j)} AS VARCHAR)`),
  ];
  let page: string;
  if (after) {
    const counted = `(SELECT *, ${windows(matched(pageParams, 'sum("_count") OVER ()'))} FROM s) AS s`;
    const seek = after.length > 0 ? `\nWHERE ${keysetAfter(terms, after, pageParams)}` : '';
    page = `${withGroups}\nSELECT "_groups", "_rows",\n  ${[...values, ...keyColumns(terms)].join(', ')}\nFROM ${counted}${seek}\n${order}\nLIMIT ? OFFSET ?`;
    pageParams.push(BigInt(query.page.size + 1), 0n);
  } else {
    page = `${withGroups}\nSELECT ${windows(matched(pageParams, 'sum("_count") OVER ()'))},\n  ${values.join(', ')}\nFROM s\n${order}\nLIMIT ? OFFSET ?`;
    pageParams.push(BigInt(query.page.size), BigInt(query.page.number - 1) * BigInt(query.page.size));
  }

  const totalsParams: SqlValue[] = [];
  const withTotals = grouped(totalsParams);
  const totals = `${withTotals}
SELECT count(*) AS "_groups", ${matched(totalsParams, 'coalesce(sum("_count"), 0)')} AS "_rows" FROM s`;

  const exportParams: SqlValue[] = [];
  const exportValues = format === 'csv'
    ? [...groups.map(csvValue), 'CAST("_count" AS VARCHAR)', ...sums.map((_, j) => `coalesce(CAST(${summed(j)} AS VARCHAR), '')`)]
    : [...groups.map((g, i) => typedValueSql(g.field.type, format, group(i))), typedValueSql('number', format, '"_count"'), ...sums.map((_, j) => typedValueSql('number', format, summed(j)))];
  const exported = `${grouped(exportParams)}
${exportSelect(format, exportValues, summaryColumns(summary), `FROM s\n${order}`)}`;
  return { page: { sql: page, params: pageParams }, totals: { sql: totals, params: totalsParams }, export: { sql: exported, params: exportParams } };
}

/**
 * A group's id (docs/summaries.md): `sg-` and the first 16 hex digits of the SHA-256 of the view's name, then
 * each group field's spelling in `group_by` and its value as the CSV export writes it, joined by line feeds.
 */
export function summaryGroupId(summary: Summary, csvValues: readonly string[]): string {
  const text = [summary.query.view.name, ...summary.groups.flatMap((g, i) => [g.spelling, csvValues[i]!])].join('\n');
  return `sg-${createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16)}`;
}

/** The columns of a summary export, as its CSV header names them: the group fields without their periods, count, then sum_<field>. */
export const summaryColumns = (summary: Summary) => [...summary.groups.map((g) => g.field.name), 'count', ...summary.sums.map((f: Field) => `sum_${f.name}`)];
