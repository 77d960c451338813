// interface §5 and §6: a CSV export is in exactly the order of the JSON pages of the same query, for every
// sortable field of every view, both directions. The export once sorted by the formatted text (nulls
// first, "10" before "2"); the fixture has nulls in every kind of field and the generated sample has
// numbers of one and of several digits, and it runs under a renamed engine so that fields whose API name
// differs from their stored column are covered too.
import { expect } from 'chai';
import { catalogFor } from '../../src/catalog/catalog.js';
import { writeSample } from '../../src/sample/sample.js';
import { csvOfJson } from '../helpers/csv-render.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';

async function allPages(h: Harness, query: string): Promise<any[]> {
  const data: any[] = [];
  for (let page = 1; ; page++) {
    const res = await h.explorer(`?${query}&page%5Bsize%5D=100&page%5Bnumber%5D=${page}`);
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).to.equal(200);
    data.push(...body.data);
    if (body.meta.pagination['next-page'] === null) return data;
  }
}

function orderSuite(title: string, engine: string, writeSource?: (dir: string) => unknown) {
  describe(title, function () {
    this.timeout(120_000);
    let h: Harness;
    before(async () => { h = await startHarness({ env: { EXPLORER_ENGINE: engine }, ...(writeSource ? { writeSource } : {}) }); });
    after(async () => { await h?.close(); });

    for (const view of catalogFor(engine).views) {
      const fields = view.fields.map((f) => f.name);
      const datetimes = new Set(view.fields.filter((f) => f.type === 'datetime').map((f) => f.name));
      it(`${view.name}: the CSV of every sort (${fields.length} fields × 2 directions) is the JSON order`, async () => {
        let numbersSeen = false;
        const sorts = view.fields.flatMap((field) => [field.name, `-${field.name}`].map((key) => ({ field, key })));
        // Two sorts at a time, each paging through its answer: the harness pool runs four queries at once.
        let next = 0;
        const check = async () => {
          for (let k = next++; k < sorts.length; k = next++) {
            const { field, key } = sorts[k]!;
            const query = `type=${view.name}&sort=${key}`;
            const data = await allPages(h, query);
            expect(data.length, query).to.be.above(1);
            const res = await h.request(`/api/v2/organizations/acme-corp/explorer/export/csv?${query}`);
            const csv = await res.text();
            expect(res.status, csv.slice(0, 200)).to.equal(200);
            expect(csv, query).to.equal(csvOfJson(data, fields, datetimes));
            if (field.type === 'number') {
              const values = data.map((r) => r.attributes[field.attribute]).filter((v) => v !== null);
              numbersSeen ||= values.some((v) => v >= 10) && values.some((v) => v < 10);
            }
          }
        };
        await Promise.all([check(), check()]);
        if (writeSource && view.fields.some((f) => f.type === 'number')) {
          expect(numbersSeen, 'the sample holds numbers of one and of several digits').to.equal(true);
        }
      });
    }
  });
}

describe('CSV order equals JSON order for every sortable field', () => {
  orderSuite('the hand-made fixture', 'terraform');
  // acme-corp holds 106 of the workspaces: their answers, and those of their resources, run over more than one page.
  orderSuite('a generated sample under EXPLORER_ENGINE=opentofu', 'opentofu',
    (dir) => writeSample(dir, { organizations: 2, workspaces: 160, seed: 3 }));
});
