// make bench: the page, export and load scenarios (docs/performance.md) on a 1,000,000-workspace snapshot, measured over real
// HTTP on loopback (autocannon) and, for the same work, in-process with @duckdb/node-api on the same files,
// so that every figure is also a ratio to the engine's own speed. Not part of make test.
//
// Environment: BENCH_DIR (default $DATA_DIR/bench), BENCH_SECONDS (per scenario, default 20),
// BENCH_MIXED_SECONDS (default 60), BENCH_SKIP_LOAD=1 (reuse the loaded snapshot; F not measured),
// BENCH_SCENARIOS (default A,B,B',C,D,E,F,F',G,R1,R2,R3,R4,SU1,SU2,SU3,SU4,O1,O2,O3,X1,X2,X3; F' loads the source without its resources;
// the R scenarios are on the resources view, the SU ones are summaries, the O ones Parquet, NDJSON and cursor pages, the X ones
// across organizations).
import autocannon from 'autocannon';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { Agent, get } from 'node:http';
import { join, resolve } from 'node:path';
import { issueToken } from '../src/access/tokens.js';
import { compileQuery } from '../src/query/compile.js';
import { compileSummary } from '../src/query/compile-summary.js';
import { parseSummary, SUMMARY_PARAMETERS } from '../src/query/summary.js';
import { parseQueryParameters } from '../src/query/parse-query.js';
import { decodeQueryString } from '../src/query/query-string.js';
import { readCurrentId, snapshotPath } from '../src/snapshots/snapshot-dir.js';
import { openSnapshot } from '../src/snapshots/read/current-snapshot.js';
import { openStateStore } from '../src/store/open-store.js';
import { keptAgent } from '../test/helpers/kept-agent.js';
import { A_QUERY, C_QUERY, cpuSeconds, ensureSample, mixedLoad, organizations, percentile, R1_QUERY, ROOT, rssMb, smallFiltered, startServerProcess, stopServerProcess, timedLoad, type MixedRequest } from './lib.js';
import { openInstance, openServingInstance } from '../src/duckdb/open-instance.js';
import { pageRows } from '../workers/page-json.js';

const BENCH_DIR = resolve(process.env.BENCH_DIR ?? join(process.env.DATA_DIR ?? join(ROOT, 'data'), 'bench'));
const SOURCE = join(BENCH_DIR, 'source');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const MIXED_SECONDS = Number(process.env.BENCH_MIXED_SECONDS ?? 60);
const SCENARIOS = new Set((process.env.BENCH_SCENARIOS ?? "A,B,B',C,D,E,F,F',G,R1,R2,R3,R4,SU1,SU2,SU3,SU4,O1,O2,O3,X1,X2,X3").split(','));
/** The summaries of SU1–SU3 (docs/summaries.md), on the largest organization. */
const SUMMARIES = {
  SU1: { path: '/summary?type=workspaces&group_by=project_name', what: 'workspaces grouped by project_name', target: 30 },
  SU2: { path: '/summary?type=workspaces&group_by=tags', what: 'workspaces grouped by tags (each element)', target: 60 },
  SU3: { path: '/summary?type=resources&group_by=provider_type', what: 'resources grouped by provider_type', target: 100 },
} as const;
const SAMPLE = { organizations: 2000, workspaces: 1_000_000, seed: 1, resources: true };
/** X2 (docs/access.md): every workspace of every organization, by engine version. */
const X2_PATH = '/summary?type=workspaces&group_by=workspace_terraform_version';

interface Row {
  scenario: string;
  what: string;
  p50_ms?: number;
  p99_ms?: number;
  rps?: number;
  mb_s?: number;
  rss_mb?: string;
  errors?: number;
  measured: string;
  target: string;
  pass: boolean | null;
}
const rows: Row[] = [];
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

async function scenarioF(): Promise<void> {
  log('F: loading the bench source');
  const { seconds, gib } = await timedLoad(SOURCE, BENCH_DIR);
  // The source holds resources (about 20 a workspace): F' has the target for the source without them,
  // this one the target for the source with them.
  rows.push({
    scenario: 'F', what: 'load of the bench source (1M workspaces with their resources)', measured: `${round(seconds)} s, peak RSS ${round(gib, 2)} GiB`,
    target: '≤ 300 s, peak RSS ≤ 6 GiB', pass: seconds <= 300 && gib <= 6,
  });
}

/**
 * F': the same source without its resources file (symlinks to the other files), loaded into a
 * data directory of its own so that the bench snapshot stays as it is.
 */
async function scenarioFWithoutResources(): Promise<void> {
  const source = join(BENCH_DIR, 'source-without-resources');
  const dataDir = join(BENCH_DIR, 'without-resources');
  mkdirSync(source, { recursive: true });
  for (const f of readdirSync(SOURCE)) {
    if (f.startsWith('workspace_resources') || f.startsWith('.') || existsSync(join(source, f))) continue;
    symlinkSync(join(SOURCE, f), join(source, f));
  }
  rmSync(dataDir, { recursive: true, force: true });
  log("F': loading the bench source without its resources");
  const { seconds, gib } = await timedLoad(source, dataDir);
  rmSync(dataDir, { recursive: true, force: true });
  rows.push({
    scenario: "F'", what: 'load of the bench source without resources (1M workspaces)', measured: `${round(seconds)} s, peak RSS ${round(gib, 2)} GiB`,
    target: '≤ 90 s, peak RSS ≤ 3 GiB', pass: seconds <= 90 && gib <= 3,
  });
}

const R2_QUERY = '?type=resources';
let resourcesOf: (org: string) => number = () => Number.NaN;
const SMALL_QUERY = '?type=workspaces';

/** The server's CPU per answered request over the last measured run, in ms. */
let lastCpuMs = Number.NaN;
let serverPid = 0;

async function cannon(label: string, opts: autocannon.Options): Promise<autocannon.Result> {
  log(`${label}: ${opts.connections} connection(s), ${opts.duration} s`);
  // The warm-up runs first on its own, so that the CPU counted below is the measured run's only.
  await autocannon({ ...opts, duration: 3 } as autocannon.Options);
  const cpu = cpuSeconds(serverPid);
  const r = await autocannon(opts);
  lastCpuMs = ((cpuSeconds(serverPid) - cpu) * 1000) / Math.max(1, r.requests.total);
  return r;
}
const cpu = () => `, CPU ${round(lastCpuMs, 2)} ms/req`;

/**
 * G: the HTTP answer's time against the worker's own work for the same query (in this process, one DuckDB
 * thread, a kept connection, statements prepared once, the plan the server chooses), in alternating blocks of
 * BLOCK requests and BLOCK in-process runs. Timed with performance.now() on both sides, so that neither whole
 * milliseconds (autocannon's) nor the machine's drift between two separate runs decides the ratio. Blocks,
 * not single pairs: two buffer pools reading the same rows in turn evicted each other's from the CPU caches,
 * and both sides measured slower than either does alone (docs/performance.md, "Where an answer's time goes").
 */
const BLOCK = 20;
async function httpOverEngine(id: string, org: string | null, query: string, url: string, token: string, rounds = 10): Promise<{ http: number; engine: number }> {
  const db = await openServingInstance({ threads: '1' });
  const c = await db.connect();
  const summaryPath = query.startsWith('/summary');
  const params = decodeQueryString(query.slice(query.indexOf('?') + 1));
  // A summary's own parameters (its `sort` orders groups) are not the query's; a page keeps every parameter.
  // `org` null: across organizations, every organization of the snapshot (as an auditor token reaches them).
  const { query: q } = parseQueryParameters('terraform', summaryPath ? new Map([...params].filter(([k]) => !(SUMMARY_PARAMETERS as readonly string[]).includes(k))) : params, org === null);
  // The same storage and the same compile target as the service (Snapshot.target), so G compares like with like.
  const snapshot = await openSnapshot(BENCH_DIR, id);
  if (snapshot.attachment) await c.run(`ATTACH '${snapshot.attachment.path}' AS "${snapshot.attachment.alias}" (READ_ONLY)`);
  const target = org === null ? snapshot.across(q.view.name, [...snapshot.organizations]) : snapshot.target(q.view.name, org);
  // A summary is one statement whose rows the route reads out whole (routes/summary.ts).
  const compiled = summaryPath
    ? { knownTotal: 0, pageCountsTotal: true, count: { sql: '', params: [] }, page: compileSummary(parseSummary('terraform', q, params), target).page, valueIndexes: undefined }
    : compileQuery(q, target);
  // As the worker runs them: prepared once on a kept connection, the count only when the page has no total.
  const count = compiled.knownTotal === undefined && !compiled.pageCountsTotal ? await c.prepare(compiled.count.sql) : null;
  const page = await c.prepare(compiled.page.sql);
  count?.bind(compiled.count.params as never);
  page.bind(compiled.page.params as never);
  const agent = keptAgent(1);
  const answer = () => new Promise<void>((resolveDone, reject) => {
    get(`${url}${query}`, { agent, headers: { Authorization: `Bearer ${token}` } }, (res) => {
      res.on('data', () => {});
      res.on('end', () => (res.statusCode === 200 ? resolveDone() : reject(new Error(`G: status ${res.statusCode}`))));
      res.on('error', reject);
    }).on('error', reject);
  });
  const run = async () => {
    // Reading the rows out into JS is part of the same work, as the worker reads them (row JSON as bytes).
    if (count) (await count.runAndReadAll()).getRows();
    if (summaryPath) (await page.runAndReadAll()).getRows();
    else await pageRows(await page.run(), compiled.valueIndexes !== undefined);
  };
  const timed = async (f: () => Promise<void>, into: number[], n: number) => {
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await f();
      into.push(performance.now() - t);
    }
  };
  await timed(answer, [], 10);
  await timed(run, [], 10);
  const http: number[] = [];
  const engine: number[] = [];
  for (let block = 0; block < rounds; block++) {
    await timed(answer, http, BLOCK);
    await timed(run, engine, BLOCK);
  }
  agent.destroy();
  count?.destroySync();
  page.destroySync();
  c.closeSync();
  db.closeSync();
  return { http: percentile(http, 0.5), engine: percentile(engine, 0.5) };
}

/** Best of three exports of a view of the largest organization: MB/s, first byte, server RSS growth. */
async function csvScenario(label: string, view: string, org: string, token: string, pid: number, target: string): Promise<void> {
  log(`${label}: CSV export of ${org}'s ${view} (3 runs)`);
  const runs = [];
  for (let i = 0; i < 3; i++) {
    const one = await exportOnce(`${serverUrl}/api/v2/organizations/${org}/explorer/export/csv?type=${view}`, token, pid);
    // Each run's own growth: a cache that fills once shows on the first run only, a leak on every one.
    log(`${label} run ${i + 1}: ${round(one.bytes / 1e6 / one.seconds)} MB/s, RSS +${round(one.rssGrowth)} MB (now ${round(rssMb(pid))} MB)`);
    runs.push(one);
  }
  const best = runs.reduce((a, b) => (b.bytes / b.seconds > a.bytes / a.seconds ? b : a));
  const mbs = best.bytes / 1e6 / best.seconds;
  const ttfb = Math.min(...runs.map((x) => x.ttfb));
  const growth = Math.max(...runs.map((x) => x.rssGrowth));
  rows.push({ scenario: label, what: `CSV export, largest org, ${view} (${round(best.bytes / 1e6)} MB)`, mb_s: round(mbs), rss_mb: `+${round(growth)}`,
    measured: `${round(mbs)} MB/s, first byte ${round(ttfb)} ms, RSS +${round(growth)} MB`, target, pass: mbs >= 150 && growth <= 64 && (label !== 'D' || ttfb <= 100) });
}
let serverUrl = '';

/**
 * O1, O2 (docs/data-out.md): the largest organization's resources exported whole as CSV, Parquet and NDJSON,
 * each best of three, in rows per second, with the server's CPU per export; Parquet and NDJSON against the CSV.
 */
async function formatScenarios(org: string, token: string, pid: number): Promise<void> {
  const rowsExported = resourcesOf(org);
  const best: Record<string, { rowsPerSecond: number; mb: number; cpu: number; rss: number }> = {};
  for (const format of ['csv', 'parquet', 'ndjson']) {
    log(`O: ${format} export of ${org}'s resources (3 runs)`);
    for (let i = 0; i < 3; i++) {
      const cpu = cpuSeconds(pid);
      const one = await exportOnce(`${serverUrl}/api/v2/organizations/${org}/explorer/export/${format}?type=resources`, token, pid);
      const run = { rowsPerSecond: rowsExported / one.seconds, mb: one.bytes / 1e6, cpu: cpuSeconds(pid) - cpu, rss: one.rssGrowth };
      log(`O ${format} run ${i + 1}: ${round(run.rowsPerSecond / 1e6, 2)} M rows/s, ${round(run.mb)} MB, CPU ${round(run.cpu, 2)} s, RSS +${round(run.rss)} MB`);
      if (!best[format] || run.rowsPerSecond > best[format]!.rowsPerSecond) best[format] = run;
    }
  }
  const csv = best.csv!;
  for (const [label, format, share] of [['O1', 'parquet', 0.5], ['O2', 'ndjson', 0.7]] as const) {
    const b = best[format]!;
    const ratio = b.rowsPerSecond / csv.rowsPerSecond;
    rows.push({ scenario: label, what: `${format} export, largest org, resources (${rowsExported} rows, ${round(b.mb)} MB; CSV ${round(csv.mb)} MB)`, mb_s: round(b.mb * b.rowsPerSecond / rowsExported),
      measured: `${round(b.rowsPerSecond / 1e6, 2)} M rows/s = ${round(ratio * 100)} % of CSV's ${round(csv.rowsPerSecond / 1e6, 2)} M rows/s; CPU ${round(b.cpu, 2)} s (CSV ${round(csv.cpu, 2)} s); RSS +${round(b.rss)} MB`,
      target: `≥ ${share * 100} % of the CSV export's rows/s`, pass: ratio >= share });
  }
}

/** `n` GETs of `url` one after another on one kept connection, each timed with performance.now(), in ms. */
async function timedGets(url: string, token: string, n: number, agent: Agent): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await new Promise<void>((resolveDone, reject) => {
      get(url, { agent, headers: { Authorization: `Bearer ${token}` } }, (res) => {
        res.on('data', () => {});
        res.on('end', () => (res.statusCode === 200 ? resolveDone() : reject(new Error(`${url}: status ${res.statusCode}`))));
        res.on('error', reject);
      }).on('error', reject);
    });
    times.push(performance.now() - started);
  }
  return times;
}

/**
 * O3 (docs/data-out.md): page 1,000 of the largest organization's workspaces by cursor (page[size]=100, by
 * name) against page 1, uncached, in alternating blocks so that neither side gets the quieter moments; the
 * numbered page 1,000 beside them shows what the cursor saves. Server CPU per request is measured per side.
 */
async function cursorScenario(org: string, token: string, pid: number): Promise<void> {
  const query = `${serverUrl}/api/v2/organizations/${org}/explorer?type=workspaces&sort=workspace_name&page%5Bsize%5D=100`;
  log('O3: walking 999 pages by cursor to reach page 1,000');
  let next = `${query}&page%5Bafter%5D=`;
  for (let page = 1; page < 1000; page++) {
    const res = await fetch(next, { headers: { Authorization: `Bearer ${token}` } });
    const body = await res.json() as { links: { next: string | null } };
    if (!body.links.next) throw new Error(`O3: the walk ended at page ${page}`);
    next = body.links.next;
  }
  const sides = { first: `${query}&page%5Bnumber%5D=1`, cursor: next, numbered: `${query}&page%5Bnumber%5D=1000` };
  const agent = keptAgent(1);
  const times: Record<string, number[]> = { first: [], cursor: [], numbered: [] };
  const cpu: Record<string, number> = { first: 0, cursor: 0, numbered: 0 };
  for (const [side, url] of Object.entries(sides)) await timedGets(url, token, 10, agent); // warm-up
  for (let block = 0; block < 10; block++) {
    for (const [side, url] of Object.entries(sides)) {
      const before = cpuSeconds(pid);
      times[side]!.push(...await timedGets(url, token, 20, agent));
      cpu[side]! += cpuSeconds(pid) - before;
    }
  }
  agent.destroy();
  const p50 = (side: string) => percentile(times[side]!, 0.5);
  const cpuMs = (side: string) => (cpu[side]! * 1000) / times[side]!.length;
  const ratio = p50('cursor') / p50('first');
  rows.push({ scenario: 'O3', what: `largest org, workspaces by name, page[size]=100: page 1,000 by cursor against page 1, 200 of each, 1 conn`, p50_ms: round(p50('cursor'), 2),
    measured: `page 1 ${round(p50('first'), 2)} ms (CPU ${round(cpuMs('first'), 2)} ms/req), page 1,000 by cursor ${round(p50('cursor'), 2)} ms (CPU ${round(cpuMs('cursor'), 2)} ms/req) = ${round(ratio, 2)}×; `
      + `numbered page 1,000 ${round(p50('numbered'), 2)} ms (CPU ${round(cpuMs('numbered'), 2)} ms/req)`,
    target: '≤ 1.2× page 1', pass: ratio <= 1.2 });
}

async function exportOnce(url: string, token: string, pid: number): Promise<{ ttfb: number; seconds: number; bytes: number; rssGrowth: number }> {
  const base = rssMb(pid);
  let peak = base;
  const sampler = setInterval(() => { peak = Math.max(peak, rssMb(pid)); }, 25);
  const started = performance.now();
  let ttfb = 0;
  let bytes = 0;
  await new Promise<void>((resolveDone, reject) => {
    get(url, { headers: { Authorization: `Bearer ${token}` } }, (res) => {
      res.on('data', (chunk: Buffer) => { if (bytes === 0) ttfb = performance.now() - started; bytes += chunk.length; });
      res.on('end', () => (res.complete ? resolveDone() : reject(new Error('export cut off'))));
      res.on('error', reject);
    }).on('error', reject);
  });
  clearInterval(sampler);
  return { ttfb, seconds: (performance.now() - started) / 1000, bytes, rssGrowth: peak - base };
}

/**
 * X1–X3 (docs/access.md): across organizations with an auditor token, which reaches all 2,000. X1 filters the
 * workspaces to the engine version nearest 1 % of them (read off X2's answer) and sorts by name; each JSON
 * scenario also against the same statements in-process.
 */
async function acrossScenarios(id: string, url: string, pid: number): Promise<void> {
  const store = await openStateStore({ dataDir: BENCH_DIR });
  const auditor = (await issueToken(store, { kind: 'auditor', organization: null, team: null, user: null, description: 'bench' })).token;
  await store.close();
  const auth = { Authorization: `Bearer ${auditor}` };
  const across = `${url}/api/v2/explorer`;
  const versions = await new Promise<{ version: string; count: number }[]>((resolveDone, reject) => {
    get(`${across}${X2_PATH}&page%5Bsize%5D=100`, { headers: auth }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => { text += c.toString(); });
      res.on('end', () => resolveDone((JSON.parse(text) as { data: { attributes: Record<string, unknown> }[] }).data
        .map((g) => ({ version: String(g.attributes['workspace-terraform-version']), count: Number(g.attributes.count) }))));
    }).on('error', reject);
  });
  const total = versions.reduce((n, v) => n + v.count, 0);
  const chosen = versions.reduce((a, b) => (Math.abs(b.count - total / 100) < Math.abs(a.count - total / 100) ? b : a));
  const x1 = `?type=workspaces&filter%5B0%5D%5Bworkspace_terraform_version%5D%5Bis%5D%5B0%5D=${encodeURIComponent(chosen.version)}&sort=workspace_name&page%5Bsize%5D=100`;
  if (SCENARIOS.has('X1')) {
    const r = await cannon('X1', { url: `${across}${x1}`, headers: auth, connections: 1, duration: SECONDS });
    const { http, engine } = await httpOverEngine(id, null, x1, across, auditor, 5);
    rows.push({ scenario: 'X1', what: `across organizations, workspaces with engine ${chosen.version} (${chosen.count} of ${total}), sorted by name, 100 rows, auditor, 1 conn`,
      p50_ms: r.latency.p50, p99_ms: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx,
      measured: `p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms${cpu()}; HTTP ${round(http, 2)} ÷ in-process ${round(engine, 2)} ms = ${round(http / engine, 2)}`,
      target: 'p50 ≤ 150 ms', pass: r.latency.p50 <= 150 && r.non2xx === 0 });
  }
  if (SCENARIOS.has('X2')) {
    const r = await cannon('X2', { url: `${across}${X2_PATH}`, headers: auth, connections: 1, duration: SECONDS });
    const { http, engine } = await httpOverEngine(id, null, X2_PATH, across, auditor, 5);
    rows.push({ scenario: 'X2', what: 'across organizations, summary of workspaces by workspace_terraform_version, auditor, 1 conn',
      p50_ms: r.latency.p50, p99_ms: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx,
      measured: `p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms${cpu()}; HTTP ${round(http, 2)} ÷ in-process ${round(engine, 2)} ms = ${round(http / engine, 2)}`,
      target: 'p50 ≤ 100 ms', pass: r.latency.p50 <= 100 && r.non2xx === 0 });
  }
  if (SCENARIOS.has('X3')) {
    log('X3: CSV export of every workspace across organizations (3 runs)');
    const runs = [];
    for (let i = 0; i < 3; i++) {
      const cpu0 = cpuSeconds(pid);
      const one = await exportOnce(`${across}/export/csv?type=workspaces`, auditor, pid);
      const cpuS = cpuSeconds(pid) - cpu0;
      log(`X3 run ${i + 1}: ${round(one.bytes / 1e6 / one.seconds)} MB/s, ${round(one.seconds, 2)} s, server CPU ${round(cpuS, 2)} s, RSS +${round(one.rssGrowth)} MB`);
      runs.push({ ...one, cpuS });
    }
    const best = runs.reduce((a, b) => (b.bytes / b.seconds > a.bytes / a.seconds ? b : a));
    const mbs = best.bytes / 1e6 / best.seconds;
    rows.push({ scenario: 'X3', what: `across organizations, CSV export of every workspace (${round(best.bytes / 1e6)} MB), auditor`, mb_s: round(mbs), rss_mb: `+${round(best.rssGrowth)}`,
      measured: `${round(mbs)} MB/s, first byte ${round(best.ttfb)} ms, server CPU ${round(best.cpuS, 2)} s, RSS +${round(best.rssGrowth)} MB`, target: '≥ 100 MB/s', pass: mbs >= 100 });
  }
}

async function main(): Promise<void> {
  mkdirSync(BENCH_DIR, { recursive: true });
  await ensureSample(SOURCE, SAMPLE, log);
  const haveSnapshot = (await readCurrentId(BENCH_DIR)) !== null;
  if (SCENARIOS.has('F') && !(process.env.BENCH_SKIP_LOAD === '1' && haveSnapshot)) await scenarioF();
  else if (!haveSnapshot) throw new Error('no bench snapshot: run without BENCH_SKIP_LOAD first');
  if (SCENARIOS.has("F'")) await scenarioFWithoutResources();
  const id = (await readCurrentId(BENCH_DIR))!;
  const dir = snapshotPath(BENCH_DIR, id);
  const orgs = await organizations(dir);
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { organizationRows: Record<string, Record<string, number>>; sizes?: Record<string, number> };
  resourcesOf = (org) => manifest.organizationRows.resources?.[org] ?? 0;
  log(`snapshot files: ${JSON.stringify(manifest.sizes)}`);
  const largest = orgs[0]!;
  const small = orgs.filter((o) => o.workspaces <= 500).slice(0, 300);
  log(`largest organization ${largest.name} (${largest.workspaces} workspaces); ${small.length} small organizations`);

  const store = await openStateStore({ dataDir: BENCH_DIR });
  const token = (await issueToken(store, { kind: 'organization', organization: largest.name, description: 'bench' })).token;
  const smallTokens = await Promise.all(small.map(async (o) => ({ org: o.name, token: (await issueToken(store, { kind: 'organization', organization: o.name, description: 'bench' })).token })));
  await store.close();

  // As `npm run explorer -- serve` starts it, with the rate limit out of the way of a load test.
  // The response cache is off for every scenario but B': each of them measures the query path itself.
  const { url, child } = await startServerProcess({ DATA_DIR: BENCH_DIR, RATE_LIMIT_MAX: '100000000', RESPONSE_CACHE_MB: '0' });
  const pid = child.pid!;
  serverPid = pid;
  serverUrl = url;
  const auth = { Authorization: `Bearer ${token}` };
  const orgUrl = (org: string) => `${url}/api/v2/organizations/${org}/explorer`;
  const results: Record<string, autocannon.Result> = {};
  try {
    if (SCENARIOS.has('A')) {
      const r = results.A = await cannon('A', { url: `${orgUrl(largest.name)}${A_QUERY}`, headers: auth, connections: 1, duration: SECONDS });
      rows.push({ scenario: 'A', what: `largest org, workspaces, contains + sort, 20 rows, 1 conn`, p50_ms: r.latency.p50, p99_ms: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx,
        measured: `p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms${cpu()}`, target: 'p50 ≤ 20 ms, p99 ≤ 40 ms', pass: r.latency.p50 <= 20 && r.latency.p99 <= 40 && r.non2xx === 0 });
    }
    if (SCENARIOS.has('B')) {
      const r = results.B = await cannon('B', {
        url, connections: 16, duration: SECONDS,
        requests: [{ setupRequest: (req) => {
          const pick = smallTokens[Math.floor(Math.random() * smallTokens.length)]!;
          return { ...req, path: `/api/v2/organizations/${pick.org}/explorer${smallFiltered()}`, headers: { Authorization: `Bearer ${pick.token}` } };
        } }],
      });
      rows.push({ scenario: 'B', what: 'small orgs (≤ 500 ws) at random, default page + one filter, every request distinct, 16 conns', p50_ms: r.latency.p50, p99_ms: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx,
        measured: `${round(r.requests.average)} req/s, p99 ${r.latency.p99} ms${cpu()}`, target: '≥ 600 req/s, p99 ≤ 80 ms', pass: r.requests.average >= 600 && r.latency.p99 <= 80 && r.non2xx === 0 });
    }
    if (SCENARIOS.has("B'")) {
      // The same pages asked again and again of a server with its response cache on: after the warm-up,
      // the cache answers them.
      const cached = await startServerProcess({ DATA_DIR: BENCH_DIR, RATE_LIMIT_MAX: '100000000' });
      serverPid = cached.child.pid!;
      const r = results["B'"] = await cannon("B'", {
        url: cached.url, connections: 16, duration: SECONDS,
        requests: [{ setupRequest: (req) => {
          const pick = smallTokens[Math.floor(Math.random() * smallTokens.length)]!;
          return { ...req, path: `/api/v2/organizations/${pick.org}/explorer${SMALL_QUERY}`, headers: { Authorization: `Bearer ${pick.token}` } };
        } }],
      });
      await stopServerProcess(cached.child);
      serverPid = pid;
      rows.push({ scenario: "B'", what: 'small orgs, default pages repeated (response cache on), 16 conns', p50_ms: r.latency.p50, p99_ms: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx,
        measured: `${round(r.requests.average)} req/s, p99 ${r.latency.p99} ms${cpu()}`, target: '≥ 5,000 req/s', pass: r.requests.average >= 5000 && r.non2xx === 0 });
    }
    if (SCENARIOS.has('C')) {
      const r = results.C = await cannon('C', { url: `${orgUrl(largest.name)}${C_QUERY}`, headers: auth, connections: 1, duration: SECONDS });
      rows.push({ scenario: 'C', what: 'largest org, providers, default page, 1 conn', p50_ms: r.latency.p50, p99_ms: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx,
        measured: `p50 ${r.latency.p50} ms${cpu()}`, target: 'p50 ≤ 15 ms', pass: r.latency.p50 <= 15 && r.non2xx === 0 });
    }
    if (SCENARIOS.has('D')) await csvScenario('D', 'workspaces', largest.name, token, pid, '≥ 150 MB/s, first byte ≤ 100 ms, RSS growth ≤ 64 MB');
    if (SCENARIOS.has('E')) {
      const rss: number[] = [rssMb(pid)];
      const sampler = setInterval(() => rss.push(rssMb(pid)), 1000);
      const pick = (): MixedRequest => {
        const x = Math.random();
        if (x < 0.4) return { kind: 'A', path: `/api/v2/organizations/${largest.name}/explorer${A_QUERY}`, headers: auth };
        if (x < 0.8) {
          const small = smallTokens[Math.floor(Math.random() * smallTokens.length)]!;
          return { kind: 'B', path: `/api/v2/organizations/${small.org}/explorer${smallFiltered()}`, headers: { Authorization: `Bearer ${small.token}` } };
        }
        if (x < 0.95) return { kind: 'C', path: `/api/v2/organizations/${largest.name}/explorer${C_QUERY}`, headers: auth };
        return { kind: 'D', path: `/api/v2/organizations/${largest.name}/explorer/export/csv?type=workspaces`, headers: auth };
      };
      log(`E: 32 connections, ${MIXED_SECONDS} s`);
      await mixedLoad(url, 32, 3, pick);
      const cpuBefore = cpuSeconds(pid);
      const r = await mixedLoad(url, 32, MIXED_SECONDS, pick);
      clearInterval(sampler);
      const cpuMs = ((cpuSeconds(pid) - cpuBefore) * 1000) / Object.values(r.kinds).reduce((n, k) => n + k.requests, 0);
      log(`E: ${JSON.stringify(r.kinds)}`);
      const third = Math.max(1, Math.floor(rss.length / 3));
      const early = Math.max(...rss.slice(0, third)), late = Math.max(...rss.slice(-third));
      const pages = ['A', 'B', 'C'].map((k) => r.kinds[k]).filter((k) => k !== undefined);
      const pageP99 = Math.max(...pages.map((k) => k.p99_ms));
      const slowestExport = r.kinds.D?.slowest_mb_s ?? Number.NaN;
      const each = Object.entries(r.kinds).sort().map(([k, f]) => `${k} ${f.requests} × p50 ${f.p50_ms} / p99 ${f.p99_ms} ms${f.slowest_mb_s !== undefined ? `, slowest ${f.slowest_mb_s} MB/s` : ''}`).join('; ');
      rows.push({ scenario: 'E', what: 'mixed A/B/C/D 40/40/15/5, 32 conns', p99_ms: pageP99, rps: r.rps, errors: r.errors, rss_mb: `${round(rss[0]!)}→${round(rss[rss.length - 1]!)} (max ${round(Math.max(...rss))})`,
        measured: `${round(r.rps)} req/s, ${r.errors} errors, ${each}, CPU ${round(cpuMs, 2)} ms/req, RSS ${round(early)}→${round(late)} MB`,
        target: 'zero errors; A, B, C p99 ≤ 500 ms; every export ≥ 30 MB/s; ≥ 80 req/s; RSS steady',
        pass: r.errors === 0 && pageP99 <= 500 && slowestExport >= 30 && r.rps >= 80 && late <= early * 1.1 });
    }
    if (SCENARIOS.has('R1')) {
      const r = results.R1 = await cannon('R1', { url: `${orgUrl(largest.name)}${R1_QUERY}`, headers: auth, connections: 1, duration: SECONDS });
      rows.push({ scenario: 'R1', what: `largest org (${resourcesOf(largest.name)} resources), resources, provider_type is aws_instance, sort -source_updated_at, 20 rows, 1 conn`, p50_ms: r.latency.p50, p99_ms: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx,
        measured: `p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms${cpu()}`, target: 'p50 ≤ 50 ms', pass: r.latency.p50 <= 50 && r.non2xx === 0 });
    }
    if (SCENARIOS.has('R2')) {
      const r = results.R2 = await cannon('R2', { url: `${orgUrl(largest.name)}${R2_QUERY}`, headers: auth, connections: 1, duration: SECONDS });
      rows.push({ scenario: 'R2', what: 'largest org, resources, default page, 1 conn', p50_ms: r.latency.p50, p99_ms: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx,
        measured: `p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms${cpu()}`, target: 'p50 ≤ 30 ms', pass: r.latency.p50 <= 30 && r.non2xx === 0 });
    }
    if (SCENARIOS.has('R3')) await csvScenario('R3', 'resources', largest.name, token, pid, '≥ 150 MB/s, RSS growth ≤ 64 MB');
    if (SCENARIOS.has('O1') || SCENARIOS.has('O2')) await formatScenarios(largest.name, token, pid);
    if (SCENARIOS.has('O3')) await cursorScenario(largest.name, token, pid);
    if (SCENARIOS.has('R4')) {
      const r = results.R4 = await cannon('R4', {
        url, connections: 16, duration: SECONDS,
        requests: [{ setupRequest: (req) => {
          const pick = smallTokens[Math.floor(Math.random() * smallTokens.length)]!;
          return { ...req, path: `/api/v2/organizations/${pick.org}/explorer${R2_QUERY}`, headers: { Authorization: `Bearer ${pick.token}` } };
        } }],
      });
      rows.push({ scenario: 'R4', what: 'small orgs (≤ 500 ws) at random, resources default page, 16 conns', p50_ms: r.latency.p50, p99_ms: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx,
        measured: `${round(r.requests.average)} req/s, p99 ${r.latency.p99} ms${cpu()}`, target: '≥ 400 req/s', pass: r.requests.average >= 400 && r.non2xx === 0 });
    }
    for (const [label, summary] of Object.entries(SUMMARIES)) {
      if (!SCENARIOS.has(label)) continue;
      const r = results[label] = await cannon(label, { url: `${orgUrl(largest.name)}${summary.path}`, headers: auth, connections: 1, duration: SECONDS });
      const { http, engine } = await httpOverEngine(id, largest.name, summary.path, orgUrl(largest.name), token, 5);
      rows.push({ scenario: label, what: `largest org, ${summary.what}, uncached, 1 conn`, p50_ms: r.latency.p50, p99_ms: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx,
        measured: `p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms${cpu()}; HTTP ${round(http, 2)} ÷ in-process ${round(engine, 2)} ms = ${round(http / engine, 2)}`,
        target: `p50 ≤ ${summary.target} ms`, pass: r.latency.p50 <= summary.target && r.non2xx === 0 });
    }
    if (SCENARIOS.has('SU4')) {
      // Every request distinct (a filter that matches every row), so that nothing but the engine answers.
      const r = results.SU4 = await cannon('SU4', {
        url, connections: 16, duration: SECONDS,
        requests: [{ setupRequest: (req) => {
          const pick = smallTokens[Math.floor(Math.random() * smallTokens.length)]!;
          return { ...req, path: `/api/v2/organizations/${pick.org}/explorer/summary${smallFiltered().replace('?', '?group_by=project_name&sum=resource_count&')}`, headers: { Authorization: `Bearer ${pick.token}` } };
        } }],
      });
      rows.push({ scenario: 'SU4', what: 'small orgs (≤ 500 ws) at random, workspaces by project_name with a sum, every request distinct, 16 conns', p50_ms: r.latency.p50, p99_ms: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx,
        measured: `${round(r.requests.average)} req/s, p99 ${r.latency.p99} ms${cpu()}`, target: '≥ 600 req/s', pass: r.requests.average >= 600 && r.non2xx === 0 });
    }
    if (SCENARIOS.has('X1') || SCENARIOS.has('X2') || SCENARIOS.has('X3')) await acrossScenarios(id, url, pid);
    if (SCENARIOS.has('G')) {
      for (const [label, query] of [['A', A_QUERY], ['C', C_QUERY], ['R1', R1_QUERY], ['R2', R2_QUERY]] as const) {
        log(`G: HTTP and in-process DuckDB for ${label}, in alternating blocks`);
        const { http, engine } = await httpOverEngine(id, largest.name, query, orgUrl(largest.name), token);
        const ratio = http / engine;
        rows.push({ scenario: `G-${label}`, what: `HTTP p50 ÷ in-process DuckDB p50 (${label}), 200 of each in alternating blocks`, p50_ms: round(http, 2),
          measured: `${round(http, 2)} ms ÷ ${round(engine, 2)} ms = ${round(ratio, 2)}`, target: '≤ 1.2', pass: ratio <= 1.2 });
      }
    }
  } finally {
    await stopServerProcess(child);
  }

  console.log("\nEvery scenario but B' is uncached: its requests are distinct or its answers too large to keep.\n");
  console.log('| # | scenario | measured | target | ok |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.scenario} | ${r.what} | ${r.measured} | ${r.target} | ${r.pass === null ? '–' : r.pass ? 'yes' : 'NO'} |`);
  const out = join(ROOT, 'bench', 'results', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  console.log(`\nSnapshot files (bytes): ${JSON.stringify(manifest.sizes)}`);
  writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), snapshot: id, largest, sample: SAMPLE, seconds: SECONDS, mixedSeconds: MIXED_SECONDS, sizes: manifest.sizes, rows }, null, 2) + '\n');
  console.log(`\nwritten ${out}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
