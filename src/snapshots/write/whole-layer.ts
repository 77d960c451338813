// Background compaction of a batch snapshot's layers (delta-layout.ts). A touched organization's page reads
// the base less what the deltas replaced, plus each delta's rows: two anti joins and three scans, sorted,
// where an untouched organization's page is one scan in stored order. Once batches stop arriving for a
// while, the follower rewrites the current snapshot's whole layer and deltas as one whole layer that holds
// each organization they touched whole (every row of every view, in the base's order, with its own position
// index and index tables): each such organization then reads one table as the base stores it, with every
// plan of the base's. Later batches stack deltas on it as on the base, and their folds never copy it.
// The snapshot stays the same snapshot (same id, same answers); only its manifest names other files, as a
// history compaction does (compact.ts).
//
// A compaction costs what changed since the last one, not everything ever compacted: the organizations the
// deltas hold are always written, and each layer an earlier compaction wrote (the whole layer, and those kept
// among the overlays) is written again with them only while it holds no more rows than the compaction writes
// besides it (planCompaction). A larger one stays where it lies, the current copy of its organizations as an
// overlay is, so that an organization is rewritten about once each time the rows written around it double
// (size-tiered, as LSM engines merge runs of like size), not at every compaction: without that, the whole layer
// grew with every organization touched since the load and each compaction copied it again. A large
// organization whose lowest layer is the base or such a layer, and of which little changed, is written as a run
// over that layer (delta-layout.ts RUN_ROWS), which stays in place: the largest organization, which every large
// batch of a stream touches, then costs a compaction its change, not its two million rows.
//
// Batches need not wait for it: when batches made other snapshots current while it ran, the new whole layer
// goes under the current snapshot's deltas instead (rebased). Every delta is cumulative over the layers
// below it as they were when it was written, and the new whole layer holds each of its organizations as
// the compacted snapshot had it, which every delta written since replaces where it changed: the older delta
// the compacted snapshot read is dropped (its rows are in the whole layer), an older delta folded since is
// kept, and so is the newer delta. Whole layers number their rows apart from the deltas (delta-layout.ts).
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { POSITION_COLUMN, VIEW_NAMES, workspaceColumn } from '../../catalog/catalog.js';

import {
  continuesLine, hiddenTable, isTidyFile, isWholeFile, KEPT_WHOLE_LAYERS, lowestFile, mergedGroupedRows, organizationSize, mergedState, mergedViewRows,
  RUN_ROWS, RUN_SHARE, standingRuns,
  wholeFile, WHOLE_POSITION_BASE, WHOLE_POSITIONS, WHOLE_STATE, WORKSPACE_STATE, type HiddenRows, type StateKind,
} from '../delta-layout.js';
import { readCurrentId, readManifest, removeUnnamed, snapshotPath, snapshotsDir, writeCurrentId, writeManifest, type Manifest, type OverlayEntry } from '../snapshot-dir.js';
import { acquireWriterLock } from '../writer-lock.js';
import { attachedStack, attachLayers, layerPaths, STORAGE_VERSION, writeLayerFile } from './build-steps.js';
import { countHidden } from './hidden-rows.js';
import { writeParts, writeWholeViews } from './whole-views.js';

import { ident, sqlLiteral } from '../../duckdb/sql.js';

export interface WholeLayerOptions {
  /** Interrupts the compaction (a batch arrived, or the follower stops): nothing changes. */
  signal?: AbortSignal;
  memoryLimit?: string;
  threads?: number;
  /** Awaited once the whole layer is written, before the switch: the suite applies batches there. */
  beforeSwitch?: () => Promise<void>;
  /**
   * How much larger than what it writes besides it an earlier compaction's layer may be and still be written
   * again (planCompaction; 1). The suite sets 0, to leave every earlier one in place, and Infinity, to take each in.
   */
  tier?: number;
  /** The rows a part of the layer's views holds at most (whole-views.ts writeParts); the suite sets a few. */
  partRows?: number;
  /**
   * An organization with more rows than this whose lowest layer is the base or a compaction's file is written
   * as a run over that layer while the run replaces at most `runShare` of its workspaces (delta-layout.ts
   * RUN_ROWS, RUN_SHARE). The suite sets a few rows.
   */
  runRows?: number;
  runShare?: number;
  /** Called once there is something to compact, before the writing starts: the snapshot and how many organizations it holds whole. */
  onStart?: (id: string, organizations: number) => void;
}

export interface WholeLayerResult {
  /** The snapshot whose layers were rewritten, and the organizations its whole layer now holds. */
  id: string;
  organizations: number;
  seconds: number;
  /** The snapshot the whole layer went under, when batches made another current meanwhile. */
  rebasedOnto?: string;
  /** Organizations left where an earlier compaction wrote them (planCompaction). */
  kept: number;
  /** Of `organizations`, those written as runs (delta-layout.ts RUN_ROWS). */
  runs: number;
}

/** The organizations a compaction writes, and the layers an earlier compaction wrote that it leaves in place. */
export interface CompactionPlan {
  /**
   * Every organization the new whole layer holds: those the deltas hold, those of the layers rewritten, and
   * the whole layer's runs (never left in place with it: an overlay holds organizations whole).
   */
  held: string[];
  /** Of those, the ones written as runs, each with the file it lies over (its lowest layer, left in place). */
  runs: Record<string, string>;
  /** Of those, the ones an overlay entry held (a kept layer rewritten now), with the key it knew each by. */
  fromOverlays: Record<string, number>;
  /** The files of earlier compactions whose organizations the new layer takes in (the whole layer's among them). */
  rewritten: string[];
  /** The current whole layer as an overlay entry when it stays in place: its organizations no delta holds, and those a run lies over it for. */
  demoted: OverlayEntry | null;
}

/**
 * What a compaction of `m` writes (whole-layer.ts, above): the organizations its deltas hold, and the layers an
 * earlier compaction wrote (the whole layer's organizations no overlay or delta holds, and each kept one among
 * the overlays) taken smallest first while each holds no more rows than `tier` times what the compaction writes
 * besides it, or while more than `keptLayers` would stay. Rows are an organization's workspaces and resources.
 * An organization of more than `runRows` whose lowest layer is the base or a compaction's file, which the
 * manifest's figures say the deltas and the whole layer's run of it replace at most `runShare` of, is written
 * as a run over that layer (counted by the rows replaced), and the layer keeps it, unless it is taken in.
 */
export function planCompaction(m: Manifest, { keptLayers = KEPT_WHOLE_LAYERS, tier = 1, runRows = RUN_ROWS, runShare = RUN_SHARE }: { keptLayers?: number; tier?: number; runRows?: number; runShare?: number } = {}): CompactionPlan {
  const size = (o: string) => organizationSize(m, o);
  const deltaHeld = new Set([...(m.major ? m.majorOrganizations ?? [] : []), ...(m.delta ? m.deltaOrganizations ?? [] : [])]);
  const standing = standingRuns(m);
  const overlaid = new Set((m.overlays ?? []).flatMap((o) => Object.keys(o.organizations)));
  const keys = m.organizationKeys ?? {};
  // Runs, by the figures of the rows of its lowest layer that the layers over it replace (delta-layout.ts HiddenRows).
  const runs: Record<string, string> = {};
  for (const o of new Set([...deltaHeld, ...standing])) {
    const lowest = lowestFile(m, o);
    const h = m.hidden?.[o];
    if (keys[o] === undefined || size(o) <= runRows || lowest === undefined || !(lowest === m.database || isWholeFile(lowest))) continue;
    if (h === undefined || h.lowest !== lowest || (h.rows.workspaces ?? 0) > runShare * (m.organizationRows?.workspaces?.[o] ?? 0)) continue;
    runs[o] = lowest;
  }
  const changed = (o: string) => (runs[o] === undefined ? size(o) : Object.values(m.hidden![o]!.rows).reduce((a, n) => a + n, 0));
  // A layer's organizations that stay its own if it stays: those no delta holds, and those a run lies over it for.
  const live = (file: string, organizations: Record<string, number>) => Object.fromEntries(Object.entries(organizations).filter(([o]) => !deltaHeld.has(o) || runs[o] === file));
  const layers = [
    ...(m.whole ? [{ file: m.whole, id: m.wholeId ?? m.id, overlay: false, organizations: live(m.whole, Object.fromEntries((m.wholeOrganizations ?? []).filter((o) => !overlaid.has(o) && keys[o] !== undefined).map((o) => [o, keys[o]!]))) }] : []),
    ...(m.overlays ?? []).filter((o) => isWholeFile(o.file)).map((o) => ({ file: o.file, id: o.id, overlay: true, organizations: live(o.file, o.organizations) })),
  ].map((l) => ({ ...l, rows: Object.keys(l.organizations).reduce((a, o) => a + size(o), 0) }))
    .sort((a, b) => a.rows - b.rows || (a.file < b.file ? -1 : 1));
  let rows = [...deltaHeld].reduce((a, o) => a + changed(o), 0);
  const taken: typeof layers = [];
  for (const [i, l] of layers.entries()) {
    if (l.rows > rows * tier && layers.length - i <= keptLayers) break;
    taken.push(l);
    rows += l.rows;
  }
  // A run over a layer taken in is written whole with it.
  const rewritten = new Set(taken.map((l) => l.file));
  for (const [o, over] of Object.entries(runs)) if (rewritten.has(over)) delete runs[o];
  const current = layers.find((l) => !l.overlay && !taken.includes(l));
  return {
    held: [...new Set([...deltaHeld, ...[...standing].filter((o) => keys[o] !== undefined), ...taken.flatMap((l) => Object.keys(l.organizations))])].sort(),
    runs,
    fromOverlays: Object.assign({}, ...taken.filter((l) => l.overlay).map((l) => l.organizations)),
    rewritten: taken.map((l) => l.file),
    demoted: current && Object.keys(current.organizations).length > 0 ? { file: current.file, id: current.id, organizations: current.organizations } : null,
  };
}

/** The snapshot has deltas: compacting them changes how its touched organizations' pages read. */
export const hasDeltas = (m: Manifest) => m.delta !== undefined || m.major !== undefined;

/**
 * Rewrites the current snapshot's whole layer and deltas as one whole layer, under the snapshot current when
 * it is done (rebased, above). Returns null when there is nothing to do, or when the current snapshot no
 * longer builds on the layers compacted (a load, or another compaction, came meanwhile: the work is dropped).
 */
export async function compactLayers(dataDir: string, opts: WholeLayerOptions = {}): Promise<WholeLayerResult | null> {
  const started = performance.now();
  const id = await readCurrentId(dataDir);
  if (id === null) return null;
  const current = await readManifest(dataDir, id);
  if (!current.base || !current.database || !hasDeltas(current)) {
    await tidyCurrent(dataDir);
    return null;
  }
  const dir = snapshotPath(dataDir, id);
  // Written beside the snapshots, not in the compacted one's directory: batches go on meanwhile, and retention
  // may remove that snapshot before the layer is done.
  const root = snapshotsDir(dataDir);
  const tmp = join(root, `.whole-${process.pid}.duckdb`);
  const scratch = join(root, `.whole-${process.pid}-tmp`);
  // What a compaction killed midway left (one follower compacts a data directory at a time).
  for (const name of await fs.readdir(root)) if (name.startsWith('.whole-')) await fs.rm(join(root, name), { recursive: true, force: true });
  // The organizations the deltas hold, and those of the earlier compactions' layers it rewrites (planCompaction):
  // an organization an overlay alone holds is whole already (delta-layout.ts).
  const deltaHeld = new Set([...(current.majorOrganizations ?? []), ...(current.deltaOrganizations ?? [])]);
  const overlaid = new Map((current.overlays ?? []).flatMap((o) => Object.entries(o.organizations)));
  const plan = planCompaction(current, { tier: opts.tier, runRows: opts.runRows, runShare: opts.runShare });
  const held = plan.held;
  const runs = Object.keys(plan.runs);
  const whole = held.filter((o) => plan.runs[o] === undefined);
  // Keys from our own manifest (integers), never a client's: written out so that zone maps skip the rest.
  const keyOf = (o: string) => current.organizationKeys?.[o];
  const keyList = (orgs: readonly string[]) => orgs.map(keyOf).filter((k): k is number => k !== undefined).map((k) => Math.trunc(k)).join(', ') || 'NULL';
  const nameList = (orgs: readonly string[]) => orgs.map(sqlLiteral).join(', ') || 'NULL';
  const hidden: Record<string, HiddenRows> = {};
  // The overlays' organizations the deltas hold too go into the whole layer (but those a run lies over an
  // overlay for): their base rows stay hidden by its replaced workspaces, by the key the overlay knew them by
  // (a deleted organization's is in no other list).
  const unOverlaid = [...[...overlaid].filter(([o]) => deltaHeld.has(o) && plan.runs[o] === undefined).map(([, k]) => k), ...Object.values(plan.fromOverlays)].map((k) => Math.trunc(k));
  opts.onStart?.(id, held.length);
  await writeLayerFile(tmp, scratch, { threads: opts.threads ?? 2, memoryLimit: opts.memoryLimit ?? '2GB', signal: opts.signal }, async ({ db, run, all }) => {
    const layers = await attachLayers(run, layerPaths(dir, current));
    await run(`ATTACH ${sqlLiteral(tmp)} AS out (STORAGE_VERSION '${STORAGE_VERSION}')`);
    await run(`SET checkpoint_threshold = '64GB'`);
    // Each view's rows of the held organizations in the base's order, at positions of this layer's own.
    const first = WHOLE_POSITION_BASE + (current.sequence ?? 0) * WHOLE_POSITIONS;
    if (first + WHOLE_POSITIONS > Number.MAX_SAFE_INTEGER) throw new Error(`snapshot ${id} is the ${current.sequence}th batch since the load: load a source again before compacting`);
    // Each run's layers as attached: the one it lies over, and those over that one (the current whole layer's
    // run of it, the deltas that hold it), whose rows and replaced workspaces are the new run's.
    const alias = new Map<string, string>([[current.database!, 'f_base'], ...(current.whole && layers.whole ? [[current.whole, layers.whole] as [string, string]] : []),
      ...(current.overlays ?? []).map((o, i) => [o.file, layers.overlays[i]!.alias] as [string, string])]);
    const runLayers = Object.fromEntries(runs.map((o) => {
      const stack = attachedStack(layers, current, o);
      const lowest = alias.get(plan.runs[o]!);
      if (lowest === undefined || stack[0] !== lowest || stack.length < 2) throw new Error(`compacting the layers of ${id}: ${o} does not read ${plan.runs[o]} under its changes`);
      return [o, { lowest, over: stack.slice(1), key: Math.trunc(keyOf(o)!) }];
    }));
    const each = (select: (r: { lowest: string; over: string[]; key: number }, o: string) => string) => runs.map((o) => ` UNION ALL ${select(runLayers[o]!, o)}`).join('');
    const rows = (view: string) => (workspaceColumn(view)
      ? `(SELECT * FROM ${mergedViewRows(layers.stack, view)} t WHERE t."_org_key" IN (${keyList(whole)})${each((r) => `SELECT * FROM ${mergedViewRows(r.over, view, r.key)} t WHERE t."_org_key" = ${r.key}`)})`
      : `(SELECT * FROM ${mergedGroupedRows(layers.stack, view)} t WHERE t."_org_key" IN (${keyList(held)}))`);
    const heldKeys = Object.fromEntries(held.flatMap((o) => (keyOf(o) === undefined ? [] : [[o, keyOf(o)!]])));
    const rowsOf = (o: string) => Math.max(...VIEW_NAMES.map((v) => current.organizationRows?.[v]?.[o] ?? 0));
    const parts = writeParts(heldKeys, rowsOf, opts.partRows);
    const written = await writeWholeViews({ db, run, all, out: 'out', rows, first, positions: WHOLE_POSITIONS, layout: current, parts });
    // The source state: the small kinds whole, as the newest layer has them; the held organizations' workspaces
    // (of a run, those it replaces).
    for (const kind of WHOLE_STATE) await run(`CREATE TABLE out.source_${kind} AS SELECT * FROM ${mergedState(layers.stack, kind)}`);
    for (const kind of Object.keys(WORKSPACE_STATE) as StateKind[]) {
      await run(`CREATE TABLE out.source_${kind} AS SELECT * FROM (SELECT * FROM ${mergedState(layers.stack, kind)} s WHERE s.organization IN (${nameList(whole)})${
        each((r, o) => `SELECT * FROM ${mergedState(r.over, kind)} s WHERE s.organization = ${sqlLiteral(o)}`)}) ORDER BY ALL`);
    }
    // Replaced: what the layers above the base replaced (deleted organizations' workspaces among them), and
    // every workspace of an organization held whole in the base, whose rows this layer now holds whole; of a
    // run, what the layers over its lowest one replaced of it.
    const workspaces = ident(workspaceColumn('workspaces')!);
    const replacedWhole = [keyList(whole), ...unOverlaid].join(', ');
    await run(`CREATE TABLE out.replaced_workspaces AS SELECT DISTINCT * FROM (
      ${layers.replacing.map((l) => `SELECT _org_key, organization, id FROM ${l}.replaced_workspaces${runs.length > 0 ? ` WHERE _org_key NOT IN (${keyList(runs)})` : ''} UNION ALL `).join('')
      }SELECT "_org_key", "_org" AS organization, ${workspaces} AS id FROM f_base."workspaces" WHERE "_org_key" IN (${replacedWhole})${
      each((r) => r.over.map((l) => `SELECT _org_key, organization, id FROM ${l}.replaced_workspaces WHERE _org_key = ${r.key}`).join(' UNION ALL '))}) ORDER BY ALL`);
    // Each run's rows of its lowest layer that it replaces, by position (delta-layout.ts hiddenTable), and what they come to.
    for (const o of runs) hidden[o] = { lowest: plan.runs[o]!, rows: {}, ranges: {}, positionsIn: 'whole' };
    const byKey = new Map(runs.map((o) => [runLayers[o]!.key, hidden[o]!]));
    const lowestRows = (view: string, select: (r: { lowest: string; key: number }) => string) =>
      (runs.length === 0 ? 'SELECT NULL::INTEGER AS _org_key, NULL::BIGINT AS pos WHERE false' : runs.map((o) => select(runLayers[o]!)).join(' UNION ALL '));
    for (const view of VIEW_NAMES) {
      const column = workspaceColumn(view);
      if (!column) continue;
      for (const h of byKey.values()) { h.rows[view] = 0; if (h.ranges) h.ranges[view] = []; }
      const list = `out.${ident(hiddenTable(view))}`;
      await run(`CREATE TABLE ${list} AS SELECT * FROM (${lowestRows(view, (r) => `SELECT b._org_key, b.${ident(POSITION_COLUMN)} AS pos FROM ${r.lowest}.${ident(view)} b
        SEMI JOIN (SELECT id FROM out.replaced_workspaces WHERE _org_key = ${r.key}) w ON w.id = b.${ident(column)} WHERE b._org_key = ${r.key}`)}) ORDER BY ALL`);
      if (runs.length > 0) await countHidden(all, list, view, byKey, keyList(runs));
    }
    // Checked: a wrong count is a wrong answer for some organization. A run's organization has its lowest
    // layer's rows less those the run replaces, and the run's.
    for (const view of VIEW_NAMES) {
      const lowest = workspaceColumn(view) && runs.length > 0
        ? Number((await all(`SELECT count(*) FROM (${lowestRows(view, (r) => `SELECT _org_key FROM ${r.lowest}.${ident(view)} WHERE _org_key = ${r.key}`)})`))[0]![0])
          - runs.reduce((a, o) => a + hidden[o]!.rows[view]!, 0)
        : 0;
      const expected = held.reduce((a, o) => a + (current.organizationRows?.[view]?.[o] ?? 0), 0);
      if (written[view]! + lowest !== expected) throw new Error(`compacting the layers of ${id}: ${view} has ${written[view]! + lowest} rows, not ${expected}`);
    }
    await run('CREATE TABLE out.held_organizations (name VARCHAR)');
    const appender = await db.createAppender('held_organizations', 'main', 'out');
    for (const name of held) { appender.appendVarchar(name); appender.endRow(); }
    appender.closeSync();
    await run('CHECKPOINT out');
    await run('DETACH out');
  });
  await opts.beforeSwitch?.();

  // The switch, under the writer lock: onto the snapshot current now, if it still builds on the layers read.
  const unlock = await acquireWriterLock(dataDir, 'compact-layers', { waitMs: 60_000 });
  try {
    const nowId = await readCurrentId(dataDir);
    const now = nowId === null ? null : await readManifest(dataDir, nowId).catch(() => null);
    const onto = now === null ? null : rebased(current, now);
    if (onto === null) {
      await fs.rm(tmp, { force: true });
      return null;
    }
    const ontoDir = snapshotPath(dataDir, onto.id);
    const file = wholeFile(current.sequence ?? 0);
    await fs.rename(tmp, join(ontoDir, file));
    const { delta, deltaOrganizations, deltaWorkspaces, major, majorId, majorOrganizations, usedBytes, ...rest } = onto;
    // The older delta the compacted snapshot read is in the whole layer; one folded since is kept, as is the newer delta.
    const keepMajor = onto.id !== id && major !== undefined && majorId !== current.majorId;
    const keepDelta = onto.id !== id && delta !== undefined;
    const kept: Partial<Manifest> = {
      ...(keepMajor ? { major, majorId, majorOrganizations } : {}),
      ...(keepDelta ? { delta, deltaOrganizations, deltaWorkspaces } : {}),
    };
    // The whole layer now holds the organizations the deltas held over an overlay copy: no overlay stays their
    // current copy, not even one a batch carried theirs into meanwhile (no batch writes whole an organization
    // a delta holds, so that copy is the one under the deltas). An organization of the old whole layer a batch
    // wrote into an overlay meanwhile reads that newer copy still, and so does one of a kept layer this
    // compaction rewrote, which is otherwise no one's current copy any more.
    const rewritten = new Set(plan.rewritten);
    // A run's lowest layer stays its current copy; a kept layer a run lay over is no longer the current copy of
    // an organization written whole now (a batch's overlay since is: it is newer).
    const wholeNow = new Set(whole);
    const overlays = (rest.overlays ?? []).map((o) => ({ ...o, organizations: Object.fromEntries(Object.entries(o.organizations)
      .filter(([org]) => plan.runs[org] === o.file || (!deltaHeld.has(org) && !(isWholeFile(o.file) && (rewritten.has(o.file) || wholeNow.has(org)))))) }));
    // The whole layer it leaves in place: the current copy of its organizations that no batch since wrote into an overlay.
    const ontoOverlaid = new Set(overlays.flatMap((o) => Object.keys(o.organizations)));
    const demoted = plan.demoted && { ...plan.demoted, organizations: Object.fromEntries(Object.entries(plan.demoted.organizations).filter(([org]) => !ontoOverlaid.has(org))) };
    const keptOverlays = [...(demoted ? [demoted] : []), ...overlays].filter((o) => Object.keys(o.organizations).length > 0);
    const sizes: Record<string, number> = { [onto.database!]: onto.sizes?.[onto.database!] ?? 0, [file]: (await fs.stat(join(ontoDir, file))).size };
    for (const name of [kept.major, kept.delta, ...keptOverlays.map((o) => o.file)]) if (name) sizes[name] = onto.sizes?.[name] ?? (await fs.stat(join(ontoDir, name))).size;
    const used = Object.fromEntries([kept.major, kept.delta].flatMap((name) => (name && usedBytes?.[name] !== undefined ? [[name, usedBytes[name]!]] : [])));
    const { wholeRuns: _, hidden: before, ...others } = rest;
    const manifest: Manifest = {
      ...others, ...kept, whole: file, wholeId: onto.id, wholeOrganizations: whole, ...(runs.length > 0 ? { wholeRuns: plan.runs } : {}),
      sizes, ...(Object.keys(used).length > 0 ? { usedBytes: used } : {}),
    };
    // A run's figures are this layer's, unless a delta kept from the batches since holds it: those figures
    // (found over the earlier layers) would not hold here, and until a batch touches it again a reader counts
    // its replaced rows itself.
    const keptHeld = new Set([...kept.majorOrganizations ?? [], ...kept.deltaOrganizations ?? []]);
    const figures = { ...Object.fromEntries(Object.entries(before ?? {}).filter(([o]) => !runs.includes(o))), ...Object.fromEntries(runs.filter((o) => !keptHeld.has(o)).map((o) => [o, hidden[o]!])) };
    if (Object.keys(figures).length > 0) manifest.hidden = figures;
    if (keptOverlays.length > 0) manifest.overlays = keptOverlays; else delete manifest.overlays;
    await writeManifest(dataDir, manifest);
    // The same id written again: servers notice CURRENT change and open the snapshot's new manifest.
    await writeCurrentId(dataDir, onto.id);
    // The replaced layers' links in its directory (other snapshots keep their own; servers their pins).
    const named = new Set(keptOverlays.map((o) => o.file));
    for (const name of [onto.whole, keepMajor ? undefined : major, keepDelta ? undefined : delta, ...overlays.map((o) => o.file)]) {
      if (name && name !== file && !named.has(name)) await fs.rm(join(ontoDir, name), { force: true });
    }
    const left = keptOverlays.filter((o) => isWholeFile(o.file)).reduce((a, o) => a + Object.keys(o.organizations).length, 0);
    return { id, organizations: held.length, kept: left, runs: runs.length, seconds: (performance.now() - started) / 1000, ...(onto.id !== id ? { rebasedOnto: onto.id } : {}) };
  } finally {
    await unlock();
  }
}

/**
 * What a compaction stopped after its switch left in the current snapshot's directory (the replaced layers'
 * links, or CURRENT not yet written again) is finished here: the files removed, CURRENT written again so that
 * servers open the manifest that names the whole layer.
 */
async function tidyCurrent(dataDir: string): Promise<void> {
  const unlock = await acquireWriterLock(dataDir, 'compact-layers', { waitMs: 60_000 });
  try {
    const id = await readCurrentId(dataDir);
    const manifest = id === null ? null : await readManifest(dataDir, id).catch(() => null);
    if (manifest === null || manifest.base === undefined) return;
    if ((await removeUnnamed(dataDir, manifest)).length > 0) await writeCurrentId(dataDir, manifest.id);
  } finally {
    await unlock();
  }
}

/**
 * The snapshot a whole layer compacted from `compacted` goes under: `now` itself, when it is `compacted` as it
 * was read or a later batch snapshot on the same base and whole layer (the batches since only stacked deltas);
 * else null.
 */
function rebased(compacted: Manifest, now: Manifest): Manifest | null {
  if (now.id === compacted.id) return JSON.stringify(now) === JSON.stringify(compacted) ? now : null;
  // A tidying unit since (tidy.ts) took organizations from the deltas, which the whole layer holds as they
  // were before it: not under it.
  if ((now.overlays ?? []).some((o) => isTidyFile(o.file) && !(compacted.overlays ?? []).some((c) => c.file === o.file))) return null;
  // A later snapshot of the same line: its batches continue the compacted one's.
  return continuesLine(compacted, now) ? now : null;
}
