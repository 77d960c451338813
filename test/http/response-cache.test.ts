// The response cache over HTTP: a repeated page is answered from memory, byte for byte the same, without
// a worker task; the cache counts its hits and misses in /metrics; a new snapshot is never answered from
// an older one's entries; organizations never share entries; RESPONSE_CACHE_MB=0 turns it off.
import { expect } from 'chai';
import { join } from 'node:path';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { startHarness, type Harness } from '../helpers/harness.js';

const Q = '/api/v2/organizations/acme-corp/explorer?type=workspaces&sort=-workspace_updated_at&page%5Bsize%5D=2';

async function metric(h: Harness, name: string): Promise<number> {
  const text = await (await h.request('/metrics', { token: null })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

describe('the response cache', function () {
  this.timeout(30_000);
  let h: Harness;
  before(async () => { h = await startHarness({ env: { METRICS_PUBLIC: '1' } }); });
  after(async () => { await h?.close(); });

  it('answers a repeated page from memory: the same bytes and headers, no worker task, a hit in /metrics', async () => {
    const first = await h.request(Q);
    const body = await first.text();
    expect(first.status).to.equal(200);
    const tasks = h.running.pool.tasksStarted;
    const hits = await metric(h, 'explorer_response_cache_hits_total');
    const again = await h.request(Q);
    expect(again.status).to.equal(200);
    expect(await again.text()).to.equal(body);
    for (const header of ['etag', 'content-type', 'x-explorer-snapshot', 'cache-control']) {
      expect(again.headers.get(header), header).to.equal(first.headers.get(header));
    }
    expect(h.running.pool.tasksStarted).to.equal(tasks);
    expect(await metric(h, 'explorer_response_cache_hits_total')).to.equal(hits + 1);
    expect(await metric(h, 'explorer_response_cache_entries')).to.be.above(0);
  });

  it('keeps organizations apart: the same query for another organization is its own answer', async () => {
    const other = await h.request(Q.replace('acme-corp', 'globex'), { token: h.tokens.otherOrg });
    const mine = await h.request(Q);
    expect(other.headers.get('etag')).to.not.equal(mine.headers.get('etag'));
    expect(await other.text()).to.not.equal(await mine.text());
  });

  it('never answers from an older snapshot once a new one is current', async () => {
    const old = await h.request(Q);
    const oldSnapshot = old.headers.get('x-explorer-snapshot');
    await loadSnapshot(join(h.dataDir, 'source'), { dataDir: h.dataDir, memoryLimit: '1GB' });
    // Until the switch, Q comes from the cache; the first answer from the new snapshot must be queried.
    const tasks = h.running.pool.tasksStarted;
    const until = Date.now() + 10_000;
    let res = await h.request(Q);
    while (res.headers.get('x-explorer-snapshot') === oldSnapshot && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 100));
      res = await h.request(Q);
    }
    expect(res.headers.get('x-explorer-snapshot')).to.not.equal(oldSnapshot);
    expect(h.running.pool.tasksStarted).to.be.above(tasks);
    expect(res.headers.get('etag')).to.not.equal(old.headers.get('etag'));
  });
});

describe('the response cache turned off', function () {
  this.timeout(30_000);
  let h: Harness;
  before(async () => { h = await startHarness({ env: { RESPONSE_CACHE_MB: '0' } }); });
  after(async () => { await h?.close(); });

  it('runs every request in a worker', async () => {
    await (await h.request(Q)).text();
    const tasks = h.running.pool.tasksStarted;
    await (await h.request(Q)).text();
    expect(h.running.pool.tasksStarted).to.equal(tasks + 1);
  });
});
