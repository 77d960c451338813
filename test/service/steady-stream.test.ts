// A stream of batches with no pause beside a reader that keeps the server busy, as a platform sends them
// (docs/changes.md §6): the follower, run as a user runs it, falls behind (batches come faster than it
// applies them) and catches up by coalescing; its layers are compacted while batches go on, each compaction
// going under the snapshots made meanwhile. Throughout, sampled as it runs: every page answers, the deltas
// a page reads stay within their bound, and so do the waiting batches and the disk. At the end the result
// is that of a full load of the resulting source. Bounds, not timings: each is a count or a size.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueToken } from '../../src/access/tokens.js';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { writeSample } from '../../src/sample/sample.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { startServer } from '../../src/server.js';
import { MAX_OVERLAYS } from '../../src/snapshots/delta-layout.js';
import { readCurrentId, readManifest, type Manifest } from '../../src/snapshots/snapshot-dir.js';
import { COALESCED_BATCHES } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { openStateStore } from '../../src/store/open-store.js';
import { applyBatch as oracle } from '../helpers/batch-oracle.js';
import { diskKb as kb } from '../helpers/disk.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const deltaBytes = (m: Manifest) => [m.major, m.delta].reduce((a, n) => a + (n ? m.sizes?.[n] ?? 0 : 0), 0);

describe('a steady stream of batches beside a busy server', function () {
  // Bounds, not timings: on a machine the rest of the suite keeps busy the stream has taken over five minutes.
  this.timeout(600_000);
  let dir: string;
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps every page answering, and the deltas, the waiting batches and the disk within their bounds', async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-stream-'));
    const source = join(dir, 'source');
    await writeSample(source, { organizations: 6, workspaces: 400, seed: 61 });
    const BATCHES = 24;
    await writeSampleChanges(source, join(dir, 'batches'), { batches: BATCHES, workspaces: 6, seed: 62 });
    const names = Array.from({ length: BATCHES }, (_, i) => `batch-${String(i + 1).padStart(4, '0')}`);
    const dataDir = join(dir, 'data');
    const base = (await loadSnapshot(source, { dataDir, memoryLimit: '1GB', label: 'base' })).manifest;
    // Organizations up to the median size are written whole into overlays, the others layered: both layouts.
    const sizes = Object.keys(base.organizationRows!.workspaces!).map((o) => base.organizationRows!.workspaces![o]! + (base.organizationRows!.resources?.[o] ?? 0)).sort((a, b) => a - b);
    const wholeRows = sizes[Math.floor(sizes.length / 2)]!;
    const baseKb = kb(join(dataDir, 'snapshots'));
    const orgs = readFileSync(join(source, 'organizations.ndjson'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).name as string);
    const store = await openStateStore(loadConfig({ DATA_DIR: dataDir }));
    const tokens = new Map<string, string>();
    for (const org of orgs) tokens.set(org, (await issueToken(store, { kind: 'organization', organization: org, description: 'stream' })).token);
    await store.close();
    const keep = 5;
    const server = await startServer(loadConfig({ DATA_DIR: dataDir, PORT: '0', POOL_WORKERS: '2', SNAPSHOT_KEEP: String(keep), SNAPSHOT_KEEP_DAYS: '0', RATE_LIMIT_MAX: '1000000', RESPONSE_CACHE_MB: '0' }), silentLogger);

    // Compaction as soon as there are deltas (a delta file is a few MB here at least: DuckDB's blocks), and
    // never for idleness: every compaction in this test runs beside the stream.
    const trigger = 64 * 1024;
    const spool = join(dir, 'spool');
    mkdirSync(join(spool, 'incoming'), { recursive: true });
    const follower = spawn(process.execPath, [CLI, 'ingest', spool], {
      env: { ...process.env, DATA_DIR: dataDir, SNAPSHOT_KEEP: String(keep), SNAPSHOT_KEEP_DAYS: '0', INGEST_COMPACT_MB: String(trigger / 2 ** 20), INGEST_COMPACT_IDLE_SECONDS: '0', BATCH_WHOLE_ROWS: String(wholeRows),
        // Level with the reader: the bounds here are the layout's, not the priority's (which make bench-stream
        // measures). At nice 10 beside a saturating reader and the rest of the suite, its first build once took
        // 117 s and the stream's length grew with it, and the reader's CPU with the stream's length.
        INGEST_NICE: '0' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    follower.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
    const logged = () => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, any>);

    let streaming = true;
    const statuses: number[] = [];
    // The reader: four connections in a closed loop, every organization's pages, as long as the stream lasts.
    const readers = Array.from({ length: 4 }, async (_, c) => {
      for (let n = c; streaming; n += 4) {
        const org = orgs[n % orgs.length]!;
        const type = ['workspaces', 'resources', 'providers', 'modules', 'tf_versions'][n % 5];
        const res = await fetch(`${server.url}/api/v2/organizations/${org}/explorer?type=${type}&page%5Bsize%5D=5&page%5Bnumber%5D=${1 + (n % 3)}`, { headers: { Authorization: `Bearer ${tokens.get(org)}` } });
        await res.arrayBuffer();
        statuses.push(res.status);
      }
    });
    // Sampled throughout: the waiting batches, the current snapshot's deltas and layers, the disk.
    const samples: { waiting: number; delta: number; whole: number; overlays: number; overlayBytes: number; layers: number; disk: number }[] = [];
    const sampling = (async () => {
      while (streaming) {
        const id = await readCurrentId(dataDir);
        const m = id ? await readManifest(dataDir, id).catch(() => null) : null;
        if (m) {
          samples.push({
            waiting: readdirSync(join(spool, 'incoming')).filter((n) => !n.startsWith('.')).length,
            delta: deltaBytes(m), whole: m.whole ? m.sizes?.[m.whole] ?? 0 : 0,
            overlays: m.overlays?.length ?? 0, overlayBytes: (m.overlays ?? []).reduce((a, o) => a + (m.sizes?.[o.file] ?? 0), 0),
            // The files the organization that reads the most reads: where its rows lie whole, and the deltas that hold it.
            layers: Math.max(...orgs.map((o) => 1 + (m.majorOrganizations?.includes(o) ? 1 : 0) + (m.deltaOrganizations?.includes(o) ? 1 : 0))),
            disk: kb(join(dataDir, 'snapshots')),
          });
        }
        await sleep(100);
      }
    })();

    try {
      // The producer: a batch every 100 ms, faster than the follower applies them, whatever it is doing. The
      // last few wait until a compaction has started, so that it has later snapshots to go under however slowly
      // the follower started or built (once, on a machine slowed down, its first build took all 24 batches).
      for (const [i, name] of names.entries()) {
        for (const end = Date.now() + 300_000; i === names.length - 4 && !logged().some((l) => l.message === 'compacting layers');) {
          if (Date.now() > end) throw new Error(`no compaction started: ${out}`);
          await sleep(100);
        }
        cpSync(join(dir, 'batches', name), join(spool, `.writing-${name}`), { recursive: true });
        renameSync(join(spool, `.writing-${name}`), join(spool, 'incoming', name));
        await sleep(100);
      }
      for (const end = Date.now() + 360_000; readdirSync(join(spool, 'incoming')).length > 0 || !logged().some((l) => l.message === 'layers compacted' && l.compacted);) {
        if (Date.now() > end) throw new Error(`the stream did not drain, or no compaction went under a later snapshot: ${out}`);
        await sleep(200);
      }
    } finally {
      streaming = false;
      await Promise.all([...readers, sampling]);
      follower.kill('SIGTERM');
      await new Promise((r) => { if (follower.exitCode !== null) r(null); else follower.once('exit', r); });
      await server.shutdown();
    }

    // Every page answered while batches applied and layers were compacted.
    expect(statuses.length).to.be.above(50);
    expect(statuses.filter((s) => s !== 200)).to.deep.equal([]);
    const lines = logged();
    const applied = lines.filter((l) => l.message === 'batch applied');
    // It fell behind and caught up by coalescing; compactions ran beside the batches, under later snapshots.
    expect(applied.some((l) => l.batches.length > 1), 'a coalesced snapshot').to.equal(true);
    const compacted = lines.filter((l) => l.message === 'layers compacted' && l.why === 'deltas' && l.compacted !== undefined);
    expect(compacted.length).to.be.at.least(1);
    // Each was logged as it started too, with what it took in.
    for (const done of compacted) {
      expect(lines.slice(0, lines.indexOf(done)).some((l) => l.message === 'compacting layers' && l.snapshot === done.compacted && l.why === 'deltas' && l.organizations === done.organizations)).to.equal(true);
    }
    expect(lines.filter((l) => l.level === 'warn' || l.level === 'error'), out).to.deep.equal([]);
    expect(applied.flatMap((l) => l.batches)).to.deep.equal(names);

    // The bounds, over every sample. A page reads at most three files (where its organization lies whole, two
    // deltas), and the overlays stay within their number.
    expect(samples.length).to.be.above(20);
    expect(Math.max(...samples.map((s) => s.layers))).to.be.at.most(3);
    expect(Math.max(...samples.map((s) => s.overlays))).to.be.at.most(MAX_OVERLAYS);
    expect(samples.some((s) => s.overlays > 0), 'organizations written whole').to.equal(true);
    // Waiting batches: one coalesced build takes up to COALESCED_BATCHES at once.
    expect(Math.max(...samples.map((s) => s.waiting))).to.be.at.most(COALESCED_BATCHES);
    // The disk: the base, the retained snapshots' own deltas, and the whole layers that the retained
    // snapshots and the one being written share; nothing a compaction or a build left behind.
    const maxDelta = Math.max(...samples.map((s) => s.delta));
    const maxWhole = Math.max(...samples.map((s) => s.whole));
    const maxOverlays = Math.max(...samples.map((s) => s.overlayBytes));
    const bound = baseKb + ((keep + 3) * (maxDelta + maxOverlays) + 3 * maxWhole) / 1024;
    expect(Math.max(...samples.map((s) => s.disk)), `disk in KB, base ${baseKb} KB, deltas up to ${maxDelta} B, overlays up to ${maxOverlays} B, whole layers up to ${maxWhole} B`).to.be.below(bound);
    expect(readdirSync(join(dataDir, 'snapshots')).filter((n) => n.startsWith('.'))).to.deep.equal([]);

    // The result is the source with every batch applied once.
    let state = source;
    for (const [i, name] of names.entries()) {
      const next = join(dir, `state-${i}`);
      oracle(state, join(dir, 'batches', name), next);
      state = next;
    }
    const full = (await loadSnapshot(state, { dataDir: join(dir, 'full'), memoryLimit: '1GB' })).manifest;
    const manifest = await readManifest(dataDir, (await readCurrentId(dataDir))!);
    expect(manifest.organizationRows).to.deep.equal(full.organizationRows);
    // Module rows aside: the count a batch carries forward for them drifts from a full load's by a row on
    // some sources, with every batch applied alone as well (no answer reads it; docs/changes.md §7).
    const { workspace_modules: _batch, ...counted } = manifest.counts;
    const { workspace_modules: _full, ...loaded } = full.counts;
    expect(counted).to.deep.equal(loaded);
  });
});
