// Parquet and NDJSON exports over HTTP (docs/data-out.md), held to the CSV export and the JSON answer of the
// same request: every export family (queries of every view, a saved view, changes, a saved view's changes,
// summaries, a saved view's summary) in both formats. The Parquet files are read back with DuckDB: column
// names and order, types, values, nulls and codec. The column types expected come from the hand-written
// contract (helpers/contract-fields.ts), not from the catalog the server derives them from.
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fx from '../fixtures/small-source.js';
import { CONTRACT } from '../helpers/contract-fields.js';
import { clientQuery, createSavedView, json, startHarness, type Harness } from '../helpers/harness.js';
import { DAY1, loadDays, writeDay } from '../helpers/history-days.js';

const VIEWS = Object.keys(CONTRACT);
const JSON_DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+00:00$/;
type Value = string | number | boolean | null | string[];

/** RFC 4180 as the CSV export writes it: every value quoted, `"` doubled, lines ending in \n. */
function parseCsv(text: string): { header: string[]; rows: string[][] } {
  const lines: string[][] = [];
  let row: string[] = [];
  let i = 0;
  const [headerLine, rest] = [text.slice(0, text.indexOf('\n')), text.slice(text.indexOf('\n') + 1)];
  while (i < rest.length) {
    expect(rest[i], `CSV at ${i}`).to.equal('"');
    let value = '';
    for (i++; ; i++) {
      if (rest[i] === '"' && rest[i + 1] === '"') { value += '"'; i++; } else if (rest[i] === '"') break; else value += rest[i];
    }
    row.push(value);
    i++;
    if (rest[i] === '\n') { lines.push(row); row = []; }
    i++;
  }
  return { header: headerLine === '' ? [] : headerLine.split(','), rows: lines };
}

/** A typed value as the CSV export writes it (interface §6): null as '', datetimes to the second, a list joined. */
function csvText(v: Value): string {
  if (v === null) return '';
  if (Array.isArray(v)) return v.join(', ');
  if (typeof v === 'string' && JSON_DATETIME.test(v)) return v.replace(/\.\d{3}\+00:00$/, '+00:00');
  return String(v);
}

/** The DuckDB type a column must have in Parquet, from the contract: a field's, `previous_<field>`'s, or an export's own. */
function parquetType(view: string, column: string): string {
  if (column === 'change') return 'VARCHAR';
  if (column === 'changed_fields') return 'VARCHAR[]';
  if (column === 'count' || column.startsWith('sum_')) return 'BIGINT';
  const type = CONTRACT[view]![column.replace(/^previous_/, '')]!;
  expect(type, `${view}.${column} in the contract`).to.be.a('string');
  return { string: 'VARCHAR', number: 'BIGINT', boolean: 'BOOLEAN', datetime: 'TIMESTAMP WITH TIME ZONE' }[type];
}

describe('Parquet and NDJSON exports', function () {
  this.timeout(120_000);
  let h: Harness;
  let ids: string[];
  let viewId: string;
  let dir: string;
  let db: DuckDBInstance;
  let duck: DuckDBConnection;
  const base = `/api/v2/organizations/${fx.ORG}/explorer`;

  before(async () => {
    h = await startHarness({ writeSource: (d) => writeDay(d, DAY1) });
    ids = await loadDays(h);
    viewId = await createSavedView(h, 'paid', 'workspaces', {
      fields: ['workspace_name', 'drifted', 'workspace_updated_at', 'resource_count', 'tags'], sort: ['-workspace_updated_at'],
      filter: [{ field: 'workspace_name', operator: 'does not contain', value: ['zzz'] }] });
    dir = mkdtempSync(join(tmpdir(), 'explorer-parquet-'));
    db = await DuckDBInstance.create(':memory:');
    duck = await db.connect();
    // Datetimes are read back in UTC whatever this process's zone (the suite runs in a non-UTC one).
    await duck.run(`SET TimeZone = 'UTC'`);
  });
  after(async () => {
    duck.closeSync();
    db.closeSync();
    rmSync(dir, { recursive: true, force: true });
    await h.close();
  });

  const get = async (path: string, init: { token?: string; headers?: Record<string, string> } = {}) => {
    const res = await h.request(`${base}${path}`, init);
    return { res, bytes: Buffer.from(await res.arrayBuffer()) };
  };

  let file = 0;
  /** A Parquet export read back: its columns (name, type), rows as NDJSON would hold them, and codecs. */
  async function readParquet(bytes: Buffer) {
    const path = join(dir, `${++file}.parquet`);
    writeFileSync(path, bytes);
    const described = (await duck.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${path}')`)).getRows().map((r) => [String(r[0]), String(r[1])]);
    // Each value in its JSON form, by DuckDB: datetimes to the millisecond in UTC, numbers as JSON numbers.
    const columns = described.map(([name, type]) => (type === 'TIMESTAMP WITH TIME ZONE'
      ? `strftime("${name}", '%Y-%m-%dT%H:%M:%S.%g+00:00')` : `"${name}"`));
    const rows = (await duck.runAndReadAll(`SELECT to_json([${columns.map((c) => `to_json(${c})`).join(', ')}])::VARCHAR FROM read_parquet('${path}')`))
      .getRows().map((r) => JSON.parse(r[0] as string) as Value[]);
    const codecs = (await duck.runAndReadAll(`SELECT DISTINCT compression FROM parquet_metadata('${path}')`)).getRows().map((r) => r[0]);
    return { columns: described, rows, codecs };
  }

  /** The three exports of one request, checked against each other; returns what they held. */
  async function exportsOf(path: (format: string) => string, view: string) {
    const csv = await get(path('csv'));
    expect(csv.res.status, csv.bytes.toString().slice(0, 300)).to.equal(200);
    const { header, rows } = parseCsv(csv.bytes.toString('utf8'));

    const nd = await get(path('ndjson'));
    expect(nd.res.status, nd.bytes.toString().slice(0, 300)).to.equal(200);
    expect(nd.res.headers.get('content-type')).to.equal('application/x-ndjson; charset=utf-8');
    expect(nd.res.headers.get('content-disposition')).to.match(/^attachment; filename="acme-corp-[a-z_-]+-\d{8}T\d{6}Z\.ndjson"$/);
    expect(nd.res.headers.get('content-length'), 'streamed').to.equal(null);
    const text = nd.bytes.toString('utf8');
    if (rows.length > 0) expect(text.endsWith('\n')).to.equal(true);
    else expect(text).to.equal('');
    const objects = text.split('\n').slice(0, -1).map((l) => JSON.parse(l) as Record<string, Value>);
    for (const o of objects) expect(Object.keys(o)).to.deep.equal(header);
    const ndRows = objects.map((o) => header.map((k) => o[k]!));

    const pq = await get(path('parquet'));
    expect(pq.res.status).to.equal(200);
    expect(pq.res.headers.get('content-type')).to.equal('application/vnd.apache.parquet');
    expect(pq.res.headers.get('content-disposition')).to.match(/^attachment; filename="acme-corp-[a-z_-]+-\d{8}T\d{6}Z\.parquet"$/);
    expect(pq.bytes.subarray(0, 4).toString()).to.equal('PAR1');
    expect(pq.bytes.subarray(-4).toString(), 'the footer').to.equal('PAR1');
    const parquet = await readParquet(pq.bytes);
    expect(parquet.columns.map((c) => c[0]), 'Parquet columns').to.deep.equal(header);
    expect(parquet.columns.map((c) => c[1]), 'Parquet types').to.deep.equal(header.map((c) => parquetType(view, c)));
    if (rows.length > 0) expect(parquet.codecs).to.deep.equal(['ZSTD']);

    // The same rows in the same order: Parquet's values are NDJSON's, and NDJSON's written as CSV are the CSV.
    expect(parquet.rows).to.deep.equal(ndRows);
    expect(ndRows.map((r) => r.map(csvText))).to.deep.equal(rows);
    // Typed: numbers are JSON numbers, booleans booleans, datetimes the JSON answer's text, never '' for null.
    header.forEach((column, i) => {
      const type = parquetType(view, column);
      for (const r of ndRows) {
        const v = r[i]!;
        if (v === null) continue;
        if (type === 'BIGINT') expect(v, column).to.be.a('number');
        if (type === 'BOOLEAN') expect(v, column).to.be.a('boolean');
        if (type === 'TIMESTAMP WITH TIME ZONE') expect(v, column).to.match(JSON_DATETIME);
        if (type === 'VARCHAR[]') expect(v, column).to.be.an('array');
      }
    });
    return { header, rows: ndRows, responses: { csv: csv.res, ndjson: nd.res, parquet: pq.res } };
  }

  /** Every row of a query as the JSON answer gives it: attributes keyed back to snake_case, in field order. */
  async function jsonRows(query: string, header: string[]): Promise<Value[][]> {
    const body = await json(await h.explorer(`${query}&page%5Bsize%5D=100`));
    expect(body.meta.pagination['total-pages'], query).to.equal(1);
    return body.data.map((r: any) => header.map((k) => r.attributes[k.replace(/_/g, '-')]));
  }

  for (const view of VIEWS) {
    it(`exports every ${view} row as the CSV and the JSON answer hold it`, async () => {
      const { header, rows } = await exportsOf((f) => `/export/${f}?type=${view}`, view);
      expect(rows.length, view).to.be.greaterThan(0);
      expect(rows).to.deep.equal(await jsonRows(`?type=${view}`, header));
      // Nulls are nulls: some value of the view is null, and the CSV wrote it as "".
      if (view === 'workspaces' || view === 'resources') expect(rows.flat()).to.include(null);
    });
  }

  it('applies filters, sort and fields as the CSV does, columns in the fields\' order', async () => {
    const q = clientQuery({ type: 'workspaces', 'filter[0][project_name][is][0]': 'payments', sort: '-workspace_updated_at,workspace_name',
      fields: 'workspace_updated_at,workspace_name,drifted,resource_count,tags' });
    const { header, rows } = await exportsOf((f) => `/export/${f}${q}`, 'workspaces');
    expect(header).to.deep.equal(['workspace_updated_at', 'workspace_name', 'drifted', 'resource_count', 'tags']);
    expect(rows).to.deep.equal(await jsonRows(q, header));
  });

  it('exports a saved view\'s rows as its results hold them', async () => {
    const { header, rows } = await exportsOf((f) => `/views/${viewId}/export/${f}`, 'workspaces');
    const results = await json(await h.explorer(`/views/${viewId}/results?page%5Bsize%5D=100`));
    expect(rows).to.deep.equal(results.data.map((r: any) => header.map((k) => r.attributes[k.replace(/_/g, '-')])));
  });

  for (const view of ['workspaces', 'resources', 'providers']) {
    it(`exports the changes of ${view} between two snapshots, changed_fields as a list`, async () => {
      const { header, rows } = await exportsOf((f) => `/changes/export/${f}?type=${view}&from=${ids[0]}`, view);
      expect(rows.length).to.be.greaterThan(0);
      const changes = await json(await h.explorer(`/changes?type=${view}&from=${ids[0]}&page%5Bsize%5D=100`));
      // Each row's kind and changed fields are the JSON answer's.
      expect(rows.map((r) => r[0])).to.deep.equal(changes.data.map((c: any) => c.attributes.change));
      expect(rows.map((r) => r[1])).to.deep.equal(changes.data.map((c: any) => c.attributes['changed-fields']));
      // Each field is its value in `to` (in `from` for a removed row); previous_ its value in `from`.
      changes.data.forEach((c: any, i: number) => {
        const shown = c.attributes.after ?? c.attributes.before;
        header.forEach((column, k) => {
          if (k < 2) return;
          const side = column.startsWith('previous_') ? c.attributes.before : shown;
          expect(rows[i]![k], `${c.id} ${column}`).to.deep.equal(side === null ? null : side[column.replace(/^previous_/, '').replace(/_/g, '-')]);
        });
      });
    });
  }

  it('exports a saved view\'s changes', async () => {
    const { rows } = await exportsOf((f) => `/views/${viewId}/changes/export/${f}?from=${ids[0]}`, 'workspaces');
    const changes = await json(await h.explorer(`/views/${viewId}/changes?from=${ids[0]}&page%5Bsize%5D=100`));
    expect(rows.map((r) => r[0])).to.deep.equal(changes.data.map((c: any) => c.attributes.change));
  });

  for (const [what, q] of [
    ['by a string and a month, with a sum', '?type=workspaces&group_by=project_name,workspace_created_at:month&sum=resource_count'],
    ['by each element of a list', '?type=workspaces&group_by=tags&sort=-count'],
    ['by a version and a boolean', '?type=resources&group_by=terraform_version,billable_rum'],
  ] as const) {
    it(`exports a summary ${what} as its pages hold it`, async () => {
      const view = /type=(\w+)/.exec(q)![1]!;
      const { header, rows } = await exportsOf((f) => `/summary/export/${f}${q}`, view);
      const page = await json(await h.explorer(`/summary${q}&page%5Bsize%5D=100`));
      const groups = header.filter((c) => c !== 'count' && !c.startsWith('sum_'));
      expect(rows).to.deep.equal(page.data.map((g: any) => [
        ...groups.map((c) => g.attributes[c.replace(/_/g, '-')]), g.attributes.count,
        ...header.filter((c) => c.startsWith('sum_')).map((c) => g.attributes.sums[c.slice(4)]),
      ]));
    });
  }

  it('exports a saved view\'s summary', async () => {
    const { rows } = await exportsOf((f) => `/views/${viewId}/summary/export/${f}?group_by=drifted&sum=resource_count`, 'workspaces');
    const page = await json(await h.explorer(`/views/${viewId}/summary?group_by=drifted&sum=resource_count`));
    expect(rows).to.deep.equal(page.data.map((g: any) => [g.attributes.drifted, g.attributes.count, g.attributes.sums.resource_count]));
  });

  it('exports no rows as an empty NDJSON body and a Parquet file of the columns alone', async () => {
    const q = clientQuery({ type: 'workspaces', 'filter[0][workspace_name][is][0]': 'no such workspace', fields: 'workspace_name,resource_count' });
    const { header, rows } = await exportsOf((f) => `/export/${f}${q}`, 'workspaces');
    expect(header).to.deep.equal(['workspace_name', 'resource_count']);
    expect(rows).to.deep.equal([]);
  });

  it('tags each format apart, with the CSV\'s Last-Modified and snapshot, and answers 304 to its own ETag', async () => {
    for (const path of [(f: string) => `/export/${f}?type=providers`, (f: string) => `/changes/export/${f}?type=workspaces`, (f: string) => `/summary/export/${f}?type=modules&group_by=name`]) {
      const { responses } = await exportsOf(path, path('').includes('modules') ? 'modules' : path('').includes('providers') ? 'providers' : 'workspaces');
      const tags = Object.values(responses).map((r) => r.headers.get('etag'));
      expect(new Set(tags).size, path('…')).to.equal(3);
      for (const r of Object.values(responses)) {
        expect(r.headers.get('last-modified')).to.equal(responses.csv.headers.get('last-modified')).and.not.equal(null);
        expect(r.headers.get('x-explorer-snapshot')).to.equal(responses.csv.headers.get('x-explorer-snapshot'));
      }
      for (const format of ['parquet', 'ndjson'] as const) {
        const again = await get(path(format), { headers: { 'If-None-Match': responses[format].headers.get('etag')! } });
        expect(again.res.status, `${path(format)} 304`).to.equal(304);
        expect(again.res.headers.get('last-modified')).to.equal(responses.csv.headers.get('last-modified'));
        expect((await get(path(format), { headers: { 'If-None-Match': responses.csv.headers.get('etag')! } })).res.status).to.equal(200);
      }
    }
  });

  it('reads another snapshot with `snapshot` as the CSV does', async () => {
    const old = await exportsOf((f) => `/export/${f}?type=workspaces&snapshot=${ids[0]}`, 'workspaces');
    expect(old.responses.ndjson.headers.get('x-explorer-snapshot')).to.equal(ids[0]);
    expect(old.rows).to.deep.equal(await jsonRows(`?type=workspaces&snapshot=${ids[0]}`, old.header));
  });

  it('chooses the format by path alone', async () => {
    const csv = await get('/export/csv?type=providers', { headers: { Accept: 'application/vnd.apache.parquet, application/x-ndjson' } });
    expect(csv.res.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
    const nd = await get('/export/ndjson?type=providers', { headers: { Accept: 'text/csv' } });
    expect(nd.res.headers.get('content-type')).to.equal('application/x-ndjson; charset=utf-8');
  });

  it('refuses as the CSV does: no token, another organization, a bad parameter, an unknown saved view', async () => {
    for (const format of ['parquet', 'ndjson']) {
      const anonymous = await h.request(`${base}/export/${format}?type=workspaces`, { token: null });
      expect(anonymous.status).to.equal(401);
      const other = await h.request(`${base}/export/${format}?type=workspaces`, { token: h.tokens.otherOrg });
      expect(other.status).to.equal(404);
      expect(other.headers.get('content-type')).to.match(/^application\/vnd\.api\+json/);
      const bad = await h.request(`${base}/export/${format}?type=workspaces&filter%5B0%5D%5Bnope%5D%5Bis%5D%5B0%5D=x`);
      expect(bad.status).to.equal(400);
      expect((await json(bad)).errors[0].source).to.deep.equal({ parameter: 'filter[0][nope][is][0]' });
      const otherView = await h.request(`/api/v2/organizations/${fx.OTHER_ORG}/explorer/views/${viewId}/export/${format}`, { token: h.tokens.otherOrg });
      expect(otherView.status).to.equal(404);
      const badPair = await h.request(`${base}/changes/export/${format}?type=workspaces&from=nope`);
      expect(badPair.status).to.equal(400);
      const badGroup = await h.request(`${base}/summary/export/${format}?type=workspaces&group_by=nope`);
      expect(badGroup.status).to.equal(400);
    }
  });
});
