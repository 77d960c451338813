// The compiler has two plans for a page (read a small organization's rows whole, or let DuckDB fetch the
// page's rows by row id) over two layouts (a column per field, or each row's values as one JSON array).
// Every combination must give exactly the same JSON for every query; this runs them all on a real snapshot
// (a generated sample with organizations of many sizes, quoting, non-ASCII and nulls) and compares.
import { type DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileQuery, SMALL_ORGANIZATION_ROWS, WINDOW_COUNT_ROWS } from '../../src/query/compile.js';
import { parseQueryParameters } from '../../src/query/parse-query.js';
import { decodeQueryString } from '../../src/query/query-string.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { writeSample } from '../../src/sample/sample.js';
import { readCurrentId, snapshotPath, type Manifest } from '../../src/snapshots/snapshot-dir.js';
import { indexTable, positionIndex } from '../../src/catalog/catalog.js';
import { openServingInstance } from '../../src/duckdb/open-instance.js';
import { pageJson, pageRows } from '../../workers/page-json.js';

const QUERIES = [
  'type=workspaces',
  'type=workspaces&page%5Bnumber%5D=3&page%5Bsize%5D=7',
  'type=workspaces&sort=-workspace_updated_at&filter%5B0%5D%5Bworkspace_name%5D%5Bcontains%5D%5B0%5D=a',
  'type=workspaces&sort=-providers,workspace_name&fields%5Bworkspaces%5D=workspace_name,providers',
  'type=workspaces&sort=workspace_terraform_version&filter%5B0%5D%5Bdrifted%5D%5Bis%5D%5B0%5D=true',
  'type=workspaces&sort=-resources_drifted&page%5Bsize%5D=100&page%5Bnumber%5D=2',
  'type=providers',
  'type=providers&sort=-workspace_count&page%5Bsize%5D=5&page%5Bnumber%5D=2',
  'type=modules&sort=name,-version',
  'type=tf_versions&sort=-version',
  'type=workspaces&fields=tags,current_run_applied_at,checks_failed,drifted,workspace_terraform_version,modules&filter%5B0%5D%5Btags%5D%5Bis_not_empty%5D%5B0%5D=',
  'type=workspaces&page%5Bsize%5D=100&sort=-current_run_applied_at',
  'type=modules&page%5Bsize%5D=100&filter%5B0%5D%5Bversion%5D%5Bis_empty%5D%5B0%5D=',
  'type=resources',
  'type=resources&page%5Bnumber%5D=4&page%5Bsize%5D=50',
  'type=resources&sort=-source_updated_at&filter%5B0%5D%5Bprovider_type%5D%5Bis%5D%5B0%5D=aws_instance',
  'type=resources&sort=terraform_version,address&fields=address,terraform_version,billable_rum&filter%5B0%5D%5Bbillable_rum%5D%5Bis%5D%5B0%5D=false',
  'type=resources&sort=-module_name&filter%5B0%5D%5Bsource_type%5D%5Bis%5D%5B0%5D=local',
  // The index on provider_type: ranked from it (datetime, boolean sorts), counted from it (a string sort),
  // several values, a second filter it holds, one it does not hold, a page past the first.
  'type=resources&sort=billable_rum,-source_updated_at&filter%5B0%5D%5Bprovider_type%5D%5Bis%5D%5B0%5D=aws_iam_role&filter%5B0%5D%5Bprovider_type%5D%5Bis%5D%5B1%5D=random_id&page%5Bnumber%5D=2&page%5Bsize%5D=7',
  'type=resources&sort=address&filter%5B0%5D%5Bprovider_type%5D%5Bis%5D%5B0%5D=aws_subnet&filter%5B1%5D%5Bbillable_rum%5D%5Bis%5D%5B0%5D=true',
  'type=resources&sort=-source_updated_at&filter%5B0%5D%5Bprovider_type%5D%5Bis%5D%5B0%5D=aws_iam_role&filter%5B1%5D%5Bworkspace_name%5D%5Bcontains%5D%5B0%5D=a',
  'type=resources&filter%5B0%5D%5Bprovider_type%5D%5Bis%5D%5B0%5D=terraform_data&filter%5B1%5D%5Bprovider_type%5D%5Bcontains%5D%5B0%5D=DATA',
  'type=workspaces&sort=-current_rum_count&fields=workspace_name,resource_count,current_rum_count,source_module_id',
  'type=providers&filter%5B0%5D%5Bcurated%5D%5Bis%5D%5B0%5D=true',
];

describe('the two page plans', function () {
  this.timeout(120_000);
  let dir: string;
  let db: DuckDBInstance;
  let c: DuckDBConnection;
  let organizations: string[];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-plans-'));
    // Large enough for the largest organization's resources (13,379) to be indexed by position.
    const sample = await writeSample(join(dir, 'source'), { organizations: 30, workspaces: 7000, seed: 11 });
    await loadSnapshot(join(dir, 'source'), { dataDir: dir, memoryLimit: '1GB' });
    // A spread of sizes: the largest, a few mid-sized, the smallest.
    const sizes = sample.organizations;
    organizations = [sizes[0]!, sizes[3]!, sizes[10]!, sizes[sizes.length - 1]!].map((o) => o.name);
    db = await openServingInstance({ threads: '1' }); // planned as the workers plan
    c = await db.connect();
    await c.run(`ATTACH '${join(snapshotPath(dir, (await readCurrentId(dir))!), 'snapshot.duckdb')}' AS snapshot (READ_ONLY)`);
  });
  after(() => {
    c?.closeSync();
    db?.closeSync();
    rmSync(dir, { recursive: true, force: true });
  });

  it('choose by the organization size', () => {
    const { query } = parseQueryParameters('terraform', decodeQueryString('type=workspaces'));
    const sql = (organizationRows?: number) => compileQuery(query, { relation: 'r', organization: 'o', organizationRows }).page.sql;
    expect(sql(SMALL_ORGANIZATION_ROWS)).to.match(/^WITH org_rows AS MATERIALIZED/);
    expect(sql(SMALL_ORGANIZATION_ROWS + 1)).to.not.match(/org_rows/);
    expect(sql(undefined)).to.not.match(/org_rows/);
  });

  it('order a page in the default order by storage only where the rows are stored in that order', () => {
    const sql = (qs: string, defaultOrderStored: boolean, organizationRows?: number) => {
      const { query } = parseQueryParameters('terraform', decodeQueryString(qs));
      return compileQuery(query, { relation: 'r', organization: 'o', organizationRows, defaultOrderStored }).page.sql;
    };
    // Fetched in stored order: a plain scan, no sort at all.
    expect(sql('type=resources', true)).to.not.include('ORDER BY');
    expect(sql('type=resources&sort=workspace_name,address', true)).to.not.include('ORDER BY'); // the default, spelled out
    // At any size: a small organization's page in stored order is a plain scan too.
    expect(sql('type=resources&filter%5B0%5D%5Bname%5D%5Bis%5D%5B0%5D=x', true, 10)).to.not.include('ORDER BY').and.not.include('org_rows');
    expect(sql('type=resources&filter%5B0%5D%5Bname%5D%5Bis%5D%5B0%5D=x', false, 10)).to.include('org_rows');
    // A small organization's filtered page counts in its own scan; a larger one's count is a statement apart.
    expect(sql('type=resources&filter%5B0%5D%5Bname%5D%5Bis%5D%5B0%5D=x', true, WINDOW_COUNT_ROWS)).to.include('count(*) OVER ()').and.not.include('SELECT count(*)');
    expect(sql('type=resources&filter%5B0%5D%5Bname%5D%5Bis%5D%5B0%5D=x', true, WINDOW_COUNT_ROWS + 1)).to.not.include('count(*)');
    expect(sql('type=resources', false)).to.not.include('rowid');
    expect(sql('type=resources', false)).to.include('ORDER BY');
    expect(sql('type=resources&sort=-workspace_name,address', true)).to.not.include('rowid');
    expect(sql('type=resources&sort=workspace_name', true)).to.not.include('rowid'); // a prefix of the default is another order
  });

  it('count in the page only where the organization is read whole and the total is not already known', () => {
    const plan = (qs: string, organizationRows?: number) => {
      const { query } = parseQueryParameters('terraform', decodeQueryString(qs));
      const { pageCountsTotal, knownTotal } = compileQuery(query, { relation: 'r', organization: 'o', organizationRows });
      return { pageCountsTotal, knownTotal };
    };
    const filtered = 'type=workspaces&filter%5B0%5D%5Bdrifted%5D%5Bis%5D%5B0%5D=true';
    expect(plan('type=workspaces', 120)).to.deep.equal({ pageCountsTotal: false, knownTotal: 120 });
    expect(plan(filtered, 120)).to.deep.equal({ pageCountsTotal: true, knownTotal: undefined });
    expect(plan(filtered, SMALL_ORGANIZATION_ROWS + 1)).to.deep.equal({ pageCountsTotal: false, knownTotal: undefined });
    expect(plan('type=workspaces', undefined)).to.deep.equal({ pageCountsTotal: false, knownTotal: undefined });
    // Where rows are found by row id or read in stored order, the page counts at any size.
    const { query } = parseQueryParameters('terraform', decodeQueryString(filtered));
    expect(compileQuery(query, { relation: 'r', organization: 'o', organizationRows: 50_000, rowid: 'rowid' }).pageCountsTotal).to.equal(true);
    expect(compileQuery(query, { relation: 'r', organization: 'o', organizationRows: 50_000, rowid: 'rowid' }).page.sql).to.match(/^WITH matching AS MATERIALIZED/);
    expect(compileQuery(query, { relation: 'r', organization: 'o', organizationRows: 50_000, defaultOrderStored: true }).pageCountsTotal).to.equal(false); // a scan in stored order: counted apart
    expect(compileQuery(query, { relation: 'r', organization: 'o', organizationRows: 50_000 }).pageCountsTotal).to.equal(false); // no row ids: DuckDB's plan, counted apart
    expect(compileQuery(parseQueryParameters('terraform', decodeQueryString('type=workspaces&sort=-drifted')).query, { relation: 'r', organization: 'o', organizationRows: 50_000, rowid: 'rowid' }).knownTotal).to.equal(50_000);
  });

  for (const qs of QUERIES) {
    it(`return the same rows: ${decodeURIComponent(qs)}`, async () => {
      const { query } = parseQueryParameters('terraform', decodeQueryString(qs));
      let nonEmpty = 0;
      for (const [o, organization] of organizations.entries()) {
        const read = async (sql: string, params: unknown[]) => (await c.runAndReadAll(sql, params as DuckDBValue[])).getRows();
        /** The page's JSON:API data as the worker builds it, from either layout and either plan. */
        /**
         * `keyed`: by the organization's key, fetching by rowid as a snapshot without positions does; `query`:
         * over a query of the table, as a compacted snapshot's; `position`: by the indexed position, as the service does.
         */
        const run = async (organizationRows: number | undefined, rowJson: boolean, defaultOrderStored = false, keyed: false | 'table' | 'query' | 'position' = false, indexed = false) => {
          const organizationKey = keyed ? organizationKeys()[organization] : undefined;
          if (keyed) expect(organizationKey, organization).to.be.a('number');
          const table = `snapshot."${query.view.name}"`;
          const relation = keyed === 'query' ? `(SELECT rowid AS "_rowid", * FROM ${table})` : table;
          const rowid = keyed === 'query' ? '"_rowid"' : keyed === 'table' ? 'rowid' : keyed === 'position' ? '"_pos"' : undefined;
          const indexes = indexed ? (manifest().indexes?.[query.view.name] ?? []).map((column) => ({ column, relation: `snapshot.${indexTable(query.view.name, column)}` })) : undefined;
          const compiled = compileQuery(query, { relation, organization, organizationKey, organizationRows, rowJson, defaultOrderStored, rowid, rowidIndexed: keyed === 'position', indexes });
          if (indexed) indexPlans.add(compiled.page.sql.includes('"_row" AS "_rowid"') ? 'ranked' : compiled.count.sql.includes('__by_') ? 'counted' : 'unused');
          expect(compiled.page.sql.includes('"_org_key"')).to.equal(keyed !== false);
          // The fetch written out: the page's row ids first, then only their rows.
          if (rowid && organizationRows !== 1 && !defaultOrderStored) expect(compiled.page.sql).to.include(`${rowid} IN (SELECT `);
          expect(compiled.valueIndexes !== undefined).to.equal(rowJson);
          // Read as the worker reads a page: the row JSON as bytes.
          let rows = await pageRows(await c.run(compiled.page.sql, compiled.page.params as DuckDBValue[]), rowJson);
          // Every plan's count statement (from an index too) gives the total; a page that carries it must agree.
          const total = (await read(compiled.count.sql, compiled.count.params))[0]![0];
          if (compiled.pageCountsTotal) {
            for (const row of rows) expect(row[row.length - 1], 'the total a page carries').to.equal(total);
            rows = rows.map((row) => row.slice(0, -1));
          }
          return { rows: rows.length, total, json: pageJson(rows, { rowType: query.view.rowType, attributes: query.fields.map((f) => f.attribute), valueIndexes: compiled.valueIndexes }).toString() };
        };
        const columns = await run(undefined, false);
        // The stored-order variants sort a default-ordered page by rowid; the others by the sort keys.
        // A size above the line with no filter is a known total (the fetch without counting); unknown, it counts.
        const large = SMALL_ORGANIZATION_ROWS + 1;
        // Each combination of plans runs for every other organization, in turn: every query meets every
        // combination twice, the largest organization half of them (the whole product would take a minute and a half).
        let combination = 0;
        for (const [organizationRows, rowJson, stored] of [[1, false, false], [1, true, false], [undefined, true, false], [large, true, false], [large, false, false], [1, true, true], [undefined, true, true], [1, false, true], [large, true, true]] as const) {
          for (const [keyed, indexed] of [[false, false], ['table', false], ['query', false], ['table', true], ['position', false], ['position', true]] as const) {
            if ((combination++ + o) % 2 !== 0) continue;
            expect(await run(organizationRows, rowJson, stored, keyed, indexed), `${organization}, ${organizationRows === 1 ? 'whole' : 'fetched'}, ${rowJson ? 'row JSON' : 'columns'}${stored ? ', by rowid' : ''}${keyed ? `, by key over a ${keyed}` : ''}${indexed ? ', with the indexes' : ''}`).to.deep.equal(columns);
          }
        }
        if (columns.rows > 0) nonEmpty++;
      }
      expect(nonEmpty).to.be.above(0);
    });
  }

  // Cursor pages (docs/data-out.md) in every plan: from the start and from a row deep in the organization, a
  // walk by the keys of each page's last row gives the rows of one page holding them all, in every plan.
  const WALKS = [
    'type=workspaces',
    'type=workspaces&sort=-workspace_updated_at&filter%5B0%5D%5Bworkspace_name%5D%5Bcontains%5D%5B0%5D=a',
    'type=workspaces&sort=workspace_terraform_version,-drifted',
    'type=resources',
    'type=resources&sort=-source_updated_at&filter%5B0%5D%5Bprovider_type%5D%5Bis%5D%5B0%5D=aws_instance',
    'type=resources&sort=billable_rum,-source_updated_at&filter%5B0%5D%5Bprovider_type%5D%5Bis%5D%5B0%5D=aws_iam_role',
    'type=resources&sort=terraform_version,-module_name',
    'type=providers&sort=-workspace_count,version',
  ];
  for (const qs of WALKS) {
    it(`walk by cursor to the same rows in every plan: ${decodeURIComponent(qs)}`, async () => {
      const { query } = parseQueryParameters('terraform', decodeQueryString(qs));
      const keyCount = query.sort.length + 1;
      let walked = 0;
      for (const organization of organizations.slice(0, 2)) {
        const table = `snapshot."${query.view.name}"`;
        const organizationKey = organizationKeys()[organization];
        const indexes = (manifest().indexes?.[query.view.name] ?? []).map((column) => ({ column, relation: `snapshot.${indexTable(query.view.name, column)}` }));
        const read = async (sql: string, params: unknown[]) => (await c.runAndReadAll(sql, params as DuckDBValue[])).getRows();
        /** One cursor page: its rows' ids and the cursor of each. */
        const page = async (target: Parameters<typeof compileQuery>[1], size: number, after: (string | null)[]) => {
          const compiled = compileQuery({ ...query, page: { number: 1, size, after } }, target);
          const positioned = target.layout !== undefined && qs.match(/^type=\w+$/) !== null;
          expect(compiled.cursorKeys !== undefined, 'sought by position in stored order').to.equal(positioned);
          // A cursor of this layout is sought by its position; one of another layout by its sort term values.
          if (positioned) expect(compiled.page.sql.includes('rowid > CAST(? AS BIGINT)')).to.equal(after.at(-1) === target.layout);
          let rows = await pageRows(await c.run(compiled.page.sql, compiled.page.params as DuckDBValue[]), target.rowJson === true);
          if (compiled.pageCountsTotal) rows = rows.map((r) => r.slice(0, -1));
          const at = 1 + (target.rowJson ? 1 : query.fields.length);
          const keys = rows.map((r) => r.slice(at) as (string | null)[]);
          // The next cursor as the worker makes it; sought by position: the last row's term values read by its
          // position, then the position and its layout.
          const { cursorKeys } = compiled;
          const last = keys[size - 1];
          const next = !last || !cursorKeys ? last
            : [...(await read(cursorKeys.statement.sql, [...cursorKeys.statement.params, last[0]!]))[0]! as (string | null)[], last[0]!, cursorKeys.layout];
          return { ids: rows.map((r) => r[0] as string), keys, next };
        };
        const whole = await page({ relation: table, organization }, 1_000_000, []);
        if (whole.ids.length === 0) continue;
        expect(whole.keys[0]!.length, 'one value per sort term').to.be.at.least(keyCount);
        const targets = {
          whole: { relation: table, organization, organizationKey, organizationRows: 1, rowJson: true },
          fetched: { relation: table, organization, organizationKey, organizationRows: SMALL_ORGANIZATION_ROWS + 1, rowJson: true, rowid: '"_pos"', rowidIndexed: true, indexes },
          counted: { relation: table, organization, organizationKey, organizationRows: SMALL_ORGANIZATION_ROWS + 1, rowid: 'rowid', indexes },
          stored: { relation: table, organization, organizationKey, organizationRows: SMALL_ORGANIZATION_ROWS + 1, rowJson: true, defaultOrderStored: true },
          // In stored order, each next page is sought by its row's position, which its cursor carries.
          positioned: { relation: table, organization, organizationKey, organizationRows: SMALL_ORGANIZATION_ROWS + 1, rowJson: true, defaultOrderStored: true, rowid: '"_pos"', rowidIndexed: true, layout: 'one' },
          unplanned: { relation: table, organization },
        };
        const deep = Math.floor(whole.ids.length / 2);
        for (const [plan, target] of Object.entries(targets)) {
          for (const start of [0, deep]) {
            const ids: string[] = [];
            let after = start === 0 ? [] : whole.keys[start - 1]!;
            for (let p = 0; p < 3; p++) {
              const got = await page(target, 7, after);
              // One row more than the page when another follows: the next cursor leads somewhere.
              expect(got.ids.length, `${organization} ${plan}`).to.be.at.most(8);
              ids.push(...got.ids.slice(0, 7));
              if (got.ids.length <= 7) break;
              after = got.next!;
            }
            expect(ids, `${organization}, ${plan}, from row ${start}`).to.deep.equal(whole.ids.slice(start, start + ids.length));
            expect(ids.length).to.equal(Math.min(21, whole.ids.length - start));
            walked++;
          }
        }
        if (deep > 0 && qs.match(/^type=\w+$/)) {
          // A cursor sought by position, in its layout and in another (the snapshot compacted since), where
          // its sort term values find the same rows.
          const [[position]] = await read(`SELECT CAST("_pos" AS VARCHAR) FROM ${table} WHERE "_id" = ?`, [whole.ids[deep - 1]]);
          for (const layout of ['one', 'two']) {
            const again = await page({ ...targets.positioned, layout: 'one' }, 3, [...whole.keys[deep - 1]!, position as string, layout]);
            expect(again.ids.slice(0, 3), `${organization}, a cursor of layout ${layout}`).to.deep.equal(whole.ids.slice(deep, deep + 3));
          }
        }
      }
      expect(walked).to.be.above(0);
    });
  }

  const manifest = () => JSON.parse(readFileSync(join(snapshotPath(dir, currentSnapshot), 'manifest.json'), 'utf8')) as Manifest;
  const organizationKeys = () => manifest().organizationKeys!;
  /** Which ways the queries above used the indexes: each must have been taken by one of them at least. */
  const indexPlans = new Set<string>();
  it('used the index to rank a page, to count one, and not at all', () => {
    expect([...indexPlans].sort()).to.deep.equal(['counted', 'ranked', 'unused']);
  });
  let currentSnapshot: string;
  before(async () => { currentSnapshot = (await readCurrentId(dir))!; });

  it('number organizations in name order, and find no rows for one the snapshot does not hold', async () => {
    const keys = organizationKeys();
    // As names sort (interface §4): ASCII-folded, then exactly; so a mixed-case name sorts among its letter's.
    const fold = (s: string) => s.replace(/[A-Z]/g, (ch) => ch.toLowerCase());
    const names = Object.keys(keys).sort((a, b) => (fold(a) < fold(b) ? -1 : fold(a) > fold(b) ? 1 : a < b ? -1 : a > b ? 1 : 0));
    expect(names.some((n) => n !== fold(n)), 'a mixed-case name among them').to.equal(true);
    expect(names.map((n) => keys[n])).to.deep.equal(names.map((_, i) => i + 1));
    // Every row carries its organization's key, and rows are stored in key order.
    const rows = await c.runAndReadAll('SELECT _org, _org_key FROM snapshot.workspaces ORDER BY rowid');
    let last = 0;
    for (const [org, key] of rows.getRows()) {
      expect(key, org as string).to.equal(keys[org as string]);
      expect(key as number).to.be.at.least(last);
      last = key as number;
    }
    const { query } = parseQueryParameters('terraform', decodeQueryString('type=workspaces'));
    const compiled = compileQuery(query, { relation: 'snapshot."workspaces"', organization: 'no-such-org', organizationKey: 0 });
    expect((await c.runAndReadAll(compiled.page.sql, compiled.page.params as DuckDBValue[])).getRows()).to.deep.equal([]);
  });

  it('store each row\'s position, indexed, and fetch a page\'s rows by looking them up at every page size', async () => {
    // Indexed where some organization is large enough for its pages to fetch by position, and only there.
    const large = Object.keys(manifest().rows).filter((view) => Object.values(manifest().organizationRows![view]!).some((n) => n > SMALL_ORGANIZATION_ROWS));
    expect(large).to.deep.equal(['resources']);
    expect(manifest().positions).to.deep.equal(large);
    for (const view of Object.keys(manifest().rows)) {
      const [[misplaced, rows]] = (await c.runAndReadAll(`SELECT count(*) FILTER (WHERE _pos <> rowid), count(*) FROM snapshot."${view}"`)).getRows();
      expect(misplaced, view).to.equal(0n);
      expect(Number(rows), view).to.equal(manifest().rows[view]);
    }
    const indexed = (await c.runAndReadAll(`SELECT table_name, index_name FROM duckdb_indexes() WHERE database_name = 'snapshot'`)).getRows();
    // The views' position indexes, and the source state's workspace ids (a batch's validation looks them up).
    expect(indexed.sort()).to.deep.equal([...large.map((view) => [view, positionIndex(view)]), ['source_workspaces', 'source_workspaces_id']].sort());
    // A page of one row and the largest page, ranked from the index and not: each fetch is an index lookup
    // of its rows (DuckDB's default passes a join's values to the scan only up to 50; the serving setting, 100).
    const organization = organizations[0]!;
    for (const qs of ['type=resources&sort=-source_updated_at&filter%5B0%5D%5Bprovider_type%5D%5Bis%5D%5B0%5D=aws_iam_role', 'type=resources&sort=-name']) {
      for (const size of [1, 20, 100]) {
        const { query } = parseQueryParameters('terraform', decodeQueryString(`${qs}&page%5Bsize%5D=${size}`));
        const view = query.view.name;
        const indexes = (manifest().indexes?.[view] ?? []).map((column) => ({ column, relation: `snapshot.${indexTable(view, column)}` }));
        const compiled = compileQuery(query, {
          relation: `snapshot."${view}"`, organization, organizationKey: organizationKeys()[organization], organizationRows: SMALL_ORGANIZATION_ROWS + 1, rowJson: true, rowid: '"_pos"', rowidIndexed: true, indexes,
        });
        const plan = (await c.runAndReadAll(`EXPLAIN ANALYZE ${compiled.page.sql}`, compiled.page.params as DuckDBValue[])).getRows().map((r) => String(r[1])).join('\n');
        expect(plan, `${qs}, ${size} rows`).to.include('Index Scan');
        const rows = (await c.runAndReadAll(compiled.page.sql, compiled.page.params as DuckDBValue[])).getRows();
        expect(rows.length, `${qs}, ${size} rows`).to.be.above(size === 1 ? 0 : 1).and.at.most(size);
      }
    }
  });

  describe('exports: stored lines in stored order give the bytes of formatted values sorted', () => {
    const EXPORTS = [
      'type=workspaces',
      'type=workspaces&filter%5B0%5D%5Bdrifted%5D%5Bis%5D%5B0%5D=true',
      'type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bcontains%5D%5B0%5D=a&filter%5B1%5D%5Btags%5D%5Bis_not_empty%5D%5B0%5D=',
      'type=providers',
      'type=modules&filter%5B0%5D%5Bversion%5D%5Bis_empty%5D%5B0%5D=',
      'type=tf_versions',
      'type=resources',
      'type=resources&filter%5B0%5D%5Bprovider_name%5D%5Bcontains%5D%5B0%5D=HASHICORP%2Faws',
    ];
    const csvLines = (view: string) => JSON.parse(readFileSync(join(snapshotPath(dir, currentId), 'manifest.json'), 'utf8')).csvLines[view] as number[];
    let currentId: string;
    before(async () => { currentId = (await readCurrentId(dir))!; });

    const copy = async (sql: string, params: unknown[], lines: boolean) => {
      const file = join(dir, `export-${lines ? 'lines' : 'values'}.csv`);
      const format = lines ? `QUOTE '', ESCAPE ''` : 'FORCE_QUOTE *';
      await c.run(`COPY (${sql}) TO '${file}' (FORMAT csv, HEADER false, ${format})`, params as DuckDBValue[]);
      return readFileSync(file, 'utf8');
    };

    for (const qs of EXPORTS) {
      it(decodeURIComponent(qs), async () => {
        const { query } = parseQueryParameters('terraform', decodeQueryString(qs));
        let nonEmpty = 0;
        for (const organization of organizations) {
          const target = { relation: `snapshot."${query.view.name}"`, organization };
          const values = compileQuery(query, target);
          const lines = compileQuery(query, { ...target, organizationKey: organizationKeys()[organization], csvLines: csvLines(query.view.name) });
          expect(values.exportLines).to.equal(false);
          expect(lines.exportLines).to.equal(true);
          const expected = await copy(values.export.sql, values.export.params, false);
          expect(await copy(lines.export.sql, lines.export.params, true), organization).to.equal(expected);
          if (expected.length > 0) nonEmpty++;
        }
        expect(nonEmpty).to.be.above(0);
      });
    }

    for (const qs of [...EXPORTS, 'type=workspaces&fields=tags,workspace_updated_at,drifted', 'type=resources&fields=address,source_updated_at']) {
      it(`in stored order without sorting, as sorted, in every format: ${decodeURIComponent(qs)}`, async () => {
        const { query } = parseQueryParameters('terraform', decodeQueryString(qs));
        for (const organization of organizations) {
          const sorted = { relation: `snapshot."${query.view.name}"`, organization };
          const stored = { ...sorted, organizationKey: organizationKeys()[organization], defaultOrderStored: true };
          for (const format of ['csv', 'ndjson'] as const) {
            const scan = compileQuery(query, stored, format).export;
            const sort = compileQuery(query, sorted, format).export;
            expect(scan.sql, format).to.not.include('ORDER BY');
            expect(sort.sql, format).to.include('ORDER BY');
            expect(await copy(scan.sql, scan.params, format === 'ndjson'), `${organization} ${format}`).to.equal(await copy(sort.sql, sort.params, format === 'ndjson'));
          }
        }
      });
    }

    it('are used only for every field in stored order and the default sort', () => {
      const uses = (qs: string) => {
        const { query } = parseQueryParameters('terraform', decodeQueryString(qs));
        return compileQuery(query, { relation: 'r', organization: 'o', csvLines: csvLines(query.view.name) }).exportLines;
      };
      expect(uses('type=workspaces&sort=workspace_name')).to.equal(true);
      expect(uses('type=workspaces&sort=-workspace_name')).to.equal(false);
      expect(uses('type=workspaces&fields=workspace_name')).to.equal(false);
      expect(uses('type=providers&sort=name')).to.equal(false);
      expect(uses('type=providers&sort=name,-version')).to.equal(true);
    });
  });
});
