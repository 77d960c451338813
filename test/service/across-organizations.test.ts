// Queries across organizations (docs/access.md) against the per-organization answers they promise to
// equal: for random views, filters, sorts and fields, and for each kind of token, the answer of
// /api/v2/explorer — JSON walked to its end by page number and by cursor, CSV, NDJSON, Parquet, summaries —
// is the union of the per-organization answers of exactly the organizations the token reaches, each row
// with its organization_name first, in the order the sort gives (ties by organization, then as each
// organization orders them). Each request reads either the loaded snapshot, whose organization keys follow
// the names' order (a mixed-case name among them) so that the default order is the stored one, or the
// snapshot after two batches, whose organizations read the base, an overlay or the deltas.
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueToken } from '../../src/access/tokens.js';
import { catalogFor } from '../../src/catalog/catalog.js';
import type { View } from '../../src/catalog/types.js';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { seededRandom } from '../../src/sample/random.js';
import { writeSample } from '../../src/sample/sample.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { listSnapshotIds, readManifest } from '../../src/snapshots/snapshot-dir.js';
import { openSnapshot } from '../../src/snapshots/read/current-snapshot.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { openStateStore } from '../../src/store/open-store.js';
import { cmpCodePoints, type Value } from '../helpers/fixture-model.js';
import { clientQuery } from '../helpers/harness.js';
import { compareDirected } from '../helpers/summary-model.js';

const fold = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
const byName = (a: string, b: string) => cmpCodePoints(fold(a), fold(b)) || cmpCodePoints(a, b);
const attribute = (name: string) => name.replace(/_/g, '-');

interface Ask {
  view: View;
  /** The cross-organization request's fields (none: every field). */
  fields?: string[];
  sort?: string[];
  /** Filters as query parameters. */
  filters: Record<string, string>;
  /** The snapshot read: the loaded one (`snapshot=` its id, in `filters`) or the current one. */
  at: At;
  /** A filter on organization_name (cross-organization only): which organizations it keeps. */
  organizationTest?: { params: Record<string, string>; keeps: (name: string) => boolean };
}

type At = 'loaded' | 'current';

describe('queries across organizations equal the union of the organizations reached', function () {
  this.timeout(600_000);
  let dir: string;
  let server: RunningServer;
  let db: DuckDBInstance;
  let duck: DuckDBConnection;
  const tokens: Record<string, string> = {};
  let loadedId: string;
  /** The organizations of each snapshot read. */
  const organizationsAt = {} as Record<At, string[]>;
  /** The organizations each token reaches in each snapshot, found by asking the per-organization routes (200, not 404). */
  const reachedAt = { loaded: {}, current: {} } as Record<At, Record<string, string[]>>;
  /** The snapshot parameter of a request that reads `at`. */
  const pin = (at: At): Record<string, string> => (at === 'loaded' ? { snapshot: loadedId } : {});
  // One seed in the suite; ACROSS_SEED explores others.
  const seed = Number(process.env.ACROSS_SEED ?? 47);
  const rnd = seededRandom(seed);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-across-'));
    const source = join(dir, 'source');
    // 30 organizations: Northwind_Traders among them, whose capital sorts it among the n's.
    await writeSample(source, { organizations: 30, workspaces: 240, seed });
    await writeSampleChanges(source, join(dir, 'batches'), { batches: 2, workspaces: 12, seed });
    const dataDir = join(dir, 'data');
    await loadSnapshot(source, { dataDir, memoryLimit: '1GB', label: 'base' });
    loadedId = (await listSnapshotIds(dataDir))[0]!;
    const loaded = await readManifest(dataDir, loadedId);
    const rowsOf = loaded.organizationRows!;
    const sizes = Object.keys(rowsOf.workspaces!).map((o) => rowsOf.workspaces![o]! + (rowsOf.resources?.[o] ?? 0)).sort((a, b) => a - b);
    // The first batch writes organizations up to the median size whole into an overlay and layers the others;
    // the second layers every one it touches: organizations read the base, an overlay, or deltas.
    await applyBatch(join(dir, 'batches', 'batch-0001'), { dataDir, memoryLimit: '1GB', wholeRows: sizes[Math.floor(sizes.length / 2)]! });
    await applyBatch(join(dir, 'batches', 'batch-0002'), { dataDir, memoryLimit: '1GB', wholeRows: 0 });
    const config = loadConfig({ DATA_DIR: dataDir, PORT: '0', POOL_WORKERS: '2', WORKER_CONCURRENCY: '2', DUCKDB_MEMORY_LIMIT: '512MB', RATE_LIMIT_MAX: '1000000', SHUTDOWN_GRACE_MS: '2000' });
    const store = await openStateStore(config);
    const issue = async (kind: 'auditor' | 'organization' | 'user', organization: string | null, user: string | null) =>
      (await issueToken(store, { kind, organization, team: null, user })).token;
    server = await startServer(config, silentLogger);
    const manifest = await readManifest(dataDir, (await listSnapshotIds(dataDir)).at(-1)!);
    expect(manifest.overlays?.length ?? 0, 'an overlay is read').to.be.greaterThan(0);
    expect(manifest.deltaOrganizations?.length ?? 0, 'a delta is read').to.be.greaterThan(0);
    tokens.auditor = await issue('auditor', null, null);
    for (const at of ['loaded', 'current'] as const) {
      organizationsAt[at] = (await (await get(`/api/v2/explorer/summary${clientQuery({ type: 'workspaces', group_by: 'organization_name', 'page[size]': '100', ...pin(at) })}`, tokens.auditor)).json() as any)
        .data.map((g: any) => g.attributes['organization-name'] as string);
    }
    const organizations = organizationsAt.current;
    expect(organizations.length, 'organizations').to.be.greaterThan(20);
    expect(organizationsAt.loaded).to.include('Northwind_Traders');
    tokens.organization = await issue('organization', organizations[1]!, null);
    // A user in several organizations (the sample draws members from a pool), and one in none.
    const members = readFileSync(join(source, 'team_members.ndjson'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { organization: string; user: string });
    const counts = new Map<string, Set<string>>();
    for (const m of members) counts.set(m.user, (counts.get(m.user) ?? new Set()).add(m.organization));
    const user = [...counts.entries()].sort((a, b) => b[1].size - a[1].size || (a[0] < b[0] ? -1 : 1))[0]![0];
    tokens.user = await issue('user', null, user);
    tokens.nobody = await issue('user', null, 'nobody-at-all');
    await store.close();
    for (const at of ['loaded', 'current'] as const) {
      for (const [kind, token] of Object.entries(tokens)) {
        const reached: string[] = reachedAt[at][kind] = [];
        for (const o of organizationsAt[at]) {
          if ((await get(`/api/v2/organizations/${encodeURIComponent(o)}/explorer${clientQuery({ type: 'workspaces', 'page[size]': '1', ...pin(at) })}`, token)).status === 200) reached.push(o);
        }
      }
      expect(reachedAt[at].auditor).to.deep.equal(organizationsAt[at]);
      expect(reachedAt[at].user!.length, `${user} reaches several organizations but not all`).to.be.within(2, organizationsAt[at].length - 1);
      expect(reachedAt[at].nobody).to.deep.equal([]);
    }
    expect(reachedAt.current.organization).to.deep.equal([organizations[1]]);
    // Both plans are compared: the loaded snapshot's rows lie in the default order across organizations (a
    // scan), the current one's are a union of layers (a sort).
    const everyone = async (id: string) => { const snap = await openSnapshot(dataDir, id); return snap.across('workspaces', [...snap.organizations]); };
    expect((await everyone(loadedId)).defaultOrderStored, 'the loaded snapshot: stored order').to.equal(true);
    expect((await everyone(manifest.id)).defaultOrderStored, 'after batches: a union').to.equal(undefined);
    db = await DuckDBInstance.create(':memory:');
    duck = await db.connect();
    await duck.run(`SET TimeZone = 'UTC'`);
  });
  after(async () => {
    duck?.closeSync();
    db?.closeSync();
    await server?.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  const get = (path: string, token: string) => fetch(`${server.url}${path}`, { headers: { Authorization: `Bearer ${token}` } });
  async function body(path: string, token: string): Promise<any> {
    const res = await get(path, token);
    const text = await res.text();
    expect(res.status, `${path}: ${text.slice(0, 300)}`).to.equal(200);
    return JSON.parse(text);
  }
  async function bytes(path: string, token: string): Promise<Buffer> {
    const res = await get(path, token);
    const b = Buffer.from(await res.arrayBuffer());
    expect(res.status, `${path}: ${b.toString().slice(0, 300)}`).to.equal(200);
    return b;
  }

  /** Every item of a JSON query, walked by page number (`size` rows a page). */
  async function walkNumbers(path: string, params: Record<string, string>, token: string, size: number): Promise<{ items: any[]; total: number }> {
    const items: any[] = [];
    let total = -1;
    for (let n = 1; ; n++) {
      const page = await body(`${path}${clientQuery({ ...params, 'page[size]': String(size), 'page[number]': String(n) })}`, token);
      total = page.meta.pagination['total-count'];
      items.push(...page.data);
      if (page.links.next === null) return { items, total };
    }
  }

  /** Every item of a JSON query, walked by cursor. */
  async function walkCursor(path: string, params: Record<string, string>, token: string, size: number): Promise<any[]> {
    const items: any[] = [];
    let next: string | null = `${server.url}${path}${clientQuery({ ...params, 'page[size]': String(size), 'page[after]': '' })}`;
    while (next !== null) {
      const res = await fetch(next, { headers: { Authorization: `Bearer ${token}` } });
      const page: any = await res.json();
      expect(res.status, JSON.stringify(page).slice(0, 300)).to.equal(200);
      items.push(...page.data);
      next = page.links.next;
    }
    return items;
  }

  let file = 0;
  async function parquetRows(data: Buffer): Promise<unknown[][]> {
    const path = join(dir, `${++file}.parquet`);
    writeFileSync(path, data);
    const described = (await duck.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${path}')`)).getRows().map((r) => [String(r[0]), String(r[1])]);
    const columns = described.map(([name, type]) => (type === 'TIMESTAMP WITH TIME ZONE' ? `strftime("${name}", '%Y-%m-%dT%H:%M:%S.%g+00:00')` : `"${name}"`));
    if (columns.length === 0) return [];
    return (await duck.runAndReadAll(`SELECT to_json([${columns.map((c) => `to_json(${c})`).join(', ')}])::VARCHAR FROM read_parquet('${path}')`))
      .getRows().map((r) => [described.map((d) => d[0]), ...JSON.parse(r[0] as string)]);
  }

  /** A random request of a random view: fields, sort and filters drawn from the view and the rows of one organization. */
  async function randomAsk(): Promise<Ask> {
    const views = catalogFor().views;
    const view = views[Math.floor(rnd() * views.length)]!;
    const across = catalogFor().across(view.name)!;
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const fields = rnd() < 0.5 ? undefined : [...new Set(Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => pick(across.fields).name))];
    const sortable = across.fields.map((f) => f.name);
    const sort = rnd() < 0.3 ? undefined : [...new Set(Array.from({ length: 1 + Math.floor(rnd() * 2) }, () => pick(sortable)))].map((n) => (rnd() < 0.5 ? `-${n}` : n));
    const at: At = rnd() < 0.4 ? 'loaded' : 'current';
    // The snapshot is a parameter of every request the ask makes, the per-organization ones too.
    const filters: Record<string, string> = { ...pin(at) };
    // A value some row has, from an organization's first page, so that filters keep some rows and drop others.
    const sample = (await body(`/api/v2/organizations/${encodeURIComponent(pick(organizationsAt[at]))}/explorer${clientQuery({ type: view.name, 'page[size]': '50', ...pin(at) })}`, tokens.auditor)).data as any[];
    // Each condition holds for one row (`row`), so that together they keep some rows and drop others.
    const row = sample.length > 0 ? pick(sample) : null;
    const conditions = row ? Math.floor(rnd() * 3) : 0;
    for (let i = 0; i < conditions; i++) {
      const field = pick(view.fields.filter((f) => f.name !== 'organization_name'));
      const value = row!.attributes[field.attribute] as Value;
      const key = (op: string) => `filter[${i}][${field.name}][${op}][0]`;
      if (value === null) filters[key('is_empty')] = '';
      else if (field.type === 'string' && rnd() < 0.5) filters[key('is')] = String(value);
      else if (field.type === 'string') filters[key('contains')] = String(value).slice(0, 1 + Math.floor(rnd() * 3));
      else if (field.type === 'number') filters[key(rnd() < 0.5 ? 'gteq' : 'lteq')] = String(value);
      else if (field.type === 'boolean') filters[key('is')] = String(value);
      else {
        // A second either side of the row's time: the row is kept.
        const after = rnd() < 0.5;
        filters[key(after ? 'is_after' : 'is_before')] = new Date(Date.parse(String(value)) + (after ? -1000 : 1000)).toISOString();
      }
    }
    const ask: Ask = { view, at, ...(fields ? { fields } : {}), ...(sort ? { sort } : {}), filters };
    if (rnd() < 0.3) {
      const text = pick(organizationsAt[at]).slice(0, 3);
      ask.organizationTest = { params: { 'filter[9][organization_name][contains][0]': text }, keeps: (name) => fold(name).includes(fold(text)) };
    }
    return ask;
  }

  /** The per-organization answers of the organizations `kind` reaches, merged as the cross-organization answer must give them. */
  async function expected(ask: Ask, kind: string) {
    const across = catalogFor().across(ask.view.name)!;
    const fields = [...new Set(['organization_name', ...(ask.fields ?? across.fields.map((f) => f.name))])];
    const own = ask.view.field('organization_name') !== undefined;
    // The per-organization request: the same fields (organization_name only where the view has it), sort and filters.
    const orgFields = own ? fields : fields.filter((f) => f !== 'organization_name');
    const orgSort = (ask.sort ?? []).filter((k) => own || k.replace(/^-/, '') !== 'organization_name');
    const sortKeys = ask.sort ?? ['organization_name', ...ask.view.defaultSort];
    const rows: { org: string; index: number; item: any; full: any; exports: { csv: string; ndjson: string; parquet: unknown[] } }[] = [];
    for (const org of reachedAt[ask.at][kind]!) {
      if (ask.organizationTest && !ask.organizationTest.keeps(org)) continue;
      const path = `/api/v2/organizations/${encodeURIComponent(org)}/explorer`;
      const params = { type: ask.view.name, ...ask.filters, ...(orgSort.length > 0 ? { sort: orgSort.join(',') } : {}) };
      const full = (await walkNumbers(path, params, tokens.auditor, 100)).items;
      // The organization's exports of the same fields; with organization_name alone (a view without it) there are none to ask for.
      const named = { ...params, fields: orgFields.join(',') };
      const alone = orgFields.length === 0;
      const csv = alone ? [] : (await bytes(`${path}/export/csv${clientQuery(named)}`, tokens.auditor)).toString('utf8').split('\n').slice(1, -1);
      const ndjson = alone ? [] : (await bytes(`${path}/export/ndjson${clientQuery(named)}`, tokens.auditor)).toString('utf8').split('\n').slice(0, -1);
      const parquet = alone ? [] : (await parquetRows(await bytes(`${path}/export/parquet${clientQuery(named)}`, tokens.auditor))).map((r) => r.slice(1));
      if (!alone) expect(csv.length, `${org} exports`).to.equal(full.length);
      full.forEach((f: any, index: number) => {
        const attributes = Object.fromEntries(fields.map((n) => [attribute(n), n === 'organization_name' ? org : f.attributes[attribute(n)]]));
        rows.push({
          org, index, full: f,
          item: { id: f.id, type: f.type, attributes },
          exports: own ? { csv: csv[index]!, ndjson: ndjson[index]!, parquet: parquet[index]! } : {
            csv: [`"${org}"`, ...(alone ? [] : [csv[index]!])].join(','),
            ndjson: `{"organization_name":${JSON.stringify(org)}${alone ? '}' : `,${ndjson[index]!.slice(1)}`}`,
            parquet: [org, ...(alone ? [] : parquet[index]!)],
          },
        });
      });
    }
    const value = (r: (typeof rows)[number], name: string): Value => (name === 'organization_name' ? r.org : r.full.attributes[attribute(name)]);
    rows.sort((a, b) => {
      for (const key of sortKeys) {
        const descending = key.startsWith('-');
        const name = key.replace(/^-/, '');
        const c = compareDirected(ask.view.name, name, value(a, name), value(b, name), descending);
        if (c !== 0) return c;
      }
      return byName(a.org, b.org) || a.index - b.index;
    });
    return { fields, rows };
  }

  const requestOf = (ask: Ask): Record<string, string> => ({
    type: ask.view.name, ...ask.filters, ...ask.organizationTest?.params,
    ...(ask.fields ? { fields: ask.fields.join(',') } : {}), ...(ask.sort ? { sort: ask.sort.join(',') } : {}),
  });

  /** Rows each request's auditor answer held: the requests must not all be empty. */
  const answered: number[] = [];

  for (let round = 0; round < 8; round++) {
    it(`random request ${round + 1}: JSON by number and by cursor, CSV, NDJSON and Parquet, for every kind of token`, async () => {
      const ask = await randomAsk();
      const params = requestOf(ask);
      for (const kind of ['auditor', 'user', 'organization', 'nobody']) {
        const label = `${kind} ${ask.at} ${JSON.stringify(params)}`;
        const want = await expected(ask, kind);
        const size = 10 + Math.floor(rnd() * 90);
        const numbered = await walkNumbers('/api/v2/explorer', params, tokens[kind]!, size);
        expect(numbered.total, `${label}: total`).to.equal(want.rows.length);
        if (kind === 'auditor') answered.push(want.rows.length);
        expect(numbered.items, `${label}: by number`).to.deep.equal(want.rows.map((r) => r.item));
        for (const item of numbered.items) expect(Object.keys(item.attributes), label).to.deep.equal(want.fields.map(attribute));
        expect(await walkCursor('/api/v2/explorer', params, tokens[kind]!, size), `${label}: by cursor`).to.deep.equal(want.rows.map((r) => r.item));
        const csv = (await bytes(`/api/v2/explorer/export/csv${clientQuery(params)}`, tokens[kind]!)).toString('utf8').split('\n');
        expect(csv[0], `${label}: header`).to.equal(want.fields.join(','));
        expect(csv.slice(1, -1), `${label}: CSV`).to.deep.equal(want.rows.map((r) => r.exports.csv));
        const ndjson = (await bytes(`/api/v2/explorer/export/ndjson${clientQuery(params)}`, tokens[kind]!)).toString('utf8').split('\n').slice(0, -1);
        expect(ndjson, `${label}: NDJSON`).to.deep.equal(want.rows.map((r) => r.exports.ndjson));
        const parquet = await parquetRows(await bytes(`/api/v2/explorer/export/parquet${clientQuery(params)}`, tokens[kind]!));
        if (parquet.length > 0) expect(parquet[0]![0], `${label}: Parquet columns`).to.deep.equal(want.fields);
        expect(parquet.map((r) => r.slice(1)), `${label}: Parquet`).to.deep.equal(want.rows.map((r) => r.exports.parquet));
      }
    });
  }

  it('drew requests that answer rows, most of them', () => {
    expect(answered.length).to.equal(8);
    expect(answered.filter((n) => n > 0).length, `rows per request: ${answered.join(', ')}`).to.be.greaterThan(answered.length / 2);
  });

  for (let round = 0; round < 4; round++) {
    it(`random summary ${round + 1}: the groups' counts and sums are the sums of each organization's`, async () => {
      const ask = await randomAsk();
      const across = catalogFor().across(ask.view.name)!;
      const groupable = across.fields.filter((f) => f.type !== 'datetime').map((f) => f.name);
      const groups = [...new Set([groupable[Math.floor(rnd() * groupable.length)]!, ...(rnd() < 0.4 ? ['organization_name'] : [])])];
      const number = ask.view.fields.find((f) => f.type === 'number');
      const own: Record<string, string> = { type: ask.view.name, ...ask.filters, group_by: groups.join(','), ...(number ? { sum: number.name } : {}) };
      const params: Record<string, string> = { ...own, ...ask.organizationTest?.params };
      for (const kind of ['auditor', 'user', 'organization', 'nobody']) {
        const label = `${kind} ${JSON.stringify(params)}`;
        // Each organization's groups (grouped by organization_name too: its one value), merged by group id.
        const merged = new Map<string, { id: string; values: Record<string, Value>; count: number; sums: Record<string, number | null> }>();
        let rows = 0;
        for (const org of reachedAt[ask.at][kind]!) {
          if (ask.organizationTest && !ask.organizationTest.keeps(org)) continue;
          const orgGroups = groups.filter((g) => ask.view.field('organization_name') !== undefined || g !== 'organization_name');
          if (orgGroups.length === 0) {
            // Grouped by organization alone, a view without the field: the organization's matching rows are its one group.
            const page = await body(`/api/v2/organizations/${encodeURIComponent(org)}/explorer${clientQuery({ type: ask.view.name, ...ask.filters, 'page[size]': '1' })}`, tokens.auditor);
            const count = page.meta.pagination['total-count'];
            rows += count;
            if (count === 0) continue;
            const all = (await walkNumbers(`/api/v2/organizations/${encodeURIComponent(org)}/explorer`, { type: ask.view.name, ...ask.filters }, tokens.auditor, 100)).items;
            const sum = number ? all.reduce((s: number | null, r: any) => (r.attributes[number.attribute] === null ? s : (s ?? 0) + r.attributes[number.attribute]), null) : null;
            merged.set(org, { id: org, values: { organization_name: org }, count, sums: number ? { [number.name]: sum } : {} });
            continue;
          }
          const summary = await body(`/api/v2/organizations/${encodeURIComponent(org)}/explorer/summary${clientQuery({ ...own, group_by: orgGroups.join(','), 'page[size]': '100' })}`, tokens.auditor);
          rows += summary.meta.rows;
          for (const g of summary.data) {
            const values: Record<string, Value> = { ...Object.fromEntries(orgGroups.map((n) => [n, g.attributes[attribute(n)]])), organization_name: org };
            const key = JSON.stringify(groups.map((n) => values[n]));
            const m = merged.get(key) ?? { id: key, values, count: 0, sums: {} };
            m.count += g.attributes.count;
            for (const [f, v] of Object.entries((g.attributes.sums ?? {}) as Record<string, number | null>)) m.sums[f] = v === null ? m.sums[f] ?? null : (m.sums[f] ?? 0) + v;
            merged.set(key, m);
          }
        }
        const want = [...merged.values()].sort((a, b) => b.count - a.count
          || groups.reduce((c, n) => c || compareDirected(ask.view.name, n, a.values[n]!, b.values[n]!, false), 0));
        const got: any[] = [];
        let meta: any;
        for (let n = 1; ; n++) {
          const page = await body(`/api/v2/explorer/summary${clientQuery({ ...params, 'page[size]': '7', 'page[number]': String(n) })}`, tokens[kind]!);
          got.push(...page.data);
          meta = page.meta;
          if (page.links.next === null) break;
        }
        expect(meta.rows, `${label}: rows`).to.equal(rows);
        expect(meta.groups, `${label}: groups`).to.equal(want.length);
        expect(got.map((g) => ({ values: Object.fromEntries(groups.map((n) => [n, g.attributes[attribute(n)]])), count: g.attributes.count, sums: g.attributes.sums ?? {} })), label)
          .to.deep.equal(want.map((w) => ({ values: Object.fromEntries(groups.map((n) => [n, w.values[n]])), count: w.count, sums: w.sums })));
        const csv = (await bytes(`/api/v2/explorer/summary/export/csv${clientQuery(params)}`, tokens[kind]!)).toString('utf8').split('\n');
        expect(csv.length - 2, `${label}: summary CSV rows`).to.equal(want.length);
      }
    });
  }

  it('a token that reaches no organization gets empty answers, not errors', async () => {
    const page = await body('/api/v2/explorer?type=workspaces', tokens.nobody!);
    expect(page.data).to.deep.equal([]);
    expect(page.meta.pagination['total-count']).to.equal(0);
    expect((await bytes('/api/v2/explorer/export/csv?type=resources', tokens.nobody!)).toString()).to.equal(`${catalogFor().across('resources')!.fields.map((f) => f.name).join(',')}\n`);
  });
});
