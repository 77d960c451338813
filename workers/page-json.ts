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

/**
 * One element of the row JSON in the form jsonValue gives the same value. A string without a backslash had
 * no character that either side escapes, so DuckDB's text is already JSON.stringify's; any other string is
 * re-serialized by JS (the two may escape differently). Lists of workspace names run to megabytes: parsing
 * them only when needed matters.
 */
const element = (text: string) => (text.charCodeAt(0) === 34 && text.includes('\\') ? JSON.stringify(JSON.parse(text)) : text);

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
