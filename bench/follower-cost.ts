// make bench-follower: what the follower costs, apart from the pages' own cost.
// F1  a batch's CPU on one DuckDB thread and on two: the stream's first batches (bench/stream-batches.ts)
//     applied in-process by applyBatch, as the follower applies them, to a linked copy of the bench snapshot,
//     each thread count FOLLOWER_ROUNDS times, interleaved (the machine's speed drifts within the hour).
// F2  what a server's page pays for a follower beside it: small organizations' B pages in a closed loop
//     (8 connections), the server's CPU an answer read from /proc, in three conditions taken in turn:
//     alone; beside `explorer apply` of the stream's small batches into another data directory (the
//     follower's CPU competing, nothing switched); and beside the same batches applied to the server's own
//     data directory (the CPU, and a snapshot switch after each). The difference between the last two is
//     what switching costs; between the first two, what sharing the cores costs. The pages are those of
//     organizations no batch touches, or with FOLLOWER_F2_PAGES=touched those the small batches touch, after
//     FOLLOWER_F2_BEFORE (20) of those batches applied to the server's directory: a touched organization's
//     page reads each new snapshot's delta, which every worker attaches and prepares its statements against.
// F3  what the deltas come to over the stream's batches, with and without tidying by share: the stream's first
//     FOLLOWER_F3_BATCHES batches applied in-process on one thread to a linked copy, and with INGEST_TIDY_SHARE's
//     policy (FOLLOWER_F3_SHARE) a unit after each batch that finds an organization in debt, in a process of its
//     own as the follower runs it; each batch's CPU, the deltas' bytes (the files', and those in use), and each
//     unit's CPU and rows.
// F4  what compactions cost one after another: on a linked copy, the stream's first 10 batches (one large,
//     which touches the largest organization) applied and compacted, then its next 9 small batches applied and
//     compacted again, then its next 10 (one large) and a third compaction; each compaction's CPU (one DuckDB
//     thread, as beside a stream) and what it wrote. Policies: `runs`, as compactions choose (a large
//     organization written as a run over its lowest layer: delta-layout.ts RUN_ROWS; an earlier whole
//     layer written again only while no larger than the change: whole-layer.ts planCompaction); `tiered`, every
//     organization written whole (no runs); `whole`, no runs and every earlier layer taken in.
//     F1 builds on one DuckDB instance kept from batch to batch, as the follower does (writer-instance.ts);
//     FOLLOWER_F1_INSTANCE=fresh opens one a batch, as `explorer apply` does.
// Environment: BENCH_DIR (default $DATA_DIR/bench), FOLLOWER_BATCHES (20), FOLLOWER_ROUNDS (2),
// FOLLOWER_SECONDS (30 per condition), FOLLOWER_SCENARIOS (F1,F2; F3 when named), FOLLOWER_THREADS (F1's thread
// counts: 2,1), FOLLOWER_F2_PAGES (untouched), FOLLOWER_F2_BEFORE (20), FOLLOWER_F3_BATCHES (126: about when the deltas reach INGEST_COMPACT_MB), FOLLOWER_F3_SHARE (0.05),
// FOLLOWER_F3_POLICIES (layered,share: which of the two to run), FOLLOWER_F4_POLICIES (runs,tiered).
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyBatch, type ApplyResult } from '../src/snapshots/write/apply.js';
import { readCurrentId, readManifest } from '../src/snapshots/snapshot-dir.js';
import { tidyInProcess } from '../src/snapshots/write/tidy-process.js';
import { compactLayers } from '../src/snapshots/write/whole-layer.js';
import { WriterInstance } from '../src/snapshots/write/writer-instance.js';
import { BUILD_STEPS } from '../src/snapshots/write/delta.js';
import { benchSnapshot, CLI, cpuSeconds, linkedCopy, organizationTokens, percentile, ROOT, smallFiltered, startServerProcess, stopServerProcess } from './lib.js';
import { streamBatches, type StreamBatch } from './stream-batches.js';

const DATA_DIR = process.env.DATA_DIR ?? join(ROOT, 'data');
const BENCH_DIR = process.env.BENCH_DIR ?? join(DATA_DIR, 'bench');
const BATCHES = Number(process.env.FOLLOWER_BATCHES ?? 20);
const ROUNDS = Number(process.env.FOLLOWER_ROUNDS ?? 2);
const SECONDS = Number(process.env.FOLLOWER_SECONDS ?? 30);
const SCENARIOS = new Set((process.env.FOLLOWER_SCENARIOS ?? 'F1,F2').split(','));
const THREADS = (process.env.FOLLOWER_THREADS ?? '2,1').split(',').map(Number);
const F1_INSTANCE = process.env.FOLLOWER_F1_INSTANCE ?? 'kept';
const log = (m: string) => console.error(`[bench-follower] ${m}`);
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

interface Applied { size: StreamBatch['size']; cpu: number; seconds: number; steps: ApplyResult['steps'] }

/** F1: each batch's CPU (the process's, validation included) and time, on `threads` DuckDB threads. */
async function applyAll(baseId: string, order: StreamBatch[], threads: number): Promise<Applied[]> {
  const work = join(BENCH_DIR, 'follower-f1');
  linkedCopy(BENCH_DIR, work, baseId);
  const out: Applied[] = [];
  // As the follower builds: on one instance kept from batch to batch, unless FOLLOWER_F1_INSTANCE=fresh.
  const writer = F1_INSTANCE === 'kept' ? new WriterInstance({ dataDir: work, threads }) : undefined;
  try {
    for (const b of order) {
      const before = process.cpuUsage();
      const started = performance.now();
      const { steps } = await applyBatch(b.dir, { dataDir: work, threads, keep: 30, keepDays: 0, writer });
      const c = process.cpuUsage(before);
      out.push({ size: b.size, cpu: (c.user + c.system) / 1e6, seconds: (performance.now() - started) / 1000, steps });
    }
  } finally {
    await writer?.close();
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}

/** `explorer apply` of each batch in turn into `dataDir`, until stopped: a follower's work, in its own process. */
function applyLoop(dataDir: string, batches: StreamBatch[]): { stop: () => Promise<number> } {
  let stopped = false;
  let applied = 0;
  const done = (async () => {
    for (const b of batches) {
      if (stopped) break;
      await new Promise((resolve) => spawn(process.execPath, [CLI, 'apply', b.dir], { env: { ...process.env, DATA_DIR: dataDir }, stdio: 'ignore' }).once('exit', resolve));
      applied++;
    }
  })();
  return { stop: async () => { stopped = true; await done; return applied; } };
}

async function main(): Promise<void> {
  const { baseId, orgs } = await benchSnapshot(BENCH_DIR, log);
  const { untouched, streamed, order } = await streamBatches(BENCH_DIR, orgs, 240, log);
  const results: Record<string, unknown> = { date: new Date().toISOString() };

  if (SCENARIOS.has('F1')) {
    const rounds: { threads: number; batches: Applied[] }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (const threads of THREADS) {
        const batches = await applyAll(baseId, order.slice(0, BATCHES), threads);
        rounds.push({ threads, batches });
        const small = batches.filter((b) => b.size === 'small');
        log(`F1 round ${r + 1}, ${threads} thread(s): small CPU p50 ${round(percentile(small.map((b) => b.cpu), 0.5))} s, time p50 ${round(percentile(small.map((b) => b.seconds), 0.5))} s; large CPU ${batches.filter((b) => b.size === 'large').map((b) => round(b.cpu)).join(', ')} s`);
      }
    }
    // The first batch of each run pays for the process's first DuckDB instance and reads: left out.
    const figures = (threads: number, size: StreamBatch['size']) => {
      const all = rounds.filter((r) => r.threads === threads).flatMap((r) => r.batches.slice(1)).filter((b) => b.size === size);
      // Each step of the delta's build (delta.ts BUILD_STEPS), milliseconds at the median: where the time goes.
      const steps_ms_p50 = Object.fromEntries(BUILD_STEPS.map((step) => [step, round(percentile(all.map((b) => (b.steps[step] ?? 0) * 1000), 0.5), 1)]));
      return { cpu_p50: round(percentile(all.map((b) => b.cpu), 0.5)), cpu_max: round(Math.max(...all.map((b) => b.cpu))), seconds_p50: round(percentile(all.map((b) => b.seconds), 0.5)), n: all.length, steps_ms_p50 };
    };
    const f1: Record<string, { small: ReturnType<typeof figures>; large: ReturnType<typeof figures> }> = Object.fromEntries(THREADS.map((t) => [`threads_${t}`, { small: figures(t, 'small'), large: figures(t, 'large') }]));
    console.log('| F1 | small CPU p50 (max) | small time p50 | large CPU p50 (max) | large time p50 |');
    console.log('|---|---|---|---|---|');
    for (const t of THREADS) {
      const f = f1[`threads_${t}`]!;
      console.log(`| ${t} thread(s) | ${f.small.cpu_p50} s (${f.small.cpu_max}) | ${f.small.seconds_p50} s | ${f.large.cpu_p50} s (${f.large.cpu_max}) | ${f.large.seconds_p50} s |`);
    }
    console.log(`\n| F1 step, ms at the median | ${THREADS.map((t) => `small, ${t} thread(s) | large, ${t} thread(s)`).join(' | ')} |`);
    console.log(`|---|${THREADS.map(() => '---|---').join('|')}|`);
    for (const step of BUILD_STEPS) console.log(`| ${step} | ${THREADS.map((t) => `${f1[`threads_${t}`]!.small.steps_ms_p50[step]} | ${f1[`threads_${t}`]!.large.steps_ms_p50[step]}`).join(' | ')} |`);
    results.F1 = { batches: BATCHES, rounds: ROUNDS, instance: F1_INSTANCE, ...f1 };
  }

  if (SCENARIOS.has('F3')) {
    const batches = Number(process.env.FOLLOWER_F3_BATCHES ?? 126);
    const share = Number(process.env.FOLLOWER_F3_SHARE ?? 0.05);
    const runs: Record<string, unknown> = {};
    for (const policy of (process.env.FOLLOWER_F3_POLICIES ?? 'layered,share').split(',') as ('layered' | 'share')[]) {
      const work = join(BENCH_DIR, `follower-f3-${process.pid}`);
      linkedCopy(BENCH_DIR, work, baseId);
      const rows: Record<string, unknown>[] = [];
      try {
        for (const [i, b] of order.slice(0, batches).entries()) {
          const cpu = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1e6; };
          const before = cpu();
          await applyBatch(b.dir, { dataDir: work, threads: 1, keep: 3, keepDays: 0 });
          const batchCpu = cpu() - before;
          // In a process of its own, as the follower runs it (tidy-process.ts): charged that process's CPU.
          const outcome = policy === 'share' ? await tidyInProcess({ dataDir: work, maxRows: 0, replacedShare: share, unitRows: 1, threads: 1, memoryLimit: '2GB' }) : null;
          const unit = outcome?.result ?? null;
          const unitCpu = outcome?.cpuSeconds ?? 0;
          const m = await readManifest(work, (await readCurrentId(work))!);
          const mb = (file: string | undefined) => round((file ? m.sizes?.[file] ?? 0 : 0) / 2 ** 20, 1);
          const used = (file: string | undefined) => round((file ? m.usedBytes?.[file] ?? m.sizes?.[file] ?? 0 : 0) / 2 ** 20, 1);
          rows.push({ i, size: b.size, cpu: round(batchCpu), older_mb: mb(m.major), newer_mb: mb(m.delta), older_used_mb: used(m.major), newer_used_mb: used(m.delta), ...(unit ? { unit: { organizations: unit.organizations, rows: unit.rows, cpu: round(unitCpu) } } : {}) });
          if (unit) log(`F3 ${policy}: after batch ${i}, a unit of ${unit.organizations.join(', ')} (${unit.rows} rows): ${round(unitCpu)} CPU-s`);
        }
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
      const cpus = (size: string, from: number) => rows.filter((r) => r.size === size && (r.i as number) >= from).map((r) => r.cpu as number);
      const last = rows.at(-1)!;
      const summary = {
        small_cpu_p50: round(percentile(cpus('small', 1), 0.5)), large_cpu_p50: round(percentile(cpus('large', 1), 0.5)),
        large_cpu_last_third_p50: round(percentile(cpus('large', Math.floor(batches * 2 / 3)), 0.5)),
        deltas_mb_at_end: round((last.older_mb as number) + (last.newer_mb as number), 1),
        deltas_mb_max: Math.max(...rows.map((r) => round((r.older_mb as number) + (r.newer_mb as number), 1))),
        deltas_used_mb_max: Math.max(...rows.map((r) => round((r.older_used_mb as number) + (r.newer_used_mb as number), 1))),
        unit_cpu: rows.filter((r) => r.unit).map((r) => (r.unit as { cpu: number }).cpu),
      };
      log(`F3 ${policy}: ${JSON.stringify(summary)}`);
      runs[policy] = { summary, rows };
    }
    results.F3 = { batches, share, ...runs };
  }

  if (SCENARIOS.has('F4')) {
    const runs: Record<string, unknown> = {};
    for (const policy of (process.env.FOLLOWER_F4_POLICIES ?? 'runs,tiered').split(',')) {
      const work = join(BENCH_DIR, `follower-f4-${process.pid}`);
      linkedCopy(BENCH_DIR, work, baseId);
      try {
        const cpu = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1e6; };
        const compact = async (tier: number) => {
          const before = cpu();
          const done = await compactLayers(work, { threads: 1, memoryLimit: '2GB', tier, ...(policy === 'runs' ? {} : { runRows: Infinity }) });
          if (!done) throw new Error('F4: nothing compacted');
          return { cpu: round(cpu() - before), seconds: round(done.seconds), organizations: done.organizations, kept: done.kept, runs: done.runs };
        };
        for (const b of order.slice(0, 10)) await applyBatch(b.dir, { dataDir: work, threads: 1 });
        const first = await compact(1);
        const small = order.slice(10, 20).filter((b) => b.size === 'small');
        for (const b of small) await applyBatch(b.dir, { dataDir: work, threads: 1 });
        const second = await compact(policy === 'whole' ? Infinity : 1);
        const next = order.slice(20, 30);
        for (const b of next) await applyBatch(b.dir, { dataDir: work, threads: 1 });
        const third = await compact(policy === 'whole' ? Infinity : 1);
        log(`F4 ${policy}: first compaction ${JSON.stringify(first)}; after ${small.length} small batches, the second ${JSON.stringify(second)}; after ${next.length} more (${next.filter((b) => b.size === 'large').length} large), the third ${JSON.stringify(third)}`);
        runs[policy] = { first, second, third };
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    }
    results.F4 = runs;
  }

  if (SCENARIOS.has('F2')) {
    const own = join(BENCH_DIR, 'follower-f2');
    const other = join(BENCH_DIR, 'follower-f2-other');
    linkedCopy(BENCH_DIR, own, baseId);
    linkedCopy(BENCH_DIR, other, baseId);
    const touched = process.env.FOLLOWER_F2_PAGES === 'touched';
    const pageOrgs = touched ? streamed : untouched;
    const tokens = await organizationTokens(own, pageOrgs);
    const small = order.filter((b) => b.size === 'small');
    const preApplied = touched ? Number(process.env.FOLLOWER_F2_BEFORE ?? 20) : 0;
    for (const b of small.slice(0, preApplied)) await applyBatch(b.dir, { dataDir: own, threads: 1, keep: 30, keepDays: 0 });
    const server = await startServerProcess({ RATE_LIMIT_MAX: '100000000', RESPONSE_CACHE_MB: '0', SNAPSHOT_KEEP: '30', SNAPSHOT_KEEP_DAYS: '0', DATA_DIR: own });
    const pid = server.child.pid!;
    // Each directory takes the batches in order, from where it left off: both take the same ones.
    const nextOf = new Map<string, number>([[own, preApplied], [other, preApplied]]);
    const measure = async (condition: string, into: string | null) => {
      const loop = into ? applyLoop(into, small.slice(nextOf.get(into) ?? 0)) : null;
      const before = cpuSeconds(pid);
      const r = await autocannon({
        url: server.url, connections: 8, duration: SECONDS,
        requests: [{
          setupRequest: (req: any) => {
            const org = pageOrgs[Math.floor(Math.random() * pageOrgs.length)]!;
            return { ...req, path: `/api/v2/organizations/${org}/explorer${smallFiltered()}`, headers: { Authorization: `Bearer ${tokens.get(org)}` } };
          },
        }],
      } as autocannon.Options);
      const cpu = cpuSeconds(pid) - before;
      const applied = loop ? await loop.stop() : 0;
      if (into) nextOf.set(into, (nextOf.get(into) ?? 0) + applied);
      const m = { condition, rps: round(r.requests.total / SECONDS, 1), p50_ms: r.latency.p50, cpu_ms: round(cpu * 1000 / r.requests.total, 3), errors: r.non2xx + r.errors, applied };
      log(`F2 ${condition}: ${m.rps} req/s, p50 ${m.p50_ms} ms, server CPU ${m.cpu_ms} ms an answer, ${m.applied} batches applied, ${m.errors} errors`);
      return m;
    };
    const measures = [];
    try {
      await measure('warm-up', null);
      for (let r = 0; r < ROUNDS; r++) {
        measures.push(await measure('alone', null));
        measures.push(await measure('beside batches into another directory', other));
        measures.push(await measure('beside batches into its own directory', own));
      }
    } finally {
      await stopServerProcess(server.child);
      rmSync(own, { recursive: true, force: true });
      rmSync(other, { recursive: true, force: true });
    }
    console.log('| F2 | req/s | p50 ms | server CPU ms an answer | batches applied |');
    console.log('|---|---|---|---|---|');
    for (const m of measures) console.log(`| ${m.condition} | ${m.rps} | ${m.p50_ms} | ${m.cpu_ms} | ${m.applied} |`);
    results.F2 = { seconds: SECONDS, rounds: ROUNDS, pages: touched ? 'touched' : 'untouched', batches_before: preApplied, measures };
  }

  const file = join(ROOT, 'bench', 'results', `follower-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(results, null, 2));
  console.log(`\nwritten ${file}`);
}

await main();
