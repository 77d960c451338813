// compile-summary.ts and summary.ts without a database: values are bound, never spliced; lists are grouped by
// their stored elements, each in a query of its own; periods come from the compiler's table; the parameters
// are checked before anything is compiled.
import { expect } from 'chai';
import { ApiError } from '../../src/errors.js';
import { createHash } from 'node:crypto';
import { compileSummary, summaryColumns, summaryGroupId } from '../../src/query/compile-summary.js';
import type { CompileTarget } from '../../src/query/compile.js';
import { parseQueryParameters } from '../../src/query/parse-query.js';
import { decodeQueryString, encodeStrict } from '../../src/query/query-string.js';
import { parseSummary } from '../../src/query/summary.js';

const EVIL = "O'Reilly'); DROP TABLE x; --";
const target: CompileTarget = { relation: '"s"."workspaces"', organization: 'acme', organizationKey: 7, listMembers: true };
const summaryOf = (raw: string) => {
  const params = decodeQueryString(raw);
  const rest = new Map([...params].filter(([k]) => !['group_by', 'sum', 'sort'].includes(k)));
  return parseSummary('terraform', parseQueryParameters('terraform', rest).query, params);
};
const placeholders = (sql: string) => sql.split('?').length - 1;

describe('compileSummary', () => {
  const summary = summaryOf(`type=workspaces&${encodeStrict('filter[0][workspace_name][contains][0]')}=${encodeStrict(EVIL)}`
    + `&group_by=tags,${encodeStrict('workspace_created_at:week')},providers&sum=resource_count&sort=-sum_resource_count&page[size]=5&page[number]=3`);
  const compiled = compileSummary(summary, target);

  it('binds every client value and the organization key, and splices none', () => {
    for (const statement of [compiled.page, compiled.export]) {
      expect(statement.sql).to.not.include('Reilly');
      expect(statement.params).to.include(EVIL.toLowerCase());
      expect(statement.params).to.include(7);
      expect(placeholders(statement.sql)).to.equal(statement.params.length);
    }
    // The matching rows are counted apart (lists), so the filter is bound twice in the page.
    expect(compiled.page.params.filter((p) => p === EVIL.toLowerCase())).to.have.length(2);
    // page[size]=5, page 3: LIMIT 5 OFFSET 10, bound, at the end of the statement: the page is its top level.
    expect(compiled.page.params.slice(-2)).to.deep.equal([5n, 10n]);
    expect(compiled.page.sql.trimEnd().endsWith('LIMIT ? OFFSET ?')).to.equal(true);
  });

  it('groups lists by their stored elements, each unnested in a query of its own, never by splitting the text', () => {
    expect(compiled.page.sql).to.include('"tags__m"').and.include('"providers__m"');
    expect(compiled.page.sql.match(/unnest\(/g)).to.have.length(2);
    expect(compiled.page.sql).to.not.match(/string_split|str_split|regexp_split/);
    expect(compiled.page.sql).to.include(`date_trunc('week', "workspace_created_at")`);
  });

  it('orders by the requested keys, then every group field ascending', () => {
    const order = /ORDER BY (.*)\n?$/.exec(compiled.export.sql)![1]!;
    expect(order.startsWith('"_sum0" DESC NULLS LAST')).to.equal(true);
    expect(order.indexOf('"_g0"')).to.be.lessThan(order.indexOf('"_g1"'));
    expect(order.indexOf('"_g1"')).to.be.lessThan(order.indexOf('"_g2"'));
  });

  it('counts the matching rows from the groups when no list can put a row in several', () => {
    const plain = compileSummary(summaryOf('type=workspaces&group_by=project_name'), target);
    expect(plain.page.sql).to.include('sum("_count")');
    expect(plain.page.sql).to.not.include('unnest(');
  });

  it('names a group by the view, each spelling and each CSV value, not by the organization', () => {
    const expected = `sg-${createHash('sha256').update('workspaces\ntags\nenv:prod\nworkspace_created_at:week\n2025-01-06T00:00:00+00:00\nproviders\n').digest('hex').slice(0, 16)}`;
    expect(summaryGroupId(summary, ['env:prod', '2025-01-06T00:00:00+00:00', ''])).to.equal(expected);
    expect(summaryGroupId(summary, ['env:prod', '2025-01-06T00:00:00+00:00', 'x'])).to.not.equal(expected);
  });

  it('writes the CSV header from the group fields without their periods, count and sum_<field>', () => {
    expect(summaryColumns(summary).join(',')).to.equal('tags,workspace_created_at,providers,count,sum_resource_count');
  });
});

describe('parseSummary', () => {
  const fails = (raw: string, parameter: string) => {
    try {
      summaryOf(raw);
    } catch (e) {
      expect(e).to.be.instanceOf(ApiError);
      expect((e as ApiError).status).to.equal(400);
      expect((e as ApiError).source).to.deep.equal({ parameter });
      return;
    }
    expect.fail(`${raw} was accepted`);
  };

  it('refuses a missing, empty, unknown, repeated or fourth group field, and a misused period', () => {
    for (const g of [undefined, '', 'nope', 'tags,tags', 'drifted,tags,providers,modules', 'workspace_created_at', 'drifted:day', 'workspace_created_at:hour']) {
      fails(`type=workspaces${g === undefined ? '' : `&group_by=${encodeStrict(g)}`}`, 'group_by');
    }
  });

  it('refuses a sum that is not a number field, repeated, or a sixth, and a sort key the summary does not have', () => {
    for (const s of ['tags', 'resource_count,resource_count', 'checks_errored,checks_failed,checks_passed,checks_unknown,module_count,provider_count']) {
      fails(`type=workspaces&group_by=tags&sum=${encodeStrict(s)}`, 'sum');
    }
    for (const s of ['drifted', 'sum_resource_count', '', '-']) fails(`type=workspaces&group_by=tags&sort=${encodeStrict(s)}`, 'sort');
  });

  it('sorts by -count, then each group field ascending, unless told otherwise', () => {
    expect(summaryOf('type=workspaces&group_by=tags,drifted').sort).to.deep.equal([
      { by: 'count', descending: true }, { by: 'group', index: 0, descending: false }, { by: 'group', index: 1, descending: false },
    ]);
  });
});
