// The libuv threadpool under stalled exports. Every running DuckDB call holds one libuv thread (node-api
// async work) and the pool is process-wide; this test process runs with libuv's default of 4 threads, as
// many as the harness's query slots. Stalled exports are capped (one a worker: half the harness's slots), so file-system work and
// pages still find threads; the probe below is what would stall if they did not.
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import { get, type ClientRequest, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { writeSample } from '../../src/sample/sample.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

/** Slowest of `n` small file reads run at once: each needs a libuv thread. */
async function fsProbeMs(path: string, n = 16): Promise<number> {
  const times = await Promise.all(Array.from({ length: n }, async () => {
    const started = performance.now();
    await fs.readFile(path);
    return performance.now() - started;
  }));
  return Math.max(...times);
}

/** The stalled exports' deadline: a starved threadpool would hold the probes until then. */
const DEADLINE_MS = 8000;

describe('the libuv threadpool with many stalled exports', function () {
  this.timeout(60_000);
  let h: Harness;
  const stalled: IncomingMessage[] = [];
  const requests: ClientRequest[] = [];
  before(async () => {
    h = await startHarness({
      env: { QUERY_TIMEOUT_MS: String(DEADLINE_MS), POOL_MAX_WAIT_MS: '10000' },
      writeSource: (dir) => writeSample(dir, { organizations: 2, workspaces: 24000, seed: 5, resources: false }),
    });
  });
  after(async () => {
    // The exports still queued too: left open, they would hold the shutdown for its whole grace period.
    for (const res of stalled) res.destroy();
    for (const req of requests) req.destroy();
    await h?.close();
  });

  it('keeps file-system work, saved-view writes and other pages fast while 8 exports are stalled', async () => {
    const probeFile = join(h.dataDir, 'probe.txt');
    await fs.writeFile(probeFile, 'x');
    const baseline = await fsProbeMs(probeFile);

    const failed: Error[] = [];
    for (let i = 0; i < 8; i++) {
      requests.push(get(`${h.url}/api/v2/organizations/acme-corp/explorer/export/csv?type=workspaces`, { headers: { Authorization: `Bearer ${h.tokens.org}` } }, (res) => {
        res.pause();
        stalled.push(res);
      }).on('error', (e) => failed.push(e)));
    }
    // Exports beyond the cap wait for a slot without answering: wait for them in the queue, not for their headers.
    await waitFor(() => failed.length > 0 || stalled.length + h.running.pool.queueSize === 8, 20_000, 'every export running or queued');
    expect(failed.map((e) => e.message)).to.deep.equal([]);
    await new Promise((r) => setTimeout(r, 500)); // let the running COPYs fill their pipes and block

    const probes: number[] = [];
    for (let i = 0; i < 5; i++) probes.push(await fsProbeMs(probeFile));
    const started = Date.now();
    const created = await h.request('/api/v2/organizations/globex/explorer/views', {
      method: 'POST', token: h.tokens.otherOrg,
      headers: { 'Content-Type': 'application/vnd.api+json' },
      body: JSON.stringify({ data: { type: 'explorer-saved-queries', attributes: { name: 'during stall', 'query-type': 'workspaces', query: { filter: [] } } } }),
    });
    const writeMs = Date.now() - started;
    const pageStarted = Date.now();
    const page = await h.request('/api/v2/organizations/globex/explorer?type=providers', { token: h.tokens.otherOrg });
    const pageMs = Date.now() - pageStarted;

    expect(created.status, await created.clone().text()).to.equal(201);
    expect(page.status).to.equal(200);
    // A starved threadpool would hold these until the exports' deadline; a quarter of it tells the two apart.
    expect(Math.max(...probes), `fs probes ${probes.map(Math.round)} ms (baseline ${Math.round(baseline)} ms)`).to.be.below(DEADLINE_MS / 4);
    expect(writeMs).to.be.below(DEADLINE_MS / 4);
    expect(pageMs).to.be.below(DEADLINE_MS / 4);
  });
});
