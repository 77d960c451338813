// A batch's delta starts as a copy of the one before (delta.ts attachStack), and every retained snapshot keeps
// its own. On a filesystem that clones files (XFS with reflinks, btrfs) that copy shares the blocks it does not
// change, so the retained snapshots cost the disk what changed between them (docs/deployment.md, "Disk").
// Here on the small XFS filesystem `make test-deps` mounts at REFLINK_DIR (xfsprogs, a loop device).
import { expect } from 'chai';
import { copyFileSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeSample } from '../../src/sample/sample.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { snapshotPath, type Manifest } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { newBytesOf } from '../helpers/disk.js';

const REFLINK_DIR = process.env.REFLINK_DIR ?? '/var/tmp/explorer-reflink';

describe('deltas cloned where the filesystem can', function () {
  this.timeout(120_000);
  let dir: string;
  before(function () {
    dir = mkdtempSync(join(REFLINK_DIR, 'explorer-clone-'));
    // The filesystem must clone, or this test proves nothing: make test-deps mounts one that does.
    writeFileSync(join(dir, 'probe'), 'x');
    try {
      copyFileSync(join(dir, 'probe'), join(dir, 'probe-clone'), constants.COPYFILE_FICLONE_FORCE);
    } catch (e) {
      throw new Error(`${REFLINK_DIR} cannot clone files (${(e as Error).message}): run make test-deps, which mounts an XFS filesystem there`);
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('writes each newer delta, and each older delta at a fold, as a clone of the one before: only what the batch changed takes space', async () => {
    const source = join(dir, 'source');
    await writeSample(source, { organizations: 2, workspaces: 200, seed: 5 });
    await writeSampleChanges(source, join(dir, 'batches'), { batches: 5, workspaces: 5, seed: 6 });
    const dataDir = join(dir, 'data');
    await loadSnapshot(source, { dataDir, memoryLimit: '1GB' });
    const fileOf = (m: Manifest, name: string) => join(snapshotPath(dataDir, m.id), name);
    const written: Array<{ file: string; kind: 'newer' | 'older' }> = [];
    for (let i = 1; i <= 5; i++) {
      // Every organization layered (no overlays); the third and the fifth batch fold: the second fold's older
      // delta starts as a copy of the first's.
      const fold = i === 3 || i === 5 ? 0 : 1_000_000;
      const { manifest } = await applyBatch(join(dir, 'batches', `batch-000${i}`), { dataDir, memoryLimit: '1GB', wholeRows: 0, foldWorkspaces: fold, foldBatchWorkspaces: fold, keep: 10, keepDays: 0 });
      const folded = manifest.majorId === manifest.id;
      const name = folded ? manifest.major! : manifest.delta!;
      written.push({ file: fileOf(manifest, name), kind: folded ? 'older' : 'newer' });
    }
    expect(written.map((w) => w.kind)).to.deep.equal(['newer', 'newer', 'older', 'newer', 'older']);
    // Each delta copied from one before it (the second newer delta from the first, the second older delta
    // from the first older one) adds to the disk less than its size: the blocks it shares are counted once.
    for (const [later, earlier] of [[1, 0], [4, 2]] as const) {
      const [, added] = newBytesOf([written[earlier]!.file, written[later]!.file]);
      const [allocated] = newBytesOf([written[later]!.file]);
      expect(added, `${written[later]!.kind} delta ${later + 1}: ${added} of its ${allocated} bytes its own`).to.be.below(allocated! * 0.75);
    }
  });
});
