// Retention (docs/history.md §1): the newest SNAPSHOT_KEEP snapshots are kept; an older one goes once no
// request holds it, within a poll of the load that pushed it out, and a snapshot a request is reading is
// never removed under it.
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { silentLogger } from '../../src/log.js';
import { SnapshotRegistry } from '../../src/snapshots/read/current-snapshot.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { snapshotPath } from '../../src/snapshots/snapshot-dir.js';
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
    const registry = new SnapshotRegistry(dataDir, 50, silentLogger, 2);
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
