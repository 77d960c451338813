// The row-JSON splitter and the page builder: any flat JSON array DuckDB writes splits back into its
// elements, and a row read from the JSON array gives the same bytes as the same row read from columns.
import { expect } from 'chai';
import fc from 'fast-check';
import { pageJson, splitJsonArray } from '../../workers/page-json.js';

const scalar = fc.oneof(fc.string({ unit: 'binary' }), fc.boolean(), fc.constant(null), fc.integer(), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }));
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
});
