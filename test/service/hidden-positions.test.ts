// The list of hidden positions (delta-layout.ts hiddenTable): each batch writes, into the delta it writes, the
// positions of the rows of every organization it touches that the deltas replace in its lowest layer, and the
// manifest names that delta. Pages in any order but the default one, counts and exports read the lowest layer
// less those positions. The list must follow the files it lies in: kept by a newer delta written over the
// current one (a copy of its file) and by an older delta that stays, lost when a fold writes both deltas anew
// without the organizations it did not touch. A list named where it no longer lies would leave replaced rows
// standing, so each step compares the organization's pages with a full load of the same source.
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSample } from '../../src/sample/sample.js';
import { type RunningServer } from '../../src/server.js';
import { openSnapshot } from '../../src/snapshots/read/current-snapshot.js';
import { readCurrentId, readManifest } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { applyBatch as oracle } from '../helpers/batch-oracle.js';
import { comparableAnswer } from '../helpers/compare-routes.js';
import { clientQuery } from '../helpers/harness.js';
import { readRows as read, type Row, writeRows as write } from '../helpers/ndjson.js';
import { twinServers } from '../helpers/twin-servers.js';

const ROW_FILES = ['workspace_providers', 'workspace_modules', 'workspace_resources'];

/** A batch over `source` that replaces three of `org`'s workspaces (one with a row fewer) and deletes a fourth. */
function writeBatch(source: string, out: string, org: string, round: number): void {
  const workspaces = read(source, 'workspaces').filter((w) => w.organization === org).sort((a, b) => (a.id < b.id ? -1 : 1));
  const pick = (i: number) => workspaces[(round * 5 + i) % workspaces.length]!;
  const [renamed, cut, same, deleted] = [pick(0), pick(1), pick(2), pick(3)] as [Row, Row, Row, Row];
  const rowsOf = (file: string, id: string) => read(source, file).filter((r) => r.workspace_id === id);
  mkdirSync(out, { recursive: true });
  write(out, 'workspaces', [{ ...renamed, name: `renamed-${round}-${renamed.name}` }, cut, same]);
  for (const file of ROW_FILES) write(out, file, [...rowsOf(file, renamed.id), ...rowsOf(file, cut.id).slice(1), ...rowsOf(file, same.id)]);
  write(out, 'deletions', [{ kind: 'workspace', id: deleted.id }]);
}

describe('the list of hidden positions a delta holds', function () {
  this.timeout(300_000);
  let dir: string;
  const servers: RunningServer[] = [];
  before(() => { dir = mkdtempSync(join(tmpdir(), 'explorer-hidden-positions-')); });
  after(async () => {
    await Promise.all(servers.map((s) => s.shutdown()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('follows the delta it lies in through newer deltas and folds, and pages in every order answer as a full load', async () => {
    const s0 = join(dir, 's0');
    await writeSample(s0, { organizations: 3, workspaces: 60, seed: 9 });
    const counts = new Map<string, number>();
    for (const w of read(s0, 'workspaces')) counts.set(w.organization, (counts.get(w.organization) ?? 0) + 1);
    const [x, y] = [...counts].sort((a, b) => b[1] - a[1]).map(([o]) => o) as [string, string];
    const viaBatches = join(dir, 'via-batches');
    const viaLoads = join(dir, 'via-loads');
    await loadSnapshot(s0, { dataDir: viaBatches, memoryLimit: '1GB', label: 'base' });
    await loadSnapshot(s0, { dataDir: viaLoads, memoryLimit: '1GB', label: 'base' });
    const { a, b, tokens } = await twinServers(viaBatches, viaLoads, [x], 'hidden positions');
    servers.push(a, b);

    // Each step: the organization it touches, whether it folds, and where x's list lies after it.
    const steps: { touch: string; fold: boolean; xList: 'major' | 'delta' | undefined }[] = [
      { touch: x, fold: true, xList: 'major' }, // a batch that folds itself writes x's list into the older delta
      { touch: y, fold: false, xList: 'major' }, // a new newer delta: the older delta, and x's list in it, stay
      { touch: y, fold: true, xList: undefined }, // a fold writes the older delta anew, with y's list alone
      { touch: x, fold: false, xList: 'delta' }, // the newer delta this batch writes holds x's list
      { touch: y, fold: false, xList: 'delta' }, // written over a copy of the newer delta: x's list stays in it
    ];
    let state = s0;
    let compared = 0;
    for (const [i, step] of steps.entries()) {
      const batch = join(dir, `batch-${i + 1}`);
      writeBatch(state, batch, step.touch, i + 1);
      const next = join(dir, `s${i + 1}`);
      oracle(state, batch, next);
      state = next;
      await applyBatch(batch, { dataDir: viaBatches, memoryLimit: '1GB', label: `batch-${i + 1}`, foldWorkspaces: step.fold ? 1 : 1_000_000, foldBatchWorkspaces: step.fold ? 1 : 1_000_000, liftRows: 0 });
      await loadSnapshot(state, { dataDir: viaLoads, memoryLimit: '1GB', label: `loaded-${i + 1}` });
      await Promise.all([a.snapshots.refresh(), b.snapshots.refresh()]);

      const manifest = await readManifest(viaBatches, (await readCurrentId(viaBatches))!);
      const held = [...manifest.deltaOrganizations ?? [], ...manifest.majorOrganizations ?? []];
      expect(held, `step ${i + 1}: the deltas hold x`).to.include(x);
      expect(manifest.hidden?.[x]?.positionsIn, `step ${i + 1}: where x's list lies`).to.equal(step.xList);
      const target = (await openSnapshot(viaBatches, manifest.id)).target('resources', x);
      expect(target.relation.includes('hidden_resources'), `step ${i + 1}: x's resources read by their list`).to.equal(step.xList !== undefined);
      compared += await comparePages(`step ${i + 1}`);
    }
    expect(compared).to.equal(steps.length * 12);

    /** x's pages in orders other than the default, with their counts, and its exports, on both servers. */
    async function comparePages(label: string): Promise<number> {
      const base = `/api/v2/organizations/${encodeURIComponent(x)}/explorer`;
      const queries: Record<string, string>[] = [
        { type: 'workspaces', sort: '-workspace_name', 'page[size]': '7' },
        { type: 'workspaces', sort: 'workspace_updated_at', 'page[size]': '5', 'page[number]': '3' },
        { type: 'workspaces', sort: '-workspace_name', 'filter[0][workspace_name][contains][0]': 'a' },
        { type: 'resources', sort: '-provider_type', 'page[size]': '11' },
        { type: 'resources', sort: 'workspace_name', 'page[size]': '9', 'page[number]': '4' },
        { type: 'resources', sort: '-workspace_name', 'filter[0][workspace_name][contains][0]': 'e' },
      ];
      let n = 0;
      for (const q of queries) {
        for (const path of [`${base}${clientQuery(q)}`, `${base}/export/csv${clientQuery({ type: q.type, sort: q.sort })}`]) {
          const [p, r] = await Promise.all([comparableAnswer(a, path, tokens.get(x)), comparableAnswer(b, path, tokens.get(x))]);
          expect(p.status, `${label}: ${path}`).to.equal(200);
          expect(p, `${label}: ${path}`).to.deep.equal(r);
          n++;
        }
      }
      return n;
    }
  });
});
