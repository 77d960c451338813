// interface §7 (status codes, JSON:API errors, precedence) and §9 (who may see which organization).
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { openStateStore } from '../../src/store/open-store.js';
import { startHarness, json, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

const NOT_FOUND = {
  errors: [{ status: '404', title: 'not found', detail: 'The organization or resource does not exist, or you are not authorized to access it.' }],
};

describe('access and errors (interface §7, §9)', () => {
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.close(); });

  const orgRoute = (org: string, query = '?type=workspaces') => `/api/v2/organizations/${org}/explorer${query}`;

  it('answers ping with 204 and no body, without a token', async () => {
    const res = await h.request('/api/v2/ping', { token: null });
    expect(res.status).to.equal(204);
    expect(await res.text()).to.equal('');
  });

  it('reports liveness and readiness without a token', async () => {
    expect((await h.request('/healthz', { token: null })).status).to.equal(200);
    const ready = await h.request('/readyz', { token: null });
    expect(ready.status).to.equal(200);
    expect((await json(ready)).snapshot.status).to.equal('ready');
  });

  for (const [label, header] of [
    ['no Authorization header', undefined],
    ['a non-Bearer scheme', 'Basic dXNlcjpwYXNz'],
    ['an empty bearer', 'Bearer '],
    ['an unknown token', 'Bearer at-AAAAAAAAAAAAAAAA.BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB'],
    ['a malformed token', 'Bearer not-a-token'],
  ] as const) {
    it(`answers 401 with WWW-Authenticate for ${label}`, async () => {
      const headers: Record<string, string> = header ? { Authorization: header } : {};
      const res = await h.request(orgRoute('acme-corp'), { token: null, headers });
      expect(res.status).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.match(/^Bearer/);
      expect(res.headers.get('content-type')).to.equal('application/vnd.api+json');
      const body = await json(res);
      expect(body.errors).to.have.length(1);
      expect(body.errors[0].status).to.equal('401');
      expect(body.errors[0].title).to.be.a('string').and.not.empty;
      expect(body.errors[0].detail).to.be.a('string').and.not.empty;
    });
  }

  it('refuses a token whose secret is wrong even though its id exists', async () => {
    const [id, secret] = h.tokens.org.split('.') as [string, string];
    const wrong = `${id}.${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
    expect((await h.request(orgRoute('acme-corp'), { token: wrong })).status).to.equal(401);
  });

  it('refuses a revoked token at once', async () => {
    const store = await openStateStore(h.config);
    const { issueToken } = await import('../../src/access/tokens.js');
    const { record, token } = await issueToken(store, { kind: 'organization', organization: 'acme-corp' });
    expect((await h.request(orgRoute('acme-corp'), { token })).status).to.equal(200);
    expect(await store.revokeToken(record.id)).to.equal(true);
    await store.close();
    expect((await h.request(orgRoute('acme-corp'), { token })).status).to.equal(401);
  });

  const access: [keyof Harness['tokens'], string, number][] = [
    ['org', 'acme-corp', 200],
    ['otherOrg', 'acme-corp', 404],
    ['otherOrg', 'globex', 200],
    ['owners', 'acme-corp', 200],
    ['readers', 'acme-corp', 200],
    ['developers', 'acme-corp', 404],
    ['alice', 'acme-corp', 200],
    ['alice', 'globex', 404],
    ['bob', 'acme-corp', 404],
    ['carol', 'globex', 200],
    ['carol', 'acme-corp', 404],
    ['org', 'no-such-org', 404],
  ];
  for (const [token, org, status] of access) {
    it(`gives the ${token} token ${status} on ${org}`, async () => {
      const res = await h.request(orgRoute(org), { token: h.tokens[token] });
      expect(res.status).to.equal(status);
      if (status === 404) expect(await json(res)).to.deep.equal(NOT_FOUND);
      else expect((await json(res)).data).to.be.an('array');
    });
  }

  it('gives another organization the very same 404 as an unknown organization, CSV route included', async () => {
    const responses = await Promise.all([
      h.request(orgRoute('globex'), { token: h.tokens.org }),
      h.request(orgRoute('does-not-exist'), { token: h.tokens.org }),
      h.request(`/api/v2/organizations/globex/explorer/export/csv?type=workspaces`, { token: h.tokens.org }),
      h.request(`/api/v2/organizations/does-not-exist/explorer/export/csv?type=workspaces`, { token: h.tokens.org }),
    ]);
    const bodies = await Promise.all(responses.map((r) => r.text()));
    for (const r of responses) expect(r.status).to.equal(404);
    expect(new Set(bodies).size).to.equal(1);
    expect(JSON.parse(bodies[0]!)).to.deep.equal(NOT_FOUND);
    const headerNames = responses.map((r) => [...r.headers.keys()].filter((k) => k !== 'date' && k !== 'x-request-id').sort().join());
    expect(new Set(headerNames).size).to.equal(1);
  });

  it('checks the token before the organization, and the organization before the parameters', async () => {
    const bad = '?type=nope&page%5Bsize%5D=0';
    expect((await h.request(orgRoute('no-such-org', bad), { token: 'Bearer nonsense' })).status).to.equal(401);
    expect((await h.request(orgRoute('no-such-org', bad), { token: null })).status).to.equal(401);
    expect((await h.request(orgRoute('globex', bad), { token: h.tokens.org })).status).to.equal(404);
    const res = await h.request(orgRoute('acme-corp', bad), { token: h.tokens.org });
    expect(res.status).to.equal(400);
    expect((await json(res)).errors[0].source).to.deep.equal({ parameter: 'type' });
  });

  it('answers 400 with source.parameter for bad query parameters on both query routes', async () => {
    for (const route of ['explorer', 'explorer/export/csv']) {
      const res = await h.request(`/api/v2/organizations/acme-corp/${route}?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bgt%5D%5B0%5D=a`);
      expect(res.status).to.equal(400);
      const body = await json(res);
      expect(body.errors[0]).to.include({ status: '400' });
      expect(body.errors[0].source).to.deep.equal({ parameter: 'filter[0][workspace_name][gt][0]' });
    }
    const dup = await h.explorer('?type=workspaces&sort=workspace_name&sort=-workspace_name');
    expect(dup.status).to.equal(400);
    expect((await json(dup)).errors[0].source).to.deep.equal({ parameter: 'sort' });
  });

  it('ignores unknown query parameters', async () => {
    const res = await h.explorer('?type=workspaces&utm_source=x&include=foo');
    expect(res.status).to.equal(200);
  });

  it('answers unknown routes with a JSON:API 404 and wrong methods with 405', async () => {
    const res = await h.request('/api/v2/nothing-here');
    expect(res.status).to.equal(404);
    expect((await json(res)).errors[0].status).to.equal('404');
    const post = await h.request('/api/v2/organizations/acme-corp/explorer?type=workspaces', { method: 'POST' });
    expect(post.status).to.equal(405);
    expect(post.headers.get('allow')).to.include('GET');
    expect((await json(post)).errors[0]).to.include({ status: '405', title: 'method not allowed' });
  });

  it('answers 503 while no snapshot is current, and serves again once one is', async () => {
    const current = join(h.dataDir, 'snapshots', 'CURRENT');
    const id = await fs.readFile(current, 'utf8');
    await fs.rename(current, `${current}.away`);
    try {
      await waitFor(async () => (await h.explorer('?type=workspaces')).status === 503);
      const res = await h.explorer('?type=workspaces');
      const body = await json(res);
      expect(body.errors[0].status).to.equal('503');
      expect(res.headers.get('retry-after')).to.equal('5');
      expect((await h.request('/readyz', { token: null })).status).to.equal(503);
      // the token is still checked first
      expect((await h.explorer('?type=workspaces', 'nonsense')).status).to.equal(401);
    } finally {
      await fs.rename(`${current}.away`, current);
    }
    expect(await fs.readFile(current, 'utf8')).to.equal(id);
    await waitFor(async () => (await h.explorer('?type=workspaces')).status === 200);
  });
});
