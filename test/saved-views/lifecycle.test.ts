// Saved views, lifecycle over real HTTP (interface §5–§8;
// docs/decisions.md "Saved views"): create in both layouts, filter and fields shapes, content types;
// show, list (order, paging, links, meta), update (whole replacement, trimming, timestamps), delete
// (returns the deleted view, then every route of it is the 404 of an unknown organization).
//
// Every expected value is written down from the rules (and, for queries, from what the request sent),
// never copied from a server answer.
import { expect } from 'chai';
import { ORG } from '../fixtures/small-source.js';
import { openStateStore } from '../../src/store/open-store.js';
import { startHarness, type Harness } from '../helpers/harness.js';

const VIEWS = `/api/v2/organizations/${ORG}/explorer/views`;
const JSONAPI = 'application/vnd.api+json';
const STAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ID = /^sq-[A-Za-z0-9]{16}$/;
const NOT_FOUND = {
  errors: [{ status: '404', title: 'not found', detail: 'The organization or resource does not exist, or you are not authorized to access it.' }],
};

interface Answer { status: number; headers: Headers; text: string; body: any }

describe('saved views: lifecycle (docs/interface.md, interface §8)', function () {
  this.timeout(30_000);
  let h: Harness;
  before(async () => { h = await startHarness({ env: { RATE_LIMIT_MAX: '100000' } }); });
  after(async () => { await h.close(); });

  async function call(method: string, path: string, body?: unknown, opts: { token?: string | null; contentType?: string } = {}): Promise<Answer> {
    const headers: Record<string, string> = {};
    let payload: string | undefined;
    if (body !== undefined) {
      headers['Content-Type'] = opts.contentType ?? JSONAPI;
      payload = typeof body === 'string' ? body : JSON.stringify(body);
    }
    const res = await h.request(path, { method, headers, body: payload, token: opts.token === undefined ? h.tokens.org : opts.token });
    const text = await res.text();
    let parsed: any;
    try { parsed = text === '' ? undefined : JSON.parse(text); } catch { parsed = undefined; }
    return { status: res.status, headers: res.headers, text, body: parsed };
  }

  /** The whole resource object: keys, id shape, type, attributes (timestamps checked separately). */
  function expectView(data: any, name: string, queryType: string, query: Record<string, unknown>): void {
    expect(Object.keys(data).sort()).to.deep.equal(['attributes', 'id', 'type']);
    expect(data.id).to.match(ID);
    expect(data.type).to.equal('explorer-saved-queries');
    const a = data.attributes;
    expect(Object.keys(a).sort()).to.deep.equal(['created-at', 'name', 'query', 'query-type', 'updated-at']);
    expect(a.name).to.equal(name);
    expect(a['query-type']).to.equal(queryType);
    expect(a.query).to.deep.equal(query);
    for (const k of ['created-at', 'updated-at']) {
      expect(a[k]).to.match(STAMP);
      expect(new Date(a[k]).toISOString()).to.equal(a[k]); // a real instant, printed in UTC
    }
  }

  let serial = 0;
  const uniqueName = (prefix: string) => `${prefix} ${++serial}`;
  /** Ids of every view created in this file and not deleted, for the list tests. */
  const live = new Set<string>();

  async function create(body: unknown, contentType?: string): Promise<Answer> {
    const res = await call('POST', VIEWS, body, contentType === undefined ? {} : { contentType });
    if (res.status === 201) live.add(res.body.data.id);
    return res;
  }

  describe('create (POST, 201)', () => {
    it('accepts the documented flat layout and answers {data: <saved view>} with equal timestamps', async () => {
      const query = {
        filter: [{ field: 'workspace_name', operator: 'contains', value: ['pay'] }],
        fields: ['workspace_name', 'drifted'],
        sort: ['-workspace_name'],
      };
      const before = Date.now();
      const res = await create({ data: { name: 'Payments workspaces', query_type: 'workspaces', query } });
      const after = Date.now();
      expect(res.status).to.equal(201);
      expect(res.headers.get('content-type')).to.equal(JSONAPI);
      expect(Object.keys(res.body)).to.deep.equal(['data']);
      expectView(res.body.data, 'Payments workspaces', 'workspaces', { type: 'workspaces', ...query });
      const a = res.body.data.attributes;
      expect(a['created-at']).to.equal(a['updated-at']);
      const t = Date.parse(a['created-at']);
      expect(t).to.be.at.least(before - 1000).and.at.most(after + 1000);
    });

    for (const typeKey of ['query-type', 'query_type']) {
      it(`accepts the JSON:API layout with attributes.${typeKey}`, async () => {
        const query = { filter: [{ field: 'version', operator: 'contains', value: ['1.'] }], sort: ['version'] };
        const name = uniqueName(`JSON:API ${typeKey}`);
        const res = await create({ data: { type: 'explorer-saved-queries', attributes: { name, [typeKey]: 'tf_versions', query } } });
        expect(res.status).to.equal(201);
        expectView(res.body.data, name, 'tf_versions', { type: 'tf_versions', ...query });
        expect(res.body.data.attributes['created-at']).to.equal(res.body.data.attributes['updated-at']);
      });
    }

    it('stores a query without fields and sort without those members (they are optional)', async () => {
      const name = uniqueName('bare');
      const res = await create({ data: { name, query_type: 'modules', query: { filter: [] } } });
      expect(res.status).to.equal(201);
      expectView(res.body.data, name, 'modules', { type: 'modules', filter: [] });
    });

    it('accepts query.type when it equals the view type', async () => {
      const name = uniqueName('typed');
      const res = await create({ data: { name, query_type: 'providers', query: { type: 'providers', filter: [] } } });
      expect(res.status).to.equal(201);
      expectView(res.body.data, name, 'providers', { type: 'providers', filter: [] });
    });

    it('stores {"<field>": {"<op>": [...]}} filters in the {field, operator, value} shape, in document order', async () => {
      const name = uniqueName('map filters');
      const filter = [
        { workspace_name: { contains: ['pay'], is_not: ['payments-api'] }, drifted: { is: ['TRUE'] } },
        { field: 'checks_failed', operator: 'lteq', value: ['2'] },
        { workspace_created_at: { is_after: ['2022-01-01'] } },
      ];
      const res = await create({ data: { name, query_type: 'workspaces', query: { filter } } });
      expect(res.status).to.equal(201);
      expectView(res.body.data, name, 'workspaces', {
        type: 'workspaces',
        filter: [
          { field: 'workspace_name', operator: 'contains', value: ['pay'] },
          { field: 'workspace_name', operator: 'is_not', value: ['payments-api'] },
          // values are kept as sent, not folded (docs/decisions.md)
          { field: 'drifted', operator: 'is', value: ['TRUE'] },
          { field: 'checks_failed', operator: 'lteq', value: ['2'] },
          { field: 'workspace_created_at', operator: 'is_after', value: ['2022-01-01'] },
        ],
      });
    });

    it('stores the operator in its canonical spelling: does_not_contain and does+not+contain become "does not contain"', async () => {
      const name = uniqueName('canonical');
      const filter = [
        { field: 'workspace_name', operator: 'does_not_contain', value: ['core'] },
        { project_name: { does_not_contain: ['net'] } },
        { field: 'workspace_name', operator: 'does+not+contain', value: ['job'] },
        { field: 'tags', operator: 'does not contain', value: ['pci'] },
      ];
      const res = await create({ data: { name, query_type: 'workspaces', query: { filter } } });
      expect(res.status).to.equal(201);
      expect(res.body.data.attributes.query.filter).to.deep.equal([
        { field: 'workspace_name', operator: 'does not contain', value: ['core'] },
        { field: 'project_name', operator: 'does not contain', value: ['net'] },
        { field: 'workspace_name', operator: 'does not contain', value: ['job'] },
        { field: 'tags', operator: 'does not contain', value: ['pci'] },
      ]);
    });

    it('stores fields given as a list or as {"<view>": [...]} as a list without duplicates, first occurrence first', async () => {
      const a = await create({ data: { name: uniqueName('fields list'), query_type: 'providers', query: { filter: [], fields: ['name', 'version', 'name', 'workspace_count', 'version'] } } });
      expect(a.status).to.equal(201);
      expect(a.body.data.attributes.query.fields).to.deep.equal(['name', 'version', 'workspace_count']);
      const b = await create({
        data: { type: 'explorer-saved-queries', attributes: { name: uniqueName('fields map'), 'query-type': 'modules', query: { filter: [], fields: { modules: ['source', 'name', 'source'] } } } },
      });
      expect(b.status).to.equal(201);
      expect(b.body.data.attributes.query).to.deep.equal({ type: 'modules', filter: [], fields: ['source', 'name'] });
    });

    it('trims the name before storing it', async () => {
      const res = await create({ data: { name: '  \t Trimmed name  ', query_type: 'workspaces', query: { filter: [] } } });
      expect(res.status).to.equal(201);
      expect(res.body.data.attributes.name).to.equal('Trimmed name');
    });

    for (const contentType of ['application/json', 'application/vnd.api+json', 'application/json; charset=utf-8', 'application/vnd.api+json; charset=utf-8']) {
      it(`accepts Content-Type: ${contentType}`, async () => {
        const name = uniqueName(contentType);
        const res = await create({ data: { name, query_type: 'workspaces', query: { filter: [] } } }, contentType);
        expect(res.status).to.equal(201);
        expectView(res.body.data, name, 'workspaces', { type: 'workspaces', filter: [] });
      });
    }

    it('gives every view a different id', async () => {
      const ids = new Set<string>();
      for (let i = 0; i < 5; i++) {
        const res = await create({ data: { name: uniqueName('id'), query_type: 'workspaces', query: { filter: [] } } });
        expect(res.status).to.equal(201);
        ids.add(res.body.data.id);
      }
      expect(ids.size).to.equal(5);
    });
  });

  describe('show (GET, 200)', () => {
    it('answers {data: <saved view>} equal to what create answered', async () => {
      const created = await create({ data: { name: uniqueName('show'), query_type: 'providers', query: { filter: [{ field: 'registry_type', operator: 'is', value: ['private'] }], sort: ['-workspace_count', 'name'] } } });
      expect(created.status).to.equal(201);
      const res = await call('GET', `${VIEWS}/${created.body.data.id}`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal(JSONAPI);
      expect(res.body).to.deep.equal(created.body);
    });

    it('answers an id that never existed with the 404 of an unknown organization', async () => {
      const unknownOrg = await call('GET', `/api/v2/organizations/no-such-org/explorer/views/sq-AAAAAAAAAAAAAAAA`);
      expect(unknownOrg.status).to.equal(404);
      expect(unknownOrg.body).to.deep.equal(NOT_FOUND);
      for (const id of ['sq-AAAAAAAAAAAAAAAA', 'sq-x', 'not-an-id', '%20']) {
        const res = await call('GET', `${VIEWS}/${id}`);
        expect(res.status, id).to.equal(404);
        expect(res.text, id).to.equal(unknownOrg.text);
      }
    });
  });

  describe('list (GET, 200)', () => {
    const byCreation = (a: any, b: any) => {
      const x = a.attributes['created-at'];
      const y = b.attributes['created-at'];
      if (x !== y) return x < y ? -1 : 1;
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    };
    const link = (n: number, size: number) => `${h.url}${VIEWS}?page%5Bnumber%5D=${n}&page%5Bsize%5D=${size}`;
    const expectedMeta = (n: number, size: number, total: number) => {
      const pages = Math.max(1, Math.ceil(total / size));
      return {
        pagination: {
          'current-page': n, 'page-size': size, 'next-page': n < pages ? n + 1 : null, 'prev-page': n > 1 ? n - 1 : null,
          'total-pages': pages, 'total-count': total,
        },
      };
    };
    const expectedLinks = (n: number, size: number, total: number) => {
      const pages = Math.max(1, Math.ceil(total / size));
      return { self: link(n, size), first: link(1, size), prev: n > 1 ? link(n - 1, size) : null, next: n < pages ? link(n + 1, size) : null, last: link(pages, size) };
    };

    it('orders by created-at, then id (code points), including views with the same created-at', async () => {
      // Three views with one created-at, written in an order that differs from the id order. 'B' (66)
      // sorts before 'a' (97) before 'b' (98) by code point. Written through the store the server uses.
      const store = await openStateStore(h.config);
      const at = '2001-02-03T04:05:06.789Z';
      const query = { type: 'workspaces', filter: [] };
      try {
        for (const id of ['sq-b000000000000000', 'sq-B000000000000000', 'sq-a000000000000000']) {
          await store.createView({ id, organization: ORG, name: `same instant ${id}`, queryType: 'workspaces', query, createdAt: at, updatedAt: at });
          live.add(id);
        }
      } finally { await store.close(); }

      const res = await call('GET', `${VIEWS}?page%5Bsize%5D=100`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal(JSONAPI);
      const data = res.body.data as any[];
      expect(data.map((v) => v.id).sort()).to.deep.equal([...live].sort());
      expect(data.map((v) => v.id)).to.deep.equal([...data].sort(byCreation).map((v) => v.id));
      expect(data.slice(0, 3).map((v) => v.id)).to.deep.equal(['sq-B000000000000000', 'sq-a000000000000000', 'sq-b000000000000000']);
      for (const v of data) expectView(v, v.attributes.name, v.attributes['query-type'], v.attributes.query);
      // each element is what show answers
      const shown = await call('GET', `${VIEWS}/${data[5].id}`);
      expect(shown.body.data).to.deep.equal(data[5]);
    });

    it('pages with page[number] / page[size], with links and meta like queries', async () => {
      const all = (await call('GET', `${VIEWS}?page%5Bsize%5D=100`)).body.data as any[];
      const total = all.length;
      expect(total).to.equal(live.size);
      expect(total).to.be.greaterThan(10);

      const size = 3;
      const pages = Math.ceil(total / size);
      const seen: any[] = [];
      for (let n = 1; n <= pages; n++) {
        const res = await call('GET', `${VIEWS}?page%5Bnumber%5D=${n}&page%5Bsize%5D=${size}`);
        expect(res.status).to.equal(200);
        expect(Object.keys(res.body).sort()).to.deep.equal(['data', 'links', 'meta']);
        expect(res.body.meta).to.deep.equal(expectedMeta(n, size, total));
        expect(res.body.links).to.deep.equal(expectedLinks(n, size, total));
        expect(res.body.data).to.deep.equal(all.slice((n - 1) * size, n * size));
        seen.push(...res.body.data);
      }
      expect(seen).to.deep.equal(all);
    });

    it('defaults to page 1 of 20', async () => {
      const all = (await call('GET', `${VIEWS}?page%5Bsize%5D=100`)).body.data as any[];
      const res = await call('GET', VIEWS);
      expect(res.status).to.equal(200);
      expect(res.body.meta).to.deep.equal(expectedMeta(1, 20, all.length));
      expect(res.body.links).to.deep.equal(expectedLinks(1, 20, all.length));
      expect(res.body.data).to.deep.equal(all.slice(0, 20));
    });

    it('clamps page[size] above 100 to 100', async () => {
      const all = (await call('GET', `${VIEWS}?page%5Bsize%5D=100`)).body.data as any[];
      const res = await call('GET', `${VIEWS}?page%5Bsize%5D=500`);
      expect(res.status).to.equal(200);
      expect(res.body.meta).to.deep.equal(expectedMeta(1, 100, all.length));
      expect(res.body.links).to.deep.equal(expectedLinks(1, 100, all.length));
    });

    it('answers a page past the last with empty data', async () => {
      const total = live.size;
      const n = Math.ceil(total / 4) + 2;
      const res = await call('GET', `${VIEWS}?page%5Bnumber%5D=${n}&page%5Bsize%5D=4`);
      expect(res.status).to.equal(200);
      expect(res.body.data).to.deep.equal([]);
      expect(res.body.meta).to.deep.equal(expectedMeta(n, 4, total));
      expect(res.body.links).to.deep.equal(expectedLinks(n, 4, total));
    });

    it('carries only the two page parameters in links, whatever else is sent', async () => {
      const total = live.size;
      const res = await call('GET', `${VIEWS}?sort=-name&type=workspaces&fields=name&filter%5B0%5D%5Bname%5D%5Bis%5D%5B0%5D=x&page%5Bsize%5D=2&utm=1`);
      expect(res.status).to.equal(200);
      expect(res.body.links).to.deep.equal(expectedLinks(1, 2, total));
      expect(res.body.meta).to.deep.equal(expectedMeta(1, 2, total));
    });

    for (const [query, parameter] of [
      ['page%5Bsize%5D=0', 'page[size]'],
      ['page%5Bsize%5D=-1', 'page[size]'],
      ['page%5Bsize%5D=abc', 'page[size]'],
      ['page%5Bsize%5D=1.5', 'page[size]'],
      ['page%5Bsize%5D=', 'page[size]'],
      ['page%5Bnumber%5D=0', 'page[number]'],
      ['page%5Bnumber%5D=-2', 'page[number]'],
      ['page%5Bnumber%5D=two', 'page[number]'],
      ['page%5Bnumber%5D=1e2', 'page[number]'],
      ['page%5Bnumber%5D=', 'page[number]'],
    ] as const) {
      it(`answers ?${decodeURIComponent(query)} with 400 naming ${parameter}`, async () => {
        const res = await call('GET', `${VIEWS}?${query}`);
        expect(res.status).to.equal(400);
        expect(res.headers.get('content-type')).to.equal(JSONAPI);
        expect(res.body.errors).to.have.length(1);
        expect(res.body.errors[0].status).to.equal('400');
        expect(res.body.errors[0].source).to.deep.equal({ parameter });
      });
    }
  });

  describe('update (PATCH, 200)', () => {
    it('replaces the query whole, trims the name, keeps id, query-type and created-at, moves updated-at', async () => {
      const created = await create({
        data: { name: uniqueName('to update'), query_type: 'workspaces', query: { filter: [{ field: 'drifted', operator: 'is', value: ['true'] }], fields: ['workspace_name'], sort: ['workspace_name'] } },
      });
      expect(created.status).to.equal(201);
      const id = created.body.data.id;
      const createdAt = created.body.data.attributes['created-at'];
      await new Promise((r) => setTimeout(r, 15));

      const newName = uniqueName('updated');
      const res = await call('PATCH', `${VIEWS}/${id}`, { data: { name: `   ${newName} `, query: { filter: [{ checks_failed: { gt: ['0'] } }] } } });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal(JSONAPI);
      expect(Object.keys(res.body)).to.deep.equal(['data']);
      expectView(res.body.data, newName, 'workspaces', { type: 'workspaces', filter: [{ field: 'checks_failed', operator: 'gt', value: ['0'] }] });
      expect(res.body.data.id).to.equal(id);
      const a = res.body.data.attributes;
      expect(a['created-at']).to.equal(createdAt);
      expect(a['updated-at']).to.not.equal(createdAt);
      expect(Date.parse(a['updated-at'])).to.be.greaterThan(Date.parse(createdAt));

      const shown = await call('GET', `${VIEWS}/${id}`);
      expect(shown.status).to.equal(200);
      expect(shown.body).to.deep.equal(res.body);

      // A second update moves updated-at again; created-at still does not move.
      await new Promise((r) => setTimeout(r, 15));
      const again = await call('PATCH', `${VIEWS}/${id}`, { data: { name: newName, query: { filter: [], sort: ['-workspace_updated_at'] } } }, { contentType: 'application/json' });
      expect(again.status).to.equal(200);
      expectView(again.body.data, newName, 'workspaces', { type: 'workspaces', filter: [], sort: ['-workspace_updated_at'] });
      expect(again.body.data.attributes['created-at']).to.equal(createdAt);
      expect(Date.parse(again.body.data.attributes['updated-at'])).to.be.greaterThan(Date.parse(a['updated-at']));
    });

    it('accepts the JSON:API layout (with data.id, as JSON:API clients send it) and both filter and fields shapes', async () => {
      const created = await create({ data: { name: uniqueName('jsonapi update'), query_type: 'modules', query: { filter: [] } } });
      expect(created.status).to.equal(201);
      const id = created.body.data.id;
      const name = uniqueName('jsonapi updated');
      const res = await call('PATCH', `${VIEWS}/${id}`, {
        data: {
          type: 'explorer-saved-queries', id,
          attributes: { name, query: { filter: [{ name: { does_not_contain: ['app'] } }], fields: { modules: ['name', 'version', 'name'] }, sort: ['-version'] } },
        },
      }, { contentType: 'application/vnd.api+json; charset=utf-8' });
      expect(res.status).to.equal(200);
      expectView(res.body.data, name, 'modules', {
        type: 'modules',
        filter: [{ field: 'name', operator: 'does not contain', value: ['app'] }],
        fields: ['name', 'version'],
        sort: ['-version'],
      });
      expect(res.body.data.attributes['created-at']).to.equal(created.body.data.attributes['created-at']);
    });

    it('keeps the list position (created-at) of an updated view', async () => {
      const all = (await call('GET', `${VIEWS}?page%5Bsize%5D=100`)).body.data as any[];
      const target = all[4];
      const res = await call('PATCH', `${VIEWS}/${target.id}`, { data: { name: target.attributes.name, query: { filter: [] } } });
      expect(res.status).to.equal(200);
      const after = (await call('GET', `${VIEWS}?page%5Bsize%5D=100`)).body.data as any[];
      expect(after.map((v) => v.id)).to.deep.equal(all.map((v) => v.id));
    });
  });

  describe('delete (DELETE, 200)', () => {
    it('answers the deleted view, then every route of it is the 404 of an unknown organization', async () => {
      const created = await create({
        data: { name: uniqueName('to delete'), query_type: 'tf_versions', query: { filter: [{ field: 'workspace_count', operator: 'gteq', value: ['1'] }] } },
      });
      expect(created.status).to.equal(201);
      const id = created.body.data.id;
      const shown = await call('GET', `${VIEWS}/${id}`);

      const res = await call('DELETE', `${VIEWS}/${id}`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal(JSONAPI);
      expect(res.body).to.deep.equal(shown.body);
      live.delete(id);

      const unknownOrg = await call('GET', `/api/v2/organizations/no-such-org/explorer/views/${id}`);
      expect(unknownOrg.status).to.equal(404);
      expect(unknownOrg.body).to.deep.equal(NOT_FOUND);
      const after = [
        await call('GET', `${VIEWS}/${id}`),
        await call('PATCH', `${VIEWS}/${id}`, { data: { name: 'resurrected', query: { filter: [] } } }),
        await call('DELETE', `${VIEWS}/${id}`),
        await call('GET', `${VIEWS}/${id}/results`),
        await call('GET', `${VIEWS}/${id}/csv`),
        await call('GET', `${VIEWS}/${id}/export/csv`),
      ];
      for (const [i, r] of after.entries()) {
        expect(r.status, `request ${i}`).to.equal(404);
        expect(r.text, `request ${i}`).to.equal(unknownOrg.text);
        expect(r.headers.get('content-type'), `request ${i}`).to.equal(JSONAPI);
      }

      const list = (await call('GET', `${VIEWS}?page%5Bsize%5D=100`)).body.data as any[];
      expect(list.map((v) => v.id)).to.not.include(id);
      expect(list.map((v) => v.id).sort()).to.deep.equal([...live].sort());
    });

    it('frees the name of a deleted view', async () => {
      const name = uniqueName('reusable');
      const first = await create({ data: { name, query_type: 'workspaces', query: { filter: [] } } });
      expect(first.status).to.equal(201);
      expect((await call('DELETE', `${VIEWS}/${first.body.data.id}`)).status).to.equal(200);
      live.delete(first.body.data.id);
      const second = await create({ data: { name, query_type: 'modules', query: { filter: [] } } });
      expect(second.status).to.equal(201);
      expect(second.body.data.id).to.not.equal(first.body.data.id);
    });
  });
});
