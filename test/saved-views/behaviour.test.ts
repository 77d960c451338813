// Saved views, behaviour over real HTTP (interface §5, §7, §8, §9, §10): name uniqueness and whole
// updates under concurrency, re-runs equal to the ad-hoc query (JSON and CSV), /results paging and links,
// re-runs after a new snapshot, persistence across a restart, organization isolation and access by token.
//
// acme-corp's workspaces (test/fixtures/small-source.ts): payments-api, Payments-worker, Café "core", net,
// ÉTL-job, network-core; globex has only globex-secret-ws. Expected rows below are worked out from the
// fixture and the ordering rules of interface §5, never copied from a server answer.
import { expect } from 'chai';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { silentLogger } from '../../src/log.js';
import { startServer } from '../../src/server.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { ORG, OTHER_ORG, workspaces, writeSmallSource } from '../fixtures/small-source.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

const JSONAPI = 'application/vnd.api+json';
const viewsOf = (org: string) => `/api/v2/organizations/${org}/explorer/views`;
const VIEWS = viewsOf(ORG);
const NOT_FOUND = {
  errors: [{ status: '404', title: 'not found', detail: 'The organization or resource does not exist, or you are not authorized to access it.' }],
};

interface Answer { status: number; headers: Headers; text: string; body: any; bytes: Buffer }
type Query = { type?: string; filter: any[]; fields?: any; sort?: string[] };

let serial = 0;
const uniqueName = (prefix = 'view') => `${prefix} ${++serial}`;

/** The ad-hoc query string (endpoints 1, 2) equivalent to a stored query: one filter index per entry. */
function adhoc(query: Required<Pick<Query, 'type'>> & Query): string {
  const parts: [string, string][] = [['type', query.type]];
  query.filter.forEach((f: { field: string; operator: string; value: string[] }, i: number) => {
    const values = f.value.length > 0 ? f.value : [''];
    values.forEach((v, j) => parts.push([`filter[${i}][${f.field}][${f.operator}][${j}]`, v]));
  });
  if (query.fields) parts.push(['fields', query.fields.join(',')]);
  if (query.sort) parts.push(['sort', query.sort.join(',')]);
  return parts.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
}

describe('saved views: behaviour (interface §5, §7–§10)', function () {
  this.timeout(60_000);
  let h: Harness;
  /** Base URL of the server under test (changes when the persistence test restarts it). */
  let url: string;
  before(async () => { h = await startHarness({ env: { RATE_LIMIT_MAX: '100000' } }); url = h.url; });
  after(async () => { await h.close(); });

  async function call(method: string, path: string, payload?: unknown, opts: { token?: string | null } = {}): Promise<Answer> {
    const headers: Record<string, string> = {};
    const token = opts.token === undefined ? h.tokens.org : opts.token;
    if (token !== null) headers.Authorization = `Bearer ${token}`;
    let data: string | undefined;
    if (payload !== undefined) {
      headers['Content-Type'] = JSONAPI;
      data = JSON.stringify(payload);
    }
    const res = await fetch(`${url}${path}`, { method, headers, body: data });
    const bytes = Buffer.from(await res.arrayBuffer());
    const text = bytes.toString('utf8');
    let parsed: any;
    try { parsed = text === '' ? undefined : JSON.parse(text); } catch { parsed = undefined; }
    return { status: res.status, headers: res.headers, text, body: parsed, bytes };
  }
  const flat = (name: string, queryType: string, query: Query) => ({ data: { name, query_type: queryType, query } });
  const jsonapi = (name: string, queryType: string, query: Query) => ({ data: { type: 'explorer-saved-queries', attributes: { name, 'query-type': queryType, query } } });
  async function createView(queryType: string, query: Query, name = uniqueName(), token?: string, org = ORG): Promise<any> {
    const res = await call('POST', viewsOf(org), flat(name, queryType, query), { token });
    expect(res.status, res.text).to.equal(201);
    return res.body.data;
  }
  const unknownOrg404 = async () => {
    const res = await call('GET', '/api/v2/organizations/no-such-org/explorer/views/sq-AAAAAAAAAAAAAAAA');
    expect(res.status).to.equal(404);
    expect(res.body).to.deep.equal(NOT_FOUND);
    return res.text;
  };
  const names = (res: Answer, attr = 'workspace-name') => (res.body.data as any[]).map((r) => r.attributes[attr]);

  // ---------------------------------------------------------------------------------------------------
  // Saved queries over each of the four views, with what each must store (filter shape, canonical
  // operator, fields without duplicates, type added).
  const SAVED: { view: string; sent: Query; stored: Query }[] = [
    {
      view: 'workspaces',
      sent: { filter: [{ field: 'workspace_name', operator: 'contains', value: ['pay'] }], sort: ['-workspace_name'] },
      stored: { type: 'workspaces', filter: [{ field: 'workspace_name', operator: 'contains', value: ['pay'] }], sort: ['-workspace_name'] },
    },
    {
      view: 'workspaces',
      sent: { filter: [{ drifted: { is_empty: [] } }], fields: { workspaces: ['workspace_name', 'drifted', 'tags', 'drifted'] }, sort: ['workspace_name'] },
      stored: { type: 'workspaces', filter: [{ field: 'drifted', operator: 'is_empty', value: [] }], fields: ['workspace_name', 'drifted', 'tags'], sort: ['workspace_name'] },
    },
    {
      view: 'workspaces',
      sent: {
        filter: [{ field: 'checks_failed', operator: 'lt', value: ['1'] }, { workspace_created_at: { is_after: ['2022-01-01'] } }],
        fields: ['workspace_created_at', 'workspace_name', 'all_checks_succeeded'],
      },
      stored: {
        type: 'workspaces',
        filter: [{ field: 'checks_failed', operator: 'lt', value: ['1'] }, { field: 'workspace_created_at', operator: 'is_after', value: ['2022-01-01'] }],
        fields: ['workspace_created_at', 'workspace_name', 'all_checks_succeeded'],
      },
    },
    {
      view: 'workspaces',
      sent: { filter: [{ workspace_name: { does_not_contain: ['core', 'JOB'] } }] },
      stored: { type: 'workspaces', filter: [{ field: 'workspace_name', operator: 'does not contain', value: ['core', 'JOB'] }] },
    },
    { view: 'workspaces', sent: { filter: [] }, stored: { type: 'workspaces', filter: [] } },
    {
      view: 'tf_versions',
      sent: { filter: [{ field: 'workspace_count', operator: 'gt', value: ['0'] }], sort: ['version'] },
      stored: { type: 'tf_versions', filter: [{ field: 'workspace_count', operator: 'gt', value: ['0'] }], sort: ['version'] },
    },
    {
      view: 'tf_versions',
      sent: { filter: [{ field: 'version', operator: 'contains', value: ['1.'] }], fields: ['version', 'workspaces'] },
      stored: { type: 'tf_versions', filter: [{ field: 'version', operator: 'contains', value: ['1.'] }], fields: ['version', 'workspaces'] },
    },
    {
      view: 'providers',
      sent: { filter: [], sort: ['-workspace_count', 'name'] },
      stored: { type: 'providers', filter: [], sort: ['-workspace_count', 'name'] },
    },
    {
      view: 'providers',
      sent: { filter: [{ field: 'registry_type', operator: 'is', value: ['private'] }] },
      stored: { type: 'providers', filter: [{ field: 'registry_type', operator: 'is', value: ['private'] }] },
    },
    {
      view: 'providers',
      sent: { filter: [{ field: 'name', operator: 'is', value: ['aws', 'internal'] }, { version: { is_not: ['4.67.0'] } }], fields: ['name', 'version', 'workspace_count'] },
      stored: {
        type: 'providers',
        filter: [{ field: 'name', operator: 'is', value: ['aws', 'internal'] }, { field: 'version', operator: 'is_not', value: ['4.67.0'] }],
        fields: ['name', 'version', 'workspace_count'],
      },
    },
    {
      view: 'modules',
      sent: { filter: [{ field: 'name', operator: 'contains', value: ['VPC'] }, { field: 'version', operator: 'is', value: ['5.5.1'] }] },
      stored: { type: 'modules', filter: [{ field: 'name', operator: 'contains', value: ['VPC'] }, { field: 'version', operator: 'is', value: ['5.5.1'] }] },
    },
    {
      view: 'modules',
      sent: { filter: [{ field: 'registry_type', operator: 'is_empty', value: [] }], sort: ['name'], fields: ['name', 'source', 'workspaces'] },
      stored: { type: 'modules', filter: [{ field: 'registry_type', operator: 'is_empty', value: [] }], fields: ['name', 'source', 'workspaces'], sort: ['name'] },
    },
  ];
  const saved: any[] = [];

  describe('re-running a saved view equals the ad-hoc query', () => {
    before(async () => {
      for (const s of SAVED) saved.push(await createView(s.view, s.sent));
    });

    it('stores each query in the documented shape', () => {
      SAVED.forEach((s, i) => expect(saved[i].attributes.query, `query ${i}`).to.deep.equal(s.stored));
    });

    it('returns the rows the fixture says for some of them', async () => {
      // contains "pay" (case-insensitive), sorted by -workspace_name (folded: payments-worker > payments-api)
      expect(names(await call('GET', `${VIEWS}/${saved[0].id}/results`))).to.deep.equal(['Payments-worker', 'payments-api']);
      // drifted is null for ws-aaa3, ws-aaa4, ws-aaa5; by name: café… < network-core < Étl-job (É after ASCII)
      const empty = await call('GET', `${VIEWS}/${saved[1].id}/results`);
      expect(empty.body.data.map((r: any) => r.attributes)).to.deep.equal([
        { 'workspace-name': 'Café "core", net', drifted: null, tags: 'pci' },
        { 'workspace-name': 'network-core', drifted: null, tags: null },
        { 'workspace-name': 'ÉTL-job', drifted: null, tags: null },
      ]);
      // does not contain "core" nor "job" (any case): payments-api, Payments-worker
      expect(names(await call('GET', `${VIEWS}/${saved[3].id}/results`))).to.deep.equal(['payments-api', 'Payments-worker']);
      // versions ascending: 1.5.7 = v1.5.7 numerically (then exact string), rc before release, non-versions last
      expect(names(await call('GET', `${VIEWS}/${saved[5].id}/results`), 'version')).to.deep.equal(['1.5.7', 'v1.5.7', '1.10.0-rc1', '1.10.0', 'latest']);
      // private providers: internal 0.1.0-beta.11 and 0.1.0-beta.2; default sort name, then -version (11 > 2)
      expect(names(await call('GET', `${VIEWS}/${saved[8].id}/results`), 'version')).to.deep.equal(['0.1.0-beta.11', '0.1.0-beta.2']);
      // modules vpc 5.5.1 used by payments-api and Payments-worker (listed by code point: P < p)
      const vpc = await call('GET', `${VIEWS}/${saved[10].id}/results`);
      expect(vpc.body.data).to.have.length(1);
      expect(vpc.body.data[0].attributes).to.include({ name: 'vpc', version: '5.5.1', 'workspace-count': 2, workspaces: 'Payments-worker, payments-api' });
    });

    it('gives the same data and meta as /explorer for every page size and page', async () => {
      for (const [i, view] of saved.entries()) {
        const q = adhoc(view.attributes.query);
        const first = await call('GET', `/api/v2/organizations/${ORG}/explorer?${q}`);
        expect(first.status, q).to.equal(200);
        const plain = await call('GET', `${VIEWS}/${view.id}/results`);
        expect(plain.status).to.equal(200);
        expect(plain.headers.get('content-type')).to.equal(JSONAPI);
        expect(plain.body.data, q).to.deep.equal(first.body.data);
        expect(plain.body.meta, q).to.deep.equal(first.body.meta);
        for (const size of [1, 2, 3, 100]) {
          const pages = first.body.meta.pagination['total-count'] === 0 ? 1 : Math.ceil(first.body.meta.pagination['total-count'] / size);
          for (let n = 1; n <= pages + 1; n++) {
            const paging = `page%5Bnumber%5D=${n}&page%5Bsize%5D=${size}`;
            const [mine, theirs] = await Promise.all([
              call('GET', `${VIEWS}/${view.id}/results?${paging}`),
              call('GET', `/api/v2/organizations/${ORG}/explorer?${q}&${paging}`),
            ]);
            expect(mine.status, `${i} ${paging}`).to.equal(200);
            expect(mine.body.data, `${i} ${q} ${paging}`).to.deep.equal(theirs.body.data);
            expect(mine.body.meta, `${i} ${q} ${paging}`).to.deep.equal(theirs.body.meta);
          }
        }
      }
    });

    it('gives the same CSV bytes at /csv and /export/csv as /explorer/export/csv, apart from the filename timestamp', async () => {
      for (const view of saved) {
        const q = adhoc(view.attributes.query);
        const type = view.attributes['query-type'];
        const [a, b, c] = await Promise.all([
          call('GET', `${VIEWS}/${view.id}/csv`),
          call('GET', `${VIEWS}/${view.id}/export/csv`),
          call('GET', `/api/v2/organizations/${ORG}/explorer/export/csv?${q}`),
        ]);
        for (const r of [a, b, c]) {
          expect(r.status, q).to.equal(200);
          expect(r.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
          expect(r.headers.get('content-disposition')).to.match(new RegExp(`^attachment; filename="${ORG}-${type}-\\d{8}T\\d{6}Z\\.csv"$`));
        }
        expect(a.bytes.equals(c.bytes), `${q}\n${a.text}\n---\n${c.text}`).to.equal(true);
        expect(b.bytes.equals(c.bytes), q).to.equal(true);
        expect(a.text.endsWith('\n')).to.equal(true);
      }
      // header row of the saved fields, in the saved order
      const csv = await call('GET', `${VIEWS}/${saved[2].id}/csv`);
      expect(csv.text.split('\n')[0]).to.equal('workspace_created_at,workspace_name,all_checks_succeeded');
    });

    it('ignores paging and other parameters on the CSV routes', async () => {
      const view = saved[7];
      const plain = await call('GET', `${VIEWS}/${view.id}/csv`);
      for (const path of [`${VIEWS}/${view.id}/csv`, `${VIEWS}/${view.id}/export/csv`]) {
        const other = await call('GET', `${path}?page%5Bsize%5D=1&page%5Bnumber%5D=3&type=modules&sort=name&fields=name`);
        expect(other.status).to.equal(200);
        expect(other.bytes.equals(plain.bytes)).to.equal(true);
      }
    });
  });

  describe('/results paging and links', () => {
    const resultsLink = (id: string, n: number, size: number) => `${url}${VIEWS}/${id}/results?page%5Bnumber%5D=${n}&page%5Bsize%5D=${size}`;

    it('honours page[number] and page[size], with links to /views/:id/results carrying only the page parameters', async () => {
      const view = saved[4]; // every acme-corp workspace, default sort: 5 rows
      const all = await call('GET', `${VIEWS}/${view.id}/results?page%5Bsize%5D=100`);
      expect(names(all)).to.deep.equal(['Café "core", net', 'network-core', 'payments-api', 'Payments-worker', 'ÉTL-job']);
      for (const [n, expected] of [[1, all.body.data.slice(0, 2)], [2, all.body.data.slice(2, 4)], [3, all.body.data.slice(4)], [4, []]] as const) {
        const res = await call('GET', `${VIEWS}/${view.id}/results?page%5Bnumber%5D=${n}&page%5Bsize%5D=2`);
        expect(res.status).to.equal(200);
        expect(res.body.data).to.deep.equal(expected);
        expect(res.body.meta).to.deep.equal({
          pagination: { 'current-page': n, 'page-size': 2, 'next-page': n < 3 ? n + 1 : null, 'prev-page': n > 1 ? n - 1 : null, 'total-pages': 3, 'total-count': 5 },
        });
        expect(res.body.links).to.deep.equal({
          self: resultsLink(view.id, n, 2), first: resultsLink(view.id, 1, 2),
          prev: n > 1 ? resultsLink(view.id, n - 1, 2) : null, next: n < 3 ? resultsLink(view.id, n + 1, 2) : null,
          last: resultsLink(view.id, 3, 2),
        });
      }
      const dflt = await call('GET', `${VIEWS}/${view.id}/results`);
      expect(dflt.body.meta.pagination).to.include({ 'current-page': 1, 'page-size': 20 });
      expect(dflt.body.links.self).to.equal(resultsLink(view.id, 1, 20));
      const clamped = await call('GET', `${VIEWS}/${view.id}/results?page%5Bsize%5D=1000`);
      expect(clamped.body.meta.pagination['page-size']).to.equal(100);
      expect(clamped.body.links.self).to.equal(resultsLink(view.id, 1, 100));
    });

    it('ignores every other parameter (type, sort, fields, filter)', async () => {
      const view = saved[0];
      const plain = await call('GET', `${VIEWS}/${view.id}/results?page%5Bsize%5D=1`);
      const noisy = await call('GET', `${VIEWS}/${view.id}/results?type=modules&sort=name&fields=name&filter%5B0%5D%5Bname%5D%5Bis%5D%5B0%5D=x&page%5Bsize%5D=1&include=x`);
      expect(noisy.status).to.equal(200);
      expect(noisy.body).to.deep.equal(plain.body);
      expect(names(noisy)).to.deep.equal(['Payments-worker']);
      expect(noisy.body.links.next).to.equal(resultsLink(view.id, 2, 1));
    });

    it('answers 400 naming the page parameter for bad paging', async () => {
      for (const [query, parameter] of [
        ['page%5Bsize%5D=0', 'page[size]'], ['page%5Bsize%5D=x', 'page[size]'],
        ['page%5Bnumber%5D=0', 'page[number]'], ['page%5Bnumber%5D=1.0', 'page[number]'],
      ]) {
        const res = await call('GET', `${VIEWS}/${saved[0].id}/results?${query}`);
        expect(res.status, query).to.equal(400);
        expect(res.body.errors[0].source, query).to.deep.equal({ parameter });
      }
    });
  });

  describe('concurrency', () => {
    it('lets exactly one of two concurrent creates with one name succeed (several rounds)', async () => {
      for (let round = 0; round < 5; round++) {
        const name = uniqueName('pair');
        const answers = await Promise.all([
          call('POST', VIEWS, flat(name, 'workspaces', { filter: [] })),
          call('POST', VIEWS, jsonapi(name, 'modules', { filter: [] })),
        ]);
        const statuses = answers.map((a) => a.status).sort();
        expect(statuses, name).to.deep.equal([201, 422]);
        const loser = answers.find((a) => a.status === 422)!;
        const pointer = loser === answers[0] ? '/data/name' : '/data/attributes/name';
        expect(loser.body.errors[0].source).to.deep.equal({ pointer });
      }
    });

    it('lets exactly one of twenty concurrent creates with one name succeed', async () => {
      const name = uniqueName('twenty');
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
        call('POST', VIEWS, i % 2 === 0 ? flat(` ${name}`, 'workspaces', { filter: [] }) : jsonapi(`${name} `, 'providers', { filter: [] }))));
      expect(answers.filter((a) => a.status === 201)).to.have.length(1);
      answers.forEach((a, i) => {
        if (a.status === 201) return;
        expect(a.status).to.equal(422);
        expect(a.body.errors[0].source).to.deep.equal({ pointer: i % 2 === 0 ? '/data/name' : '/data/attributes/name' });
      });
      const list = (await call('GET', `${VIEWS}?page%5Bsize%5D=100`)).body.data as any[];
      const winners = list.filter((v) => v.attributes.name === name);
      expect(winners).to.have.length(1);
      expect(winners[0].id).to.equal(answers.find((a) => a.status === 201)!.body.data.id);
    });

    it('lets exactly one of several concurrent renames to one name win; the others keep their names', async () => {
      const views = await Promise.all(Array.from({ length: 8 }, () => createView('workspaces', { filter: [] })));
      const target = uniqueName('winner');
      const answers = await Promise.all(views.map((v) => call('PATCH', `${VIEWS}/${v.id}`, flat(target, 'workspaces', { filter: [] }))));
      expect(answers.filter((a) => a.status === 200)).to.have.length(1);
      for (const a of answers) {
        if (a.status === 200) continue;
        expect(a.status).to.equal(422);
        expect(a.body.errors[0].source).to.deep.equal({ pointer: '/data/name' });
      }
      const winner = answers.find((a) => a.status === 200)!.body.data.id;
      for (const v of views) {
        const shown = await call('GET', `${VIEWS}/${v.id}`);
        expect(shown.body.data.attributes.name).to.equal(v.id === winner ? target : v.attributes.name);
      }
    });

    it('leaves one of several concurrent whole-query updates in place, never a mix', async () => {
      const view = await createView('workspaces', { filter: [] });
      const queries: Query[] = Array.from({ length: 12 }, (_, i) => ({
        type: 'workspaces',
        filter: Array.from({ length: (i % 4) + 1 }, (_, j) => ({ field: j % 2 === 0 ? 'workspace_name' : 'project_name', operator: 'is_not', value: [`q${i}-f${j}`] })),
        ...(i % 2 === 0 ? { fields: ['workspace_name', i % 3 === 0 ? 'drifted' : 'tags'] } : {}),
        ...(i % 3 !== 1 ? { sort: [i % 2 === 0 ? '-workspace_name' : 'workspace_created_at'] } : {}),
      }));
      const answers = await Promise.all(queries.map((query) => call('PATCH', `${VIEWS}/${view.id}`, flat(view.attributes.name, 'workspaces', query))));
      answers.forEach((a, i) => {
        expect(a.status, `update ${i}`).to.equal(200);
        expect(a.body.data.attributes.query, `update ${i}`).to.deep.equal(queries[i]);
      });
      const final = await call('GET', `${VIEWS}/${view.id}`);
      const match = queries.findIndex((q) => isDeepStrictEqual(q, final.body.data.attributes.query));
      expect(match, JSON.stringify(final.body.data.attributes.query)).to.be.at.least(0);
      expect(final.body.data).to.deep.equal(answers[match]!.body.data); // updated-at of that very update too
      // and the re-run uses exactly that query
      const res = await call('GET', `${VIEWS}/${view.id}/results`);
      const adhocRes = await call('GET', `/api/v2/organizations/${ORG}/explorer?${adhoc(queries[match] as any)}`);
      expect(res.body.data).to.deep.equal(adhocRes.body.data);
    });
  });

  describe('organization isolation', () => {
    it('keeps acme-corp views invisible to globex, with the 404 of an unknown organization', async () => {
      const shared = uniqueName('Shared name');
      const acme = await createView('workspaces', { filter: [] }, shared);
      const notFound = await unknownOrg404();

      const globexList = await call('GET', viewsOf(OTHER_ORG), undefined, { token: h.tokens.otherOrg });
      expect(globexList.status).to.equal(200);
      expect(globexList.body.data).to.deep.equal([]);

      for (const token of [h.tokens.otherOrg, h.tokens.carol]) {
        for (const org of [OTHER_ORG, ORG]) {
          const base = `${viewsOf(org)}/${acme.id}`;
          const answers = [
            await call('GET', base, undefined, { token }),
            await call('GET', `${base}/results`, undefined, { token }),
            await call('GET', `${base}/csv`, undefined, { token }),
            await call('GET', `${base}/export/csv`, undefined, { token }),
            await call('PATCH', base, flat('hijacked', 'workspaces', { filter: [] }), { token }),
            await call('DELETE', base, undefined, { token }),
          ];
          for (const [i, a] of answers.entries()) {
            expect(a.status, `${org} request ${i}`).to.equal(404);
            expect(a.text, `${org} request ${i}`).to.equal(notFound);
          }
        }
      }
      const still = await call('GET', `${VIEWS}/${acme.id}`);
      expect(still.body.data).to.deep.equal(acme);

      // the same name may exist in both organizations, and each sees only its own
      const globex = await createView('workspaces', { filter: [] }, shared, h.tokens.otherOrg, OTHER_ORG);
      expect(globex.id).to.not.equal(acme.id);
      expect(globex.attributes.name).to.equal(shared);
      const globexViews = (await call('GET', viewsOf(OTHER_ORG), undefined, { token: h.tokens.carol })).body.data as any[];
      expect(globexViews.map((v) => v.id)).to.deep.equal([globex.id]);
      const acmeViews = (await call('GET', `${VIEWS}?page%5Bsize%5D=100`)).body.data as any[];
      expect(acmeViews.map((v) => v.id)).to.include(acme.id).and.not.include(globex.id);
      const cross = await call('GET', `${VIEWS}/${globex.id}`);
      expect(cross.status).to.equal(404);
      expect(cross.text).to.equal(notFound);

      // a re-run reads the data of the view's organization only
      expect(names(await call('GET', `${viewsOf(OTHER_ORG)}/${globex.id}/results`, undefined, { token: h.tokens.otherOrg }))).to.deep.equal(['globex-secret-ws']);
      const acmeNames = names(await call('GET', `${VIEWS}/${acme.id}/results`));
      expect(acmeNames).to.have.length(5);
      expect(acmeNames).to.not.include('globex-secret-ws');
    });
  });

  describe('access by token kind (interface §9)', () => {
    for (const who of ['org', 'owners', 'readers', 'alice'] as const) {
      it(`lets the ${who} token manage acme-corp views, including views created by others`, async () => {
        const token = h.tokens[who];
        const byOther = await createView('workspaces', { filter: [] });
        const mine = await createView('providers', { filter: [] }, uniqueName(who), token);
        const list = await call('GET', `${VIEWS}?page%5Bsize%5D=100`, undefined, { token });
        expect(list.status).to.equal(200);
        expect(list.body.data.map((v: any) => v.id)).to.include.members([byOther.id, mine.id]);
        for (const v of [byOther, mine]) {
          expect((await call('GET', `${VIEWS}/${v.id}`, undefined, { token })).body.data).to.deep.equal(v);
          expect((await call('GET', `${VIEWS}/${v.id}/results`, undefined, { token })).status).to.equal(200);
          expect((await call('GET', `${VIEWS}/${v.id}/csv`, undefined, { token })).status).to.equal(200);
          const patched = await call('PATCH', `${VIEWS}/${v.id}`, flat(`${v.attributes.name} (by ${who})`, v.attributes['query-type'], { filter: [] }), { token });
          expect(patched.status).to.equal(200);
          expect(patched.body.data.attributes.name).to.equal(`${v.attributes.name} (by ${who})`);
          expect((await call('DELETE', `${VIEWS}/${v.id}`, undefined, { token })).status).to.equal(200);
        }
      });
    }

    for (const who of ['developers', 'bob', 'carol', 'otherOrg'] as const) {
      it(`gives the ${who} token the 404 of an unknown organization on every acme-corp saved-view route`, async () => {
        const token = h.tokens[who];
        const notFound = await unknownOrg404();
        const view = await createView('workspaces', { filter: [] });
        const answers = [
          await call('GET', VIEWS, undefined, { token }),
          await call('POST', VIEWS, flat(uniqueName(who), 'workspaces', { filter: [] }), { token }),
          await call('GET', `${VIEWS}/${view.id}`, undefined, { token }),
          await call('PATCH', `${VIEWS}/${view.id}`, flat(uniqueName(who), 'workspaces', { filter: [] }), { token }),
          await call('GET', `${VIEWS}/${view.id}/results`, undefined, { token }),
          await call('GET', `${VIEWS}/${view.id}/csv`, undefined, { token }),
          await call('GET', `${VIEWS}/${view.id}/export/csv`, undefined, { token }),
          await call('DELETE', `${VIEWS}/${view.id}`, undefined, { token }),
        ];
        for (const [i, a] of answers.entries()) {
          expect(a.status, `request ${i}`).to.equal(404);
          expect(a.text, `request ${i}`).to.equal(notFound);
        }
        expect((await call('GET', `${VIEWS}/${view.id}`)).body.data).to.deep.equal(view);
      });
    }
  });

  describe('a new snapshot', () => {
    it('is what /results and /csv show once the explorer serves it', async () => {
      const dir = join(h.dataDir, 'source-v2');
      const ndjson = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
      writeSmallSource(dir, { 'workspaces.ndjson': ndjson(workspaces.map((w) => ({ ...w, name: `v2-${w.name}` }))) });
      const view = saved[0]; // contains "pay", sorted by -workspace_name
      expect(names(await call('GET', `${VIEWS}/${view.id}/results`))).to.deep.equal(['Payments-worker', 'payments-api']);
      const before = (await call('GET', `${VIEWS}/${view.id}/results`)).headers.get('x-explorer-snapshot');

      await loadSnapshot(dir, { dataDir: h.dataDir });
      await waitFor(async () => {
        const res = await call('GET', `/api/v2/organizations/${ORG}/explorer?type=workspaces&fields=workspace_name`);
        return names(res).every((n: string) => n.startsWith('v2-'));
      }, 10_000, 'the new snapshot');

      const res = await call('GET', `${VIEWS}/${view.id}/results`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('x-explorer-snapshot')).to.not.equal(before);
      expect(names(res)).to.deep.equal(['v2-Payments-worker', 'v2-payments-api']);
      const csv = await call('GET', `${VIEWS}/${view.id}/csv`);
      expect(csv.text).to.include('"v2-payments-api"').and.not.include('"payments-api"');
      const all = await call('GET', `${VIEWS}/${saved[4].id}/results`);
      expect(names(all)).to.deep.equal(['v2-Café "core", net', 'v2-network-core', 'v2-payments-api', 'v2-Payments-worker', 'v2-ÉTL-job']);
    });
  });

  describe('persistence', () => {
    it('keeps every acknowledged create, update and delete across a restart on the same DATA_DIR', async () => {
      const a = await createView('workspaces', { filter: [{ field: 'drifted', operator: 'is', value: ['true'] }] }, uniqueName('persist A'));
      const b = await createView('modules', { filter: [] }, uniqueName('persist B'));
      const c = await createView('providers', { filter: [] }, uniqueName('persist C'));
      const updated = await call('PATCH', `${VIEWS}/${b.id}`, flat(`${b.attributes.name} renamed`, 'modules', { filter: [{ name: { contains: ['vp'] } }], sort: ['-version'] }));
      expect(updated.status).to.equal(200);
      expect((await call('DELETE', `${VIEWS}/${c.id}`)).status).to.equal(200);
      // a burst of concurrent creates, all acknowledged before the shutdown
      const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => call('POST', VIEWS, flat(uniqueName(`burst ${i}`), 'tf_versions', { filter: [] }))));
      for (const r of burst) expect(r.status).to.equal(201);
      const globex = await createView('workspaces', { filter: [] }, uniqueName('persist globex'), h.tokens.otherOrg, OTHER_ORG);

      const listBefore = (await call('GET', `${VIEWS}?page%5Bsize%5D=100`)).body;
      const globexBefore = (await call('GET', viewsOf(OTHER_ORG), undefined, { token: h.tokens.otherOrg })).body.data;
      expect(globexBefore.map((v: any) => v.id)).to.include(globex.id);
      const resultsBefore = (await call('GET', `${VIEWS}/${b.id}/results`)).body.data;
      expect(listBefore.data.map((v: any) => v.id)).to.include.members([a.id, b.id, ...burst.map((r) => r.body.data.id)]).and.not.include(c.id);

      await h.running.shutdown();
      const again = await startServer(h.config, silentLogger);
      url = again.url;
      try {
        const list = await call('GET', `${VIEWS}?page%5Bsize%5D=100`);
        expect(list.status).to.equal(200);
        expect(list.body.data).to.deep.equal(listBefore.data);
        expect(list.body.meta).to.deep.equal(listBefore.meta);
        expect((await call('GET', `${VIEWS}/${a.id}`)).body.data).to.deep.equal(a);
        expect((await call('GET', `${VIEWS}/${b.id}`)).body.data).to.deep.equal(updated.body.data);
        for (const r of burst) expect((await call('GET', `${VIEWS}/${r.body.data.id}`)).body.data).to.deep.equal(r.body.data);
        const gone = await call('GET', `${VIEWS}/${c.id}`);
        expect(gone.status).to.equal(404);
        expect(gone.text).to.equal(await unknownOrg404());
        expect((await call('GET', viewsOf(OTHER_ORG), undefined, { token: h.tokens.otherOrg })).body.data).to.deep.equal(globexBefore);
        expect((await call('GET', `${VIEWS}/${b.id}/results`)).body.data).to.deep.equal(resultsBefore);

        // the rules still hold against the persisted views: names taken, deleted names free
        const taken = await call('POST', VIEWS, flat(a.attributes.name, 'workspaces', { filter: [] }));
        expect(taken.status).to.equal(422);
        expect(taken.body.errors[0].source).to.deep.equal({ pointer: '/data/name' });
        expect((await call('POST', VIEWS, flat(c.attributes.name, 'workspaces', { filter: [] }))).status).to.equal(201);
      } finally {
        await again.shutdown();
      }
      // after(): h.close() awaits the (finished) shutdown of the first server and removes DATA_DIR
    });
  });
});
