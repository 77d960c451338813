// Retention with batch snapshots: they share their base's DuckDB file (and the older delta) by hard links, so
// retention may remove the loaded snapshot they build on, by count or by day, while they keep serving; and a
// server keeps answering through every fold of the deltas.
import { expect } from 'chai';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { listSnapshotIds, readCurrentId, readManifest, snapshotPath } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import * as fx from '../fixtures/small-source.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';

describe('retention of batch snapshots', function () {
  this.timeout(120_000);
  let h: Harness;
  before(async () => { h = await startHarness({ env: { SNAPSHOT_KEEP: '2', SNAPSHOT_KEEP_DAYS: '0' } }); });
  after(async () => { await h.close(); });

  /** A batch that renames the fixture's first workspace to `name`. */
  const renaming = (name: string) => {
    const dir = join(h.dataDir, `batch-${name}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'workspaces.ndjson'), JSON.stringify({ ...fx.workspaces[0], name }) + '\n');
    return dir;
  };

  it('removes the loaded base past SNAPSHOT_KEEP while the batch snapshots built on it keep serving, through folds', async () => {
    const base = (await readCurrentId(h.dataDir))!;
    const forms: string[] = [];
    for (const name of ['first', 'second', 'third', 'fourth']) {
      // Fold every other batch: the older delta is written, shared, and replaced again.
      const { manifest } = await applyBatch(renaming(name), { dataDir: h.dataDir, keep: 2, keepDays: 0, foldWorkspaces: 1, wholeRows: 0 });
      forms.push(manifest.majorId === manifest.id ? 'fold' : manifest.major ? 'both' : 'newer');
      await h.running.snapshots.refresh();
      const page = await json(await h.explorer(`?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bis%5D%5B0%5D=${name}`));
      expect(page.data, name).to.have.length(1);
      expect(page.data[0].attributes['external-id']).to.equal(fx.workspaces[0]!.id);
    }
    expect(forms).to.deep.equal(['newer', 'fold', 'both', 'fold']);
    expect(existsSync(snapshotPath(h.dataDir, base)), 'the base snapshot removed').to.equal(false);
    const ids = await listSnapshotIds(h.dataDir);
    expect(ids).to.have.length(2);
    for (const id of ids) expect((await readManifest(h.dataDir, id)).base).to.equal(base);
    // The previous batch snapshot still answers by id, from the same shared base file.
    const older = await h.explorer(`?type=workspaces&snapshot=${ids[0]}&filter%5B0%5D%5Bworkspace_name%5D%5Bis%5D%5B0%5D=third`);
    expect(older.status).to.equal(200);
    expect((await json(older)).data).to.have.length(1);
  });

  it('keeps serving an overlay after retention removed the snapshot that wrote it', async () => {
    // globex's workspace renamed: the organization is small, written whole into that batch's overlay.
    const dir = join(h.dataDir, 'batch-globex');
    mkdirSync(dir);
    writeFileSync(join(dir, 'workspaces.ndjson'), JSON.stringify({ ...fx.workspaces.find((w) => w.organization === fx.OTHER_ORG)!, name: 'globex-renamed' }) + '\n');
    const first = (await applyBatch(dir, { dataDir: h.dataDir, keep: 2, keepDays: 0, wholeRows: 1_000 })).manifest;
    const overlay = first.overlays!.find((o) => o.organizations[fx.OTHER_ORG] !== undefined)!;
    expect(overlay.id).to.equal(first.id);
    expect(first.deltaOrganizations ?? []).to.not.include(fx.OTHER_ORG);
    // Batches on acme-corp alone (which the deltas hold already: layered still); globex's overlay stays its current copy.
    for (const name of ['fifth', 'sixth', 'seventh']) {
      const { manifest } = await applyBatch(renaming(name), { dataDir: h.dataDir, keep: 2, keepDays: 0, wholeRows: 1_000 });
      expect(manifest.deltaOrganizations, name).to.include(fx.ORG);
      expect(manifest.overlays!.find((o) => o.organizations[fx.OTHER_ORG] !== undefined)?.file, name).to.equal(overlay.file);
    }
    expect(existsSync(snapshotPath(h.dataDir, first.id)), 'the overlay\'s own snapshot removed').to.equal(false);
    await h.running.snapshots.refresh();
    const page = await json(await h.request(`/api/v2/organizations/${fx.OTHER_ORG}/explorer?type=workspaces`, { token: h.tokens.otherOrg }));
    expect(page.data.map((r: { attributes: Record<string, unknown> }) => r.attributes['workspace-name'])).to.deep.equal(['globex-renamed']);
    const acme = await json(await h.explorer('?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bis%5D%5B0%5D=seventh'));
    expect(acme.data).to.have.length(1);
  });
});

describe('history compaction beside batch snapshots', function () {
  this.timeout(120_000);
  let h: Harness;
  before(async () => { h = await startHarness({ env: { SNAPSHOT_KEEP: '10', SNAPSHOT_KEEP_DAYS: '0' } }); });
  after(async () => { await h.close(); });

  it('leaves every batch snapshot as it is when a load compacts the older snapshots, one with only an older delta too', async () => {
    const renamed: [string, string][] = [];
    for (const name of ['one', 'two', 'three']) {
      const dir = join(h.dataDir, `batch-${name}`);
      mkdirSync(dir);
      writeFileSync(join(dir, 'workspaces.ndjson'), JSON.stringify({ ...fx.workspaces[0], name }) + '\n');
      const { manifest } = await applyBatch(dir, { dataDir: h.dataDir, keep: 10, keepDays: 0, foldWorkspaces: 1, wholeRows: 0 });
      renamed.push([manifest.id, name]);
    }
    const folded = await readManifest(h.dataDir, renamed[1]![0]);
    expect(folded.major, 'the second batch folds: an older delta only').to.be.a('string');
    expect(folded.delta).to.equal(undefined);
    // Two loads: every snapshot but the newest two is then older than SNAPSHOT_KEEP_FULL.
    for (let i = 0; i < 2; i++) {
      const loaded = await loadSnapshot(join(h.dataDir, 'source'), { dataDir: h.dataDir, memoryLimit: '1GB', keep: 10, keepDays: 0, keepFull: 2 });
      expect(loaded.compactionError, 'compaction').to.equal(undefined);
    }
    await h.running.snapshots.refresh();
    for (const [id, name] of renamed) {
      expect((await readManifest(h.dataDir, id)).compacted, id).to.equal(undefined);
      const page = await h.explorer(`?type=workspaces&snapshot=${id}&filter%5B0%5D%5Bworkspace_name%5D%5Bis%5D%5B0%5D=${name}`);
      expect(page.status).to.equal(200);
      expect((await json(page)).data, name).to.have.length(1);
    }
  });
});
