// A query over the deadline on a large organization, over HTTP: 504 with advice, DuckDB really stops (the
// process's CPU falls back to idle right after the answer), and the next queries succeed. The query is a
// deep page sorted by long strings. Nothing here assumes how fast the machine is: the test first runs the
// same SQL to completion in a separate DuckDB instance (the control), then restarts the server with a
// deadline of a tenth of that time, so the query is always stopped far from its end, and every bound that
// follows is a share of the control's own time.
import { type DuckDBValue } from '@duckdb/node-api';
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openInstance } from '../../src/duckdb/open-instance.js';
import { silentLogger } from '../../src/log.js';
import { compileQuery } from '../../src/query/compile.js';
import { parseQueryParameters } from '../../src/query/parse-query.js';
import { decodeQueryString } from '../../src/query/query-string.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { writeSample } from '../../src/sample/sample.js';
import { readCurrentId, snapshotPath } from '../../src/snapshots/snapshot-dir.js';
import { cpuShare } from '../helpers/cpu.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

const SLOW = 'type=workspaces&sort=-providers,-modules&page%5Bnumber%5D=3900';
/** A small page, its size appended. */
const SMALL = 'type=workspaces&fields%5Bworkspaces%5D=workspace_name&page%5Bsize%5D=';
/** The deadline is this share of the query's own run time. */
const DEADLINE_SHARE = 10;

/** Run time of the compiled page SQL, to completion, on one DuckDB thread: the fastest of `runs`. */
async function controlMs(dataDir: string, runs: number): Promise<number> {
  const { query } = parseQueryParameters('terraform', decodeQueryString(SLOW));
  const compiled = compileQuery(query, { relation: `snapshot."${query.view.name}"`, organization: 'acme-corp' });
  const db = await openInstance(':memory:', { threads: '1' });
  const c = await db.connect();
  try {
    const dir = snapshotPath(dataDir, (await readCurrentId(dataDir))!);
    await c.run(`ATTACH '${join(dir, 'snapshot.duckdb')}' AS snapshot (READ_ONLY)`);
    let fastest = Infinity;
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      const rows = await c.runAndReadAll(compiled.page.sql, compiled.page.params as DuckDBValue[]);
      fastest = Math.min(fastest, performance.now() - started);
      expect(rows.currentRowCount).to.equal(20);
    }
    return fastest;
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

describe('a query past its deadline on a large organization', function () {
  this.timeout(180_000);
  let h: Harness;
  let server: RunningServer | undefined;
  let control = 0;
  let deadline = 0;

  before(async () => {
    h = await startHarness({
      env: { POOL_WORKERS: '1', WORKER_CONCURRENCY: '1' },
      writeSource: (dir) => writeSample(dir, { organizations: 1, workspaces: 80_000, seed: 7, resources: false }),
    });
    control = await controlMs(h.dataDir, 2);
    deadline = Math.max(5, Math.floor(control / DEADLINE_SHARE));
    await h.running.shutdown();
    server = await startServer({ ...h.config, queryTimeoutMs: deadline }, silentLogger);
  });
  after(async () => {
    await server?.shutdown();
    if (h) rmSync(h.dataDir, { recursive: true, force: true });
  });

  const explorer = (query: string) =>
    fetch(`${server!.url}/api/v2/organizations/acme-corp/explorer?${query}`, { headers: { Authorization: `Bearer ${h.tokens.org}` } });

  it('answers 504 long before the query could have ended, DuckDB stops burning CPU, and the worker serves the next query', async () => {
    // Idle before: the restart, the load's leftovers and the control have settled.
    // A small page's statement prepared and its blocks read, so that what follows the 504 measures the worker,
    // not a cold start against a deadline of a few milliseconds (which a cold start may overrun: each try gets
    // further). A few workspaces' names in stored order: a few rows read by position. (Not a grouped view's
    // page: in this organization each version's row lists thousands of workspaces, tens of milliseconds of
    // JSON on a busy machine.)
    // The restart's own work settled first, as before the slow query below: in the full suite a small page
    // once missed a deadline of 31 ms ten times in a row right after the restart.
    await waitFor(async () => (await cpuShare(300)) < 0.3, 20_000, 'an idle process');
    // Tried for up to 20 s, a pause between tries: in the full suite the machine's two cores are shared with
    // other test files, and once a steady stream's follower beside it made ten tries in a row miss 86 ms.
    const warm: number[] = [];
    for (const end = Date.now() + 20_000; warm.at(-1) !== 200 && (warm.length < 10 || Date.now() < end);) {
      if (warm.length > 0) await new Promise((r) => setTimeout(r, 200));
      warm.push((await explorer(`${SMALL}4`)).status);
    }
    expect(warm.at(-1), `the small view before the slow query (deadline ${deadline} ms): ${warm.join(', ')}`).to.equal(200);
    await waitFor(async () => (await cpuShare(300)) < 0.3, 20_000, 'an idle process');
    const started = performance.now();
    const res = await explorer(SLOW);
    const elapsed = performance.now() - started;
    expect(res.status).to.equal(504);
    const doc = await json(res);
    expect(doc.errors[0].status).to.equal('504');
    expect(doc.errors[0].detail).to.match(/filter|narrow|fewer/i);
    // The answer came before the query, run to completion, would have produced its rows.
    expect(elapsed, `deadline ${deadline} ms, control ${Math.round(control)} ms`).to.be.below(control);
    // Had the query gone on, the one worker thread would keep a core busy for the rest of the control's time.
    // Had the query gone on, the worker would burn the rest of the control's time after the answer. Stopped,
    // it burns only the interrupt's latency and the clean-up (~100 ms here). Measured over a window long
    // enough to hold the whole remainder, so the comparison is of CPU work, not of the clock.
    const remaining = control - deadline;
    const window = control + 500;
    const after = (await cpuShare(window)) * window;
    expect(after, `CPU ${Math.round(after)} ms after the 504; control ${Math.round(control)} ms, deadline ${deadline} ms, 504 after ${Math.round(elapsed)} ms`)
      .to.be.below(0.75 * remaining);
    const outcomes: number[] = [];
    for (let i = 0; i < 10; i++) {
      // A page of a few rows: served well within any deadline this test can pick. Each asks another page size,
      // so that no answer comes from the response cache rather than the worker.
      const next = await explorer(`${SMALL}${5 + i}`);
      outcomes.push(next.status);
      if (next.status === 504) { // a deadline of a few ms on a busy machine: wait for a quiet moment, then try again
        await waitFor(async () => (await cpuShare(200)) < 0.3, 10_000, 'an idle process').catch(() => undefined);
        continue;
      }
      expect(next.status).to.equal(200);
      expect((await json(next)).data).to.have.length.above(0);
      return;
    }
    expect.fail(`ten small queries after the 504 all timed out (deadline ${deadline} ms): ${outcomes.join(', ')}`);
  });
});
