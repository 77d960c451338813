// Queries across organizations (docs/access.md) as the parser and the pure compiler make them, without a
// database: organization_name first in every view, the order and its ties, and the snapshot's test of the
// organizations reached in place of one organization's key.
import { expect } from 'chai';
import { catalogFor } from '../../src/catalog/catalog.js';
import { compileQuery, queryTerms } from '../../src/query/compile.js';
import { parseQueryParameters } from '../../src/query/parse-query.js';
import { decodeQueryString } from '../../src/query/query-string.js';

const across = (raw: string) => parseQueryParameters('terraform', decodeQueryString(raw), true).query;

describe('queries across organizations: parsing and compiling', () => {
  it('puts organization_name first in every view, over the hidden column where the view has no field of its own', () => {
    for (const view of catalogFor().views) {
      const a = catalogFor().across(view.name)!;
      expect(a.fields[0]!.name, view.name).to.equal('organization_name');
      expect(a.fields.slice(1).map((f) => f.name)).to.deep.equal(view.fields.filter((f) => f.name !== 'organization_name').map((f) => f.name));
      expect(a.fields[0]!.column).to.equal(view.field('organization_name') ? 'organization_name' : '_org');
      expect(a.defaultSort).to.deep.equal(['organization_name', ...view.defaultSort]);
    }
  });

  it('always returns organization_name, first, whatever fields name', () => {
    expect(across('type=providers&fields=version,name').fields.map((f) => f.name)).to.deep.equal(['organization_name', 'version', 'name']);
    expect(across('type=providers&fields=version,organization_name').fields.map((f) => f.name)).to.deep.equal(['organization_name', 'version']);
    expect(() => parseQueryParameters('terraform', decodeQueryString('type=providers&fields=organization_name'))).to.throw(/not a field of the providers view/);
  });

  it('orders by organization_name, then the view\'s own order, by default; breaks a sort\'s ties by organization_name', () => {
    const keys = (raw: string) => across(raw).sort.map((k) => `${k.descending ? '-' : ''}${k.field.name}`);
    expect(keys('type=modules')).to.deep.equal(['organization_name', 'name', '-version']);
    expect(keys('type=modules&sort=-workspace_count')).to.deep.equal(['-workspace_count', 'organization_name']);
    expect(keys('type=modules&sort=version,-organization_name')).to.deep.equal(['version', '-organization_name']);
    // Sorted by organization alone: each organization's rows keep the view's default order.
    expect(keys('type=modules&sort=-organization_name')).to.deep.equal(['-organization_name', 'name', '-version']);
  });

  it('compiles the snapshot\'s organization test verbatim, compares the organization name folded, and binds no organization', () => {
    const q = across('type=resources&filter[0][organization_name][contains][0]=ACME&sort=-organization_name');
    const c = compileQuery(q, { relation: 'rel', organization: '', organizationFilter: '"_org_key" IN (3, 7)' });
    expect(c.page.sql).to.contain('"_org_key" IN (3, 7)');
    expect(c.page.sql).to.not.contain('"_org_key" = CAST');
    expect(c.page.params).to.deep.equal(['acme', 20n, 0n]); // the folded filter value, then LIMIT and OFFSET
    // No stored folded copy of the hidden column: it is folded where it is compared.
    expect(c.page.sql).to.not.contain('_org__f');
    expect(c.page.sql).to.match(/contains\(CASE WHEN strlen\("_org"\) = length\("_org"\) THEN lower\("_org"\)/);
    expect(queryTerms(q).map((t) => t.expr).at(-1)).to.equal('"_id"');
    const exported = compileQuery(q, { relation: 'rel', organization: '', organizationFilter: 'true' }, 'csv');
    expect(exported.export.sql.split('\n')[0]).to.match(/^SELECT coalesce\(CAST\("_org" AS VARCHAR\), ''\) AS "_out0"/);
  });
});
