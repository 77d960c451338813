// Retention (docs/history.md §1): the newest SNAPSHOT_KEEP snapshots are kept; an older one goes once no
// request holds it, within a poll of the load that pushed it out, and a snapshot a request is reading is
// never removed under it.
import { expect } from 'chai';
import { cpSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { silentLogger } from '../../src/log.js';
import { SnapshotRegistry } from '../../src/snapshots/read/current-snapshot.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { newSnapshotId, readCurrentId, readManifest, snapshotPath, writeManifest } from '../../src/snapshots/snapshot-dir.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

describe('snapshot retention', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => { h = await startHarness({ env: { SNAPSHOT_KEEP: '2' } }); });
  after(async () => { await h.close(); });

  const current = async () => (await h.explorer('?type=workspaces&page%5Bsize%5D=1')).headers.get('x-explorer-snapshot')!;
  const load = async (label: string, keep = 2) => {
    const { manifest } = await loadSnapshot(join(h.dataDir, 'source'), { dataDir: h.dataDir, keep, label });
    await waitFor(async () => (await current()) === manifest.id, 5000, `${label} current`);
    return manifest.id;
  };

  it('keeps the newest SNAPSHOT_KEEP, and answers an id it no longer keeps with a 400', async () => {
    const first = await current();
    const second = await load('second');
    expect((await h.explorer(`?type=workspaces&snapshot=${first}`)).status).to.equal(200);
    const third = await load('third');
    const listed = await json(await h.explorer('/snapshots'));
    expect(listed.data.map((s: any) => s.id)).to.deep.equal([third, second]);
    const gone = await h.explorer(`?type=workspaces&snapshot=${first}`);
    expect(gone.status).to.equal(400);
    expect((await json(gone)).errors[0].source).to.deep.equal({ parameter: 'snapshot' });
    expect((await json(await h.explorer('/trend?type=workspaces'))).data.map((p: any) => p.id)).to.deep.equal([second, third]);
    expect(existsSync(snapshotPath(h.dataDir, first))).to.equal(false);
  });

  it('removes a snapshot pushed out only once the lease on it is released', async () => {
    // A data directory of its own, with no server polling it: only this registry's retention removes anything.
    const dataDir = join(h.dataDir, 'lease-data');
    const loadHere = async () => (await loadSnapshot(join(h.dataDir, 'source'), { dataDir, keep: 100 })).manifest.id;
    const oldest = await loadHere();
    const registry = new SnapshotRegistry(dataDir, 50, silentLogger, { keep: 2, keepDays: 0 });
    await registry.start();
    try {
      const lease = registry.lease((await registry.history())[0]!);
      expect(lease.snapshot.id).to.equal(oldest);
      await loadHere();
      const newest = await loadHere();
      await waitFor(async () => (await registry.history()).some((s) => s.id === newest), 5000, 'the registry sees the new loads');
      expect((await registry.history()).map((s) => s.id)).to.not.include(oldest);
      await new Promise((r) => setTimeout(r, 300)); // several polls
      expect(existsSync(snapshotPath(dataDir, oldest)), 'leased: still on disk').to.equal(true);
      lease.release();
      await waitFor(() => !existsSync(snapshotPath(dataDir, oldest)), 5000, 'removed after release');
      expect((await registry.history()).every((s) => existsSync(snapshotPath(dataDir, s.id)))).to.equal(true);
    } finally {
      registry.stop();
    }
  });
});

describe('snapshot retention by day', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => { h = await startHarness({ env: { SNAPSHOT_KEEP: '2', SNAPSHOT_KEEP_DAYS: '3' } }); });
  after(async () => { await h.close(); });

  /** A copy of the current snapshot as if it had been loaded at `when` (its id and loaded-at). */
  const madeAt = async (when: Date) => {
    const from = (await readCurrentId(h.dataDir))!;
    const manifest = await readManifest(h.dataDir, from);
    const id = newSnapshotId(when);
    cpSync(snapshotPath(h.dataDir, from), snapshotPath(h.dataDir, id), { recursive: true });
    await writeManifest(h.dataDir, { ...manifest, id, createdAt: when.toISOString() });
    return id;
  };
  const listed = async () => (await json(await h.explorer('/snapshots'))).data.map((s: any) => s.id).sort();

  it('keeps the newest of each of the last SNAPSHOT_KEEP_DAYS UTC days besides the newest SNAPSHOT_KEEP', async () => {
    const day = 86_400_000;
    const midnight = Math.floor(Date.now() / day) * day; // today's, in UTC
    const tooOld = await madeAt(new Date(midnight - 3 * day + 12 * 3_600_000));
    const twoDaysAgo = [await madeAt(new Date(midnight - 2 * day + 10 * 3_600_000)), await madeAt(new Date(midnight - 2 * day + 11 * 3_600_000))];
    const yesterday = await madeAt(new Date(midnight - day + 12 * 3_600_000));
    const today: string[] = [];
    for (let i = 0; i < 3; i++) today.push((await loadSnapshot(join(h.dataDir, 'source'), { dataDir: h.dataDir, keep: 2, keepDays: 3 })).manifest.id);
    await waitFor(async () => (await h.explorer('?type=workspaces&page%5Bsize%5D=1')).headers.get('x-explorer-snapshot') === today[2], 5000, 'the newest current');
    await h.running.snapshots.refresh();
    // Yesterday's and the day before's newest stay; the first of three today, the older of two days ago and
    // the one three days back go (the rule counts today as the first of the three days).
    expect(await listed()).to.deep.equal([twoDaysAgo[1], yesterday, today[1], today[2]].sort());
    for (const gone of [tooOld, twoDaysAgo[0]!, today[0]!]) expect(existsSync(snapshotPath(h.dataDir, gone)), gone).to.equal(false);
    expect((await h.explorer(`?type=workspaces&snapshot=${yesterday}`)).status).to.equal(200);
  });
});
