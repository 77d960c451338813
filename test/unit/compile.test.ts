// compileQuery (src/query/compile.ts): pure text checks, then the compiled SQL run for real on DuckDB
// over a small in-memory table shaped like the workspaces Parquet file (interface §4, §5, §6).
import { expect } from 'chai';
import { type DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { decodeQueryString, encodeStrict } from '../../src/query/query-string.js';
import { parseQueryParameters } from '../../src/query/parse-query.js';
import { compileQuery, type CompiledQuery, type SqlValue } from '../../src/query/compile.js';
import { catalogFor, foldedColumn, versionKeyColumn } from '../../src/catalog/catalog.js';
import { versionKey } from '../../src/catalog/version-order.js';
import type { Query } from '../../src/query/query.js';
import { openInstance } from '../../src/duckdb/open-instance.js';

const asciiFold = (s: string) => s.replace(/[A-Z]/g, (ch) => ch.toLowerCase());

const RELATION = 'ws_rel';
const query = (raw: string, engine = 'terraform'): Query => parseQueryParameters(engine, decodeQueryString(raw)).query;
const compile = (raw: string, organization = 'acme', engine = 'terraform'): CompiledQuery =>
  compileQuery(query(raw, engine), { relation: RELATION, organization });
const enc = encodeStrict;
const filter = (i: number, field: string, op: string, value: string, j = 0) =>
  `${enc(`filter[${i}][${field}][${op}][${j}]`)}=${enc(value)}`;

/** Every single-quoted literal the compiler itself may write; a client value would add another. */
const ALLOWED_LITERALS = new Set([
  "''",
  "'ABCDEFGHIJKLMNOPQRSTUVWXYZ'",
  "'abcdefghijklmnopqrstuvwxyz'",
  "'%Y-%m-%dT%H:%M:%S.%g+00:00'",
  "'%Y-%m-%dT%H:%M:%S'",
  "'+00:00'",
]);
const literals = (sql: string) => sql.match(/'(?:[^']|'')*'/g) ?? [];

describe('compileQuery: SQL text', () => {
  const EVIL = ["O'Reilly", "'; DROP TABLE x; --", 'naïve ☃ 😀 Ünï', '"ws_rel"', 'a\\b', 'x) OR (1=1', 'É%_'];

  it('is pure: the same query compiles to the same statements and is left unchanged', () => {
    const q = query(`type=workspaces&${filter(0, 'workspace_name', 'contains', 'AbC')}&sort=-workspace_terraform_version&page[number]=2`);
    const before = JSON.stringify(q);
    const a = compileQuery(q, { relation: RELATION, organization: 'acme' });
    const b = compileQuery(q, { relation: RELATION, organization: 'acme' });
    expect(a).to.deep.equal(b);
    expect(JSON.stringify(q)).to.equal(before);
  });

  it('never writes a client value into the SQL text: every value is a parameter', () => {
    for (const v of EVIL) {
      const raw = [
        'type=workspaces',
        filter(0, 'workspace_name', 'is', v),
        filter(1, 'workspace_name', 'is_not', v),
        filter(2, 'vcs_repo_identifier', 'contains', v),
        filter(3, 'vcs_repo_identifier', 'does not contain', v),
        filter(4, 'project_name', 'is', v, 0),
        filter(4, 'project_name', 'is', `${v}2`, 1),
      ].join('&');
      const c = compile(raw, v);
      for (const part of [c.count, c.page, c.export]) {
        expect(part.sql, v).not.to.contain(v);
        expect(part.sql.toLowerCase(), v).not.to.contain(v.toLowerCase());
        expect(part.sql).not.to.contain('DROP');
        for (const lit of literals(part.sql)) expect(ALLOWED_LITERALS.has(lit), `literal ${lit} in SQL for ${v}`).to.equal(true);
        expect(part.params[0]).to.equal(v); // the organization
      }
      const folded = v.replace(/[A-Z]/g, (ch) => ch.toLowerCase());
      expect(c.count.params).to.deep.equal([v, v, v, folded, folded, v, `${v}2`]);
    }
  });

  it('puts the organization first, then values in condition order, then LIMIT and OFFSET as bigints', () => {
    const c = compile(`type=workspaces&${filter(0, 'workspace_name', 'is', 'a')}&${filter(0, 'workspace_name', 'is', 'b', 1)}&${filter(1, 'checks_failed', 'gt', '3')}&${filter(2, 'drifted', 'is', 'TRUE')}&page[number]=3&page[size]=25`, 'org-1');
    // Numbers travel as their validated text and are cast to DOUBLE in SQL (values past 2^63 stay bindable).
    expect(c.count.params).to.deep.equal(['org-1', 'a', 'b', '3', true]);
    expect(c.export.params).to.deep.equal(['org-1', 'a', 'b', '3', true]);
    expect(c.page.params).to.deep.equal(['org-1', 'a', 'b', '3', true, 25n, 50n]);
    expect(c.count.sql).to.contain('"checks_failed" > CAST(? AS DOUBLE)');
    expect(c.page.sql).to.match(/\nLIMIT \? OFFSET \?$/);
    expect(c.count.sql).not.to.contain('LIMIT');
    expect(c.export.sql).not.to.contain('LIMIT');
  });

  it('computes OFFSET = (number - 1) × size exactly, also past 2^53', () => {
    expect(compile('type=workspaces').page.params.slice(-2)).to.deep.equal([20n, 0n]);
    expect(compile('type=workspaces&page[size]=101&page[number]=2').page.params.slice(-2)).to.deep.equal([100n, 100n]);
    expect(compile('type=workspaces&page[size]=100&page[number]=9007199254740991').page.params.slice(-2)).to.deep.equal([100n, 900719925474099000n]);
  });

  it('ASCII-folds contains / does not contain values only (É stays É), and keeps is / is_not exact', () => {
    const c = compile(`type=workspaces&${filter(0, 'workspace_name', 'contains', 'CAFÉ Straße XYZ')}&${filter(1, 'workspace_name', 'does not contain', 'ÀÉÎ AbC')}&${filter(2, 'workspace_name', 'is', 'CAFÉ')}&${filter(3, 'workspace_name', 'is_not', 'AbC')}`);
    expect(c.count.params).to.deep.equal(['acme', 'cafÉ straße xyz', 'ÀÉÎ abc', 'CAFÉ', 'AbC']);
  });

  it('keeps NULL for is_not and does not contain (IS NULL OR …)', () => {
    const isNot = compile(`type=workspaces&${filter(0, 'vcs_repo_identifier', 'is_not', 'a')}`).count.sql;
    expect(isNot).to.contain('("vcs_repo_identifier" IS NULL OR NOT');
    const dnc = compile(`type=workspaces&${filter(0, 'vcs_repo_identifier', 'does_not_contain', 'a')}`).count.sql;
    expect(dnc).to.contain('("vcs_repo_identifier" IS NULL OR NOT');
    const num = compile(`type=workspaces&${filter(0, 'checks_failed', 'is_not', '1')}`).count.sql;
    expect(num).to.contain('("checks_failed" IS NULL OR NOT');
    for (const op of ['is', 'contains']) {
      expect(compile(`type=workspaces&${filter(0, 'vcs_repo_identifier', op, 'a')}`).count.sql).not.to.contain('IS NULL');
    }
  });

  it("makes is_empty on strings also match '' (and only on strings)", () => {
    expect(compile(`type=workspaces&${filter(0, 'vcs_repo_identifier', 'is_empty', '')}`).count.sql).to.contain(`"vcs_repo_identifier" IS NULL OR "vcs_repo_identifier" = ''`);
    const n = compile(`type=workspaces&${filter(0, 'checks_failed', 'is_empty', '')}`).count;
    expect(n.sql).to.contain('"checks_failed" IS NULL');
    expect(n.sql).not.to.contain(`"checks_failed" = ''`);
    expect(n.params).to.deep.equal(['acme']);
  });

  it('binds datetimes as UTC YYYY-MM-DD HH:MM:SS.mmm (offsets applied, digits past ms truncated)', () => {
    const cases: [string, string][] = [
      ['2024-01-01T02:00+02:00', '2024-01-01 00:00:00.000'],
      ['2024-01-01', '2024-01-01 00:00:00.000'],
      ['2024-03-01T01:00:00+02:00', '2024-02-29 23:00:00.000'],
      ['2024-05-06T07:08:09.123999Z', '2024-05-06 07:08:09.123'],
      ['2024-05-06T07:08:09.9-00:30', '2024-05-06 07:38:09.900'],
    ];
    for (const [input, expected] of cases) {
      const c = compile(`type=workspaces&${filter(0, 'workspace_created_at', 'is_after', input)}&${filter(1, 'current_run_applied_at', 'is_before', input)}`);
      expect(c.count.params, input).to.deep.equal(['acme', expected, expected]);
    }
  });

  it('ends every ORDER BY with "_id" ASC NULLS LAST', () => {
    const raws = [
      'type=workspaces',
      'type=workspaces&sort=-workspace_name',
      'type=workspaces&sort=-drifted,-checks_failed,-workspace_terraform_version,-workspace_created_at',
      'type=tf_versions',
      'type=providers&sort=-workspace_count',
      'type=modules&sort=-name,-version,-source',
    ];
    for (const raw of raws) {
      const c = compile(raw);
      const page = /\nORDER BY (.*)\nLIMIT \? OFFSET \?$/.exec(c.page.sql);
      expect(page, raw).not.to.equal(null);
      expect(page![1]!.endsWith(', "_id" ASC NULLS LAST'), raw).to.equal(true);
      expect(page![1]!.split('"_id"').length, raw).to.equal(2); // only at the end
      expect(c.export.sql.endsWith(', "_id" ASC NULLS LAST'), raw).to.equal(true);
    }
  });

  it('sorts version fields through the __vk column, other strings through the ASCII fold', () => {
    const ws = compile('type=workspaces&sort=-workspace_terraform_version').page.sql;
    expect(ws).to.contain('"workspace_engine_version__vk" DESC');
    const tf = compile('type=tf_versions').page.sql;
    expect(tf).to.contain('"version__vk" DESC');
    const prov = compile('type=providers').page.sql;
    expect(prov).to.contain('"version__vk" DESC');
    const st = compile('type=workspaces&sort=state_version_terraform_version').page.sql;
    expect(st).to.contain('"state_version_engine_version__vk" ASC');
    const name = compile('type=workspaces&sort=workspace_name').page.sql;
    expect(name).not.to.contain('__vk');
    expect(name).to.contain(`\nORDER BY coalesce("workspace_name__f", "workspace_name") ASC NULLS LAST, "workspace_name" ASC NULLS LAST, "_id" ASC NULLS LAST\n`);
  });

  it('projects JSON values with datetimes through strftime, after "_id", in the requested order', () => {
    const c = compile('type=workspaces&fields=workspace_updated_at,drifted,workspace_name,current_run_applied_at');
    expect(c.page.sql.split('\n')[0]).to.equal(
      `SELECT "_id", strftime("workspace_updated_at", '%Y-%m-%dT%H:%M:%S.%g+00:00'), "drifted", "workspace_name", strftime("current_run_applied_at", '%Y-%m-%dT%H:%M:%S.%g+00:00')`,
    );
  });

  it('coalesces every export column to a VARCHAR or \'\' under a name no column has, so ORDER BY sorts by the stored value', () => {
    for (const view of catalogFor('opentofu').views) {
      const c = compile(`type=${view.name}`, 'acme', 'opentofu');
      const select = c.export.sql.split('\n')[0]!;
      const expected = view.fields.map((f, i) =>
        f.type === 'datetime'
          ? `coalesce(strftime("${f.column}", '%Y-%m-%dT%H:%M:%S') || '+00:00', '') AS "_out${i}"`
          : `coalesce(CAST("${f.column}" AS VARCHAR), '') AS "_out${i}"`,
      );
      expect(select).to.equal(`SELECT ${expected.join(', ')}`);
      for (const f of view.fields) expect(select).to.not.include(`AS "${f.name}"`).and.not.include(`AS "${f.column}"`);
    }
    expect(compile('type=workspaces&fields=drifted&sort=drifted', 'acme', 'opentofu').export.sql).to.equal(
      `SELECT coalesce(CAST("drifted" AS VARCHAR), '') AS "_out0"\nFROM ${RELATION}\nWHERE "_org" = ?\nORDER BY "drifted" ASC NULLS LAST, "_id" ASC NULLS LAST`,
    );
  });

  it('reads from the given relation, scoped to the organization', () => {
    const c = compile('type=workspaces');
    expect(c.count.sql).to.equal(`SELECT count(*) AS n\nFROM ${RELATION}\nWHERE "_org" = ?`);
  });

  it('reads an index only for a large organization whose page tests its field with is and only fields it holds', () => {
    const INDEX = 'res_by_type';
    const plan = (raw: string, over: { organizationRows?: number; organizationKey?: number } = {}) => {
      const c = compileQuery(query(raw), {
        relation: 'res', organization: 'acme', organizationKey: 7, organizationRows: 50_000, rowid: 'rowid', defaultOrderStored: true,
        indexes: [{ column: 'provider_type', relation: INDEX }], ...over,
      });
      return c.page.sql.includes(`"_row" AS "_rowid"`) ? 'ranked' : c.count.sql.includes(INDEX) ? 'counted' : 'unused';
    };
    const type = filter(0, 'provider_type', 'is', 'aws_instance');
    expect(plan(`type=resources&${type}&sort=-source_updated_at`)).to.equal('ranked');
    expect(plan(`type=resources&${type}&${filter(1, 'billable_rum', 'is', 'true')}&sort=billable_rum,-source_updated_at`)).to.equal('ranked');
    // A sort by a string the index does not hold: the matching rows are counted there, ranked in the table.
    expect(plan(`type=resources&${type}&sort=address`)).to.equal('counted');
    expect(plan(`type=resources&${type}`)).to.equal('counted'); // the default order: a scan in stored order
    // A condition on a field the index does not hold, or no `is` on its field: the table alone.
    expect(plan(`type=resources&${type}&${filter(1, 'workspace_name', 'contains', 'a')}&sort=-source_updated_at`)).to.equal('unused');
    expect(plan(`type=resources&${filter(0, 'provider_type', 'is_not', 'aws_instance')}&sort=-source_updated_at`)).to.equal('unused');
    expect(plan(`type=resources&${filter(0, 'provider_type', 'contains', 'aws')}&sort=-source_updated_at`)).to.equal('unused');
    // A small organization is read whole; without its key (or its size) the index is not used either.
    expect(plan(`type=resources&${type}&sort=-source_updated_at`, { organizationRows: 10_000 })).to.equal('unused');
    expect(plan(`type=resources&${type}&sort=-source_updated_at`, { organizationKey: undefined })).to.equal('unused');
    expect(plan(`type=resources&${type}&sort=-source_updated_at`, { organizationRows: undefined })).to.equal('unused');
  });

  it('fetches a large organization\'s page by its rows\' indexed positions alone, and by rowid within the organization otherwise', () => {
    const raw = `type=resources&${filter(0, 'name', 'is', 'web')}&sort=-source_updated_at`;
    const fetch = (rowid: string, rowidIndexed: boolean) => {
      const { sql, params } = compileQuery(query(raw), { relation: 'res', organization: 'acme', organizationKey: 7, organizationRows: 50_000, rowid, rowidIndexed }).page;
      return { where: sql.slice(sql.indexOf('FROM res\nWHERE', sql.indexOf(')\n'))).split('\n').slice(1, 3).join('\n'), params };
    };
    // The ids come from the organization's own rows (the first scan), so both keep the page to it.
    expect(fetch('"_pos"', true)).to.deep.equal({ where: 'WHERE "_pos" IN (SELECT "_rowid" FROM matching\nORDER BY "source_updated_at" DESC NULLS LAST, "_id" ASC NULLS LAST', params: [7, 'web', 20n, 0n] });
    expect(fetch('rowid', false)).to.deep.equal({ where: 'WHERE "_org_key" = CAST(? AS INTEGER)\n  AND rowid IN (SELECT "_rowid" FROM matching', params: [7, 'web', 7, 20n, 0n] });
  });

  it('fetches the page\'s rows from the fetch relation when the target gives one, and matches them in the relation', () => {
    const raw = `type=resources&${filter(0, 'name', 'is', 'web')}&sort=-source_updated_at`;
    const { sql } = compileQuery(query(raw), { relation: 'merged', fetchRelation: 'layers', organization: 'acme', organizationKey: 7, organizationRows: 50_000, rowid: '"_pos"' }).page;
    expect(sql).to.match(/WITH matching AS MATERIALIZED \(SELECT "_pos" AS "_rowid", [^\n]*\nFROM merged\nWHERE /);
    expect(sql).to.include('\nFROM layers\nWHERE "_org_key" = CAST(? AS INTEGER)\n  AND "_pos" IN (SELECT "_rowid" FROM matching');
    expect(sql).to.not.include('FROM merged\nWHERE "_org_key" = CAST(? AS INTEGER)\n  AND "_pos" IN');
  });

  it('reads a layered organization\'s page and count through the relations narrowed to the columns they read, its export through every column', () => {
    const asked: string[][] = [];
    const narrowed = (columns: readonly string[]) => {
      asked.push([...columns]);
      return { relation: `merged(${columns.join(' ')})`, fetchRelation: `layers(${columns.join(' ')})`, upper: `upper(${columns.join(' ')})` };
    };
    const target = { relation: 'merged', fetchRelation: 'layers', organization: 'acme', organizationKey: 7, organizationRows: 50_000, rowid: '"_pos"', rowJson: true, narrowed };
    const compiled = compileQuery(query(`type=resources&${filter(0, 'name', 'is', 'web')}&sort=-source_updated_at`), target);
    const columns = '"_org_key" "_pos" "_id" "_json" "name" "name__f" "source_updated_at"';
    expect(asked).to.deep.equal([columns.split(' ')]);
    expect(compiled.page.sql).to.include(`FROM merged(${columns})\nWHERE "_org_key" = CAST(? AS INTEGER)\n  AND "name" = ?`)
      .and.include(`\nFROM layers(${columns})\nWHERE "_org_key" = CAST(? AS INTEGER)\n  AND "_pos" IN (SELECT "_rowid" FROM matching`);
    expect(compiled.export.sql).to.include('FROM merged\nWHERE').and.not.include('merged(');
    // Without row JSON a page reads each field's own column: the relation as it is.
    expect(compileQuery(query('type=resources&sort=-source_updated_at'), { ...target, rowJson: false }).page.sql).to.not.include('merged(');
    // The default order's merge reads the layers over the lowest through the narrowed upper part, its workspace column among them.
    const merge = { stored: 'low.res', replaced: '(SELECT id FROM up.replaced_workspaces WHERE _org_key = 7)', upper: '(SELECT * FROM up.res)', column: '"workspace_id"' };
    const merged = compileQuery(query(`type=resources&${filter(0, 'name', 'is', 'web')}`), { ...target, storedMerge: merge }).page.sql;
    expect(merged).to.match(/\n {2}FROM upper\([^)]*"workspace_id"\) u\n/).and.not.include('up.res');
  });

  it('reads a layered organization\'s page in the default order as the lowest layer\'s first rows, limited before the replaced ones go', () => {
    const merge = { stored: 'low.res', replaced: '(SELECT id FROM up.replaced_workspaces WHERE _org_key = 7)', upper: '(SELECT * FROM up.res)', column: '"workspace_id"' };
    const target = { relation: 'merged', fetchRelation: 'layers', organization: 'acme', organizationKey: 7, organizationRows: 50_000, rowid: '"_pos"', rowJson: true, storedMerge: merge };
    const raw = `type=resources&${filter(0, 'name', 'is', 'web')}&page[number]=3&page[size]=10`;
    const compiled = compileQuery(query(raw), target);
    const { sql, params } = compiled.page;
    // The scan's LIMIT (the page's end plus the replaced rows of the organization) comes before any join.
    expect(sql).to.match(/^WITH first_rows AS \(SELECT [^\n]*"workspace_id"[^\n]*\nFROM low\.res\nWHERE "_org_key" = CAST\(\? AS INTEGER\)\n  AND "name" = \?\nLIMIT \? \+ \(SELECT count\(\*\) FROM low\.res h SEMI JOIN /);
    expect(sql).to.include('FROM first_rows f ANTI JOIN (SELECT id FROM up.replaced_workspaces WHERE _org_key = 7) r ON r.id = f."workspace_id"');
    expect(sql).to.include('FROM (SELECT * FROM up.res) u\n  WHERE "_org_key" = CAST(? AS INTEGER)\n  AND "name" = ?)');
    expect(params).to.deep.equal([7, 'web', 30n, 7, 7, 'web', 10n, 20n]);
    // Counted apart: a count beside the page's scan could change the order the scan returns its rows in.
    expect(compiled.pageCountsTotal).to.equal(false);
    // The replaced rows' number recorded: the scan reads that many more, bound, and the join drops them.
    const counted = compileQuery(query(raw), { ...target, storedMerge: { ...merge, hiddenRows: 12 } }).page;
    expect(counted.sql).to.include('\nLIMIT ? + ?)\n').and.include('ANTI JOIN');
    expect(counted.params).to.deep.equal([7, 'web', 30n, 12n, 7, 'web', 10n, 20n]);
    // Their runs of positions recorded: the scan leaves them out itself, reads no more than the page reaches, joins nothing.
    const ranged = compileQuery(query(raw), { ...target, storedMerge: { ...merge, hiddenRows: 12, hiddenRanges: [[100, 104], [230, 236]] } });
    expect(ranged.page.sql).to.include('\n  AND NOT ("_pos" BETWEEN 100 AND 104 OR "_pos" BETWEEN 230 AND 236)\nLIMIT ?)\n').and.not.include('JOIN');
    expect(ranged.page.params).to.deep.equal([7, 'web', 30n, 7, 'web', 10n, 20n]);
    // and each layer counts its own matching rows, the same ranges left out.
    expect(ranged.count.sql).to.equal('SELECT (SELECT count(*) FROM low.res\n  WHERE "_org_key" = CAST(? AS INTEGER)\n  AND "name" = ?\n  AND NOT ("_pos" BETWEEN 100 AND 104 OR "_pos" BETWEEN 230 AND 236))\n'
      + '  + (SELECT count(*) FROM (SELECT * FROM up.res) u\n  WHERE "_org_key" = CAST(? AS INTEGER)\n  AND "name" = ?) AS n');
    expect(ranged.count.params).to.deep.equal([7, 'web', 7, 'web']);
    // Listed by a delta and too many for ranges: the first rows found by position, narrow, then read by position; no LIMIT on a plain scan.
    const listed = compileQuery(query(raw), { ...target, storedMerge: { ...merge, hiddenRows: 5000, hidden: '(SELECT pos FROM up.hidden_res WHERE _org_key = 7)' } });
    expect(listed.page.sql).to.match(/^WITH candidates AS MATERIALIZED \(SELECT "_pos"\nFROM low\.res\nWHERE "_org_key" = CAST\(\? AS INTEGER\)\n {2}AND "name" = \?\nLIMIT \? \+ \?\),\n/)
      .and.include('\nFROM low.res\nWHERE "_pos" IN (SELECT "_pos" FROM candidates\n  WHERE "_pos" NOT IN (SELECT h.pos FROM (SELECT pos FROM up.hidden_res WHERE _org_key = 7) h WHERE h.pos <= (SELECT max("_pos") FROM candidates))\n  ORDER BY "_pos"\n  LIMIT ?))\n')
      .and.not.include('ANTI JOIN');
    expect(listed.page.params).to.deep.equal([7, 'web', 30n, 5000n, 30n, 7, 'web', 10n, 20n]);
    // Single positions (a replaced workspace's one row) are left out as one list, runs as ranges.
    const singles = compileQuery(query(raw), { ...target, storedMerge: { ...merge, hiddenRows: 8, hiddenRanges: [[90, 90], [100, 104], [120, 120], [131, 131]] } });
    expect(singles.page.sql).to.include('\n  AND "_pos" NOT IN (90, 120, 131)\n  AND NOT ("_pos" BETWEEN 100 AND 104)\nLIMIT ?)\n');
    expect(singles.count.sql).to.include('\n  AND "_pos" NOT IN (90, 120, 131)\n  AND NOT ("_pos" BETWEEN 100 AND 104))\n');
    // A small organization's filtered page: every layer's rows read by filters alone and counted by a window.
    const windowed = compileQuery(query(raw), { ...target, organizationRows: 800, storedMerge: { ...merge, hiddenRows: 12, hiddenRanges: [[100, 104]] } });
    expect(windowed.pageCountsTotal).to.equal(true);
    expect(windowed.page.sql).to.include('count(*) OVER () AS "_total"').and.not.include('JOIN').and.not.include('first_rows');
    // Another order, or a cursor page, reads the merged relation as before.
    expect(compileQuery(query(`type=resources&sort=-source_updated_at`), target).page.sql).to.not.include('first_rows');
    expect(compileQuery(query('type=resources&page[size]=10'), { ...target, storedMerge: undefined }).page.sql).to.not.include('first_rows');
  });
});

// ---------------------------------------------------------------------------------------------------
// DuckDB: the compiled statements run, and mean what interface §4–§6 say.

type Row = Record<string, string | number | boolean | null> & { _id: string };
const ROWS: Row[] = [
  { _id: 'ws-01', _org: 'acme', workspace_name: 'payments-prod', vcs_repo_identifier: 'github.com/acme/Payments', checks_failed: 0, drifted: false, workspace_created_at: '2024-01-01 00:00:00', workspace_engine_version: '1.10.0' },
  { _id: 'ws-02', _org: 'acme', workspace_name: 'PAYROLL', vcs_repo_identifier: null, checks_failed: 2, drifted: true, workspace_created_at: '2024-01-01 00:00:00.001', workspace_engine_version: '1.9.2' },
  { _id: 'ws-03', _org: 'acme', workspace_name: 'café', vcs_repo_identifier: '', checks_failed: null, drifted: null, workspace_created_at: null, workspace_engine_version: 'latest' },
  { _id: 'ws-04', _org: 'acme', workspace_name: 'CAFÉ-ops', vcs_repo_identifier: 'gitlab.com/x_y', checks_failed: 5, drifted: false, workspace_created_at: '2023-12-31 23:59:59.999', workspace_engine_version: '1.10.0-rc.1' },
  { _id: 'ws-05', _org: 'acme', workspace_name: 'Café-api', vcs_repo_identifier: 'github.com/acme/api', checks_failed: 1, drifted: true, workspace_created_at: '2024-06-01 12:00:00', workspace_engine_version: null },
  { _id: 'ws-06', _org: 'acme', workspace_name: 'b', vcs_repo_identifier: 'x', checks_failed: 0, drifted: false, workspace_created_at: '2022-01-01 00:00:00', workspace_engine_version: '1.10' },
  { _id: 'ws-07', _org: 'acme', workspace_name: 'a_b', vcs_repo_identifier: 'x', checks_failed: 0, drifted: true, workspace_created_at: '2022-01-01 00:00:00', workspace_engine_version: 'v1.2' },
  { _id: 'ws-08', _org: 'acme', workspace_name: 'B', vcs_repo_identifier: 'GITHUB.com/b', checks_failed: 3, drifted: false, workspace_created_at: '2022-01-01 00:00:00', workspace_engine_version: 'Beta' },
  { _id: 'ws-09', _org: 'acme', workspace_name: null, vcs_repo_identifier: null, checks_failed: null, drifted: null, workspace_created_at: null, workspace_engine_version: null },
  { _id: 'ws-00', _org: 'acme', workspace_name: null, vcs_repo_identifier: null, checks_failed: null, drifted: null, workspace_created_at: null, workspace_engine_version: null },
  { _id: 'ws-g1', _org: 'globex', workspace_name: 'payments-prod', vcs_repo_identifier: null, checks_failed: 9, drifted: true, workspace_created_at: '2024-01-01 00:00:00', workspace_engine_version: '1.10.0' },
  { _id: 'ws-q1', _org: "acme'corp", workspace_name: 'quoted', vcs_repo_identifier: null, checks_failed: 0, drifted: false, workspace_created_at: null, workspace_engine_version: null },
];
const ACME = ROWS.filter((r) => r._org === 'acme').map((r) => r._id).sort();

const SQL_TYPE = { string: 'VARCHAR', number: 'BIGINT', boolean: 'BOOLEAN', datetime: 'TIMESTAMP' } as const;

describe('compileQuery on DuckDB', function () {
  let instance: DuckDBInstance;
  let db: DuckDBConnection;
  const workspaces = catalogFor('terraform').view('workspaces')!;

  before(async function () {
    instance = await openInstance(':memory:');
    db = await instance.connect();
    const columns: [string, string][] = [['_org', 'VARCHAR'], ['_id', 'VARCHAR']];
    for (const f of workspaces.fields) {
      columns.push([f.column, SQL_TYPE[f.type]]);
      if (f.version) columns.push([versionKeyColumn(f.column), 'VARCHAR']);
      if (f.type === 'string') columns.push([foldedColumn(f.column), 'VARCHAR']);
    }
    const names = columns.map(([c]) => c);
    expect(names).to.include.members(['workspace_engine_version__vk', 'state_version_engine_version__vk']);
    await db.run(`CREATE TABLE ${RELATION} (${columns.map(([c, t]) => `"${c}" ${t}`).join(', ')})`);
    for (const row of ROWS) {
      const values: DuckDBValue[] = names.map((c) => {
        const base = workspaces.fields.find((f) => f.version && versionKeyColumn(f.column) === c);
        if (base) {
          const v = row[base.column];
          return typeof v === 'string' ? versionKey(v) : null;
        }
        const folds = workspaces.fields.find((f) => f.type === 'string' && foldedColumn(f.column) === c);
        if (folds) {
          const v = row[folds.column];
          return typeof v === 'string' ? asciiFold(v) : null;
        }
        return row[c] ?? null;
      });
      await db.run(`INSERT INTO ${RELATION} VALUES (${values.map(() => '?').join(', ')})`, values);
    }
  });

  after(() => {
    db?.closeSync();
    instance?.closeSync();
  });

  const run = async (stmt: { sql: string; params: SqlValue[] }) =>
    (await db.runAndReadAll(stmt.sql, stmt.params as DuckDBValue[])).getRows();
  /** Row ids of the first page (size 100) in order. */
  const ids = async (raw: string, org = 'acme') => (await run(compile(`${raw}&page[size]=100`, org).page)).map((r) => r[0] as string);
  const idSet = async (raw: string, org = 'acme') => (await ids(raw, org)).sort();
  const ws = (...f: string[]) => ['type=workspaces', ...f].join('&');
  const except = (...out: string[]) => ACME.filter((id) => !out.includes(id));

  it('scopes every statement to the bound organization, quotes included', async () => {
    expect(await idSet(ws())).to.deep.equal(ACME);
    expect(await ids(ws(), "acme'corp")).to.deep.equal(['ws-q1']);
    expect(await ids(ws(), "acme' OR '1'='1")).to.deep.equal([]);
    const count = await run(compile(ws(filter(0, 'workspace_name', 'is', 'payments-prod'))).count);
    expect(count).to.deep.equal([[1n]]);
  });

  it('is: exact and case-sensitive; several values mean any of', async () => {
    expect(await ids(ws(filter(0, 'workspace_name', 'is', 'payments-prod')))).to.deep.equal(['ws-01']);
    expect(await ids(ws(filter(0, 'workspace_name', 'is', 'PAYMENTS-PROD')))).to.deep.equal([]);
    expect(await idSet(ws(filter(0, 'workspace_name', 'is', 'b'), filter(0, 'workspace_name', 'is', 'B', 1)))).to.deep.equal(['ws-06', 'ws-08']);
    expect(await idSet(ws(filter(0, 'drifted', 'is', 'false')))).to.deep.equal(['ws-01', 'ws-04', 'ws-06', 'ws-08']);
    expect(await idSet(ws(filter(0, 'checks_failed', 'is', '0')))).to.deep.equal(['ws-01', 'ws-06', 'ws-07']);
  });

  it('is_not keeps nulls and empty strings; several values mean none of', async () => {
    expect(await idSet(ws(filter(0, 'vcs_repo_identifier', 'is_not', 'x')))).to.deep.equal(except('ws-06', 'ws-07'));
    expect(await idSet(ws(filter(0, 'vcs_repo_identifier', 'is_not', 'x'), filter(0, 'vcs_repo_identifier', 'is_not', 'github.com/acme/api', 1)))).to.deep.equal(except('ws-05', 'ws-06', 'ws-07'));
    expect(await idSet(ws(filter(0, 'checks_failed', 'is_not', '0')))).to.deep.equal(except('ws-01', 'ws-06', 'ws-07'));
  });

  it('contains: case-insensitive for ASCII only, a plain substring test (no LIKE wildcards)', async () => {
    expect(await idSet(ws(filter(0, 'workspace_name', 'contains', 'PAY')))).to.deep.equal(['ws-01', 'ws-02']);
    // CAFÉ folds to cafÉ: it matches CAFÉ-ops (folded cafÉ-ops) but not café / Café-api.
    expect(await idSet(ws(filter(0, 'workspace_name', 'contains', 'CAFÉ')))).to.deep.equal(['ws-04']);
    expect(await idSet(ws(filter(0, 'workspace_name', 'contains', 'café')))).to.deep.equal(['ws-03', 'ws-05']);
    expect(await idSet(ws(filter(0, 'workspace_name', 'contains', '_')))).to.deep.equal(['ws-07']);
    expect(await idSet(ws(filter(0, 'workspace_name', 'contains', '%')))).to.deep.equal([]);
    expect(await idSet(ws(filter(0, 'vcs_repo_identifier', 'contains', 'GitHub')))).to.deep.equal(['ws-01', 'ws-05', 'ws-08']);
    expect(await idSet(ws(filter(0, 'workspace_name', 'contains', 'pay'), filter(0, 'workspace_name', 'contains', 'a_', 1)))).to.deep.equal(['ws-01', 'ws-02', 'ws-07']);
  });

  it('does not contain keeps nulls; several values mean none of', async () => {
    expect(await idSet(ws(filter(0, 'vcs_repo_identifier', 'does not contain', 'GITHUB')))).to.deep.equal(except('ws-01', 'ws-05', 'ws-08'));
    expect(await idSet(ws(filter(0, 'workspace_name', 'does+not+contain', 'pay'), filter(0, 'workspace_name', 'does_not_contain', 'CAF', 1)))).to.deep.equal(except('ws-01', 'ws-02', 'ws-03', 'ws-04', 'ws-05'));
  });

  it("is_empty matches null and '' for strings, null only for other types; is_not_empty the rest", async () => {
    expect(await idSet(ws(filter(0, 'vcs_repo_identifier', 'is_empty', '')))).to.deep.equal(['ws-00', 'ws-02', 'ws-03', 'ws-09']);
    expect(await idSet(ws(filter(0, 'vcs_repo_identifier', 'is_not_empty', '')))).to.deep.equal(except('ws-00', 'ws-02', 'ws-03', 'ws-09'));
    expect(await idSet(ws(filter(0, 'checks_failed', 'is_empty', '')))).to.deep.equal(['ws-00', 'ws-03', 'ws-09']);
    expect(await idSet(ws(filter(0, 'drifted', 'is_not_empty', '')))).to.deep.equal(except('ws-00', 'ws-03', 'ws-09'));
    expect(await idSet(ws(filter(0, 'workspace_created_at', 'is_empty', '')))).to.deep.equal(['ws-00', 'ws-03', 'ws-09']);
  });

  it('gt / lt / gteq / lteq never match null', async () => {
    expect(await idSet(ws(filter(0, 'checks_failed', 'gt', '0')))).to.deep.equal(['ws-02', 'ws-04', 'ws-05', 'ws-08']);
    expect(await idSet(ws(filter(0, 'checks_failed', 'lt', '1')))).to.deep.equal(['ws-01', 'ws-06', 'ws-07']);
    expect(await idSet(ws(filter(0, 'checks_failed', 'gteq', '2.5')))).to.deep.equal(['ws-04', 'ws-08']);
    expect(await idSet(ws(filter(0, 'checks_failed', 'lteq', '-1')))).to.deep.equal([]);
    expect(await idSet(ws(filter(0, 'checks_failed', 'gt', '0'), filter(1, 'checks_failed', 'lt', '5')))).to.deep.equal(['ws-02', 'ws-05', 'ws-08']);
  });

  it('runs number values beyond the int64 range that interface §4 accepts (^-?\\d+(\\.\\d+)?$), never failing in DuckDB', async () => {
    // interface §7: bad input never yields a 500; these values are valid, so they must simply compare.
    const big = '99999999999999999999';
    expect(await idSet(ws(filter(0, 'checks_failed', 'is', big)))).to.deep.equal([]);
    expect(await idSet(ws(filter(0, 'checks_failed', 'lt', big)))).to.deep.equal(['ws-01', 'ws-02', 'ws-04', 'ws-05', 'ws-06', 'ws-07', 'ws-08']);
    expect(await idSet(ws(filter(0, 'checks_failed', 'gt', `-${big}`)))).to.deep.equal(['ws-01', 'ws-02', 'ws-04', 'ws-05', 'ws-06', 'ws-07', 'ws-08']);
    expect(await idSet(ws(filter(0, 'checks_failed', 'gteq', '1' + '0'.repeat(400))))).to.deep.equal([]);
  });

  it('is_before / is_after are strict, honour offsets and milliseconds, and never match null', async () => {
    expect(await idSet(ws(filter(0, 'workspace_created_at', 'is_before', '2024-01-01')))).to.deep.equal(['ws-04', 'ws-06', 'ws-07', 'ws-08']);
    expect(await idSet(ws(filter(0, 'workspace_created_at', 'is_after', '2024-01-01')))).to.deep.equal(['ws-02', 'ws-05']);
    expect(await idSet(ws(filter(0, 'workspace_created_at', 'is_after', '2024-01-01T01:00+01:00')))).to.deep.equal(['ws-02', 'ws-05']);
    expect(await idSet(ws(filter(0, 'workspace_created_at', 'is_before', '2024-01-01T00:00:00.0019Z')))).to.deep.equal(['ws-01', 'ws-04', 'ws-06', 'ws-07', 'ws-08']);
    expect(await idSet(ws(filter(0, 'workspace_created_at', 'is_after', '2023-12-31T18:59:59.999-05:00')))).to.deep.equal(['ws-01', 'ws-02', 'ws-05']);
  });

  it('ANDs conditions, also under the same index', async () => {
    expect(await idSet(ws(filter(0, 'workspace_name', 'contains', 'pay'), filter(0, 'drifted', 'is', 'true')))).to.deep.equal(['ws-02']);
  });

  it('orders strings by ASCII fold, then exact code points; - reverses; nulls last; ties by _id ascending', async () => {
    expect(await ids(ws('sort=workspace_name'))).to.deep.equal(['ws-07', 'ws-08', 'ws-06', 'ws-04', 'ws-03', 'ws-05', 'ws-01', 'ws-02', 'ws-00', 'ws-09']);
    expect(await ids(ws('sort=-workspace_name'))).to.deep.equal(['ws-02', 'ws-01', 'ws-05', 'ws-03', 'ws-04', 'ws-06', 'ws-08', 'ws-07', 'ws-00', 'ws-09']);
  });

  it('orders versions by precedence, then exact string; non-versions after; nulls last, in both directions', async () => {
    // 1.10 and 1.10.0 have equal precedence: the exact string breaks the tie, in the requested direction.
    expect(await ids(ws('sort=workspace_terraform_version'))).to.deep.equal(['ws-07', 'ws-02', 'ws-04', 'ws-06', 'ws-01', 'ws-08', 'ws-03', 'ws-00', 'ws-05', 'ws-09']);
    expect(await ids(ws('sort=-workspace_terraform_version'))).to.deep.equal(['ws-01', 'ws-06', 'ws-04', 'ws-02', 'ws-07', 'ws-03', 'ws-08', 'ws-00', 'ws-05', 'ws-09']);
  });

  it('orders booleans false before true and numbers numerically, nulls last, with _id ascending ties', async () => {
    expect(await ids(ws('sort=drifted'))).to.deep.equal(['ws-01', 'ws-04', 'ws-06', 'ws-08', 'ws-02', 'ws-05', 'ws-07', 'ws-00', 'ws-03', 'ws-09']);
    expect(await ids(ws('sort=-drifted,-checks_failed'))).to.deep.equal(['ws-02', 'ws-05', 'ws-07', 'ws-04', 'ws-08', 'ws-01', 'ws-06', 'ws-00', 'ws-03', 'ws-09']);
  });

  it('pages with LIMIT / OFFSET, past the end empty', async () => {
    const page = async (n: number) => (await run(compile(`type=workspaces&sort=workspace_name&page[size]=3&page[number]=${n}`).page)).map((r) => r[0]);
    expect(await page(1)).to.deep.equal(['ws-07', 'ws-08', 'ws-06']);
    expect(await page(2)).to.deep.equal(['ws-04', 'ws-03', 'ws-05']);
    expect(await page(4)).to.deep.equal(['ws-09']);
    expect(await page(5)).to.deep.equal([]);
  });

  it('returns JSON-ready values: datetimes with milliseconds and +00:00, null as null', async () => {
    const rows = await run(compile(`type=workspaces&fields=workspace_created_at,drifted,checks_failed,vcs_repo_identifier&sort=workspace_name&${filter(0, 'workspace_name', 'is', 'PAYROLL')}&${filter(0, 'workspace_name', 'is', 'café', 1)}`).page);
    expect(rows).to.deep.equal([
      ['ws-03', null, null, null, ''],
      ['ws-02', '2024-01-01T00:00:00.001+00:00', true, 2n, null],
    ]);
  });

  it('exports every value as a string, null as empty, datetimes in whole seconds with +00:00', async () => {
    const rows = await run(compile(`type=workspaces&fields=workspace_name,drifted,checks_failed,workspace_created_at,vcs_repo_identifier,workspace_terraform_version&sort=-workspace_name&${filter(0, 'workspace_name', 'is', 'payments-prod')}&${filter(0, 'workspace_name', 'is', 'café', 1)}&${filter(0, 'workspace_name', 'is', 'CAFÉ-ops', 2)}`).export);
    expect(rows).to.deep.equal([
      ['payments-prod', 'false', '0', '2024-01-01T00:00:00+00:00', 'github.com/acme/Payments', '1.10.0'],
      ['café', '', '', '', '', 'latest'],
      ['CAFÉ-ops', 'false', '5', '2023-12-31T23:59:59+00:00', 'gitlab.com/x_y', '1.10.0-rc.1'],
    ]);
  });

  it('runs every view-independent statement shape without error for every field and operator', async () => {
    // Every operator the schema allows for every workspaces field, in one query: it must bind and run.
    const parts: string[] = ['type=workspaces'];
    let i = 0;
    const sample = { string: 'a', number: '1', boolean: 'true', datetime: '2024-01-01T00:00Z' } as const;
    const ops = { string: ['is', 'is_not', 'contains', 'does not contain', 'is_empty', 'is_not_empty'], number: ['is', 'is_not', 'gt', 'lt', 'gteq', 'lteq', 'is_empty', 'is_not_empty'], boolean: ['is', 'is_empty', 'is_not_empty'], datetime: ['is_before', 'is_after', 'is_empty', 'is_not_empty'] } as const;
    const all: string[] = [];
    for (const f of workspaces.fields) for (const op of ops[f.type]) all.push(filter(i++ % 7, f.name, op, sample[f.type]));
    // split into chunks of ≤ 50 conditions; each must run
    // Every field is also a sort key somewhere, at most 20 keys per query.
    const names = workspaces.fields.map((f) => f.name);
    for (let k = 0, chunk = 0; k < all.length; k += 40, chunk++) {
      const start = (chunk * 20) % names.length;
      const keys = names.slice(start, start + 20);
      const c = compile([...parts, ...all.slice(k, k + 40), `sort=${keys.join(',')}`].join('&'));
      expect(await run(c.count)).to.have.length(1);
      await run(c.page);
      await run(c.export);
    }
  });
});
