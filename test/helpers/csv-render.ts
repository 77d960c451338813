// JSON:API rows rendered by the CSV rules of interface §6, so that a test can require an export to be
// exactly the JSON answer of the same query: every value double-quoted with `"` doubled, null as "",
// datetimes without their fraction, a header of snake_case names, every line ended by \n.
import { expect } from 'chai';

const JSON_DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+00:00$/;

export function csvCell(value: string | number | boolean | null, datetime: boolean): string {
  if (value === null) return '""';
  let text = String(value);
  if (datetime) {
    expect(text).to.match(JSON_DATETIME);
    text = text.replace(/\.\d{3}\+00:00$/, '+00:00');
  }
  return `"${text.replace(/"/g, '""')}"`;
}

/** `rows` are objects keyed by snake_case field name; `datetimes` names the datetime fields. */
export function csvOf(fields: string[], rows: Record<string, string | number | boolean | null>[], datetimes: ReadonlySet<string>): string {
  return [fields.join(','), ...rows.map((r) => fields.map((f) => csvCell(r[f]!, datetimes.has(f))).join(','))].map((l) => `${l}\n`).join('');
}

/** The `data` of JSON:API pages → the CSV the same query must export (attribute keys back to snake_case). */
export function csvOfJson(data: any[], fields: string[], datetimes: ReadonlySet<string>): string {
  for (const r of data) expect(Object.keys(r.attributes)).to.deep.equal(fields.map((f) => f.replace(/_/g, '-')));
  const rows = data.map((r: any) => Object.fromEntries(fields.map((f) => [f, r.attributes[f.replace(/_/g, '-')]])));
  return csvOf(fields, rows, datetimes);
}
