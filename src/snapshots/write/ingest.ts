// `explorer ingest <spool>`: follows a spool directory. Producers rename complete batches into incoming/;
// each is applied in name order (apply.ts) and moved to done/ once its snapshot is current, or to rejected/
// with a problems.txt. Exactly once across crashes: a batch the current snapshot already records (by name
// and digest) is only moved; one that was not applied yet is applied at the next start. The follower holds
// the data directory only while it applies a batch, so a load or an apply beside it takes its turn.
import { existsSync, watch, type FSWatcher } from 'node:fs';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { readCurrentId, readManifest, recordRejectedBatch, type Manifest } from '../snapshot-dir.js';
import { WriterBusyError } from '../writer-lock.js';
import { applyBatch, applyCoalesced, batchDigest, BatchRejectedError, COALESCED_BATCHES, NoSnapshotError, type ApplyOptions, type ApplyResult } from './apply.js';
import { compactLayers } from './whole-layer.js';
import { tidyCandidates } from './tidy.js';
import { spentBy, tidyInProcess } from './tidy-process.js';
import { CpuBudget } from './cpu-budget.js';
import { WriterInstance } from './writer-instance.js';
import { readScores } from '../../metrics/organization-reads.js';
import { COALESCE_MAX_MS, TIDY_CPU, tidyFile, TIDY_UNIT_ROWS } from '../delta-layout.js';

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
   * Units of the small organizations the deltas hold are written whole into an overlay (tidy.ts), the
   * most-read first: organizations of at most this many rows of workspaces and resources, `tidyUnitRows` rows
   * a unit, after batches and while none come, within `tidyCpu` of a core on average (TIDY_CPU). 0 or absent:
   * never.
   */
  tidyRows?: number;
  /** Organizations of any size are tidied too once the deltas replace this share of their workspaces (TIDY_SHARE). */
  tidyShare?: number;
  tidyUnitRows?: number;
  tidyCpu?: number;
  /**
   * The longest a lone batch waits for others to share its snapshot when more organizations are in debt than
   * tidying keeps up with (coalesceDelayMs; COALESCE_MAX_MS). Only with tidying on.
   */
  coalesceMaxMs?: number;
  /** Organizations in debt a lone batch lets be before it waits (DEBT_ORGANIZATIONS). */
  debtOrganizations?: number;
}

/** The CPU-seconds tidying may save up for a burst (CpuBudget). */
export const TIDY_BURST_SECONDS = 10;
/** Organizations in debt (tidyCandidates) the follower lets be before a lone batch waits for company. */
export const DEBT_ORGANIZATIONS = 100;

/**
 * How long a lone batch waits for others before it is applied, by how many organizations are in debt
 * (`debt`, tidyCandidates): none up to `grace`, then growing with the excess up to `maxMs` at twice `grace`.
 * A graded delay, never a stall: batches that arrive meanwhile share one snapshot (coalesce.ts), which costs
 * the follower one build instead of several and leaves the CPU to the pages and to tidying.
 */
export function coalesceDelayMs(debt: number, grace = DEBT_ORGANIZATIONS, maxMs = COALESCE_MAX_MS): number {
  if (debt <= grace || maxMs <= 0) return 0;
  return Math.min(maxMs, Math.round((maxMs * (debt - grace)) / Math.max(1, grace)));
}

export const SPOOL_DIRS = ['incoming', 'done', 'rejected'] as const;

/** Moves `from` to `dir`/<its name>, or a free name beside it when a batch of that name is there already. */
async function moveInto(from: string, dir: string, name: string): Promise<string> {
  let to = join(dir, name);
  for (let n = 2; existsSync(to); n++) to = join(dir, `${name}.${n}`);
  await fs.rename(from, to);
  return to;
}

export async function runIngest(spool: string, options: IngestOptions): Promise<void> {
  // One instance for the follower's builds, kept from batch to batch (writer-instance.ts).
  const owned = options.writer ? null : new WriterInstance({ dataDir: options.dataDir, threads: options.threads, memoryLimit: options.memoryLimit });
  const opts: IngestOptions = { ...options, writer: options.writer ?? owned! };
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
  // The tidying unit running beside the batches, if any: batches never wait for it (tidy.ts rebases it).
  let tidying: Promise<void> | undefined;
  const budget = new CpuBudget(opts.tidyCpu ?? TIDY_CPU, TIDY_BURST_SECONDS, Date.now());
  // A wait that a new batch (the watcher), a stop or a finished compaction cuts short.
  const pause = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    wake = () => { clearTimeout(timer); resolve(); };
  }).finally(() => { wake = undefined; });
  const compact = (why: 'idle' | 'deltas', threads: number) => {
    compacted = true;
    compaction = compactInBackground(opts, why, threads).finally(() => { compaction = undefined; nudge(); });
  };
  try {
    while (!opts.signal.aborted) {
      const waiting = (await fs.readdir(incoming, { withFileTypes: true })).filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name).sort();
      let stalled = false;
      for (let i = 0; i < waiting.length && !opts.signal.aborted;) {
        // A lone batch, with more organizations in debt than tidying keeps up with: it waits a little for
        // others to share its snapshot (coalesceDelayMs), then the list is read again.
        if (waiting.length - i === 1 && tidies(opts)) {
          const hold = await holdMs(spool, waiting[i]!, opts);
          if (hold > 0) {
            await pause(Math.min(hold, opts.pollMs ?? 1000));
            break;
          }
        }
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
      if (!compaction && !tidying && !stalled && !compacted && opts.compactBytes && (await deltaBytes(opts.dataDir)) >= opts.compactBytes) {
        compact('deltas', 1);
      }
      // Tidying costs the unit, not what the stream touched, so it runs beside the batches as well as while none
      // come, within its share of a core; not beside a compaction, which holds the deltas' organizations as they
      // were when it began.
      if (!stalled && !compaction && !tidying && tidies(opts) && budget.available(Date.now()) > 0) {
        tidying = tidy(opts, budget).finally(() => { tidying = undefined; nudge(); });
      }
      if (waiting.length > 0 && !stalled) continue; // more may have arrived meanwhile
      const compactIn = opts.compactIdleMs ? idleSince + opts.compactIdleMs - Date.now() : Infinity;
      if (!compaction && !tidying && !stalled && !compacted && compactIn <= 0) {
        compact('idle', 2);
        continue;
      }
      await pause(Math.min(stalled ? Math.max(opts.pollMs ?? 1000, 1000) : opts.pollMs ?? 1000, compacted || compaction ? Infinity : Math.max(compactIn, 0)));
    }
  } finally {
    // A stop interrupts the compaction (opts.signal), which leaves nothing behind.
    await compaction;
    await tidying;
    watcher?.close();
    opts.signal.removeEventListener('abort', nudge);
    await owned?.close();
  }
}

/** The current snapshot's manifest, or null when there is none (or it cannot be read right now). */
async function currentManifest(dataDir: string): Promise<Manifest | null> {
  const id = await readCurrentId(dataDir);
  return id === null ? null : readManifest(dataDir, id).catch(() => null);
}

/** How much longer the lone batch `name` waits for company (coalesceDelayMs, from its arrival); 0: apply it now. */
async function holdMs(spool: string, name: string, opts: IngestOptions): Promise<number> {
  const m = await currentManifest(opts.dataDir);
  const stat = await fs.stat(join(spool, 'incoming', name)).catch(() => null);
  if (!m || !stat) return 0;
  const delay = coalesceDelayMs(inDebt(m, opts).length, opts.debtOrganizations ?? DEBT_ORGANIZATIONS, opts.coalesceMaxMs ?? COALESCE_MAX_MS);
  return Math.max(0, stat.ctimeMs + delay - Date.now());
}

/** Whether the follower tidies at all. */
const tidies = (opts: IngestOptions) => (opts.tidyRows ?? 0) > 0 || (opts.tidyShare ?? 0) > 0;

/** The organizations of `m` in debt, as the follower's options say (tidy.ts tidyCandidates). */
const inDebt = (m: Manifest, opts: IngestOptions) => tidyCandidates(m, opts.tidyRows ?? 0, {}, opts.tidyShare ?? 0);

/**
 * One tidying unit (tidy.ts) when an organization is in debt, the most-read first (organization-reads.ts), in a
 * process of its own at the lowest priority (tidy-process.ts), so that it yields the CPU to the batches; charged
 * to the budget the CPU that process spent; logged. Never rejects: a unit that failed leaves the snapshot as it
 * was.
 */
async function tidy(opts: IngestOptions, budget: CpuBudget): Promise<void> {
  try {
    const m = await currentManifest(opts.dataDir);
    // Nothing in debt, or the snapshot has its unit already (one a snapshot, tidy.ts): no process started for nothing.
    if (!m || inDebt(m, opts).length === 0 || (m.overlays ?? []).some((o) => o.file === tidyFile(m.sequence ?? 0))) return;
    const reads = await readScores(opts.dataDir);
    let outcome;
    try {
      outcome = await tidyInProcess({
        dataDir: opts.dataDir, maxRows: opts.tidyRows ?? 0, replacedShare: opts.tidyShare ?? 0, unitRows: opts.tidyUnitRows ?? TIDY_UNIT_ROWS, reads,
        memoryLimit: opts.memoryLimit, waitMs: opts.writerLock?.waitMs, threads: 1,
      }, opts.signal);
    } catch (e) {
      budget.spend(spentBy(e) ?? 0, Date.now());
      throw e;
    }
    budget.spend(outcome.cpuSeconds, Date.now());
    const done = outcome.result;
    if (done) {
      opts.log('info', 'organizations tidied', {
        snapshot: done.rebasedOnto ?? done.id, ...(done.rebasedOnto ? { tidied: done.id } : {}),
        organizations: done.organizations.length, carried: done.carried.length, rows: done.rows, seconds: round(done.seconds),
        cpu_seconds: round(outcome.cpuSeconds), nice: outcome.nice, most_read: done.organizations.filter((o) => (reads[o] ?? 0) > 0).length,
      });
    }
  } catch (e) {
    if (!opts.signal.aborted) opts.log('warn', 'organizations not tidied', { error: (e as Error).message });
  }
}

/**
 * The bytes of the current snapshot's deltas (older and newer) in use, from its manifest: the rows they hold,
 * not the free blocks of a file changed in place, which later writes reuse.
 */
async function deltaBytes(dataDir: string): Promise<number> {
  const m = await currentManifest(dataDir);
  return m ? [m.major, m.delta].reduce((a, name) => a + (name ? m.usedBytes?.[name] ?? m.sizes?.[name] ?? 0 : 0), 0) : 0;
}

/** Compacts the current snapshot's layers (whole-layer.ts) and logs the outcome; never rejects. */
async function compactInBackground(opts: IngestOptions, why: 'idle' | 'deltas', threads: number): Promise<void> {
  try {
    const done = await compactLayers(opts.dataDir, {
      signal: opts.signal, memoryLimit: opts.memoryLimit, threads,
      // Logged as it starts too: beside a stream it takes minutes, over which the batches' own cost changes.
      onStart: (snapshot, organizations) => opts.log('info', 'compacting layers', { snapshot, why, organizations, threads }),
    });
    if (done) {
      opts.log('info', 'layers compacted', {
        snapshot: done.rebasedOnto ?? done.id, ...(done.rebasedOnto ? { compacted: done.id } : {}), why, organizations: done.organizations, kept: done.kept, runs: done.runs, seconds: round(done.seconds),
      });
    }
  } catch (e) {
    if (opts.signal.aborted) return;
    // The batches held the writer lock all the while it waited: they come first, and the deltas that
    // triggered it trigger it again after the next batch. Not a fault, so not a warning.
    if (e instanceof WriterBusyError) opts.log('info', 'compaction deferred', { why, error: e.message });
    else opts.log('warn', 'layers not compacted', { why, error: (e as Error).message });
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
    batches: names.slice(0, applied), ...appliedFields(result), delay_seconds: Math.max(...delays), delays_seconds: delays,
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
      batches: [name], ...appliedFields(result), delay_seconds: round((Date.parse(m.createdAt) - arrivedAt.getTime()) / 1000),
    });
  }
  return true;
}

const round = (n: number) => Math.round(n * 1000) / 1000;
const rounded = (r: Partial<Record<string, number>>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, round(v!)]));

/** What a 'batch applied' line says of the snapshot: counts, seconds, each phase's and each build step's seconds. */
const appliedFields = (result: ApplyResult) => ({
  snapshot: result.manifest.id, upserted: result.batch.upserted, deleted: result.batch.deleted,
  seconds: round(result.seconds), phases: rounded(result.phases), steps: rounded(result.steps),
});
