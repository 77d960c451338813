// Tidying (src/snapshots/write/tidy.ts): after batches, a unit of the small organizations the deltas hold is
// written whole into an overlay and the deltas forget them. The snapshot must answer exactly as before, each
// tidied organization then read from that one file; a unit killed with SIGKILL at any point leaves the
// snapshot answering as before, and the next unit finishes the work and leaves nothing behind; batches go on
// applying over it. (test/service/batch-equivalence.test.ts holds tidied snapshots to a full load of the
// same source, batches and compactions after them included.)
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { DuckDBInstance } from '@duckdb/node-api';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueToken } from '../../src/access/tokens.js';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { writeSample } from '../../src/sample/sample.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { BATCH_POSITIONS, DELTA_POSITION_BASE, isTidyFile, tidyFile } from '../../src/snapshots/delta-layout.js';
import { openSnapshot } from '../../src/snapshots/read/current-snapshot.js';
import { readCurrentId, readManifest, snapshotPath, snapshotsDir } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { tidyCandidates, tidyUnit } from '../../src/snapshots/write/tidy.js';
import { openStateStore } from '../../src/store/open-store.js';
import { comparableAnswer, comparedRoutes } from '../helpers/compare-routes.js';

const TIDY = new URL('../../src/snapshots/write/tidy.js', import.meta.url).href;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('tidying: small organizations the deltas hold, written whole off the batch path', function () {
  this.timeout(300_000);
  let dir: string;
  let dataDir: string;
  let server: RunningServer;
  let token: string;
  let organizations: string[];
  /** Every compared route's answer before any unit ran. */
  const answeredBefore = new Map<string, { status: number; body: string }>();
  const options = { maxRows: 1_000_000, unitRows: 3_000, memoryLimit: '512MB' };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-tidy-'));
    const source = join(dir, 'source');
    await writeSample(source, { organizations: 6, workspaces: 200, seed: 5 });
    await writeSampleChanges(source, join(dir, 'batches'), { batches: 5, workspaces: 15, seed: 5 });
    dataDir = join(dir, 'data');
    await loadSnapshot(source, { dataDir, memoryLimit: '1GB' });
    for (const b of ['batch-0001', 'batch-0002']) await applyBatch(join(dir, 'batches', b), { dataDir, memoryLimit: '1GB', wholeRows: 0 });
    const config = loadConfig({ DATA_DIR: dataDir, PORT: '0', POOL_WORKERS: '1', SNAPSHOT_POLL_MS: '50', RATE_LIMIT_MAX: '1000000', SHUTDOWN_GRACE_MS: '2000' });
    const store = await openStateStore(config);
    token = (await issueToken(store, { kind: 'auditor', organization: null, team: null, user: null })).token;
    await store.close();
    server = await startServer(config, silentLogger);
    const snapshot = await openSnapshot(dataDir, (await readCurrentId(dataDir))!);
    organizations = [...snapshot.organizations];
    expect(tidyCandidates(await readManifest(dataDir, snapshot.id), options.maxRows).length, 'organizations the deltas hold').to.be.greaterThan(1);
    for (const org of organizations) for (const path of comparedRoutes(org)) answeredBefore.set(path, await comparableAnswer(server, path, token));
  });
  after(async () => {
    await server?.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The one number `sql` counts in the layer file `file`, attached read-only as `d`. */
  async function countIn(file: string, sql: string): Promise<number> {
    const instance = await DuckDBInstance.create(':memory:');
    const db = await instance.connect();
    try {
      await db.run(`ATTACH '${file.replace(/'/g, "''")}' AS d (READ_ONLY)`);
      return Number((await db.runAndReadAll(sql)).getRows()[0]![0] as bigint);
    } finally {
      db.closeSync();
      instance.closeSync();
    }
  }

  /** Every compared route answers as before the first unit. */
  async function answersAsBefore(label: string): Promise<void> {
    await server.snapshots.refresh();
    for (const [path, answer] of answeredBefore) expect(await comparableAnswer(server, path, token), `${label}: ${path}`).to.deep.equal(answer);
  }

  it('leaves the snapshot answering as before when a unit is killed at any point, and the next unit finishes the work', async () => {
    const id = (await readCurrentId(dataDir))!;
    // A unit in a process of its own, killed after `ms`; resolves whether it finished first.
    const unitKilledAfter = async (ms: number) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e',
        `const { tidyUnit } = await import(${JSON.stringify(TIDY)}); await tidyUnit(${JSON.stringify(dataDir)}, ${JSON.stringify(options)});`], { stdio: 'ignore' });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const finished = await Promise.race([exited.then((code) => code === 0), sleep(ms).then(() => null)]);
      if (finished === null) child.kill('SIGKILL');
      await exited;
      return finished === true;
    };
    let kills = 0;
    for (let ms = 30; ms < 20_000; ms = Math.round(ms * 1.8)) {
      if (await unitKilledAfter(ms)) break;
      kills++;
      await answersAsBefore(`killed after ${ms} ms`);
      expect(await readCurrentId(dataDir)).to.equal(id);
    }
    expect(kills, 'units killed before one finished').to.be.greaterThan(2);
    const tidied = await readManifest(dataDir, id);
    const overlay = (tidied.overlays ?? []).find((o) => isTidyFile(o.file));
    expect(overlay, 'the unit\'s overlay').to.not.equal(undefined);
    for (const org of Object.keys(overlay!.organizations)) {
      expect([...tidied.deltaOrganizations ?? [], ...tidied.majorOrganizations ?? []], `${org} forgotten by the deltas`).to.not.include(org);
    }
    await answersAsBefore('after the unit');
    // What the killed units left: nothing beside the snapshots, nothing the manifest does not name.
    expect(readdirSync(snapshotsDir(dataDir)).filter((n) => n.startsWith('.tidy-'))).to.deep.equal([]);
    const named = new Set(['manifest.json', 'access.json', tidied.database!, ...[tidied.major, tidied.delta, tidied.whole].filter((n): n is string => n !== undefined), ...(tidied.overlays ?? []).map((o) => o.file)]);
    expect(readdirSync(snapshotPath(dataDir, id)).filter((n) => !named.has(n))).to.deep.equal([]);
  });

  it('reads each tidied organization from its overlay alone, with the base\'s plans', async () => {
    const snapshot = await openSnapshot(dataDir, (await readCurrentId(dataDir))!);
    const overlay = (snapshot.manifest.overlays ?? []).find((o) => isTidyFile(o.file))!;
    for (const org of Object.keys(overlay.organizations)) {
      const target = snapshot.target('workspaces', org);
      expect(target.relation, org).to.contain(overlay.file.replace(/[^0-9A-Za-z]/g, '_'));
      expect(target.fetchRelation, org).to.equal(undefined);
      expect(target.defaultOrderStored, org).to.equal(true);
    }
    // One unit a snapshot: the next waits for a batch.
    expect(await tidyUnit(dataDir, options)).to.equal(null);
  });

  it('lets batches apply over it, and tidies again after them', async () => {
    await applyBatch(join(dir, 'batches', 'batch-0003'), { dataDir, memoryLimit: '1GB', wholeRows: 0 });
    const next = await tidyUnit(dataDir, options);
    expect(next, 'a unit after the next batch').to.not.equal(null);
    const m = await readManifest(dataDir, next!.id);
    expect((m.overlays ?? []).filter((o) => isTidyFile(o.file)).length).to.be.at.least(1);
    expect(existsSync(join(snapshotPath(dataDir, m.id), (m.overlays ?? []).at(-1)!.file))).to.equal(true);
    await server.snapshots.refresh();
    for (const org of organizations) {
      const res = await fetch(`${server.url}/api/v2/organizations/${encodeURIComponent(org)}/explorer?type=workspaces`, { headers: { Authorization: `Bearer ${token}` } });
      expect(res.status, org).to.equal(200);
    }
  });

  it('leaves the organizations it took out of the older delta the next fold writes, answering the same', async () => {
    const before = await readManifest(dataDir, (await readCurrentId(dataDir))!);
    const tidied = (before.overlays ?? []).filter((o) => isTidyFile(o.file)).flatMap((o) => Object.keys(o.organizations));
    const inDeltas = new Set([...before.majorOrganizations ?? [], ...before.deltaOrganizations ?? []]);
    const forgotten = tidied.filter((o) => !inDeltas.has(o));
    expect(forgotten.length, 'tidied organizations the deltas forgot').to.be.greaterThan(0);
    // Their rows are still in the delta files, which tidying does not rewrite.
    const list = forgotten.map((o) => `'${o.replace(/'/g, "''")}'`).join(', ');
    const stored = (file: string) => countIn(file, `SELECT (SELECT count(*) FROM d.workspaces WHERE _org IN (${list}))
      + (SELECT count(*) FROM d.replaced_workspaces WHERE organization IN (${list}))`);
    const files = [before.major, before.delta].filter((f): f is string => f !== undefined).map((f) => join(snapshotPath(dataDir, before.id), f));
    expect((await Promise.all(files.map(stored))).reduce((a, n) => a + n, 0), 'their rows in the deltas before the fold').to.be.greaterThan(0);
    await server.snapshots.refresh();
    const answered = new Map<string, { status: number; body: string }>();
    for (const org of organizations) for (const path of comparedRoutes(org)) answered.set(path, await comparableAnswer(server, path, token));
    // A batch that changes nothing, folding: the older delta it writes holds what the deltas held, less those.
    const empty = join(dir, 'empty');
    cpSync(join(dir, 'batches', 'batch-0001'), empty, { recursive: true, filter: (p) => !p.endsWith('.ndjson') });
    const folded = (await applyBatch(empty, { dataDir, memoryLimit: '1GB', wholeRows: 0, foldBatchWorkspaces: 0 })).manifest;
    expect(folded.majorId, 'a fold').to.equal(folded.id);
    expect(await stored(join(snapshotPath(dataDir, folded.id), folded.major!)), 'their rows in the older delta after it').to.equal(0);
    await server.snapshots.refresh();
    for (const [path, answer] of answered) expect(await comparableAnswer(server, path, token), `after the fold: ${path}`).to.deep.equal(answer);
  });

  it('goes under a batch applied while it writes, and the next fold leaves out the rows it holds already', async () => {
    // A newer delta holding rows of some organizations, then a unit of every organization the deltas hold,
    // with the next batch applied while it writes.
    await applyBatch(join(dir, 'batches', 'batch-0004'), { dataDir, memoryLimit: '1GB', wholeRows: 0 });
    const read = await readManifest(dataDir, (await readCurrentId(dataDir))!);
    let applied: Awaited<ReturnType<typeof applyBatch>> | undefined;
    const unit = await tidyUnit(dataDir, { maxRows: 1_000_000, unitRows: 1_000_000, memoryLimit: '512MB', beforeSwitch: async () => {
      applied = await applyBatch(join(dir, 'batches', 'batch-0005'), { dataDir, memoryLimit: '1GB', wholeRows: 0 });
    } });
    expect(unit?.rebasedOnto, 'under the batch\'s snapshot').to.equal(applied!.manifest.id);
    const onto = await readManifest(dataDir, applied!.manifest.id);
    const overlay = (onto.overlays ?? []).find((o) => o.file === tidyFile(read.sequence ?? 0))!;
    expect(overlay.sequence).to.equal(read.sequence);
    // Those the batch touched again stay the newer delta's; the others are forgotten.
    const again = Object.keys(overlay.organizations).filter((o) => onto.changedOrganizations!.includes(o));
    expect(again.length, 'organizations of the unit the batch touched again').to.be.greaterThan(0);
    for (const o of Object.keys(overlay.organizations)) {
      expect(onto.deltaOrganizations?.includes(o) ?? false, o).to.equal(again.includes(o));
      expect(onto.majorOrganizations ?? [], o).to.not.include(o);
    }
    // Their rows the batches up to the unit's snapshot wrote, still in the newer delta's file.
    const bound = DELTA_POSITION_BASE + ((read.sequence ?? 0) + 1) * BATCH_POSITIONS;
    const list = again.map((o) => `'${o.replace(/'/g, "''")}'`).join(', ');
    const settledIn = (file: string) => countIn(file, `SELECT count(*) FROM d.resources WHERE _org IN (${list}) AND _pos < ${bound}`);
    expect(await settledIn(join(snapshotPath(dataDir, onto.id), onto.delta!)), 'their earlier rows in the newer delta').to.be.greaterThan(0);
    await server.snapshots.refresh();
    const answered = new Map<string, { status: number; body: string }>();
    for (const org of organizations) for (const path of comparedRoutes(org)) answered.set(path, await comparableAnswer(server, path, token));
    // A fold that changes nothing: the older delta it writes leaves those rows out, and every answer stands.
    const folded = (await applyBatch(join(dir, 'empty'), { dataDir, memoryLimit: '1GB', wholeRows: 0, foldBatchWorkspaces: 0 })).manifest;
    expect(folded.majorId).to.equal(folded.id);
    expect(await settledIn(join(snapshotPath(dataDir, folded.id), folded.major!)), 'their earlier rows in the older delta').to.equal(0);
    await server.snapshots.refresh();
    for (const [path, answer] of answered) expect(await comparableAnswer(server, path, token), `after the fold: ${path}`).to.deep.equal(answer);
  });
});
