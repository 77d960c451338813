// GET /metrics: off by default, behind METRICS_TOKEN when set, and counting what the service did.
import { expect } from 'chai';
import { cli } from '../helpers/cli.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { recordRejectedBatch } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/** The value of one sample line, e.g. `explorer_rows_returned_total{view="workspaces",kind="page"}`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-z_:]+)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[3] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[4]);
  }
  return undefined;
}

describe('metrics', () => {
  describe('without configuration', () => {
    let h: Harness;
    before(async () => { h = await startHarness(); });
    after(async () => { await h.close(); });
    it('is off: 404 as JSON:API', async () => {
      const res = await h.request('/metrics', { token: null });
      expect(res.status).to.equal(404);
      expect((await json(res)).errors[0].status).to.equal('404');
    });
  });

  describe('with METRICS_TOKEN', () => {
    let h: Harness;
    const TOKEN = 'scrape-secret-1234';
    before(async () => { h = await startHarness({ env: { METRICS_TOKEN: TOKEN, QUERY_TIMEOUT_MS: '20000' } }); });
    after(async () => { await h.close(); });
    const scrape = async () => {
      const res = await h.request('/metrics', { token: TOKEN });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
      return res.text();
    };

    it('refuses a scrape without the token, or with an API token', async () => {
      expect((await h.request('/metrics', { token: null })).status).to.equal(401);
      expect((await h.request('/metrics', { token: h.tokens.org })).status).to.equal(401);
      expect((await h.request('/metrics', { token: `${TOKEN}x` })).status).to.equal(401);
    });

    it('counts requests by route and status, rows and bytes by view, and query latency', async () => {
      const before = await scrape();
      const route = '/api/v2/organizations/:organization_name/explorer';
      const ok = (text: string) => sample(text, 'explorer_http_requests_total', { route, method: 'GET', status: '200' }) ?? 0;
      const rows = (text: string, kind: string) => sample(text, 'explorer_rows_returned_total', { view: 'workspaces', kind }) ?? 0;
      const bytes = (text: string, kind: string) => sample(text, 'explorer_bytes_returned_total', { view: 'workspaces', kind }) ?? 0;
      const page = await h.explorer('?type=workspaces&page%5Bsize%5D=4');
      const pageBytes = (await page.arrayBuffer()).byteLength;
      const csv = await h.request('/api/v2/organizations/acme-corp/explorer/export/csv?type=workspaces&fields%5Bworkspaces%5D=workspace_name');
      const csvText = await csv.text();
      const csvRows = csvText.trimEnd().split('\n').length - 1;
      expect((await h.explorer('?type=workspaces&sort=nope')).status).to.equal(400);

      const after = await scrape();
      expect(ok(after) - ok(before)).to.equal(1);
      expect(rows(after, 'page') - rows(before, 'page')).to.equal(4);
      expect(bytes(after, 'page') - bytes(before, 'page')).to.equal(pageBytes);
      expect(rows(after, 'export') - rows(before, 'export')).to.equal(csvRows);
      expect(bytes(after, 'export') - bytes(before, 'export')).to.equal(Buffer.byteLength(csvText));
      expect(sample(after, 'explorer_http_requests_total', { route, method: 'GET', status: '400' })).to.be.at.least(1);
      expect(sample(after, 'explorer_query_duration_seconds_count', { view: 'workspaces', kind: 'page' })).to.be.at.least(1);
      expect(sample(after, 'explorer_pool_tasks_started_total')).to.be.at.least(2);
    });

    it('counts each request under the kind of token that made it: an auditor\'s, across organizations too', async () => {
      const auditor = (await cli(['token', 'create', '--auditor'], h.dataDir)).stdout.trim().split('\n').pop()!;
      const perOrg = '/api/v2/organizations/:organization_name/explorer';
      const across = '/api/v2/explorer';
      const count = (text: string, route: string, kind: string) => sample(text, 'explorer_http_requests_total', { route, method: 'GET', status: '200', token_kind: kind }) ?? 0;
      const before = await scrape();
      expect((await h.explorer('?type=tf_versions', auditor)).status).to.equal(200);
      expect((await h.request('/api/v2/explorer?type=tf_versions', { token: auditor })).status).to.equal(200);
      expect((await h.request('/api/v2/explorer?type=providers', { token: h.tokens.alice })).status).to.equal(200);
      expect((await h.request('/api/v2/explorer?type=tf_versions', { token: null })).status).to.equal(401);
      const after = await scrape();
      expect(count(after, perOrg, 'auditor') - count(before, perOrg, 'auditor')).to.equal(1);
      expect(count(after, across, 'auditor') - count(before, across, 'auditor')).to.equal(1);
      expect(count(after, across, 'user') - count(before, across, 'user')).to.equal(1);
      expect((sample(after, 'explorer_http_requests_total', { route: across, status: '401', token_kind: 'none' }) ?? 0)
        - (sample(before, 'explorer_http_requests_total', { route: across, status: '401', token_kind: 'none' }) ?? 0)).to.equal(1);
    });

    it('counts history requests under their own kinds, and the snapshots retained', async () => {
      const before = await scrape();
      expect(sample(before, 'explorer_snapshots_retained')).to.equal(1);
      const { manifest } = await loadSnapshot(join(h.dataDir, 'source'), { dataDir: h.dataDir, label: 'again' });
      await waitFor(async () => (await h.explorer('?type=workspaces')).headers.get('x-explorer-snapshot') === manifest.id, 5000, 'second snapshot');
      const trend = await json(await h.explorer('/trend?type=workspaces&filter%5B0%5D%5Bdrifted%5D%5Bis%5D%5B0%5D=true'));
      expect(trend.data).to.have.length(2);
      expect((await h.explorer('/changes?type=workspaces')).status).to.equal(200);
      const csv = await h.explorer('/changes/export/csv?type=workspaces');
      expect(csv.status).to.equal(200);
      await csv.text();
      const after = await scrape();
      const delta = (name: string, kind: string) => (sample(after, name, { view: 'workspaces', kind }) ?? 0) - (sample(before, name, { view: 'workspaces', kind }) ?? 0);
      expect(delta('explorer_query_duration_seconds_count', 'trend')).to.equal(1);
      expect(delta('explorer_rows_returned_total', 'trend')).to.equal(2);
      expect(delta('explorer_query_duration_seconds_count', 'changes')).to.equal(1);
      expect(delta('explorer_query_duration_seconds_count', 'changes-export')).to.equal(1);
      expect(sample(after, 'explorer_snapshots_retained')).to.equal(2);
    });

    it('counts summaries under their own kinds: groups as rows, their CSV lines', async () => {
      const before = await scrape();
      const summary = await json(await h.explorer('/summary?type=workspaces&group_by=project_name'));
      const csv = await (await h.explorer('/summary/export/csv?type=workspaces&group_by=project_name')).text();
      const after = await scrape();
      const delta = (name: string, kind: string) => (sample(after, name, { view: 'workspaces', kind }) ?? 0) - (sample(before, name, { view: 'workspaces', kind }) ?? 0);
      expect(delta('explorer_query_duration_seconds_count', 'summary')).to.equal(1);
      expect(delta('explorer_rows_returned_total', 'summary')).to.equal(summary.data.length);
      expect(delta('explorer_query_duration_seconds_count', 'summary-export')).to.equal(1);
      expect(delta('explorer_rows_returned_total', 'summary-export')).to.equal(csv.trimEnd().split('\n').length - 1);
    });

    it('reports the pool, the snapshot and Redis', async () => {
      const text = await scrape();
      expect(sample(text, 'explorer_pool_slots')).to.equal(4);
      expect(sample(text, 'explorer_pool_queue_depth')).to.equal(0);
      expect(sample(text, 'explorer_snapshot_ready')).to.equal(1);
      const id = (await h.explorer('?type=tf_versions')).headers.get('x-explorer-snapshot')!;
      expect(sample(text, 'explorer_snapshot_info', { snapshot: id })).to.equal(1);
      expect(sample(text, 'explorer_snapshot_age_seconds')).to.be.within(0, 600);
      expect(sample(text, 'explorer_redis_configured')).to.equal(0);
      expect(sample(text, 'explorer_redis_up')).to.equal(0);
      expect(sample(text, 'explorer_process_resident_memory_bytes')).to.be.above(0);
    });

    it("reports each worker's DuckDB memory", async function () {
      this.timeout(30_000);
      // Reports ride on task results (at most every 10 s per worker); the queries above carried the first.
      const until = Date.now() + 25_000;
      let workers: number[] = [];
      while (Date.now() < until && workers.length === 0) {
        const text = await scrape();
        workers = [...text.matchAll(/^explorer_duckdb_memory_bytes\{worker="\d+"\} (\S+)$/gm)].map((m) => Number(m[1]));
        if (workers.length === 0) await new Promise((r) => setTimeout(r, 500));
      }
      expect(workers.length).to.be.within(1, 2);
      for (const bytes of workers) expect(bytes).to.be.above(0);
      const text = await scrape();
      const heaps = [...text.matchAll(/^explorer_worker_heap_used_bytes\{worker="\d+"\} (\S+)$/gm)].map((m) => Number(m[1]));
      expect(heaps).to.have.length(workers.length);
      for (const bytes of heaps) expect(bytes).to.be.above(1e6);
    });
  });

  describe('time-outs, cancellations and rate limits', () => {
    let h: Harness;
    before(async () => { h = await startHarness({ env: { METRICS_PUBLIC: '1', QUERY_TIMEOUT_MS: '1', RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '60000' } }); });
    after(async () => { await h.close(); });
    it('counts them', async () => {
      const timedOut = await h.explorer('?type=providers');
      expect(timedOut.status).to.equal(504);
      for (let i = 0; i < 4; i++) await (await h.explorer('?type=providers')).arrayBuffer();
      const text = await (await h.request('/metrics', { token: null })).text();
      expect(sample(text, 'explorer_query_timeouts_total', { view: 'providers', kind: 'page' })).to.be.at.least(1);
      expect(sample(text, 'explorer_rate_limited_total')).to.be.at.least(1);
      expect(sample(text, 'explorer_http_requests_total', { status: '429' })).to.be.at.least(1);
    });
  });

  describe('change batches', () => {
    let h: Harness;
    // No polling: the server must notice the batch's snapshot from the file system's notification alone.
    before(async () => { h = await startHarness({ env: { METRICS_PUBLIC: '1', SNAPSHOT_POLL_MS: '3600000' } }); });
    after(async () => { await h.close(); });
    it('counts batches applied and rejected and their delay from arrival, and serves the new snapshot at once', async () => {
      const [first] = readFileSync(join(h.dataDir, 'source', 'workspaces.ndjson'), 'utf8').split('\n');
      const batch = join(h.dataDir, 'batch-renamed');
      mkdirSync(batch);
      writeFileSync(join(batch, 'workspaces.ndjson'), JSON.stringify({ ...JSON.parse(first!), name: 'renamed-by-a-batch' }) + '\n');
      const { manifest } = await applyBatch(batch, { dataDir: h.dataDir, arrivedAt: new Date(Date.now() - 2000) });
      await waitFor(async () => (await h.explorer('?type=workspaces')).headers.get('x-explorer-snapshot') === manifest.id, 10_000, 'the batch snapshot served');
      const page = await h.explorer(`?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bis%5D%5B0%5D=renamed-by-a-batch`);
      expect((await json(page)).data).to.have.length(1);
      expect(page.headers.get('last-modified')).to.equal(new Date(manifest.createdAt).toUTCString());
      await recordRejectedBatch(h.dataDir, { name: 'bad', digest: 'x', problems: 2 });
      const text = await (await h.request('/metrics', { token: null })).text();
      expect(sample(text, 'explorer_batches_applied_total')).to.equal(1);
      expect(sample(text, 'explorer_batch_delay_seconds_count')).to.equal(1);
      expect(sample(text, 'explorer_batch_delay_seconds_sum')).to.be.at.least(2);
      expect(sample(text, 'explorer_batches_rejected')).to.equal(1);
      expect(sample(text, 'explorer_snapshot_age_seconds')).to.be.within(0, 60);
    });
  });
});
