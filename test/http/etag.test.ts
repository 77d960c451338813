// Conditional requests: query, export and saved-view responses carry an ETag derived from the snapshot,
// the organization and the normalized request; If-None-Match answers 304 without running the query.
import { expect } from 'chai';
import { join } from 'node:path';
import { ifNoneMatch } from '../../src/http/etag.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';

const JSONAPI = 'application/vnd.api+json';

describe('ETag and If-None-Match', () => {
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.close(); });

  const tagOf = async (path: string, token = h.tokens.org) => {
    const res = await h.request(path, { token });
    expect(res.status, await res.clone().text()).to.equal(200);
    await res.arrayBuffer();
    const etag = res.headers.get('etag');
    expect(etag).to.match(/^"[A-Za-z0-9_-]{32}"$/);
    expect(res.headers.get('cache-control')).to.equal('private, no-cache');
    return etag!;
  };
  const conditional = (path: string, etag: string, token = h.tokens.org) => h.request(path, { token, headers: { 'If-None-Match': etag } });
  const Q = '/api/v2/organizations/acme-corp/explorer';

  for (const [what, path] of [
    ['a page', `${Q}?type=workspaces&page%5Bsize%5D=3`],
    ['a CSV export', `${Q}/export/csv?type=providers`],
  ] as const) {
    it(`answers 304 for ${what} the client holds, without running a query`, async () => {
      const etag = await tagOf(path);
      const before = h.running.pool.tasksStarted;
      const res = await conditional(path, etag);
      expect(res.status).to.equal(304);
      expect(res.headers.get('etag')).to.equal(etag);
      expect(await res.text()).to.equal('');
      expect(h.running.pool.tasksStarted).to.equal(before);
    });
  }

  it('runs the query (200) when the tag does not match', async () => {
    // A query no other test asks, so that the answer is not already in the response cache.
    const path = `${Q}?type=workspaces&page%5Bsize%5D=3&sort=-checks_passed`;
    const before = h.running.pool.tasksStarted;
    const res = await conditional(path, '"not-the-tag"');
    expect(res.status).to.equal(200);
    expect((await json(res)).data).to.have.length(3);
    expect(h.running.pool.tasksStarted).to.be.above(before);
  });

  it('gives two spellings of one query the same tag, and different queries different tags', async () => {
    const a = await tagOf(`${Q}?type=workspaces&page%5Bsize%5D=3&sort=workspace_name`);
    const b = await tagOf(`${Q}?sort=workspace_name&page[size]=3&type=workspaces`);
    expect(b).to.equal(a);
    const others = await Promise.all([
      tagOf(`${Q}?type=workspaces&page%5Bsize%5D=3&sort=-workspace_name`),
      tagOf(`${Q}?type=workspaces&page%5Bsize%5D=3&page%5Bnumber%5D=2&sort=workspace_name`),
      tagOf(`${Q}?type=workspaces&page%5Bsize%5D=3&sort=workspace_name&fields%5Bworkspaces%5D=workspace_name`),
      tagOf(`${Q}/export/csv?type=workspaces&sort=workspace_name`),
    ]);
    expect(new Set([a, ...others]).size).to.equal(5);
  });

  it('never shares a tag between organizations', async () => {
    const mine = await tagOf(`${Q}?type=tf_versions`);
    const theirs = await tagOf('/api/v2/organizations/globex/explorer?type=tf_versions', h.tokens.otherOrg);
    expect(theirs).to.not.equal(mine);
    // Another organization's tag sent to mine is simply not a match.
    expect((await conditional(`${Q}?type=tf_versions`, theirs)).status).to.equal(200);
  });

  it('puts no tag on errors', async () => {
    const res = await h.request(`${Q}?type=workspaces&sort=nope`);
    expect(res.status).to.equal(400);
    expect(res.headers.get('etag')).to.equal(null);
  });

  it('tags saved views, their results and CSV, and changes the tag when the view changes', async () => {
    const views = `${Q}/views`;
    const created = await h.request(views, {
      method: 'POST', headers: { 'Content-Type': JSONAPI },
      body: JSON.stringify({ data: { type: 'explorer-saved-queries', attributes: { name: 'etag view', 'query-type': 'providers', query: { filter: [] } } } }),
    });
    expect(created.status).to.equal(201);
    const id = (await json(created)).data.id as string;
    const show = `${views}/${id}`;
    for (const path of [show, views, `${show}/results`, `${show}/csv`]) {
      const etag = await tagOf(path);
      const before = h.running.pool.tasksStarted;
      expect((await conditional(path, etag)).status, path).to.equal(304);
      expect(h.running.pool.tasksStarted).to.equal(before);
    }
    const old = await tagOf(show);
    const patched = await h.request(show, {
      method: 'PATCH', headers: { 'Content-Type': JSONAPI },
      body: JSON.stringify({ data: { type: 'explorer-saved-queries', attributes: { name: 'etag view renamed', 'query-type': 'providers', query: { filter: [] } } } }),
    });
    expect(patched.status).to.equal(200);
    const res = await conditional(show, old);
    expect(res.status).to.equal(200);
    expect(res.headers.get('etag')).to.not.equal(old);
  });

  it('changes every tag when a new snapshot becomes current', async () => {
    const path = `${Q}?type=tf_versions`;
    const old = await tagOf(path);
    await loadSnapshot(join(h.dataDir, 'source'), { dataDir: h.dataDir, memoryLimit: '1GB' });
    const until = Date.now() + 10_000;
    let res = await conditional(path, old);
    while (res.status === 304 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 100));
      res = await conditional(path, old);
    }
    expect(res.status).to.equal(200);
    expect(res.headers.get('etag')).to.not.equal(old);
  });

  it('compares weakly and understands lists and *', () => {
    expect(ifNoneMatch('"abc"', '"abc"')).to.equal(true);
    expect(ifNoneMatch('W/"abc"', '"abc"')).to.equal(true);
    expect(ifNoneMatch('"x", "abc"', '"abc"')).to.equal(true);
    expect(ifNoneMatch('*', '"abc"')).to.equal(true);
    expect(ifNoneMatch('"abcd"', '"abc"')).to.equal(false);
    expect(ifNoneMatch(undefined, '"abc"')).to.equal(false);
  });
});
