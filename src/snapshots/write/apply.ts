// `explorer apply <batch-dir>`: validate a change batch against the current snapshot, make the snapshot of
// the resulting source from the current one and the batch (its base's files shared, a new delta:
// delta-layout.ts), and make it current atomically, as a load does. Any failure leaves the current snapshot
// as it was.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import {
  BATCHES_RECORDED, DEFAULT_SNAPSHOT_KEEP, readAccess, DEFAULT_SNAPSHOT_KEEP_DAYS, fsyncPath, newSnapshotId, pruneSnapshots, readCurrentId, readManifest, snapshotPath, snapshotsDir,
  writeCurrentId, type AppliedBatch, type Manifest, type OverlayEntry,
} from '../snapshot-dir.js';
import { DELTA_FILE, type HiddenRows, isWholeFile, lowestFile, MAJOR_FILE, organizationSize, LIFT_ROWS, MAX_OVERLAYS, overlayFile, standingRuns, WHOLE_ROWS } from '../delta-layout.js';
import { acquireWriterLock, DEFAULT_WRITER_WAIT_MS, type LockOptions } from '../writer-lock.js';
import { deletionsFile, validateBatch, type SourceState } from './batch-validator.js';
import { layerPaths } from './build-steps.js';
import { buildDelta, type BatchCounts, type BuildStep, type DeltaInput } from './delta.js';
import type { WriterInstance } from './writer-instance.js';
import { DATABASE_FILE } from './load.js';
import { coalescible, overlayState, readBatch, writeCoalesced, type ReadBatch } from './coalesce.js';
import { openSnapshotState, type SnapshotState } from './snapshot-state.js';
import { SOURCE_FILES, sourceFiles, sourceLines } from './source-validator.js';

export class BatchRejectedError extends Error {
  constructor(readonly errors: string[], readonly errorCount: number) {
    super(`the batch has ${errorCount} problem${errorCount === 1 ? '' : 's'}`);
    this.name = 'BatchRejectedError';
  }
}

/** There is no snapshot a batch could apply to: `load` first. */
export class NoSnapshotError extends Error {
  constructor(why: string) {
    super(why);
    this.name = 'NoSnapshotError';
  }
}

export interface ApplyOptions {
  dataDir: string;
  keep?: number;
  keepDays?: number;
  writerLock?: LockOptions;
  /** The snapshot's label: else the batch directory's name. */
  label?: string;
  /** When the batch arrived (its arrival in a spool's incoming/); now unless given. */
  arrivedAt?: Date;
  /** A batch the current snapshot already includes (same name and digest) is not applied again. */
  skipApplied?: boolean;
  /** How many workspaces the newer delta may replace before a batch folds it into the older one. */
  foldWorkspaces?: number;
  /** A batch that upserts or deletes at least this many workspaces folds (FOLD_BATCH_WORKSPACES). */
  foldBatchWorkspaces?: number;
  /** A touched organization with at most this many rows of workspaces and resources is written whole (WHOLE_ROWS). */
  wholeRows?: number;
  /** A touched organization the older delta holds with at most this many rows moves whole into the newer delta (LIFT_ROWS). */
  liftRows?: number;
  /** Overlays a snapshot keeps before a batch's overlay takes in the smaller ones (MAX_OVERLAYS). */
  maxOverlays?: number;
  memoryLimit?: string;
  /** DuckDB threads of the batch's build and of its validation (BATCH_THREADS). */
  threads?: number;
  /** How the build reads the touched organizations' rows (delta.ts readTouched): its defaults unless given. */
  touchedRead?: DeltaInput['touchedRead'];
  /** The most runs of replaced positions the manifest records of an organization's view (HIDDEN_RANGES unless given). */
  hiddenRanges?: number;
  /** The instance the builds share (writer-instance.ts): a follower's; else each build opens its own. */
  writer?: WriterInstance;
}

/**
 * Workspaces the newer delta replaces before the next batch folds it into the older delta: this bounds the
 * newer delta every batch copies (as a file) and reads; a fold copies the older delta's file too, and changes
 * it, once per this many changed workspaces.
 */
export const FOLD_WORKSPACES = 5_000;

/**
 * A batch that upserts or deletes this many workspaces writes its delta as a fold, into the older delta. Such
 * a batch touches large organizations, whose grouped rows (each provider's, module's and version's list of
 * workspaces) it rebuilds whole: 113 MB of newer delta after a batch of 1,000 workspaces on the bench
 * snapshot, the largest organization's lists most of it. Left in the newer delta, every later batch, however
 * small, copied them again: a 10-workspace batch took 2.2–3.1 s instead of 0.7–0.9 s (docs/performance.md,
 * "Change batches under a steady stream").
 */
export const FOLD_BATCH_WORKSPACES = 500;

/**
 * A newer delta this large is folded by the next batch whatever it replaces (an organization's deletion
 * replaces all its workspaces through one line): each batch copies its file, and every touched page reads it.
 */
export const FOLD_BYTES = 64 * 2 ** 20;

/**
 * The overlays of `current` whose organizations the next batch's overlay takes in (MAX_OVERLAYS). Never a layer
 * a compaction wrote and a later one left in place (whole-layer.ts): those are compactions' to rewrite, and a
 * batch would copy hundreds of thousands of rows.
 */
export function overlaysToMerge(current: Manifest, maxOverlays = MAX_OVERLAYS): OverlayEntry[] {
  const overlays = current.overlays ?? [];
  if (overlays.length < maxOverlays) return [];
  const rows = (o: OverlayEntry) => Object.keys(o.organizations)
    .reduce((a, org) => a + organizationSize(current, org), 0);
  return overlays.filter((o) => !isWholeFile(o.file)).sort((a, b) => rows(a) - rows(b)).slice(0, Math.ceil(overlays.length / 2));
}

/** The workspaces a batch directory upserts or deletes: its workspace lines and its workspace deletions. */
async function workspaceLines(dir: string): Promise<number> {
  let n = 0;
  const files = sourceFiles(dir);
  if (files.workspaces) for await (const line of sourceLines(files.workspaces)) if (line.trim() !== '') n++;
  const deletions = deletionsFile(dir);
  if (deletions) for await (const line of sourceLines(deletions)) if (line.includes('"workspace"') || line.includes('"organization"')) n++;
  return n;
}

export interface ApplyResult {
  /** The new current snapshot's manifest; the current one's when the batch was already applied. */
  manifest: Manifest;
  alreadyApplied: boolean;
  batch: BatchCounts;
  seconds: number;
  /**
   * Seconds until validation ended and until the delta was built, each from the batch's start (the two run
   * side by side), then seconds spent switching (links, manifest, CURRENT).
   */
  phases: { validate: number; write: number; switch: number };
  /** Seconds of each step of the delta's build (delta.ts BUILD_STEPS); none when the batch was already applied. */
  steps: Partial<Record<BuildStep, number>>;
}

/** The files of a batch a digest covers: the source files and deletions, plain or gzipped. */
const BATCH_FILES = [...SOURCE_FILES, 'deletions'].flatMap((f) => [`${f}.ndjson`, `${f}.ndjson.gz`]);

/** sha256 over the names and contents of a batch's files, in name order. */
export async function batchDigest(dir: string): Promise<string> {
  const hash = createHash('sha256');
  for (const name of [...BATCH_FILES].sort()) {
    const content = await fs.readFile(join(dir, name)).catch((e: NodeJS.ErrnoException) => { if (e.code === 'ENOENT') return null; throw e; });
    if (content === null) continue;
    hash.update(`${name}\n${content.length}\n`);
    hash.update(content);
  }
  return hash.digest('hex');
}

export async function applyBatch(batchDir: string, opts: ApplyOptions): Promise<ApplyResult> {
  const started = performance.now();
  const dir = resolve(batchDir);
  const stat = await fs.stat(dir).catch(() => null);
  if (!stat?.isDirectory()) throw new BatchRejectedError([`${batchDir}: not a directory`], 1);
  const label = opts.label ?? basename(dir).slice(0, 255);
  const length = [...label].length;
  if (length < 1 || length > 255) throw new BatchRejectedError([`--label: must be 1 to 255 characters, not ${length}`], 1);
  const record: AppliedBatch = { name: basename(dir), digest: await batchDigest(dir), arrivedAt: (opts.arrivedAt ?? new Date()).toISOString() };
  const result = await applyLocked(opts, started, async (current) => {
    if (opts.skipApplied && current.batches?.some((b) => b.name === record.name && b.digest === record.digest)) return 'applied';
    return { dir, records: [record], label, source: dir };
  });
  return result!;
}

/** The batches waiting in a spool that the follower applies as one snapshot at most (coalesce.ts). */
export const COALESCED_BATCHES = 50;

/**
 * Applies the longest run of `batchDirs` (in order, arrived at `arrivedAt`) that can share one snapshot
 * (coalesce.ts): each valid after the ones before it, none deleting an organization, none applied yet.
 * Null when fewer than two can: the caller applies the first alone.
 */
export async function applyCoalesced(batchDirs: string[], arrivedAt: Date[], opts: ApplyOptions): Promise<{ result: ApplyResult; applied: number } | null> {
  const started = performance.now();
  const read = await Promise.all(batchDirs.slice(0, COALESCED_BATCHES).map((d) => readBatch(resolve(d))));
  const records: AppliedBatch[] = await Promise.all(read.map(async (b, i) => ({ name: basename(b.dir), digest: await batchDigest(b.dir), arrivedAt: arrivedAt[i]!.toISOString() })));
  let applied = 0;
  const result = await applyLocked(opts, started, async (current, sourceState, tmp) => {
    const state = await sourceState();
    if (records.some((r) => current.batches?.some((b) => b.name === r.name && b.digest === r.digest))) return null;
    const valid: ReadBatch[] = [];
    for (const batch of read) {
      if (!coalescible(batch) || (await validateBatch(batch.dir, overlayState(state, valid))).errorCount > 0) break;
      valid.push(batch);
    }
    if (valid.length < 2) return null;
    applied = valid.length;
    const dir = join(tmp, COALESCED_DIR);
    await writeCoalesced(valid, dir);
    return { dir, records: records.slice(0, valid.length), label: records[valid.length - 1]!.name.slice(0, 255), source: valid[valid.length - 1]!.dir };
  });
  return result ? { result, applied } : null;
}

/** Where a coalesced batch is written, inside the new snapshot's temporary directory (removed before it is renamed). */
const COALESCED_DIR = 'coalesced-batch';

/**
 * What `manifest` records of the rows the deltas replace in each organization's lowest layer (delta-layout.ts
 * HiddenRows): the batch's figures for the organizations it touched, the snapshot before's for the others the
 * deltas still hold, each only while its lowest layer is the one it was found in.
 */
function hiddenRowsOf(manifest: Manifest, before: Manifest['hidden'], found: Record<string, HiddenRows>, fold: boolean): Record<string, HiddenRows> {
  // The whole layer's runs (delta-layout.ts RUN_ROWS) hide rows of their lowest layer whether a delta holds them or not.
  const held = new Set([...manifest.deltaOrganizations ?? [], ...manifest.majorOrganizations ?? [], ...standingRuns(manifest)]);
  // The older delta a fold writes keeps the lists of the organizations it touched alone (delta.ts findHidden):
  // the figures it carries keep their counts and runs, not the list's place (the whole layer's stays).
  const carried = Object.fromEntries(Object.entries(before ?? {}).map(([org, h]) => {
    if (!fold || h.positionsIn === 'whole') return [org, h];
    const { positionsIn: _, ...rest } = h;
    return [org, rest];
  }));
  return Object.fromEntries(Object.entries({ ...carried, ...found })
    .filter(([org, h]) => held.has(org) && lowestFile(manifest, org) === h.lowest));
}

/** What a writer applies: the batch directory built from, the batches it stands for, the snapshot's label. */
interface Chosen { dir: string; records: AppliedBatch[]; label: string; /** The batch directory the manifest names (the last one's). */ source: string }

/**
 * Applies what `choose` picks once the writer lock is held and the current snapshot read: null (nothing
 * applied) or 'applied' (the current snapshot includes it already) are returned as they are.
 */
async function applyLocked(
  opts: ApplyOptions, started: number,
  choose: (current: Manifest, sourceState: () => Promise<SnapshotState>, tmp: string) => Promise<Chosen | 'applied' | null>,
): Promise<ApplyResult | null> {
  // The whole apply is one write: the batch is checked against the snapshot it applies to, and no other
  // writer makes another current meanwhile.
  const release = await acquireWriterLock(opts.dataDir, 'apply', opts.writerLock ?? { waitMs: DEFAULT_WRITER_WAIT_MS });
  const root = snapshotsDir(opts.dataDir);
  const tmp = join(root, `.tmp-${newSnapshotId()}`);
  // Opened only for batches coalesced, which are validated before the build: a batch alone is validated on the
  // build's own instance (delta.ts), which saved opening another and attaching the layers again (28–64 ms). A
  // follower reads it on the second instance its writer keeps (writer-instance.ts).
  let state: Promise<SnapshotState> | undefined;
  try {
    const currentId = await readCurrentId(opts.dataDir);
    if (currentId === null) throw new NoSnapshotError(`${opts.dataDir} has no current snapshot: load a source first (explorer load <dir>)`);
    const current = await readManifest(opts.dataDir, currentId);
    if (!current.sourceState || !current.database || current.compacted) {
      throw new NoSnapshotError(`the current snapshot ${currentId} does not store its source state (loaded by an older version): load a source again first`);
    }
    const currentDir = snapshotPath(opts.dataDir, currentId);
    const paths = layerPaths(currentDir, current);
    const sourceState = () => (state ??= opts.writer ? opts.writer.sourceState(paths) : openSnapshotState(paths, opts.threads));
    await fs.mkdir(tmp, { recursive: true });
    const chosen = await choose(current, sourceState, tmp);
    if (chosen === null) return null;
    if (chosen === 'applied') {
      return { manifest: current, alreadyApplied: true, batch: { upserted: {}, deleted: {} }, seconds: (performance.now() - started) / 1000, phases: { validate: 0, write: 0, switch: 0 }, steps: {} };
    }
    const { dir, records, label, source } = chosen;
    // The newer delta is folded into the older one once it replaces enough workspaces or grows large, and a
    // large batch writes its rows into the older delta at once: a batch's cost then follows what changed
    // since the fold, not since the load, and a small batch copies only what small batches wrote
    // (delta-layout.ts).
    const fold = (paths.minor !== null && ((current.deltaWorkspaces ?? 0) >= (opts.foldWorkspaces ?? FOLD_WORKSPACES) || (current.sizes?.[current.delta!] ?? 0) >= FOLD_BYTES))
      || (await workspaceLines(dir)) >= (opts.foldBatchWorkspaces ?? FOLD_BATCH_WORKSPACES);

    // Validation and the delta's build run side by side, as a load's do: the build writes only into a
    // directory that becomes a snapshot once validation has passed. A batch with problems is rejected with
    // validation's problems, whatever the build made of it, and its build is interrupted.
    const sequence = (current.sequence ?? 0) + 1;
    const merging = overlaysToMerge(current, opts.maxOverlays);
    const building = new AbortController();
    const validate = (s: SourceState) => {
      const v = (async () => {
        const found = await validateBatch(dir, s);
        if (found.errorCount > 0) building.abort();
        return { ...found, seconds: (performance.now() - started) / 1000 };
      })();
      v.catch(() => building.abort());
      return v;
    };
    // A batch alone is validated on the build's own instance, over the layers it attached; batches coalesced
    // were validated against the snapshot's source state already, which checks their union too.
    let validating = state ? state.then(validate) : undefined;
    await fs.mkdir(join(tmp, 'duckdb-tmp'), { recursive: true });
    const writing = (async () => {
      const access = await readAccess(opts.dataDir, currentId);
      const built = await buildDelta({
        batchDir: dir, current, currentAccess: access, layers: paths, fold,
        overlay: { path: join(tmp, overlayFile(sequence)), carried: Object.assign({}, ...merging.map((o) => o.organizations)), wholeRows: opts.wholeRows ?? WHOLE_ROWS },
        liftRows: opts.liftRows ?? LIFT_ROWS,
        outPath: join(tmp, fold ? MAJOR_FILE : DELTA_FILE), tempDir: join(tmp, 'duckdb-tmp'),
        memoryLimit: opts.memoryLimit, threads: opts.threads, signal: building.signal, touchedRead: opts.touchedRead, hiddenRanges: opts.hiddenRanges, writer: opts.writer,
        validate: validating ? undefined : (s) => (validating = validate(s)),
      });
      return { built, seconds: (performance.now() - started) / 1000 };
    })();
    const [written] = await Promise.allSettled([writing]);
    // No validation: the build failed before it had attached the layers validation reads.
    if (!validating) throw written.status === 'rejected' ? written.reason : new Error('the batch was not validated');
    const [validated] = await Promise.allSettled([validating]);
    if (validated.status === 'rejected') throw validated.reason;
    if (validated.value.errorCount > 0) throw new BatchRejectedError(validated.value.errors, validated.value.errorCount);
    if (written.status === 'rejected') throw written.reason;
    const delta = written.value.built;
    await fs.rm(join(tmp, 'duckdb-tmp'), { recursive: true, force: true });
    await fs.rm(join(tmp, COALESCED_DIR), { recursive: true, force: true });
    const built = performance.now();

    // The base's DuckDB file is shared, not copied: a hard link, which also keeps it when its own snapshot goes.
    await fs.link(paths.base, join(tmp, DATABASE_FILE));
    // So are the whole layer, and the older delta unless this batch wrote a new one.
    if (paths.whole) await fs.link(paths.whole, join(tmp, current.whole!));
    if (paths.major && !fold) await fs.link(paths.major, join(tmp, current.major!));
    const loadedAt = new Date();
    const id = newSnapshotId(loadedAt);
    // And the overlays that stay the current copy of an organization: every one of theirs that this batch's
    // overlay holds now is read from it.
    const merged = new Set(merging.map((o) => o.file));
    const overlays: OverlayEntry[] = (current.overlays ?? []).filter((o) => !merged.has(o.file))
      .map((o) => ({ ...o, organizations: Object.fromEntries(Object.entries(o.organizations).filter(([org]) => delta.overlaid[org] === undefined)) }))
      .filter((o) => Object.keys(o.organizations).length > 0);
    for (const o of overlays) await fs.link(join(currentDir, o.file), join(tmp, o.file));
    if (Object.keys(delta.overlaid).length > 0) overlays.push({ file: overlayFile(sequence), id, organizations: delta.overlaid });
    const layers: Partial<Manifest> = {
      ...(current.whole ? { whole: current.whole, wholeId: current.wholeId, wholeOrganizations: current.wholeOrganizations, ...(current.wholeRuns ? { wholeRuns: current.wholeRuns } : {}) } : {}),
      ...(fold
        ? { major: MAJOR_FILE, majorId: id, majorOrganizations: delta.held }
        : {
          // The older delta's organizations less those the newer delta took over whole: each reads one delta.
          ...(current.major ? { major: current.major, majorId: current.majorId, majorOrganizations: current.majorOrganizations?.filter((o) => !delta.lifted.includes(o)) } : {}),
          delta: DELTA_FILE, deltaOrganizations: delta.held, deltaWorkspaces: delta.replacedWorkspaces,
        }),
    };
    const sizes: Record<string, number> = { [DATABASE_FILE]: current.sizes?.[current.database] ?? (await fs.stat(paths.base)).size };
    for (const name of [layers.whole, layers.major, layers.delta, ...overlays.map((o) => o.file)]) if (name) sizes[name] = (await fs.stat(join(tmp, name))).size;
    // The new delta's bytes in use, and the older delta's as recorded when it was written.
    const usedBytes: Record<string, number> = { [fold ? MAJOR_FILE : DELTA_FILE]: delta.usedBytes };
    if (!fold && current.major && current.usedBytes?.[current.major] !== undefined) usedBytes[current.major] = current.usedBytes[current.major]!;
    const manifest: Manifest = {
      id,
      createdAt: loadedAt.toISOString(),
      label,
      source,
      counts: delta.counts,
      // The Parquet files are a loaded snapshot's portable form; a batch snapshot has none of its own.
      files: {},
      database: DATABASE_FILE,
      rows: delta.rows,
      organizationRows: delta.organizationRows,
      organizationKeys: delta.organizationKeys,
      rowJson: true,
      csvLines: current.csvLines,
      indexes: current.indexes,
      positions: current.positions,
      sourceState: true,
      ...(current.listMembers ? { listMembers: true } : {}),
      base: current.base ?? current.id,
      ...layers,
      ...(overlays.length > 0 ? { overlays } : {}),
      sequence,
      batches: [...(current.batches ?? []), ...records].slice(-BATCHES_RECORDED),
      changedOrganizations: delta.touched,
      sizes,
      usedBytes,
    };
    const settled = new Set(delta.settled);
    const hidden = hiddenRowsOf(manifest, Object.fromEntries(Object.entries(current.hidden ?? {}).filter(([o]) => !settled.has(o))), delta.hidden, fold);
    if (Object.keys(hidden).length > 0) manifest.hidden = hidden;
    await fs.writeFile(join(tmp, 'access.json'), JSON.stringify(delta.access));
    await fs.writeFile(join(tmp, 'manifest.json'), JSON.stringify(manifest, null, 2));
    const newFiles = [fold ? MAJOR_FILE : DELTA_FILE, ...(Object.keys(delta.overlaid).length > 0 ? [overlayFile(sequence)] : [])];
    for (const name of ['access.json', 'manifest.json', ...newFiles]) await fsyncPath(join(tmp, name));
    await fs.rename(tmp, snapshotPath(opts.dataDir, id));
    await fsyncPath(root);
    await writeCurrentId(opts.dataDir, id);
    const switched = performance.now();
    await pruneSnapshots(opts.dataDir, { keep: opts.keep ?? DEFAULT_SNAPSHOT_KEEP, keepDays: opts.keepDays ?? DEFAULT_SNAPSHOT_KEEP_DAYS });
    return {
      manifest, alreadyApplied: false, batch: delta.batch, seconds: (performance.now() - started) / 1000,
      phases: { validate: validated.value.seconds, write: written.value.seconds, switch: (switched - built) / 1000 },
      steps: delta.steps,
    };
  } finally {
    // Gone already when it became the snapshot; else what a failed or declined apply wrote.
    await fs.rm(tmp, { recursive: true, force: true });
    await state?.then((st) => st.close(), () => undefined);
    await release();
  }
}
