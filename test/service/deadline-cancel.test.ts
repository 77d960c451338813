// interface §10: deadlines interrupt DuckDB for real, disconnects cancel, and an export that is cut off
// never ends like a complete file. Workers must be free for the next query afterwards.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { get, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryPool } from '../../src/pool/query-pool.js';
import { writeSample } from '../../src/sample/sample.js';
import type { PageResult } from '../../workers/protocol.js';
import { isHeldFifo } from '../../src/pool/fifos.js';
import { cpuShare } from '../helpers/cpu.js';
import { startHarness, json, type Harness } from '../helpers/harness.js';

// Billions of hashes: minutes of work for one DuckDB thread, so only an interrupt can end it in time.
const SLOW = { sql: 'SELECT sum(hash(range))::BIGINT FROM range(50000000000)', params: [] };
const QUICK = { sql: 'SELECT 42::BIGINT', params: [] };
const page = (count: typeof SLOW, deadline: number) => ({
  attach: [], count, page: QUICK, pageCountsTotal: false, offset: 1_000_000, rowType: 't', attributes: [], deadline,
  document: { number: 1, size: 20, base: 'http://t/explorer', carried: [] },
});


describe('deadlines and cancellation in the worker pool', function () {
  this.timeout(30_000);
  let pool: QueryPool;
  before(() => {
    // One worker running one task at a time: the follow-up query proves that very worker is free again.
    pool = new QueryPool({ workers: 1, concurrencyPerWorker: 1, threads: 1, memoryLimit: '256MB', tempDirectory: join(tmpdir(), 'explorer-pool-test'), maxQueue: 8 });
  });
  after(async () => { await pool.close(); });

  it('interrupts a query at its deadline, stops burning CPU, and runs the next query on the same worker', async () => {
    const started = Date.now();
    const result = await pool.runPage(pool.newTaskId(), 'acme', page(SLOW, Date.now() + 300));
    const took = Date.now() - started;
    expect(result).to.include({ ok: false, code: 'timeout' });
    expect(took).to.be.below(5000);
    expect(await cpuShare(500)).to.be.below(0.3);
    const next = await pool.runPage(pool.newTaskId(), 'acme', { ...page(QUICK, Date.now() + 5000), offset: 0 });
    expect(next).to.include({ ok: true, total: 42 });
  });

  it('cancels a running query on request', async () => {
    const id = pool.newTaskId();
    const running = pool.runPage(id, 'acme', page(SLOW, Date.now() + 60_000));
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    pool.cancel(id, 'cancelled');
    const result = await running;
    expect(result).to.include({ ok: false, code: 'cancelled' });
    expect(Date.now() - started).to.be.below(5000);
    expect(await pool.runPage(pool.newTaskId(), 'acme', { ...page(QUICK, Date.now() + 5000), offset: 0 })).to.include({ ok: true });
  });

  it('never starts a queued query that was cancelled', async () => {
    const first = pool.newTaskId();
    const second = pool.newTaskId();
    const a = pool.runPage(first, 'acme', page(SLOW, Date.now() + 60_000));
    const b = pool.runPage(second, 'acme', page(SLOW, Date.now() + 60_000));
    await new Promise((r) => setTimeout(r, 100));
    pool.cancel(second, 'cancelled');
    pool.cancel(first, 'cancelled');
    const [ra, rb] = (await Promise.all([a, b])) as [PageResult, PageResult];
    expect(ra).to.include({ ok: false, code: 'cancelled' });
    // The second never reached a worker: it was withdrawn from the admission queue.
    expect(rb).to.deep.include({ ok: false, code: 'cancelled', message: 'cancelled while waiting for a worker' });
  });
});

describe('deadlines over HTTP', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ env: { QUERY_TIMEOUT_MS: '1' } }); });
  after(async () => { await h.close(); });

  for (const route of ['explorer', 'explorer/export/csv']) {
    it(`answers 504 with advice when the ${route} query misses its deadline`, async () => {
      const res = await h.request(`/api/v2/organizations/acme-corp/${route}?type=workspaces`);
      expect(res.status).to.equal(504);
      const body = await json(res);
      expect(body.errors[0].status).to.equal('504');
      expect(body.errors[0].detail).to.match(/simpler query with fewer filters/);
    });
  }
});

/** The deadline of the export tests: a stalled export ends at it, and a page must not wait for it. */
const EXPORT_DEADLINE_MS = 4000;

describe('exports cut off mid-stream', function () {
  this.timeout(60_000);
  let h: Harness;
  const lines: Record<string, unknown>[] = [];
  before(async () => {
    h = await startHarness({
      env: { QUERY_TIMEOUT_MS: String(EXPORT_DEADLINE_MS) },
      // Large enough that the CSV (~15 MB) cannot fit in the pipe and socket buffers of a stalled client.
      writeSource: (dir) => writeSample(dir, { organizations: 2, workspaces: 24000, seed: 3, resources: false }),
      logger: { log: (level, msg, fields) => { lines.push({ level, msg, ...fields }); } },
    });
  });
  after(async () => { await h.close(); });

  const exportUrl = (format = 'csv') => `${h.url}/api/v2/organizations/acme-corp/explorer/export/${format}?type=workspaces`;
  const open = (format = 'csv') => new Promise<IncomingMessage>((resolve, reject) => {
    get(exportUrl(format), { headers: { Authorization: `Bearer ${h.tokens.org}` } }, resolve).on('error', reject);
  });

  // NDJSON streams as CSV does; a Parquet file of this size is one row group, written whole at its end.
  for (const format of ['csv', 'ndjson']) {
    it(`aborts a stalled client of a ${format} export at the deadline so that the transfer is visibly broken, and frees the worker`, async () => {
      const res = await open(format);
      expect(res.statusCode).to.equal(200);
      res.pause(); // a client that stops reading
      const ended = new Promise<string>((resolve) => {
        res.on('end', () => resolve('end'));
        res.on('aborted', () => resolve('aborted'));
        res.on('error', () => resolve('error'));
        res.on('close', () => resolve(res.complete ? 'end' : 'aborted'));
      });
      // The server ends the export at the deadline while the client still reads nothing.
      const log = await waitForLog(lines, (l) => l.msg === 'request' && l.outcome === 'aborted: timeout' && String(l.route).endsWith(`/export/${format}`), EXPORT_DEADLINE_MS + 10_000);
      res.resume();
      expect(await ended).to.not.equal('end');
      expect(res.complete).to.equal(false);
      expect(log.status, JSON.stringify(lines.filter((l) => l.msg !== "snapshot switched"))).to.equal(200);
      const after = await h.explorer('?type=workspaces&page%5Bsize%5D=1');
      expect(after.status).to.equal(200);
    });
  }

  it('cancels the export when the client disconnects, and frees the worker', async () => {
    const res = await open();
    await new Promise<void>((resolve) => res.once('data', () => resolve()));
    res.destroy();
    await waitForLog(lines, (l) => l.msg === 'request' && l.outcome === 'aborted: cancelled');
    const after = await h.explorer('?type=providers&page%5Bsize%5D=1');
    expect(after.status).to.equal(200);
  });

  it('keeps serving pages of another organization while many exports are stalled, then frees every export', async () => {
    // The harness pool runs 4 queries at once; exports may take at most half, so pages always get a slot.
    const logged = lines.length;
    const responses: IncomingMessage[] = [];
    const opened = Array.from({ length: 6 }, () => new Promise<void>((resolve) => {
      get(exportUrl(), { headers: { Authorization: `Bearer ${h.tokens.org}` } }, (res) => { res.pause(); responses.push(res); resolve(); }).on('error', () => resolve());
    }));
    await new Promise((r) => setTimeout(r, 500));
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const page = await h.request('/api/v2/organizations/globex/explorer?type=workspaces', { token: h.tokens.otherOrg });
      expect(page.status).to.equal(200);
      // A page stuck behind the exports would wait for their deadline.
      expect(Date.now() - started).to.be.below(EXPORT_DEADLINE_MS / 2);
    }
    await Promise.all(opened);
    // At the deadline every export ends (its request logged): 504 before its first byte, or a visibly broken 200.
    const exportsEnded = () => lines.slice(logged).filter((l) => l.msg === 'request' && String(l.route).endsWith('/export/csv')).length;
    await waitForCondition(() => exportsEnded() === 6, EXPORT_DEADLINE_MS + 10_000);
    for (const res of responses) {
      res.resume();
      expect([200, 504]).to.include(res.statusCode);
      if (res.statusCode === 200) {
        await new Promise((r) => { res.on('close', r); res.on('end', r); if (res.destroyed) r(null); });
        expect(res.complete).to.equal(false);
      }
    }
    const { readdirSync, existsSync } = await import('node:fs');
    const fifoDirs = () => readdirSync(tmpdir()).filter((n) => n.startsWith(`explorer-${process.pid}-`)).map((n) => join(tmpdir(), n));
    // Every FIFO is given back: none is still held (named after its export's task).
    await waitForCondition(() => fifoDirs().every((d) => !existsSync(d) || readdirSync(d).filter(isHeldFifo).length === 0));
    expect((await h.explorer('?type=workspaces&page%5Bsize%5D=1')).status).to.equal(200);
  });

  it('streams a complete export to a client that keeps reading', async () => {
    const res = await open();
    let bytes = 0;
    let lastByte = -1;
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) { bytes += chunk.length; lastByte = chunk[chunk.length - 1]!; }
    } catch (e) {
      throw new Error(`${(e as Error).message} after ${bytes} bytes; server log: ${JSON.stringify(lines.slice(-3))}`);
    }
    expect(res.complete).to.equal(true);
    expect(bytes).to.be.above(1_000_000);
    expect(lastByte).to.equal(0x0a);
  });

  it('sends the same bytes to a client that reads slowly as to one that reads at once', async () => {
    // The server gathers the FIFO's reads into a few buffers it reuses once the socket has taken them: a
    // buffer reused too early would show here as bytes that differ between a fast and a slow reader.
    const read = async (slow: boolean) => {
      const res = await open();
      const hash = createHash('sha256');
      let lines = 0;
      let sinceBreath = 0;
      for await (const chunk of res as AsyncIterable<Buffer>) {
        hash.update(chunk);
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
        sinceBreath += chunk.length;
        // A pause now and then lets the pipe, the server's buffers and the socket fill up.
        if (slow && sinceBreath > 512 * 1024) { sinceBreath = 0; await new Promise((r) => setTimeout(r, 20)); }
      }
      expect(res.complete).to.equal(true);
      return { digest: hash.digest('hex'), lines };
    };
    const fast = await read(false);
    const slow = await read(true);
    expect(slow).to.deep.equal(fast);
    const total = (await json(await h.explorer('?type=workspaces&page%5Bsize%5D=1'))).meta.pagination['total-count'] as number;
    expect(fast.lines).to.equal(total + 1); // the header and one line per workspace
  });
});

async function waitForLog(lines: Record<string, unknown>[], match: (l: Record<string, unknown>) => boolean, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const found = lines.find(match);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no such log line; saw ${JSON.stringify(lines.slice(-5))}`);
}

async function waitForCondition(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 100));
  }
}
