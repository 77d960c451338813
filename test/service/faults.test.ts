// Faults: damaged snapshots, a load killed midway, the server killed during writes. The process
// stays up, answers 503 rather than 500, never makes a half snapshot current, and loses no acknowledged write.
import { expect } from 'chai';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, promises as fs, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { issueToken } from '../../src/access/tokens.js';
import { loadConfig } from '../../src/config.js';
import { openStateStore } from '../../src/store/open-store.js';
import { join } from 'node:path';
import { silentLogger } from '../../src/log.js';
import { startServer } from '../../src/server.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { readCurrentId, snapshotPath, writeCurrentId } from '../../src/snapshots/snapshot-dir.js';
import { writeSample } from '../../src/sample/sample.js';
import { writeSmallSource } from '../fixtures/small-source.js';
import { startHarness, json, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

async function readyState(url: string): Promise<{ status: number; snapshot: string }> {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, snapshot: ((await res.json()) as { snapshot: { status: string } }).snapshot.status };
}

describe('damaged snapshots', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.close(); });

  it('refuses a newly current snapshot with a truncated file: not ready, 503, still up, and recovers on the next good load', async () => {
    const staging = join(h.dataDir, 'staging');
    writeSmallSource(join(staging, 'source'));
    const { manifest } = await loadSnapshot(join(staging, 'source'), { dataDir: staging });
    cpSync(snapshotPath(staging, manifest.id), snapshotPath(h.dataDir, manifest.id), { recursive: true });
    const db = join(snapshotPath(h.dataDir, manifest.id), 'snapshot.duckdb');
    await fs.truncate(db, (await fs.stat(db)).size - 4096);
    await writeCurrentId(h.dataDir, manifest.id);

    await waitFor(async () => (await readyState(h.url)).snapshot === 'broken', 5000, 'broken snapshot noticed');
    expect((await readyState(h.url)).status).to.equal(503);
    for (const path of ['explorer?type=workspaces', 'explorer/export/csv?type=workspaces']) {
      const res = await h.request(`/api/v2/organizations/acme-corp/${path}`);
      expect(res.status).to.equal(503);
      expect((await json(res)).errors[0].status).to.equal('503');
    }
    const good = join(h.dataDir, 'good-source');
    writeSmallSource(good);
    const { manifest: next } = await loadSnapshot(good, { dataDir: h.dataDir });
    await waitFor(async () => (await readyState(h.url)).status === 200, 5000, 'recovery');
    const res = await h.explorer('?type=workspaces');
    expect(res.status).to.equal(200);
    expect(res.headers.get('x-explorer-snapshot')).to.equal(next.id);
  });

  it('starts with a missing snapshot file as not ready, answers 503, and recovers on the next good load', async () => {
    await h.running.shutdown();
    const id = (await readCurrentId(h.dataDir))!;
    await fs.unlink(join(snapshotPath(h.dataDir, id), 'workspaces.parquet'));
    const server = await startServer(h.config, silentLogger);
    try {
      expect(await readyState(server.url)).to.deep.equal({ status: 503, snapshot: 'broken' });
      const res = await fetch(`${server.url}/api/v2/organizations/acme-corp/explorer?type=providers`, { headers: { Authorization: `Bearer ${h.tokens.org}` } });
      expect(res.status).to.equal(503);
      const good = join(h.dataDir, 'good-source-2');
      writeSmallSource(good);
      await loadSnapshot(good, { dataDir: h.dataDir });
      await waitFor(async () => (await readyState(server.url)).status === 200, 5000, 'recovery');
    } finally {
      await server.shutdown();
    }
    h.running = await startServer(h.config, silentLogger); // for after(): h.close() shuts this one down
  });
});

describe('a load killed midway', function () {
  this.timeout(120_000);
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.close(); });

  it('leaves the current snapshot serving, makes nothing half-written current, and the next load succeeds', async () => {
    const before = await readCurrentId(h.dataDir);
    const source = join(h.dataDir, 'big-source');
    await writeSample(source, { organizations: 5, workspaces: 40000, seed: 4, resources: false });
    const child: ChildProcess = spawn(process.execPath, [CLI, 'load', source], { env: { ...process.env, DATA_DIR: h.dataDir }, stdio: 'ignore' });
    // Kill it once it has started writing the snapshot's files.
    await waitFor(() => readdirSync(join(h.dataDir, 'snapshots')).some((n) => n.startsWith('.tmp-')), 60_000, 'load writing');
    await new Promise((r) => setTimeout(r, 300));
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    expect(await readCurrentId(h.dataDir)).to.equal(before);
    expect((await h.explorer('?type=workspaces')).status).to.equal(200);
    const { manifest } = await loadSnapshot(source, { dataDir: h.dataDir });
    expect(manifest.counts.workspaces).to.equal(40000);
    await waitFor(async () => (await h.explorer('?type=workspaces')).headers.get('x-explorer-snapshot') === manifest.id, 5000, 'switch');
  });
});

describe('the server killed during a burst of saved-view writes', function () {
  this.timeout(90_000);
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.close(); });

  async function serve(): Promise<{ child: ChildProcess; url: string }> {
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: { ...process.env, DATA_DIR: h.dataDir, PORT: '0', RATE_LIMIT_MAX: '100000', UV_THREADPOOL_SIZE: '16' },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
        const m = /"msg":"listening","url":"([^"]+)"/.exec(out);
        if (m) resolve(m[1]!);
      });
      child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
    });
    return { child, url };
  }

  it('keeps every acknowledged create after kill -9, and the store opens cleanly', async () => {
    await h.running.shutdown();
    const first = await serve();
    const acknowledged: string[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        try {
          const res = await fetch(`${first.url}/api/v2/organizations/acme-corp/explorer/views`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${h.tokens.org}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ data: { name: `burst ${w}-${i}`, query_type: 'workspaces', query: { filter: [] } } }),
          });
          if (res.status === 201) acknowledged.push(((await res.json()) as { data: { id: string } }).data.id);
        } catch {
          return; // the server is gone
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, w) => writer(w));
    await waitFor(() => acknowledged.length >= 150, 30_000, '150 acknowledged writes');
    const exited = new Promise((r) => first.child.once('exit', r));
    first.child.kill('SIGKILL');
    await exited;
    stop = true;
    await Promise.all(writers);

    const second = await serve();
    try {
      const res = await fetch(`${second.url}/api/v2/organizations/acme-corp/explorer/views?page%5Bsize%5D=100`, { headers: { Authorization: `Bearer ${h.tokens.org}` } });
      expect(res.status).to.equal(200);
      const total = ((await res.json()) as any).meta.pagination["total-count"] as number;
      expect(total).to.be.at.least(acknowledged.length);
      const ids = new Set<string>();
      for (let page = 1; page <= Math.ceil(total / 100); page++) {
        const body: any = await (await fetch(`${second.url}/api/v2/organizations/acme-corp/explorer/views?page%5Bsize%5D=100&page%5Bnumber%5D=${page}`, { headers: { Authorization: `Bearer ${h.tokens.org}` } })).json();
        for (const v of body.data) ids.add(v.id);
      }
      expect(acknowledged.filter((id) => !ids.has(id))).to.deep.equal([]);
    } finally {
      second.child.kill('SIGTERM');
      await new Promise((r) => second.child.once('exit', r));
    }
    h.running = await startServer(h.config, silentLogger);
  });
});

describe('a load failing on a full disk', function () {
  this.timeout(120_000);
  // A real full disk: DATA_DIR on a 16 MB tmpfs (these machines run tests as root, as CI does): room for two
  // snapshots of the small fixture (3.7 MB each), not for one of 20,000 workspaces (37 MB).
  const mountPoint = join(tmpdir(), `explorer-full-disk-${process.pid}`);
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  before(() => {
    mkdirSync(mountPoint, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mountPoint]);
  });
  after(async () => {
    await server?.shutdown();
    // The stopped workers' DuckDB instances close their files when their threads are collected, which can
    // be a moment after shutdown: retry while the mount is busy, then detach it lazily.
    const until = Date.now() + 10_000;
    for (;;) {
      try {
        execFileSync('umount', [mountPoint], { stdio: 'ignore' });
        break;
      } catch {
        if (Date.now() > until) { execFileSync('umount', ['-l', mountPoint]); break; }
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    rmSync(mountPoint, { recursive: true, force: true });
  });

  it('fails the load with ENOSPC, keeps the current snapshot serving, leaves nothing behind, and the next load succeeds', async () => {
    const small = join(tmpdir(), `explorer-small-${process.pid}`);
    writeSmallSource(small);
    await loadSnapshot(small, { dataDir: mountPoint });
    const before = await readCurrentId(mountPoint);
    const store = await openStateStore({ dataDir: mountPoint });
    const token = (await issueToken(store, { kind: 'organization', organization: 'acme-corp' })).token;
    await store.close();
    server = await startServer(loadConfig({ DATA_DIR: mountPoint, PORT: '0', POOL_WORKERS: '1', SNAPSHOT_POLL_MS: '100', DUCKDB_MEMORY_LIMIT: '256MB' }), silentLogger);
    const query = () => fetch(`${server!.url}/api/v2/organizations/acme-corp/explorer?type=workspaces`, { headers: { Authorization: `Bearer ${token}` } });
    expect((await query()).status).to.equal(200);

    const big = join(tmpdir(), `explorer-big-${process.pid}`);
    await writeSample(big, { organizations: 3, workspaces: 20000, seed: 6, resources: false });
    let failure: Error | undefined;
    await loadSnapshot(big, { dataDir: mountPoint }).catch((e: Error) => { failure = e; });
    expect(failure?.message ?? 'the load succeeded').to.match(/space|ENOSPC|No space/i);
    expect(await readCurrentId(mountPoint)).to.equal(before);
    expect(readdirSync(join(mountPoint, 'snapshots')).filter((n) => n.startsWith('.tmp-'))).to.deep.equal([]);
    expect((await query()).status).to.equal(200);

    const { manifest } = await loadSnapshot(small, { dataDir: mountPoint });
    await waitFor(async () => (await query()).headers.get('x-explorer-snapshot') === manifest.id, 5000, 'switch after the failed load');
    rmSync(small, { recursive: true, force: true });
    rmSync(big, { recursive: true, force: true });
  });
});
