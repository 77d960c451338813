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
// more overlay, and CURRENT is written again so that servers open it.
//
// A unit holds the writer lock only to find its snapshot and for its switch: batches go on applying while it
// writes (the largest organization takes half a minute of CPU), and the overlay then goes under the snapshot
// current at its switch, as a compaction's whole layer does. Every delta is cumulative, so the deltas written
// since lie over the overlay as they lay over the layers it replaces. The deltas forget an organization as far
// as they hold nothing newer than the overlay: both lists when no batch since touched it, else the older
// delta's when it is still the file the unit read.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { ORGANIZATION_KEY_COLUMN, VIEW_NAMES, workspaceColumn } from '../../catalog/catalog.js';
import { ident, sqlLiteral } from '../../duckdb/sql.js';
import {
  continuesLine, lowestFile, mergedState, organizationSize, mergedViewRows, OVERLAY_POSITION_BASE, OVERLAY_POSITIONS, tidyFile, TIDY_POSITIONS, TIDY_SHARE_ROWS, sameLayersBelow, WORKSPACE_STATE, type StateKind,
} from '../delta-layout.js';
import {
  fsyncPath, listSnapshotIds, readCurrentId, readManifest, removeUnnamed, snapshotPath, snapshotsDir, writeCurrentId, writeManifest, type Manifest, type OverlayEntry,
} from '../snapshot-dir.js';
import { acquireWriterLock, type LockOptions } from '../writer-lock.js';
import { overlaysToMerge } from './apply.js';
import { attachedStack, attachLayers, layerPaths, STORAGE_VERSION, writeLayerFile } from './build-steps.js';
import { writeWholeViews } from './whole-views.js';

export interface TidyOptions {
  /** An organization the deltas hold is tidied when it has at most this many rows of workspaces and resources. */
  maxRows: number;
  /** Or, whatever its size, when the deltas replace at least this share of its workspaces (0 or absent: never). */
  replacedShare?: number;
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
  /** Awaited once the overlay is written, before the switch: the suite applies batches there. */
  beforeSwitch?: () => Promise<void>;
}

export interface TidyResult {
  /** The snapshot tidied, the organizations its new overlay took from the deltas, and those it carried from merged overlays. */
  id: string;
  organizations: string[];
  carried: string[];
  rows: number;
  seconds: number;
  /** The snapshot the overlay went under, when batches made another current meanwhile. */
  rebasedOnto?: string;
}

/**
 * The organizations the current snapshot's deltas hold that a unit may take, with their debt: how many deltas a
 * read of each merges over its lowest layer (one or two). A small one (at most `maxRows` rows of workspaces and
 * resources) is in debt as soon as a delta holds it: its pages read a delta and hide rows of the layer under
 * it, and it is cheap to write. One of more than `shareRows` is in debt once the deltas replace `replacedShare`
 * of its workspaces (as the batch that last touched it found: HiddenRows), so that it is written whole once per
 * that share of it changed, not once per batch (TIDY_SHARE_ROWS says why not a smaller one). A unit pays the debt of the ones read most first (`reads`), then of
 * those with more deltas, then of the smallest (cheapest to write). Deleted organizations are never taken.
 */
export function tidyCandidates(m: Manifest, maxRows: number, reads: Readonly<Record<string, number>> = {}, replacedShare = 0, shareRows = TIDY_SHARE_ROWS): { name: string; rows: number; deltas: number; reads: number }[] {
  const size = (o: string) => organizationSize(m, o);
  const major = new Set(m.major ? m.majorOrganizations ?? [] : []);
  const minor = new Set(m.delta ? m.deltaOrganizations ?? [] : []);
  const replaced = (o: string) => {
    const h = m.hidden?.[o];
    const workspaces = m.organizationRows?.workspaces?.[o] ?? 0;
    return h && h.lowest === lowestFile(m, o) && workspaces > 0 ? (h.rows.workspaces ?? 0) / workspaces : 0;
  };
  return [...new Set([...major, ...minor])]
    .filter((o) => m.organizationKeys?.[o] !== undefined && (size(o) <= maxRows || (replacedShare > 0 && size(o) > shareRows && replaced(o) >= replacedShare)))
    .map((name) => ({ name, rows: size(name), deltas: (major.has(name) ? 1 : 0) + (minor.has(name) ? 1 : 0), reads: reads[name] ?? 0 }))
    .sort((a, b) => b.reads - a.reads || b.deltas - a.deltas || a.rows - b.rows || (a.name < b.name ? -1 : 1));
}

/**
 * Writes one unit of the current snapshot's delta-held organizations in debt (tidyCandidates) into an overlay
 * and makes the snapshot current at its end read them from it. Returns null when there is nothing to tidy, or
 * when the snapshot current at the end no longer builds on what the unit read (a load, a compaction, or an
 * overlay that moved one of its organizations came meanwhile: the work is dropped).
 */
export async function tidyUnit(dataDir: string, opts: TidyOptions): Promise<TidyResult | null> {
  const started = performance.now();
  const root = snapshotsDir(dataDir);
  const tmp = join(root, `.tidy-${process.pid}.duckdb`);
  const scratch = join(root, `.tidy-${process.pid}-tmp`);
  try {
    const unit = await chooseUnit(dataDir, opts);
    if (unit === null) return null;
    const { current, chosen, rows, written, carried, merging } = unit;
    const id = current.id;
    const sequence = current.sequence ?? 0;
    const file = tidyFile(sequence);
    await writeLayerFile(tmp, scratch, { threads: opts.threads ?? 1, memoryLimit: opts.memoryLimit ?? '1GB', signal: opts.signal }, async ({ db, run, all }) => {
      const dir = snapshotPath(dataDir, id);
      const layers = await attachLayers(run, layerPaths(dir, current));
      await run(`ATTACH ${sqlLiteral(tmp)} AS ov (STORAGE_VERSION '${STORAGE_VERSION}')`);
      await run(`SET checkpoint_threshold = '64GB'`);
      // Joins as written, as a batch's over the same layers (delta.ts).
      await run('SET disabled_optimizers = \'join_order,build_side_probe_side\'');
      const key = ident(ORGANIZATION_KEY_COLUMN);
      // Each organization read from exactly the layers a server reads it from (current-snapshot.ts deltaTarget):
      // its overlay, else the whole layer where that holds it, else the base; the whole layer's run of it over
      // that; then each delta the manifest says holds it. Never through the union of every layer under the deltas, whose test of the overlays'
      // organizations kept the scans from skipping to the organization's row groups (0.1 s a small organization).
      const stackOf = (org: string) => attachedStack(layers, current, org);
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

    await opts.beforeSwitch?.();
    return await switchUnit(dataDir, opts, { ...unit, file, tmp, started });
  } finally {
    await fs.rm(tmp, { force: true });
    await fs.rm(scratch, { recursive: true, force: true });
  }
}

interface Unit {
  /** The snapshot the unit reads, and what it writes: the organizations chosen, with those carried from `merging`. */
  current: Manifest;
  chosen: string[];
  rows: number;
  written: Record<string, number>;
  carried: Record<string, number>;
  merging: OverlayEntry[];
}

/**
 * Under the writer lock, briefly: what a unit killed midway left, removed, and the unit the current snapshot
 * asks for; null when there is none.
 */
async function chooseUnit(dataDir: string, opts: TidyOptions): Promise<Unit | null> {
  const unlock = await acquireWriterLock(dataDir, 'tidy', opts.writerLock);
  try {
    const root = snapshotsDir(dataDir);
    // What a unit killed midway left beside the snapshots (one follower tidies a data directory at a time).
    for (const name of await fs.readdir(root)) if (name.startsWith('.tidy-')) await fs.rm(join(root, name), { recursive: true, force: true });
    const id = await readCurrentId(dataDir);
    if (id === null) return null;
    const current = await readManifest(dataDir, id);
    if (!current.base || !current.database) return null;
    // An overlay a unit killed before its switch renamed into the snapshot's directory, or one a unit killed
    // after it had merged away: whatever the manifest does not name.
    await removeUnnamed(dataDir, current);
    if (!current.delta && !current.major) return null;
    // One unit a snapshot: the overlay is named, and numbers its rows, by the batch that made the snapshot.
    if ((current.overlays ?? []).some((o) => o.file === tidyFile(current.sequence ?? 0))) return null;
    const candidates = tidyCandidates(current, opts.maxRows, opts.reads, opts.replacedShare);
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
    return { current, chosen, rows, written, carried, merging };
  } finally {
    await unlock();
  }
}

/**
 * The switch, under the writer lock: the overlay into the directory of the snapshot current now (`onto`), then
 * its manifest, then CURRENT written again. Null, the overlay dropped, when `onto` does not build on what the
 * unit read.
 */
async function switchUnit(dataDir: string, opts: TidyOptions, unit: Unit & { file: string; tmp: string; started: number }): Promise<TidyResult | null> {
  const { current, written, merging, file, tmp } = unit;
  // A batch may be applying: the switch waits for it, as a compaction's does (whole-layer.ts).
  const unlock = await acquireWriterLock(dataDir, 'tidy', { ...opts.writerLock, waitMs: Math.max(opts.writerLock?.waitMs ?? 0, 60_000) });
  try {
    const nowId = await readCurrentId(dataDir);
    const onto = nowId === null ? null : await readManifest(dataDir, nowId).catch(() => null);
    if (onto === null || !buildsOn(current, onto, Object.keys(written), merging, file)) return null;
    const dir = snapshotPath(dataDir, onto.id);
    await fs.rename(tmp, join(dir, file));
    await fsyncPath(dir);
    const merged = new Set(merging.map((o) => o.file));
    const kept: OverlayEntry[] = (onto.overlays ?? []).filter((o) => !merged.has(o.file))
      .map((o) => ({ ...o, organizations: Object.fromEntries(Object.entries(o.organizations).filter(([org]) => written[org] === undefined)) }))
      .filter((o) => Object.keys(o.organizations).length > 0);
    const overlays = [...kept, { file, id: onto.id, organizations: written, sequence: current.sequence ?? 0 }];
    const gone = (onto.overlays ?? []).map((o) => o.file).filter((f) => !overlays.some((o) => o.file === f));
    const sizes = { ...onto.sizes };
    for (const f of gone) delete sizes[f];
    sizes[file] = (await fs.stat(join(dir, file))).size;
    // What the deltas of `onto` hold of each organization written is no newer than the overlay where no batch
    // since touched it; the older delta's, where it is still the file the unit read.
    const touched = await touchedSince(dataDir, current, onto);
    const newer = (o: string) => touched === null || touched.has(o);
    const sameOlder = onto.major !== undefined && onto.majorId === current.majorId;
    const forget = (held: string[] | undefined, older: boolean) => held?.filter((o) => written[o] === undefined || (newer(o) && !(older && sameOlder)));
    const hidden = onto.hidden ? Object.fromEntries(Object.entries(onto.hidden).filter(([o]) => written[o] === undefined)) : undefined;
    const manifest: Manifest = {
      ...onto,
      ...(onto.majorOrganizations ? { majorOrganizations: forget(onto.majorOrganizations, true) } : {}),
      ...(onto.deltaOrganizations ? { deltaOrganizations: forget(onto.deltaOrganizations, false) } : {}),
      ...(hidden ? { hidden } : {}),
      overlays,
      sizes,
    };
    await writeManifest(dataDir, manifest);
    await writeCurrentId(dataDir, onto.id);
    for (const f of gone) await fs.rm(join(dir, f), { force: true });
    return {
      id: current.id, organizations: unit.chosen, carried: Object.keys(unit.carried), rows: unit.rows, seconds: (performance.now() - unit.started) / 1000,
      ...(onto.id !== current.id ? { rebasedOnto: onto.id } : {}),
    };
  } finally {
    await unlock();
  }
}

/**
 * Whether the overlay a unit wrote from `read` may go under `now`: `now` is `read`, or a later batch snapshot of
 * the same line whose batches only stacked deltas over the same layers (no load, no compaction), each
 * organization written has the same lowest layer in both, every overlay merged is still there as it was, and
 * no unit went under `now` from the same snapshot.
 */
function buildsOn(read: Manifest, now: Manifest, written: string[], merging: readonly OverlayEntry[], file: string): boolean {
  if (!(now.id === read.id ? sameLayersBelow(read, now) : continuesLine(read, now)) || (now.overlays ?? []).some((o) => o.file === file)) return false;
  const overlayOf = (m: Manifest, org: string) => (m.overlays ?? []).find((o) => o.organizations[org] !== undefined)?.file;
  if (written.some((org) => overlayOf(read, org) !== overlayOf(now, org))) return false;
  return merging.every((o) => (now.overlays ?? []).some((n) => n.file === o.file && JSON.stringify(n.organizations) === JSON.stringify(o.organizations)));
}

/**
 * The organizations the batches after `read` up to `now` touched (each snapshot's changedOrganizations), or
 * null when a snapshot between them is gone or does not say: then any may have been.
 */
async function touchedSince(dataDir: string, read: Manifest, now: Manifest): Promise<Set<string> | null> {
  const from = read.sequence ?? 0;
  const to = now.sequence ?? 0;
  if (to === from) return new Set();
  const touched = new Set<string>();
  const seen = new Set<number>();
  for (const id of (await listSnapshotIds(dataDir)).filter((i) => i > read.id && i <= now.id)) {
    const m = await readManifest(dataDir, id).catch(() => null);
    if (m === null || m.base !== read.base || m.sequence === undefined || m.sequence <= from || m.sequence > to) continue;
    if (m.changedOrganizations === undefined) return null;
    for (const o of m.changedOrganizations) touched.add(o);
    seen.add(m.sequence);
  }
  return seen.size === to - from ? touched : null;
}
