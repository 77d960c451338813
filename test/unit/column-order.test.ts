// The explorer page's column order (web/src/query.ts columnOrder) over the catalog's identifying fields.
// The compiled page module is imported as the browser gets it: the page has its own tsconfig and build.
import { expect } from 'chai';
import { catalogFor } from '../../src/catalog/catalog.js';
import { renderWebCatalog } from '../../src/catalog/write-web-catalog.js';

type ColumnOrder = (view: { identifying: string[] }, names: readonly string[]) => string[];
const { columnOrder } = (await import(new URL('../../web/query.js', import.meta.url).href)) as { columnOrder: ColumnOrder };

describe('the page\'s column order', () => {
  const web = renderWebCatalog();

  it('every view declares identifying fields that are its own, and the page\'s catalog carries them', () => {
    for (const view of catalogFor().views) {
      expect(view.identifying, view.name).not.to.be.empty;
      for (const n of view.identifying) expect(view.field(n), `${view.name}.${n}`).not.to.equal(undefined);
      expect(web.views.find((v) => v.name === view.name)!.identifying, view.name).to.deep.equal(view.identifying);
    }
    expect(catalogFor().view('workspaces')!.identifying).to.deep.equal(['workspace_name']);
    expect(catalogFor().view('resources')!.identifying).to.deep.equal(['workspace_name', 'address', 'provider_type']);
  });

  it('puts the identifying fields first, in their declared order, and the rest in catalog order', () => {
    for (const view of web.views) {
      const all = view.fields.map((f) => f.name);
      const order = columnOrder(view, all);
      expect(order.slice(0, view.identifying.length), view.name).to.deep.equal(view.identifying);
      expect(order.slice(view.identifying.length), view.name).to.deep.equal(all.filter((n) => !view.identifying.includes(n)));
      expect([...order].sort(), 'the same fields, once each').to.deep.equal([...all].sort());
    }
  });

  it('adds no field the query does not show, and keeps a query\'s own order for the rest', () => {
    const view = { identifying: ['workspace_name', 'address', 'provider_type'] };
    expect(columnOrder(view, ['name', 'provider_type', 'billable_rum', 'workspace_name'])).to.deep.equal(['workspace_name', 'provider_type', 'name', 'billable_rum']);
    expect(columnOrder(view, ['source_id', 'name'])).to.deep.equal(['source_id', 'name']);
    expect(columnOrder(view, [])).to.deep.equal([]);
    expect(columnOrder({ identifying: [] }, ['b', 'a'])).to.deep.equal(['b', 'a']);
  });

  it('does not depend on the engine name', () => {
    for (const view of catalogFor('opentofu').views) expect(view.identifying, view.name).to.deep.equal(catalogFor().view(view.name)!.identifying);
  });
});
