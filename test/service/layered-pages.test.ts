// Pages in the default order of an organization whose rows lie in layers (compile.ts StoredMerge): the page reads
// the first rows of the layer that stores them in that order, as many as it reaches plus those the layers over
// it replace, and sorts them with the rows of those layers. Batches here replace and delete the workspaces that
// come first in that order, move one to the end and add one before all others, in a newer delta over an older
// one: every page of every size, plain and filtered, must answer what a full load of the same source answers.
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { catalogFor, workspaceColumn } from '../../src/catalog/catalog.js';
import { writeSample } from '../../src/sample/sample.js';
import { type RunningServer } from '../../src/server.js';
import { openSnapshot } from '../../src/snapshots/read/current-snapshot.js';
import { listSnapshotIds, readCurrentId, readManifest, snapshotPath, type Manifest } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { applyBatch as oracle } from '../helpers/batch-oracle.js';
import { clientQuery } from '../helpers/harness.js';
import { readRows as read, type Row, writeRows as write } from '../helpers/ndjson.js';
import { twinServers } from '../helpers/twin-servers.js';

const ROW_FILES = ['workspace_providers', 'workspace_modules', 'workspace_resources'];

/**
 * A batch over `source` for `org`: its first workspaces by name replaced (one renamed to come last, one with
 * its rows cut by one), one deleted, and a new one named to come first, with another workspace's rows.
 */
function writeBatch(source: string, out: string, org: string, round: number): void {
  const workspaces = read(source, 'workspaces').filter((w) => w.organization === org)
    .sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : a.name.toLowerCase() > b.name.toLowerCase() ? 1 : 0));
  const [moved, cut, deleted, template] = workspaces as [Row, Row, Row, Row];
  const rowsOf = (file: string, id: string) => read(source, file).filter((r) => r.workspace_id === id);
  const added = { ...template, id: `ws-first${round}`, name: `0-first-${round}` };
  mkdirSync(out, { recursive: true });
  write(out, 'workspaces', [{ ...moved, name: `zzzz-moved-${round}` }, cut, added]);
  for (const file of ROW_FILES) {
    write(out, file, [...rowsOf(file, moved.id), ...rowsOf(file, cut.id).slice(1), ...rowsOf(file, template.id).map((r) => ({ ...r, workspace_id: added.id }))]);
  }
  write(out, 'deletions', [{ kind: 'workspace', id: deleted.id }]);
}

describe('pages in the default order of an organization read through layers', function () {
  this.timeout(300_000);
  let dir: string;
  const servers: RunningServer[] = [];
  after(async () => {
    await Promise.all(servers.map((s) => s.shutdown()));
    rmSync(dir, { recursive: true, force: true });
  });

  before(() => { dir = mkdtempSync(join(tmpdir(), 'explorer-layered-pages-')); });

  // Both stacks a touched organization reads after a fold: the older delta and the newer one over it (an
  // organization larger than the bound the newer delta takes one over by), or the newer one alone, which took
  // the organization over whole when the third batch touched it again (delta-layout.ts LIFT_ROWS).
  for (const lifted of [false, true]) {
  it(`answer every page, plain and filtered, as a full load of the same source does (${lifted ? 'the newer delta holds the organization whole' : 'both deltas hold the organization'})`, async () => {
    const root = join(dir, lifted ? 'lifted' : 'both');
    const s0 = join(root, 's0');
    await writeSample(s0, { organizations: 2, workspaces: 40, seed: 5 });
    const counts = new Map<string, number>();
    for (const w of read(s0, 'workspaces')) counts.set(w.organization, (counts.get(w.organization) ?? 0) + 1);
    const org = [...counts].sort((a, b) => b[1] - a[1])[0]![0];
    const viaBatches = join(root, 'via-batches');
    const viaLoads = join(root, 'via-loads');
    await loadSnapshot(s0, { dataDir: viaBatches, memoryLimit: '1GB', label: 'base' });
    // Three batches: the second folds the first into an older delta, the third stays the newer one over it.
    let state = s0;
    for (const round of [1, 2, 3]) {
      const batch = join(root, `batch-${round}`);
      writeBatch(state, batch, org, round);
      const next = join(root, `s${round}`);
      oracle(state, batch, next);
      state = next;
      await applyBatch(batch, { dataDir: viaBatches, memoryLimit: '1GB', label: `batch-${round}`, foldWorkspaces: round === 2 ? 1 : 1_000, liftRows: lifted ? 1_000_000 : 0 });
    }
    await loadSnapshot(state, { dataDir: viaLoads, memoryLimit: '1GB', label: 'loaded' });
    const manifest = await readManifest(viaBatches, (await readCurrentId(viaBatches))!);
    expect(manifest.major, 'an older delta').to.be.a('string');
    expect(manifest.majorOrganizations?.includes(org), 'the older delta holds the organization').to.equal(!lifted);
    expect(manifest.deltaOrganizations, 'the newer delta holds the organization').to.include(org);

    const views = catalogFor().views.filter((v) => workspaceColumn(v.name));
    const { a, b, tokens } = await twinServers(viaBatches, viaLoads, [org], 'layered pages');
    servers.push(a, b);
    const ids = [...await listSnapshotIds(viaBatches), ...await listSnapshotIds(viaLoads)];
    const get = async (server: RunningServer, path: string) => {
      const res = await fetch(`${server.url}${path}`, { headers: { Authorization: `Bearer ${tokens.get(org)}` } });
      let body = (await res.text()).split(server.url).join('<server>');
      for (const id of ids) body = body.split(id).join('<snapshot>');
      return { status: res.status, body };
    };
    const base = `/api/v2/organizations/${encodeURIComponent(org)}/explorer`;
    // Three ways the page finds the replaced rows of the lowest layer: the runs of their positions the batch
    // recorded, their number alone (more runs than a page writes out), or counted by the page (a manifest
    // that records neither, as after a compaction moved the organization's lowest rows).
    const manifestPath = join(snapshotPath(viaBatches, manifest.id), 'manifest.json');
    const written = manifest.hidden?.[org];
    expect(written?.ranges?.workspaces, 'the runs of replaced positions').to.have.length.above(0);
    const forms: [string, Manifest['hidden']][] = [
      ['runs of positions', manifest.hidden],
      ['their number', { [org]: { ...written!, ranges: null } }],
      ['counted', undefined],
    ];
    let pages = 0;
    for (const [form, hidden] of forms) {
      writeFileSync(manifestPath, JSON.stringify({ ...manifest, hidden }, null, 2));
      await a.snapshots.refresh();
      const snapshot = await openSnapshot(viaBatches, manifest.id);
      for (const view of views) {
        const target = snapshot.target(view.name, org);
        const merge = target.storedMerge;
        expect(merge, `${form}: ${view.name} read by the merge`).to.not.equal(undefined);
        expect(target.relation.includes('major'), `${form}: ${view.name} reads the older delta`).to.equal(!lifted);
        expect([merge!.hiddenRanges !== undefined, merge!.hiddenRows !== undefined], `${form}: ${view.name}`)
          .to.deep.equal(form === 'runs of positions' ? [true, true] : form === 'their number' ? [false, true] : [false, false]);
      }
      pages += await comparePages(form);
    }
    expect(pages).to.be.above(240);
    // A record found in another lowest layer than the organization's now (a compaction or an overlay moved its
    // rows) is another layer's positions: the page counts the replaced rows itself.
    writeFileSync(manifestPath, JSON.stringify({ ...manifest, hidden: { [org]: { ...written!, lowest: 'whole-1.duckdb' } } }, null, 2));
    const moved = await openSnapshot(viaBatches, manifest.id);
    for (const view of views) {
      const merge = moved.target(view.name, org).storedMerge!;
      expect([merge.hiddenRows, merge.hiddenRanges], `another lowest layer: ${view.name}`).to.deep.equal([undefined, undefined]);
    }

    async function comparePages(form: string): Promise<number> {
    let pages = 0;
    for (const view of views) {
      const total = manifest.organizationRows![view.name]![org]!;
      const filtered = { [`filter[0][${view.identifying[0]}][contains][0]`]: 'a' };
      for (const size of [1, 2, 3, 7]) {
        for (const filter of [{}, filtered]) {
          // The pages the replaced, deleted and added rows fall on: the first ones and the last ones.
          const last = Math.floor(total / size) + 1;
          for (const number of new Set([...Array.from({ length: Math.min(last, 12) }, (_, i) => i + 1), last - 1, last].filter((n) => n >= 1))) {
            const path = `${base}${clientQuery({ type: view.name, ...filter, 'page[size]': String(size), 'page[number]': String(number) })}`;
            const [x, y] = await Promise.all([get(a, path), get(b, path)]);
            expect(x.status, `${form}: ${path}`).to.equal(200);
            expect(x, `${form}: ${path}`).to.deep.equal(y);
            pages++;
          }
        }
      }
    }
    return pages;
    }
  });
  }
});
