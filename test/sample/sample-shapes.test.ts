// Sample history at every shape: from one organization and one workspace upwards, with any seed and any
// number of days, `sample --days N` writes all N days, each a valid source whose counts add up. Small
// estates are the edge: there a day's share of changes is below one workspace for some kinds of change.
import { expect } from 'chai';
import fc from 'fast-check';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { validateSource } from '../../src/snapshots/write/source-validator.js';
import { SAMPLE_FILES } from '../../src/sample/sample.js';
import { dayName, writeSampleSeries, type DaySummary } from '../../src/sample/sample-series.js';
import { cli } from '../helpers/cli.js';

interface Shape { organizations: number; workspaces: number; seed: number; days: number }

const lineCount = async (path: string) => (await readFile(path, 'utf8')).split('\n').filter((l) => l !== '').length;

/** Problems with the series written to `dir` for `shape` (empty when all is well). */
async function seriesProblems(dir: string, shape: Shape, summaries: DaySummary[]): Promise<string[]> {
  const problems: string[] = [];
  const expected = Array.from({ length: shape.days }, (_, i) => dayName(i + 1, shape.days));
  const names = (await readdir(dir)).sort();
  if (JSON.stringify(names) !== JSON.stringify(expected)) problems.push(`directories ${names.join(',')}, expected ${expected.join(',')}`);
  if (summaries.length !== shape.days) problems.push(`${summaries.length} day summaries for ${shape.days} days`);
  const organizations = Math.min(shape.organizations, shape.workspaces);
  let prev: DaySummary | undefined;
  for (const s of summaries) {
    const v = await validateSource(s.dir);
    if (v.errorCount > 0) problems.push(`${s.name}: ${v.errors.slice(0, 3).join('; ')}`);
    for (const f of SAMPLE_FILES) {
      // The summary, the validator and the file itself agree on each file's records.
      const lines = await lineCount(join(s.dir, `${f}.ndjson`));
      if (s.counts[f] !== lines || v.counts[f] !== lines) problems.push(`${s.name} ${f}: summary ${s.counts[f]}, validator ${v.counts[f]}, ${lines} lines`);
    }
    if (v.counts.organizations !== organizations) problems.push(`${s.name}: ${v.counts.organizations} organizations, expected ${organizations}`);
    if (!prev) {
      if (s.changes !== null) problems.push('day 1 reports changes');
      if (s.counts.workspaces !== shape.workspaces) problems.push(`day 1: ${s.counts.workspaces} workspaces, expected ${shape.workspaces}`);
    } else {
      const c = s.changes;
      if (c === null) { problems.push(`${s.name}: no changes reported`); continue; }
      // Each later day is the day before, plus the workspaces created, minus the ones deleted.
      const want = prev.counts.workspaces + c.created - c.deleted;
      if (s.counts.workspaces !== want) problems.push(`${s.name}: ${s.counts.workspaces} workspaces, expected ${prev.counts.workspaces} + ${c.created} − ${c.deleted}`);
      if (c.deleted > prev.counts.workspaces) problems.push(`${s.name}: ${c.deleted} deleted of ${prev.counts.workspaces}`);
      for (const f of ['organizations', 'projects', 'teams', 'team_members'] as const) {
        if (s.counts[f] !== prev.counts[f]) problems.push(`${s.name} ${f}: ${s.counts[f]}, the day before ${prev.counts[f]}`);
      }
      // About 2 % change a day: never more than the day before held, plus what was created.
      if (c.workspaces > prev.counts.workspaces + c.created) problems.push(`${s.name}: ${c.workspaces} changed of ${prev.counts.workspaces}`);
    }
    prev = s;
  }
  return problems;
}

describe('sample history at every shape (sample --days)', function () {
  this.timeout(60_000);
  let root: string;
  let runs = 0;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'sample-shapes-test-'));
  });

  after(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  async function check(shape: Shape): Promise<string[]> {
    const dir = join(root, `series-${runs++}`);
    try {
      const summaries = await writeSampleSeries(dir, shape);
      return await seriesProblems(dir, shape, summaries);
    } catch (e) {
      return [`throws ${(e as Error).message}`];
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  it('writes every day of the reported shapes: 3 organizations, 300 workspaces, seeds 5 and 6, 3 days', async () => {
    for (const seed of [5, 6]) {
      const shape = { organizations: 3, workspaces: 300, seed, days: 3 };
      expect(await check(shape), JSON.stringify(shape)).to.deep.equal([]);
    }
  });

  it('writes every day of the smallest shapes', async () => {
    for (const [organizations, workspaces] of [[1, 1], [1, 2], [2, 1], [2, 2], [3, 5], [12, 12]] as const) {
      const shape = { organizations, workspaces, seed: 1, days: 4 };
      expect(await check(shape), JSON.stringify(shape)).to.deep.equal([]);
    }
  });

  it('writes every day, each a valid source with counts that add up, for any shape, seed and number of days', async () => {
    const shape = fc.record({
      organizations: fc.integer({ min: 1, max: 12 }),
      // Mostly small estates, where a day's share of some kinds of change is below one workspace.
      workspaces: fc.oneof(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 400 })),
      seed: fc.oneof(fc.nat(1000), fc.maxSafeNat()),
      days: fc.integer({ min: 1, max: 4 }),
    });
    await fc.assert(
      fc.asyncProperty(shape, async (s) => {
        const problems = await check(s);
        if (problems.length > 0) throw new Error(problems.join('\n'));
      }),
      { numRuns: 60 },
    );
  });

  it('writes the reported shape from the command line and refuses shapes that cannot be made with exit code 2', async () => {
    for (const seed of ['5', '6']) {
      const dir = join(root, `cli-${seed}`);
      const wrote = await cli(['sample', dir, '--days', '3', '--organizations', '3', '--workspaces', '300', '--seed', seed], root);
      expect(wrote.code, wrote.stderr).to.equal(0);
      expect(wrote.stdout.trim().split('\n')).to.have.length(3);
      expect((await readdir(dir)).sort()).to.deep.equal(['day-01', 'day-02', 'day-03']);
      for (const day of ['day-01', 'day-02', 'day-03']) expect((await validateSource(join(dir, day))).errors, day).to.deep.equal([]);
    }
    for (const [option, value] of [['--workspaces', '0'], ['--organizations', '0']] as const) {
      const refused = await cli(['sample', join(root, 'refused'), option, value, '--days', '2'], root);
      expect(refused.code, `${option} ${value}`).to.equal(2);
      expect(refused.stderr).to.contain(`${option} must be at least 1`);
    }
    expect(await readdir(root)).to.not.include('refused');
  });
});
