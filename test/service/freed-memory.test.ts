// `explorer sync` makes DuckDB's bundled jemalloc return freed pages at once (duckdb/allocator.ts): that is
// what keeps a first sync near SYNC_MEMORY_LIMIT; `explorer ingest` makes it keep them ten seconds, from one
// batch to the next. Checked in child processes, because jemalloc reads its
// configuration once per process: each fills a temporary table of about 150 MB, drops it, and reports its
// resident memory at the peak and after the drop. The control shows the retention the setting removes, so
// that a DuckDB release that renames the variable or changes its default is noticed here.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

const ROOT = resolve(fileURLToPath(import.meta.url), '../../../..');
const ALLOCATOR = new URL('../../src/duckdb/allocator.js', import.meta.url).href;

const CHILD = `
const prompt = process.argv[1] === 'prompt';
if (prompt) (await import(${JSON.stringify(ALLOCATOR)})).setAllocatorFor('sync');
const { DuckDBInstance } = await import('@duckdb/node-api');
const { readFileSync } = await import('node:fs');
const anonMb = () => {
  let kb = 0, named = true;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \\S+ \\S+ \\S+ \\S+\\s*(.*)$/.exec(line);
    if (head) { named = head[1] !== ''; continue; }
    const rss = /^Rss:\\s+(\\d+)/.exec(line);
    if (rss && !named) kb += Number(rss[1]);
  }
  return kb / 1024;
};
const instance = await DuckDBInstance.create(':memory:', { threads: '1', memory_limit: '400MB' });
const db = await instance.connect();
await db.run("CREATE TEMP TABLE t AS SELECT i, repeat(md5(i::VARCHAR), 12) AS s FROM range(300000) r(i)");
const peak = anonMb();
await db.run('DROP TABLE t');
const after = anonMb();
console.log(JSON.stringify({ peak, after }));
`;

async function fillAndDrop(mode: 'prompt' | 'control'): Promise<{ peak: number; after: number }> {
  const env = { ...process.env };
  delete env.DUCKDB_JE_MALLOC_CONF;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', CHILD, mode], { cwd: ROOT, env });
  return JSON.parse(stdout.trim().split('\n').pop()!) as { peak: number; after: number };
}

describe('memory DuckDB frees in a sync process', function () {
  this.timeout(60_000);

  it('goes back to the system at once', async () => {
    const { peak, after } = await fillAndDrop('prompt');
    expect(peak, 'the table was built in memory').to.be.above(120);
    expect(after, `resident after the drop (peak ${Math.round(peak)} MB)`).to.be.below(peak / 2);
  });

  it('is kept by default, which is what the setting is for', async () => {
    const { peak, after } = await fillAndDrop('control');
    expect(peak).to.be.above(120);
    expect(after, `resident after the drop (peak ${Math.round(peak)} MB)`).to.be.above(peak * 0.8);
  });
});

describe('the allocator setting of each explorer command', () => {
  it('returns freed memory at once in a sync, keeps it ten seconds in the ingest follower, leaves the rest to DuckDB', async () => {
    const { setAllocatorFor, PROMPT_RETURN_CONF, BETWEEN_BATCHES_CONF } = await import('../../src/duckdb/allocator.js');
    expect(BETWEEN_BATCHES_CONF).to.equal('dirty_decay_ms:10000,muzzy_decay_ms:10000');
    const set = (command: string | undefined) => { const env: NodeJS.ProcessEnv = {}; setAllocatorFor(command, env); return env.DUCKDB_JE_MALLOC_CONF; };
    expect(set('sync')).to.equal(PROMPT_RETURN_CONF);
    expect(set('ingest')).to.equal(BETWEEN_BATCHES_CONF);
    for (const command of ['serve', 'load', 'apply', 'notify', undefined]) expect(set(command), String(command)).to.equal(undefined);
  });

  it('leaves a setting the user made alone, an empty one (DuckDB\'s own) too', async () => {
    const { setAllocatorFor } = await import('../../src/duckdb/allocator.js');
    for (const command of ['sync', 'ingest']) {
      for (const mine of ['dirty_decay_ms:500', '']) {
        const env: NodeJS.ProcessEnv = { DUCKDB_JE_MALLOC_CONF: mine };
        setAllocatorFor(command, env);
        expect(env.DUCKDB_JE_MALLOC_CONF, `${command} with ${JSON.stringify(mine)}`).to.equal(mine);
      }
    }
  });
});
