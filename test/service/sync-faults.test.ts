// `explorer sync` when the upstream misbehaves, through a proxy that injects faults in front of a real
// upstream (another instance of this service): a 429 is waited out, a 503 and a transfer cut off midway are
// tried again, and the mirror ends equal to the upstream; `--every` follows changes and stops cleanly on SIGTERM.
import { expect } from 'chai';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { listSnapshotIds, readCurrentId, readManifest } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { startFaultProxy, type Fault } from '../helpers/fault-proxy.js';
import { mirrorable, runSync, sameAnswers, SERVER_ENV, spawnSync, startUpstream, type Upstream } from '../helpers/sync-upstream.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('explorer sync through faults', function () {
  this.timeout(300_000);
  let dir: string;
  let up: Upstream;
  const servers: RunningServer[] = [];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-sync-faults-'));
    up = await startUpstream(dir, { organizations: 2, workspaces: 80, seed: 81 });
  });
  after(async () => {
    await Promise.all([up?.server.shutdown(), ...servers.map((s) => s.shutdown())]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits out a 429, tries a 503 and a cut-off transfer again, and never keeps a short file', async () => {
    const org = up.organizations[0]!;
    // Each export: a 429, then a 503, then half its body, then whole.
    const sequence: Fault[] = ['429', '503', 'cut'];
    const proxy = await startFaultProxy(up.server.url, (n, path) => (path.includes('/export/csv') ? sequence[n - 1] ?? 'pass' : 'pass'));
    try {
      const down = join(dir, 'faults');
      const r = await runSync(['--from', proxy.url, '--organization', org], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)! });
      expect(r.code, r.stderr).to.equal(0);
      const exports = [...proxy.seen.entries()].filter(([path]) => path.includes('/export/csv'));
      expect(exports.map(([path]) => new URL(path, 'http://x').searchParams.get('type')).sort()).to.deep.equal(['modules', 'providers', 'resources', 'workspaces']);
      for (const [path, faults] of exports) expect(faults, path).to.deep.equal([...sequence, 'pass']);
      cpSync(join(up.dataDir, 'state'), join(down, 'state'), { recursive: true });
      const mirror = await startServer(loadConfig({ ...SERVER_ENV, DATA_DIR: down }), silentLogger);
      servers.push(mirror);
      await sameAnswers(up.server, mirror, [org], up.tokens);
    } finally {
      await proxy.close();
    }
  });

  it('fails an organization whose exports keep failing, and keeps what the mirror had', async () => {
    const org = up.organizations[1]!;
    const down = join(dir, 'failing');
    expect((await runSync(['--from', up.server.url, '--organization', org], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)! })).code).to.equal(0);
    const held = await readCurrentId(down);
    // A change upstream the mirror must not half-take: every resources export is cut off.
    await writeSampleChanges(up.source, join(dir, 'failing-changes'), { batches: 1, workspaces: 10, seed: 82 });
    mirrorable(join(dir, 'failing-changes', 'batch-0001'));
    await applyBatch(join(dir, 'failing-changes', 'batch-0001'), { dataDir: up.dataDir, memoryLimit: '1GB' });
    await up.server.snapshots.refresh();
    const proxy = await startFaultProxy(up.server.url, (_n, path) => (path.includes('type=resources') ? 'cut' : 'pass'));
    try {
      const r = await runSync(['--from', proxy.url, '--organization', org], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)!, SYNC_BACKOFF_MS: '20' });
      expect(r.code).to.equal(1);
      expect(r.stderr).to.match(new RegExp(`sync failed for ${org}: resources of ${org}: the transfer broke off .*\\(after 6 tries\\)`));
      expect(await readCurrentId(down)).to.equal(held);
    } finally {
      await proxy.close();
    }
  });

  it('--every follows changes upstream, one run at a time, and stops cleanly on SIGTERM', async () => {
    const org = up.organizations[0]!;
    const down = join(dir, 'every');
    const { child, out } = spawnSync(['--from', up.server.url, '--organization', org, '--every', '1s'], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)! });
    const waitFor = async (test: () => boolean, what: string) => {
      for (const end = Date.now() + 60_000; !test();) {
        if (Date.now() > end || child.exitCode !== null) throw new Error(`${what}: ${out()}`);
        await sleep(50);
      }
    };
    try {
      await waitFor(() => /unchanged/.test(out()), 'a run that found nothing changed');
      const before = (await listSnapshotIds(down)).length;
      await writeSampleChanges(up.source, join(dir, 'every-changes'), { batches: 1, workspaces: 12, seed: 83 });
      mirrorable(join(dir, 'every-changes', 'batch-0001'));
      await applyBatch(join(dir, 'every-changes', 'batch-0001'), { dataDir: up.dataDir, memoryLimit: '1GB' });
      await up.server.snapshots.refresh();
      const runs = () => out().split('\n').filter((l) => l.startsWith(`${org}: read`));
      const seen = runs().length;
      await waitFor(() => runs().slice(seen).some((l) => /snapshot \d{8}T/.test(l)), 'a run that took the change');
      expect((await listSnapshotIds(down)).length).to.equal(before + 1);
      expect((await readManifest(down, (await readCurrentId(down))!)).label).to.match(/^sync /);
    } finally {
      child.kill('SIGTERM');
    }
    const code = await new Promise<number | null>((r) => { if (child.exitCode !== null) r(child.exitCode); else child.once('exit', (c) => r(c)); });
    expect(code, out()).to.equal(0);
  });
});
