// make soak: a long mixed load on loopback — pages over every view, CSV exports and saved-view writes —
// against the real server process. Passes when no response is a 5xx, memory shows no upward trend after
// warm-up (≤ 5 % between the two halves after it; ≤ 10 % until 2026-11-25),
// and descriptors and FIFOs return to their baseline.
// Warm-up (DuckDB caches filling) is the first 40 % of the run. SOAK_SECONDS (default 600), SOAK_DIR
// (default $DATA_DIR/soak).
import autocannon from 'autocannon';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { issueToken } from '../src/access/tokens.js';
import { isHeldFifo } from '../src/pool/fifos.js';
import { loadSnapshot } from '../src/snapshots/write/load.js';
import { readCurrentId } from '../src/snapshots/snapshot-dir.js';
import { writeSample } from '../src/sample/sample.js';
import { openStateStore } from '../src/store/open-store.js';
import { ROOT, openFds, rssMb, startServerProcess, stopServerProcess } from './lib.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const DIR = resolve(process.env.SOAK_DIR ?? join(process.env.DATA_DIR ?? join(ROOT, 'data'), 'soak'));
const log = (m: string) => process.stderr.write(`[soak] ${m}\n`);

async function main(): Promise<void> {
  mkdirSync(DIR, { recursive: true });
  if (!(await readCurrentId(DIR))) {
    log('generating and loading the soak snapshot (100 organizations, 50,000 workspaces)');
    await writeSample(join(DIR, 'source'), { organizations: 100, workspaces: 50_000, seed: 2 });
    await loadSnapshot(join(DIR, 'source'), { dataDir: DIR });
  }
  const store = await openStateStore({ dataDir: DIR });
  const orgs = ['acme-corp', 'globex', 'initech', 'umbrella', 'hooli'];
  const tokens = Object.fromEntries(await Promise.all(orgs.map(async (o) => [o, (await issueToken(store, { kind: 'organization', organization: o, description: 'soak' })).token] as const)));
  await store.close();

  const { url, child } = await startServerProcess({ DATA_DIR: DIR, RATE_LIMIT_MAX: '100000000', METRICS_PUBLIC: '1' });
  const pid = child.pid!;
  // The server's export FIFOs live in tmpdir/explorer-<pid>-<pool>; those held by an export are counted.
  const fifos = () => readdirSync(tmpdir()).filter((n) => n.startsWith(`explorer-${pid}-`))
    .reduce((n, d) => n + (existsSync(join(tmpdir(), d)) ? readdirSync(join(tmpdir(), d)).filter(isHeldFifo).length : 0), 0);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)]!;
  const pages = [
    '?type=workspaces', '?type=workspaces&sort=-workspace_updated_at&filter%5B0%5D%5Bworkspace_name%5D%5Bcontains%5D%5B0%5D=api',
    '?type=providers&sort=-workspace_count', '?type=modules', '?type=tf_versions',
    '?type=workspaces&filter%5B0%5D%5Bdrifted%5D%5Bis%5D%5B0%5D=true&page%5Bnumber%5D=2',
    '?type=resources', '?type=resources&sort=-source_updated_at&filter%5B0%5D%5Bprovider_type%5D%5Bis%5D%5B0%5D=aws_instance',
  ];

  // Saved-view writes run beside the HTTP load: create, rename, delete, over and over.
  let writing = true;
  let writes = 0;
  const writeErrors: string[] = [];
  const writer = (async () => {
    for (let i = 0; writing; i++) {
      const org = pick(orgs);
      const headers = { Authorization: `Bearer ${tokens[org]}`, 'Content-Type': 'application/json' };
      const views = `${url}/api/v2/organizations/${org}/explorer/views`;
      const body = (name: string) => JSON.stringify({ data: { name, query_type: 'providers', query: { filter: [{ field: 'name', operator: 'is', value: ['aws'] }] } } });
      const created = await fetch(views, { method: 'POST', headers, body: body(`soak ${i}`) });
      if (created.status >= 500) writeErrors.push(`POST ${created.status}`);
      if (created.status !== 201) continue;
      const id = ((await created.json()) as { data: { id: string } }).data.id;
      for (const [method, payload] of [['PATCH', body(`soak ${i} renamed`)], ['DELETE', undefined]] as const) {
        const res = await fetch(`${views}/${id}`, { method, headers, body: payload });
        await res.arrayBuffer();
        if (res.status >= 500) writeErrors.push(`${method} ${res.status}`);
      }
      writes += 3;
    }
  })();

  const fdsStart = openFds(pid);
  const rss: number[] = [];
  // The JS heap, from the server's own /metrics: tells a leak in our code from native memory (DuckDB, malloc).
  const heap: number[] = [];
  const duckdb: number[] = [];
  const workerHeap: number[] = [];
  const total = (text: string, name: string) => [...text.matchAll(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'gm'))]
    .reduce((sum, m) => sum + Number(m[1]), 0) / 2 ** 20;
  const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN) / 2 ** 20;
  const sampler = setInterval(() => {
    rss.push(rssMb(pid));
    void fetch(`${url}/metrics`).then((r) => r.text()).then((t) => {
      heap.push(metric(t, 'explorer_nodejs_heap_size_used_bytes'));
      duckdb.push(total(t, 'explorer_duckdb_memory_bytes'));
      workerHeap.push(total(t, 'explorer_worker_heap_total_bytes'));
    }, () => {});
  }, 10_000);
  log(`running ${SECONDS} s against ${url}`);
  const result = await autocannon({
    url, connections: 16, duration: SECONDS,
    requests: [{ setupRequest: (req) => {
      const org = pick(orgs);
      const x = Math.random();
      const path = x < 0.9 ? `/api/v2/organizations/${org}/explorer${pick(pages)}`
        : `/api/v2/organizations/${org === 'acme-corp' ? 'hooli' : org}/explorer/export/csv?type=workspaces`;
      return { ...req, path, headers: { Authorization: `Bearer ${tokens[org === 'acme-corp' && x >= 0.9 ? 'hooli' : org]}` } };
    } }],
  });
  clearInterval(sampler);
  writing = false;
  await writer;
  // Cancelled requests still settle after the load stops (queued exports get their slot, then end at once):
  // wait for descriptors and FIFOs to come back, for at most 30 s, and report how long that took.
  const settleStarted = Date.now();
  while (Date.now() - settleStarted < 30_000 && (fifos() > 0 || openFds(pid) > fdsStart + 4)) await new Promise((r) => setTimeout(r, 250));
  const settleMs = Date.now() - settleStarted;
  const fdsEnd = openFds(pid);
  const fifosEnd = fifos();
  const exitCode = await stopServerProcess(child);

  const status = (result as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {};
  const fiveHundreds = Object.entries(status).filter(([code]) => Number(code) >= 500).reduce((n, [, v]) => n + v.count, 0) + writeErrors.length;
  // Warm-up is the first 40 % of the run: DuckDB's buffer caches fill while new data is read. After it, the
  // trend compares the first and second halves of what is left.
  const settled = rss.slice(Math.ceil(rss.length * 0.4));
  const half = Math.max(1, Math.floor(settled.length / 2));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const early = mean(settled.slice(0, half));
  const late = mean(settled.slice(-half));
  const report = {
    date: new Date().toISOString(), seconds: SECONDS, requests: result.requests.total, writes,
    status, errors: result.errors, timeouts: result.timeouts, fiveHundreds,
    latency: { p50: result.latency.p50, p99: result.latency.p99 },
    rss_mb: rss.map((x) => Math.round(x)), rssTrend: late / early - 1,
    heap_used_mb: heap.map((x) => Math.round(x)),
    duckdb_memory_mb: duckdb.map((x) => Math.round(x)),
    worker_heap_total_mb: workerHeap.map((x) => Math.round(x)),
    malloc_arena_max: process.env.MALLOC_ARENA_MAX ?? null,
    fds: { start: fdsStart, end: fdsEnd }, fifosEnd, settleMs, exitCode,
  };
  // A few descriptors of slack: the writer's own keep-alive sockets may still be open at the end.
  const ok = fiveHundreds === 0 && result.errors === 0 && report.rssTrend <= 0.05 && fifosEnd === 0 && fdsEnd <= fdsStart + 4 && exitCode === 0;
  console.log(JSON.stringify(report, null, 2));
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(join(ROOT, 'bench', 'results', `soak-${report.date.replace(/[:.]/g, '-')}.json`), JSON.stringify(report, null, 2) + '\n');
  console.log(ok ? 'soak: passed' : 'soak: FAILED');
  process.exitCode = ok ? 0 : 1;
}

main().catch((e) => { console.error(e); process.exit(1); });
