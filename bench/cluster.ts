// make bench-cluster: the cluster of docs/deployment.md (deploy/cluster.sh: HAProxy, instances on one
// DATA_DIR, a Redis Cluster of 3+3) on the bench snapshot of `make bench`, with 1, 2 and 3 instances:
//   B  small-organization pages through HAProxy, every request distinct, 16 connections
//   E  the mixed load of bench/run.ts (A/B/C/D 40/40/15/5), 32 connections
// Every process shares this machine's cores, so beside the totals it reports requests per second per busy
// core (the instances' and HAProxy's CPU seconds over the run's seconds) and HAProxy's share of that CPU.
// Then, with 3 instances, the seconds from kill -9 of the instance serving an organization until that
// organization is answered by another (polled every 20 ms).
// Environment: BENCH_DIR (default $DATA_DIR/bench), BENCH_SECONDS (default 15), CLUSTER_SIZES (default 1,2,3).
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { issueToken } from '../src/access/tokens.js';
import { loadConfig } from '../src/config.js';
import { readCurrentId, snapshotPath } from '../src/snapshots/snapshot-dir.js';
import { openStateStore } from '../src/store/open-store.js';
import { A_QUERY, C_QUERY, cpuSeconds, ensureSample, linkedCopy, mixedLoad, organizations, ROOT, smallFiltered, timedLoad, type MixedRequest } from './lib.js';
import { makeCluster } from '../test/helpers/make-cluster.js';

const DATA_DIR = process.env.DATA_DIR ?? join(ROOT, 'data');
const BENCH_DIR = process.env.BENCH_DIR ?? join(DATA_DIR, 'bench');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const SIZES = (process.env.CLUSTER_SIZES ?? '1,2,3').split(',').map(Number);
const WORK = join(BENCH_DIR, 'cluster-data');
const log = (m: string) => console.error(`[bench-cluster] ${m}`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Row { instances: number; load: string; rps: number; errors: number; p99: string; busyCores: number; perCore: number; haproxyShare: number }

async function main(): Promise<void> {
  await ensureSample(join(BENCH_DIR, 'source'), { organizations: 2000, workspaces: 1_000_000, seed: 1, resources: true }, log);
  if ((await readCurrentId(BENCH_DIR)) === null) await timedLoad(join(BENCH_DIR, 'source'), BENCH_DIR);
  const baseId = (await readCurrentId(BENCH_DIR))!;
  const orgs = await organizations(snapshotPath(BENCH_DIR, baseId));
  const largest = orgs[0]!;
  const small = orgs.filter((o) => o.workspaces <= 500).slice(0, 300);
  linkedCopy(BENCH_DIR, WORK, baseId);

  const c = await makeCluster(WORK, { RATE_LIMIT_MAX: '100000000', RESPONSE_CACHE_MB: '0' });
  const { env, proxy, pid } = c;
  const cluster = (command: 'start' | 'stop', instances = 3) => c.run(command, instances);
  const tokens = new Map<string, string>();
  const rows: Row[] = [];
  let failover: number[] = [];

  try {
    for (const n of SIZES) {
      log(`${n} instance${n === 1 ? '' : 's'}: starting`);
      await cluster('start', n);
      if (tokens.size === 0) {
        const store = await openStateStore(loadConfig(env));
        for (const o of [largest, ...small]) tokens.set(o.name, (await issueToken(store, { kind: 'organization', organization: o.name, description: 'bench-cluster' })).token);
        await store.close();
      }
      const names = ['haproxy', ...Array.from({ length: n }, (_, i) => `explorer-${i + 1}`)];
      const auth = { Authorization: `Bearer ${tokens.get(largest.name)}` };
      const pickB = (): MixedRequest => {
        const o = small[Math.floor(Math.random() * small.length)]!;
        return { kind: 'B', path: `/api/v2/organizations/${o.name}/explorer${smallFiltered()}`, headers: { Authorization: `Bearer ${tokens.get(o.name)}` } };
      };
      const pickE = (): MixedRequest => {
        const x = Math.random();
        if (x < 0.4) return { kind: 'A', path: `/api/v2/organizations/${largest.name}/explorer${A_QUERY}`, headers: auth };
        if (x < 0.8) return pickB();
        if (x < 0.95) return { kind: 'C', path: `/api/v2/organizations/${largest.name}/explorer${C_QUERY}`, headers: auth };
        return { kind: 'D', path: `/api/v2/organizations/${largest.name}/explorer/export/csv?type=workspaces`, headers: auth };
      };
      for (const [load, connections, pick] of [['B', 16, pickB], ['E', 32, pickE]] as const) {
        await mixedLoad(proxy, connections, 3, pick); // warm
        const before = names.map((name) => cpuSeconds(pid(name)));
        const started = performance.now();
        const r = await mixedLoad(proxy, connections, SECONDS, pick);
        const seconds = (performance.now() - started) / 1000;
        const cpu = names.map((name, i) => cpuSeconds(pid(name)) - before[i]!);
        const busy = cpu.reduce((a, b) => a + b, 0) / seconds;
        const row: Row = {
          instances: n, load, rps: round(r.rps), errors: r.errors,
          p99: Object.entries(r.kinds).sort().map(([k, f]) => `${k} ${f.p99_ms}`).join(', '),
          busyCores: round(busy, 2), perCore: round(r.rps / busy), haproxyShare: round((cpu[0]! / cpu.reduce((a, b) => a + b, 0)) * 100),
        };
        rows.push(row);
        log(`${n} × ${load}: ${JSON.stringify(row)}`);
      }
      if (n === 3) {
        // Failover: an organization's instance killed; how long until another answers it.
        failover = [];
        for (const o of small.slice(0, 3)) {
          const page = `${proxy}/api/v2/organizations/${o.name}/explorer?type=workspaces&page%5Bsize%5D=1`;
          const headers = { Authorization: `Bearer ${tokens.get(o.name)}` };
          const home = (await fetch(page, { headers })).headers.get('x-served-by')!;
          const killed = performance.now();
          process.kill(pid(home), 'SIGKILL');
          for (;;) {
            const res = await fetch(page, { headers }).catch(() => null);
            if (res?.status === 200 && res.headers.get('x-served-by') !== home) break;
            await sleep(20);
          }
          failover.push(round((performance.now() - killed) / 1000, 3));
          log(`failover of ${o.name} from ${home}: ${failover[failover.length - 1]} s`);
          await cluster('start', n);
          await sleep(3000); // back in rotation
        }
      }
      await cluster('stop', n);
    }
  } finally {
    await cluster('stop').catch(() => null);
  }

  console.log('| instances | load | req/s | errors | p99 ms by kind | busy cores | req/s per busy core | HAProxy share of CPU |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.instances} | ${r.load} | ${r.rps} | ${r.errors} | ${r.p99} | ${r.busyCores} | ${r.perCore} | ${r.haproxyShare} % |`);
  if (failover.length > 0) console.log(`\nkill -9 of an instance → its organization answered by another: ${failover.join(', ')} s`);
  const file = join(ROOT, 'bench', 'results', `cluster-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ seconds: SECONDS, rows, failover }, null, 2));
  console.log(`\nwritten ${file}`);
  rmSync(WORK, { recursive: true, force: true });
}

main().catch((e) => { console.error(e); process.exit(1); });
