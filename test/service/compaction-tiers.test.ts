// A compaction costs what changed since the last one (whole-layer.ts planCompaction): it writes the
// organizations the deltas hold, and leaves an earlier whole layer larger than that where it lies, the current
// copy of its organizations among the overlays, until a later compaction takes it in; and it writes a large
// organization read from the base as a run over it, while the run replaces little of it (delta-layout.ts
// RUN_ROWS). Each step compares every organization's routes with a full load of the same source, and checks
// where each organization lies.
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSample } from '../../src/sample/sample.js';
import { type RunningServer } from '../../src/server.js';
import { isWholeFile } from '../../src/snapshots/delta-layout.js';
import { readCurrentId, readManifest, type Manifest } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { compactLayers, type WholeLayerOptions } from '../../src/snapshots/write/whole-layer.js';
import { applyBatch as oracle } from '../helpers/batch-oracle.js';
import { comparableAnswer, comparedRoutes } from '../helpers/compare-routes.js';
import { readRows as read, writeRows as write } from '../helpers/ndjson.js';
import { twinServers } from '../helpers/twin-servers.js';

const ROW_FILES = ['workspace_providers', 'workspace_modules', 'workspace_resources'];

/** A batch over `source` that renames two of `org`'s workspaces. */
function writeBatch(source: string, out: string, org: string, round: number): void {
  const workspaces = read(source, 'workspaces').filter((w) => w.organization === org).sort((a, b) => (a.id < b.id ? -1 : 1));
  const picked = [workspaces[round % workspaces.length]!, workspaces[(round + 3) % workspaces.length]!];
  mkdirSync(out, { recursive: true });
  write(out, 'workspaces', picked.map((w) => ({ ...w, name: `r${round}-${w.name}` })));
  for (const file of ROW_FILES) write(out, file, read(source, file).filter((r) => picked.some((w) => w.id === r.workspace_id)));
}

describe('compaction: an earlier whole layer left where it lies, a large organization written as a run', function () {
  this.timeout(300_000);
  let dir: string;
  const servers: RunningServer[] = [];
  before(() => { dir = mkdtempSync(join(tmpdir(), 'explorer-compaction-tiers-')); });
  after(async () => {
    await Promise.all(servers.map((s) => s.shutdown()));
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A sample of four organizations loaded twice, one directory to take batches and compactions, the other full
   * loads of the same sources, each served: `step` applies a batch that renames two of an organization's
   * workspaces to the one and loads the result into the other, `compact` compacts the first, and each compares
   * every organization's routes on both servers.
   */
  async function twins(name: string) {
    const s0 = join(dir, `${name}-s0`);
    await writeSample(s0, { organizations: 4, workspaces: 120, seed: 17 });
    const counts = new Map<string, number>();
    for (const w of read(s0, 'workspaces')) counts.set(w.organization, (counts.get(w.organization) ?? 0) + 1);
    const byCount = [...counts].sort((a, b) => b[1] - a[1]).map(([o]) => o);
    const viaBatches = join(dir, `${name}-via-batches`);
    const viaLoads = join(dir, `${name}-via-loads`);
    await loadSnapshot(s0, { dataDir: viaBatches, memoryLimit: '1GB', label: 'base' });
    await loadSnapshot(s0, { dataDir: viaLoads, memoryLimit: '1GB', label: 'base' });
    const { a, b, tokens } = await twinServers(viaBatches, viaLoads, byCount, name);
    servers.push(a, b);

    let state = s0;
    const current = async () => readManifest(viaBatches, (await readCurrentId(viaBatches))!);
    /** The full load's answers since its last load: a compaction changes only the batches' side. */
    let loaded = new Map<string, { status: number; body: string }>();
    /** Every organization's routes on both servers, the same answers. */
    const compare = async (label: string, loadUnchanged = false) => {
      await Promise.all([a.snapshots.refresh(), b.snapshots.refresh()]);
      if (!loadUnchanged) loaded = new Map();
      for (const org of byCount) {
        for (const path of comparedRoutes(org)) {
          const [p, r] = await Promise.all([comparableAnswer(a, path, tokens.get(org)), loaded.get(path) ?? comparableAnswer(b, path, tokens.get(org))]);
          loaded.set(path, r);
          expect(p.status, `${label}: ${path}`).to.equal(200);
          expect(p, `${label}: ${path}`).to.deep.equal(r);
        }
      }
    };
    const step = async (n: number, org: string) => {
      const batch = join(dir, `${name}-batch-${n}`);
      writeBatch(state, batch, org, n);
      const next = join(dir, `${name}-s${n}`);
      oracle(state, batch, next);
      state = next;
      await applyBatch(batch, { dataDir: viaBatches, memoryLimit: '1GB', label: `batch-${n}` });
      await loadSnapshot(state, { dataDir: viaLoads, memoryLimit: '1GB', label: `loaded-${n}` });
      await compare(`batch ${n} (${org})`);
    };
    const compact = async (label: string, options: WholeLayerOptions = {}) => {
      // Each organization's rows sorted and written as a part of its own (whole-views.ts writeParts).
      const done = await compactLayers(viaBatches, { memoryLimit: '1GB', partRows: 1, ...options });
      expect(done, `${label}: compacted`).to.not.equal(null);
      await compare(`${label}, compacted`, true);
      return { done: done!, manifest: await current() };
    };
    return { large: byCount[0]!, small: byCount.at(-1)!, step, compact, current };
  }

  it('writes what the deltas hold, keeps the larger earlier layer in place, then takes it in, answering as a full load throughout', async () => {
    const { large, small, step, compact, current } = await twins('tiers');
    const kept = (m: Manifest) => (m.overlays ?? []).filter((o) => isWholeFile(o.file));

    // The large organization changed and compacted: the whole layer holds it.
    await step(1, large);
    const first = await compact('first compaction');
    expect(first.manifest.wholeOrganizations).to.deep.equal([large]);

    // Then only the small one: the next compaction writes it alone, and the large organization's layer stays
    // where it is, its current copy, as an overlay would be.
    await step(2, small);
    const second = await compact('second compaction');
    expect(second.manifest.wholeOrganizations, 'the new whole layer holds what the deltas held').to.deep.equal([small]);
    expect(kept(second.manifest), 'the earlier whole layer kept').to.deep.equal([{ file: first.manifest.whole, id: first.manifest.wholeId, organizations: { [large]: first.manifest.organizationKeys![large] } }]);
    expect(second.done.kept).to.equal(1);
    expect(second.manifest.sizes?.[first.manifest.whole!], 'its size recorded').to.be.above(0);

    // A batch over the kept layer reads it as the organization's lowest layer.
    await step(3, large);
    expect((await current()).hidden?.[large]?.lowest).to.equal(first.manifest.whole);

    // The large organization in the deltas again: the kept layer holds nothing of its own any more and goes;
    // the small one's layer, no larger than what is written, is taken in with it.
    const third = await compact('third compaction');
    expect(third.manifest.wholeOrganizations).to.deep.equal([large, small].sort());
    expect(kept(third.manifest)).to.deep.equal([]);
    expect(third.done.kept).to.equal(0);

  });

  it('writes a large organization as a run over its lowest layer while the run replaces little of it, then whole', async () => {
    const { large, small, step, compact, current } = await twins('runs');
    // Any organization of more than one row is large here; a run may replace a tenth of its workspaces.
    const runs: WholeLayerOptions = { runRows: 1, runShare: 0.1 };

    // The large organization changed and compacted: the whole layer holds its two renamed workspaces as a
    // run, and lists the base rows they replace.
    await step(1, large);
    const first = await compact('first compaction', runs);
    expect(first.manifest.wholeRuns).to.deep.equal({ [large]: first.manifest.database });
    expect(first.manifest.wholeOrganizations).to.deep.equal([]);
    expect(first.done.runs).to.equal(1);
    expect(first.manifest.hidden?.[large], 'its figures, listed by the whole layer').to.deep.include({ lowest: first.manifest.database, positionsIn: 'whole' });
    expect(first.manifest.hidden?.[large]?.rows.workspaces).to.equal(2);

    // A batch of another organization carries the run's figures; one of the large organization lists the
    // run's rows with its own in its delta.
    await step(2, small);
    expect((await current()).hidden?.[large]?.positionsIn).to.equal('whole');
    await step(3, large);
    const touched = await current();
    expect(touched.hidden?.[large]).to.deep.include({ lowest: first.manifest.database, positionsIn: 'delta' });
    expect(touched.hidden?.[large]?.rows.workspaces, 'two renamed at the first batch, two at the third').to.equal(4);

    // Compacted again: the run is written again with what the deltas hold of it, the small organization whole.
    const second = await compact('second compaction', runs);
    expect(second.manifest.wholeRuns).to.deep.equal({ [large]: first.manifest.database });
    expect(second.manifest.wholeOrganizations).to.deep.equal([small]);
    expect(second.manifest.hidden?.[large]).to.deep.include({ positionsIn: 'whole' });
    expect(second.manifest.hidden?.[large]?.rows.workspaces).to.equal(4);

    // Past its share, the run goes: the organization is written whole.
    await step(4, large);
    const third = await compact('third compaction', { runRows: 1, runShare: 0 });
    expect(third.manifest.wholeRuns).to.equal(undefined);
    expect(third.manifest.wholeOrganizations).to.deep.equal([large, small].sort());

    // Changed again, it is written as a run over that whole layer, which stays in place as its lowest layer.
    await step(5, large);
    const fourth = await compact('fourth compaction', runs);
    expect(fourth.manifest.wholeRuns).to.deep.equal({ [large]: third.manifest.whole });
    expect(fourth.manifest.overlays?.find((o) => o.file === third.manifest.whole)?.organizations).to.have.keys([large, small].sort());
    expect(fourth.manifest.hidden?.[large]).to.deep.include({ lowest: third.manifest.whole, positionsIn: 'whole' });
    expect(fourth.manifest.hidden?.[large]?.rows.workspaces).to.equal(2);

    // A batch over the run and the layer under it; compacted, the run is written again over the same layer.
    await step(6, large);
    expect((await current()).hidden?.[large]).to.deep.include({ lowest: third.manifest.whole, positionsIn: 'delta' });
    const fifth = await compact('fifth compaction', runs);
    expect(fifth.manifest.wholeRuns).to.deep.equal({ [large]: third.manifest.whole });
    expect(fifth.manifest.hidden?.[large]?.rows.workspaces).to.equal(4);

    // Written whole at last, the layer under the run keeps nothing of it.
    await step(7, small);
    const sixth = await compact('sixth compaction', { runRows: 1, runShare: 0 });
    expect(sixth.manifest.wholeRuns).to.equal(undefined);
    expect(sixth.manifest.wholeOrganizations).to.include(large);
    expect((sixth.manifest.overlays ?? []).some((o) => o.organizations[large] !== undefined)).to.equal(false);
  });
});
