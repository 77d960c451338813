// Sample history (`explorer sample <dir> --days N`): N sources `<dir>/day-01` … that show one estate a
// day apart, so that snapshot history (trends, changes, time travel) has something to show.
//
// Day 1 is the plain sample, byte for byte, so a one-day series is the sample and nothing about the sample
// had to change. Each later day is derived from the day before rather than generated afresh: regenerating
// would redraw every workspace, while history needs most of them to stay exactly as they were. The files
// are streamed line by line (the resources file is hundreds of megabytes at scale); a line passes through
// untouched unless its workspace was picked for a change that day, and only such lines are parsed and
// re-serialized.
//
// Picks come from a hash of (seed, day, kind of change, workspace id), not from a PRNG stream, so they do not
// depend on the order lines are read in. A first, lighter pass over the workspace, provider and module
// files offers every eligible workspace to each kind of change, which keeps the ones with the smallest
// hashes, up to a quota set by the workspace count: every day then moves by about the same amount, where
// independent coin flips would leave a small estate with days on which nothing happens. Memory holds the
// day's picks, never a file.

import { once } from 'node:events';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SAMPLE_AS_OF_MS, sampleIdHeads, writeSample, type SampleFile, type SampleOptions } from './sample.js';

export interface SeriesOptions extends SampleOptions {
  /** Number of days (sources) to write, at least 1. */
  days: number;
  /** Share of the workspaces that changes each day, creations and deletions included (default 0.02). */
  changeShare?: number;
  /**
   * Called once each day is written, and awaited before the next: a caller may load the day and then remove
   * the one before it (each day is derived from the previous day's files only), so that a long series never
   * holds more than two days on disk.
   */
  onDay?: (day: DaySummary) => void | Promise<void>;
}

export interface DayChanges {
  created: number;
  deleted: number;
  engineUpgrades: number;
  providerUpgrades: number;
  moduleUpgrades: number;
  driftAppeared: number;
  driftCleared: number;
  /** Distinct workspaces created, deleted or changed since the day before. */
  workspaces: number;
}

export interface DaySummary {
  /** 1 for the first day. */
  day: number;
  /** The directory's name, e.g. `day-01`. */
  name: string;
  dir: string;
  /** Records per file, as in SampleSummary. */
  counts: Record<SampleFile, number>;
  /** What changed since the day before; null on day 1. */
  changes: DayChanges | null;
  seconds: number;
}

export const DEFAULT_CHANGE_SHARE = 0.02;
const DAY_MS = 86_400_000;
const AWS = 'registry.terraform.io/hashicorp/aws';
/** Longer names are not cloned: the clone's suffix must still fit in 255 characters. */
const MAX_TEMPLATE_NAME = 240;
const CHUNK_CHARS = 1 << 20;

/** The name of day `day` of `days`: two digits, more when `days` needs them, so names sort like days. */
export function dayName(day: number, days: number): string {
  return `day-${String(day).padStart(Math.max(2, String(days).length), '0')}`;
}

// Each kind's share of the day's changes. Upgrades outnumber the rest, as in a real estate; creations
// slightly outnumber deletions, so the estate grows a little.
const KINDS = ['engine', 'provider', 'module', 'driftAppear', 'driftClear', 'create', 'delete'] as const;
type Kind = (typeof KINDS)[number];
const WEIGHT: Record<Kind, number> = { engine: 5, provider: 4, module: 3, driftAppear: 2, driftClear: 2, create: 2.2, delete: 1.8 };
const WEIGHT_TOTAL = Object.values(WEIGHT).reduce((a, b) => a + b, 0);
const SALT: Record<Kind | 'quota' | 'time' | 'amount' | 'id', number> = {
  engine: 1, provider: 2, module: 3, driftAppear: 4, driftClear: 5, create: 6, delete: 7, quota: 8, time: 9, amount: 10, id: 11,
};

// ---------------------------------------------------------------------------------------------------------
// Hashing

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A well-mixed 32-bit hash of (seed, day, salt, key). */
function hash32(seed: number, day: number, salt: number, key: string): number {
  const s = Math.floor(seed);
  let h = fmix32((s >>> 0) ^ Math.imul(Math.floor(s / 4294967296) >>> 0, 0x27d4eb2d));
  h = fmix32(h ^ Math.imul(day, 0x9e3779b1));
  h = fmix32(h ^ Math.imul(salt, 0x85ebca77));
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return fmix32(h ^ key.length);
}

const unit = (h: number) => h / 4294967296;

const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Ten base-62 characters from two hashes: the random part of an id, as in the sample. */
function tail10(a: number, b: number): string {
  let s = '';
  for (let r of [a, b]) {
    for (let j = 0; j < 5; j++) {
      s += B62[r % 62];
      r = Math.floor(r / 62);
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------------------
// Versions

const RELEASE = /^\d+(\.\d+)*$/;
/** Numeric order of two plain releases (`1.10.5` > `1.9.8`); pre-releases and constraints never get here. */
function compareRelease(a: string, b: string): number {
  const x = a.split('.');
  const y = b.split('.');
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = Number(x[i] ?? 0) - Number(y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
const major = (v: string) => Number(v.split('.')[0]);
const isOlderRelease = (v: unknown, target: string): v is string => typeof v === 'string' && RELEASE.test(v) && compareRelease(v, target) < 0;

/**
 * What the upgrades roll out, taken from day 1: the newest engine release any workspace is configured
 * with, the newest AWS provider release (adopted by workspaces one major behind it), and the newest release
 * of every module source. Day 1 already holds a few early adopters of each, as a real estate would.
 */
interface Targets {
  engine: string | null;
  provider: { version: string; fromMajor: number } | null;
  modules: Map<string, string>;
}

async function findTargets(dir: string): Promise<Targets> {
  let engine: string | null = null;
  let aws: string | null = null;
  const modules = new Map<string, string>();
  const newer = (v: unknown, than: string | null | undefined): v is string =>
    typeof v === 'string' && RELEASE.test(v) && (than == null || compareRelease(v, than) > 0);
  await eachLine(join(dir, 'workspaces.ndjson'), (line) => {
    const v = (JSON.parse(line) as Row).engine_version;
    if (newer(v, engine)) engine = v;
  });
  await eachLine(join(dir, 'workspace_providers.ndjson'), (line) => {
    if (!line.includes(AWS)) return;
    const r = JSON.parse(line) as Row;
    if (r.source === AWS && newer(r.version, aws)) aws = r.version;
  });
  await eachLine(join(dir, 'workspace_modules.ndjson'), (line) => {
    const r = JSON.parse(line) as Row;
    if (typeof r.source === 'string' && newer(r.version, modules.get(r.source))) modules.set(r.source, r.version);
  });
  const provider = aws === null ? null : { version: aws, fromMajor: major(aws) - 1 };
  return { engine, provider, modules };
}

// ---------------------------------------------------------------------------------------------------------
// Files

type Row = Record<string, unknown>;

async function eachLine(path: string, each: (line: string) => void | Promise<void>): Promise<void> {
  const lines = createInterface({ input: createReadStream(path, { highWaterMark: 1 << 20 }), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.length === 0 || (line.charCodeAt(0) <= 32 && line.trim() === '')) continue;
    const pending = each(line);
    if (pending) await pending;
  }
}

class LineWriter {
  private buf = '';
  lines = 0;
  private error: Error | null = null;

  constructor(private readonly stream: WriteStream) {
    stream.on('error', (e) => { this.error = e; });
  }

  /** Adds a line (without its newline). */
  add(line: string): void {
    this.buf += `${line}\n`;
    this.lines++;
  }

  /** Writes the buffer once it is big enough; undefined (nothing to wait for) until then. */
  maybeFlush(): Promise<void> | undefined {
    return this.buf.length > CHUNK_CHARS ? this.flush() : undefined;
  }

  async flush(): Promise<void> {
    if (this.error) throw this.error;
    if (this.buf.length === 0) return;
    const ok = this.stream.write(this.buf);
    this.buf = '';
    if (!ok) await once(this.stream, 'drain');
  }

  destroy(): void {
    this.stream.destroy();
  }

  async close(): Promise<void> {
    await this.flush();
    await new Promise<void>((resolve, reject) => this.stream.end((e?: Error | null) => (e ? reject(e) : resolve())));
    if (this.error) throw this.error;
  }
}

/** Streams `from` into `to` through `each`, which adds any number of lines for each line read; returns the lines written. */
async function writeLines(from: string, to: string, each: (line: string, out: LineWriter) => void): Promise<number> {
  const out = new LineWriter(createWriteStream(to));
  try {
    await eachLine(from, (line) => {
      each(line, out);
      return out.maybeFlush();
    });
    await out.close();
  } catch (e) {
    out.destroy();
    throw e;
  }
  return out.lines;
}

/** The workspace a row belongs to; our own lines start with it, anything else is parsed. */
function rowWorkspace(line: string): string {
  const head = '{"workspace_id":"';
  if (line.startsWith(head)) return line.slice(head.length, line.indexOf('"', head.length));
  return String((JSON.parse(line) as Row).workspace_id);
}

function workspaceId(line: string): string {
  const head = '{"id":"';
  if (line.startsWith(head)) return line.slice(head.length, line.indexOf('"', head.length));
  return String((JSON.parse(line) as Row).id);
}

// ---------------------------------------------------------------------------------------------------------
// Picking the day's changes

/**
 * The `k` distinct ids offered with the smallest hashes, in that order; memory stays near 2k entries.
 * `k` may be 0: in a small estate a kind's daily quota is often below one workspace (planDay).
 */
class Lowest {
  private items: Array<{ h: number; id: string }> = [];
  private cutoff = Infinity;

  constructor(private readonly k: number) {}

  offer(h: number, id: string): void {
    if (this.k === 0 || h > this.cutoff) return;
    this.items.push({ h, id });
    if (this.items.length > 2 * this.k + 64) this.prune();
  }

  private prune(): void {
    this.items.sort((a, b) => a.h - b.h || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    this.items = this.items.filter((x, i, all) => i === 0 || x.id !== all[i - 1]!.id).slice(0, this.k);
    // Only a full list sets the cutoff; with k = 0 there is no k-th item (offer takes nothing then anyway).
    if (this.k > 0 && this.items.length === this.k) this.cutoff = this.items[this.k - 1]!.h;
  }

  ids(): string[] {
    this.prune();
    return this.items.map((x) => x.id);
  }
}

/** What happens to one existing workspace on one day. */
interface Change {
  /** When it happened (ms); later than anything of the day before. */
  at: number;
  engine: boolean;
  provider: boolean;
  module: boolean;
  driftAppear: boolean;
  driftClear: boolean;
  /** A new run applied the workspace (every change but drift): its id. */
  run: string | null;
}

/** A workspace created on this day as a copy of `template` (same organization, project and configuration). */
interface Clone {
  id: string;
  at: number;
  run: string;
  /** Set while its workspace line is written: whether it starts on the target engine. */
  engine: boolean;
  hasRun: boolean;
}

interface Plan {
  deleted: Set<string>;
  changes: Map<string, Change>;
  clones: Map<string, Clone>;
  counts: DayChanges;
}

/** Workspace and run counters past the sample's own, so that minted ids never repeat one (sampleIdHeads). */
interface Counters { workspace: number; run: number }

interface SeriesContext {
  seed: number;
  share: number;
  targets: Targets;
  counters: Counters;
  heads: ReturnType<typeof sampleIdHeads>;
}

async function planDay(prev: string, day: number, workspaces: number, ctx: SeriesContext): Promise<Plan> {
  const { seed, targets } = ctx;
  // Quotas are rounded up or down by a hash, and every kind happens at least once a day (when a workspace
  // can take it): a small estate's history then shows each kind of change every day, where its quotas
  // alone (300 workspaces: 0.7 creations a day) would leave days without a creation or a drift cleared.
  const quota = (kind: Kind) => {
    const exact = (workspaces * ctx.share * WEIGHT[kind]) / WEIGHT_TOTAL;
    return Math.max(ctx.share > 0 ? 1 : 0, Math.floor(exact) + (unit(hash32(seed, day, SALT.quota, kind)) < exact - Math.floor(exact) ? 1 : 0));
  };
  const pick = Object.fromEntries(KINDS.map((k) => [k, new Lowest(quota(k))])) as Record<Kind, Lowest>;
  const offer = (kind: Kind, id: string) => pick[kind].offer(hash32(seed, day, SALT[kind], id), id);

  await eachLine(join(prev, 'workspaces.ndjson'), (line) => {
    const w = JSON.parse(line) as Row;
    const id = String(w.id);
    offer('delete', id);
    if (typeof w.name === 'string' && w.name.length <= MAX_TEMPLATE_NAME) offer('create', id);
    if (targets.engine !== null && isOlderRelease(w.engine_version, targets.engine)) offer('engine', id);
    const drift = w.drift as Row | null | undefined;
    if (drift && typeof drift === 'object') offer(drift.drifted === true ? 'driftClear' : 'driftAppear', id);
  });
  const provider = targets.provider;
  if (provider) {
    await eachLine(join(prev, 'workspace_providers.ndjson'), (line) => {
      if (!line.includes(AWS)) return;
      const r = JSON.parse(line) as Row;
      if (r.source === AWS && typeof r.version === 'string' && RELEASE.test(r.version) && major(r.version) === provider.fromMajor) {
        offer('provider', String(r.workspace_id));
      }
    });
  }
  await eachLine(join(prev, 'workspace_modules.ndjson'), (line) => {
    const r = JSON.parse(line) as Row;
    const target = typeof r.source === 'string' ? targets.modules.get(r.source) : undefined;
    if (target !== undefined && isOlderRelease(r.version, target)) offer('module', String(r.workspace_id));
  });

  const dayStart = SAMPLE_AS_OF_MS + (day - 2) * DAY_MS;
  const at = (key: string) => dayStart + 1 + Math.floor(unit(hash32(seed, day, SALT.time, key)) * (DAY_MS - 1));
  const newRun = () => {
    const n = ctx.counters.run++;
    return `run-${ctx.heads.run(n)}${tail10(hash32(seed, day, SALT.id, `run ${n}`), hash32(seed, day, SALT.id, `run ${n} b`))}`;
  };

  const deleted = new Set(pick.delete.ids());
  const changes = new Map<string, Change>();
  const counts: DayChanges = { created: 0, deleted: deleted.size, engineUpgrades: 0, providerUpgrades: 0, moduleUpgrades: 0, driftAppeared: 0, driftCleared: 0, workspaces: 0 };
  const countKey = { engine: 'engineUpgrades', provider: 'providerUpgrades', module: 'moduleUpgrades', driftAppear: 'driftAppeared', driftClear: 'driftCleared' } as const;
  for (const kind of ['engine', 'provider', 'module', 'driftAppear', 'driftClear'] as const) {
    for (const id of pick[kind].ids()) {
      if (deleted.has(id)) continue;
      let c = changes.get(id);
      if (!c) changes.set(id, c = { at: at(id), engine: false, provider: false, module: false, driftAppear: false, driftClear: false, run: null });
      c[kind] = true;
      if (kind !== 'driftAppear' && kind !== 'driftClear' && c.run === null) c.run = newRun();
      counts[countKey[kind]]++;
    }
  }
  const clones = new Map<string, Clone>();
  for (const template of pick.create.ids()) {
    const n = ctx.counters.workspace++;
    const id = `ws-${ctx.heads.workspace(n)}${tail10(hash32(seed, day, SALT.id, `ws ${n}`), hash32(seed, day, SALT.id, `ws ${n} b`))}`;
    // Unique within the organization: no sample name has a `-dayN` suffix, and a template yields one clone a day.
    clones.set(template, { id, at: at(id), run: newRun(), engine: false, hasRun: false });
  }
  counts.created = clones.size;
  counts.workspaces = deleted.size + changes.size + clones.size;
  return { deleted, changes, clones, counts };
}

// ---------------------------------------------------------------------------------------------------------
// Writing a day

const iso = (ms: number) => new Date(ms).toISOString();

function changeWorkspace(w: Row, c: Change, targets: Targets, seed: number, day: number): void {
  w.updated_at = iso(c.at);
  if (c.engine && targets.engine !== null) {
    w.engine_version = targets.engine;
    w.state_version_engine_version = targets.engine;
  }
  if (c.run !== null) w.current_run = { id: c.run, status: 'applied', applied_at: iso(c.at) };
  const drift = w.drift as Row | undefined;
  if (drift && c.driftAppear) {
    const n = 1 + Math.floor(unit(hash32(seed, day, SALT.amount, String(w.id))) * 5);
    drift.drifted = true;
    drift.resources_drifted = n;
    if (typeof drift.resources_undrifted === 'number') drift.resources_undrifted = Math.max(0, drift.resources_undrifted - n);
  } else if (drift && c.driftClear) {
    drift.drifted = false;
    if (typeof drift.resources_undrifted === 'number') drift.resources_undrifted += Number(drift.resources_drifted ?? 0);
    drift.resources_drifted = 0;
  }
}

function cloneWorkspace(template: Row, clone: Clone, targets: Targets, day: number): Row {
  const w: Row = { ...template, id: clone.id, name: `${String(template.name)}-day${day}`, created_at: iso(clone.at), updated_at: iso(clone.at) };
  // New workspaces start on the engine being rolled out.
  if (targets.engine !== null && isOlderRelease(w.engine_version, targets.engine)) {
    w.engine_version = targets.engine;
    if (w.state_version_engine_version != null) w.state_version_engine_version = targets.engine;
    clone.engine = true;
  }
  clone.hasRun = w.current_run != null;
  if (clone.hasRun) w.current_run = { id: clone.run, status: 'applied', applied_at: iso(clone.at) };
  if (w.drift != null) w.drift = { drifted: false, resources_drifted: 0, resources_undrifted: w.resource_count ?? 0 };
  return w;
}

function upgradeProvider(r: Row, targets: Targets): void {
  const p = targets.provider;
  if (p && r.source === AWS && typeof r.version === 'string' && RELEASE.test(r.version) && major(r.version) === p.fromMajor) r.version = p.version;
}

function upgradeModule(r: Row, targets: Targets): void {
  const target = typeof r.source === 'string' ? targets.modules.get(r.source) : undefined;
  if (target !== undefined && isOlderRelease(r.version, target)) r.version = target;
}

/** Streams one per-workspace file: drops deleted workspaces' rows, rewrites changed ones, adds clones' rows. */
async function transformRows(
  from: string, to: string, plan: Plan,
  change: (r: Row, c: Change) => void, clone: (r: Row, c: Clone) => void,
): Promise<number> {
  const { deleted, changes, clones } = plan;
  return writeLines(from, to, (line, out) => {
    const ws = rowWorkspace(line);
    const c = changes.get(ws);
    if (c) {
      const r = JSON.parse(line) as Row;
      change(r, c);
      out.add(JSON.stringify(r));
    } else if (!deleted.has(ws)) out.add(line);
    const k = clones.get(ws);
    if (k) {
      const r = JSON.parse(line) as Row;
      r.workspace_id = k.id;
      clone(r, k);
      out.add(JSON.stringify(r));
    }
  });
}

async function writeDay(prev: string, dir: string, day: number, prevCounts: Record<SampleFile, number>, ctx: SeriesContext): Promise<{ counts: Record<SampleFile, number>; changes: DayChanges }> {
  const plan = await planDay(prev, day, prevCounts.workspaces, ctx);
  const { targets, seed } = ctx;
  await mkdir(dir, { recursive: true });
  const counts = { ...prevCounts };
  for (const f of ['organizations', 'projects', 'teams', 'team_members'] as const) await copyFile(join(prev, `${f}.ndjson`), join(dir, `${f}.ndjson`));

  counts.workspaces = await writeLines(join(prev, 'workspaces.ndjson'), join(dir, 'workspaces.ndjson'), (line, out) => {
    const id = workspaceId(line);
    const c = plan.changes.get(id);
    if (c) {
      const w = JSON.parse(line) as Row;
      changeWorkspace(w, c, targets, seed, day);
      out.add(JSON.stringify(w));
    } else if (!plan.deleted.has(id)) out.add(line);
    const k = plan.clones.get(id);
    if (k) out.add(JSON.stringify(cloneWorkspace(JSON.parse(line) as Row, k, targets, day)));
  });

  const file = (f: SampleFile) => [join(prev, `${f}.ndjson`), join(dir, `${f}.ndjson`)] as const;
  counts.workspace_providers = await transformRows(...file('workspace_providers'), plan,
    (r, c) => { if (c.provider) upgradeProvider(r, targets); },
    (r) => upgradeProvider(r, targets));
  counts.workspace_modules = await transformRows(...file('workspace_modules'), plan,
    (r, c) => { if (c.module) upgradeModule(r, targets); },
    (r) => upgradeModule(r, targets));
  // A run rewrites the whole state: every resource now names it, and an engine upgrade wrote them all.
  counts.workspace_resources = await transformRows(...file('workspace_resources'), plan,
    (r, c) => {
      if (c.run === null) return;
      r.run_id = c.run;
      r.state_updated_at = iso(c.at);
      if (c.engine && targets.engine !== null) r.engine_version = targets.engine;
    },
    (r, k) => {
      if (k.hasRun) r.run_id = k.run;
      r.state_updated_at = iso(k.at);
      if (k.engine && r.engine_version != null) r.engine_version = targets.engine;
    });
  return { counts, changes: plan.counts };
}

// ---------------------------------------------------------------------------------------------------------

export async function writeSampleSeries(dir: string, opts: SeriesOptions): Promise<DaySummary[]> {
  const { days, changeShare = DEFAULT_CHANGE_SHARE, onDay, ...sampleOptions } = opts;
  if (!Number.isSafeInteger(days) || days < 1) throw new RangeError(`sample option days must be an integer >= 1, got ${String(days)}`);
  if (typeof changeShare !== 'number' || !(changeShare >= 0 && changeShare <= 1)) {
    throw new RangeError(`sample option changeShare must be between 0 and 1, got ${String(changeShare)}`);
  }
  // Each day is derived from the plain files of the day before.
  if (sampleOptions.gzip) throw new RangeError('a sample series is written as plain files, not gzip');
  const summaries: DaySummary[] = [];
  const done = async (s: DaySummary) => { summaries.push(s); await onDay?.(s); };

  let started = performance.now();
  const first = join(dir, dayName(1, days));
  const sample = await writeSample(first, sampleOptions);
  await done({ day: 1, name: dayName(1, days), dir: first, counts: sample.counts, changes: null, seconds: (performance.now() - started) / 1000 });
  if (days === 1) return summaries;

  const ctx: SeriesContext = {
    seed: opts.seed,
    share: changeShare,
    targets: await findTargets(first),
    // The sample numbers workspaces and their runs 0 … workspaces − 1.
    counters: { workspace: opts.workspaces, run: opts.workspaces },
    heads: sampleIdHeads(opts.seed),
  };
  let prev = summaries[0]!;
  for (let day = 2; day <= days; day++) {
    started = performance.now();
    const name = dayName(day, days);
    const out = join(dir, name);
    const { counts, changes } = await writeDay(prev.dir, out, day, prev.counts, ctx);
    prev = { day, name, dir: out, counts, changes, seconds: (performance.now() - started) / 1000 };
    await done(prev);
  }
  return summaries;
}

