// make bench-changes: the change-batch scenarios (docs/changes.md, docs/performance.md) on the bench snapshot
// of `make bench` ($BENCH_DIR, loaded first by `make bench` or here if absent). The batches come from the bench
// source, shaped as the scenarios say: K1's touch 10 workspaces of small organizations, K2's 1,000 of 100
// organizations, the largest among them. Every scenario runs against a copy of the bench data directory
// whose snapshot files are hard links (no disk), with a server process serving it and an `ingest` follower.
//
// K1  10 batches of K1's shape (small organizations other than K2's) through the follower: arrival in incoming/ → the server answers from the new snapshot
// K1′ the same through `bin/explorer apply` (the command's start included)
// K2  20 batches of K2's shape through the follower, one at a time, the server idle: arrival → answered, with
//     the parts the follower logs and its CPU per batch
// K3  B (small-organization pages, 16 connections, every request distinct) alone, then while 20 more batches
//     of K2's shape apply back to back through the follower: throughput ratio and errors
// K4  A and B after the batches ÷ the same on the base snapshot (a full load of the same data, minus the
//     20,000 changed workspaces: the resulting source itself is not at hand as a directory): right after the
//     batches, and again once the follower, idle, has compacted the layers; each B after 3 s of B to warm up
// K5  disk of the retained batch snapshots (hard links counted once) ÷ the base snapshot, before and after
// Environment: BENCH_DIR (default $DATA_DIR/bench), BENCH_SECONDS (default 15), BENCH_STOP_AFTER=K1 (K1 alone) or K1' (and K1′).
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { loadConfig } from '../src/config.js';
import { writeSampleChanges } from '../src/sample/sample-changes.js';
import { listSnapshotIds, readCurrentId, snapshotPath } from '../src/snapshots/snapshot-dir.js';
import { A_QUERY, type BenchRow, benchSnapshot, CLI, cpuSeconds, followerLog, linkedCopy, organizationTokens, percentile, ROOT, startServerProcess, stopServerProcess, writeResults } from './lib.js';
import { diskKb as kb } from '../test/helpers/disk.js';

const DATA_DIR = process.env.DATA_DIR ?? join(ROOT, 'data');
const BENCH_DIR = process.env.BENCH_DIR ?? join(DATA_DIR, 'bench');
const SOURCE = join(BENCH_DIR, 'source');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const WORK = join(BENCH_DIR, 'changes');
const log = (m: string) => console.error(`[bench-changes] ${m}`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const rows: BenchRow[] = [];
/** Each row as soon as it is measured, so that a long run shows its figures as it goes. */
const report = (r: BenchRow) => { rows.push(r); console.error(`[bench-changes] ${r.scenario}: ${r.measured}`); };

/** The organization of the first workspace a batch upserts. */
const batchOrganization = (batch: string) => JSON.parse(readFileSync(join(batch, 'workspaces.ndjson'), 'utf8').split('\n')[0]!).organization as string;

async function main(): Promise<void> {
  const { baseId, orgs } = await benchSnapshot(BENCH_DIR, log);
  const small = orgs.filter((o) => o.workspaces <= 500);
  const hundred = new Set([orgs[0]!.name, ...small.slice(0, 99).map((o) => o.name)]);
  const batches = join(BENCH_DIR, 'batches');
  if (!existsSync(join(batches, 'k2', 'batch-0040'))) {
    log('writing the batches from the bench source');
    rmSync(batches, { recursive: true, force: true });
    await writeSampleChanges(SOURCE, join(batches, 'k1'), { batches: 20, workspaces: 10, seed: 21, organizations: new Set(small.slice(99).map((o) => o.name)) });
    await writeSampleChanges(SOURCE, join(batches, 'k2'), { batches: 40, workspaces: 1000, seed: 22, organizations: hundred });
  }
  linkedCopy(BENCH_DIR, WORK, baseId);
  const tokens = await organizationTokens(WORK, [orgs[0]!, ...small].map((o) => o.name));
  cpSync(join(WORK, 'state'), join(BENCH_DIR, 'state-changes'), { recursive: true });

  const env = { RATE_LIMIT_MAX: '100000000', RESPONSE_CACHE_MB: '0', SNAPSHOT_KEEP: '30', SNAPSHOT_KEEP_DAYS: '0' };
  const server = await startServerProcess({ ...env, DATA_DIR: WORK });
  const spool = join(WORK, 'spool');
  mkdirSync(join(spool, 'incoming'), { recursive: true });
  mkdirSync(join(spool, '.writing'), { recursive: true });
  const follower: ChildProcess = spawn(process.execPath, [CLI, 'ingest', spool], { env: { ...process.env, DATA_DIR: WORK }, stdio: ['ignore', 'pipe', 'inherit'] });
  const logged = followerLog(follower);

  /** The snapshot the server answers a page of `org` from. */
  const served = async (org: string) => (await fetch(`${server.url}/api/v2/organizations/${org}/explorer?type=workspaces&page%5Bsize%5D=1`,
    { headers: { Authorization: `Bearer ${tokens.get(org)}` } })).headers.get('x-explorer-snapshot');
  /** Seconds from now until the server answers `org` from a snapshot other than `before`. */
  const untilServed = async (org: string, before: string | null, started: number) => {
    for (;;) {
      if ((await served(org)) !== before) return (performance.now() - started) / 1000;
      // Light polling: the follower runs at a lower priority than the server, so a busy poll would take its CPU.
      await sleep(50);
    }
  };
  /** Drops a batch into the spool as a producer does (a copy beside, then a rename) and times it until answered. */
  const viaFollower = async (batch: string, name: string) => {
    const org = batchOrganization(batch);
    const before = await served(org);
    cpSync(batch, join(spool, `.writing-${name}`), { recursive: true });
    const started = performance.now();
    renameSync(join(spool, `.writing-${name}`), join(spool, 'incoming', name));
    return untilServed(org, before, started);
  };

  try {
    // K1: small batches through the follower.
    const k1: number[] = [];
    for (let i = 1; i <= 10; i++) k1.push(await viaFollower(join(batches, 'k1', `batch-${String(i).padStart(4, '0')}`), `k1-${i}`));
    const k1Logs = logged.filter((l) => l.message === 'batch applied');
    report({ scenario: 'K1', what: '10 batches of 10 workspaces in small organizations, arrival in incoming/ → the server answers from the new snapshot',
      measured: `max ${round(Math.max(...k1), 2)} s, p50 ${round(percentile(k1, 0.5), 2)} s; apply p50 ${round(percentile(k1Logs.map((l) => l.seconds), 0.5), 2)} s (validate ${round(percentile(k1Logs.map((l) => l.phases.validate), 0.5), 2)}, write ${round(percentile(k1Logs.map((l) => l.phases.write), 0.5), 2)}, switch ${round(percentile(k1Logs.map((l) => l.phases.switch), 0.5), 2)})`,
      target: 'max ≤ 1 s', pass: Math.max(...k1) <= 1 });
    log(`K1 each: ${k1.map((s, i) => `${round(s, 2)} (apply ${k1Logs[i]?.seconds ?? '?'})`).join(', ')}`);
    if (process.env.BENCH_STOP_AFTER === 'K1') return;

    // K1′: the same through the command.
    const k1c: number[] = [];
    for (let i = 11; i <= 20; i++) {
      const batch = join(batches, 'k1', `batch-${String(i).padStart(4, '0')}`);
      const org = batchOrganization(batch);
      const before = await served(org);
      const started = performance.now();
      execFileSync(join(ROOT, 'bin', 'explorer'), ['apply', batch], { cwd: ROOT, env: { ...process.env, DATA_DIR: WORK }, stdio: 'ignore' });
      k1c.push(await untilServed(org, before, started));
    }
    report({ scenario: "K1′", what: 'K1 through `bin/explorer apply`, its start included', measured: `max ${round(Math.max(...k1c), 2)} s, p50 ${round(percentile(k1c, 0.5), 2)} s`, target: 'max ≤ 1.5 s', pass: Math.max(...k1c) <= 1.5 });
    if (process.env.BENCH_STOP_AFTER === "K1'") return;

    // K2: 20 batches of 1,000 workspaces through the follower, one after another, the server serving (idle).
    const cpuBefore = cpuSeconds(follower.pid!);
    const k2: number[] = [];
    const firstK2 = logged.length;
    for (let i = 1; i <= 20; i++) k2.push(await viaFollower(join(batches, 'k2', `batch-${String(i).padStart(4, '0')}`), `k2-${i}`));
    const cpu = (cpuSeconds(follower.pid!) - cpuBefore) / 20;
    const k2Logs = logged.slice(firstK2).filter((l) => l.message === 'batch applied');
    const p50 = (key: string) => round(percentile(k2Logs.map((l) => l.phases[key]), 0.5), 2);
    const applyP50 = percentile(k2Logs.map((l) => l.seconds), 0.5);
    report({ scenario: 'K2', what: '20 batches of 1,000 workspaces over 100 organizations (the largest included, resources replaced), arrival → answered',
      measured: `p50 ${round(percentile(k2, 0.5), 2)} s, max ${round(Math.max(...k2), 2)} s; apply p50 ${round(applyP50, 2)} s: validate ${p50('validate')}, write ${p50('write')}, switch ${p50('switch')}, first answer ${round(percentile(k2, 0.5) - applyP50, 2)}; follower CPU ${round(cpu, 2)} s per batch`,
      target: 'p50 ≤ 10 s', pass: percentile(k2, 0.5) <= 10 });

    // K3: B alone, then B while 20 more such batches apply back to back (all dropped in at once).
    const smallTokens = small.slice(0, 300).map((o) => ({ org: o.name, token: tokens.get(o.name)! }));
    let distinct = 0;
    const bRun = (url: string, seconds: number) => autocannon({
      url, connections: 16, duration: seconds,
      requests: [{ setupRequest: (req: any) => {
        const pick = smallTokens[Math.floor(Math.random() * smallTokens.length)]!;
        return { ...req, path: `/api/v2/organizations/${pick.org}/explorer?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bdoes_not_contain%5D%5B0%5D=~${++distinct}`, headers: { Authorization: `Bearer ${pick.token}` } };
      } }],
    } as autocannon.Options);
    await bRun(server.url, 3);
    const alone = await bRun(server.url, SECONDS);
    for (let i = 21; i <= 40; i++) cpSync(join(batches, 'k2', `batch-${String(i).padStart(4, '0')}`), join(spool, '.writing', `k3-${i}`), { recursive: true });
    const doneBefore = readdirSync(join(spool, 'done')).length;
    for (let i = 21; i <= 40; i++) renameSync(join(spool, '.writing', `k3-${i}`), join(spool, 'incoming', `k3-${i}`));
    // B for a fixed window while the batches apply back to back: B saturates both cores, so the follower (at
    // INGEST_NICE) gets what B leaves; how many batches it lands in the window is reported beside the ratio.
    const loads: autocannon.Result[] = [];
    for (let w = 0; w < 4; w++) loads.push(await bRun(server.url, SECONDS));
    const landed = readdirSync(join(spool, 'done')).length - doneBefore;
    const k3Seconds = loads.reduce((a, r) => a + r.duration, 0);
    // The follower stops after the batch it is applying: K4 reads what landed, with nothing else running.
    follower.kill('SIGTERM');
    await new Promise((r) => { if (follower.exitCode !== null) r(null); else follower.once('exit', r); });
    const during = loads.reduce((a, r) => a + r.requests.total, 0) / loads.reduce((a, r) => a + r.duration, 0);
    const errors = loads.reduce((a, r) => a + r.errors + r.non2xx, 0);
    report({ scenario: 'K3', what: 'B while 20 batches of K2\'s shape apply back to back ÷ B with nothing applying',
      measured: `${round(during)} ÷ ${round(alone.requests.average)} req/s = ${round(during / alone.requests.average, 2)}; ${errors} errors; ${landed} of the 20 batches landed in those ${round(k3Seconds)} s (INGEST_NICE ${loadConfig({ ...process.env, DATA_DIR: WORK }).ingestNice})`,
      target: '≥ 0.7, 0 errors', pass: during / alone.requests.average >= 0.7 && errors === 0 && alone.non2xx === 0 });

    // K4: A and B after the batches ÷ the same on the base snapshot: right after them, and once the follower,
    // idle, has compacted the layers (the batches K3 left in the spool set aside first).
    const aRun = (url: string) => autocannon({ url: `${url}/api/v2/organizations/${orgs[0]!.name}/explorer${A_QUERY}`, headers: { Authorization: `Bearer ${tokens.get(orgs[0]!.name)}` }, connections: 1, duration: SECONDS } as autocannon.Options);
    await aRun(server.url);
    const aAfter = await aRun(server.url);
    await bRun(server.url, 3);
    const bAfter = await bRun(server.url, SECONDS);

    // K5: disk, with the layers as the batches left them.
    const ids = await listSnapshotIds(WORK);
    const one = kb(snapshotPath(BENCH_DIR, baseId));
    const all = kb(join(WORK, 'snapshots'));
    const deltas = ids.map((id) => (existsSync(join(snapshotPath(WORK, id), 'delta.duckdb')) ? statSync(join(snapshotPath(WORK, id), 'delta.duckdb')).size : 0));

    mkdirSync(join(spool, 'set-aside'), { recursive: true });
    for (const name of readdirSync(join(spool, 'incoming'))) renameSync(join(spool, 'incoming', name), join(spool, 'set-aside', name));
    const idle = spawn(process.execPath, [CLI, 'ingest', spool], { env: { ...process.env, DATA_DIR: WORK, INGEST_COMPACT_IDLE_SECONDS: '1' }, stdio: ['ignore', 'pipe', 'inherit'] });
    let idleOut = '';
    idle.stdout!.on('data', (d: Buffer) => { idleOut += d.toString(); });
    const compactedLine = async () => {
      for (;;) {
        const line = idleOut.split('\n').find((l) => l.includes('"layers compacted"') || l.includes('"layers not compacted"'));
        if (line) return JSON.parse(line) as Record<string, any>;
        if (idle.exitCode !== null) throw new Error('the follower stopped before it compacted the layers');
        await sleep(500);
      }
    };
    const compactCpu = cpuSeconds(idle.pid!);
    const compaction = await compactedLine();
    const compactCpuSeconds = cpuSeconds(idle.pid!) - compactCpu;
    idle.kill('SIGTERM');
    await new Promise((r) => { if (idle.exitCode !== null) r(null); else idle.once('exit', r); });
    if (compaction.message !== 'layers compacted') throw new Error(`the layers were not compacted: ${compaction.error}`);
    // The server follows the same snapshot in its new form (CURRENT written again).
    await sleep(2000);
    await aRun(server.url);
    const aWhole = await aRun(server.url);
    await bRun(server.url, 3);
    const bWhole = await bRun(server.url, SECONDS);
    const allWhole = kb(join(WORK, 'snapshots'));
    await stopServerProcess(server.child);

    const base = join(BENCH_DIR, 'changes-base');
    linkedCopy(BENCH_DIR, base, baseId);
    cpSync(join(BENCH_DIR, 'state-changes'), join(base, 'state'), { recursive: true });
    const baseServer = await startServerProcess({ ...env, DATA_DIR: base });
    await aRun(baseServer.url);
    const aBase = await aRun(baseServer.url);
    await bRun(baseServer.url, 3);
    const bBase = await bRun(baseServer.url, SECONDS);
    await stopServerProcess(baseServer.child);
    rmSync(base, { recursive: true, force: true });
    const ratios = (a: autocannon.Result, b: autocannon.Result) => ({ a: a.latency.p50 / aBase.latency.p50, b: bBase.requests.average / b.requests.average });
    const after = ratios(aAfter, bAfter);
    const whole = ratios(aWhole, bWhole);
    report({ scenario: 'K4', what: `right after the ${40 + landed} batches that landed ÷ on the base snapshot: A p50, and B's time per request (1 / req/s)`,
      measured: `A ${aAfter.latency.p50} ÷ ${aBase.latency.p50} ms = ${round(after.a, 2)}; B ${round(bAfter.requests.average)} vs ${round(bBase.requests.average)} req/s = ${round(after.b, 2)}`,
      target: '≤ 1.2', pass: after.a <= 1.2 && after.b <= 1.2 });
    report({ scenario: 'K4 idle', what: `the same once the idle follower compacted the layers (${compaction.organizations} organizations held whole, ${round(compaction.seconds)} s, CPU ${round(compactCpuSeconds)} s)`,
      measured: `A ${aWhole.latency.p50} ÷ ${aBase.latency.p50} ms = ${round(whole.a, 2)}; B ${round(bWhole.requests.average)} vs ${round(bBase.requests.average)} req/s = ${round(whole.b, 2)}`,
      target: '≤ 1.2', pass: whole.a <= 1.2 && whole.b <= 1.2 });
    report({ scenario: 'K5', what: `disk of the ${ids.length} retained snapshots (each block once, linked or cloned) ÷ the base snapshot, as the batches left them`,
      measured: `${round(all / 1e6, 2)} ÷ ${round(one / 1e6, 2)} GB = ${round(all / one, 2)}; deltas ${round(Math.min(...deltas) / 1e6)}–${round(Math.max(...deltas) / 1e6)} MB`,
      target: '≤ 1.3', pass: all / one <= 1.3 });
    report({ scenario: 'K5 idle', what: 'the same once the layers were compacted (the current snapshot\'s whole layer added)',
      measured: `${round(allWhole / 1e6, 2)} ÷ ${round(one / 1e6, 2)} GB = ${round(allWhole / one, 2)}`, target: '≤ 1.3', pass: allWhole / one <= 1.3 });
  } finally {
    follower.kill('SIGTERM');
    await stopServerProcess(server.child).catch(() => null);
  }

  writeResults('changes', rows);
}

main().catch((e) => { console.error(e); process.exit(1); });
