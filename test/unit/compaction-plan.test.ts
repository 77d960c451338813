// What a compaction writes, without a database (whole-layer.ts planCompaction): the organizations the deltas
// hold always, an earlier compaction's layer only while it is no larger than what is written besides it, so
// that a compaction costs what changed since the last one rather than everything ever compacted.
import { expect } from 'chai';
import type { Manifest, OverlayEntry } from '../../src/snapshots/snapshot-dir.js';
import { overlaysToMerge } from '../../src/snapshots/write/apply.js';
import { planCompaction } from '../../src/snapshots/write/whole-layer.js';
import { writeParts } from '../../src/snapshots/write/whole-views.js';

/** A snapshot whose organizations have these workspace rows (and no resources), keys numbered in order. */
function snapshot(rows: Record<string, number>, layout: Partial<Manifest>): Manifest {
  return {
    id: 's9', createdAt: '2026-11-30T00:00:00.000Z', source: 'x', counts: {}, files: {}, rows: {},
    organizationRows: { workspaces: rows, resources: {} },
    organizationKeys: Object.fromEntries(Object.keys(rows).map((o, i) => [o, i + 1])),
    ...layout,
  };
}

const kept = (file: string, organizations: Record<string, number>): OverlayEntry => ({ file, id: 's1', organizations });

describe('compaction: what it writes', () => {
  it('writes what the deltas hold, and the whole layer\'s organizations with it while they are no larger', () => {
    const m = snapshot({ a: 100, b: 50, c: 30 }, { delta: 'delta.duckdb', deltaOrganizations: ['a'], whole: 'whole-3.duckdb', wholeId: 's3', wholeOrganizations: ['b', 'c'] });
    const plan = planCompaction(m);
    expect(plan.held).to.deep.equal(['a', 'b', 'c']);
    expect(plan.rewritten).to.deep.equal(['whole-3.duckdb']);
    expect(plan.demoted).to.equal(null);
  });

  it('writes again the runs the whole layer holds over the base, and never leaves them in place with it', () => {
    const m = snapshot({ a: 100, b: 5_000, c: 300, d: 9_000 }, {
      database: 'snapshot.duckdb', delta: 'delta.duckdb', deltaOrganizations: ['a'],
      whole: 'whole-3.duckdb', wholeId: 's3', wholeOrganizations: ['b'], wholeRuns: { c: 'snapshot.duckdb', d: 'snapshot.duckdb' },
      overlays: [{ file: 'overlay-5.duckdb', id: 's5', organizations: { d: 4 } }],
    });
    const plan = planCompaction(m, { runRows: 1 });
    // c's run stands: written again though no delta holds it; d's ended when a batch wrote d whole into its
    // overlay; b (5,000 rows) stays.
    expect(plan.held).to.deep.equal(['a', 'c']);
    expect(plan.demoted).to.deep.equal({ file: 'whole-3.duckdb', id: 's3', organizations: { b: 2 } });
    // With no figures of what the deltas replace of it, c is written whole.
    expect(plan.runs).to.deep.equal({});
    const figures = { c: { lowest: 'snapshot.duckdb', rows: { workspaces: 3 }, ranges: null } };
    expect(planCompaction({ ...m, hidden: figures }, { runRows: 1, runShare: 0.1 }).runs).to.deep.equal({ c: 'snapshot.duckdb' });
    expect(planCompaction({ ...m, hidden: figures }, { runRows: 1, runShare: 0.001 }).runs).to.deep.equal({});
  });

  it('writes a run over a compaction\'s layer, which then stays in place with the organization as its current copy', () => {
    const m = snapshot({ a: 100, big: 900_000, b: 50 }, {
      database: 'snapshot.duckdb', delta: 'delta.duckdb', deltaOrganizations: ['a', 'big', 'b'],
      whole: 'whole-3.duckdb', wholeId: 's3', wholeOrganizations: ['big', 'b'],
      hidden: { big: { lowest: 'whole-3.duckdb', rows: { workspaces: 700, resources: 2_100 }, ranges: null } },
    });
    const plan = planCompaction(m);
    expect(plan.runs).to.deep.equal({ big: 'whole-3.duckdb' });
    expect(plan.held).to.deep.equal(['a', 'b', 'big']);
    expect(plan.demoted).to.deep.equal({ file: 'whole-3.duckdb', id: 's3', organizations: { big: 2 } });
    // Past four kept layers the smallest are taken in: with a run over one, it is written whole with it.
    const taken = planCompaction(m, { keptLayers: 0 });
    expect(taken.runs).to.deep.equal({});
    expect(taken.rewritten).to.deep.equal(['whole-3.duckdb']);
  });

  it('counts of a large organization read from the base what its run would hold, not its every row', () => {
    const m = snapshot({ a: 100, big: 900_000, b: 5_000 }, {
      database: 'snapshot.duckdb', delta: 'delta.duckdb', deltaOrganizations: ['a', 'big'], whole: 'whole-3.duckdb', wholeId: 's3', wholeOrganizations: ['b'],
      hidden: { big: { lowest: 'snapshot.duckdb', rows: { workspaces: 700, resources: 2_100 }, ranges: null } },
    });
    // 100 + 2,800 written: b's 5,000 rows stay where they lie; counted whole, big would take b in.
    expect(planCompaction(m).held).to.deep.equal(['a', 'big']);
    expect(planCompaction(m).runs).to.deep.equal({ big: 'snapshot.duckdb' });
    expect(planCompaction(m, { runRows: Infinity }).held).to.deep.equal(['a', 'b', 'big']);
  });

  it('leaves a larger whole layer where it lies, the current copy of its organizations no delta holds', () => {
    const m = snapshot({ a: 100, b: 500, c: 300, d: 20 }, {
      major: 'major.duckdb', majorOrganizations: ['a'], delta: 'delta.duckdb', deltaOrganizations: ['c'],
      whole: 'whole-3.duckdb', wholeId: 's3', wholeOrganizations: ['b', 'c', 'd'], overlays: [{ file: 'overlay-5.duckdb', id: 's5', organizations: { d: 4 } }],
    });
    const plan = planCompaction(m);
    // c is the deltas' (written); d an overlay's (not the whole layer's to give); b, 500 rows, outweighs a and c's 400.
    expect(plan.held).to.deep.equal(['a', 'c']);
    expect(plan.rewritten).to.deep.equal([]);
    expect(plan.demoted).to.deep.equal({ file: 'whole-3.duckdb', id: 's3', organizations: { b: 2 } });
  });

  it('takes in the layers earlier compactions left, smallest first, while each is no larger than what is written by then', () => {
    const m = snapshot({ a: 100, b: 90, c: 200, d: 1000 }, {
      delta: 'delta.duckdb', deltaOrganizations: ['a'], whole: 'whole-9.duckdb', wholeId: 's9', wholeOrganizations: ['c'],
      overlays: [kept('whole-1.duckdb', { d: 4 }), kept('whole-5.duckdb', { b: 2 })],
    });
    const plan = planCompaction(m);
    // b (90 ≤ 100), then the whole layer's c (200 ≤ 190? no): c stays, and d, larger still.
    expect(plan.rewritten).to.deep.equal(['whole-5.duckdb']);
    expect(plan.held).to.deep.equal(['a', 'b']);
    expect(plan.fromOverlays).to.deep.equal({ b: 2 });
    expect(plan.demoted).to.deep.equal({ file: 'whole-9.duckdb', id: 's9', organizations: { c: 3 } });
  });

  it('keeps at most so many earlier layers, taking in the smallest past that whatever their size', () => {
    const m = snapshot({ a: 1, b: 10, c: 20, d: 30 }, {
      delta: 'delta.duckdb', deltaOrganizations: ['a'], overlays: [kept('whole-1.duckdb', { b: 2 }), kept('whole-2.duckdb', { c: 3 }), kept('whole-3.duckdb', { d: 4 })],
    });
    expect(planCompaction(m, { keptLayers: 2 }).rewritten).to.deep.equal(['whole-1.duckdb']);
    expect(planCompaction(m, { keptLayers: 3 }).rewritten).to.deep.equal([]);
  });

  it('with a tier of 0 leaves every earlier layer in place, with Infinity takes every one in', () => {
    const m = snapshot({ a: 100, b: 5 }, { delta: 'delta.duckdb', deltaOrganizations: ['a'], whole: 'whole-3.duckdb', wholeId: 's3', wholeOrganizations: ['b'] });
    expect(planCompaction(m, { tier: 0 }).demoted?.organizations).to.deep.equal({ b: 2 });
    const big = snapshot({ a: 1, b: 5000 }, { delta: 'delta.duckdb', deltaOrganizations: ['a'], whole: 'whole-3.duckdb', wholeId: 's3', wholeOrganizations: ['b'] });
    expect(planCompaction(big, { tier: Infinity }).held).to.deep.equal(['a', 'b']);
  });

  it('rewrites a whole layer whose every organization the deltas hold, leaving no empty layer behind', () => {
    const m = snapshot({ a: 10, b: 5000 }, { delta: 'delta.duckdb', deltaOrganizations: ['a', 'b'], whole: 'whole-3.duckdb', wholeId: 's3', wholeOrganizations: ['b'] });
    const plan = planCompaction(m);
    expect(plan.demoted).to.equal(null);
    expect(plan.rewritten).to.deep.equal(['whole-3.duckdb']);
  });

  it('is never merged by a batch\'s overlay: a batch takes in only the overlays batches and tidying wrote', () => {
    const m = snapshot({ a: 1, b: 2, c: 3, d: 4 }, {
      overlays: [kept('whole-1.duckdb', { a: 1 }), kept('overlay-2.duckdb', { b: 2 }), kept('whole-3.duckdb', { c: 3 }), kept('overlay-4-tidy.duckdb', { d: 4 })],
    });
    expect(overlaysToMerge(m, 4).map((o) => o.file)).to.deep.equal(['overlay-2.duckdb', 'overlay-4-tidy.duckdb']);
  });
});

describe('compaction: the parts its views are sorted in', () => {
  it('groups organizations of consecutive keys up to the bound, a larger one alone, in key order', () => {
    const rows: Record<string, number> = { a: 300, b: 500, big: 5000, c: 100, d: 700 };
    const keys = { d: 9, a: 1, big: 4, b: 2, c: 7 };
    expect(writeParts(keys, (o) => rows[o]!, 1000)).to.deep.equal([
      't."_org_key" BETWEEN 1 AND 2', 't."_org_key" BETWEEN 4 AND 4', 't."_org_key" BETWEEN 7 AND 9',
    ]);
  });

  it('is one part while everything fits, and none for no organization', () => {
    expect(writeParts({ a: 1, b: 2 }, () => 10, 1000)).to.deep.equal(['t."_org_key" BETWEEN 1 AND 2']);
    expect(writeParts({}, () => 10, 1000)).to.deep.equal([]);
  });
});
