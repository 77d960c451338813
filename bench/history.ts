// make bench-history: the history scenarios on HISTORY_DAYS retained snapshots of a sample series (each day
// changing about 2 % of workspaces), over real HTTP on loopback, with every answer uncached. Not part of
// make test.
//
// Environment: HISTORY_DIR (default $DATA_DIR/bench-history), HISTORY_WORKSPACES (default 1,000,000),
// HISTORY_ORGANIZATIONS (default 2,000), HISTORY_DAYS (default 30), HISTORY_RESOURCES=1 (the series with
// resources: thirty loads of a 1M-workspace source with 20M resources take hours here, so they are out by
// default), BENCH_SECONDS (per scenario, default 20), HISTORY_SKIP_LOAD=1 (reuse the loaded snapshots).
import autocannon from 'autocannon';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { issueToken } from '../src/access/tokens.js';
import { listSnapshotIds, readCurrentId, readManifest, snapshotPath } from '../src/snapshots/snapshot-dir.js';
import { writeSampleSeries } from '../src/sample/sample-series.js';
import { openStateStore } from '../src/store/open-store.js';
import { CLI, cpuSeconds, ROOT, startServerProcess, stopServerProcess } from './lib.js';

const run = promisify(execFile);
const DIR = resolve(process.env.HISTORY_DIR ?? join(process.env.DATA_DIR ?? join(ROOT, 'data'), 'bench-history'));
const SOURCE = join(DIR, 'source');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const SERIES = {
  organizations: Number(process.env.HISTORY_ORGANIZATIONS ?? 2000),
  workspaces: Number(process.env.HISTORY_WORKSPACES ?? 1_000_000),
  seed: 1,
  days: Number(process.env.HISTORY_DAYS ?? 30),
  resources: process.env.HISTORY_RESOURCES === '1',
};
const log = (m: string) => process.stderr.write(`[bench-history] ${m}\n`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const rows: { scenario: string; what: string; measured: string; target: string; pass: boolean | null }[] = [];

/**
 * Writes the series a day at a time and loads each day as `explorer load --label day-NN` does, removing the
 * day before once the next is written: thirty days of a 1M-workspace source would need some 50 GB at once.
 */
async function buildHistory(): Promise<void> {
  log(`writing and loading ${SERIES.days} days of ${SERIES.workspaces.toLocaleString('en')} workspaces (sources in ${SOURCE})`);
  rmSync(SOURCE, { recursive: true, force: true });
  const loads: number[] = [];
  let previous: string | null = null;
  await writeSampleSeries(SOURCE, {
    ...SERIES,
    onDay: async (d) => {
      if (previous) rmSync(previous, { recursive: true, force: true });
      previous = d.dir;
      const started = performance.now();
      await run(process.execPath, [CLI, 'load', d.dir, '--label', d.name], {
        env: { ...process.env, DATA_DIR: DIR, SNAPSHOT_KEEP: String(SERIES.days), UV_THREADPOOL_SIZE: '32' }, maxBuffer: 1 << 26,
      });
      loads.push((performance.now() - started) / 1000);
      log(`${d.name}: written in ${round(d.seconds)} s, loaded in ${round(loads[loads.length - 1]!)} s`);
    },
  });
  rmSync(SOURCE, { recursive: true, force: true });
  const total = loads.reduce((a, b) => a + b, 0);
  rows.push({ scenario: 'HL', what: `load of each of ${SERIES.days} days (each load also compacts the snapshot two back)`, measured: `${round(total)} s in all; a day ${round(Math.min(...loads))}–${round(Math.max(...loads))} s`, target: '–', pass: null });
}

const dirBytes = (dir: string): number => readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);

/** The server's CPU per answered request of one autocannon run, in ms, and the run. */
async function cannon(pid: number, label: string, opts: autocannon.Options): Promise<{ r: autocannon.Result; cpuMs: number }> {
  log(`${label}: ${opts.connections} connection(s), ${opts.duration} s`);
  await autocannon({ ...opts, duration: 3 } as autocannon.Options);
  const before = cpuSeconds(pid);
  const r = await autocannon(opts);
  return { r, cpuMs: ((cpuSeconds(pid) - before) * 1000) / Math.max(1, r.requests.total) };
}

let distinct = 0;
/** A filter that matches every row and differs in every request, so that no answer comes from a cache. */
const fresh = (i: number) => `filter%5B${i}%5D%5Bworkspace_name%5D%5Bdoes_not_contain%5D%5B0%5D=~${++distinct}`;

async function main(): Promise<void> {
  mkdirSync(DIR, { recursive: true });
  if (!(process.env.HISTORY_SKIP_LOAD === '1' && (await readCurrentId(DIR)) !== null)) await buildHistory();
  const ids = await listSnapshotIds(DIR);
  const current = (await readCurrentId(DIR))!;
  const manifest = await readManifest(DIR, current);
  const workspaces = Object.entries(manifest.organizationRows!.workspaces!).sort((a, b) => b[1] - a[1]);
  const [largest, largestRows] = workspaces[0]!;
  const small = workspaces.filter(([, n]) => n <= 500).slice(0, 300).map(([o]) => o);

  // Disk: every retained snapshot against the current (whole) one.
  const total = ids.reduce((n, id) => n + dirBytes(snapshotPath(DIR, id)), 0);
  const one = dirBytes(snapshotPath(DIR, current));
  const compacted = ids.filter((id) => existsSync(join(snapshotPath(DIR, id), 'compact.duckdb')));
  const compactBytes = compacted.length ? dirBytes(snapshotPath(DIR, compacted[0]!)) : 0;
  rows.push({ scenario: 'H5', what: `disk for ${ids.length} retained snapshots (${compacted.length} compacted)`,
    measured: `${round(total / 2 ** 30, 2)} GiB = ${round(total / one, 2)} × one whole snapshot (${round(one / 2 ** 20)} MiB; a compacted one ${round(compactBytes / 2 ** 20)} MiB)`,
    target: '≤ 10 × one snapshot', pass: total / one <= 10 });

  const store = await openStateStore({ dataDir: DIR });
  const token = (await issueToken(store, { kind: 'organization', organization: largest, description: 'bench' })).token;
  const smallTokens = await Promise.all(small.map(async (o) => ({ org: o, token: (await issueToken(store, { kind: 'organization', organization: o, description: 'bench' })).token })));
  await store.close();

  const { url, child } = await startServerProcess({ DATA_DIR: DIR, RATE_LIMIT_MAX: '100000000', RESPONSE_CACHE_MB: '0', SNAPSHOT_KEEP: String(SERIES.days) });
  const pid = child.pid!;
  const base = `${url}/api/v2/organizations/${largest}/explorer`;
  const auth = { Authorization: `Bearer ${token}` };
  try {
    log(`largest organization ${largest} (${largestRows} workspaces), ${ids.length} snapshots, ${small.length} small organizations`);
    // H1: the largest organization's providers trend, every request distinct (a third filter that matches every row).
    const aws = 'type=providers&filter%5B0%5D%5Bname%5D%5Bis%5D%5B0%5D=aws&filter%5B1%5D%5Bversion%5D%5Bcontains%5D%5B0%5D=5.&sum=workspace_count';
    const h1 = await cannon(pid, 'H1', { url: base, headers: auth, connections: 1, duration: SECONDS,
      requests: [{ setupRequest: (req) => ({ ...req, path: `/api/v2/organizations/${largest}/explorer/trend?${aws}&filter%5B2%5D%5Bsource%5D%5Bdoes_not_contain%5D%5B0%5D=~${++distinct}` }) }] });
    rows.push({ scenario: 'H1', what: `largest org, trend of providers (name is aws, version contains 5.), ${ids.length} points, 1 conn`,
      measured: `p50 ${h1.r.latency.p50} ms, p99 ${h1.r.latency.p99} ms, CPU ${round(h1.cpuMs)} ms/req`, target: 'p50 ≤ 1 s', pass: h1.r.latency.p50 <= 1000 && h1.r.non2xx === 0 });

    // H2: changes of workspaces between the two newest days, first page.
    const h2 = await cannon(pid, 'H2', { url: base, headers: auth, connections: 1, duration: SECONDS,
      requests: [{ setupRequest: (req) => ({ ...req, path: `/api/v2/organizations/${largest}/explorer/changes?type=workspaces&${fresh(0)}` }) }] });
    rows.push({ scenario: 'H2', what: 'largest org, changes of workspaces between consecutive days, first page, 1 conn',
      measured: `p50 ${h2.r.latency.p50} ms, p99 ${h2.r.latency.p99} ms, CPU ${round(h2.cpuMs)} ms/req`, target: 'p50 ≤ 500 ms', pass: h2.r.latency.p50 <= 500 && h2.r.non2xx === 0 });

    // H3: small organizations' trends, filtered (so that each one queries every snapshot), 16 connections.
    const h3 = await cannon(pid, 'H3', { url, connections: 16, duration: SECONDS,
      requests: [{ setupRequest: (req) => {
        const pick = smallTokens[Math.floor(Math.random() * smallTokens.length)]!;
        return { ...req, path: `/api/v2/organizations/${pick.org}/explorer/trend?type=workspaces&${fresh(0)}`, headers: { Authorization: `Bearer ${pick.token}` } };
      } }] });
    rows.push({ scenario: 'H3', what: `small orgs (≤ 500 ws), trend of workspaces (filtered, ${ids.length} points), 16 conns`,
      measured: `${round(h3.r.requests.average)} req/s, p99 ${h3.r.latency.p99} ms, CPU ${round(h3.cpuMs)} ms/req`, target: '≥ 50 req/s', pass: h3.r.requests.average >= 50 && h3.r.non2xx === 0 });

    // H4: the same query on the current snapshot, the previous (whole) one and the oldest (compacted).
    const query = 'type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bcontains%5D%5B0%5D=api&sort=-workspace_updated_at';
    const p50 = async (label: string, snapshot: string | null) => {
      const { r } = await cannon(pid, label, { url: base, headers: auth, connections: 1, duration: SECONDS,
        requests: [{ setupRequest: (req) => ({ ...req, path: `/api/v2/organizations/${largest}/explorer?${query}&${fresh(1)}${snapshot ? `&snapshot=${snapshot}` : ''}` }) }] });
      return r.latency.p50;
    };
    const now = await p50('H4 current', null);
    for (const [label, id] of [['previous (whole)', ids[ids.length - 2]], ['oldest (compacted)', ids[0]]] as const) {
      if (!id || id === current) continue;
      const then = await p50(`H4 ${label}`, id);
      rows.push({ scenario: 'H4', what: `largest org, A's query with snapshot= the ${label} ÷ on the current one`,
        measured: `${then} ms ÷ ${now} ms = ${round(then / now, 2)}`, target: '≤ 1.2', pass: then / now <= 1.2 });
    }
  } finally {
    await stopServerProcess(child);
  }

  console.log(`\n${SERIES.days} days of ${SERIES.workspaces.toLocaleString('en')} workspaces${SERIES.resources ? ' with resources' : ''}; every answer uncached.\n`);
  console.log('| # | scenario | measured | target | ok |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.scenario} | ${r.what} | ${r.measured} | ${r.target} | ${r.pass === null ? '–' : r.pass ? 'yes' : 'NO'} |`);
  const out = join(ROOT, 'bench', 'results', `history-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), series: SERIES, snapshots: ids.length, largest, rows }, null, 2) + '\n');
  console.log(`\nwritten ${out}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
