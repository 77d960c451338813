// `explorer ingest <spool>`: follows a spool directory. Producers rename complete batches into incoming/;
// each is applied in name order (apply.ts) and moved to done/ once its snapshot is current, or to rejected/
// with a problems.txt. Exactly once across crashes: a batch the current snapshot already records (by name
// and digest) is only moved; one that was not applied yet is applied at the next start. The follower holds
// the data directory only while it applies a batch, so a load or an apply beside it takes its turn.
import { existsSync, watch, type FSWatcher } from 'node:fs';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { readCurrentId, readManifest, recordRejectedBatch } from '../snapshot-dir.js';
import { WriterBusyError } from '../writer-lock.js';
import { applyBatch, applyCoalesced, batchDigest, BatchRejectedError, COALESCED_BATCHES, NoSnapshotError, type ApplyOptions, type ApplyResult } from './apply.js';
import { compactLayers } from './whole-layer.js';
import { tidyUnit } from './tidy.js';
import { TIDY_UNIT_ROWS } from '../delta-layout.js';

export interface IngestOptions extends Omit<ApplyOptions, 'label' | 'arrivedAt' | 'skipApplied'> {
  /** Stops the follower after the batch it is applying, if any. */
  signal: AbortSignal;
  /** One JSON-ready record per batch applied or rejected, and per problem the follower waits out. */
  log: (level: 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown>) => void;
  /** How often incoming/ is listed besides the file system's notifications (which a shared file system may not send). */
  pollMs?: number;
  /**
   * After this long without a batch, the current snapshot's layers are compacted (whole-layer.ts). 0 or
   * absent: never.
   */
  compactIdleMs?: number;
  /**
   * Once the current snapshot's deltas hold this many bytes, its layers are compacted while batches go on
   * applying. 0 or absent: never.
   */
  compactBytes?: number;
  /**
   * After each batch (or batches applied together), one unit of the small organizations the deltas hold is
   * written whole into an overlay (tidy.ts): organizations of at most this many rows of workspaces and
   * resources, `tidyUnitRows` rows a unit. 0 or absent: never.
   */
  tidyRows?: number;
  tidyUnitRows?: number;
}

export const SPOOL_DIRS = ['incoming', 'done', 'rejected'] as const;

/** Moves `from` to `dir`/<its name>, or a free name beside it when a batch of that name is there already. */
async function moveInto(from: string, dir: string, name: string): Promise<string> {
  let to = join(dir, name);
  for (let n = 2; existsSync(to); n++) to = join(dir, `${name}.${n}`);
  await fs.rename(from, to);
  return to;
}

export async function runIngest(spool: string, opts: IngestOptions): Promise<void> {
  for (const d of SPOOL_DIRS) await fs.mkdir(join(spool, d), { recursive: true });
  const incoming = join(spool, 'incoming');
  let wake: (() => void) | undefined;
  const nudge = () => { wake?.(); };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(incoming, nudge);
  } catch { /* polling alone */ }
  opts.signal.addEventListener('abort', nudge);
  // Since when no batch has come, and whether the layers were compacted (or tried) since the last one.
  let idleSince = Date.now();
  let compacted = false;
  // The compaction running beside the batches, if any: batches never wait for it (whole-layer.ts rebases it).
  let compaction: Promise<void> | undefined;
  const compact = (why: 'idle' | 'deltas', threads: number | undefined) => {
    compacted = true;
    compaction = compactInBackground(opts, why, threads).finally(() => { compaction = undefined; nudge(); });
  };
  try {
    while (!opts.signal.aborted) {
      const waiting = (await fs.readdir(incoming, { withFileTypes: true })).filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name).sort();
      let stalled = false;
      for (let i = 0; i < waiting.length && !opts.signal.aborted;) {
        // Several waiting: as many as can share one snapshot are applied as one (coalesce.ts), so that a
        // follower that fell behind catches up in one build instead of one per batch.
        const together = waiting.length - i > 1 ? await ingestCoalesced(spool, waiting.slice(i), opts) : 0;
        if (together > 0) { i += together; continue; }
        if (!(await ingestOne(spool, waiting[i]!, opts))) { stalled = true; break; }
        i++;
      }
      if (opts.signal.aborted) break;
      if (waiting.length > 0 && !stalled) { idleSince = Date.now(); compacted = false; }
      // The deltas grew past their bound: compacted now, on one thread, while batches go on. Once per batch at
      // most: a compaction that failed is not started again until another batch has applied.
      if (!compaction && !stalled && !compacted && opts.compactBytes && (await deltaBytes(opts.dataDir)) >= opts.compactBytes) {
        compact('deltas', Math.max(1, (opts.threads ?? 2) - 1));
      }
      // Tidying costs the unit, not what the stream touched, so it runs after every batch instead of waiting for
      // idle time; not beside a compaction, which holds the deltas' organizations as they were when it began.
      if (waiting.length > 0 && !stalled && !compaction && opts.tidyRows) await tidy(opts);
      if (waiting.length > 0 && !stalled) continue; // more may have arrived meanwhile
      const compactIn = opts.compactIdleMs ? idleSince + opts.compactIdleMs - Date.now() : Infinity;
      if (!compaction && !stalled && !compacted && compactIn <= 0) {
        compact('idle', opts.threads);
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(stalled ? Math.max(opts.pollMs ?? 1000, 1000) : opts.pollMs ?? 1000, compacted || compaction ? Infinity : Math.max(compactIn, 0)));
        wake = () => { clearTimeout(timer); resolve(); };
      });
      wake = undefined;
    }
  } finally {
    // A stop interrupts the compaction (opts.signal), which leaves nothing behind.
    await compaction;
    watcher?.close();
    opts.signal.removeEventListener('abort', nudge);
  }
}

/** One tidying unit (tidy.ts), logged; never rejects: a unit that failed leaves the snapshot as it was. */
async function tidy(opts: IngestOptions): Promise<void> {
  try {
    const done = await tidyUnit(opts.dataDir, {
      maxRows: opts.tidyRows!, unitRows: opts.tidyUnitRows ?? TIDY_UNIT_ROWS, memoryLimit: opts.memoryLimit, signal: opts.signal, writerLock: opts.writerLock,
    });
    if (done) {
      opts.log('info', 'organizations tidied', {
        snapshot: done.id, organizations: done.organizations.length, carried: done.carried.length, rows: done.rows, seconds: round(done.seconds),
      });
    }
  } catch (e) {
    if (!opts.signal.aborted) opts.log('warn', 'organizations not tidied', { error: (e as Error).message });
  }
}

/** The bytes of the current snapshot's deltas (older and newer), from its manifest. */
async function deltaBytes(dataDir: string): Promise<number> {
  const id = await readCurrentId(dataDir);
  if (id === null) return 0;
  const m = await readManifest(dataDir, id).catch(() => null);
  return m ? [m.major, m.delta].reduce((a, name) => a + (name ? m.sizes?.[name] ?? 0 : 0), 0) : 0;
}

/** Compacts the current snapshot's layers (whole-layer.ts) and logs the outcome; never rejects. */
async function compactInBackground(opts: IngestOptions, why: 'idle' | 'deltas', threads: number | undefined): Promise<void> {
  try {
    const done = await compactLayers(opts.dataDir, { signal: opts.signal, memoryLimit: opts.memoryLimit, threads });
    if (done) {
      opts.log('info', 'layers compacted', {
        snapshot: done.rebasedOnto ?? done.id, ...(done.rebasedOnto ? { compacted: done.id } : {}), why, organizations: done.organizations, seconds: round(done.seconds),
      });
    }
  } catch (e) {
    if (opts.signal.aborted) return;
    opts.log('warn', 'layers not compacted', { why, error: (e as Error).message });
  }
}

/**
 * Applies the first of `names` (in incoming/) and as many after it as can share its snapshot; how many it
 * applied, 0 when fewer than two could (or it failed: the batches are then taken one by one).
 */
async function ingestCoalesced(spool: string, names: string[], opts: IngestOptions): Promise<number> {
  const paths = names.slice(0, COALESCED_BATCHES).map((n) => join(spool, 'incoming', n));
  const stats = await Promise.all(paths.map((p) => fs.stat(p).catch(() => null)));
  const present = stats.findIndex((s) => s === null);
  const count = present === -1 ? paths.length : present;
  if (count < 2) return 0;
  let done;
  try {
    done = await applyCoalesced(paths.slice(0, count), stats.slice(0, count).map((s) => new Date(s!.ctimeMs)), opts);
  } catch (e) {
    if (!(e instanceof NoSnapshotError || e instanceof WriterBusyError)) opts.log('warn', 'batches not coalesced; applied one by one', { batches: names.slice(0, count), error: (e as Error).message });
    return 0;
  }
  if (!done) return 0;
  const { result, applied } = done;
  for (const name of names.slice(0, applied)) await moveInto(join(spool, 'incoming', name), join(spool, 'done'), name);
  const m = result.manifest;
  const current = Date.parse(m.createdAt);
  const delays = m.batches!.slice(-applied).map((b) => round((current - Date.parse(b.arrivedAt)) / 1000));
  opts.log('info', 'batch applied', {
    batches: names.slice(0, applied), snapshot: m.id, upserted: result.batch.upserted, deleted: result.batch.deleted,
    seconds: round(result.seconds), phases: Object.fromEntries(Object.entries(result.phases).map(([k, v]) => [k, round(v)])),
    delay_seconds: Math.max(...delays), delays_seconds: delays,
  });
  return applied;
}

/** Applies one batch of incoming/; false when it must wait (no snapshot yet, another writer, a failure) and be tried again. */
async function ingestOne(spool: string, name: string, opts: IngestOptions): Promise<boolean> {
  const path = join(spool, 'incoming', name);
  const stat = await fs.stat(path).catch(() => null);
  if (!stat) return true; // moved away by hand meanwhile
  // The rename into incoming/ changed the directory's ctime: that is when the batch arrived.
  const arrivedAt = new Date(stat.ctimeMs);
  let result: ApplyResult;
  try {
    result = await applyBatch(path, { ...opts, arrivedAt, skipApplied: true });
  } catch (e) {
    if (e instanceof BatchRejectedError) {
      const text = `${e.errors.join('\n')}\n${e.errorCount > e.errors.length ? `… and ${e.errorCount - e.errors.length} more\n` : ''}`;
      await fs.writeFile(join(path, 'problems.txt'), text);
      await recordRejectedBatch(opts.dataDir, { name, digest: await batchDigest(path), problems: e.errorCount });
      const to = await moveInto(path, join(spool, 'rejected'), name);
      opts.log('warn', 'batch rejected', { batches: [name], problems: e.errorCount, first: e.errors.slice(0, 3), moved: to });
      return true;
    }
    if (e instanceof NoSnapshotError || e instanceof WriterBusyError) {
      opts.log('warn', 'batch waits', { batches: [name], reason: e.message });
      return false;
    }
    opts.log('error', 'batch not applied; tried again', { batches: [name], error: (e as Error).message });
    return false;
  }
  await moveInto(path, join(spool, 'done'), name);
  const m = result.manifest;
  if (result.alreadyApplied) {
    opts.log('info', 'batch already applied', { batches: [name], snapshot: m.id });
  } else {
    opts.log('info', 'batch applied', {
      batches: [name], snapshot: m.id, upserted: result.batch.upserted, deleted: result.batch.deleted,
      seconds: round(result.seconds), phases: Object.fromEntries(Object.entries(result.phases).map(([k, v]) => [k, round(v)])),
      delay_seconds: round((Date.parse(m.createdAt) - arrivedAt.getTime()) / 1000),
    });
  }
  return true;
}

const round = (n: number) => Math.round(n * 1000) / 1000;
