// What the bench and the soak share: a free port, the real server process, its memory and descriptors.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { issueToken } from '../src/access/tokens.js';
import { loadConfig } from '../src/config.js';
import { openInstance } from '../src/duckdb/open-instance.js';
import { writeSample, type SampleOptions } from '../src/sample/sample.js';
import { keptAgent } from '../test/helpers/kept-agent.js';
import { readCurrentId, snapshotPath } from '../src/snapshots/snapshot-dir.js';
import { openStateStore } from '../src/store/open-store.js';

export const ROOT = resolve(new URL('../..', import.meta.url).pathname);
export const CLI = join(ROOT, 'dist/src/cli/main.js');
/** R1: the largest organization's resources of one type, newest state first, 20 rows. */
export const R1_QUERY = '?type=resources&filter%5B0%5D%5Bprovider_type%5D%5Bis%5D%5B0%5D=aws_instance&sort=-source_updated_at&page%5Bsize%5D=20';

/** A: the largest organization's workspaces whose name contains "api", newest first, 20 rows. */
export const A_QUERY = '?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bcontains%5D%5B0%5D=api&sort=-workspace_updated_at&page%5Bsize%5D=20';
/** C: the largest organization's providers, the default page. */
export const C_QUERY = '?type=providers';
let distinct = 0;
/**
 * B: a small organization's default page plus one filter. The filter's value differs in every request
 * (a name that contains no "~" never contains "~<n>"), so no answer can come from the response cache.
 */
export const smallFiltered = () => `?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bdoes_not_contain%5D%5B0%5D=~${++distinct}`;

export interface Org { name: string; workspaces: number }

/** The organizations of a loaded snapshot's directory with their workspaces, largest first. */
export async function organizations(dir: string): Promise<Org[]> {
  const db = await openInstance(':memory:');
  const c = await db.connect();
  const r = await c.runAndReadAll(`SELECT _org, count(*) FROM read_parquet('${join(dir, 'workspaces.parquet')}') GROUP BY 1 ORDER BY 2 DESC, 1`);
  c.closeSync();
  db.closeSync();
  return r.getRows().map(([name, n]) => ({ name: name as string, workspaces: Number(n) }));
}

/** An organization token for each of `names`, issued in `dataDir`'s own store (before a server opens it). */
export async function organizationTokens(dataDir: string, names: readonly string[], description = 'bench'): Promise<Map<string, string>> {
  const store = await openStateStore(loadConfig({ DATA_DIR: dataDir }));
  const tokens = new Map<string, string>();
  try {
    for (const name of names) tokens.set(name, (await issueToken(store, { kind: 'organization', organization: name, description })).token);
  } finally {
    await store.close();
  }
  return tokens;
}

/** A data directory whose current snapshot is `from`'s snapshot `id`, its files hard links (no disk). */
export function linkedCopy(from: string, dir: string, id: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'snapshots', id), { recursive: true });
  for (const name of readdirSync(snapshotPath(from, id))) linkSync(join(snapshotPath(from, id), name), join(dir, 'snapshots', id, name));
  writeFileSync(join(dir, 'snapshots', 'CURRENT'), `${id}\n`);
}

/** Writes the sample `options` into `dir` unless its `.complete` marker says it holds exactly that sample. */
export async function ensureSample(dir: string, options: SampleOptions, log: (m: string) => void): Promise<void> {
  const marker = join(dir, '.complete');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === JSON.stringify(options)) return;
  rmSync(dir, { recursive: true, force: true });
  log(`generating ${dir} (${options.workspaces.toLocaleString('en')} workspaces${options.gzip ? ', gzip' : ''})`);
  const started = performance.now();
  const summary = await writeSample(dir, options);
  const gib = Object.values(summary.bytes).reduce((a, b) => a + b, 0) / 2 ** 30;
  log(`written in ${((performance.now() - started) / 1000).toFixed(1)} s: ${summary.counts.workspace_resources.toLocaleString('en')} resources, ${gib.toFixed(2)} GiB`);
  writeFileSync(marker, JSON.stringify(options));
}

/** The bench source, written once ($BENCH_DIR/source), and its snapshot, loaded once: the id and organizations, largest first. */
export async function benchSnapshot(benchDir: string, log: (m: string) => void): Promise<{ source: string; baseId: string; orgs: Org[] }> {
  const source = join(benchDir, 'source');
  await ensureSample(source, { organizations: 2000, workspaces: 1_000_000, seed: 1, resources: true }, log);
  if ((await readCurrentId(benchDir)) === null) {
    log('loading the bench source');
    const { seconds } = await timedLoad(source, benchDir);
    log(`loaded in ${seconds} s`);
    writeFileSync(join(benchDir, LOAD_FILE), JSON.stringify({ seconds, at: new Date().toISOString() }));
  }
  const baseId = (await readCurrentId(benchDir))!;
  return { source, baseId, orgs: await organizations(snapshotPath(benchDir, baseId)) };
}

const LOAD_FILE = 'load.json';

/**
 * How long the bench snapshot's load took on this machine, and when: the stream's targets name a machine class
 * by it (a full load of the bench source in about 300 s), and bounds the follower's CPU proportionally more on
 * slower machines. Undefined where the snapshot was loaded before the load's time was kept.
 */
export function benchLoad(benchDir: string): { seconds: number; at: string } | undefined {
  const file = join(benchDir, LOAD_FILE);
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) as { seconds: number; at: string } : undefined;
}

/** `explorer load <source>` into `dataDir`, timed by /usr/bin/time: wall seconds and peak RSS in GiB. */
export async function timedLoad(source: string, dataDir: string): Promise<{ seconds: number; gib: number }> {
  const timed = existsSync('/usr/bin/time');
  const args = timed ? ['-f', '%e %M', process.execPath, CLI, 'load', source] : [CLI, 'load', source];
  const { stderr } = await promisify(execFile)(timed ? '/usr/bin/time' : process.execPath, args, { env: { ...process.env, DATA_DIR: dataDir }, maxBuffer: 1 << 26 });
  const [seconds, kb] = stderr.trim().split('\n').pop()!.split(' ').map(Number) as [number, number];
  return { seconds, gib: kb / 1024 / 1024 };
}

import { freePort } from '../test/helpers/ports.js';

/**
 * Each JSON line a process (`explorer ingest`, `explorer notify`) writes on its standard output, as it comes,
 * with the moment it came by `clock` (performance.now(), or Date.now() to compare with other processes' times).
 */
export function followerLog(child: ChildProcess, clock: () => number = () => performance.now()): Record<string, any>[] {
  const logged: Record<string, any>[] = [];
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    for (let i = out.indexOf('\n'); i !== -1; i = out.indexOf('\n')) {
      const line = out.slice(0, i);
      out = out.slice(i + 1);
      if (line.startsWith('{')) logged.push({ ...JSON.parse(line), at: clock() });
    }
  });
  return logged;
}

/** A process's resident memory in MB: now (VmRSS) or at its peak so far (VmHWM). */
export function rssMb(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)![1]) / 1024;
}

/** CPU seconds (user + system) the process has used, every thread included; or one of its threads' (`tid`). */
export function cpuSeconds(pid: number, tid?: number): number {
  const fields = statFields(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`);
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100 per second)
}

/** The fields of a /proc stat file after the command's name (which may hold spaces), from the state on. */
const statFields = (path: string) => { const stat = readFileSync(path, 'utf8'); return stat.slice(stat.lastIndexOf(')') + 2).split(' '); };

/**
 * CPU seconds of a process and its descendants: its own, those of the children it has waited for (cutime,
 * cstime), and those of the children still running (the follower's tidying units run in processes of their own).
 */
export function treeCpuSeconds(pid: number): number {
  let total = 0;
  try {
    const fields = statFields(`/proc/${pid}/stat`);
    total = (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) total += treeCpuSeconds(Number(child));
    }
  } catch { /* a process that ended meanwhile: its parent counts it once it has waited for it */ }
  return total;
}

/** The machine's CPU time so far, in seconds: busy (every kind but idle, iowait and steal) and stolen by the hypervisor. */
export function machineSeconds(): { busy: number; steal: number } {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number) as number[];
  return { busy: (user! + nice! + system! + irq! + softirq!) / 100, steal: steal! / 100 };
}

export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** Starts `explorer serve` as `npm run explorer -- serve` would, on a free port; resolves once it listens. */
export async function startServerProcess(env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, UV_THREADPOOL_SIZE: '32', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolveListen, reject) => {
    let buffer = '';
    const onData = (b: Buffer) => {
      buffer += b.toString();
      if (buffer.includes('"msg":"listening"')) { child.stdout!.off('data', onData); resolveListen(); }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  child.stdout!.resume();
  return { url: `http://127.0.0.1:${port}`, child };
}

export async function stopServerProcess(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode; // stopped already
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  return exited;
}

/** The `p` quantile (0–1) of `values`, which are sorted in place; NaN when there are none. */
export function percentile(values: number[], p: number): number {
  values.sort((a, b) => a - b);
  return values[Math.min(values.length - 1, Math.floor(values.length * p))] ?? Number.NaN;
}

/** One request of a mixed load: its kind (reported apart), path and headers. */
export interface MixedRequest { kind: string; path: string; headers: Record<string, string> }

export interface KindFigures { requests: number; p50_ms: number; p99_ms: number; statuses: Record<string, number>; slowest_mb_s?: number }

/**
 * A closed loop of `connections` clients, each sending its next request when the last one has been read
 * to the end, for `seconds`. Unlike autocannon it times each kind of request apart (a target may hold for
 * pages and not for exports) and each response's throughput, and counts every status and client error.
 */
export async function mixedLoad(base: string, connections: number, seconds: number, pick: () => MixedRequest):
Promise<{ rps: number; errors: number; kinds: Record<string, KindFigures> }> {
  const { request } = await import('node:http');
  const agent = keptAgent(connections);
  const samples = new Map<string, { ms: number[]; statuses: Record<string, number>; mbs: number[] }>();
  let errors = 0;
  let done = 0;
  const end = performance.now() + seconds * 1000;
  const one = (r: MixedRequest) => new Promise<void>((resolveOne) => {
    const started = performance.now();
    const s = samples.get(r.kind) ?? { ms: [], statuses: {}, mbs: [] };
    samples.set(r.kind, s);
    const count = (status: string) => { s.statuses[status] = (s.statuses[status] ?? 0) + 1; };
    const req = request(`${base}${r.path}`, { agent, headers: r.headers, timeout: 30_000 }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => { bytes += chunk.length; });
      res.on('end', () => {
        const ms = performance.now() - started;
        s.ms.push(ms);
        count(res.complete ? String(res.statusCode) : 'cut off');
        if (res.statusCode !== 200 || !res.complete) errors++;
        if (bytes > 1e6) s.mbs.push(bytes / 1e6 / (ms / 1000));
        done++;
        resolveOne();
      });
      res.on('error', () => { errors++; count('error'); resolveOne(); });
    });
    req.on('timeout', () => req.destroy(new Error('time-out')));
    req.on('error', (e) => { errors++; count(e.message === 'time-out' ? 'time-out' : 'error'); resolveOne(); });
    req.end();
  });
  const started = performance.now();
  await Promise.all(Array.from({ length: connections }, async () => { while (performance.now() < end) await one(pick()); }));
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  const kinds: Record<string, KindFigures> = {};
  for (const [kind, s] of samples) {
    kinds[kind] = {
      requests: s.ms.length, p50_ms: Math.round(percentile(s.ms, 0.5)), p99_ms: Math.round(percentile(s.ms, 0.99)), statuses: s.statuses,
      ...(s.mbs.length > 0 ? { slowest_mb_s: Math.round(Math.min(...s.mbs) * 10) / 10 } : {}),
    };
  }
  return { rps: done / elapsed, errors, kinds };
}

/** One measured scenario of a bench, as its table and results file show it. */
export interface BenchRow { scenario: string; what: string; measured: string; target: string; pass: boolean | null }

/** Prints the rows as a Markdown table and writes them to bench/results/<name>-<time>.json. */
export function writeResults(name: string, rows: readonly BenchRow[]): void {
  console.log('| # | scenario | measured | target | ok |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.scenario} | ${r.what} | ${r.measured} | ${r.target} | ${r.pass === null ? '–' : r.pass ? 'yes' : 'NO'} |`);
  const file = join(ROOT, 'bench', 'results', `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ rows }, null, 2));
  console.log(`\nwritten ${file}`);
}
