// Exports of stored lines run on each worker's second, small DuckDB instance (workers/engine.ts), so that a
// large export's blocks do not fill the pages' buffer pool and the process's memory; an export that formats
// and sorts needs the pages' memory and runs there. The export itself reports which instance ran it.
import { expect } from 'chai';
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openInstance } from '../../src/duckdb/open-instance.js';
import { streamExport } from '../../src/pool/export-stream.js';
import { QueryPool } from '../../src/pool/query-pool.js';

/** The memory limit as DuckDB prints it for an instance opened with `limit`. */
async function printed(limit: string): Promise<string> {
  const db = await openInstance(':memory:', { memory_limit: limit });
  const c = await db.connect();
  try {
    return (await c.runAndReadAll("SELECT current_setting('memory_limit')")).getRows()[0]![0] as string;
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

describe('the instance an export runs on', function () {
  this.timeout(30_000);
  let pool: QueryPool;
  let server: Server;
  let lines = true;
  before(async () => {
    pool = new QueryPool({
      workers: 1, concurrencyPerWorker: 2, threads: 1, memoryLimit: '256MB', exportMemoryLimit: '24MB',
      tempDirectory: join(tmpdir(), 'explorer-pool-test'), maxQueue: 8,
    });
    server = createServer((_req, res) => {
      void streamExport({
        pool, organization: 'acme', attach: [], deadline: Date.now() + 20_000, header: 'limit', format: 'csv', lines,
        query: { sql: "SELECT current_setting('memory_limit')", params: [] }, headers: { 'Content-Type': 'text/csv' }, res,
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  after(async () => {
    server.close();
    await pool.close();
  });

  const exported = () => new Promise<string>((resolve, reject) => {
    get({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { body += chunk; });
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });

  it('is the small one for stored lines, and the pages\' one for an export that formats values', async () => {
    const [small, large] = [await printed('24MB'), await printed('256MB')];
    expect(small).to.not.equal(large);
    lines = true;
    expect(await exported()).to.equal(`limit\n${small}\n`);
    lines = false;
    expect(await exported()).to.equal(`limit\n"${large}"\n`);
  });
});
