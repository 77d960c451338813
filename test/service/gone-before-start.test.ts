// A client that disconnects while its request is still being set up (before the export or page has
// registered for the response's close event) must not pin a worker slot and a FIFO until the deadline.
import { expect } from 'chai';
import { existsSync, readdirSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { streamExport, type ExportEnd } from '../../src/pool/export-stream.js';
import { isHeldFifo } from '../../src/pool/fifos.js';
import { QueryPool } from '../../src/pool/query-pool.js';
import { runPage } from '../../src/pool/run-page.js';

/** Serves one request: waits until its client is gone, then hands the orphaned response to `handle`. */
async function afterClientLeft<T>(handle: (res: ServerResponse) => Promise<T>): Promise<T> {
  let server: Server | undefined;
  try {
    return await new Promise<T>((resolve, reject) => {
      server = createServer((req: IncomingMessage, res) => {
        res.once('close', () => { handle(res).then(resolve, reject); });
      });
      server.listen(0, '127.0.0.1', () => {
        const { port } = server!.address() as AddressInfo;
        const client = request({ port, host: '127.0.0.1', path: '/' });
        client.on('error', () => {});
        client.end(() => setTimeout(() => client.destroy(), 50));
      });
    });
  } finally {
    server?.close();
  }
}

describe('a client gone before its query started', function () {
  this.timeout(30_000);
  let pool: QueryPool;
  before(() => {
    pool = new QueryPool({ workers: 1, concurrencyPerWorker: 1, threads: 1, memoryLimit: '256MB', tempDirectory: join(tmpdir(), 'explorer-pool-test'), maxQueue: 8 });
  });
  after(async () => { await pool.close(); });

  it('does not run its export until the deadline, and leaves no FIFO', async () => {
    const started = Date.now();
    const end = await afterClientLeft<ExportEnd>((res) => streamExport({
      pool, organization: 'acme', attach: [], deadline: Date.now() + 20_000, header: 'n',
      // Tens of MB of CSV: with nobody reading, only a cancel ends it before the deadline.
      query: { sql: 'SELECT range AS n FROM range(50000000)', params: [] }, format: 'csv', lines: false,
      headers: { 'Content-Type': 'text/csv' }, res,
    }));
    expect(Date.now() - started).to.be.below(5000);
    expect(end.kind === 'failed' || end.kind === 'aborted').to.equal(true);
    expect(end).to.have.property('code', 'cancelled');
    // Spare FIFOs stay for the next export; none is held (named after a task) once the export has ended.
    const held = existsSync(pool.fifos.directory) ? readdirSync(pool.fifos.directory).filter(isHeldFifo) : [];
    expect(held).to.deep.equal([]);
  });

  it('does not run its page', async () => {
    const before = pool.tasksStarted;
    const error = await afterClientLeft((res) => runPage(pool, {
      organization: 'acme', attach: [], offset: 0, rowType: 't', attributes: ['n'], document: { number: 1, size: 20, base: 'http://t/explorer', carried: [] },
      count: { sql: 'SELECT 1', params: [] }, page: { sql: 'SELECT 1 AS id, 1 AS n', params: [] }, pageCountsTotal: false,
      deadline: Date.now() + 20_000, timeoutMs: 20_000,
    }, res).then(() => null, (e: Error) => e));
    expect(error).to.have.property('status', 499);
    expect(pool.tasksStarted).to.equal(before);
  });
});
