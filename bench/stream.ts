// make bench-stream: the steady stream of change batches (docs/changes.md §6) on the bench snapshot of `make
// bench` ($BENCH_DIR, loaded first if absent), as a platform sends them while the server serves at full load.
//
// The stream: `ingest` gets one batch every 5 s for STREAM_MINUTES (20), whether or not the one before is
// applied; nine of each ten touch 10 workspaces of 50 small organizations, the tenth 1,000 workspaces of 100
// organizations, the largest among them. The load, all along: 16 connections of small-organization pages
// (B's request, every one distinct: 8 on the 50 organizations the small batches touch, 8 on 50 that no batch
// touches) and the largest organization's A page on 1 connection. The same load runs first for
// STREAM_BEFORE_SECONDS (120) with no stream: the figures the stream's are compared with.
//
// S1, S2  each size's delay from arrival in incoming/ to current (the follower's own figure; a server notices
//         a new CURRENT through inotify within milliseconds), p95; batches lost
// S3      each size's p95 delay in the last 5 minutes ÷ the first 5; batches still waiting when the stream ends
// S4      from the third minute, minute by minute: A p50 and touched organizations' throughput vs before;
//         small-organization throughput over the stream vs before
// S5      the data directory (`snapshots/`, hard links once; the spool is outside it) every 5 s vs before
// Every scenario runs on a copy of the bench data directory whose snapshot files are hard links.
// Environment: BENCH_DIR (default $DATA_DIR/bench), STREAM_MINUTES (20), STREAM_BEFORE_SECONDS (120).
import autocannon from 'autocannon';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { issueToken } from '../src/access/tokens.js';
import { loadConfig } from '../src/config.js';
import { writeSampleChanges } from '../src/sample/sample-changes.js';
import { readCurrentId, snapshotPath } from '../src/snapshots/snapshot-dir.js';
import { openStateStore } from '../src/store/open-store.js';
import { A_QUERY, benchSnapshot, CLI, cpuSeconds, followerLog, linkedCopy, percentile, ROOT, startServerProcess, stopServerProcess } from './lib.js';

const DATA_DIR = process.env.DATA_DIR ?? join(ROOT, 'data');
const BENCH_DIR = process.env.BENCH_DIR ?? join(DATA_DIR, 'bench');
const SOURCE = join(BENCH_DIR, 'source');
const MINUTES = Number(process.env.STREAM_MINUTES ?? 20);
const BEFORE_SECONDS = Number(process.env.STREAM_BEFORE_SECONDS ?? 120);
const EVERY_MS = 5000;
const WORK = join(BENCH_DIR, 'stream');
const SPOOL = join(BENCH_DIR, 'stream-spool');
const log = (m: string) => console.error(`[bench-stream] ${m}`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const kb = (path: string) => Number(execFileSync('du', ['-sk', path]).toString().split('\t')[0]);

/** Requests answered in a window of the run, by kind of load: A's latencies, B's counts per group. */
interface Window { a: number[]; touched: number; untouched: number; errors: number; seconds: number }
const windowOf = (seconds: number): Window => ({ a: [], touched: 0, untouched: 0, errors: 0, seconds });

async function main(): Promise<void> {
  const { baseId, orgs } = await benchSnapshot(BENCH_DIR, log);
  const small = orgs.filter((o) => o.workspaces <= 500);
  // Three groups of small organizations that never overlap: the small batches', the untouched ones, and the
  // large batches' (with the largest organization).
  const streamed = small.slice(0, 50).map((o) => o.name);
  const untouched = small.slice(50, 100).map((o) => o.name);
  const largeOrgs = new Set([orgs[0]!.name, ...small.slice(100, 199).map((o) => o.name)]);
  const total = MINUTES * 60_000 / EVERY_MS;
  // Every tenth batch is a large one (the order below).
  const largeCount = Math.floor(total / 10);
  const smallCount = total - largeCount;
  const batches = join(BENCH_DIR, 'batches', `stream-${total}`);
  if (!existsSync(join(batches, '.complete'))) {
    log(`writing ${total} stream batches from the bench source`);
    rmSync(batches, { recursive: true, force: true });
    await writeSampleChanges(SOURCE, join(batches, 'small'), { batches: smallCount, workspaces: 10, seed: 31, organizations: new Set(streamed) });
    await writeSampleChanges(SOURCE, join(batches, 'large'), { batches: largeCount, workspaces: 1000, seed: 32, organizations: largeOrgs });
    writeFileSync(join(batches, '.complete'), '');
  }
  // The order of arrival: every tenth batch a large one.
  const order: { dir: string; size: 'small' | 'large'; name: string }[] = [];
  for (let i = 0, s = 0, l = 0; i < total; i++) {
    const large = i % 10 === 9;
    const n = String(large ? ++l : ++s).padStart(4, '0');
    order.push({ dir: join(batches, large ? 'large' : 'small', `batch-${n}`), size: large ? 'large' : 'small', name: `${String(i + 1).padStart(4, '0')}-${large ? 'large' : 'small'}-${n}` });
  }

  linkedCopy(BENCH_DIR, WORK, baseId);
  const store = await openStateStore(loadConfig({ DATA_DIR: WORK }));
  const tokens = new Map<string, string>();
  for (const name of [orgs[0]!.name, ...streamed, ...untouched]) tokens.set(name, (await issueToken(store, { kind: 'organization', organization: name, description: 'bench' })).token);
  await store.close();
  // The batches are copied into the spool beforehand: at each tick the producer only renames one into incoming/.
  rmSync(SPOOL, { recursive: true, force: true });
  mkdirSync(join(SPOOL, 'incoming'), { recursive: true });
  mkdirSync(join(SPOOL, '.staged'), { recursive: true });
  for (const b of order) cpSync(b.dir, join(SPOOL, '.staged', b.name), { recursive: true });

  const env = { RATE_LIMIT_MAX: '100000000', RESPONSE_CACHE_MB: '0', SNAPSHOT_KEEP: '30', SNAPSHOT_KEEP_DAYS: '0' };
  const server = await startServerProcess({ ...env, DATA_DIR: WORK });

  // The load: three closed loops whose every response is counted into the window of the moment.
  let current = windowOf(0);
  let distinct = 0;
  const pages = (names: string[], group: 'touched' | 'untouched', seconds: number) => {
    return run({
      url: server.url, connections: 8, duration: seconds,
      requests: [{ setupRequest: (req: any) => {
        const org = names[Math.floor(Math.random() * names.length)]!;
        return { ...req, path: `/api/v2/organizations/${org}/explorer?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bdoes_not_contain%5D%5B0%5D=~${++distinct}`, headers: { Authorization: `Bearer ${tokens.get(org)}` } };
      } }],
    } as autocannon.Options, (status) => { if (status === 200) current[group]++; else current.errors++; });
  };
  const largest = (seconds: number) => {
    return run({ url: `${server.url}/api/v2/organizations/${orgs[0]!.name}/explorer${A_QUERY}`, headers: { Authorization: `Bearer ${tokens.get(orgs[0]!.name)}` }, connections: 1, duration: seconds } as autocannon.Options,
      (status, ms) => { if (status === 200) current.a.push(ms); else current.errors++; });
  };
  const load = (seconds: number) => Promise.all([pages(streamed, 'touched', seconds), pages(untouched, 'untouched', seconds), largest(seconds)]);

  const follower = spawn(process.execPath, [CLI, 'ingest', SPOOL], { env: { ...process.env, DATA_DIR: WORK }, stdio: ['ignore', 'pipe', 'inherit'] });
  const logged = followerLog(follower);

  try {
    // Before: the same load, no stream (after 10 s of warm-up).
    current = windowOf(10);
    await load(10);
    const before = current = windowOf(BEFORE_SECONDS);
    await load(BEFORE_SECONDS);
    const diskBefore = kb(join(WORK, 'snapshots'));
    log(`before: A p50 ${percentile([...before.a], 0.5)} ms, touched ${round(before.touched / BEFORE_SECONDS)} req/s, untouched ${round(before.untouched / BEFORE_SECONDS)} req/s, disk ${round(diskBefore / 1e6, 2)} GB`);

    // The stream, with the load running all along and a window per minute.
    const minutes: Window[] = [];
    const disk: number[] = [];
    const cpu: number[] = [];
    const arrived = new Map<string, number>();
    const streamStarted = performance.now();
    const loading = load(MINUTES * 60 + 1);
    const producing = (async () => {
      for (let i = 0; i < order.length; i++) {
        await sleep(Math.max(0, streamStarted + i * EVERY_MS - performance.now()));
        renameSync(join(SPOOL, '.staged', order[i]!.name), join(SPOOL, 'incoming', order[i]!.name));
        arrived.set(order[i]!.name, performance.now());
      }
    })();
    let cpuMark = cpuSeconds(follower.pid!);
    for (let m = 0; m < MINUTES; m++) {
      current = windowOf(60);
      for (let t = 0; t < 12; t++) {
        await sleep(Math.max(0, streamStarted + (m * 60 + (t + 1) * 5) * 1000 - performance.now()));
        disk.push(kb(join(WORK, 'snapshots')));
      }
      minutes.push(current);
      const c = cpuSeconds(follower.pid!);
      cpu.push(c - cpuMark);
      cpuMark = c;
      const applied = appliedBatches(logged);
      const w = current;
      log(`minute ${m + 1}: applied ${applied.length} of ${arrived.size}, A p50 ${percentile([...w.a], 0.5)} ms, touched ${round(w.touched / 60)} untouched ${round(w.untouched / 60)} req/s, disk ×${round(disk[disk.length - 1]! / diskBefore, 2)}, follower CPU ${round(cpu[cpu.length - 1]! / 60, 2)} cores`);
    }
    await producing;
    // Waiting as the stream ends (S3); what is still waiting once the follower stops is not lost either.
    const waiting = readdirSync(join(SPOOL, 'incoming')).filter((n) => !n.startsWith('.')).length;
    current = windowOf(0);
    await loading;
    follower.kill('SIGTERM');
    await new Promise((r) => { if (follower.exitCode !== null) r(null); else follower.once('exit', r); });
    const left = readdirSync(join(SPOOL, 'incoming')).filter((n) => !n.startsWith('.')).length;

    const applied = appliedBatches(logged);
    const rejected = logged.filter((l) => l.message === 'batch rejected').flatMap((l) => l.batches as string[]);
    const delays = (size: string, from = 0, to = Infinity) => applied.filter((b) => b.name.includes(`-${size}-`))
      .filter((b) => { const t = (arrived.get(b.name)! - streamStarted) / 60_000; return t >= from && t < to; }).map((b) => b.delay);
    const p95 = (v: number[]) => round(percentile(v, 0.95), 2);
    const s1 = p95(delays('small')), s2 = p95(delays('large'));
    const growth = (size: string) => percentile(delays(size, MINUTES - 5), 0.95) / percentile(delays(size, 0, 5), 0.95);
    const aBefore = percentile([...before.a], 0.5);
    const touchedBefore = before.touched / before.seconds;
    const rows = minutes.map((w, i) => ({
      minute: i + 1,
      a_p50_ms: percentile([...w.a], 0.5),
      a_ratio: round(percentile([...w.a], 0.5) / aBefore, 2),
      touched_rps: round(w.touched / 60),
      touched_ratio: round((w.touched / 60) / touchedBefore, 2),
      untouched_rps: round(w.untouched / 60),
      errors: w.errors,
      disk_ratio: round(Math.max(...disk.slice(i * 12, i * 12 + 12)) / diskBefore, 2),
      follower_cores: round(cpu[i]! / 60, 2),
      applied_by_end: applied.filter((b) => b.at - streamStarted <= (i + 1) * 60_000).length,
      arrived_by_end: Math.min(order.length, (i + 1) * 12),
    }));
    const fromThird = rows.slice(2);
    const smallDuring = minutes.reduce((a, w) => a + w.touched + w.untouched, 0) / (MINUTES * 60);
    const smallBefore = (before.touched + before.untouched) / before.seconds;
    const errors = minutes.reduce((a, w) => a + w.errors, 0) + before.errors;
    const results = [
      { scenario: 'S1', measured: `small batches p95 ${s1} s (${delays('small').length} applied)`, target: '≤ 1 s', pass: s1 <= 1 },
      { scenario: 'S2', measured: `large batches p95 ${s2} s (${delays('large').length} applied); ${rejected.length} rejected, ${order.length - applied.length - left} lost`, target: '≤ 10 s, none lost', pass: s2 <= 10 && rejected.length === 0 && applied.length + left === order.length },
      { scenario: 'S3', measured: `p95 last 5 min ÷ first 5: small ${round(growth('small'), 2)}, large ${round(growth('large'), 2)}; ${waiting} waiting at the end`, target: '≤ 1.2; ≤ 2', pass: growth('small') <= 1.2 && growth('large') <= 1.2 && waiting <= 2 },
      { scenario: 'S4', measured: `from minute 3: A p50 ×${Math.min(...fromThird.map((r) => r.a_ratio))}–${Math.max(...fromThird.map((r) => r.a_ratio))} (before ${aBefore} ms), touched throughput ${Math.min(...fromThird.map((r) => r.touched_ratio))}–${Math.max(...fromThird.map((r) => r.touched_ratio))} of before (${round(touchedBefore)} req/s); small-organization throughput ${round(smallDuring)} ÷ ${round(smallBefore)} req/s = ${round(smallDuring / smallBefore, 2)}; ${errors} errors`,
        target: '≤ 1.2×; ≥ 70 %', pass: fromThird.every((r) => r.a_ratio <= 1.2 && 1 / r.touched_ratio <= 1.2) && smallDuring / smallBefore >= 0.7 && errors === 0 },
      { scenario: 'S5', measured: `data directory at most ×${round(Math.max(...disk) / diskBefore, 2)} of ${round(diskBefore / 1e6, 2)} GB (sampled every 5 s)`, target: '≤ 1.3×', pass: Math.max(...disk) / diskBefore <= 1.3 },
    ];
    console.log('| minute | A p50 ms (×) | touched req/s (× before) | untouched req/s | errors | disk × | follower cores | applied / arrived |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(`| ${r.minute} | ${r.a_p50_ms} (${r.a_ratio}) | ${r.touched_rps} (${r.touched_ratio}) | ${r.untouched_rps} | ${r.errors} | ${r.disk_ratio} | ${r.follower_cores} | ${r.applied_by_end} / ${r.arrived_by_end} |`);
    console.log('\n| # | measured | target | ok |');
    console.log('|---|---|---|---|');
    for (const r of results) console.log(`| ${r.scenario} | ${r.measured} | ${r.target} | ${r.pass ? 'yes' : 'NO'} |`);
    const applyLines = logged.filter((l) => l.message === 'batch applied');
    const file = join(ROOT, 'bench', 'results', `stream-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify({ minutes: MINUTES, before: { a_p50_ms: aBefore, touched_rps: touchedBefore, small_rps: smallBefore, disk_kb: diskBefore }, rows, results, applied: applyLines.map(({ at: _at, ...l }) => l) }, null, 2));
    console.log(`\nwritten ${file}`);
  } finally {
    follower.kill('SIGTERM');
    await stopServerProcess(server.child).catch(() => null);
  }
}

/** An autocannon run that reports each response as it comes (status, milliseconds). */
function run(options: autocannon.Options, onResponse: (status: number, ms: number) => void): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(options, (e, result) => (e ? reject(e) : resolve(result)));
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => onResponse(status, ms));
  });
}

/** Each batch the follower applied, with its delay from arrival to current and when it was logged. */
function appliedBatches(logged: Record<string, any>[]): { name: string; delay: number; at: number }[] {
  return logged.filter((l) => l.message === 'batch applied').flatMap((l) => (l.batches as string[]).map((name, i) => ({
    name, at: l.at as number, delay: Array.isArray(l.delays_seconds) ? l.delays_seconds[i] as number : l.delay_seconds as number,
  })));
}

main().catch((e) => { console.error(e); process.exit(1); });
