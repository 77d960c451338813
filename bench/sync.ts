// make bench-sync: `explorer sync` from another instance of this service serving the bench snapshot of
// `make bench` ($BENCH_DIR, loaded first if absent), upstream and mirror on the same machine (docs/sync.md §5).
// The upstream serves a copy of the bench data directory whose snapshot files are hard links; changes are
// applied to it with `explorer apply`. Each sync runs as a user runs it, under /usr/bin/time (wall, CPU and
// peak RSS of the sync process); the upstream's CPU during it is read from /proc.
//
// Y1  the largest organization into an empty DATA_DIR
// Y2  the same after 100 of its workspaces changed upstream (and the apply part of it)
// Y3  the same with nothing changed: no snapshot made
// Y4  a 500-workspace organization, each of the three
// Y5  peak RSS of the sync process during Y1
// Environment: BENCH_DIR (default $DATA_DIR/bench).
import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { writeSampleChanges } from '../src/sample/sample-changes.js';
import { type BenchRow, benchSnapshot, CLI, cpuSeconds, linkedCopy, organizationTokens, ROOT, startServerProcess, stopServerProcess, writeResults } from './lib.js';

const DATA_DIR = process.env.DATA_DIR ?? join(ROOT, 'data');
const BENCH_DIR = process.env.BENCH_DIR ?? join(DATA_DIR, 'bench');
const SOURCE = join(BENCH_DIR, 'source');
const UP = join(BENCH_DIR, 'sync-up');
const log = (m: string) => console.error(`[bench-sync] ${m}`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

const rows: BenchRow[] = [];
const report = (r: BenchRow) => { rows.push(r); console.error(`[bench-sync] ${r.scenario}: ${r.measured}`); };

interface Run { wall: number; cpu: number; rssMb: number; upstreamCpu: number; line: string; read: number; rebuild: number; apply: number; snapshot: boolean }

async function main(): Promise<void> {
  if (!existsSync('/usr/bin/time')) throw new Error('bench-sync measures with /usr/bin/time (Debian package time)');
  const { baseId, orgs } = await benchSnapshot(BENCH_DIR, log);
  const largest = orgs[0]!;
  const small = [...orgs].sort((a, b) => Math.abs(a.workspaces - 500) - Math.abs(b.workspaces - 500))[0]!;
  linkedCopy(BENCH_DIR, UP, baseId);
  const tokens = await organizationTokens(UP, [largest, small].map((o) => o.name), 'bench-sync');
  const upstream = await startServerProcess({ DATA_DIR: UP, RATE_LIMIT_MAX: '100000000', RESPONSE_CACHE_MB: '0', SNAPSHOT_POLL_MS: '500' });
  const host = new URL(upstream.url).host;

  const sync = async (org: string, mirror: string): Promise<Run> => {
    const cpuBefore = cpuSeconds(upstream.child.pid!);
    const { stdout, stderr } = await promisify(execFile)('/usr/bin/time', ['-f', '%e %U %S %M', process.execPath, CLI, 'sync', '--from', upstream.url, '--organization', org],
      { env: { ...process.env, DATA_DIR: mirror, EXPLORER_SYNC_TOKEN: tokens.get(org)! }, maxBuffer: 1 << 26 });
    const [wall, user, sys, kb] = stderr.trim().split('\n').pop()!.split(' ').map(Number) as [number, number, number, number];
    const line = stdout.trim().split('\n').find((l) => l.startsWith(`${org}: read`))!;
    const [, read, rebuild, apply] = /read ([\d.]+) s, rebuild ([\d.]+) s, apply ([\d.]+) s/.exec(line)!.map(Number) as [number, number, number, number];
    return { wall, cpu: user + sys, rssMb: kb / 1024, upstreamCpu: cpuSeconds(upstream.child.pid!) - cpuBefore, line, read, rebuild, apply, snapshot: /snapshot \d{8}T/.test(line) };
  };
  /** 100 (or `n`) of the organization's workspaces changed upstream by `explorer apply`, and the upstream serving them. */
  const changeUpstream = async (org: string, n: number, seed: number) => {
    const dir = join(BENCH_DIR, 'sync-batches', `${org}-${seed}`);
    rmSync(dir, { recursive: true, force: true });
    await writeSampleChanges(SOURCE, dir, { batches: 1, workspaces: n, seed, organizations: new Set([org]) });
    await promisify(execFile)(process.execPath, [CLI, 'apply', join(dir, 'batch-0001')], { env: { ...process.env, DATA_DIR: UP } });
    await new Promise((r) => setTimeout(r, 1500)); // the upstream's poll (500 ms) picks it up
  };
  const describe = (r: Run) => `${round(r.wall)} s (read ${r.read}, rebuild ${r.rebuild}, apply ${r.apply}); sync CPU ${round(r.cpu)} s, upstream CPU ${round(r.upstreamCpu)} s; peak RSS ${Math.round(r.rssMb)} MB`;

  try {
    for (const [o, label, targets] of [[largest, 'Y1–Y3', { empty: 120, changed: 30, unchanged: 20 }], [small, 'Y4', { empty: 3, changed: 3, unchanged: 3 }]] as const) {
      const mirror = join(BENCH_DIR, `sync-down-${o.name}`);
      rmSync(mirror, { recursive: true, force: true });
      log(`${o.name} (${o.workspaces.toLocaleString('en-US')} workspaces) into an empty DATA_DIR`);
      const empty = await sync(o.name, mirror);
      log(empty.line);
      await changeUpstream(o.name, Math.min(100, Math.floor(o.workspaces / 5)), 61);
      const changed = await sync(o.name, mirror);
      log(changed.line);
      const unchanged = await sync(o.name, mirror);
      log(unchanged.line);
      const first = label === 'Y4' ? 'Y4' : 'Y1';
      report({ scenario: first, what: `${o.name} (${o.workspaces.toLocaleString('en-US')} workspaces) into an empty DATA_DIR: ${empty.line.replace(/;.*$/, '')}`,
        measured: describe(empty), target: `≤ ${targets.empty} s`, pass: empty.wall <= targets.empty && empty.snapshot });
      const n = Math.min(100, Math.floor(o.workspaces / 5));
      report({ scenario: label === 'Y4' ? 'Y4' : 'Y2', what: `the same after ${n} of its workspaces changed upstream`,
        measured: describe(changed), target: label === 'Y4' ? '≤ 3 s' : '≤ 30 s, apply ≤ 10 s',
        pass: changed.snapshot && changed.wall <= targets.changed && (label === 'Y4' || changed.apply <= 10) });
      report({ scenario: label === 'Y4' ? 'Y4' : 'Y3', what: 'the same with nothing changed (no snapshot made)',
        measured: describe(unchanged), target: `≤ ${targets.unchanged} s`, pass: !unchanged.snapshot && unchanged.wall <= targets.unchanged });
      if (label !== 'Y4') {
        report({ scenario: 'Y5', what: 'peak RSS of the sync process during Y1', measured: `${Math.round(empty.rssMb)} MB`, target: '≤ 600 MB', pass: empty.rssMb <= 600 });
      }
      rmSync(mirror, { recursive: true, force: true });
    }
  } finally {
    await stopServerProcess(upstream.child).catch(() => null);
    rmSync(UP, { recursive: true, force: true });
  }

  console.log(`upstream ${host}, mirror on the same machine (${new Date().toISOString().slice(0, 10)})`);
  writeResults('sync', rows);
}

main().catch((e) => { console.error(e); process.exit(1); });
