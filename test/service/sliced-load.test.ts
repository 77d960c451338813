// A large source is built a range of organizations at a time: the grouped views (tf_versions, providers,
// modules) because DuckDB does not spill their lists of workspace names, and every view because a sort
// spills all it holds (resources at a hundred million rows). The ranges must change nothing: a source loaded
// in many ranges gives every view table the same rows, columns and stored order as one range.
import { type DuckDBValue } from '@duckdb/node-api';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VIEW_NAMES } from '../../src/catalog/catalog.js';
import { openInstance } from '../../src/duckdb/open-instance.js';
import { DATABASE_FILE, loadSnapshot } from '../../src/snapshots/write/load.js';
import { writeSample } from '../../src/sample/sample.js';
import { readCurrentId, snapshotPath } from '../../src/snapshots/snapshot-dir.js';

describe('a load sorted in ranges of organizations', function () {
  this.timeout(120_000);
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-sliced-'));
    await writeSample(join(dir, 'source'), { organizations: 8, workspaces: 800, seed: 5 });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('stores every view exactly as a load in one range does', async () => {
    const whole = join(dir, 'whole');
    const sliced = join(dir, 'sliced');
    await loadSnapshot(join(dir, 'source'), { dataDir: whole, memoryLimit: '1GB' });
    const progress: string[] = [];
    // 150 workspaces a range: the 8 organizations fall into several ranges, some sharing one, the largest (292)
    // alone in one.
    await loadSnapshot(join(dir, 'source'), { dataDir: sliced, memoryLimit: '1GB', sliceWorkspaces: 150, onProgress: (m) => progress.push(m) });
    for (const view of VIEW_NAMES) {
      const ranges = progress.filter((m) => new RegExp(`(^|· )writing ${view} \\(organizations 1 of \\d+\\)$`).test(m));
      expect(ranges, `the sliced load wrote ${view} in ranges`).to.have.length(1);
      expect(Number(/of (\d+)/.exec(ranges[0]!)![1])).to.be.above(3);
    }
    expect(progress.filter((m) => /(^|· )indexing resources by provider_type \(organizations 1 of \d+\)$/.test(m))).to.have.length(1);

    const db = await openInstance(':memory:', { threads: '1' });
    const c = await db.connect();
    try {
      await c.run(`ATTACH '${join(snapshotPath(whole, (await readCurrentId(whole))!), DATABASE_FILE)}' AS a (READ_ONLY)`);
      await c.run(`ATTACH '${join(snapshotPath(sliced, (await readCurrentId(sliced))!), DATABASE_FILE)}' AS b (READ_ONLY)`);
      const tables = async (db: string) => (await c.runAndReadAll(`SELECT table_name FROM duckdb_tables() WHERE database_name = '${db}' ORDER BY table_name`)).getRows().map(([t]) => t as string);
      // The view tables, their indexes (resources__by_provider_type) and the source state, nothing else.
      const sourceState = ['organizations', 'projects', 'workspaces', 'providers', 'modules', 'teams', 'team_members'].map((t) => `source_${t}`);
      expect(await tables('a')).to.deep.equal([...VIEW_NAMES, 'resources__by_provider_type', ...sourceState].sort());
      expect(await tables('b')).to.deep.equal(await tables('a'));
      for (const table of await tables('a')) {
        // Every column, in stored order (rowid): any difference in a value or in the order shows.
        const rows = async (db: string) => (await c.runAndReadAll(`SELECT * FROM ${db}."${table}" ORDER BY rowid`, [] as DuckDBValue[])).getRows();
        const [a, b] = [await rows('a'), await rows('b')];
        expect(a.length, table).to.be.above(0);
        expect(b, table).to.deep.equal(a);
      }
      // The index: every resource once, by organization then type, each pointing at its row of the view.
      const index = await c.runAndReadAll(`
        SELECT count(*), count(*) FILTER (WHERE i._id IS DISTINCT FROM r._id OR i.provider_type IS DISTINCT FROM r.provider_type OR i.source_updated_at IS DISTINCT FROM r.source_updated_at),
          (SELECT count(*) FROM b.resources),
          bool_and(i._org_key = r._org_key),
          (SELECT count(*) FROM (SELECT rowid AS position, row_number() OVER (ORDER BY _org_key, provider_type, _row) - 1 AS ranked FROM b.resources__by_provider_type) WHERE position <> ranked)
        FROM b.resources__by_provider_type i LEFT JOIN b.resources r ON r.rowid = i._row`);
      expect(index.getRows()[0]!.map(Number)).to.deep.equal([Number(index.getRows()[0]![2]), 0, Number(index.getRows()[0]![2]), 1, 0]);
    } finally {
      c.closeSync();
      db.closeSync();
    }
  });
});
