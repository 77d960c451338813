// compile-history.ts and snapshot-choice.ts without a database: values are bound, never spliced; the
// relations come from the targets; the choice of snapshots follows docs/history.md §3–4.
import { expect } from 'chai';
import { ApiError } from '../../src/errors.js';
import { changesColumns, compileChanges, compileNotificationCheck, compileTrend } from '../../src/query/compile-history.js';
import { rowJsonSql, type CompileTarget } from '../../src/query/compile.js';
import { parseQueryParameters } from '../../src/query/parse-query.js';
import { decodeQueryString, encodeStrict } from '../../src/query/query-string.js';
import { chooseChangePair, chooseSnapshot, datetimeParameter } from '../../src/query/snapshot-choice.js';

const query = (raw: string) => parseQueryParameters('terraform', decodeQueryString(raw)).query;
const target = (relation: string, organization = 'acme'): CompileTarget => ({ relation, organization, rowJson: true });
const EVIL = "O'Reilly'); DROP TABLE x; --";
const evilFilter = `${encodeStrict('filter[0][workspace_name][contains][0]')}=${encodeStrict(EVIL)}`;

describe('compileChanges', () => {
  const q = query(`type=workspaces&${evilFilter}&sort=-workspace_updated_at&page[size]=5&page[number]=3`);
  const compiled = compileChanges(q, target('"a"."workspaces"'), target('"b"."workspaces"'));

  it('binds every client value and the organization, twice (once per snapshot), and splices none', () => {
    for (const statement of [compiled.page, compiled.export]) {
      expect(statement.sql).to.not.include('Reilly');
      expect(statement.params.filter((p) => p === EVIL.toLowerCase() || p === EVIL)).to.have.length(2);
      expect(statement.params.filter((p) => p === 'acme')).to.have.length(2);
      expect(statement.sql.split('?').length - 1).to.equal(statement.params.length);
      expect(statement.sql).to.include('"a"."workspaces"').and.include('"b"."workspaces"');
    }
    // page[size]=5, page 3: LIMIT 5 OFFSET 10, bound.
    expect(compiled.page.params.slice(-2)).to.deep.equal([5n, 10n]);
  });

  it('compares rows by their stored JSON and names changed fields in alphabetical order', () => {
    expect(compiled.page.sql).to.include('f."_json" <> t."_json"');
    const names = [...compiled.page.sql.matchAll(/THEN '([a-z_]+)' END/g)].map((m) => m[1]!);
    expect(names).to.deep.equal([...names].sort());
    expect(names).to.include('workspace_terraform_version').and.include('drifted');
    expect(names).to.have.length(q.view.fields.length);
  });

  it('orders by the query\'s sort on the merged row, then the row id', () => {
    expect(compiled.page.sql).to.match(/ORDER BY "workspace_updated_at" DESC NULLS LAST, "_id" ASC/);
    expect(compiled.export.sql).to.match(/ORDER BY "workspace_updated_at" DESC NULLS LAST, "_id" ASC/);
  });

  it('computes the row JSON of a snapshot that does not store it with the loader\'s own expression', () => {
    const mixed = compileChanges(q, { relation: '"old"."workspaces"', organization: 'acme' }, target('"new"."workspaces"'));
    expect(mixed.page.sql).to.include(`WITH f AS (SELECT "_id", ${rowJsonSql(q.view)} AS "_json", `);
    expect(mixed.page.sql).to.include('t AS (SELECT "_id", "_json", ');
  });

  it('names the CSV columns change, changed_fields, then each field and its previous value', () => {
    const two = query('type=providers&fields=version,name').fields;
    expect(changesColumns(two).join(',')).to.equal('change,changed_fields,version,previous_version,name,previous_name');
  });
});

describe('compileTrend', () => {
  it('counts (and sums) each snapshot in order, with every value bound', () => {
    const q = query(`type=workspaces&${evilFilter}`);
    const sums = [q.view.field('resource_count')!, q.view.field('checks_failed')!];
    const statement = compileTrend(q, [target('"s1"."workspaces"'), target('"s2"."workspaces"'), target('"s3"."workspaces"')], sums);
    expect(statement.sql).to.not.include('Reilly');
    expect(statement.params).to.deep.equal(['acme', EVIL.toLowerCase(), 'acme', EVIL.toLowerCase(), 'acme', EVIL.toLowerCase()]);
    expect(statement.sql.match(/SELECT (\d) AS "_point"/g)).to.deep.equal(['SELECT 0 AS "_point"', 'SELECT 1 AS "_point"', 'SELECT 2 AS "_point"']);
    expect(statement.sql).to.include('sum("resource_count")').and.include('sum("checks_failed")');
    expect(statement.sql.trimEnd()).to.match(/ORDER BY "_point"$/);
  });
});

describe('choosing snapshots', () => {
  const retained = [
    { id: 's1', loadedAt: '2026-11-20T10:00:00.000Z' },
    { id: 's2', loadedAt: '2026-11-21T10:00:00.000Z' },
    { id: 's3', loadedAt: '2026-11-22T10:00:00.000Z' },
  ];
  const params = (o: Record<string, string>) => new Map(Object.entries(o));
  const refusal = (fn: () => unknown) => {
    try { fn(); } catch (e) { expect(e).to.be.instanceOf(ApiError); return { status: (e as ApiError).status, parameter: (e as ApiError).source?.parameter }; }
    throw new Error('not refused');
  };

  it('takes an id or the newest snapshot loaded at or before as_of, in any offset', () => {
    expect(chooseSnapshot(params({}), retained)).to.equal(undefined);
    expect(chooseSnapshot(params({ snapshot: 's2' }), retained)!.id).to.equal('s2');
    expect(chooseSnapshot(params({ as_of: '2026-11-21T10:00:00Z' }), retained)!.id).to.equal('s2');
    expect(chooseSnapshot(params({ as_of: '2026-11-21T09:59:59.999Z' }), retained)!.id).to.equal('s1');
    expect(chooseSnapshot(params({ as_of: '2026-11-21T07:30:00-02:30' }), retained)!.id).to.equal('s2');
    expect(chooseSnapshot(params({ as_of: '2030-01-01' }), retained)!.id).to.equal('s3');
  });

  it('refuses both at once, unknown ids, bad datetimes and times before every snapshot, naming the parameter', () => {
    expect(refusal(() => chooseSnapshot(params({ snapshot: 's1', as_of: '2030-01-01' }), retained))).to.deep.equal({ status: 400, parameter: 'as_of' });
    expect(refusal(() => chooseSnapshot(params({ snapshot: 's9' }), retained))).to.deep.equal({ status: 400, parameter: 'snapshot' });
    expect(refusal(() => chooseSnapshot(params({ as_of: '2026-11-20' }), retained))).to.deep.equal({ status: 400, parameter: 'as_of' });
    expect(refusal(() => chooseSnapshot(params({ as_of: 'now' }), retained))).to.deep.equal({ status: 400, parameter: 'as_of' });
    expect(refusal(() => datetimeParameter('since', '2026-13-01'))).to.deep.equal({ status: 400, parameter: 'since' });
  });

  it('pairs `to` (default: current) with the snapshot before it, and refuses a `from` that is not older', () => {
    const current = retained[2]!;
    expect(chooseChangePair(params({}), retained, current)).to.deep.equal({ from: retained[1], to: retained[2] });
    expect(chooseChangePair(params({ to: 's2' }), retained, current)).to.deep.equal({ from: retained[0], to: retained[1] });
    expect(chooseChangePair(params({ from: 's1' }), retained, current)).to.deep.equal({ from: retained[0], to: retained[2] });
    expect(chooseChangePair(params({ to_as_of: '2026-11-21T12:00:00Z' }), retained, current).to.id).to.equal('s2');
    expect(refusal(() => chooseChangePair(params({ to: 's1' }), retained, current))).to.deep.equal({ status: 400, parameter: 'from' });
    expect(refusal(() => chooseChangePair(params({ from: 's3' }), retained, current))).to.deep.equal({ status: 400, parameter: 'from' });
    expect(refusal(() => chooseChangePair(params({ from: 's2', to: 's1' }), retained, current))).to.deep.equal({ status: 400, parameter: 'from' });
    expect(refusal(() => chooseChangePair(params({ from: 's1', from_as_of: '2030-01-01' }), retained, current))).to.deep.equal({ status: 400, parameter: 'from_as_of' });
  });
});

describe('compileNotificationCheck', () => {
  const q = query(`type=workspaces&${evilFilter}&sort=workspace_name`);
  const resourceCount = q.view.fields.find((f) => f.name === 'resource_count')!;
  const compiled = compileNotificationCheck(q, target('"a"."workspaces"'), target('"b"."workspaces"'), [{ kind: 'sum', field: resourceCount }, { kind: 'count' }], 20);

  it('binds every client value, the organization and the row limit, and splices none', () => {
    for (const statement of [compiled.counts, compiled.rows]) {
      expect(statement.sql).to.not.include('Reilly');
      expect(statement.params.filter((p) => p === EVIL.toLowerCase() || p === EVIL)).to.have.length(2);
      expect(statement.params.filter((p) => p === 'acme')).to.have.length(2);
      expect(statement.sql.split('?').length - 1).to.equal(statement.params.length);
    }
    expect(compiled.rows.params.at(-1)).to.equal(20n);
  });

  it('classifies by where the filter matches, sums the field on each side, and names the identifying fields', () => {
    expect(compiled.counts.sql).to.include('WHEN coalesce(t."_match", false) AND NOT coalesce(f."_match", false) THEN \'added\'');
    expect(compiled.counts.sql).to.include(`sum("_from_${resourceCount.column}") FILTER (WHERE "_in_from")`);
    expect(compiled.counts.sql).to.include(`sum("_to_${resourceCount.column}") FILTER (WHERE "_in_to")`);
    expect(compiled.identifying.map((f) => f.name)).to.deep.equal(q.view.identifying);
    expect(compiled.counts.sql).to.include('count(*) FILTER (WHERE "_in_from"), count(*) FILTER (WHERE "_in_to")');
    const none = compileNotificationCheck(q, target('"a"."workspaces"'), target('"b"."workspaces"'), [], 5);
    expect(none.counts.sql).to.not.include('FILTER (WHERE "_in_from")');
  });
});
