// Cursor pages over HTTP (docs/data-out.md): a walk by page[after] to its end holds exactly the rows of the
// numbered pages of the same request, in the same order, for every view and many sorts (each field up and
// down, multi-key, fields with nulls), for changes, summaries and saved views; a cursor keeps reading its
// snapshot after a new one is current; cursors that are forged, cut short, of another walk or another
// organization, or whose snapshot is gone, are 400s naming page[after] and never show another organization's rows.
import { expect } from 'chai';
import { join } from 'node:path';
import * as fx from '../fixtures/small-source.js';
import { CONTRACT } from '../helpers/contract-fields.js';
import { clientQuery, createSavedView, json, startHarness, type Harness } from '../helpers/harness.js';
import { currentSnapshot, DAY1, DAY2, DAY3, writeDay } from '../helpers/history-days.js';
import { waitFor } from '../helpers/wait.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { queryScope } from '../../src/http/cursor-walk.js';
import { cursorScope } from '../../src/query/cursor.js';
import { parseQueryParameters } from '../../src/query/parse-query.js';

const ORG_BASE = (org: string) => `/api/v2/organizations/${org}/explorer`;
const BASE = ORG_BASE(fx.ORG);
const AFTER = 'page[after]';

interface Row { id: string; attributes: unknown }
const rowsOf = (body: any): Row[] => body.data.map((r: any) => ({ id: r.id, attributes: r.attributes }));
const decode = (cursor: string) => JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const afterOf = (link: string) => new URL(link).searchParams.get(AFTER)!;

describe('cursor pages', function () {
  this.timeout(120_000);
  let h: Harness;
  let day1: string;
  let viewId: string;

  /** GET a path under the organization's explorer with `params`; the body parsed. */
  const ask = async (path: string, params: Record<string, string>, token?: string, org = fx.ORG) => {
    const res = await h.request(`${ORG_BASE(org)}${path}${clientQuery(params)}`, { token });
    return { res, body: await json(res) };
  };
  const ok = async (path: string, params: Record<string, string>) => {
    const { res, body } = await ask(path, params);
    expect(res.status, `${path} ${JSON.stringify(params)}: ${JSON.stringify(body).slice(0, 400)}`).to.equal(200);
    return { res, body };
  };

  /** Every row by numbered pages of `size`. */
  async function numbered(path: string, params: Record<string, string>, size = 2): Promise<{ rows: Row[]; total: number }> {
    const rows: Row[] = [];
    for (let n = 1; ; n++) {
      const { body } = await ok(path, { ...params, 'page[number]': String(n), 'page[size]': String(size) });
      rows.push(...rowsOf(body));
      if (body.meta.pagination['next-page'] === null) return { rows, total: body.meta.pagination['total-count'] };
    }
  }

  /** Every row by following links.next from `page[after]=`, page sizes taken in turn from `sizes`. */
  async function walk(path: string, params: Record<string, string>, sizes = [2]): Promise<{ rows: Row[]; pages: number; bodies: any[] }> {
    const rows: Row[] = [];
    const bodies: any[] = [];
    let after = '';
    for (let page = 0; ; page++) {
      expect(page, 'the walk ends').to.be.below(200);
      const size = sizes[page % sizes.length]!;
      const { body } = await ok(path, { ...params, [AFTER]: after, 'page[size]': String(size) });
      bodies.push(body);
      expect(Object.keys(body.meta.pagination)).to.deep.equal(['page-size', 'total-count']);
      expect(body.meta.pagination['page-size']).to.equal(size);
      expect(body.links.prev).to.equal(null);
      expect(body.links.last).to.equal(null);
      expect(new URL(body.links.first).searchParams.get(AFTER)).to.equal('');
      expect(new URL(body.links.self).searchParams.get(AFTER)).to.equal(after);
      rows.push(...rowsOf(body));
      if (body.links.next === null) {
        expect(body.data.length, 'only the last page is short').to.be.at.most(size);
        return { rows, pages: page + 1, bodies };
      }
      expect(body.data.length, 'a page with a next is full').to.equal(size);
      // The next link repeats every parameter as received, with the effective size.
      const next = new URL(body.links.next).searchParams;
      for (const [k, v] of Object.entries(params)) expect(next.get(k), k).to.equal(v);
      after = afterOf(body.links.next);
    }
  }

  /**
   * A walk equals the numbered pages: same rows, same order, same total, no empty page at the end. The
   * numbered pages, the reference, are of 4 rows: boundaries unlike the walk's. `varied`: walk a second time
   * with page sizes that change along the walk.
   */
  async function expectSameRows(path: string, params: Record<string, string>, varied = true): Promise<Row[]> {
    const { rows, total } = await numbered(path, params, 4);
    const walked = await walk(path, params);
    expect(walked.rows.map((r) => r.id), `${path} ${JSON.stringify(params)}`).to.deep.equal(rows.map((r) => r.id));
    expect(walked.rows).to.deep.equal(rows);
    expect(walked.pages).to.equal(Math.max(1, Math.ceil(rows.length / 2)));
    for (const b of walked.bodies) expect(b.meta.pagination['total-count']).to.equal(total);
    // Page sizes may change along a walk.
    if (varied) expect((await walk(path, params, [3, 1, 2])).rows).to.deep.equal(rows);
    return rows;
  }

  before(async () => {
    h = await startHarness({ writeSource: (d) => writeDay(d, DAY1) });
    day1 = await currentSnapshot(h);
    viewId = await createSavedView(h, 'walked', 'resources', {
      sort: ['provider_type', '-source_updated_at'], filter: [{ field: 'address', operator: 'does not contain', value: ['zzz'] }] });
  });
  after(async () => { await h.close(); });

  async function loadDay(n: number, day: typeof DAY2, keep?: number): Promise<string> {
    const { manifest } = await loadSnapshot(writeDay(join(h.dataDir, `day-${n}`), day), { dataDir: h.dataDir, label: `day ${n}`, ...(keep ? { keep, keepDays: 0 } : {}) });
    await waitFor(async () => (await currentSnapshot(h)) === manifest.id, 5000, `day ${n} current`);
    return manifest.id;
  }

  describe('on one snapshot', () => {
    for (const view of Object.keys(CONTRACT)) {
      it(`walks ${view} to its end as the numbered pages, sorted by each field both ways and by several keys`, async () => {
        const fields = Object.keys(CONTRACT[view]!);
        await expectSameRows('', { type: view });
        for (const [i, field] of fields.entries()) {
          const other = fields[(i + 1) % fields.length]!;
          await expectSameRows('', { type: view, sort: field });
          // Changing page sizes are walked once per field (above); the multi-key sorts by one size.
          await expectSameRows('', { type: view, sort: `-${field},${other}` }, false);
        }
      });
    }

    it('walks a filtered query with chosen fields, and a walk with a filter matching nothing is one empty page', async () => {
      await expectSameRows('', { type: 'workspaces', 'filter[0][drifted][is][0]': 'true', sort: '-resource_count', fields: 'workspace_name,resource_count' });
      const none = await walk('', { type: 'workspaces', 'filter[0][workspace_name][is][0]': 'nobody' });
      expect(none.rows).to.deep.equal([]);
      expect(none.pages).to.equal(1);
      expect(none.bodies[0].meta.pagination['total-count']).to.equal(0);
    });

    it('lets `fields` change along a walk, but not the filters, sort or type', async () => {
      const first = await ok('', { type: 'workspaces', [AFTER]: '', 'page[size]': '2' });
      const after = afterOf(first.body.links.next);
      const narrower = await ok('', { type: 'workspaces', [AFTER]: after, 'page[size]': '2', fields: 'workspace_name' });
      expect(Object.keys(narrower.body.data[0].attributes)).to.deep.equal(['workspace-name']);
      const full = await numbered('', { type: 'workspaces' });
      expect(narrower.body.data.map((r: any) => r.id)).to.deep.equal(full.rows.slice(2, 4).map((r) => r.id));
      for (const changed of <Record<string, string>[]>[
        { type: 'workspaces', sort: '-workspace_name' },
        { type: 'workspaces', 'filter[0][drifted][is][0]': 'true' },
        { type: 'providers' },
      ]) {
        const { res, body } = await ask('', { ...changed, [AFTER]: after });
        expect(res.status, JSON.stringify(changed)).to.equal(400);
        expect(body.errors[0].source).to.deep.equal({ parameter: AFTER });
      }
    });

    it('walks summaries as their numbered pages, by group values, counts and sums', async () => {
      for (const params of <Record<string, string>[]>[
        { type: 'workspaces', group_by: 'project_name' },
        { type: 'workspaces', group_by: 'tags', sort: '-count' },
        { type: 'workspaces', group_by: 'workspace_created_at:month', sum: 'resource_count', sort: '-sum_resource_count' },
        { type: 'resources', group_by: 'provider_type,terraform_version', sort: '-count,-terraform_version' },
        { type: 'providers', group_by: 'version', sort: 'version' },
      ]) await expectSameRows('/summary', params);
    });

    it('walks a saved view\'s results and summary', async () => {
      await expectSameRows(`/views/${viewId}/results`, {});
      await expectSameRows(`/views/${viewId}/summary`, { group_by: 'provider_name' });
    });

    it('refuses page[number] with page[after], naming `page`', async () => {
      for (const path of ['', `/views/${viewId}/results`, '/summary']) {
        const { res, body } = await ask(path, { type: 'workspaces', group_by: 'project_name', [AFTER]: '', 'page[number]': '1' });
        expect(res.status, path).to.equal(400);
        expect(body.errors[0].source).to.deep.equal({ parameter: 'page' });
      }
    });

    it('refuses damaged, forged and foreign cursors with a 400 naming page[after], never a 5xx', async () => {
      const query = { type: 'workspaces', sort: '-resource_count,workspace_updated_at' };
      const first = await ok('', { ...query, [AFTER]: '', 'page[size]': '2' });
      const cursor = afterOf(first.body.links.next);
      const [version, scope, snapshots, values] = decode(cursor);
      const summaryCursor = afterOf((await ok('/summary', { type: 'workspaces', group_by: 'project_name', [AFTER]: '', 'page[size]': '1' })).body.links.next);
      const refused = async (path: string, params: Record<string, string>, what: string, token?: string, org?: string) => {
        const { res, body } = await ask(path, params, token, org);
        expect(res.status, `${what}: ${JSON.stringify(body)}`).to.equal(400);
        expect(body.errors[0].source, what).to.deep.equal({ parameter: AFTER });
      };
      await refused('', { ...query, [AFTER]: cursor.slice(0, -4) }, 'cut short');
      await refused('', { ...query, [AFTER]: `${cursor}$` }, 'not base64url');
      await refused('', { ...query, [AFTER]: encode({ hello: 'world' }) }, 'not a cursor');
      await refused('', { ...query, [AFTER]: encode([version, 'x'.repeat(22), snapshots, values]) }, 'another scope');
      await refused('', { ...query, [AFTER]: encode([version, scope, snapshots, values.slice(1)]) }, 'too few values');
      await refused('', { ...query, [AFTER]: encode([version, scope, snapshots, ['many', ...values.slice(1)]]) }, 'a count that is not a number');
      await refused('', { ...query, [AFTER]: encode([version, scope, snapshots, [values[0], '2024-13-45 99:00:00', ...values.slice(2)]]) }, 'a datetime that is no date');
      await refused('', { ...query, [AFTER]: encode([version, scope, ['20990101T000000000Z-nowhere'], values]) }, 'an unknown snapshot');
      await refused(`/views/${viewId}/results`, { [AFTER]: cursor }, 'another route');
      await refused('/summary', { type: 'workspaces', group_by: 'project_name', [AFTER]: cursor }, 'a query\'s cursor on a summary');
      await refused('', { ...query, [AFTER]: summaryCursor }, 'a summary\'s cursor on a query');
      await refused('', { ...query, [AFTER]: cursor }, 'another organization', h.tokens.otherOrg, fx.OTHER_ORG);
      // A forger who knows how scopes are made: a cursor of the other organization's walk, with this
      // organization's values and snapshot, passes every check and shows the other organization's own rows only.
      const theirScope = cursorScope([fx.OTHER_ORG, 'explorer', 'rows', ...queryScope(parseQueryParameters('terraform', new Map(Object.entries(query))).query)]);
      const forgedTheirs = await ask('', { ...query, [AFTER]: encode([version, theirScope, snapshots, ['999999', ...values.slice(1)]]) }, h.tokens.otherOrg, fx.OTHER_ORG);
      expect(forgedTheirs.res.status, JSON.stringify(forgedTheirs.body)).to.equal(200);
      expect(forgedTheirs.body.data.map((r: any) => r.attributes['workspace-name'])).to.deep.equal(['globex-secret-ws']);
      // A forged cursor in this organization's scope, with values of the right types, reads its own rows after them.
      const forged = await ok('', { ...query, [AFTER]: encode([version, scope, snapshots, ['0', ...values.slice(1)]]) });
      const own = (await numbered('', query)).rows;
      for (const r of forged.body.data) expect(own.map((o) => o.id)).to.include(r.id);
    });
  });

  describe('across snapshots', () => {
    it('keeps reading the snapshot a walk began on, and walks changes as their numbered pages', async () => {
      const queries: [string, Record<string, string>][] = [
        ['', { type: 'workspaces', sort: 'workspace_name' }],
        [`/views/${viewId}/results`, {}],
        ['/summary', { type: 'workspaces', group_by: 'project_name' }],
      ];
      // Begun on day 1: each walk's first page, and day 1's rows by numbered pages.
      const begun = [];
      for (const [path, params] of queries) {
        const first = await ok(path, { ...params, [AFTER]: '', 'page[size]': '1' });
        expect(first.res.headers.get('x-explorer-snapshot')).to.equal(day1);
        begun.push({ first: first.body, rows: (await numbered(path, params)).rows });
      }
      const day2 = await loadDay(2, DAY2);
      for (const [i, [path, params]] of queries.entries()) {
        // Continued on day 2: the rest of day 1's rows, read from day 1 (held even when the request names it).
        const rows = rowsOf(begun[i]!.first);
        let next = begun[i]!.first.links.next as string | null;
        while (next !== null) {
          const extra: Record<string, string> = rows.length % 2 === 0 ? { snapshot: day1 } : {};
          const page = await ok(path, { ...params, ...extra, [AFTER]: afterOf(next), 'page[size]': '1' });
          expect(page.res.headers.get('x-explorer-snapshot'), path).to.equal(day1);
          rows.push(...rowsOf(page.body));
          next = page.body.links.next;
        }
        expect(rows, path).to.deep.equal(begun[i]!.rows);
        expect(rows).to.deep.equal((await numbered(path, { ...params, snapshot: day1 })).rows);
        // Naming another snapshot than the walk's is refused.
        const other = await ask(path, { ...params, snapshot: day2, [AFTER]: afterOf(begun[i]!.first.links.next) });
        expect(other.res.status).to.equal(400);
        expect(other.body.errors[0].source).to.deep.equal({ parameter: AFTER });
      }
      // Changes between day 1 and day 2, by cursor, as by number; the pair is the walk's.
      for (const params of <Record<string, string>[]>[{ type: 'workspaces' }, { type: 'resources', sort: '-source_updated_at,address' }, { type: 'providers', sort: '-workspace_count' }]) {
        const rows = await expectSameRows('/changes', params);
        expect(rows.length, params.type).to.be.greaterThan(0);
      }
      await expectSameRows(`/views/${viewId}/changes`, {});
      const changes = await ok('/changes', { type: 'workspaces', [AFTER]: '', 'page[size]': '1' });
      expect(changes.body.meta.from).to.equal(day1);
      const pairCursor = afterOf(changes.body.links.next);
      const day3 = await loadDay(3, DAY3);
      const resumed = await ok('/changes', { type: 'workspaces', [AFTER]: pairCursor, 'page[size]': '1' });
      expect([resumed.body.meta.from, resumed.body.meta.to]).to.deep.equal([day1, day2]);
      const named = await ask('/changes', { type: 'workspaces', from: day2, to: day3, [AFTER]: pairCursor });
      expect(named.res.status).to.equal(400);
      expect(named.body.errors[0].source).to.deep.equal({ parameter: AFTER });

      // Once its snapshot is no longer retained, a cursor is a 400 that says to start again.
      const cursor = afterOf(begun[0]!.first.links.next);
      await loadDay(4, DAY3, 2);
      await waitFor(async () => !(await ok('/snapshots', {})).body.data.some((s: any) => s.id === day1), 5000, 'day 1 pruned');
      const gone = await ask('', { ...queries[0]![1], [AFTER]: cursor });
      expect(gone.res.status).to.equal(400);
      expect(gone.body.errors[0].source).to.deep.equal({ parameter: AFTER });
      expect(gone.body.errors[0].detail).to.match(/no longer retained/);
    });
  });
});
