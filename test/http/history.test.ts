// History over HTTP (docs/history.md): three days derived from the fixture (helpers/history-days.ts), loaded one after another. Every
// expected answer — counts, changes, changed fields, orders, trend points and sums — is computed here from
// each day's source rows by the interface's rules, never from the server's own answers; time travel is held
// to what the same request answered while that day was current.
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fx from '../fixtures/small-source.js';
import { cmpCodePoints, opt, rowId, workspaceModel, type Model, type Src } from '../helpers/fixture-model.js';
import { clientQuery, json, startHarness, type Harness } from '../helpers/harness.js';
import { DAY1, DAY2, DAY3, DAYS, loadDays, writeDay, type Day } from '../helpers/history-days.js';

const ORG = fx.ORG;
const BASE = `/api/v2/organizations/${ORG}/explorer`;

// ---- the model: rows of a day by the interface's rules -------------------------------------------------
type Row = { id: string; attributes: Model };
const fold = (v: unknown) => String(v).replace(/[A-Z]/g, (c) => c.toLowerCase());

function workspaceRows(day: Day): Row[] {
  return day.workspaces.filter((w) => w.organization === ORG).map((w) => ({ id: w.id, attributes: workspaceModel(w) }));
}
/** tf_versions of a day: one row per engine version, with its workspaces. */
function versionRows(day: Day): Row[] {
  const groups = new Map<string, Src[]>();
  for (const w of day.workspaces) if (w.organization === ORG && opt(w.engine_version)) groups.set(w.engine_version, [...(groups.get(w.engine_version) ?? []), w]);
  return [...groups].map(([version, ws]) => {
    const id = rowId('tfv', ORG, 'tf_versions', [version]);
    const names = [...new Set(ws.map((w) => w.name as string))].sort(cmpCodePoints);
    return { id, attributes: { unique_identifier: id, version, workspace_count: ws.length, workspaces: names.join(', ') } };
  });
}

interface Change { id: string; change: 'added' | 'removed' | 'changed'; changed: string[]; before: Model | null; after: Model | null }
/** The change set by §4: ids only in `to` are added, only in `from` removed, in both with any value different changed. */
function changesOf(from: Row[], to: Row[], matches: (m: Model) => boolean = () => true): Change[] {
  const before = new Map(from.map((r) => [r.id, r.attributes]));
  const after = new Map(to.map((r) => [r.id, r.attributes]));
  const out: Change[] = [];
  for (const id of new Set([...before.keys(), ...after.keys()])) {
    const b = before.get(id) ?? null, a = after.get(id) ?? null;
    if (!(b && matches(b)) && !(a && matches(a))) continue;
    const changed = a && b ? Object.keys(a).filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).sort(cmpCodePoints) : [];
    if (a && b && changed.length === 0) continue;
    out.push({ id, change: !b ? 'added' : !a ? 'removed' : 'changed', changed, before: b, after: a });
  }
  return out;
}
/** Default order of the workspaces view on the row as it is in `to` (in `from` when removed), then id. */
const byWorkspaceName = (x: Change, y: Change) => {
  const a = String((x.after ?? x.before)!.workspace_name), b = String((y.after ?? y.before)!.workspace_name);
  return cmpCodePoints(fold(a), fold(b)) || cmpCodePoints(a, b) || cmpCodePoints(x.id, y.id);
};
const kebabOf = (m: Model | null, fields?: string[]) =>
  m === null ? null : Object.fromEntries(Object.keys(m).filter((k) => !fields || fields.includes(k)).map((k) => [k.replace(/_/g, '-'), m[k]]));

describe('history over HTTP', function () {
  this.timeout(60_000);
  let h: Harness;
  const ids: string[] = [];
  /** What each day answered while it was current: path → body (links aside). */
  const answered: Map<string, unknown>[] = [];
  // Default orders, a case-insensitive filter and a string sort: a compacted snapshot folds strings as it reads them.
  const PROBES = ['?type=workspaces', '?type=tf_versions', '?type=providers&sort=-workspace_count', '?type=resources&page%5Bsize%5D=3',
    '?type=workspaces&filter%5B0%5D%5Bdrifted%5D%5Bis%5D%5B0%5D=true', '?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bcontains%5D%5B0%5D=PAY&sort=-project_name',
    '?type=resources&filter%5B0%5D%5Baddress%5D%5Bcontains%5D%5B0%5D=%C3%A9&sort=provider_name,-address'];

  async function remember(): Promise<void> {
    const bodies = new Map<string, unknown>();
    for (const probe of PROBES) {
      const body = await json(await h.explorer(probe));
      bodies.set(probe, { data: body.data, meta: body.meta });
    }
    bodies.set('csv', await (await h.explorer('/export/csv?type=workspaces&sort=-workspace_updated_at')).text());
    answered.push(bodies);
  }

  before(async () => {
    h = await startHarness({ writeSource: (dir) => writeDay(dir, DAY1) });
    ids.push(...await loadDays(h, remember));
  });
  after(async () => { await h.close(); });

  describe('GET /snapshots', () => {
    it('lists the retained snapshots that include the organization, newest first, with labels and counts', async () => {
      const res = await h.explorer('/snapshots');
      expect(res.status).to.equal(200);
      const body = await json(res);
      expect(body.data.map((s: any) => s.id)).to.deep.equal([...ids].reverse());
      expect(body.data.map((s: any) => s.attributes.label)).to.deep.equal(['day 3', 'day 2', null]);
      expect(body.data.map((s: any) => s.attributes.current)).to.deep.equal([true, false, false]);
      expect(body.data.map((s: any) => s.type)).to.deep.equal(Array(3).fill('explorer-snapshots'));
      for (const s of body.data) expect(s.attributes['loaded-at']).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+00:00$/);
      const loaded = body.data.map((s: any) => Date.parse(s.attributes['loaded-at']));
      expect([...loaded].sort((a, b) => b - a)).to.deep.equal(loaded);
      [...DAYS].reverse().forEach((day, i) => {
        expect(body.data[i].attributes.counts.workspaces, `day ${3 - i}`).to.equal(workspaceRows(day).length);
        expect(body.data[i].attributes.counts.tf_versions, `day ${3 - i}`).to.equal(versionRows(day).length);
      });
      expect(Object.keys(body.data[0].attributes.counts)).to.have.members(['workspaces', 'tf_versions', 'providers', 'modules', 'resources']);
      expect(body.meta.pagination['total-count']).to.equal(3);
    });

    it('pages like saved views, and leaves out snapshots without the organization', async () => {
      const page = await json(await h.explorer('/snapshots?page%5Bsize%5D=2&page%5Bnumber%5D=2'));
      expect(page.data.map((s: any) => s.id)).to.deep.equal([ids[0]]);
      expect(page.meta.pagination).to.include({ 'total-pages': 2, 'current-page': 2 });
      const empty = await json(await h.request('/api/v2/organizations/empty-org/explorer/snapshots', { token: h.tokens.emptyOrg }));
      expect(empty.data.map((s: any) => s.id)).to.deep.equal([ids[2], ids[0]]);
      expect((await h.explorer('/snapshots?page%5Bsize%5D=0')).status).to.equal(400);
    });

    it('is the same 404 as any route for another organization\'s token', async () => {
      const res = await h.explorer('/snapshots', h.tokens.otherOrg);
      expect(res.status).to.equal(404);
      expect((await h.explorer('/trend?type=workspaces', h.tokens.otherOrg)).status).to.equal(404);
      expect((await h.explorer('/changes?type=workspaces', h.tokens.developers)).status).to.equal(404);
    });
  });

  describe('snapshot= and as_of=', () => {
    it('read a compacted day 1 (older than the two newest): one DuckDB file without row JSON, CSV lines or Parquet', async () => {
      const dir = join(h.dataDir, 'snapshots', ids[0]!);
      expect(readdirSync(dir).sort()).to.deep.equal(['access.json', 'compact.duckdb', 'manifest.json']);
      expect(JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'))).to.include({ compacted: true, rowJson: false, database: 'compact.duckdb' });
      expect(readdirSync(join(h.dataDir, 'snapshots', ids[1]!))).to.include('snapshot.duckdb');
    });

    it('answer exactly what each day answered while it was current, and say which snapshot', async () => {
      for (let d = 0; d < 3; d++) {
        for (const probe of PROBES) {
          const res = await h.explorer(`${probe}&snapshot=${ids[d]}`);
          expect(res.status, probe).to.equal(200);
          expect(res.headers.get('x-explorer-snapshot')).to.equal(ids[d]);
          const body = await json(res);
          expect({ data: body.data, meta: body.meta }, `day ${d + 1} ${probe}`).to.deep.equal(answered[d]!.get(probe));
          expect(body.links.self).to.include(`snapshot=${ids[d]}`);
        }
        const csv = await h.explorer(`/export/csv?type=workspaces&sort=-workspace_updated_at&snapshot=${ids[d]}`);
        expect(await csv.text(), `day ${d + 1} csv`).to.equal(answered[d]!.get('csv'));
      }
    });

    it('as_of picks the newest snapshot loaded at or before it, in any offset', async () => {
      const listed = (await json(await h.explorer('/snapshots'))).data.reverse();
      const at = (s: any) => s.attributes['loaded-at'] as string;
      for (let d = 0; d < 3; d++) {
        const exact = await h.explorer(`?type=workspaces&as_of=${encodeURIComponent(at(listed[d]))}`);
        expect(exact.headers.get('x-explorer-snapshot')).to.equal(ids[d]);
        // The same instant written at −02:30 (St John's daylight time).
        const shifted = new Date(Date.parse(at(listed[d])) - 150 * 60_000).toISOString().replace('Z', '-02:30');
        expect((await h.explorer(`?type=workspaces&as_of=${encodeURIComponent(shifted)}`)).headers.get('x-explorer-snapshot')).to.equal(ids[d]);
        const justBefore = new Date(Date.parse(at(listed[d])) - 1).toISOString();
        const res = await h.explorer(`?type=workspaces&as_of=${encodeURIComponent(justBefore)}`);
        if (d === 0) expect(res.status).to.equal(400);
        else expect(res.headers.get('x-explorer-snapshot')).to.equal(ids[d - 1]);
      }
      const body = await json(await h.explorer(`?type=workspaces&as_of=${encodeURIComponent(at(listed[1]))}`));
      expect(decodeURIComponent(body.links.self)).to.include(`as_of=${at(listed[1])}`);
      expect(body.data.map((r: any) => r.id)).to.have.members(workspaceRows(DAY2).map((r) => r.id));
    });

    it('gives different ETags for different snapshots of the same query', async () => {
      const tags = await Promise.all(ids.map(async (id) => (await h.explorer(`?type=workspaces&snapshot=${id}`)).headers.get('etag')));
      expect(new Set(tags).size).to.equal(3);
    });

    it('refuses bad choices with a 400 naming the parameter', async () => {
      const cases: [string, string, string?][] = [
        [`?type=workspaces&snapshot=${ids[0]}&as_of=2020-01-01`, 'as_of'],
        ['?type=workspaces&snapshot=20200101T000000000Z-abcdef', 'snapshot'],
        ['?type=workspaces&snapshot=', 'snapshot'],
        ['?type=workspaces&as_of=2020-01-01T00:00:00Z', 'as_of'],
        ['?type=workspaces&as_of=yesterday', 'as_of'],
        ['?type=workspaces&as_of=2025-02-30', 'as_of'],
        [`/export/csv?type=workspaces&snapshot=nope`, 'snapshot'],
      ];
      for (const [query, parameter] of cases) {
        const res = await h.explorer(query);
        expect(res.status, query).to.equal(400);
        expect((await json(res)).errors[0].source, query).to.deep.equal({ parameter });
      }
      // A snapshot without the organization is as unknown to it as a made-up id.
      const res = await h.request(`/api/v2/organizations/empty-org/explorer?type=workspaces&snapshot=${ids[1]}`, { token: h.tokens.emptyOrg });
      expect(res.status).to.equal(400);
      expect((await json(res)).errors[0].source).to.deep.equal({ parameter: 'snapshot' });
    });
  });

  describe('GET /changes', () => {
    const cases: { name: string; view: 'workspaces' | 'tf_versions'; from: number; to: number; query: string; matches?: (m: Model) => boolean; fields?: string[] }[] = [
      { name: 'workspaces, default pair (day 2 → day 3)', view: 'workspaces', from: 1, to: 2, query: '' },
      { name: 'workspaces, day 1 → day 3', view: 'workspaces', from: 0, to: 2, query: 'from={from}&to={to}' },
      { name: 'workspaces, day 1 → day 2, filtered on a value only one side has', view: 'workspaces', from: 0, to: 1, query: 'from={from}&to={to}&filter%5B0%5D%5Bworkspace_terraform_version%5D%5Bis%5D%5B0%5D=1.10.0', matches: (m) => m.workspace_terraform_version === '1.10.0' },
      { name: 'tf_versions, day 1 → day 2, two fields', view: 'tf_versions', from: 0, to: 1, query: 'from={from}&to={to}&fields=version,workspace_count', fields: ['version', 'workspace_count'] },
    ];
    for (const c of cases) {
      it(`lists added, removed and changed rows with changed fields and both sides: ${c.name}`, async () => {
        const rows = c.view === 'workspaces' ? workspaceRows : versionRows;
        const expected = changesOf(rows(DAYS[c.from]!), rows(DAYS[c.to]!), c.matches);
        if (c.view === 'workspaces') expected.sort(byWorkspaceName);
        else expected.sort((x, y) => 0 || cmpCodePoints(x.id, y.id));
        expect(expected.length, 'the case has changes').to.be.above(0);
        const query = c.query.replace('{from}', ids[c.from]!).replace('{to}', ids[c.to]!);
        const res = await h.explorer(`/changes?type=${c.view}${query ? `&${query}` : ''}&page%5Bsize%5D=100`);
        expect(res.status).to.equal(200);
        expect(res.headers.get('x-explorer-snapshot')).to.equal(ids[c.to]);
        const body = await json(res);
        const got = body.data.map((d: any) => ({ ...d.attributes, id: d.id, type: d.type }));
        const want = expected.map((e) => ({
          id: e.id, type: 'explorer-changes', change: e.change, 'changed-fields': e.changed,
          before: kebabOf(e.before, c.fields), after: kebabOf(e.after, c.fields),
        }));
        if (c.view === 'workspaces') expect(got).to.deep.equal(want);
        else expect(got).to.have.deep.members(want);
        const count = (k: string) => expected.filter((e) => e.change === k).length;
        expect(body.meta.counts).to.deep.equal({ added: count('added'), removed: count('removed'), changed: count('changed') });
        expect(body.meta.from).to.equal(ids[c.from]);
        expect(body.meta.to).to.equal(ids[c.to]);
        expect(body.meta.pagination['total-count']).to.equal(expected.length);
      });
    }

    it('sorts by a field on the row as it is in `to`, pages, and links carry every parameter as received', async () => {
      const expected = changesOf(workspaceRows(DAY1), workspaceRows(DAY3));
      const key = (e: Change) => String((e.after ?? e.before)!.workspace_updated_at);
      expected.sort((x, y) => cmpCodePoints(key(y), key(x)) || cmpCodePoints(x.id, y.id));
      const seen: string[] = [];
      let next: string | null = `${h.url}${BASE}/changes?type=workspaces&sort=-workspace_updated_at&from=${ids[0]}&page%5Bsize%5D=2`;
      while (next) {
        const body: any = await json(await h.request(next.slice(h.url.length)));
        seen.push(...body.data.map((d: any) => d.id));
        if (body.links.next) expect(body.links.next).to.include(`from=${ids[0]}`).and.include('sort=-workspace_updated_at');
        next = body.links.next;
      }
      expect(seen).to.deep.equal(expected.map((e) => e.id));
    });

    it('exports every listed change as CSV with previous values', async () => {
      const expected = changesOf(workspaceRows(DAY1), workspaceRows(DAY2)).sort(byWorkspaceName);
      const res = await h.explorer(`/changes/export/csv?type=workspaces&fields=workspace_name,drifted&from=${ids[0]}&to=${ids[1]}`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-disposition')).to.match(new RegExp(`^attachment; filename="${ORG}-workspaces-changes-\\d{8}T\\d{6}Z\\.csv"$`));
      const cell = (v: unknown) => (v === null || v === undefined ? '""' : `"${String(v).replace(/"/g, '""')}"`);
      expect(expected.length).to.be.above(0);
      // fields=workspace_name,drifted: the fields in the order given, as a query's CSV has them.
      expect(await res.text()).to.equal(['change,changed_fields,workspace_name,previous_workspace_name,drifted,previous_drifted',
        ...expected.map((e) => {
          const now = e.after ?? e.before!;
          return [e.change, e.changed.join(', '), now.workspace_name, e.before?.workspace_name, now.drifted, e.before?.drifted].map(cell).join(',');
        })].map((l) => `${l}\n`).join(''));
    });

    it('refuses a `from` that is not older than `to`, and unknown ids, naming the parameter', async () => {
      for (const [query, parameter] of [
        [`from=${ids[2]}&to=${ids[1]}`, 'from'], [`from=${ids[1]}&to=${ids[1]}`, 'from'], [`to=${ids[0]}`, 'from'],
        ['from=nope', 'from'], ['to=nope', 'to'], [`to=${ids[1]}&to_as_of=2030-01-01`, 'to_as_of'], ['from_as_of=1999-01-01', 'from_as_of'],
      ] as const) {
        const res = await h.explorer(`/changes?type=workspaces&${query}`);
        expect(res.status, query).to.equal(400);
        expect((await json(res)).errors[0].source, query).to.deep.equal({ parameter });
      }
      expect((await h.explorer('/changes?type=nope')).status).to.equal(400);
    });
  });

  describe('GET /trend', () => {
    it('counts the matching rows of every retained snapshot, oldest first, with sums', async () => {
      const drifted = (m: Model) => m.drifted === true;
      const res = await h.explorer(`/trend${clientQuery({ type: 'workspaces', 'filter[0][drifted][is][0]': 'true', sum: 'resource_count,resources_drifted' })}`);
      expect(res.status).to.equal(200);
      const body = await json(res);
      expect(body.data.map((p: any) => p.id)).to.deep.equal(ids);
      expect(body.data.map((p: any) => p.attributes.label)).to.deep.equal([null, 'day 2', 'day 3']);
      DAYS.forEach((day, i) => {
        const rows = workspaceRows(day).map((r) => r.attributes).filter(drifted);
        const sum = (k: string) => (rows.length === 0 ? null : rows.reduce((a, r) => a + Number(r[k] ?? 0), 0));
        expect(body.data[i].attributes, `day ${i + 1}`).to.deep.include({ count: rows.length, sums: { resource_count: sum('resource_count'), resources_drifted: sum('resources_drifted') } });
        expect(body.data[i].type).to.equal('explorer-trend-points');
      });
      expect(new Set(body.data.map((p: any) => p.attributes.count)).size, 'drift changed over the days').to.be.above(1);
    });

    it('counts unfiltered rows per snapshot and has no sums member without sum', async () => {
      const body = await json(await h.explorer('/trend?type=tf_versions'));
      expect(body.data.map((p: any) => p.attributes.count)).to.deep.equal(DAYS.map((d) => versionRows(d).length));
      for (const p of body.data) expect(p.attributes).to.not.have.property('sums');
    });

    it('gives null sums when nothing matches, and drops points loaded before `since`', async () => {
      const none = await json(await h.explorer(`/trend${clientQuery({ type: 'workspaces', 'filter[0][workspace_name][is][0]': 'no-such', sum: 'checks_failed' })}`));
      expect(none.data.map((p: any) => p.attributes)).to.deep.equal(none.data.map((p: any) => ({ 'loaded-at': p.attributes['loaded-at'], label: p.attributes.label, count: 0, sums: { checks_failed: null } })));
      const listed = (await json(await h.explorer('/snapshots'))).data;
      const since = listed[1].attributes['loaded-at'];
      const later = await json(await h.explorer(`/trend?type=workspaces&since=${encodeURIComponent(since)}`));
      expect(later.data.map((p: any) => p.id)).to.deep.equal([ids[1], ids[2]]);
    });

    it('refuses bad sums and since with a 400 naming the parameter', async () => {
      for (const [query, parameter] of [
        ['sum=workspace_name', 'sum'], ['sum=', 'sum'], ['sum=nope', 'sum'], ['sum=checks_failed,checks_failed', 'sum'],
        ['sum=checks_failed,checks_passed,checks_errored,checks_unknown,resource_count,module_count', 'sum'],
        ['since=soon', 'since'], ['filter%5B0%5D%5Bnope%5D%5Bis%5D%5B0%5D=1', 'filter[0][nope][is][0]'],
      ] as const) {
        const res = await h.explorer(`/trend?type=workspaces&${query}`);
        expect(res.status, query).to.equal(400);
        expect((await json(res)).errors[0].source, query).to.deep.equal({ parameter });
      }
    });
  });

  describe('saved views', () => {
    it('re-run in the past, and give the trend and changes of their stored query', async () => {
      const created = await h.request(`${BASE}/views`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/vnd.api+json' },
        body: JSON.stringify({ data: { type: 'explorer-saved-queries', attributes: { name: 'drifted ones', 'query-type': 'workspaces', query: { filter: [{ field: 'drifted', operator: 'is', value: ['true'] }] } } } }),
      });
      expect(created.status).to.equal(201);
      const id = (await json(created)).data.id;
      const filter = clientQuery({ 'filter[0][drifted][is][0]': 'true' }).slice(1);
      const same = async (saved: string, direct: string) => {
        const [a, b] = await Promise.all([json(await h.explorer(saved)), json(await h.explorer(direct))]);
        expect(a.data, saved).to.deep.equal(b.data);
        expect(a.meta, saved).to.deep.equal(b.meta);
      };
      await same(`/views/${id}/results?snapshot=${ids[0]}`, `?type=workspaces&${filter}&snapshot=${ids[0]}`);
      await same(`/views/${id}/trend?sum=resources_drifted`, `/trend?type=workspaces&${filter}&sum=resources_drifted`);
      await same(`/views/${id}/changes?from=${ids[0]}`, `/changes?type=workspaces&${filter}&from=${ids[0]}`);
      const csv = await h.explorer(`/views/${id}/changes/export/csv?from=${ids[0]}`);
      const direct = await h.explorer(`/changes/export/csv?type=workspaces&${filter}&from=${ids[0]}`);
      expect(await csv.text()).to.equal(await direct.text());
      const past = await h.explorer(`/views/${id}/csv?as_of=1999-01-01`);
      expect(past.status).to.equal(400);
      expect((await json(past)).errors[0].source).to.deep.equal({ parameter: 'as_of' });
    });
  });
});
