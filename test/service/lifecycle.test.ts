// The real `explorer serve` process: one JSON log line per request (never a token), and SIGTERM drains
// in-flight requests, interrupts what is left after the grace period, and exits 0.
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { get, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueToken } from '../../src/access/tokens.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { writeSample } from '../../src/sample/sample.js';
import { openStateStore } from '../../src/store/open-store.js';
import { waitFor } from '../helpers/wait.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

describe('the serve process', function () {
  this.timeout(90_000);
  let dataDir: string;
  let token: string;
  let child: ChildProcess;
  let url: string;
  const logs: Record<string, any>[] = [];
  let raw = '';

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'explorer-serve-'));
    await writeSample(join(dataDir, 'source'), { organizations: 2, workspaces: 24000, seed: 5, resources: false });
    await loadSnapshot(join(dataDir, 'source'), { dataDir });
    const store = await openStateStore({ dataDir });
    token = (await issueToken(store, { kind: 'organization', organization: 'acme-corp' })).token;
    await store.close();
    child = spawn(process.execPath, [CLI, 'serve'], {
      env: { ...process.env, DATA_DIR: dataDir, PORT: '0', SHUTDOWN_GRACE_MS: '1000', POOL_WORKERS: '2', UV_THREADPOOL_SIZE: '16' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (b: Buffer) => {
      raw += b.toString();
      const lines = raw.split('\n');
      raw = lines.pop()!;
      for (const l of lines) logs.push(JSON.parse(l));
    });
    await waitFor(() => logs.some((l) => l.msg === 'listening'), 20_000, 'listening');
    url = logs.find((l) => l.msg === 'listening')!.url;
  });
  after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('logs one JSON line per request with request id, organization, route, status, duration and rows, and no token', async () => {
    const res = await fetch(`${url}/api/v2/organizations/acme-corp/explorer?type=providers&page%5Bsize%5D=3`, {
      headers: { Authorization: `Bearer ${token}`, 'X-Request-Id': 'trace-123' },
    });
    expect(res.status).to.equal(200);
    expect(res.headers.get('x-request-id')).to.equal('trace-123');
    await waitFor(() => logs.some((l) => l.request_id === 'trace-123'));
    const line = logs.find((l) => l.request_id === 'trace-123')!;
    expect(line).to.include({
      level: 'info', msg: 'request', method: 'GET', organization: 'acme-corp', status: 200, rows: 3,
      route: '/api/v2/organizations/:organization_name/explorer',
    });
    expect(line.duration_ms).to.be.a('number');
    expect(line.snapshot).to.equal(res.headers.get('x-explorer-snapshot'));
    const unauthorized = await fetch(`${url}/api/v2/organizations/acme-corp/explorer?type=providers`, { headers: { Authorization: `Bearer ${token}x` } });
    expect(unauthorized.status).to.equal(401);
    await waitFor(() => logs.filter((l) => l.msg === 'request').length >= 2);
    const everything = JSON.stringify(logs) + raw;
    expect(everything).to.not.include(token.split('.')[1]!);
  });

  it('drains on SIGTERM: finishes quick requests, interrupts a stalled export after the grace period, exits 0', async () => {
    const stalled = await new Promise<IncomingMessage>((resolve, reject) => {
      get(`${url}/api/v2/organizations/acme-corp/explorer/export/csv?type=workspaces`, { headers: { Authorization: `Bearer ${token}` } }, resolve).on('error', reject);
    });
    expect(stalled.statusCode).to.equal(200);
    stalled.pause();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const signalled = Date.now();
    child.kill('SIGTERM');
    const code = await exited;
    const took = Date.now() - signalled;
    expect(code).to.equal(0);
    expect(took).to.be.within(900, 10_000);
    expect(stalled.complete).to.equal(false);
    const messages = logs.map((l) => l.msg);
    expect(messages).to.include.members(['signal received', 'shutting down', 'grace period over: interrupting the remaining queries', 'stopped']);
  });

  it('refuses to start on a damaged state journal, naming the line, and leaves the journal as it was', async () => {
    const { readFileSync, writeFileSync } = await import('node:fs');
    const { execFile } = await import('node:child_process');
    const journal = join(dataDir, 'state', 'journal.ndjson');
    const text = readFileSync(journal, 'utf8');
    const damaged = text.replace(/"kind":"organization"/, '"kind":"organizatiom"');
    expect(damaged).to.not.equal(text);
    writeFileSync(journal, damaged);
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(process.execPath, [CLI, 'serve'], { env: { ...process.env, DATA_DIR: dataDir, PORT: '0' } }, (e, _out, stderr) =>
        resolve({ code: e ? (e as { code?: number }).code ?? 1 : 0, stderr }));
    });
    expect(result.code).to.equal(1);
    expect(result.stderr).to.match(/journal\.ndjson:1: /);
    expect(readFileSync(journal, 'utf8')).to.equal(damaged);
  });
});
