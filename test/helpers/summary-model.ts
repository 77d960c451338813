// Summaries computed from model rows by docs/summaries.md, never from the server: the groups of one to three
// fields (a list field by the elements it was joined from, a datetime by its UTC period), counts, sums,
// the order, ids and CSV text.
import { createHash } from 'node:crypto';
import { CONTRACT } from './contract-fields.js';
import { cmpCodePoints, type Model, type Value } from './fixture-model.js';
import { reference, VERSION } from './version-reference.js';

/** A row as a summary sees it: its values, and each list field's elements. */
export interface SummaryRow { attributes: Model; lists: Record<string, string[]> }
export interface ExpectedGroup { id: string; attributes: Record<string, unknown> }

const VERSION_FIELDS = new Set(['version', 'workspace_terraform_version', 'state_version_terraform_version', 'terraform_version']);
const fold = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

/** A JSON time's period, as the first instant of it in UTC (ISO weeks start on Monday). */
export function periodStart(json: string, period: string): string {
  const d = new Date(json);
  const start = new Date(Date.UTC(d.getUTCFullYear(), period === 'year' ? 0 : d.getUTCMonth(), period === 'year' || period === 'month' ? 1 : d.getUTCDate()));
  if (period === 'week') start.setUTCDate(start.getUTCDate() - ((start.getUTCDay() + 6) % 7));
  return start.toISOString().replace('Z', '+00:00');
}

/** A value as the CSV export writes it before quoting: null as '', datetimes in whole seconds. */
export function csvText(value: unknown, datetime: boolean): string {
  if (value === null || value === undefined) return '';
  return datetime ? String(value).replace(/\.\d{3}\+00:00$/, '+00:00') : String(value);
}

/** interface §5 for one field's values, ascending, nulls last (the caller keeps them last when descending). */
function compareValues(view: string, field: string, a: Value, b: Value): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const [x, y] = [String(a), String(b)];
  if (CONTRACT[view]![field] === 'datetime') return cmpCodePoints(x, y);
  if (VERSION_FIELDS.has(field)) {
    const [vx, vy] = [VERSION.test(x), VERSION.test(y)];
    if (vx && vy) return reference(x, y) || cmpCodePoints(x, y);
    if (vx !== vy) return vx ? -1 : 1;
  }
  return cmpCodePoints(fold(x), fold(y)) || cmpCodePoints(x, y);
}

/** Nulls last in both directions; `descending` reverses the rest. Versions before non-versions either way. */
export function compareDirected(view: string, field: string, a: Value, b: Value, descending: boolean): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  if (VERSION_FIELDS.has(field) && VERSION.test(String(a)) !== VERSION.test(String(b))) return VERSION.test(String(a)) ? -1 : 1;
  const c = compareValues(view, field, a, b);
  return descending ? -c : c;
}

export interface SummaryAsk { view: string; groupBy: string[]; sum?: string[]; sort?: string[] }

/** Every group of `rows`, in order. */
export function expectedSummary(rows: SummaryRow[], ask: SummaryAsk): ExpectedGroup[] {
  const { view, groupBy } = ask;
  const sums = ask.sum ?? [];
  const parts = groupBy.map((g) => { const [field, period] = g.split(':'); return { spelling: g, field: field!, period }; });
  const groups = new Map<string, { values: Value[]; count: number; sums: (number | null)[] }>();
  for (const row of rows) {
    // Each group field's values for this row: a list's elements (one null when it has none), else its value.
    const choices = parts.map(({ field, period }) => {
      if (row.lists[field] !== undefined) return row.lists[field]!.length > 0 ? row.lists[field]! : [null];
      const v = row.attributes[field]!;
      return [period && v !== null ? periodStart(String(v), period) : v];
    });
    let combinations: Value[][] = [[]];
    for (const c of choices) combinations = combinations.flatMap((prefix) => c.map((v) => [...prefix, v]));
    for (const values of combinations) {
      const key = JSON.stringify(values);
      const g = groups.get(key) ?? { values, count: 0, sums: sums.map(() => null) };
      g.count += 1;
      sums.forEach((f, j) => {
        const v = row.attributes[f];
        if (typeof v === 'number') g.sums[j] = (g.sums[j] ?? 0) + v;
      });
      groups.set(key, g);
    }
  }
  const sort = ask.sort ?? ['-count', ...parts.map((p) => p.field)];
  const keys = [...sort, ...parts.map((p) => p.field)];
  const list = [...groups.values()].sort((x, y) => {
    for (const key of keys) {
      const descending = key.startsWith('-');
      const name = descending ? key.slice(1) : key;
      let c: number;
      if (name === 'count') c = descending ? y.count - x.count : x.count - y.count;
      else if (name.startsWith('sum_') && sums.includes(name.slice(4))) {
        const j = sums.indexOf(name.slice(4));
        c = compareDirected(view, name, x.sums[j]!, y.sums[j]!, descending);
      } else {
        const i = parts.findIndex((p) => p.field === name);
        c = compareDirected(view, name, x.values[i]!, y.values[i]!, descending);
      }
      if (c !== 0) return c;
    }
    return 0;
  });
  return list.map((g) => {
    const hashed = [view, ...parts.flatMap((p, i) => [p.spelling, csvText(g.values[i], CONTRACT[view]![p.field] === 'datetime')])];
    const id = `sg-${createHash('sha256').update(hashed.join('\n'), 'utf8').digest('hex').slice(0, 16)}`;
    const attributes: Record<string, unknown> = Object.fromEntries(parts.map((p, i) => [p.field.replace(/_/g, '-'), g.values[i]]));
    attributes.count = g.count;
    if (sums.length > 0) attributes.sums = Object.fromEntries(sums.map((f, j) => [f, g.sums[j]]));
    return { id, attributes };
  });
}

/** The CSV export of `groups` (docs/summaries.md): header, then every value quoted. */
export function expectedSummaryCsv(view: string, ask: SummaryAsk, groups: ExpectedGroup[]): string {
  const fields = ask.groupBy.map((g) => g.split(':')[0]!);
  const sums = ask.sum ?? [];
  const header = [...fields, 'count', ...sums.map((f) => `sum_${f}`)].join(',');
  const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;
  const lines = groups.map((g) => [
    ...fields.map((f) => quote(csvText(g.attributes[f.replace(/_/g, '-')], CONTRACT[view]![f] === 'datetime'))),
    quote(String(g.attributes.count)),
    ...sums.map((f) => quote(csvText((g.attributes.sums as Record<string, unknown>)[f], false))),
  ].join(','));
  return [header, ...lines].map((l) => `${l}\n`).join('');
}
