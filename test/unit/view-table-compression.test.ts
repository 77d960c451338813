// How a view table's columns are stored (build-steps.ts createViewTable): the serving columns as the load
// stores them, and a delta's list columns uncompressed, read back from a real DuckDB file's storage.
import { DuckDBInstance } from '@duckdb/node-api';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CSV_LINE_COLUMN, ROW_JSON_COLUMN } from '../../src/catalog/catalog.js';
import { createViewTable, STORAGE_VERSION } from '../../src/snapshots/write/build-steps.js';

describe('a view table\'s column storage', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'explorer-compression-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Each column's compression methods after a checkpoint of 20,000 rows that compress well. */
  const stored = async (listsUncompressed: boolean): Promise<Record<string, string>> => {
    const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
    const db = await instance.connect();
    try {
      await db.run(`ATTACH '${join(dir, `${listsUncompressed}.duckdb`)}' AS f (STORAGE_VERSION '${STORAGE_VERSION}')`);
      const select = `SELECT 'organization-' || (i % 7) AS _org, ['ws-' || (i % 5), 'ws-' || (i % 3)] AS members,
        '{"a":' || (i % 11) || '}' AS ${ROW_JSON_COLUMN}, 'line,' || (i % 13) AS ${CSV_LINE_COLUMN} FROM range(20000) r(i)`;
      await createViewTable(db, 'f.t', `${select} LIMIT 0`, listsUncompressed);
      await db.run(`INSERT INTO f.t ${select}`);
      await db.run('CHECKPOINT f');
      const rows = (await db.runAndReadAll(`SELECT column_name, string_agg(DISTINCT compression, ',' ORDER BY compression)
        FROM pragma_storage_info('f.t') WHERE segment_type NOT IN ('VALIDITY') GROUP BY 1`)).getRows();
      return Object.fromEntries(rows.map(([c, m]) => [c as string, m as string]));
    } finally {
      db.closeSync();
      instance.closeSync();
    }
  };

  it('stores the row JSON uncompressed and the CSV lines with zstd, and a list as DuckDB chooses unless told', async () => {
    const chosen = await stored(false);
    expect(chosen[ROW_JSON_COLUMN]).to.equal('Uncompressed');
    expect(chosen[CSV_LINE_COLUMN]).to.equal('ZSTD');
    expect(chosen.members).to.not.equal('Uncompressed');
    expect(chosen._org).to.not.equal('Uncompressed');
  });

  it('stores a delta\'s lists uncompressed, its other columns as before', async () => {
    const delta = await stored(true);
    expect(delta.members).to.equal('Uncompressed');
    expect(delta[ROW_JSON_COLUMN]).to.equal('Uncompressed');
    expect(delta[CSV_LINE_COLUMN]).to.equal('ZSTD');
    expect(delta._org).to.not.equal('Uncompressed');
  });
});
