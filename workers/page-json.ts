// A page's rows → the JSON:API `data` array, built in the worker so that one byte array crosses to the main
// thread. Rows come in one of two shapes (compile.ts): [id, value per selected field] from the columns, or
// [id, the row's JSON array of every value, as UTF-8 bytes] from the row-JSON layout. Both give the same
// bytes: strings through JSON.stringify, numbers as DuckDB prints them (exact for BIGINT), booleans and null
// as they are.
//
// The row JSON stays bytes from DuckDB's vector to the socket: its elements are sliced out by position and
// copied once into the body. Decoding it into JS strings and encoding the page back cost more than the query
// on a page of long workspace-name lists (C: 692 KB, docs/performance.md).
import type { DuckDBBlobVector, DuckDBMaterializedResult, DuckDBValue } from '@duckdb/node-api';

function jsonValue(v: unknown): string {
  switch (typeof v) {
    case 'string': return JSON.stringify(v);
    case 'bigint': return v.toString();
    case 'boolean': return v ? 'true' : 'false';
    case 'number': return Number.isFinite(v) ? String(v) : 'null';
    default: return 'null';
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const U = 0x75;

/**
 * The [start, end) offsets of each element of a flat JSON array (no element is an array or object), in
 * pairs. A string's end is found with indexOf, which runs at memory speed: lists of workspace names run to
 * megabytes, and a loop over every byte cost as much as the query.
 */
export function jsonArrayBounds(bytes: Buffer): number[] {
  const out: number[] = [];
  const end = bytes.length - 1; // the closing bracket
  let i = 1;
  while (i < end) {
    const start = i;
    if (bytes[i] === QUOTE) {
      // The closing quote is the first one after an even number of backslashes.
      let quote = i;
      for (;;) {
        quote = bytes.indexOf(QUOTE, quote + 1);
        let b = quote - 1;
        while (bytes[b] === BACKSLASH) b--;
        if ((quote - 1 - b) % 2 === 0) break;
      }
      i = quote + 1;
    }
    const comma = bytes.indexOf(COMMA, i);
    i = comma === -1 || comma > end ? end : comma;
    out.push(start, i);
    i++;
  }
  return out;
}

/** JSON.stringify's escape of each control character: its short form, or \u00xx in lowercase hex. */
const CONTROL_ESCAPES = new Set(Array.from({ length: 32 }, (_, c) => JSON.stringify(String.fromCharCode(c)).slice(1, -1)));

/**
 * Whether every escape in the JSON string at [start, end) is one JSON.stringify writes: `\"`, `\\`, or a
 * control character's (`\t`, `\u001f`, …). Then the text is already JSON.stringify's; any other escape
 * (`\/`, a `\u` that JSON.stringify would not write) needs the string re-serialized.
 */
function stringifyEscapesOnly(bytes: Buffer, start: number, end: number): boolean {
  for (let i = bytes.indexOf(BACKSLASH, start); i !== -1 && i < end; i = bytes.indexOf(BACKSLASH, i + 2)) {
    const next = bytes[i + 1];
    if (next === QUOTE || next === BACKSLASH) continue;
    const escape = bytes.toString('latin1', i, next === U ? i + 6 : i + 2);
    if (!CONTROL_ESCAPES.has(escape)) return false;
    i += escape.length - 2;
  }
  return true;
}

/**
 * One element of the row JSON, added to `out` in the form jsonValue gives the same value. A string whose
 * escapes are all ones JSON.stringify writes is already its bytes; any other string is re-serialized by JS.
 * Lists of workspace names run to megabytes, and one name with a quote or a tab in it must not make the whole
 * list a parse and a stringify.
 */
function element(out: Pieces, bytes: Buffer, start: number, end: number): void {
  if (bytes[start] !== QUOTE || stringifyEscapesOnly(bytes, start, end)) out.bytes(bytes, start, end);
  else out.text(JSON.stringify(JSON.parse(bytes.toString('utf8', start, end))));
}

const asBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

/** The `attributes` object of a row from its JSON array of every value (the row-JSON layout). */
export function rowAttributes(rowJson: string, attributes: readonly string[], valueIndexes: readonly number[]): string {
  const bytes = Buffer.from(rowJson);
  const bounds = jsonArrayBounds(bytes);
  const out = new Pieces();
  out.text('{');
  attributes.forEach((a, i) => {
    out.text(`${i === 0 ? '' : ','}${JSON.stringify(a)}:`);
    element(out, bytes, bounds[2 * valueIndexes[i]!]!, bounds[2 * valueIndexes[i]! + 1]!);
  });
  out.text('}');
  return out.finish().toString();
}

/**
 * Texts and ranges of bytes gathered, then written once into one buffer of its own (transferable, not pooled):
 * each text encoded in place, each range copied from the bytes it lies in. A page of 20 rows of 35 values is
 * 1,400 ranges; a buffer made for each (a subarray, a Buffer.from of each row's text) cost the worker more
 * than the copies (docs/performance.md, "A page's links and JSON in the worker").
 */
class Pieces {
  private readonly sources: (Buffer | string)[] = [];
  /** Each source's [start, end) (a text's unused). */
  private readonly ranges: number[] = [];
  private length = 0;
  private pending = '';

  text(s: string): void {
    this.pending += s;
  }

  bytes(b: Buffer, start = 0, end = b.length): void {
    this.flush();
    this.sources.push(b);
    this.ranges.push(start, end);
    this.length += end - start;
  }

  finish(): Buffer {
    this.flush();
    const out = Buffer.allocUnsafeSlow(this.length);
    let at = 0;
    for (let i = 0; i < this.sources.length; i++) {
      const source = this.sources[i]!;
      if (typeof source === 'string') {
        at += out.write(source, at);
        continue;
      }
      const start = this.ranges[2 * i]!;
      const end = this.ranges[2 * i + 1]!;
      // A short range byte by byte: a view to copy from costs more than the copy.
      if (end - start <= SHORT_RANGE) for (let k = start; k < end; k++) out[at++] = source[k]!;
      else {
        out.set(source.subarray(start, end), at);
        at += end - start;
      }
    }
    return out;
  }

  private flush(): void {
    if (this.pending === '') return;
    this.sources.push(this.pending);
    this.ranges.push(0, 0);
    this.length += Buffer.byteLength(this.pending);
    this.pending = '';
  }
}

const SHORT_RANGE = 64;

export interface PageShape {
  rowType: string;
  attributes: string[];
  valueIndexes?: number[];
}

/**
 * A page's rows as they come from DuckDB: [id, values…] or [id, row JSON bytes], and, when `countsTotal`,
 * the count of every matching row last. The row JSON is read as bytes (the page selects it as a BLOB),
 * never decoded.
 */
export async function pageRows(result: DuckDBMaterializedResult, rowJson: boolean): Promise<unknown[][]> {
  if (!rowJson) return result.getRows();
  const rows: unknown[][] = [];
  for (let c = 0; c < result.chunkCount; c++) {
    const chunk = result.getChunk(c);
    const columns = Array.from({ length: chunk.columnCount }, (_, i) => chunk.getColumnVector(i));
    const json = columns[1] as DuckDBBlobVector;
    for (let r = 0; r < chunk.rowCount; r++) {
      // A short value is a view of the chunk's own memory, which lives only as long as the chunk: copied.
      const bytes = json.getItemBytes(r)!;
      rows.push(columns.map((v, i) => (i === 1 ? (bytes.length <= 12 ? bytes.slice() : bytes) : v.getItem(r))));
    }
  }
  return rows;
}

/**
 * The JSON:API `data` array of `rows` (pageRows' shapes; a total after the values is not read) as UTF-8
 * bytes, between `head` and `tail` (the rest of the document).
 */
export function pageJson(rows: readonly (readonly unknown[])[], shape: PageShape, head = '', tail = ''): Buffer {
  const out = new Pieces();
  out.text(head);
  const prefix = `,"type":${JSON.stringify(shape.rowType)},"attributes":{`;
  const keyTexts = shape.attributes.map((a, i) => `${i === 0 ? '' : ','}${JSON.stringify(a)}:`);
  const keys = keyTexts.map((k) => Buffer.from(k));
  const close = Buffer.from('}}');
  out.text('[');
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    out.text(`${r === 0 ? '' : ','}{"id":${jsonValue(row[0] as DuckDBValue)}${prefix}`);
    if (shape.valueIndexes) {
      const bytes = asBuffer(row[1] as Uint8Array);
      const bounds = jsonArrayBounds(bytes);
      for (let i = 0; i < keys.length; i++) {
        const at = 2 * shape.valueIndexes[i]!;
        out.bytes(keys[i]!);
        element(out, bytes, bounds[at]!, bounds[at + 1]!);
      }
      out.bytes(close);
    } else {
      for (let i = 0; i < keys.length; i++) out.text(keyTexts[i]! + jsonValue(row[i + 1]));
      out.text('}}');
    }
  }
  out.text(']');
  out.text(tail);
  return out.finish();
}
