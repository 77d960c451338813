// Auditor tokens as a user makes and uses them: `token create --auditor` reads every organization, writes
// nothing (403, nothing changed), and every request it makes is one whole line of the audit log, with no
// secret, under concurrent requests and after kill -9; while the log cannot be written its requests answer 503.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { startServer } from '../../src/server.js';
import { ORG, OTHER_ORG } from '../fixtures/small-source.js';
import { cli } from '../helpers/cli.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { freePort } from '../helpers/ports.js';

const JSONAPI = 'application/vnd.api+json';
const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('auditor tokens', function () {
  this.timeout(60_000);
  let h: Harness;
  let auditor: string;
  let log: string;
  before(async () => {
    h = await startHarness();
    log = join(h.dataDir, 'audit.log');
    const created = await cli(['token', 'create', '--auditor', '--description', 'compliance'], h.dataDir);
    expect(created.code, created.stderr).to.equal(0);
    auditor = created.stdout.trim().split('\n').pop()!;
  });
  after(async () => { await h.close(); });

  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await h.request(path, { method, token, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'Content-Type': JSONAPI } }) });
    return { status: res.status, body: await res.text() };
  };

  it('is made only without an organization, team or user, and is listed as an auditor', async () => {
    expect((await cli(['token', 'create', '--auditor', '--organization', ORG], h.dataDir)).code).to.equal(2);
    const listed = (await cli(['token', 'list'], h.dataDir)).stdout.split('\n').find((l) => l.startsWith(auditor.split('.')[0]!))!;
    expect(listed.split('\t').slice(1, 5)).to.deep.equal(['auditor', '-', '-', '-']);
  });

  it('reads every organization, and gets the 404 of anyone for one that does not exist', async () => {
    for (const org of [ORG, OTHER_ORG]) expect((await call('GET', `/api/v2/organizations/${org}/explorer?type=workspaces`, auditor)).status, org).to.equal(200);
    expect((await call('GET', '/api/v2/organizations/no-such-org/explorer?type=workspaces', auditor)).status).to.equal(404);
    expect((await call('POST', '/api/v2/organizations/no-such-org/explorer/views', auditor, {})).status).to.equal(404);
  });

  it('refuses every writing route with 403 and changes nothing', async () => {
    const views = `/api/v2/organizations/${ORG}/explorer/views`;
    const made = await call('POST', views, h.tokens.org, { data: { name: 'kept', query_type: 'workspaces', query: { filter: [] } } });
    expect(made.status).to.equal(201);
    const view = JSON.parse(made.body).data.id as string;
    const before = (await call('GET', views, h.tokens.org)).body;
    const writes: [string, string, unknown][] = [
      ['POST', views, { data: { name: 'new', query_type: 'workspaces', query: { filter: [] } } }],
      ['PATCH', `${views}/${view}`, { data: { name: 'renamed', query_type: 'workspaces', query: { filter: [] } } }],
      ['DELETE', `${views}/${view}`, undefined],
      ['POST', `${views}/${view}/notification-configurations`, { data: { type: 'notification-configurations', attributes: { name: 'n', url: 'https://example.com/hook', enabled: true } } }],
    ];
    for (const [method, path, body] of writes) {
      const answer = await call(method, path, auditor, body);
      expect(answer.status, `${method} ${path}`).to.equal(403);
      expect(JSON.parse(answer.body).errors[0]).to.include({ status: '403', title: 'forbidden' });
      expect(JSON.parse(answer.body).errors[0].detail).to.include('read-only');
    }
    // A method no route takes: 405 to anyone else, 403 to a reader wherever it reads (and the 404 of anyone elsewhere).
    const unrouted: [string, string][] = [['PUT', `${views}/${view}`], ['PUT', `/api/v2/organizations/${ORG}/explorer`], ['POST', '/api/v2/explorer'],
      ['PUT', '/api/v2/explorer/export/csv'], ['DELETE', '/api/v2/explorer/summary']];
    for (const [method, path] of unrouted) {
      const answer = await call(method, path, auditor, method === 'DELETE' ? undefined : {});
      expect(answer.status, `${method} ${path}`).to.equal(403);
      expect(JSON.parse(answer.body).errors[0].detail).to.include('read-only');
      expect((await call(method, path, h.tokens.org, method === 'DELETE' ? undefined : {})).status, `${method} ${path}, organization token`).to.equal(405);
    }
    expect((await call('PUT', '/api/v2/organizations/no-such-org/explorer/views', auditor, {})).status).to.equal(405);
    expect((await call('GET', views, h.tokens.org)).body).to.equal(before);
    expect((await call('GET', `${views}/${view}/notification-configurations`, h.tokens.org)).body).to.include('"data":[]');
  });

  it('logs every request across organizations, whatever its token, with the number of organizations it read', async () => {
    // Asked first, and its own line waited for: every line after `already` is this test's.
    const workspaces = JSON.parse((await call('GET', `/api/v2/organizations/${ORG}/explorer?type=workspaces`, h.tokens.org)).body).meta.pagination['total-count']
      + JSON.parse((await call('GET', `/api/v2/organizations/${OTHER_ORG}/explorer?type=workspaces`, h.tokens.otherOrg)).body).meta.pagination['total-count'];
    await sleep(200);
    const already = lines(log).length;
    expect((await call('GET', '/api/v2/explorer?type=workspaces', h.tokens.org)).status).to.equal(200);
    expect((await call('GET', '/api/v2/explorer?type=tf_versions&page%5Bsize%5D=2', h.tokens.alice)).status).to.equal(200);
    expect((await call('GET', '/api/v2/explorer/export/csv?type=workspaces', auditor)).status).to.equal(200);
    expect((await call('GET', '/api/v2/explorer/summary?type=workspaces&group_by=organization_name', auditor)).status).to.equal(200);
    expect((await call('GET', '/api/v2/explorer?type=workspaces', 'at-0000000000000000.0000000000000000000000000000000000000000')).status).to.equal(401);
    // A per-organization request of an organization token is not logged.
    expect((await call('GET', `/api/v2/organizations/${ORG}/explorer?type=workspaces`, h.tokens.org)).status).to.equal(200);
    await sleep(200);
    const written = lines(log).slice(already);
    expect(written.map((l) => [l.token_kind, l.path, l.organizations, l.status])).to.deep.equal([
      ['organization', '/api/v2/explorer?type=workspaces', 1, 200],
      ['user', '/api/v2/explorer?type=tf_versions&page%5Bsize%5D=2', 1, 200],
      ['auditor', '/api/v2/explorer/export/csv?type=workspaces', 3, 200],
      ['auditor', '/api/v2/explorer/summary?type=workspaces&group_by=organization_name', 3, 200],
      [null, '/api/v2/explorer?type=workspaces', 0, 401],
    ]);
    // The organization token reads its own organization across organizations: its workspaces alone.
    expect(written[0]!.rows).to.equal(JSON.parse((await call('GET', `/api/v2/organizations/${ORG}/explorer?type=workspaces`, h.tokens.org)).body).meta.pagination['total-count']);
    expect(workspaces).to.be.above(written[0]!.rows as number);
    expect(written[2]!.bytes).to.be.a('number').above(0);
    expect(written[3]!.rows).to.equal(2); // groups: the two organizations with workspaces
    expect(written[4]!.token_id).to.equal(null);
  });

  it('logs each of its requests as one whole line with no secret, under concurrent requests, and no one else\'s', async () => {
    const already = lines(log).length;
    await Promise.all(Array.from({ length: 40 }, (_, i) => call('GET', `/api/v2/organizations/${i % 2 ? ORG : OTHER_ORG}/explorer?type=tf_versions&page%5Bnumber%5D=${i + 1}`, auditor)));
    await call('GET', `/api/v2/organizations/${ORG}/explorer?type=tf_versions`, h.tokens.org);
    await call('GET', `/api/v2/organizations/${ORG}/explorer/export/csv?type=workspaces`, auditor);
    await sleep(200);
    const written = lines(log).slice(already);
    expect(written).to.have.length(41);
    for (const line of written) {
      expect(Object.keys(line)).to.include.members(['time', 'token_id', 'token_kind', 'method', 'path', 'organizations', 'status']);
      expect(line.token_id).to.equal(auditor.split('.')[0]);
      expect(line.time).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    expect(written.filter((l) => String(l.path).includes('page%5Bnumber%5D')).map((l) => l.rows)).to.satisfy((r: unknown[]) => r.every((n) => typeof n === 'number'));
    expect(written.find((l) => String(l.path).includes('/export/csv'))!.bytes).to.be.a('number').above(0);
    const text = readFileSync(log, 'utf8');
    expect(text).to.not.include(auditor.split('.')[1]!);
    // Another token's per-organization requests are not the audit log's (its requests across organizations are).
    expect(lines(log).filter((l) => l.token_id === h.tokens.org.split('.')[0] && String(l.path).startsWith('/api/v2/organizations/'))).to.deep.equal([]);
    expect(text).to.not.include(h.tokens.org.split('.')[1]!);
  });

  it('answers 503 for it, and serves everyone else, while the log cannot be written', async () => {
    // A file where the log's directory would be: it can be neither made nor opened.
    writeFileSync(join(h.dataDir, 'not-a-directory'), '');
    const server = await startServer(loadConfig({ DATA_DIR: h.dataDir, PORT: '0', POOL_WORKERS: '1', AUDIT_LOG: join(h.dataDir, 'not-a-directory', 'audit.log') }), silentLogger);
    try {
      const get = (token: string) => fetch(`${server.url}/api/v2/organizations/${ORG}/explorer?type=tf_versions`, { headers: { Authorization: `Bearer ${token}` } });
      expect((await get(auditor)).status).to.equal(503);
      expect((await get(h.tokens.org)).status).to.equal(200);
      // Across organizations every request is logged: none is served unlogged, whatever its token.
      const across = await fetch(`${server.url}/api/v2/explorer?type=tf_versions`, { headers: { Authorization: `Bearer ${h.tokens.org}` } });
      expect(across.status).to.equal(503);
      expect(across.headers.get('retry-after')).to.equal('30');
    } finally {
      await server.shutdown();
    }
  });

  it('leaves whole lines only when the server is killed with requests in flight', async () => {
    const port = await freePort();
    const killedLog = join(h.dataDir, 'killed-audit.log');
    const child = spawn(process.execPath, [CLI, 'serve'], { env: { ...process.env, DATA_DIR: h.dataDir, PORT: String(port), AUDIT_LOG: killedLog, POOL_WORKERS: '1', RATE_LIMIT_MAX: '1000000' }, stdio: 'ignore' });
    try {
      for (let ready = false; !ready; await sleep(100)) ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false);
      const inFlight = Array.from({ length: 200 }, (_, i) => fetch(`http://127.0.0.1:${port}/api/v2/organizations/${ORG}/explorer?type=workspaces&page%5Bnumber%5D=${i + 1}`,
        { headers: { Authorization: `Bearer ${auditor}` } }).then((r) => r.text(), () => null));
      // Killed once lines are being written, with most requests still to answer.
      for (const end = Date.now() + 20_000; (existsSync(killedLog) ? readFileSync(killedLog, 'utf8') : '').split('\n').length < 5 && Date.now() < end;) await sleep(5);
      child.kill('SIGKILL');
      await Promise.all(inFlight);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    const text = readFileSync(killedLog, 'utf8');
    expect(text.split('\n').filter(Boolean).length, 'lines written before the kill').to.be.within(4, 199);
    expect(text.endsWith('\n'), 'no torn last line').to.equal(true);
    for (const line of text.split('\n').filter(Boolean)) expect(() => JSON.parse(line), line).to.not.throw();
  });
});
