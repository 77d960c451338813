// Tidying, off the batch's path (delta-layout.ts, docs/changes.md §5): a bounded unit of the small
// organizations the deltas hold is written whole into an overlay of the current snapshot, which then reads
// each of them from that one file with the base's plans, as an untouched organization reads the base. The
// unit costs what its organizations hold, never what the stream touched before them: the deltas are not
// rewritten. They forget the organizations instead: the manifest, which is what readers and the next batch
// go by, no longer lists them as the deltas', so each reads its overlay and the next batch carries none of
// their rows as held.
//
// A unit reads each organization from exactly the layers a server reads it from, so the overlay holds what
// was served. What a delta file still stores of such an organization stays consistent with the overlay for
// every read that goes by the files rather than the manifest (the batch writer's merge of the layers): every
// delta is cumulative, so the newest layer that replaced a workspace has its rows as of the overlay's
// writing, or of a later batch that touched it again and then holds it again.
//
// The snapshot stays the same snapshot, as after a compaction (whole-layer.ts): only its manifest names one
// more overlay, and CURRENT is written again so that servers open it. Under the writer lock throughout, so a
// batch waits for a unit (a few hundred milliseconds for ten small organizations) rather than racing it.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { ORGANIZATION_KEY_COLUMN, VIEW_NAMES, workspaceColumn } from '../../catalog/catalog.js';
import { ident, sqlLiteral } from '../../duckdb/sql.js';
import { mergedState, mergedViewRows, OVERLAY_POSITION_BASE, OVERLAY_POSITIONS, tidyFile, TIDY_POSITIONS, WORKSPACE_STATE, type StateKind } from '../delta-layout.js';
import { fsyncPath, readCurrentId, readManifest, removeUnnamed, snapshotPath, snapshotsDir, writeCurrentId, writeManifest, type Manifest, type OverlayEntry } from '../snapshot-dir.js';
import { acquireWriterLock, type LockOptions } from '../writer-lock.js';
import { overlaysToMerge } from './apply.js';
import { attachLayers, layerPaths, STORAGE_VERSION, writeLayerFile } from './build-steps.js';
import { writeWholeViews } from './whole-views.js';

export interface TidyOptions {
  /** An organization the deltas hold is tidied when it has at most this many rows of workspaces and resources. */
  maxRows: number;
  /** A unit takes organizations in tidyCandidates' order until they hold this many rows (one at least). */
  unitRows: number;
  /** How much each organization is read (organization-reads.ts readScores): the most-read are tidied first. */
  reads?: Readonly<Record<string, number>>;
  /** Overlays the snapshot keeps before a unit takes in the smaller half of them (MAX_OVERLAYS). */
  maxOverlays?: number;
  memoryLimit?: string;
  threads?: number;
  signal?: AbortSignal;
  writerLock?: LockOptions;
}

export interface TidyResult {
  /** The snapshot tidied, the organizations its new overlay took from the deltas, and those it carried from merged overlays. */
  id: string;
  organizations: string[];
  carried: string[];
  rows: number;
  seconds: number;
}

/**
 * The organizations the current snapshot's deltas hold that a unit may take (small enough, not deleted), with
 * their debt: how many deltas a read of each merges over its lowest layer (one or two). Each such organization
 * is in debt, since its pages read a delta and hide rows of the layer under it; a unit pays the debt of the
 * ones read most first (`reads`), then of those with more deltas, then of the smallest (cheapest to write).
 */
export function tidyCandidates(m: Manifest, maxRows: number, reads: Readonly<Record<string, number>> = {}): { name: string; rows: number; deltas: number; reads: number }[] {
  const size = (o: string) => (m.organizationRows?.workspaces?.[o] ?? 0) + (m.organizationRows?.resources?.[o] ?? 0);
  const major = new Set(m.major ? m.majorOrganizations ?? [] : []);
  const minor = new Set(m.delta ? m.deltaOrganizations ?? [] : []);
  return [...new Set([...major, ...minor])].filter((o) => m.organizationKeys?.[o] !== undefined && size(o) <= maxRows)
    .map((name) => ({ name, rows: size(name), deltas: (major.has(name) ? 1 : 0) + (minor.has(name) ? 1 : 0), reads: reads[name] ?? 0 }))
    .sort((a, b) => b.reads - a.reads || b.deltas - a.deltas || a.rows - b.rows || (a.name < b.name ? -1 : 1));
}

/**
 * Writes one unit of the current snapshot's small delta-held organizations into an overlay and makes the
 * snapshot read them from it. Returns null when there is nothing to tidy.
 */
export async function tidyUnit(dataDir: string, opts: TidyOptions): Promise<TidyResult | null> {
  const started = performance.now();
  const unlock = await acquireWriterLock(dataDir, 'tidy', opts.writerLock);
  const root = snapshotsDir(dataDir);
  const tmp = join(root, `.tidy-${process.pid}.duckdb`);
  const scratch = join(root, `.tidy-${process.pid}-tmp`);
  try {
    // What a unit killed midway left beside the snapshots (one writer at a time: the lock).
    for (const name of await fs.readdir(root)) if (name.startsWith('.tidy-')) await fs.rm(join(root, name), { recursive: true, force: true });
    const id = await readCurrentId(dataDir);
    if (id === null) return null;
    const current = await readManifest(dataDir, id);
    if (!current.base || !current.database) return null;
    // An overlay a unit killed before its switch renamed into the snapshot's directory, or one a unit killed
    // after it had merged away: whatever the manifest does not name.
    await removeUnnamed(dataDir, current);
    if (!current.delta && !current.major) return null;
    const sequence = current.sequence ?? 0;
    const file = tidyFile(sequence);
    // One unit a snapshot: the overlay is named, and numbers its rows, by the batch that made the snapshot.
    if ((current.overlays ?? []).some((o) => o.file === file)) return null;
    const candidates = tidyCandidates(current, opts.maxRows, opts.reads);
    if (candidates.length === 0) return null;
    const chosen: string[] = [];
    let rows = 0;
    for (const c of candidates) {
      if (chosen.length > 0 && rows + c.rows > opts.unitRows) break;
      chosen.push(c.name);
      rows += c.rows;
    }
    const keys = current.organizationKeys!;
    const written: Record<string, number> = Object.fromEntries(chosen.map((o) => [o, keys[o]!]));
    // Past the overlays' bound, the smaller half of them comes along (their organizations read as the layers have them).
    const merging = overlaysToMerge(current, opts.maxOverlays);
    const carried: Record<string, number> = {};
    for (const o of merging) for (const [org, k] of Object.entries(o.organizations)) if (written[org] === undefined) carried[org] = k;
    Object.assign(written, carried);

    await writeLayerFile(tmp, scratch, { threads: opts.threads ?? 1, memoryLimit: opts.memoryLimit ?? '1GB', signal: opts.signal }, async ({ db, run, all }) => {
      const dir = snapshotPath(dataDir, id);
      const layers = await attachLayers(run, layerPaths(dir, current));
      await run(`ATTACH ${sqlLiteral(tmp)} AS ov (STORAGE_VERSION '${STORAGE_VERSION}')`);
      await run(`SET checkpoint_threshold = '64GB'`);
      // Joins as written, as a batch's over the same layers (delta.ts).
      await run('SET disabled_optimizers = \'join_order,build_side_probe_side\'');
      const key = ident(ORGANIZATION_KEY_COLUMN);
      // Each organization read from exactly the layers a server reads it from (current-snapshot.ts deltaTarget):
      // its overlay, else the whole layer where that holds it, else the base; then each delta the manifest says
      // holds it. Never through the union of every layer under the deltas, whose test of the overlays'
      // organizations kept the scans from skipping to the organization's row groups (0.1 s a small organization).
      const minorHolds = new Set(current.delta ? current.deltaOrganizations ?? [] : []);
      const majorHolds = new Set(current.major ? current.majorOrganizations ?? [] : []);
      const wholeHolds = new Set(current.whole ? current.wholeOrganizations ?? [] : []);
      const overlayOf = new Map(layers.overlays.flatMap((o) => Object.keys(o.organizations).map((org) => [org, o.alias] as const)));
      const stackOf = (org: string) => [
        overlayOf.get(org) ?? (wholeHolds.has(org) ? 'f_whole' : 'f_base'),
        ...(majorHolds.has(org) ? [layers.major!] : []),
        ...(minorHolds.has(org) ? [layers.minor!] : []),
      ];
      // Each organization read by its own key, which the scans test against their zone maps.
      const each = (select: (org: string, k: number) => string) => `(${Object.entries(written).map(([org, k]) => select(org, Math.trunc(k))).join('\n  UNION ALL ')})`;
      const viewRows = (view: string) => each((org, k) => (workspaceColumn(view)
        ? `SELECT * FROM ${mergedViewRows(stackOf(org), view, k)} t WHERE t.${key} = ${k}`
        // A grouped view: the newest of its layers holds the organization whole.
        : `SELECT * FROM ${stackOf(org).at(-1)}.${ident(view)} WHERE ${key} = ${k}`));
      const count = await writeWholeViews({
        db, run, all, out: 'ov', rows: viewRows, first: OVERLAY_POSITION_BASE + sequence * OVERLAY_POSITIONS + TIDY_POSITIONS, positions: TIDY_POSITIONS, layout: current,
      });
      for (const view of VIEW_NAMES) {
        // Checked: a wrong count is a wrong answer for some organization.
        const expected = Object.keys(written).reduce((a, o) => a + (current.organizationRows?.[view]?.[o] ?? 0), 0);
        if (count[view] !== expected) throw new Error(`tidying ${id}: ${view} has ${count[view]} rows, not ${expected}`);
      }
      for (const kind of Object.keys(WORKSPACE_STATE) as StateKind[]) {
        await run(`CREATE TABLE ov.source_${kind} AS SELECT * FROM ${each((org) => `SELECT * FROM ${mergedState(stackOf(org), kind)} s WHERE s.organization = ${sqlLiteral(org)}`)} ORDER BY ALL`);
      }
      await run('CHECKPOINT ov');
      await run('DETACH ov');
      await layers.detach();
    });

    // The switch: the overlay into the snapshot's directory, then its manifest, then CURRENT written again.
    const dir = snapshotPath(dataDir, id);
    await fs.rename(tmp, join(dir, file));
    await fsyncPath(dir);
    const merged = new Set(merging.map((o) => o.file));
    const kept: OverlayEntry[] = (current.overlays ?? []).filter((o) => !merged.has(o.file))
      .map((o) => ({ ...o, organizations: Object.fromEntries(Object.entries(o.organizations).filter(([org]) => written[org] === undefined)) }))
      .filter((o) => Object.keys(o.organizations).length > 0);
    const overlays = [...kept, { file, id, organizations: written }];
    const gone = (current.overlays ?? []).map((o) => o.file).filter((f) => !overlays.some((o) => o.file === f));
    const sizes = { ...current.sizes };
    for (const f of gone) delete sizes[f];
    sizes[file] = (await fs.stat(join(dir, file))).size;
    const forget = (held: string[] | undefined) => held?.filter((o) => written[o] === undefined);
    const manifest: Manifest = {
      ...current,
      ...(current.majorOrganizations ? { majorOrganizations: forget(current.majorOrganizations) } : {}),
      ...(current.deltaOrganizations ? { deltaOrganizations: forget(current.deltaOrganizations) } : {}),
      overlays,
      sizes,
    };
    await writeManifest(dataDir, manifest);
    await writeCurrentId(dataDir, id);
    for (const f of gone) await fs.rm(join(dir, f), { force: true });
    return { id, organizations: chosen, carried: Object.keys(carried), rows, seconds: (performance.now() - started) / 1000 };
  } finally {
    await fs.rm(scratch, { recursive: true, force: true });
    await unlock();
  }
}
