// A notification configuration checked between two real snapshots, the second made with `apply`: a workspace
// that starts drifting enters a view of drifted workspaces (added), one that stops leaves it (removed), a
// new drifted one is added, a drifted one whose values change is changed; a sum crossing its line fires the
// threshold once, and crossing back the other way does not fire an `above` again.
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openInstance } from '../../src/duckdb/open-instance.js';
import { attachSnapshots, beyond, checkPair } from '../../src/notifications/check-pair.js';
import { openSnapshot } from '../../src/snapshots/read/current-snapshot.js';
import { readCurrentId } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import type { NotificationConfiguration, SavedView } from '../../src/store/state-store.js';
import { ORG, OTHER_ORG, workspaces, writeSmallSource } from '../fixtures/small-source.js';

const ndjson = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

describe('notification triggers between two snapshots', function () {
  this.timeout(60_000);
  let dir: string;
  const ids: string[] = [];
  const drifted = (organization: string): SavedView => ({
    id: 'sq-0000000000000001', organization, name: 'drifted', queryType: 'workspaces', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z',
    query: { type: 'workspaces', filter: [{ field: 'drifted', operator: 'is', value: ['true'] }], sort: ['workspace_name'] },
  });
  const configuration = (extra: Partial<NotificationConfiguration>): NotificationConfiguration => ({
    id: 'nc-0000000000000001', organization: ORG, viewId: 'sq-0000000000000001', name: 'n', enabled: true, destinationType: 'generic',
    url: 'https://93.184.216.34/', token: null, triggers: ['explorer:rows-added', 'explorer:rows-removed', 'explorer:rows-changed'], threshold: null,
    createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', ...extra,
  });
  const check = async (fromIndex: number, toIndex: number, view: SavedView, c: NotificationConfiguration) => {
    const [from, to] = await Promise.all([openSnapshot(dir, ids[fromIndex]!), openSnapshot(dir, ids[toIndex]!)]);
    const instance = await openInstance(':memory:', { threads: '1' });
    const db = await instance.connect();
    try {
      await attachSnapshots(db, new Set(), from, to);
      return await checkPair(db, 'terraform', from, to, view, c);
    } finally {
      db.closeSync();
      instance.closeSync();
    }
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-notify-check-'));
    writeSmallSource(join(dir, 'source'));
    await loadSnapshot(join(dir, 'source'), { dataDir: dir, memoryLimit: '512MB' });
    ids.push((await readCurrentId(dir))!);
    // ws-aaa2 starts drifting, ws-aaa1 stops, ws-aaa6 is new and drifted; sum of resource_count over the
    // drifted: 6 before, 0 + 10 after.
    const byId = (id: string) => workspaces.find((w) => w.id === id)!;
    const batch = join(dir, 'batch-1');
    mkdirSync(batch);
    writeFileSync(join(batch, 'workspaces.ndjson'), ndjson([
      { ...byId('ws-aaa2'), drift: { drifted: true, resources_drifted: 1, resources_undrifted: 11 } },
      { ...byId('ws-aaa1'), drift: { drifted: false, resources_drifted: 0, resources_undrifted: 42 } },
      { ...byId('ws-aaa2'), id: 'ws-aaa6', name: 'zz-new', drift: { drifted: true, resources_drifted: 3, resources_undrifted: 0 }, resource_count: 10 },
    ]));
    await applyBatch(batch, { dataDir: dir, memoryLimit: '512MB' });
    ids.push((await readCurrentId(dir))!);
    // ws-aaa2 stays drifted with another count of drifted resources: changed; ws-aaa6 stops drifting: removed.
    const second = join(dir, 'batch-2');
    mkdirSync(second);
    writeFileSync(join(second, 'workspaces.ndjson'), ndjson([
      { ...byId('ws-aaa2'), drift: { drifted: true, resources_drifted: 7, resources_undrifted: 5 } },
      { ...byId('ws-aaa2'), id: 'ws-aaa6', name: 'zz-new', drift: { drifted: false, resources_drifted: 0, resources_undrifted: 3 }, resource_count: 10 },
    ]));
    await applyBatch(second, { dataDir: dir, memoryLimit: '512MB' });
    ids.push((await readCurrentId(dir))!);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('lists a workspace that starts drifting, and a new drifted one, as added; one that stops as removed', async () => {
    const fired = await check(0, 1, drifted(ORG), configuration({}));
    expect(fired.map((f) => f.trigger)).to.deep.equal(['explorer:rows-added', 'explorer:rows-removed']);
    expect(fired[0]!.counts).to.deep.equal({ added: 2, removed: 1, changed: 0 });
    expect(fired[0]!.rows).to.deep.equal([
      { id: 'ws-aaa2', change: 'added', workspace_name: 'Payments-worker' },
      { id: 'ws-aaa6', change: 'added', workspace_name: 'zz-new' },
    ]);
    expect(fired[1]!.rows).to.deep.equal([{ id: 'ws-aaa1', change: 'removed', workspace_name: 'payments-api' }]);
  });

  it('lists a row that stays in the view with other values as changed, and fires only the configured triggers', async () => {
    const fired = await check(1, 2, drifted(ORG), configuration({ triggers: ['explorer:rows-changed', 'explorer:rows-added'] }));
    expect(fired.map((f) => f.trigger)).to.deep.equal(['explorer:rows-changed']);
    expect(fired[0]!.counts).to.deep.equal({ added: 0, removed: 1, changed: 1 });
    expect(fired[0]!.rows).to.deep.equal([{ id: 'ws-aaa2', change: 'changed', workspace_name: 'Payments-worker' }]);
  });

  it('fires a threshold when its measure crosses the line, not while it stays beyond it or comes back', async () => {
    const above = configuration({ triggers: ['explorer:threshold'], threshold: { measure: 'sum:resource_count', above: 8 } });
    const up = await check(0, 1, drifted(ORG), above);
    expect(up).to.deep.equal([{ trigger: 'explorer:threshold', measure: { name: 'sum:resource_count', before: 6, after: 10, threshold: { measure: 'sum:resource_count', above: 8 } }, rows: [] }]);
    expect(await check(1, 2, drifted(ORG), above), 'back under: an above does not fire').to.deep.equal([]);
    const below = configuration({ triggers: ['explorer:threshold'], threshold: { measure: 'count', below: 2 } });
    const down = await check(1, 2, drifted(ORG), below);
    expect(down.map((f) => [f.measure!.before, f.measure!.after])).to.deep.equal([[2, 1]]);
    expect(await check(0, 1, drifted(ORG), below)).to.deep.equal([]);
  });

  it('finds nothing for an organization the batches did not touch', async () => {
    expect(await check(0, 2, drifted(OTHER_ORG), configuration({ organization: OTHER_ORG, triggers: ['explorer:rows-added', 'explorer:rows-removed', 'explorer:rows-changed', 'explorer:threshold'], threshold: { measure: 'count', above: 0 } }))).to.deep.equal([]);
  });

  it('treats a null measure as neither above nor below', () => {
    expect(beyond({ measure: 'count', above: -1 }, null)).to.equal(false);
    expect(beyond({ measure: 'count', below: 1e9 }, null)).to.equal(false);
    expect(beyond({ measure: 'count', below: 1 }, 0)).to.equal(true);
  });
});
