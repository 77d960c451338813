// The pure parts of exports and cursor pages (docs/data-out.md), without a database: cursor text, what a
// cursor value may be, the keyset test, the cursor page's SQL and the typed exports' SQL. Their results on
// real data are tested over HTTP (test/http/export-formats.test.ts, cursor-pages.test.ts) and in every page
// plan (test/service/page-plans.test.ts).
import { expect } from 'chai';
import { compileChanges } from '../../src/query/compile-history.js';
import { compileSummary } from '../../src/query/compile-summary.js';
import { compileQuery, keysetAfter, queryTerms, type SqlValue } from '../../src/query/compile.js';
import { CursorError, cursorRows, cursorScope, decodeCursor, encodeCursor, nextCursor, readableAs } from '../../src/query/cursor.js';
import { parseQueryParameters } from '../../src/query/parse-query.js';
import { decodeQueryString } from '../../src/query/query-string.js';
import { parseSummary } from '../../src/query/summary.js';
import type { Query } from '../../src/query/query.js';

const query = (raw: string): Query => parseQueryParameters('terraform', decodeQueryString(raw)).query;
const literals = (sql: string) => sql.match(/'(?:[^']|'')*'/g) ?? [];
const EVIL = "O'Reilly'); DROP TABLE x; --";

describe('cursors', () => {
  it('round-trip through opaque base64url text', () => {
    const cursor = { scope: cursorScope(['acme', 'explorer', 'rows']), snapshots: ['s1'], after: ['a', null, 'ws-1'] };
    const text = encodeCursor(cursor);
    expect(text).to.match(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(text)).to.deep.equal(cursor);
  });

  it('refuse text that is not a cursor with a CursorError, never another error', () => {
    const good = encodeCursor({ scope: 'x', snapshots: ['s'], after: ['1'] });
    const bad = [
      '', '!!', good.slice(0, -3), `${good}==`, Buffer.from('{"a":1}').toString('base64url'), Buffer.from('[2,"x",["s"],["1"]]').toString('base64url'),
      Buffer.from('[1,"x",[],["1"]]').toString('base64url'), Buffer.from('[1,"x",["s"],[]]').toString('base64url'),
      Buffer.from('[1,"x",["s"],[1]]').toString('base64url'), Buffer.from('[1,7,["s"],["1"]]').toString('base64url'), Buffer.from('null').toString('base64url'),
    ];
    for (const text of bad) expect(() => decodeCursor(text), text).to.throw(CursorError);
  });

  it('are read where page[number] is, never both', () => {
    expect(query('type=workspaces&page[after]=').page.cursor).to.equal('');
    expect(query('type=workspaces&page[after]=abc&page[size]=5').page).to.include({ cursor: 'abc', size: 5 });
    expect(query('type=workspaces&page[number]=2').page.cursor).to.equal(undefined);
    expect(() => query('type=workspaces&page[after]=&page[number]=1')).to.throw().with.property('status', 400);
  });

  it('are made in one place: the page\'s rows past its size say whether more follow, its last row names the next', () => {
    expect(cursorRows([[1], [2], [3]], 2)).to.deep.equal({ rows: [[1], [2]], more: true });
    expect(cursorRows([[1], [2]], 2)).to.deep.equal({ rows: [[1], [2]], more: false });
    const walk = { scope: 's', snapshots: ['a'] };
    expect(decodeCursor(nextCursor(walk, ['json', 'x', null, 'ignored'], 1, 2))).to.deep.equal({ ...walk, after: ['x', null] });
    expect(decodeCursor(nextCursor(walk, ['json', 'x', 'y'], 1))).to.deep.equal({ ...walk, after: ['x', 'y'] });
    expect(decodeCursor(nextCursor(walk, ['t1'], 0, undefined, ['42', 'layout']))).to.deep.equal({ ...walk, after: ['t1', '42', 'layout'] });
  });

  it('scope by every part given, in order', () => {
    expect(cursorScope(['a', 'b'])).to.equal(cursorScope(['a', 'b']));
    expect(cursorScope(['a', 'b'])).to.not.equal(cursorScope(['b', 'a']));
    expect(cursorScope(['acme', 1])).to.not.equal(cursorScope(['globex', 1]));
  });

  it('accept only values DuckDB reads back as their term\'s type', () => {
    const yes: [Parameters<typeof readableAs>[0], string][] = [
      ['VARCHAR', ''], ['VARCHAR', EVIL], ['BOOLEAN', 'true'], ['BOOLEAN', 'false'], ['INTEGER', '-2147483648'], ['INTEGER', '2'],
      ['BIGINT', '9223372036854775807'], ['HUGEINT', '-170141183460469231731687303715884105728'],
      ['TIMESTAMP', '2024-02-29 23:59:59.999999'], ['TIMESTAMP', '0042-01-01 00:00:00'],
    ];
    const no: [Parameters<typeof readableAs>[0], string][] = [
      ['BOOLEAN', 'TRUE'], ['BOOLEAN', '1'], ['INTEGER', '2147483648'], ['INTEGER', '1.5'], ['BIGINT', '9223372036854775808'], ['BIGINT', ''],
      ['BIGINT', ' 1'], ['HUGEINT', '1e3'], ['TIMESTAMP', '2023-02-29 00:00:00'], ['TIMESTAMP', '2024-13-01 00:00:00'],
      ['TIMESTAMP', '2024-01-01T00:00:00'], ['TIMESTAMP', '2024-01-01 24:00:00'], ['TIMESTAMP', '2024-01-01 00:00:00.1234567'],
    ];
    for (const [type, text] of yes) expect(readableAs(type, text), `${type} ${text}`).to.equal(true);
    for (const [type, text] of no) expect(readableAs(type, text), `${type} ${text}`).to.equal(false);
  });
});

describe('the keyset test', () => {
  const terms = queryTerms(query('type=workspaces&sort=-resource_count,workspace_name'));

  it('orders by every term, nulls last both ways, and binds each value with its type', () => {
    expect(terms.map((t) => [t.expr, t.descending, t.type])).to.deep.equal([
      ['"resource_count"', true, 'BIGINT'],
      ['coalesce("workspace_name__f", "workspace_name")', false, 'VARCHAR'],
      ['"workspace_name"', false, 'VARCHAR'],
      ['"_id"', false, 'VARCHAR'],
    ]);
    const params: SqlValue[] = [];
    const sql = keysetAfter(terms, ['5', 'a', 'A', 'ws-1'], params);
    expect(sql).to.include('("resource_count" < CAST(? AS BIGINT) OR "resource_count" IS NULL)');
    expect(sql).to.include('"resource_count" = CAST(? AS BIGINT) AND coalesce("workspace_name__f", "workspace_name") = CAST(? AS VARCHAR) AND "workspace_name" = CAST(? AS VARCHAR) AND ("_id" > CAST(? AS VARCHAR) OR "_id" IS NULL)');
    expect(params).to.deep.equal(['5', '5', 'a', '5', 'a', 'A', '5', 'a', 'A', 'ws-1']);
  });

  it('finds nothing after a null on its own term, and matches nulls as equal before it', () => {
    const params: SqlValue[] = [];
    const sql = keysetAfter(terms, [null, null, null, 'ws-1'], params);
    // Only the id can still order rows whose earlier terms are all null.
    expect(sql).to.equal('(("resource_count" IS NULL AND coalesce("workspace_name__f", "workspace_name") IS NULL AND "workspace_name" IS NULL AND ("_id" > CAST(? AS VARCHAR) OR "_id" IS NULL)))');
    expect(params).to.deep.equal(['ws-1']);
    expect(keysetAfter(terms.slice(0, 1), [null], [])).to.equal('false');
  });

  it('never writes a cursor value into the SQL text', () => {
    const params: SqlValue[] = [];
    const sql = keysetAfter(terms, ['1', EVIL, EVIL, EVIL], params);
    expect(sql).to.not.include('Reilly');
    expect(literals(sql)).to.deep.equal([]);
    expect(params.filter((p) => p === EVIL)).to.have.length.above(0);
  });
});

describe('cursor pages, compiled', () => {
  const target = { relation: 'r', organization: 'acme' };

  it('read one row more than the page, from no offset, with each row\'s term values', () => {
    const q = query('type=workspaces&sort=-resource_count&page[size]=10');
    const first = compileQuery({ ...q, page: { ...q.page, after: [] } }, target);
    expect(first.page.params.slice(-2)).to.deep.equal([11n, 0n]);
    expect(first.keyCount).to.equal(2);
    expect(first.page.sql).to.include('CAST("resource_count" AS VARCHAR) AS "_key0", CAST("_id" AS VARCHAR) AS "_key1"');
    const next = compileQuery({ ...q, page: { ...q.page, after: ['3', 'ws-9'] } }, target);
    expect(next.page.params).to.deep.equal(['acme', '3', '3', 'ws-9', 11n, 0n]);
    // A numbered page carries no term values.
    expect(compileQuery(q, target).keyCount).to.equal(undefined);
    expect(compileQuery(q, target).page.sql).to.not.include('_key0');
  });

  it('seek a page in stored order by position only within the layout its cursor came from', () => {
    const q = query('type=workspaces&page[size]=10');
    const stored = { ...target, organizationKey: 3, defaultOrderStored: true, rowid: 'rowid', layout: 'L1' };
    const first = compileQuery({ ...q, page: { ...q.page, after: [] } }, stored);
    expect(first.keyCount).to.equal(1);
    expect(first.cursorKeys!.layout).to.equal('L1');
    expect(first.cursorKeys!.statement.sql).to.match(/WHERE rowid = CAST\(\? AS BIGINT\)$/);
    const terms = ['net', 'Net', 'ws-1'];
    const same = compileQuery({ ...q, page: { ...q.page, after: [...terms, '41', 'L1'] } }, stored);
    expect(same.page.sql).to.include('AND rowid > CAST(? AS BIGINT)');
    expect(same.page.params).to.deep.equal([3, '41', 11n, 0n]);
    const other = compileQuery({ ...q, page: { ...q.page, after: [...terms, '41', 'L0'] } }, stored);
    expect(other.page.sql).to.not.include('rowid >');
    expect(other.page.params).to.deep.equal([3, 'net', 'net', 'Net', 'net', 'Net', 'ws-1', 11n, 0n]);
    // Outside stored order there is no position to seek.
    const sorted = compileQuery({ ...query('type=workspaces&sort=-workspace_name'), page: { number: 1, size: 10, after: [] } }, stored);
    expect(sorted.cursorKeys).to.equal(undefined);
  });

  it('page changes and summaries by their own orders', () => {
    const q = query('type=workspaces&sort=drifted&page[size]=5');
    const changes = compileChanges({ ...q, page: { ...q.page, after: ['true', 'ws-1'] } }, target, target);
    expect(changes.page.sql).to.include('FROM d WHERE ((("drifted" > CAST(? AS BOOLEAN) OR "drifted" IS NULL))');
    expect(changes.page.params.slice(-2)).to.deep.equal([6n, 0n]);
    const summary = parseSummary('terraform', query('type=workspaces&page[size]=5'), new Map([['group_by', 'project_name'], ['sort', '-count']]));
    const paged = compileSummary({ ...summary, query: { ...summary.query, page: { ...summary.query.page, after: ['4', 'net', 'Net'] } } }, target);
    // The windows count every group in a subquery; the keyset applies outside it.
    expect(paged.page.sql).to.match(/FROM \(SELECT \*, count\(\*\) OVER \(\) AS "_groups", sum\("_count"\) OVER \(\) AS "_rows" FROM s\) AS s\nWHERE/);
    expect(paged.page.sql).to.include('("_count" < CAST(? AS BIGINT) OR "_count" IS NULL)');
    expect(paged.page.params.slice(-2)).to.deep.equal([6n, 0n]);
  });
});

describe('typed exports, compiled', () => {
  const target = { relation: 'r', organization: 'acme' };

  it('name their columns after the CSV header, outside the statement that orders', () => {
    const q = query('type=workspaces&fields=drifted,workspace_updated_at,resource_count,tags&sort=-drifted');
    const parquet = compileQuery(q, target, 'parquet').export.sql;
    expect(parquet).to.match(/^SELECT "_out0" AS "drifted", "_out1" AS "workspace_updated_at", "_out2" AS "resource_count", "_out3" AS "tags"\nFROM \(SELECT /);
    expect(parquet).to.include(`timezone('UTC', date_trunc('millisecond', "workspace_updated_at")) AS "_out1"`);
    expect(parquet).to.include('CAST("resource_count" AS BIGINT) AS "_out2"');
    expect(parquet).to.include('ORDER BY "drifted" DESC NULLS LAST');
    const ndjson = compileQuery(q, target, 'ndjson').export.sql;
    expect(ndjson).to.match(/^SELECT concat\('\{"drifted":', "_out0", ',"workspace_updated_at":', "_out1", ',"resource_count":', "_out2", ',"tags":', "_out3", '\}'\) AS "_line"/);
    expect(ndjson).to.include(`coalesce(to_json("tags")::VARCHAR, 'null') AS "_out3"`);
    expect(ndjson).to.include(`coalesce('"' || strftime("workspace_updated_at", '%Y-%m-%dT%H:%M:%S.%g+00:00') || '"', 'null')`);
    // Stored lines are CSV only.
    const lines = { ...target, csvLines: q.view.fields.map((f) => f.index) };
    expect(compileQuery(query('type=workspaces'), lines, 'ndjson').exportLines).to.equal(false);
    expect(compileQuery(query('type=workspaces'), lines, 'csv').exportLines).to.equal(true);
  });

  it('write changed_fields as a list and every value bound, in every format', () => {
    const q = query(`type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bis%5D%5B0%5D=${encodeURIComponent(EVIL)}`);
    for (const format of ['csv', 'parquet', 'ndjson'] as const) {
      const { export: exported } = compileChanges(q, target, target, format);
      expect(exported.sql, format).to.not.include('Reilly');
      expect(exported.params, format).to.include(EVIL);
      if (format !== 'csv') expect(exported.sql).to.include(`string_split(`);
      const summary = parseSummary('terraform', q, new Map([['group_by', 'project_name'], ['sum', 'resource_count']]));
      const summed = compileSummary(summary, target, format).export;
      expect(summed.sql, format).to.not.include('Reilly');
      if (format !== 'csv') expect(summed.sql).to.include('"project_name"').and.include('"sum_resource_count"');
    }
  });
});
