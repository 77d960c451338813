// The follower's kept instances: the source state read on its second instance, batch after batch, answers as
// one read on an instance of its own, and what a read attaches besides the kept layers goes when it closes.
import { expect } from 'chai';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSample } from '../../src/sample/sample.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { readCurrentId, readManifest, snapshotPath } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import type { SourceState } from '../../src/snapshots/write/batch-validator.js';
import { layerPaths } from '../../src/snapshots/write/build-steps.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { openSnapshotState } from '../../src/snapshots/write/snapshot-state.js';
import { WriterInstance } from '../../src/snapshots/write/writer-instance.js';

type Row = Record<string, string>;
const rowsOf = (dir: string, name: string): Row[] => {
  const file = readdirSync(dir).find((f) => f.startsWith(`${name}.`));
  return file ? readFileSync(join(dir, file), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Row) : [];
};

/** What a validation asks of the state about `workspaces` and `organizations`, every answer in one object. */
async function asked(state: SourceState, workspaces: Row[], organizations: string[]): Promise<unknown> {
  const ids = workspaces.map((w) => w.id!);
  const projects = workspaces.map((w) => w.project_id!);
  const maps = {
    organizations: await state.organizations(organizations),
    workspaces: await state.workspaces(ids),
    projects: await state.projects(projects),
    named: await state.workspacesNamed(workspaces.map((w) => `${w.organization}\n${w.name}`)),
    ofProjects: await state.workspacesOfProjects(projects),
  };
  return Object.fromEntries(Object.entries(maps).map(([k, m]) => [k, [...(m as Map<string, unknown>).entries()].sort()]));
}

describe('the source state read on the follower\'s kept instance', function () {
  this.timeout(300_000);
  let dir: string;
  let writer: WriterInstance | undefined;
  after(async () => {
    await writer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers as a state of its own before and after each batch, read twice on the same layers', async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-writer-instance-'));
    const source = join(dir, 'source');
    await writeSample(source, { organizations: 6, workspaces: 300, seed: 17 });
    await writeSampleChanges(source, join(dir, 'batches'), { batches: 4, workspaces: 12, seed: 18 });
    const dataDir = join(dir, 'data');
    await loadSnapshot(source, { dataDir, memoryLimit: '1GB', label: 'base' });
    writer = new WriterInstance({ dataDir, memoryLimit: '1GB' });
    const organizations = [...rowsOf(source, 'organizations').map((o) => o.name!), 'no-such-organization'];
    const batches = readdirSync(join(dir, 'batches')).sort();
    let compared = 0;
    // Before each batch and after the last: the layers differ each time (a delta, then a newer one over it).
    for (const [i, name] of [...batches.entries(), [batches.length, null] as const]) {
      const current = await readManifest(dataDir, (await readCurrentId(dataDir))!);
      const paths = layerPaths(snapshotPath(dataDir, current.id), current);
      const next = name === null ? [] : rowsOf(join(dir, 'batches', name), 'workspaces');
      const workspaces = [...rowsOf(source, 'workspaces').filter((_, k) => k % 7 === i), ...next, { id: 'ws-NoSuchWorkspace', organization: 'x', name: 'y', project_id: 'prj-NoSuch' }];
      const own = await openSnapshotState(paths);
      const expected = await asked(own, workspaces, organizations);
      await own.close();
      // Twice on the same layers: the second read finds the kept ones attached and attaches the rest again.
      for (let round = 0; round < 2; round += 1) {
        const kept = await writer.sourceState(paths);
        expect(await asked(kept, workspaces, organizations), `before batch ${i}, read ${round + 1}`).to.deep.equal(expected);
        await kept.close();
        compared += 1;
      }
      // The second batch folds (an older delta), the third writes its organizations whole (an overlay), the
      // others write a newer delta: the reads see each kind of layer, the newer delta and the overlays' schema
      // attached afresh for each read.
      if (name !== null) {
        await applyBatch(join(dir, 'batches', name), { dataDir, memoryLimit: '1GB', writer, foldWorkspaces: i === 1 ? 0 : 10_000, wholeRows: i === 2 ? Number.MAX_SAFE_INTEGER : undefined });
      }
    }
    expect(compared).to.equal(2 * (batches.length + 1));
    const after = await readManifest(dataDir, (await readCurrentId(dataDir))!);
    expect(after.sequence, 'every batch applied').to.equal(batches.length);
    expect(after.major, 'an older delta').to.be.a('string');
    expect(after.overlays ?? [], 'an overlay').to.not.deep.equal([]);
  });
});
