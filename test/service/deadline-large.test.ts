// A query over the deadline on a large organization, over HTTP: 504 with advice, DuckDB really stops (the
// process's CPU falls back to idle right after the answer), and the next queries succeed. The query is a
// deep page sorted by a long string: the same SQL run to completion in a separate DuckDB instance is the
// control that shows it would have kept a core busy for much longer than the deadline.
import { type DuckDBInstance, type DuckDBValue } from '@duckdb/node-api';
import { expect } from 'chai';
import { join } from 'node:path';
import { compileQuery } from '../../src/query/compile.js';
import { parseQueryParameters } from '../../src/query/parse-query.js';
import { decodeQueryString } from '../../src/query/query-string.js';
import { writeSample } from '../../src/snapshots/sample.js';
import { readCurrentId, snapshotPath } from '../../src/snapshots/snapshot-dir.js';
import { cpuShare } from '../helpers/cpu.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';
import { openInstance } from '../../src/duckdb/open-instance.js';

const DEADLINE_MS = 100;
const SLOW = 'type=workspaces&sort=-providers,-modules&page%5Bnumber%5D=3900';


describe('a query past its deadline on a large organization', function () {
  this.timeout(120_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({
      env: { QUERY_TIMEOUT_MS: String(DEADLINE_MS), POOL_WORKERS: '1', WORKER_CONCURRENCY: '1' },
      writeSource: (dir) => writeSample(dir, { organizations: 1, workspaces: 80_000, seed: 7 }),
    });
  });
  after(async () => { await h?.close(); });

  it('would run far longer than the deadline if nobody stopped it (the control)', async () => {
    const { query } = parseQueryParameters('terraform', decodeQueryString(SLOW));
    const compiled = compileQuery(query, { relation: `snapshot."${query.view.name}"`, organization: 'acme-corp' });
    const db = await openInstance(':memory:', { threads: '1' });
    const c = await db.connect();
    try {
      const dir = snapshotPath(h.dataDir, (await readCurrentId(h.dataDir))!);
      await c.run(`ATTACH '${join(dir, 'snapshot.duckdb')}' AS snapshot (READ_ONLY)`);
      const started = performance.now();
      const rows = await c.runAndReadAll(compiled.page.sql, compiled.page.params as DuckDBValue[]);
      const ms = performance.now() - started;
      expect(rows.currentRowCount).to.equal(20);
      expect(ms).to.be.above(4 * DEADLINE_MS);
    } finally {
      c.closeSync();
      db.closeSync();
    }
  });

  it('answers 504 at the deadline, DuckDB stops burning CPU, and the worker serves the next query', async () => {
    expect(await cpuShare(300)).to.be.below(0.3); // idle before
    const started = Date.now();
    const res = await h.explorer(`?${SLOW}`);
    const elapsed = Date.now() - started;
    expect(res.status).to.equal(504);
    const doc = await json(res);
    expect(doc.errors[0].status).to.equal('504');
    expect(doc.errors[0].detail).to.match(/filter|narrow|fewer/i);
    expect(elapsed).to.be.below(4 * DEADLINE_MS + 500);
    // Had the query gone on, the one worker thread would keep a core busy for several hundred ms more.
    expect(await cpuShare(500)).to.be.below(0.3);
    for (let i = 0; i < 3; i++) {
      // A small view, so that the short deadline of this harness cannot catch it on a busy machine.
      const next = await h.explorer('?type=tf_versions&page%5Bsize%5D=5');
      expect(next.status).to.equal(200);
      expect((await json(next)).data).to.have.length.above(0);
    }
  });
});
