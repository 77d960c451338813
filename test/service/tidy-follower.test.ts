// The follower's tidying as it runs beside the stream (docs/changes.md §5, "Tidying"): servers record which
// organizations they are asked about, the follower tidies the most-read organization in debt first, in a
// process of its own below the batches' priority, never beyond its CPU budget, and a lone batch waits for
// company while too many organizations are in debt.
// (test/service/tidy.test.ts holds a unit's own work to answering as before, killed or not.)
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueToken } from '../../src/access/tokens.js';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { OrganizationReads, readScores } from '../../src/metrics/organization-reads.js';
import { writeSample } from '../../src/sample/sample.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { startServer } from '../../src/server.js';
import { isTidyFile } from '../../src/snapshots/delta-layout.js';
import { readCurrentId, readManifest } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { runIngest, type IngestOptions } from '../../src/snapshots/write/ingest.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { tidyCandidates } from '../../src/snapshots/write/tidy.js';
import { TIDY_NICE } from '../../src/snapshots/write/tidy-process.js';
import { openStateStore } from '../../src/store/open-store.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Logged { level: string; message: string; fields: Record<string, unknown> }

describe('tidying beside the stream: most-read first, within a budget, a lone batch waiting for company', function () {
  this.timeout(300_000);
  let dir: string;
  let dataDir: string;
  let spool: string;
  const batch = (n: number) => join(dir, 'batches', `batch-${String(n).padStart(4, '0')}`);
  const arrive = (n: number) => renameSync(batch(n), join(spool, 'incoming', `batch-${String(n).padStart(4, '0')}`));

  /** A follower on `spool` until `done` says so from its log (or the time runs out); its log. */
  async function follow(options: Partial<IngestOptions>, done: (log: Logged[]) => boolean, what: string): Promise<Logged[]> {
    const log: Logged[] = [];
    const stop = new AbortController();
    const running = runIngest(spool, {
      dataDir, memoryLimit: '512MB', pollMs: 20, signal: stop.signal, tidyRows: 1_000_000, tidyUnitRows: 1,
      log: (level, message, fields) => log.push({ level, message, fields }), ...options,
    });
    const deadline = Date.now() + 120_000;
    while (!done(log) && Date.now() < deadline) await sleep(20);
    stop.abort();
    await running;
    expect(done(log), `${what}: ${JSON.stringify(log)}`).to.equal(true);
    expect(log.filter((l) => l.level !== 'info'), 'nothing went wrong').to.deep.equal([]);
    return log;
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-tidy-follower-'));
    const source = join(dir, 'source');
    await writeSample(source, { organizations: 6, workspaces: 200, seed: 5 });
    await writeSampleChanges(source, join(dir, 'batches'), { batches: 6, workspaces: 15, seed: 5 });
    dataDir = join(dir, 'data');
    spool = join(dir, 'spool');
    mkdirSync(join(spool, 'incoming'), { recursive: true });
    await loadSnapshot(source, { dataDir, memoryLimit: '1GB' });
    for (const n of [1, 2]) await applyBatch(batch(n), { dataDir, memoryLimit: '1GB', wholeRows: 0 });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('records on the server which organizations are read, for the follower to find', async () => {
    const config = loadConfig({ DATA_DIR: dataDir, PORT: '0', POOL_WORKERS: '1', RATE_LIMIT_MAX: '1000000', SHUTDOWN_GRACE_MS: '2000' });
    const store = await openStateStore(config);
    const token = (await issueToken(store, { kind: 'auditor', organization: null, team: null, user: null })).token;
    await store.close();
    const server = await startServer(config, silentLogger);
    const [often, once] = (await readManifest(dataDir, (await readCurrentId(dataDir))!)).deltaOrganizations!;
    try {
      for (const [org, times] of [[often!, 5], [once!, 1]] as const) {
        for (let i = 0; i < times; i++) {
          const res = await fetch(`${server.url}/api/v2/organizations/${encodeURIComponent(org)}/explorer?type=workspaces`, { headers: { Authorization: `Bearer ${token}` } });
          expect(res.status).to.equal(200);
        }
      }
      // Not one that no request was authorized for.
      expect((await fetch(`${server.url}/api/v2/organizations/nobody-at-all/explorer?type=workspaces`, { headers: { Authorization: `Bearer ${token}` } })).status).to.equal(404);
    } finally {
      await server.shutdown(); // writes what is pending
    }
    const scores = await readScores(dataDir);
    expect(scores[often!]).to.be.closeTo(5, 0.01);
    expect(scores[once!]).to.be.closeTo(1, 0.01);
    expect(scores).to.not.have.property('nobody-at-all');
  });

  it('tidies the most-read organization in debt first', async () => {
    const before = await readManifest(dataDir, (await readCurrentId(dataDir))!);
    // The organization tidied last were reads not counted: made the most read by far.
    const target = tidyCandidates(before, 1_000_000).at(-1)!.name;
    expect(tidyCandidates(before, 1_000_000)[0]!.name, 'another comes first without reads').to.not.equal(target);
    const reads = new OrganizationReads(dataDir, 'a-server');
    for (let i = 0; i < 1000; i++) reads.record(target);
    await reads.flush();
    arrive(3);
    const log = await follow({ tidyCpu: 100 }, (l) => l.some((e) => e.message === 'organizations tidied'), 'a unit after the batch');
    const tidiedLog = log.find((e) => e.message === 'organizations tidied')!.fields;
    expect(tidiedLog.most_read).to.equal(1);
    // In a process of its own below the batches' priority, charged that process's CPU.
    expect(tidiedLog.nice).to.equal(TIDY_NICE);
    expect(tidiedLog.cpu_seconds).to.be.a('number').and.greaterThan(0);
    const after = await readManifest(dataDir, (await readCurrentId(dataDir))!);
    const tidied = (after.overlays ?? []).filter((o) => isTidyFile(o.file)).flatMap((o) => Object.keys(o.organizations));
    expect(tidied).to.deep.equal([target]);
    expect([...after.deltaOrganizations ?? [], ...after.majorOrganizations ?? []]).to.not.include(target);
  });

  it('never tidies beyond its budget: with no share of a core, not at all', async () => {
    arrive(4);
    const log = await follow({ tidyCpu: 0 }, (l) => l.some((e) => e.message === 'batch applied'), 'the batch applied');
    // A follower polling (every 20 ms) with organizations in debt and no budget: still no unit.
    const again = await follow({ tidyCpu: 0 }, (() => { const until = Date.now() + 1000; return () => Date.now() >= until; })(), 'a second of polling');
    expect([...log, ...again].filter((e) => e.message === 'organizations tidied')).to.deep.equal([]);
    const m = await readManifest(dataDir, (await readCurrentId(dataDir))!);
    expect(tidyCandidates(m, 1_000_000).length, 'organizations still in debt').to.be.greaterThan(0);
  });

  it('holds a lone batch while organizations are in debt, and applies it with the next one as one snapshot', async () => {
    const stop = new AbortController();
    const log: Logged[] = [];
    arrive(5);
    const running = runIngest(spool, {
      dataDir, memoryLimit: '512MB', pollMs: 20, signal: stop.signal, tidyRows: 1_000_000, tidyCpu: 0,
      debtOrganizations: 0, coalesceMaxMs: 600_000, log: (level, message, fields) => log.push({ level, message, fields }),
    });
    try {
      // Held: dozens of polls go by and it is not applied alone.
      await sleep(1500);
      expect(log.filter((e) => e.message === 'batch applied'), 'the lone batch, held').to.deep.equal([]);
      arrive(6);
      const deadline = Date.now() + 120_000;
      while (!log.some((e) => e.message === 'batch applied') && Date.now() < deadline) await sleep(20);
    } finally {
      stop.abort();
      await running;
    }
    const applied = log.filter((e) => e.message === 'batch applied');
    expect(applied.map((e) => e.fields.batches)).to.deep.equal([['batch-0005', 'batch-0006']]);
  });
});
