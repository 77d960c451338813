// interface §9: the rate limit per authenticated context (user, team, organization token) or client
// address, its headers and its 429; in memory for one instance, in Redis shared by several.
import { expect } from 'chai';
import { silentLogger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { startHarness, json, type Harness } from '../helpers/harness.js';
import { REDIS_BACKENDS, type StartedBackend } from '../helpers/redis-backends.js';

const route = '/api/v2/organizations/acme-corp/explorer?type=tf_versions';

async function burst(send: () => Promise<Response>, n: number): Promise<Response[]> {
  const out: Response[] = [];
  for (let i = 0; i < n; i++) out.push(await send());
  return out;
}

describe('rate limit in memory', function () {
  this.timeout(30_000);
  let h: Harness;
  before(async () => { h = await startHarness({ env: { RATE_LIMIT_MAX: '5', RATE_LIMIT_WINDOW_MS: '3000' } }); });
  after(async () => { await h.close(); });

  it('lets exactly RATE_LIMIT_MAX requests through per window, with the headers of interface §9', async () => {
    const responses = await burst(() => h.request(route, { token: h.tokens.owners }), 7);
    expect(responses.map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200, 429, 429]);
    expect(responses.slice(0, 5).map((r) => r.headers.get('x-ratelimit-remaining'))).to.deep.equal(['4', '3', '2', '1', '0']);
    for (const r of responses) {
      expect(r.headers.get('x-ratelimit-limit')).to.equal('5');
      const reset = Number(r.headers.get('x-ratelimit-reset'));
      expect(reset).to.be.within(0, 3);
    }
    const limited = responses[5]!;
    const retry = Number(limited.headers.get('retry-after'));
    expect(retry).to.be.within(1, 3);
    expect(limited.headers.get('content-type')).to.equal('application/vnd.api+json');
    const body = await json(limited);
    expect(body.errors[0]).to.include({ status: '429', title: 'too many requests' });
    expect(body.errors[0].detail).to.match(/retry in \d+ s/);
  });

  it('counts every context on its own: another team token and the organization token are unaffected', async () => {
    expect((await burst(() => h.request(route, { token: h.tokens.readers }), 5)).map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200]);
    expect((await h.request(route, { token: h.tokens.org })).status).to.equal(200);
  });

  it('counts callers without a valid token per client address, before answering 401', async () => {
    const statuses = (await burst(() => h.request(route, { token: 'not-a-token' }), 7)).map((r) => r.status);
    expect(statuses).to.deep.equal([401, 401, 401, 401, 401, 429, 429]);
  });

  it('lets the context through again once its window has passed', async () => {
    const first = await burst(() => h.request(route, { token: h.tokens.alice }), 6);
    expect(first.map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200, 429]);
    await new Promise((r) => setTimeout(r, Number(first[5]!.headers.get('retry-after')) * 1000 + 100));
    expect((await h.request(route, { token: h.tokens.alice })).status).to.equal(200);
  });

  it('does not limit ping, liveness and readiness', async () => {
    const statuses = (await burst(() => h.request('/api/v2/ping', { token: null }), 8)).map((r) => r.status);
    expect(statuses.every((s) => s === 204)).to.equal(true);
  });
});

for (const backend of REDIS_BACKENDS) describe(`rate limit shared by two instances through ${backend.name}`, function () {
  this.timeout(30_000);
  let redis: StartedBackend;
  let h: Harness;
  let second: RunningServer;
  before(async () => {
    redis = await backend.start();
    h = await startHarness({ env: { RATE_LIMIT_MAX: '6', RATE_LIMIT_WINDOW_MS: '5000', ...redis.env } });
    second = await startServer(h.config, silentLogger);
  });
  after(async () => {
    await second.shutdown();
    await h.close();
    await redis.close();
  });

  it('lets exactly RATE_LIMIT_MAX requests of one context through across both instances', async () => {
    const urls = [h.url, second.url];
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${urls[i % 2]}${route}`, { headers: { Authorization: `Bearer ${h.tokens.owners}` } });
      statuses.push(res.status);
    }
    expect(statuses.filter((s) => s === 200)).to.have.length(6);
    expect(statuses.slice(0, 6).every((s) => s === 200)).to.equal(true);
    expect(statuses.slice(6).every((s) => s === 429)).to.equal(true);
    const other = await fetch(`${second.url}${route}`, { headers: { Authorization: `Bearer ${h.tokens.readers}` } });
    expect(other.status).to.equal(200);
    expect(other.headers.get('x-ratelimit-remaining')).to.equal('5');
  });
});
