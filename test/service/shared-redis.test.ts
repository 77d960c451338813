// Several instances behave as one service on one Redis and one data directory; a Redis outage degrades
// store operations to 503 while queries keep working, loses nothing, and heals by itself.
import { expect } from 'chai';
import { join } from 'node:path';
import { issueToken } from '../../src/access/tokens.js';
import { silentLogger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { openStateStore } from '../../src/store/open-store.js';
import { writeSmallSource, workspaces } from '../fixtures/small-source.js';
import { startHarness, json, type Harness } from '../helpers/harness.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { REDIS_BACKENDS, type StartedBackend } from '../helpers/redis-backends.js';
import { waitFor } from '../helpers/wait.js';

const VIEWS = '/api/v2/organizations/acme-corp/explorer/views';
const body = (name: string, value = 'aws') => JSON.stringify({ data: { name, query_type: 'providers', query: { filter: [{ field: 'name', operator: 'is', value: [value] }] } } });

function call(base: string, token: string, path: string, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  headers.set('Authorization', `Bearer ${token}`);
  if (init.body) headers.set('Content-Type', 'application/json');
  return fetch(`${base}${path}`, { ...init, headers });
}

for (const backend of REDIS_BACKENDS) describe(`two instances on ${backend.name} and one data directory`, function () {
  this.timeout(60_000);
  let redis: StartedBackend;
  let h: Harness;
  let b: RunningServer;
  before(async () => {
    redis = await backend.start();
    h = await startHarness({ env: redis.env });
    b = await startServer(h.config, silentLogger);
  });
  after(async () => {
    await b.shutdown();
    await h.close();
    await redis.close();
  });

  it('serves on the second instance a view created on the first, and the first sees its update and deletion', async () => {
    const created = await call(h.url, h.tokens.org, VIEWS, { method: 'POST', body: body('shared view') });
    expect(created.status).to.equal(201);
    const id = (await json(created)).data.id as string;
    const shown = await call(b.url, h.tokens.org, `${VIEWS}/${id}`);
    expect(shown.status).to.equal(200);
    expect((await json(shown)).data.attributes.name).to.equal('shared view');
    const updated = await call(b.url, h.tokens.org, `${VIEWS}/${id}`, { method: 'PATCH', body: body('renamed on b', 'random') });
    expect(updated.status).to.equal(200);
    const seen = await json(await call(h.url, h.tokens.org, `${VIEWS}/${id}`));
    expect(seen.data.attributes.name).to.equal('renamed on b');
    expect(seen.data.attributes.query.filter[0].value).to.deep.equal(['random']);
    expect((await call(b.url, h.tokens.org, `${VIEWS}/${id}`, { method: 'DELETE' })).status).to.equal(200);
    expect((await call(h.url, h.tokens.org, `${VIEWS}/${id}`)).status).to.equal(404);
  });

  it('accepts on one instance a token created through the other, and refuses it everywhere once revoked', async () => {
    const store = await openStateStore(h.config);
    const { record, token } = await issueToken(store, { kind: 'team', organization: 'acme-corp', team: 'owners' });
    expect((await call(b.url, token, '/api/v2/organizations/acme-corp/explorer?type=modules')).status).to.equal(200);
    expect((await call(h.url, token, '/api/v2/organizations/acme-corp/explorer?type=modules')).status).to.equal(200);
    await store.revokeToken(record.id);
    await store.close();
    expect((await call(b.url, token, '/api/v2/organizations/acme-corp/explorer?type=modules')).status).to.equal(401);
    expect((await call(h.url, token, '/api/v2/organizations/acme-corp/explorer?type=modules')).status).to.equal(401);
  });

  it('lets exactly one of many concurrent creates with one name win across both instances', async () => {
    const attempts = Array.from({ length: 20 }, (_, i) => call(i % 2 ? b.url : h.url, h.tokens.org, VIEWS, { method: 'POST', body: body('contested') }));
    const statuses = (await Promise.all(attempts)).map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).to.have.length(1);
    expect(statuses.filter((s) => s === 422)).to.have.length(19);
    const list = await json(await call(b.url, h.tokens.org, `${VIEWS}?page%5Bsize%5D=100`));
    expect(list.data.filter((v: any) => v.attributes.name === 'contested')).to.have.length(1);
  });

  it('switches both instances to a newly loaded snapshot by themselves', async () => {
    const dir = join(h.dataDir, 'v2-source');
    writeSmallSource(dir, { 'workspaces.ndjson': workspaces.map((w) => JSON.stringify({ ...w, name: `v2-${w.name as string}` })).join('\n') + '\n' });
    const { manifest } = await loadSnapshot(dir, { dataDir: h.dataDir });
    for (const base of [h.url, b.url]) {
      await waitFor(async () => (await call(base, h.tokens.org, '/api/v2/organizations/acme-corp/explorer?type=workspaces')).headers.get('x-explorer-snapshot') === manifest.id, 5000, `switch of ${base}`);
    }
  });
});

describe('a Redis outage', function () {
  this.timeout(60_000);
  let redis: TestRedis;
  let h: Harness;
  const lines: Record<string, unknown>[] = [];
  before(async () => {
    redis = await startTestRedis({ persistent: true });
    h = await startHarness({
      env: { REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix, RATE_LIMIT_MAX: '1000' },
      logger: { log: (level, msg, fields) => { lines.push({ level, msg, ...fields }); } },
    });
  });
  after(async () => {
    await h.close();
    await redis.close();
  });

  it('keeps queries answering, answers 503 for store operations, loses nothing and recovers by itself', async () => {
    const created = await call(h.url, h.tokens.org, VIEWS, { method: 'POST', body: body('before the outage') });
    expect(created.status).to.equal(201);
    const id = (await json(created)).data.id as string;
    expect((await call(h.url, h.tokens.org, '/api/v2/organizations/acme-corp/explorer?type=providers')).status).to.equal(200);
    expect((await json(await h.request('/readyz', { token: null }))).redis).to.deep.equal({ state: 'ready' });

    await redis.stop();
    await waitFor(async () => (await json(await h.request('/readyz', { token: null }))).redis.state === 'down', 5000, 'redis down');
    const query = await call(h.url, h.tokens.org, '/api/v2/organizations/acme-corp/explorer?type=providers');
    expect(query.status).to.equal(200);
    // The limiter could not count this request: it let it through and said so.
    expect(lines.some((l) => l.level === 'warn' && l.msg === 'rate limiter unavailable: letting requests through')).to.equal(true);
    expect((await h.request('/readyz', { token: null })).status).to.equal(200);
    for (const [path, init] of [[VIEWS, {}], [`${VIEWS}/${id}`, {}], [VIEWS, { method: 'POST', body: body('during the outage') }]] as const) {
      const res = await call(h.url, h.tokens.org, path, init);
      expect(res.status, `${init.method ?? 'GET'} ${path}`).to.equal(503);
      const error = (await json(res)).errors[0];
      expect(error.status).to.equal('503');
      expect(res.headers.get('retry-after')).to.equal('5');
    }

    await redis.restart();
    await waitFor(async () => (await call(h.url, h.tokens.org, VIEWS)).status === 200, 10_000, 'store back');
    const list = await json(await call(h.url, h.tokens.org, VIEWS));
    expect(list.data.map((v: any) => v.attributes.name)).to.deep.equal(['before the outage']);
    expect((await call(h.url, h.tokens.org, VIEWS, { method: 'POST', body: body('after the outage') })).status).to.equal(201);
  });
});
