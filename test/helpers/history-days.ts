// Three days of the small fixture for history tests (docs/history.md): day 1 is the fixture itself, day 2
// upgrades, deletes and creates a workspace, day 3 adds drift and renames. loadDays puts days 2 and 3 on a
// harness that started with day 1, waiting for each to become current, and returns the snapshot ids.
import { join } from 'node:path';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import * as fx from '../fixtures/small-source.js';
import type { Src } from './fixture-model.js';
import type { Harness } from './harness.js';
import { waitFor } from './wait.js';

export interface Day {
  workspaces: Src[];
  organizations: Src[];
}

export const DAY1: Day = {
  workspaces: fx.workspaces as Src[],
  organizations: [{ name: fx.ORG, id: 'org-AcmeCorp1' }, { name: fx.OTHER_ORG, id: 'org-globex' }, { name: 'empty-org' }],
};
// Day 2: one workspace upgrades its engine, one is deleted (with its rows in every file), one is created,
// and empty-org is not in the source at all.
export const DAY2: Day = {
  workspaces: [
    ...DAY1.workspaces
      .filter((w) => w.id !== 'ws-aaa5')
      .map((w) => (w.id === 'ws-aaa1' ? { ...w, engine_version: '1.10.0', updated_at: '2025-06-01T10:00:00Z' } : w)),
    {
      id: 'ws-aaa6', organization: fx.ORG, project_id: 'prj-pay', name: 'billing', created_at: '2025-06-01T09:00:00Z',
      updated_at: '2025-06-01T09:00:00Z', engine_version: '1.9.0', drift: { drifted: false, resources_drifted: 0, resources_undrifted: 3 },
      resource_count: 0, current_rum_count: 0,
    },
  ],
  organizations: DAY1.organizations.filter((o) => o.name !== 'empty-org'),
};
// Day 3: drift appears on one workspace, the new one is renamed, empty-org is back.
export const DAY3: Day = {
  workspaces: DAY2.workspaces.map((w) => {
    if (w.id === 'ws-aaa2') return { ...w, drift: { drifted: true, resources_drifted: 3, resources_undrifted: 9 }, updated_at: '2025-06-02T08:00:00Z' };
    if (w.id === 'ws-aaa6') return { ...w, name: 'Billing-v2', updated_at: '2025-06-02T08:00:00Z' };
    return w;
  }),
  organizations: DAY1.organizations,
};
export const DAYS = [DAY1, DAY2, DAY3];

const ndjson = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

/** Writes a day as a snapshot source in `dir` (the fixture's other files as they are). */
export function writeDay(dir: string, day: Day): string {
  const ids = new Set(day.workspaces.map((w) => w.id));
  const own = (rows: Src[]) => ndjson(rows.filter((r) => ids.has(r.workspace_id)));
  return fx.writeSmallSource(dir, {
    'organizations.ndjson': ndjson(day.organizations),
    'workspaces.ndjson': ndjson(day.workspaces),
    'workspace_providers.ndjson': own(fx.providers as Src[]),
    'workspace_modules.ndjson': own(fx.modules as Src[]),
    'workspace_resources.ndjson': own(fx.resources as Src[]),
  });
}

/** The snapshot the organization's queries read now. */
export async function currentSnapshot(h: Harness): Promise<string> {
  return (await h.explorer('?type=workspaces&page%5Bsize%5D=1')).headers.get('x-explorer-snapshot')!;
}

/**
 * Loads days 2 and 3 (labelled "day 2", "day 3") on a harness started with `writeSource: (dir) => writeDay(dir, DAY1)`,
 * each current before the next; `afterEach` runs once a day is current. Returns the three ids, oldest first.
 */
export async function loadDays(h: Harness, afterEach?: (day: number) => Promise<void>): Promise<string[]> {
  const ids = [await currentSnapshot(h)];
  await afterEach?.(1);
  for (const [i, day] of [[2, DAY2], [3, DAY3]] as const) {
    const { manifest } = await loadSnapshot(writeDay(join(h.dataDir, `day-${i}`), day), { dataDir: h.dataDir, label: `day ${i}` });
    await waitFor(async () => (await currentSnapshot(h)) === manifest.id, 5000, `day ${i} current`);
    ids.push(manifest.id);
    await afterEach?.(i);
  }
  return ids;
}
