// make bench-100m: a hundred million resources. A source of 5,000,000 workspaces with about a hundred million
// resources (the bench's proportions: 10,000 organizations, the largest a tenth), gzip-compressed, is loaded
// with `explorer load` (wall time and peak RSS from /usr/bin/time), then the largest organization's R1 page
// (`resources`, provider_type is aws_instance, sorted by -source_updated_at, 20 rows, 1 connection) is
// measured over HTTP and compared with R1 on the 20M-resource bench snapshot: the newest bench/results file
// that has it, so measure that on the same machine first (a figure from another machine compares nothing).
// The largest organization here is five times the bench's (the same proportions), so R1 is also measured on
// the organization whose workspace count is nearest the bench's largest: the same page on an organization of
// the same size, in a snapshot five times larger. Not part of make test; needs about 65 GB of free disk and
// 45 to 75 minutes.
//
// Environment: BIG_DIR (default $DATA_DIR/bench-100m), BIG_WORKSPACES (default 5000000), BENCH_SECONDS
// (default 20), BIG_SKIP_LOAD=1 (measure the page on the snapshot already loaded).
import autocannon from 'autocannon';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { issueToken } from '../src/access/tokens.js';
import { readCurrentId, readManifest } from '../src/snapshots/snapshot-dir.js';
import { openStateStore } from '../src/store/open-store.js';
import { cpuSeconds, ensureSample, R1_QUERY, ROOT, startServerProcess, stopServerProcess, timedLoad } from './lib.js';

const DIR = resolve(process.env.BIG_DIR ?? join(process.env.DATA_DIR ?? join(ROOT, 'data'), 'bench-100m'));
const WORKSPACES = Number(process.env.BIG_WORKSPACES ?? 5_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const SOURCE = join(DIR, 'source');
const SAMPLE = { organizations: Math.round(WORKSPACES / 500), workspaces: WORKSPACES, seed: 1, resources: true, gzip: true };
const log = (m: string) => process.stderr.write(`[bench-100m] ${m}\n`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

/** R1's p50 on the 20M-resource bench snapshot, and its largest organization's workspaces: the newest bench/results file that measured it. */
function twentyMillionR1(): { p50: number; file: string; workspaces: number } | null {
  const dir = join(ROOT, 'bench/results');
  for (const file of readdirSync(dir).filter((f) => /^\d{4}-.*\.json$/.test(f)).sort().reverse()) {
    const result = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { largest: { workspaces: number }; rows: Array<{ scenario: string; p50_ms?: number }> };
    const r1 = result.rows.find((r) => r.scenario === 'R1');
    if (r1?.p50_ms !== undefined) return { p50: r1.p50_ms, file, workspaces: result.largest.workspaces };
  }
  return null;
}

mkdirSync(DIR, { recursive: true });
let load: { seconds: number; gib: number } | null = null;
if (process.env.BIG_SKIP_LOAD !== '1' || (await readCurrentId(DIR)) === null) {
  await ensureSample(SOURCE, SAMPLE, log);
  log('loading');
  load = await timedLoad(SOURCE, DIR);
  log(`loaded in ${load.seconds} s, peak RSS ${round(load.gib, 2)} GiB`);
}
const id = (await readCurrentId(DIR))!;
const manifest = await readManifest(DIR, id);
const resources = manifest.organizationRows!.resources!;
const workspaces = manifest.organizationRows!.workspaces!;
const base = twentyMillionR1();
const bySize = Object.entries(workspaces).sort((a, b) => b[1] - a[1]);
const largest = bySize[0]![0];
const peer = base ? bySize.reduce((best, o) => (Math.abs(o[1] - base.workspaces) < Math.abs(best[1] - base.workspaces) ? o : best))[0] : null;

interface PagePoint { organization: string; workspaces: number; resources: number; p50: number; p99: number; cpuMs: number; non2xx: number }
/** R1 on `organization` over HTTP, one connection, after a 3 s warm-up. */
async function r1(organization: string): Promise<PagePoint> {
  const store = await openStateStore({ dataDir: DIR });
  const token = (await issueToken(store, { kind: 'organization', organization, description: 'bench-100m' })).token;
  await store.close();
  const { url, child } = await startServerProcess({ DATA_DIR: DIR, RATE_LIMIT_MAX: '100000000', RESPONSE_CACHE_MB: '0' });
  try {
    const opts: autocannon.Options = { url: `${url}/api/v2/organizations/${organization}/explorer${R1_QUERY}`, connections: 1, duration: SECONDS, headers: { Authorization: `Bearer ${token}` } };
    await autocannon({ ...opts, duration: 3 } as autocannon.Options);
    const cpu = cpuSeconds(child.pid!);
    const page = await autocannon(opts);
    const cpuMs = ((cpuSeconds(child.pid!) - cpu) * 1000) / Math.max(1, page.requests.total);
    return { organization, workspaces: workspaces[organization]!, resources: resources[organization] ?? 0, p50: page.latency.p50, p99: page.latency.p99, cpuMs, non2xx: page.non2xx };
  } finally {
    await stopServerProcess(child);
  }
}

const pages = [await r1(largest), ...(peer && peer !== largest ? [await r1(peer)] : [])];
const total = Object.values(resources).reduce((a, b) => a + b, 0);
const within = (p: PagePoint) => base !== null && p.p50 <= 2 * base.p50 && p.non2xx === 0;
const lines = [
  '| what | measured | target | ok |', '|---|---|---|---|',
  load ? `| load of ${WORKSPACES.toLocaleString('en')} workspaces, ${total.toLocaleString('en')} resources (gzip source) | ${load.seconds} s, peak RSS ${round(load.gib, 2)} GiB | completes | yes |` : '| load | not run (BIG_SKIP_LOAD=1) | | – |',
  ...pages.map((p) => `| R1 on ${p.organization} (${p.workspaces.toLocaleString('en')} workspaces, ${p.resources.toLocaleString('en')} resources${p.organization === largest ? ', the largest' : ', the size of the 20M snapshot\'s largest'}), 1 conn | p50 ${p.p50} ms, p99 ${p.p99} ms, CPU ${round(p.cpuMs, 2)} ms/req, ${p.non2xx} non-2xx | ≤ 2 × the 20M figure (${base ? `${base.p50} ms, ${base.file}` : 'none measured'}) | ${within(p) ? 'yes' : 'NO'} |`),
];
process.stdout.write(`\n${lines.join('\n')}\n\nsnapshot files (bytes): ${JSON.stringify(manifest.sizes)}\n`);
const out = join(ROOT, 'bench/results', `hundred-million-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(out, JSON.stringify({ sample: SAMPLE, load, total, pages, base, sizes: manifest.sizes }, null, 2) + '\n');
process.stdout.write(`written ${out}\n`);
