// make bench-at-rest: what the steady stream's batches leave behind, with nothing running beside the pages.
// The stream's batches (bench/stream-batches.ts) are applied in steps by `explorer apply` to a linked copy of
// the bench snapshot, the server idle meanwhile; after each step, each kind of page runs alone as a closed
// loop (8 connections for small organizations, 2 for the largest) and the server's CPU per answer is read from
// /proc: the page's cost as batches accumulate, apart from what the follower takes while it applies them
// (bench/stream.ts). Kinds: the largest organization's A page and its default resources page, and B pages of small organizations the batches
// touch or not. The figure that matters is the ratio of touched to untouched within a step: the machine's
// speed varies from hour to hour.
// After the last step, the layers are compacted as the follower compacts them (whole-layer.ts, one DuckDB
// thread) and each kind measured again: the largest organization then reads a run over the base
// (delta-layout.ts RUN_ROWS), the touched small ones the whole layer.
// Environment: BENCH_DIR (default $DATA_DIR/bench), AT_REST_STEPS (12,12,24,24: batches applied before each
// measure), AT_REST_SECONDS (15 per kind and step), AT_REST_COMPACT (1; 0 for no compaction).
import autocannon from 'autocannon';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { A_QUERY, benchSnapshot, CLI, cpuSeconds, linkedCopy, organizationTokens, ROOT, smallFiltered, startServerProcess, stopServerProcess } from './lib.js';
import { streamBatches } from './stream-batches.js';
import { compactLayers } from '../src/snapshots/write/whole-layer.js';

const DATA_DIR = process.env.DATA_DIR ?? join(ROOT, 'data');
const BENCH_DIR = process.env.BENCH_DIR ?? join(DATA_DIR, 'bench');
const WORK = join(BENCH_DIR, 'at-rest');
const STEPS = (process.env.AT_REST_STEPS ?? '12,12,24,24').split(',').map(Number);
const SECONDS = Number(process.env.AT_REST_SECONDS ?? 15);
const log = (m: string) => console.error(`[bench-at-rest] ${m}`);
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

interface Measure { step: number; compacted: boolean; kind: string; rps: number; p50_ms: number; cpu_ms: number; main_ms: number; errors: number }

async function main(): Promise<void> {
  const { baseId, orgs } = await benchSnapshot(BENCH_DIR, log);
  const total = STEPS.reduce((a, b) => a + b, 0);
  const { largest, streamed, untouched, order } = await streamBatches(BENCH_DIR, orgs, total, log);
  linkedCopy(BENCH_DIR, WORK, baseId);
  const tokens = await organizationTokens(WORK, [largest, ...streamed, ...untouched]);
  const server = await startServerProcess({ RATE_LIMIT_MAX: '100000000', RESPONSE_CACHE_MB: '0', SNAPSHOT_KEEP: '30', SNAPSHOT_KEEP_DAYS: '0', DATA_DIR: WORK });
  const pid = server.child.pid!;
  const page = (names: string[]) => () => {
    const org = names[Math.floor(Math.random() * names.length)]!;
    return { path: `/api/v2/organizations/${org}/explorer${smallFiltered()}`, headers: { Authorization: `Bearer ${tokens.get(org)}` } };
  };
  const kinds: [string, () => { path: string; headers: Record<string, string> }][] = [
    ['untouched', page(untouched)],
    ['touched', page(streamed)],
    ['largest', () => ({ path: `/api/v2/organizations/${largest}/explorer${A_QUERY}`, headers: { Authorization: `Bearer ${tokens.get(largest)}` } })],
    ['largest, default resources', () => ({ path: `/api/v2/organizations/${largest}/explorer?type=resources`, headers: { Authorization: `Bearer ${tokens.get(largest)}` } })],
  ];
  const measures: Measure[] = [];
  const measure = async (step: number, seconds: number, compacted = false) => {
    for (const [kind, next] of kinds) {
      // The process's CPU, and its main thread's (the event loop's) within it.
      const [allBefore, mainBefore] = [cpuSeconds(pid), cpuSeconds(pid, pid)];
      const r = await autocannon({ url: server.url, connections: kind.startsWith('largest') ? 2 : 8, duration: seconds, requests: [{ setupRequest: (req: any) => ({ ...req, ...next() }) }] } as autocannon.Options);
      const all = cpuSeconds(pid) - allBefore;
      const main = cpuSeconds(pid, pid) - mainBefore;
      const n = r.requests.total;
      const m = { step, compacted, kind, rps: round(n / seconds, 1), p50_ms: r.latency.p50, cpu_ms: round(all / n * 1000), main_ms: round(main / n * 1000), errors: r.non2xx + r.errors };
      if (seconds === SECONDS) measures.push(m);
      log(`after ${step} batches${compacted ? ', compacted' : ''}, ${kind}: ${m.rps} req/s, p50 ${m.p50_ms} ms, server CPU ${m.cpu_ms} ms an answer (main thread ${m.main_ms}), ${m.errors} errors`);
    }
  };
  try {
    await measure(0, 5); // warm-up
    await measure(0, SECONDS);
    let applied = 0;
    for (const step of STEPS) {
      for (const b of order.slice(applied, applied + step)) execFileSync(process.execPath, [CLI, 'apply', b.dir], { env: { ...process.env, DATA_DIR: WORK }, stdio: 'ignore' });
      applied += step;
      await measure(applied, SECONDS);
    }
    if (process.env.AT_REST_COMPACT !== '0') {
      const before = process.cpuUsage();
      const done = await compactLayers(WORK, { threads: 1, memoryLimit: '2GB' });
      const used = process.cpuUsage(before);
      log(`compacted: ${JSON.stringify(done)}, ${round((used.user + used.system) / 1e6)} CPU-s`);
      await measure(applied, 5, true); // warm-up on the new layer
      await measure(applied, SECONDS, true);
    }
  } finally {
    await stopServerProcess(server.child);
  }
  console.log('| batches applied | untouched ms CPU an answer | touched (× untouched) | largest (× on the base) | largest, default resources page (× on the base) |');
  console.log('|---|---|---|---|---|');
  const at = (step: number, compacted: boolean, kind: string) => measures.find((m) => m.step === step && m.compacted === compacted && m.kind === kind)!;
  const largestBase = at(0, false, 'largest').cpu_ms;
  const defaultBase = at(0, false, 'largest, default resources').cpu_ms;
  const steps = [...new Map(measures.map((m) => [`${m.step} ${m.compacted}`, m])).values()];
  const rows = steps.map(({ step, compacted }) => {
    const u = at(step, compacted, 'untouched'), t = at(step, compacted, 'touched'), l = at(step, compacted, 'largest'), d = at(step, compacted, 'largest, default resources');
    console.log(`| ${step}${compacted ? ', compacted' : ''} | ${u.cpu_ms} | ${t.cpu_ms} (${round(t.cpu_ms / u.cpu_ms)}) | ${l.cpu_ms} (${round(l.cpu_ms / largestBase)}) | ${d.cpu_ms} (${round(d.cpu_ms / defaultBase)}) |`);
    return { step, compacted, touched_ratio: round(t.cpu_ms / u.cpu_ms), largest_ratio: round(l.cpu_ms / largestBase), default_ratio: round(d.cpu_ms / defaultBase) };
  });
  const file = join(ROOT, 'bench', 'results', `at-rest-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ steps: STEPS, seconds: SECONDS, measures, rows }, null, 2));
  console.log(`\nwritten ${file}`);
}

await main();
