// What an instance does for the balancer in front of it: while it drains (SHUTDOWN_DRAIN_MS) it keeps
// answering but tells the health check it is not ready, then stops; behind a trusted proxy (TRUST_PROXY)
// requests without a token count against the client's address from X-Forwarded-For, not the proxy's.
import { expect } from 'chai';
import { json, startHarness, type Harness } from '../helpers/harness.js';

const QUERY = '/api/v2/organizations/acme-corp/explorer?type=providers&page%5Bsize%5D=1';

describe('an instance draining for its balancer', function () {
  this.timeout(30_000);
  let h: Harness;
  before(async () => { h = await startHarness({ env: { SHUTDOWN_DRAIN_MS: '1500' } }); });
  after(async () => { await h?.close().catch(() => null); });

  it('answers /readyz 503 and still serves queries for SHUTDOWN_DRAIN_MS after the stop begins, then stops accepting', async () => {
    expect((await h.request('/readyz', { token: null })).status).to.equal(200);
    const started = Date.now();
    const stopped = h.running.shutdown();
    const ready = await h.request('/readyz', { token: null });
    expect(ready.status).to.equal(503);
    expect((await json(ready)).draining).to.equal(true);
    // Queries keep answering during the drain.
    while (Date.now() - started < 1000) {
      expect((await h.request(QUERY, { token: h.tokens.org })).status).to.equal(200);
      await new Promise((r) => setTimeout(r, 100));
    }
    await stopped;
    expect(Date.now() - started).to.be.at.least(1500);
    const after = await fetch(`${h.url}/readyz`).then(() => 'answered', () => 'refused');
    expect(after).to.equal('refused');
  });
});

for (const trusted of [true, false]) {
  describe(`requests without a token ${trusted ? 'behind a trusted proxy' : 'with TRUST_PROXY unset'}`, function () {
    this.timeout(30_000);
    let h: Harness;
    before(async () => { h = await startHarness({ env: { RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '60000', ...(trusted ? { TRUST_PROXY: '1' } : {}) } }); });
    after(async () => { await h?.close(); });

    it(trusted ? 'count per client address, the last X-Forwarded-For entry' : 'count per connecting address, whatever X-Forwarded-For says', async () => {
      const from = (address: string) => h.request(QUERY, { token: null, headers: { 'X-Forwarded-For': `203.0.113.9, ${address}` } }).then((r) => r.status);
      const first: number[] = [];
      for (let i = 0; i < 4; i++) first.push(await from('198.51.100.1'));
      expect(first).to.deep.equal([401, 401, 401, 429]);
      // Another client behind the same proxy.
      expect(await from('198.51.100.2')).to.equal(trusted ? 401 : 429);
    });
  });
}
