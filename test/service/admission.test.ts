// Admission over HTTP: a stalled export holds its slot, further exports wait a bounded time and are then
// refused with 503 and Retry-After, a full queue refuses at once, and other organizations' pages still pass.
import { expect } from 'chai';
import { get, type IncomingMessage } from 'node:http';
import { writeSample } from '../../src/sample/sample.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';

/**
 * How long a request may wait for a slot. The tests tell "refused after waiting" from "refused at once" by
 * this time, not by how fast the machine answers: the margin on either side is most of it.
 */
const MAX_WAIT_MS = 2000;

describe('admission over HTTP', function () {
  this.timeout(60_000);
  let h: Harness;
  const held: IncomingMessage[] = [];
  before(async () => {
    h = await startHarness({
      env: { POOL_WORKERS: '1', WORKER_CONCURRENCY: '2', EXPORT_CONCURRENCY: '1', POOL_MAX_QUEUE: '2', POOL_MAX_WAIT_MS: String(MAX_WAIT_MS), POOL_MAX_EXPORT_WAIT_MS: String(MAX_WAIT_MS), QUERY_TIMEOUT_MS: '8000' },
      // Large enough that the CSV cannot fit in the pipe and socket buffers of a stalled client.
      writeSource: (dir) => writeSample(dir, { organizations: 2, workspaces: 24000, seed: 3, resources: false }),
    });
  });
  after(async () => {
    for (const res of held) res.destroy();
    await h.close();
  });

  const exportOf = (organization: string, token: string) => new Promise<IncomingMessage>((resolve, reject) => {
    get(`${h.url}/api/v2/organizations/${organization}/explorer/export/csv?type=workspaces`, { headers: { Authorization: `Bearer ${token}` } }, resolve)
      .on('error', reject);
  });
  const body = (res: IncomingMessage) => new Promise<string>((resolve) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => { text += c; });
    res.on('end', () => resolve(text));
  });

  it('refuses an export that waited too long with 503 and Retry-After, while pages of others pass', async () => {
    const stalled = await exportOf('acme-corp', h.tokens.org);
    expect(stalled.statusCode).to.equal(200);
    stalled.pause();
    held.push(stalled);

    const started = Date.now();
    const waiting = exportOf('acme-corp', h.tokens.org);
    const page = await h.request('/api/v2/organizations/globex/explorer?type=workspaces', { token: h.tokens.otherOrg });
    expect(page.status).to.equal(200);

    const refused = await waiting;
    expect(refused.statusCode).to.equal(503);
    expect(Date.now() - started).to.be.at.least(MAX_WAIT_MS - 50);
    expect(Number(refused.headers['retry-after'])).to.be.at.least(1);
    expect(refused.headers['content-type']).to.match(/application\/vnd\.api\+json/);
    const doc = JSON.parse(await body(refused));
    expect(doc.errors[0]).to.include({ status: '503', title: 'service busy' });
    expect(doc.errors[0].detail).to.match(/retry in \d+ s/);
  });

  it('refuses at once when the queue is full', async () => {
    // The first export from the previous test still holds the only export slot; two more fill the queue.
    const queued = [exportOf('acme-corp', h.tokens.org), exportOf('acme-corp', h.tokens.org)];
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    const res = await h.request('/api/v2/organizations/globex/explorer/export/csv?type=workspaces', { token: h.tokens.otherOrg });
    expect(res.status).to.equal(503);
    expect(Date.now() - started).to.be.below(MAX_WAIT_MS / 2);
    expect(res.headers.get('retry-after')).to.match(/^\d+$/);
    expect((await json(res)).errors[0].status).to.equal('503');
    for (const r of await Promise.all(queued)) {
      expect(r.statusCode).to.equal(503);
      r.resume();
    }
  });
});
