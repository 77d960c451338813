// The row-JSON splitter and the page builder: any flat JSON array DuckDB writes splits back into its
// elements, and a row read from the JSON array (as bytes, as the worker reads it) gives the same bytes as
// the same row read from columns.
import { expect } from 'chai';
import fc from 'fast-check';
import { openInstance } from '../../src/duckdb/open-instance.js';
import { jsonArrayBounds, pageJson as pageBytes, type PageShape } from '../../workers/page-json.js';

/** The page as text; a row's JSON array given as text is handed over as the bytes DuckDB's BLOB gives. */
const pageJson = (rows: unknown[][], shape: PageShape) =>
  pageBytes(shape.valueIndexes ? rows.map(([id, json, ...rest]) => [id, Buffer.from(json as string), ...rest]) : rows, shape).toString();
const splitJsonArray = (text: string) => {
  const bytes = Buffer.from(text);
  const bounds = jsonArrayBounds(bytes);
  return Array.from({ length: bounds.length / 2 }, (_, i) => bytes.toString('utf8', bounds[2 * i], bounds[2 * i + 1]));
};

// Strings longer than the page builder's short copies as well (page-json.ts SHORT_RANGE).
const scalar = fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary', minLength: 60, maxLength: 300 }), fc.boolean(), fc.constant(null), fc.integer(), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }));
const text = (v: unknown) => (typeof v === 'bigint' ? v.toString() : JSON.stringify(v));

describe('row JSON', () => {
  it('splits any flat JSON array into the texts of its elements', () => {
    fc.assert(fc.property(fc.array(scalar, { maxLength: 12 }), (values) => {
      const array = `[${values.map(text).join(',')}]`;
      expect(splitJsonArray(array)).to.deep.equal(values.map(text));
    }), { numRuns: 500 });
  });

  it('builds the same page from the row JSON as from columns, exact beyond 2^53', () => {
    fc.assert(fc.property(fc.array(fc.tuple(fc.string(), scalar, scalar), { minLength: 1, maxLength: 5 }), (rows) => {
      const shape = { rowType: 'visibility-x', attributes: ['b', 'a'] };
      const fromColumns = pageJson(rows.map(([id, a, b]) => [id, b, a] as never), shape);
      const fromJson = pageJson(rows.map(([id, a, b]) => [id, `[${text(a)},${text(b)}]`] as never), { ...shape, valueIndexes: [1, 0] });
      expect(fromJson).to.equal(fromColumns);
    }), { numRuns: 300 });
    expect(pageJson([['i', '[9007199254740993]'] as never], { rowType: 't', attributes: ['n'], valueIndexes: [0] })).to.include('"n":9007199254740993');
  });

  it('re-serializes a string with an escape JSON.stringify would not write', () => {
    const shape = { rowType: 't', attributes: ['s'] };
    for (const [escaped, value] of [['"a\\/b"', 'a/b'], ['"\\u0041"', 'A'], ['"\\u0008"', '\b'], ['"\\u000A"', '\n'], ['"\\u00e9"', 'é']]) {
      expect(pageJson([['i', `[${escaped}]`] as never], { ...shape, valueIndexes: [0] }), escaped).to.equal(pageJson([['i', value] as never], shape));
    }
  });

  it("gives JSON.stringify's bytes for any string as DuckDB's json_array writes it", async () => {
    const db = await openInstance(':memory:');
    const c = await db.connect();
    try {
      const strings = [
        'plain', 'a "quoted" name', 'back\\slash', 'ends with \\', '\\"', 'tab\tand\nnewline', '\u0001\u001f\u007f', '\b\f\r\u000b', 'é ü 日本 🚀',
        '\u2028\u2029', 'slash / and <tag>', ...fc.sample(fc.string({ unit: 'binary', maxLength: 40 }), 300),
      ].filter((s) => !s.includes('\u0000')); // DuckDB's VARCHAR holds no NUL through a bound parameter
      const shape = { rowType: 't', attributes: ['s'] };
      for (const s of strings) {
        const [[json]] = (await c.runAndReadAll('SELECT json_array(?::VARCHAR)::VARCHAR', [s])).getRows() as [[string]];
        expect(pageJson([['i', json] as never], { ...shape, valueIndexes: [0] }), JSON.stringify(s)).to.equal(pageJson([['i', s] as never], shape));
      }
    } finally {
      c.closeSync();
      db.closeSync();
    }
  });
});
