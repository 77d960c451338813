// make bench-scale: H. The B page (a small organization's default page plus one filter, every
// request distinct, 16 connections) on snapshots of 100k, 1M and 5M workspaces: a page must cost what its
// organization holds, not what the snapshot holds. Not part of make test.
//
// Each size is a sample of that many workspaces in size/500 organizations (the bench's own proportions:
// 1M in 2,000, the largest a tenth), without resources: the B page reads the workspaces view, and 5M
// workspaces with their hundred million resources would not fit this machine's disk twice.
//
// Environment: SCALE_DIR (default $DATA_DIR/bench-scale), SCALE_SIZES (default 100000,1000000,5000000),
// BENCH_SECONDS (default 20). Sources and snapshots are kept under SCALE_DIR/<size> and reused.
import autocannon from 'autocannon';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { issueToken } from '../src/access/tokens.js';
import { readCurrentId, readManifest } from '../src/snapshots/snapshot-dir.js';
import { writeSample } from '../src/sample/sample.js';
import { openStateStore } from '../src/store/open-store.js';
import { CLI, cpuSeconds, percentile, ROOT, startServerProcess, stopServerProcess } from './lib.js';

const run = promisify(execFile);
const DIR = resolve(process.env.SCALE_DIR ?? join(process.env.DATA_DIR ?? join(ROOT, 'data'), 'bench-scale'));
const SIZES = (process.env.SCALE_SIZES ?? '100000,1000000,5000000').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const log = (m: string) => process.stderr.write(`[bench-scale] ${m}\n`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

/** A loaded snapshot of `workspaces` workspaces under DIR/<workspaces>, made once. */
async function snapshotOf(workspaces: number): Promise<string> {
  const dataDir = join(DIR, String(workspaces));
  const source = join(dataDir, 'source');
  const sample = { organizations: Math.max(20, Math.round(workspaces / 500)), workspaces, seed: 1, resources: false };
  const marker = join(dataDir, '.loaded');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === JSON.stringify(sample) && (await readCurrentId(dataDir)) !== null) return dataDir;
  mkdirSync(dataDir, { recursive: true });
  log(`${workspaces.toLocaleString('en')} workspaces: writing the source`);
  await writeSample(source, sample);
  log(`${workspaces.toLocaleString('en')} workspaces: loading`);
  const started = performance.now();
  await run(process.execPath, [CLI, 'load', source], { env: { ...process.env, DATA_DIR: dataDir }, maxBuffer: 1 << 26 });
  log(`loaded in ${round((performance.now() - started) / 1000)} s`);
  writeFileSync(marker, JSON.stringify(sample));
  return dataDir;
}

interface Point { workspaces: number; p50: number; p99: number; rps: number; cpuMs: number; non2xx: number }

async function measure(workspaces: number): Promise<Point> {
  const dataDir = await snapshotOf(workspaces);
  const manifest = await readManifest(dataDir, (await readCurrentId(dataDir))!);
  const small = Object.entries(manifest.organizationRows!.workspaces!).filter(([, n]) => n <= 500).map(([org]) => org).slice(0, 300);
  const store = await openStateStore({ dataDir });
  const tokens = await Promise.all(small.map(async (org) => ({ org, token: (await issueToken(store, { kind: 'organization', organization: org, description: 'bench-scale' })).token })));
  await store.close();
  const { url, child } = await startServerProcess({ DATA_DIR: dataDir, RATE_LIMIT_MAX: '100000000', RESPONSE_CACHE_MB: '0' });
  try {
    let distinct = 0;
    const opts: autocannon.Options = {
      url, connections: 16, duration: SECONDS,
      requests: [{ setupRequest: (req) => {
        const pick = tokens[Math.floor(Math.random() * tokens.length)]!;
        // A different filter value every time (no name contains "~<n>"): nothing can come from a cache.
        return { ...req, path: `/api/v2/organizations/${pick.org}/explorer?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bdoes_not_contain%5D%5B0%5D=~${++distinct}`, headers: { Authorization: `Bearer ${pick.token}` } };
      } }],
    };
    await autocannon({ ...opts, duration: 3 } as autocannon.Options);
    const cpu = cpuSeconds(child.pid!);
    const r = await autocannon(opts);
    const cpuMs = ((cpuSeconds(child.pid!) - cpu) * 1000) / Math.max(1, r.requests.total);
    log(`${workspaces.toLocaleString('en')}: ${round(r.requests.average)} req/s, p50 ${r.latency.p50} ms, CPU ${round(cpuMs, 2)} ms/req`);
    return { workspaces, p50: r.latency.p50, p99: r.latency.p99, rps: r.requests.average, cpuMs, non2xx: r.non2xx };
  } finally {
    await stopServerProcess(child);
  }
}

const points: Point[] = [];
for (const size of SIZES) points.push(await measure(size));
const p50s = points.map((p) => p.p50);
const mid = percentile([...p50s], 0.5);
// ±25 % of each other: every p50 within a quarter of the middle one.
const pass = p50s.every((p) => Math.abs(p - mid) <= 0.25 * mid) && points.every((p) => p.non2xx === 0);
const table = ['| workspaces | p50 | p99 | req/s | CPU ms/req |', '|---|---|---|---|---|',
  ...points.map((p) => `| ${p.workspaces.toLocaleString('en')} | ${p.p50} ms | ${p.p99} ms | ${round(p.rps)} | ${round(p.cpuMs, 2)} |`)];
process.stdout.write(`\n${table.join('\n')}\n\nH (p50 within ±25 % of each other): ${pass ? 'yes' : 'NO'}\n`);
const out = join(ROOT, 'bench/results', `scale-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(out, JSON.stringify({ points, pass }, null, 2));
process.stdout.write(`written ${out}\n`);
