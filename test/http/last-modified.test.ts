// Last-Modified (docs/interface.md): every answer read from snapshot data carries, as an HTTP date, the time
// the snapshot it read became current — its manifest's `createdAt`. Where a route reads several, the
// newest it read: `to` for changes, the newest point for a trend, the newest listed for the snapshot list;
// with time travel the chosen one. The same on a 304 and on an answer from the response cache; never on
// an error. Every expected value is computed here from the manifests on disk, never typed in.
import { expect } from 'chai';
import { readManifest } from '../../src/snapshots/snapshot-dir.js';
import { ORG } from '../fixtures/small-source.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';
import { currentSnapshot, DAY1, loadDays, writeDay } from '../helpers/history-days.js';

const BASE = `/api/v2/organizations/${ORG}/explorer`;
const JSONAPI = 'application/vnd.api+json';
/** RFC 9110 §5.6.7 IMF-fixdate. */
const IMF_FIXDATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** The snapshot's load time as an HTTP date, from its manifest. */
async function loadedAt(h: Harness, id: string): Promise<string> {
  return new Date((await readManifest(h.dataDir, id)).createdAt).toUTCString();
}

/** Waits until the clock is past the second `id` was loaded in, so that the next load has a later HTTP date. */
async function nextSecond(h: Harness, id: string): Promise<void> {
  const ms = Date.parse((await readManifest(h.dataDir, id)).createdAt);
  await new Promise((r) => setTimeout(r, Math.max(0, Math.floor(ms / 1000) * 1000 + 1000 - Date.now() + 20)));
}

describe('Last-Modified: when the snapshot an answer read was loaded', function () {
  this.timeout(60_000);
  let h: Harness;
  /** The three days' snapshot ids, oldest first, and their load times as HTTP dates. */
  let ids: string[] = [];
  const at: Record<string, string> = {};
  let view = '';
  /** While each day was current: what the current answers said. */
  const whileCurrent: { id: string; headers: Record<string, string | null> }[] = [];

  const get = (path: string, headers: Record<string, string> = {}) => h.request(`${BASE}${path}`, { headers });
  async function lastModified(path: string): Promise<string | null> {
    const res = await get(path);
    await res.arrayBuffer();
    expect(res.status, `${path}: ${res.status}`).to.equal(200);
    return res.headers.get('last-modified');
  }

  before(async () => {
    h = await startHarness({ writeSource: (dir) => writeDay(dir, DAY1) });
    const created = await h.request(`${BASE}/views`, {
      method: 'POST', headers: { 'Content-Type': JSONAPI },
      body: JSON.stringify({ data: { name: 'last modified', query_type: 'workspaces', query: { filter: [], sort: ['workspace_name'] } } }),
    });
    expect(created.status).to.equal(201);
    view = `/views/${(await json(created)).data.id as string}`;
    ids = await loadDays(h, async () => {
      const id = await currentSnapshot(h);
      const headers: Record<string, string | null> = {};
      for (const path of ['?type=workspaces', '/export/csv?type=tf_versions', `${view}/results`, '/snapshots', '/trend?type=workspaces']) {
        headers[path] = await lastModified(path);
      }
      whileCurrent.push({ id, headers });
      await nextSecond(h, id);
    });
    for (const id of ids) at[id] = await loadedAt(h, id);
  });
  after(async () => { await h?.close(); });

  it('is an IMF-fixdate, one per snapshot, and the loaded-at of the snapshot list to the second', async () => {
    expect(new Set(Object.values(at)).size).to.equal(3);
    const listed = (await json(await get('/snapshots'))).data as { id: string; attributes: { 'loaded-at': string } }[];
    expect(listed.map((s) => s.id)).to.deep.equal([...ids].reverse());
    for (const s of listed) {
      expect(at[s.id]).to.match(IMF_FIXDATE);
      expect(new Date(s.attributes['loaded-at']).toUTCString()).to.equal(at[s.id]);
    }
  });

  it('follows the current snapshot: each load changes it on every current answer', () => {
    expect(whileCurrent.map((w) => w.id)).to.deep.equal(ids);
    for (const { id, headers } of whileCurrent) {
      for (const [path, value] of Object.entries(headers)) expect(value, `${path} while ${id} was current`).to.equal(at[id]);
    }
  });

  it('is the current snapshot\'s on queries, exports, saved-view results and CSV, the list, trends and changes to it', async () => {
    const current = ids[2]!;
    for (const path of [
      '?type=workspaces&page%5Bsize%5D=2', '/export/csv?type=workspaces', `${view}/results`, `${view}/csv`, `${view}/export/csv`,
      '/snapshots', '/snapshots?page%5Bnumber%5D=2&page%5Bsize%5D=1', // the newest listed, whichever page shows it
      '/trend?type=workspaces', '/trend?type=workspaces&sum=resource_count', `${view}/trend`,
      // A trend with no point at all still read the current snapshot to find none.
      '/trend?type=workspaces&since=2999-01-01T00:00:00Z',
      '/changes?type=workspaces', '/changes/export/csv?type=workspaces', `${view}/changes`, `${view}/changes/export/csv`,
      `/changes?type=workspaces&from=${ids[0]}`,
      '/summary?type=workspaces&group_by=tags', '/summary/export/csv?type=workspaces&group_by=tags', `${view}/summary?group_by=project_name`, `${view}/summary/export/csv?group_by=project_name`,
    ]) {
      expect(await lastModified(path), path).to.equal(at[current]);
    }
  });

  it('is the later snapshot\'s (`to`) on changes between two older ones', async () => {
    const [first, second] = ids as [string, string];
    for (const path of [
      `/changes?type=workspaces&to=${second}`, `/changes?type=workspaces&from=${first}&to=${second}`,
      `/changes/export/csv?type=workspaces&to=${second}`, `${view}/changes?to=${second}`, `${view}/changes/export/csv?from=${first}&to=${second}`,
      `/changes?type=workspaces&to_as_of=${encodeURIComponent((await readManifest(h.dataDir, second)).createdAt)}`,
    ]) {
      expect(await lastModified(path), path).to.equal(at[second]);
    }
  });

  it('is the chosen snapshot\'s with time travel', async () => {
    for (const id of ids) {
      const asOf = encodeURIComponent((await readManifest(h.dataDir, id)).createdAt);
      for (const path of [`?type=workspaces&snapshot=${id}`, `?type=providers&as_of=${asOf}`, `/export/csv?type=workspaces&snapshot=${id}`,
        `${view}/results?as_of=${asOf}`, `${view}/csv?snapshot=${id}`, `${view}/export/csv?as_of=${asOf}`]) {
        expect(await lastModified(path), path).to.equal(at[id]);
      }
    }
  });

  it('comes with the 304 as with the 200, and with an answer from the response cache', async () => {
    for (const path of ['?type=tf_versions', `?type=tf_versions&snapshot=${ids[0]}`, '/export/csv?type=tf_versions', `${view}/results`, `${view}/csv`,
      '/snapshots', '/trend?type=workspaces', `/changes?type=workspaces&to=${ids[1]}`, `/changes/export/csv?type=workspaces&to=${ids[1]}`]) {
      const first = await get(path);
      await first.arrayBuffer();
      expect(first.status, path).to.equal(200);
      const tasks = h.running.pool.tasksStarted;
      const again = await get(path, { 'If-None-Match': first.headers.get('etag')! });
      expect(again.status, path).to.equal(304);
      expect(again.headers.get('last-modified'), `${path} → 304`).to.equal(first.headers.get('last-modified'));
      expect(first.headers.get('last-modified'), path).to.be.a('string');
      expect(h.running.pool.tasksStarted, `${path}: nothing ran for the 304`).to.equal(tasks);
    }
    // A JSON page answered again is answered from memory, no worker task: with the same Last-Modified.
    for (const [path, id] of [['?type=modules&page%5Bsize%5D=1', ids[2]], [`?type=modules&page%5Bsize%5D=1&snapshot=${ids[1]}`, ids[1]], [`/changes?type=modules&to=${ids[1]}`, ids[1]]] as const) {
      expect(await lastModified(path), path).to.equal(at[id!]);
      const tasks = h.running.pool.tasksStarted;
      expect(await lastModified(path), `${path}, cached`).to.equal(at[id!]);
      expect(h.running.pool.tasksStarted, `${path}: from the cache`).to.equal(tasks);
    }
  });

  it('is absent from errors, and from answers that read no snapshot', async () => {
    for (const [path, status] of [
      ['?type=workspaces&sort=nope', 400], ['?type=workspaces&snapshot=nope', 400], ['/export/csv?type=workspaces&as_of=1999-01-01', 400],
      [`/changes?type=workspaces&from=${ids[2]}`, 400], ['/trend?type=workspaces&sum=workspace_name', 400], ['/snapshots?page%5Bsize%5D=0', 400],
      [`${view}/results?snapshot=nope`, 400], ['/views/sq-0000000000000000/results', 404],
    ] as const) {
      const res = await get(path);
      await res.arrayBuffer();
      expect(res.status, path).to.equal(status);
      expect(res.headers.get('last-modified'), path).to.equal(null);
    }
    const otherOrg = await h.request(`/api/v2/organizations/no-such-org/explorer?type=workspaces`);
    expect(otherOrg.status).to.equal(404);
    expect(otherOrg.headers.get('last-modified')).to.equal(null);
    for (const path of ['/views', view]) {
      const res = await get(path);
      await res.arrayBuffer();
      expect(res.status, path).to.equal(200);
      expect(res.headers.get('last-modified'), path).to.equal(null);
    }
  });

  it('is declared on the 200 and 304 of exactly the operations that read a snapshot', async () => {
    const doc = await json(await h.request('/api/v2/explorer/openapi.json'));
    const declared = doc.components.headers['Last-Modified'];
    expect(declared.required).to.equal(true);
    expect(new RegExp(declared.schema.pattern).test(at[ids[0]!]!)).to.equal(true);
    const reading = new Set(['query', 'exportCsv', 'savedViewResults', 'savedViewCsv', 'savedViewExportCsv', 'listSnapshots',
      'changes', 'changesCsv', 'trend', 'savedViewChanges', 'savedViewChangesCsv', 'savedViewTrend',
      'summary', 'summaryCsv', 'savedViewSummary', 'savedViewSummaryCsv',
      'queryAcross', 'exportAcrossCsv', 'summaryAcross', 'summaryAcrossCsv',
      // Parquet and NDJSON beside every export (not beside the short savedViewCsv).
      ...['export', 'savedViewExport', 'changes', 'savedViewChanges', 'summary', 'savedViewSummary', 'exportAcross', 'summaryAcross'].flatMap((id) => [`${id}Parquet`, `${id}Ndjson`])]);
    const resolve = (node: any) => (node?.$ref ? node.$ref.split('/').slice(1).reduce((n: any, k: string) => n[k], doc) : node);
    const seen = new Set<string>();
    for (const item of Object.values(doc.paths as Record<string, Record<string, any>>)) {
      for (const op of Object.values(item)) {
        if (!op?.operationId) continue;
        seen.add(op.operationId);
        for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
          const headers = Object.keys(resolve(response).headers ?? {});
          const expected = reading.has(op.operationId) && (status === '200' || status === '304');
          expect(headers.includes('Last-Modified'), `${op.operationId} → ${status}`).to.equal(expected);
        }
      }
    }
    for (const id of reading) expect([...seen]).to.include(id);
  });

  describe('on a query that misses its deadline', () => {
    let slow: Harness;
    before(async () => { slow = await startHarness({ env: { QUERY_TIMEOUT_MS: '1' } }); });
    after(async () => { await slow?.close(); });

    it('is absent from the 504, though the snapshot was chosen, and so is the ETag', async () => {
      for (const path of ['?type=workspaces', '/export/csv?type=workspaces']) {
        const res = await slow.explorer(path);
        await res.arrayBuffer();
        expect(res.status, path).to.equal(504);
        expect(res.headers.get('x-explorer-snapshot'), path).to.be.a('string');
        expect(res.headers.get('last-modified'), path).to.equal(null);
        expect(res.headers.get('etag'), path).to.equal(null);
      }
    });
  });
});
