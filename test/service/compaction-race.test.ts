// A snapshot compacted or removed while servers read it (docs/history.md, "Reading while the loader
// compacts"). The loader compacts an older snapshot and removes snapshots past SNAPSHOT_KEEP without knowing
// which servers read them. Here the compaction is held at each of its steps, and at each one servers in
// every state read the snapshot through every history route: one that had it open before and polls only now
// (so it also notices the new current snapshot only now), one that starts now and opens it for the first
// time, and both again once the compaction has finished but before they poll. Every answer must be the one
// the same route gave before the compaction began; none may be a 5xx. A lease taken on the old form keeps
// reading it after the compaction has removed its files.
import { DuckDBInstance } from '@duckdb/node-api';
import { expect } from 'chai';
import { existsSync, openSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { silentLogger, type Logger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { compactSnapshots, type CompactStep } from '../../src/snapshots/write/compact.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { pruneSnapshots, readManifest, snapshotPath } from '../../src/snapshots/snapshot-dir.js';
import * as fx from '../fixtures/small-source.js';
import { clientQuery, json, startHarness, type Harness } from '../helpers/harness.js';
import { DAY1, DAY2, DAY3, writeDay } from '../helpers/history-days.js';

const BASE = `/api/v2/organizations/${fx.ORG}/explorer`;
const STEPS: CompactStep[] = ['started', 'written', 'switched', 'removed'];
const DRIFTED = clientQuery({ 'filter[0][drifted][is][0]': 'true' }).slice(1);

interface Answer { status: number; body: string }

describe('a snapshot compacted or removed while servers read it', function () {
  this.timeout(180_000);
  let h: Harness;
  let view: string;
  let loads = 0;
  const started: RunningServer[] = [];

  // Polls happen only when the test says: SNAPSHOT_POLL_MS is an hour.
  const env = { SNAPSHOT_KEEP: '30', SNAPSHOT_POLL_MS: '3600000' };
  const startAnother = async (logger: Logger = silentLogger) => {
    const server = await startServer({ ...h.config, port: 0 }, logger);
    started.push(server);
    return server;
  };
  const stopAnother = async (server: RunningServer) => {
    started.splice(started.indexOf(server), 1);
    await server.shutdown();
  };
  /** Loads another day as the loader does, but without compacting: the test compacts by hand. */
  const loadDay = async () => {
    const day = [DAY1, DAY2, DAY3][loads % 3]!;
    loads++;
    const { manifest } = await loadSnapshot(writeDay(join(h.dataDir, `load-${loads}`), day), { dataDir: h.dataDir, keep: 30, keepFull: 100, label: `load ${loads}` });
    return manifest;
  };

  /** Every history route, reading `x` (the snapshot compacted) and `y` (the current one). */
  const routes = (x: string, y: string, asOf: string) => [
    `?type=workspaces&snapshot=${x}`,
    `?type=providers&snapshot=${x}&sort=-version`,
    `?type=resources&snapshot=${x}`,
    `?type=workspaces&as_of=${encodeURIComponent(asOf)}`,
    `/export/csv?type=workspaces&snapshot=${x}`,
    `/export/csv?type=modules&snapshot=${x}`,
    `/changes?type=workspaces&from=${x}&to=${y}`,
    `/changes?type=tf_versions&from=${x}`,
    `/changes/export/csv?type=workspaces&from=${x}&to=${y}`,
    `/trend?type=workspaces&sum=resources_drifted`,
    `/trend?type=providers&${clientQuery({ 'filter[0][name][is][0]': 'aws' }).slice(1)}`,
    '/snapshots',
    `/views/${view}/results?snapshot=${x}`,
    `/views/${view}/csv?snapshot=${x}`,
    `/views/${view}/changes?from=${x}&to=${y}`,
    `/views/${view}/changes/export/csv?from=${x}&to=${y}`,
    `/views/${view}/trend?sum=resources_drifted`,
  ];

  /**
   * What `server` answers on each route, with its own address taken out of the links. All at once, so that
   * every worker of its pool takes some: a worker that has not attached a file yet is the one that fails
   * when the file is gone.
   */
  const answers = async (server: RunningServer, paths: string[]): Promise<Map<string, Answer>> => {
    const got = await Promise.all(paths.map(async (path): Promise<[string, Answer]> => {
      const res = await fetch(`${server.url}${BASE}${path}`, { headers: { Authorization: `Bearer ${h.tokens.org}` } });
      return [path, { status: res.status, body: (await res.text()).split(server.url).join('<server>') }];
    }));
    return new Map(got);
  };
  const expectSame = (got: Map<string, Answer>, expected: Map<string, Answer>, when: string) => {
    for (const [path, answer] of expected) {
      const actual = got.get(path)!;
      expect(actual.status, `${when}: ${path} answered ${actual.status}: ${actual.body.slice(0, 300)}`).to.equal(answer.status);
      expect(actual.body, `${when}: ${path}`).to.equal(answer.body);
    }
  };

  /** Rows of `view` in the DuckDB file at `path`, read by a DuckDB of the test's own. */
  const rowsIn = async (path: string, table: string): Promise<number> => {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      await connection.run(`ATTACH '${path.replace(/'/g, "''")}' AS held (READ_ONLY)`);
      return Number((await connection.runAndReadAll(`SELECT count(*) FROM held."${table}"`)).getRows()[0]![0]);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  };

  before(async () => {
    h = await startHarness({ writeSource: (dir) => writeDay(dir, DAY1), env});
    const created = await h.request(`${BASE}/views`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/vnd.api+json' },
      body: JSON.stringify({ data: { type: 'explorer-saved-queries', attributes: { name: 'drifted', 'query-type': 'workspaces', query: { filter: [{ field: 'drifted', operator: 'is', value: ['true'] }] } } } }),
    });
    expect(created.status).to.equal(201);
    view = (await json(created)).data.id;
    await loadDay();
    await loadDay();
    // Everything older than the two newest compacted: from here each load makes exactly one more to compact.
    await compactSnapshots(h.dataDir, 2);
    await h.running.snapshots.refresh();
  });
  after(async () => {
    for (const server of [...started]) await server.shutdown();
    await h.close();
  });

  for (const held of STEPS) {
    it(`reads it right, with no 5xx, with the compaction held at "${held}" and after it`, async () => {
      // `lagging` had the snapshot about to be compacted open (full) and polls only at the held step: it
      // notices the new current snapshot in the middle of the compaction, as a server does when its poll
      // falls there.
      const lagging = await startAnother();
      const before = await h.running.snapshots.history();
      const x = before[before.length - 2]!.id;
      await answers(lagging, routes(x, before[before.length - 1]!.id, before[before.length - 2]!.manifest.createdAt));
      const loaded = await loadDay();
      await h.running.snapshots.refresh();
      const xManifest = await readManifest(h.dataDir, x);
      expect(xManifest.compacted, 'not compacted yet').to.equal(undefined);
      const paths = routes(x, loaded.id, xManifest.createdAt);
      const expected = await answers(h.running, paths);
      for (const [path, answer] of expected) expect(answer.status, `${path}: ${answer.body.slice(0, 300)}`).to.equal(200);

      let fresh: RunningServer | undefined;
      let lease: ReturnType<RunningServer['snapshots']['lease']> | undefined;
      const steps: string[] = [];
      await compactSnapshots(h.dataDir, 2, {
        atStep: async (step, id) => {
          steps.push(`${step} ${id}`);
          if (step !== held) return;
          // The server that had it open, polled here.
          await h.running.snapshots.refresh();
          expectSame(await answers(h.running, paths), expected, `polled at ${step}`);
          // The lagging server switches to the new current snapshot here.
          await lagging.snapshots.refresh();
          expectSame(await answers(lagging, paths), expected, `lagging server polled at ${step}`);
          // A server that opens it for the first time here.
          fresh = await startAnother();
          expectSame(await answers(fresh, paths), expected, `server started at ${step}`);
          lease = h.running.snapshots.lease((await h.running.snapshots.history()).find((s) => s.id === x)!);
        },
      });
      expect(steps).to.deep.equal(STEPS.map((s) => `${s} ${x}`));
      expect((await readManifest(h.dataDir, x)).compacted).to.equal(true);
      expect(existsSync(join(snapshotPath(h.dataDir, x), 'snapshot.duckdb')), 'the full file is removed').to.equal(false);

      // Done, but nobody has polled since: each still serves what it opened.
      for (const [name, server] of [['first', h.running], ['lagging', lagging], ['fresh', fresh!]] as const) {
        expectSame(await answers(server, paths), expected, `${name} server, compaction done, not polled`);
      }
      // The lease's form stays readable while the lease is held, polls or not.
      await h.running.snapshots.refresh();
      await h.running.snapshots.refresh();
      const leasedFile = lease!.snapshot.attachment!.path;
      expect(await rowsIn(leasedFile, 'workspaces')).to.equal(xManifest.rows.workspaces);
      lease!.release();
      for (const server of [h.running, lagging, fresh!]) {
        await server.snapshots.refresh();
        await server.snapshots.refresh();
        expectSame(await answers(server, paths), expected, 'polled after the compaction');
      }
      // Released and forgotten: the server's link to the old form goes, unless that form is still current's.
      if (held !== 'switched' && held !== 'removed') expect(existsSync(leasedFile), `${leasedFile} unpinned`).to.equal(false);
      await stopAnother(fresh!);
      await stopAnother(lagging);
    });
  }

  it('reads a snapshot that retention removed under it while leased, then answers it as no longer retained', async () => {
    const history = await h.running.snapshots.history();
    const oldest = history[0]!;
    const lease = h.running.snapshots.lease(oldest);
    const paths = [`?type=workspaces&snapshot=${oldest.id}`, `/export/csv?type=workspaces&snapshot=${oldest.id}`, `/changes?type=workspaces&from=${oldest.id}`, '/trend?type=workspaces'];
    const expected = await answers(h.running, paths);
    // The loader's retention: it knows nothing of this server's lease.
    const removed = await pruneSnapshots(h.dataDir, { keep: history.length - 1, keepDays: 0 });
    expect(removed).to.deep.equal([oldest.id]);
    expectSame(await answers(h.running, paths), expected, 'removed, not polled');
    expect(await rowsIn(lease.snapshot.attachment!.path, 'workspaces')).to.equal(oldest.manifest.rows.workspaces);
    await h.running.snapshots.refresh();
    const gone = await answers(h.running, paths);
    expect(gone.get(paths[0]!)!.status).to.equal(400);
    expect(JSON.parse(gone.get(paths[0]!)!.body).errors[0].source).to.deep.equal({ parameter: 'snapshot' });
    expect(gone.get(paths[3]!)!.status).to.equal(200);
    lease.release();
  });

  it('logs why a snapshot cannot be read when it answers 503', async () => {
    const lines: Record<string, unknown>[] = [];
    const server = await startAnother({ log: (level, msg, fields) => { lines.push({ level, msg, ...fields }); } });
    // A retained snapshot this server has not read yet, its database headers overwritten: it opens (its
    // magic and size are right) but DuckDB cannot attach it.
    const history = await server.snapshots.history();
    const damaged = history[0]!;
    const fd = openSync(join(snapshotPath(h.dataDir, damaged.id), damaged.manifest.database!), 'r+');
    try {
      writeSync(fd, Buffer.alloc(8192, 0x5a), 0, 8192, 4096);
    } finally {
      closeSync(fd);
    }
    const res = await fetch(`${server.url}${BASE}?type=workspaces&snapshot=${damaged.id}`, { headers: { Authorization: `Bearer ${h.tokens.org}` } });
    expect(res.status).to.equal(503);
    const line = lines.find((l) => l.msg === 'request' && l.status === 503);
    expect(line, JSON.stringify(lines.slice(-3))).to.not.equal(undefined);
    expect(String(line!.error)).to.match(/cannot attach the snapshot: .+/);
    await stopAnother(server);
  });
});
