// A page's rows → the JSON:API `data` array, built in the worker so that one byte array crosses to the main
// thread. Rows come in one of two shapes (compile.ts): [id, value per selected field] from the columns, or
// [id, the row's JSON array of every value] from the row-JSON layout. Both give the same bytes: strings
// through JSON.stringify, numbers as DuckDB prints them (exact for BIGINT), booleans and null as they are.
import type { DuckDBValue } from '@duckdb/node-api';

function jsonValue(v: unknown): string {
  switch (typeof v) {
    case 'string': return JSON.stringify(v);
    case 'bigint': return v.toString();
    case 'boolean': return v ? 'true' : 'false';
    case 'number': return Number.isFinite(v) ? String(v) : 'null';
    default: return 'null';
  }
}

/**
 * The elements of a flat JSON array as their own texts (no element is an array or object). A string's end
 * is found with indexOf, which runs at memory speed: lists of workspace names run to megabytes, and a
 * loop over every character cost as much as the query.
 */
export function splitJsonArray(text: string): string[] {
  const out: string[] = [];
  const end = text.length - 1; // the closing bracket
  let i = 1;
  while (i < end) {
    const start = i;
    if (text.charCodeAt(i) === 34) {
      // The closing quote is the first one after an even number of backslashes.
      let quote = i;
      for (;;) {
        quote = text.indexOf('"', quote + 1);
        let b = quote - 1;
        while (text.charCodeAt(b) === 92) b--;
        if ((quote - 1 - b) % 2 === 0) break;
      }
      i = quote + 1;
    }
    const comma = text.indexOf(',', i);
    i = comma === -1 || comma > end ? end : comma;
    out.push(text.slice(start, i));
    i++;
  }
  return out;
}

/** JSON.stringify's escape of each control character: its short form, or \u00xx in lowercase hex. */
const CONTROL_ESCAPES = new Set(Array.from({ length: 32 }, (_, c) => JSON.stringify(String.fromCharCode(c)).slice(1, -1)));

/**
 * Whether every escape in a JSON string's text is one JSON.stringify writes: `\"`, `\\`, or a control
 * character's (`\t`, `\u001f`, …). Then the text is already JSON.stringify's; any other escape (`\/`, a
 * `\u` that JSON.stringify would not write) needs the string re-serialized.
 */
function stringifyEscapesOnly(text: string): boolean {
  for (let i = text.indexOf('\\'); i !== -1; i = text.indexOf('\\', i + 2)) {
    const next = text.charCodeAt(i + 1);
    if (next === 34 || next === 92) continue;
    const escape = text.slice(i, next === 117 ? i + 6 : i + 2);
    if (!CONTROL_ESCAPES.has(escape)) return false;
    i += escape.length - 2;
  }
  return true;
}

/**
 * One element of the row JSON in the form jsonValue gives the same value. A string whose escapes are all
 * ones JSON.stringify writes is already its text; any other string is re-serialized by JS. Lists of
 * workspace names run to megabytes, and one name with a quote or a tab in it made the whole list a parse and
 * a stringify: parsing only when needed matters.
 */
const element = (text: string) => (text.charCodeAt(0) === 34 && !stringifyEscapesOnly(text) ? JSON.stringify(JSON.parse(text)) : text);

/** The `attributes` object of a row from its JSON array of every value (the row-JSON layout). */
export function rowAttributes(rowJson: string, attributes: readonly string[], valueIndexes: readonly number[]): string {
  const values = splitJsonArray(rowJson);
  return `{${attributes.map((a, i) => `${JSON.stringify(a)}:${element(values[valueIndexes[i]!]!)}`).join(',')}}`;
}

export interface PageShape {
  rowType: string;
  attributes: string[];
  valueIndexes?: number[];
}

export function pageJson(rows: DuckDBValue[][], shape: PageShape): string {
  const prefix = `,"type":${JSON.stringify(shape.rowType)},"attributes":{`;
  const keys = shape.attributes.map((a, i) => `${i === 0 ? '' : ','}${JSON.stringify(a)}:`);
  let json = '[';
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    let out = `${r === 0 ? '' : ','}{"id":${jsonValue(row[0])}${prefix}`;
    if (shape.valueIndexes) {
      const values = splitJsonArray(row[1] as string);
      for (let i = 0; i < keys.length; i++) out += keys[i] + element(values[shape.valueIndexes[i]!]!);
    } else {
      for (let i = 0; i < keys.length; i++) out += keys[i] + jsonValue(row[i + 1]);
    }
    json += out + '}}';
  }
  return json + ']';
}
