// Sample change batches (src/sample/sample-changes.ts): each batch keeps the batch format's own rules, and
// the sources the batches make in name order (the suite's oracle, helpers/batch-oracle.ts) are valid
// sources; over enough batches every kind of change happens; the same seed gives the same bytes.
import { expect } from 'chai';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSample } from '../../src/sample/sample.js';
import { writeSampleChanges, type ChangeKind } from '../../src/sample/sample-changes.js';
import { validateSource } from '../../src/snapshots/write/source-validator.js';
import { applyBatch } from '../helpers/batch-oracle.js';
import { cli } from '../helpers/cli.js';

const lines = (path: string) => readFileSync(path, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));

describe('sample change batches', function () {
  this.timeout(120_000);
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-changes-'));
    await writeSample(join(dir, 'source'), { organizations: 4, workspaces: 400, seed: 5 });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('writes batches whose sources, applied in order, are all valid, with every kind of change', async () => {
    const out = join(dir, 'batches');
    const batches = await writeSampleChanges(join(dir, 'source'), out, { batches: 30, workspaces: 12, seed: 7 });
    expect(batches.map((b) => b.name)).to.deep.equal(Array.from({ length: 30 }, (_, i) => `batch-${String(i + 1).padStart(4, '0')}`));
    expect(readdirSync(out).sort(), 'nothing but the batches').to.deep.equal(batches.map((b) => b.name));
    const seen = new Map<ChangeKind, number>();
    let previous = join(dir, 'source');
    let workspaces = lines(join(previous, 'workspaces.ndjson')).length;
    for (const batch of batches) {
      const next = join(dir, `after-${batch.name}`);
      applyBatch(previous, batch.dir, next);
      const validation = await validateSource(next);
      expect(validation.errors, `${batch.name}: ${validation.errors.slice(0, 3).join('; ')}`).to.deep.equal([]);
      const now = lines(join(next, 'workspaces.ndjson')).length;
      expect(now, `${batch.name}: workspaces counted`).to.equal(workspaces + batch.changes.created - batch.changes.deleted);
      workspaces = now;
      const touched = (batch.changes.created + batch.changes.deleted + batch.changes.run + batch.changes.renamed + batch.changes.moved);
      expect(touched, `${batch.name}: touches its workspaces`).to.be.at.least(12);
      for (const [kind, n] of Object.entries(batch.changes)) seen.set(kind as ChangeKind, (seen.get(kind as ChangeKind) ?? 0) + n);
      previous = next;
    }
    for (const kind of ['run', 'engine', 'provider', 'module', 'resources', 'drift', 'renamed', 'moved', 'created', 'deleted', 'teams', 'organizations'] as ChangeKind[]) {
      expect(seen.get(kind), `${kind} over 30 batches`).to.be.greaterThan(0);
    }
  });

  it('gives the same batches for the same seed, other batches for another', async () => {
    const write = async (name: string, seed: number) => {
      const out = join(dir, name);
      await writeSampleChanges(join(dir, 'source'), out, { batches: 3, workspaces: 20, seed });
      return readdirSync(out).sort().map((b) => readdirSync(join(out, b)).sort().map((f) => readFileSync(join(out, b, f), 'utf8')).join('\0'));
    };
    const a = await write('same-a', 11);
    expect(await write('same-b', 11)).to.deep.equal(a);
    expect(await write('other', 12)).to.not.deep.equal(a);
  });

  it('touches every workspace of a source smaller than a batch once, and still writes every batch', async () => {
    const small = join(dir, 'tiny');
    await writeSample(small, { organizations: 1, workspaces: 1, seed: 1 });
    const out = join(dir, 'tiny-batches');
    const batches = await writeSampleChanges(small, out, { batches: 4, workspaces: 10, seed: 1 });
    expect(batches).to.have.length(4);
    let previous = small;
    for (const batch of batches) {
      const next = join(dir, `tiny-${batch.name}`);
      applyBatch(previous, batch.dir, next);
      expect((await validateSource(next)).errors).to.deep.equal([]);
      previous = next;
    }
  });

  it('is a command: batches written and named, a bad option refused with exit 2', async () => {
    const out = join(dir, 'by-command');
    const ran = await cli(['sample-changes', join(dir, 'source'), out, '--batches', '2', '--workspaces', '5', '--seed', '3'], dir);
    expect(ran.code, ran.stderr).to.equal(0);
    expect(readdirSync(out).sort()).to.deep.equal(['batch-0001', 'batch-0002']);
    expect(ran.stdout).to.contain('2 batches in');
    const bad = await cli(['sample-changes', join(dir, 'source'), out, '--batches', '0'], dir);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.contain('--batches must be at least 1');
  });
});
