// Summaries over HTTP (docs/summaries.md). The fixture plus three workspaces made for periods and lists: a
// week across a year's end, months across the suite zone's daylight-saving changes (America/St_Johns: the
// UTC month differs from the local one), a tag that itself holds ", ", and a project whose every
// resource_count is null. Every expected group is computed from the source rows (helpers/summary-model.ts).
import { expect } from 'chai';
import { join } from 'node:path';
import * as fx from '../fixtures/small-source.js';
import { CONTRACT } from '../helpers/contract-fields.js';
import { aggregateModel, FIXTURE, resourceRows, workspaceLists, workspaceModel, type Sources, type Src } from '../helpers/fixture-model.js';
import { clientQuery, json, startHarness, type Harness } from '../helpers/harness.js';
import { expectedSummary, expectedSummaryCsv, type SummaryAsk, type SummaryRow } from '../helpers/summary-model.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';

const ORG = fx.ORG;
const PROJECT = { id: 'prj-sum', organization: ORG, name: 'summaries' };
const EXTRA: Src[] = [
  { id: 'ws-sum1', organization: ORG, project_id: 'prj-sum', name: 'week-across-new-year', created_at: '2025-01-02T10:00:00Z', updated_at: '2025-01-02T10:00:00Z',
    engine_version: '1.10.0', tags: ['env:prod', 'a, b', ''], current_rum_count: 3 },
  // 22:30 on 31 March in St. John's (daylight time since 9 March): April in UTC.
  { id: 'ws-sum2', organization: ORG, project_id: 'prj-sum', name: 'april-in-utc', created_at: '2025-04-01T01:00:00Z', updated_at: '2025-04-01T01:00:00Z',
    engine_version: '1.5.7', tags: ['a, b'], current_rum_count: 5 },
  // 23:30 on 31 October in St. John's (daylight time until 2 November): November in UTC.
  { id: 'ws-sum3', organization: ORG, project_id: 'prj-sum', name: 'november-in-utc', created_at: '2025-11-01T02:00:00Z', updated_at: '2025-11-01T02:00:00Z' },
];
const EXTRA_PROVIDERS: Src[] = [
  { workspace_id: 'ws-sum1', name: 'aws', source: 'registry.terraform.io/hashicorp/aws', version: '5.31.0', registry_type: 'public' },
  { workspace_id: 'ws-sum1', name: 'odd', source: 'example.com/acme/odd', version: '1.0.0', registry_type: 'private' },
];
const SOURCES: Sources = {
  workspaces: [...FIXTURE.workspaces, ...EXTRA],
  providers: [...FIXTURE.providers, ...EXTRA_PROVIDERS],
  modules: FIXTURE.modules,
  projects: [...FIXTURE.projects, PROJECT],
};
const ndjson = (rows: Src[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
function writeSource(dir: string, sources: Sources): void {
  fx.writeSmallSource(dir, {
    'projects.ndjson': ndjson(sources.projects),
    'workspaces.ndjson': ndjson(sources.workspaces),
    'workspace_providers.ndjson': ndjson(sources.providers),
  });
}

/** Each view's rows of acme-corp as a summary sees them. */
function rowsOf(sources: Sources): Record<string, SummaryRow[]> {
  const aggregate = (view: 'tf_versions' | 'providers' | 'modules') =>
    aggregateModel(view, ORG, sources).map((r) => ({ attributes: r.attributes, lists: { workspaces: r.workspaces } }));
  return {
    workspaces: sources.workspaces.filter((w) => w.organization === ORG).map((w) => ({ attributes: workspaceModel(w, sources), lists: workspaceLists(w, sources) })),
    tf_versions: aggregate('tf_versions'),
    providers: aggregate('providers'),
    modules: aggregate('modules'),
    resources: resourceRows(ORG).map((r) => ({ attributes: r.attributes, lists: {} })),
  };
}
const ROWS = rowsOf(SOURCES);

const params = (ask: SummaryAsk, extra: Record<string, string> = {}) => ({
  type: ask.view, group_by: ask.groupBy.join(','), ...(ask.sum ? { sum: ask.sum.join(',') } : {}), ...(ask.sort ? { sort: ask.sort.join(',') } : {}), ...extra,
});

describe('summaries over HTTP', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => { h = await startHarness({ writeSource: (dir) => writeSource(dir, SOURCES) }); });
  after(async () => { await h?.close(); });

  async function summary(ask: SummaryAsk, extra: Record<string, string> = {}, path = '/summary'): Promise<any> {
    const res = await h.explorer(`${path}${clientQuery(params(ask, { 'page[size]': '100', ...extra }))}`);
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).to.equal(200);
    return body;
  }
  const check = async (ask: SummaryAsk, rows = ROWS[ask.view]!) => {
    const body = await summary(ask);
    const expected = expectedSummary(rows, ask);
    expect(body.data, JSON.stringify(ask)).to.deep.equal(expected.map((g) => ({ ...g, type: 'explorer-summary-groups' })));
    expect(body.meta.groups).to.equal(expected.length);
    expect(body.meta.rows).to.equal(rows.length);
    return body;
  };

  it('groups every view by each of its fields, one at a time, datetimes by every period', async () => {
    for (const [view, fields] of Object.entries(CONTRACT)) {
      for (const [field, type] of Object.entries(fields)) {
        const spellings = type === 'datetime' ? ['day', 'week', 'month', 'year'].map((p) => `${field}:${p}`) : [field];
        for (const g of spellings) await check({ view, groupBy: [g] });
      }
    }
  });

  it('groups a list field by the elements it was joined from: an element holding ", " stays whole', async () => {
    const body = await check({ view: 'workspaces', groupBy: ['tags'] });
    const tags = body.data.map((g: any) => g.attributes.tags);
    expect(tags).to.include('a, b');
    expect(tags).not.to.include('a');
    expect(body.data.find((g: any) => g.attributes.tags === 'a, b').attributes.count).to.equal(2);
    // A row without tags counts once, in the null group; rows with several count in each.
    expect(body.data.find((g: any) => g.attributes.tags === null).attributes.count).to.equal(4);
  });

  it('puts a week across a year\'s end in one ISO week, and months by UTC, not by the zone the server runs in', async () => {
    const weeks = (await check({ view: 'workspaces', groupBy: ['workspace_created_at:week'] })).data;
    // 2024-12-31 (network-core) and 2025-01-02 are both in the week that starts on Monday 2024-12-30.
    expect(weeks.find((g: any) => g.attributes['workspace-created-at'] === '2024-12-30T00:00:00.000+00:00').attributes.count).to.equal(2);
    const months = (await check({ view: 'workspaces', groupBy: ['workspace_created_at:month'] })).data.map((g: any) => g.attributes['workspace-created-at']);
    expect(months).to.include.members(['2025-04-01T00:00:00.000+00:00', '2025-11-01T00:00:00.000+00:00']);
    expect(months).not.to.include.members(['2025-03-01T00:00:00.000+00:00', '2025-10-01T00:00:00.000+00:00']);
  });

  it('combines two and three fields, two lists in every combination of their elements', async () => {
    await check({ view: 'workspaces', groupBy: ['project_name', 'tags'] });
    await check({ view: 'workspaces', groupBy: ['tags', 'providers'] });
    await check({ view: 'workspaces', groupBy: ['project_name', 'drifted', 'workspace_created_at:year'] });
    await check({ view: 'workspaces', groupBy: ['providers', 'modules', 'tags'] });
    await check({ view: 'providers', groupBy: ['name', 'workspaces'] });
    await check({ view: 'resources', groupBy: ['workspace_name', 'provider_type', 'billable_rum'] });
  });

  it('sums number fields per group, null where every value is null', async () => {
    const body = await check({ view: 'workspaces', groupBy: ['project_name'], sum: ['resource_count', 'current_rum_count', 'checks_failed'] });
    const own = body.data.find((g: any) => g.attributes['project-name'] === 'summaries');
    expect(own.attributes.sums).to.deep.equal({ resource_count: null, current_rum_count: 8, checks_failed: 0 });
    await check({ view: 'tf_versions', groupBy: ['workspaces'], sum: ['workspace_count'] });
  });

  it('sorts by count, by group fields and by sums, either way, nulls last, ties by the group fields', async () => {
    const sorts = [['count'], ['-count'], ['project_name'], ['-project_name'], ['sum_resource_count'], ['-sum_resource_count'],
      ['-sum_current_rum_count', 'tags'], ['tags', '-count'], ['-workspace_terraform_version']];
    for (const sort of sorts) {
      await check({ view: 'workspaces', groupBy: ['project_name', 'tags', 'workspace_terraform_version'], sum: ['resource_count', 'current_rum_count'], sort });
    }
    await check({ view: 'workspaces', groupBy: ['workspace_terraform_version'], sort: ['workspace_terraform_version'] });
    await check({ view: 'providers', groupBy: ['version'], sort: ['-version'] });
  });

  it('pages the groups, with links that repeat every parameter and meta that counts rows and groups', async () => {
    const ask: SummaryAsk = { view: 'workspaces', groupBy: ['tags', 'project_name'], sum: ['resource_count'] };
    const all = expectedSummary(ROWS.workspaces!, ask);
    const res = await h.explorer(`/summary${clientQuery({ ...params(ask), 'page[number]': '2', 'page[size]': '3' })}`);
    const body = await json(res);
    expect(body.data.map((g: any) => g.id)).to.deep.equal(all.slice(3, 6).map((g) => g.id));
    expect(body.meta).to.deep.equal({
      pagination: { 'current-page': 2, 'page-size': 3, 'next-page': 3, 'prev-page': 1, 'total-pages': Math.ceil(all.length / 3), 'total-count': all.length },
      rows: ROWS.workspaces!.length,
      groups: all.length,
    });
    const next = new URL(body.links.next);
    expect(Object.fromEntries(next.searchParams)).to.deep.equal({ type: 'workspaces', group_by: 'tags,project_name', sum: 'resource_count', 'page[number]': '3', 'page[size]': '3' });
    const past = await summary(ask, { 'page[number]': '99' });
    expect(past.data).to.deep.equal([]);
    expect(past.meta.groups).to.equal(all.length);
  });

  it('summarizes only the rows the filters select', async () => {
    const filtered = ROWS.workspaces!.filter((r) => r.attributes.project_name === 'Network' || r.attributes.project_name === 'summaries');
    const body = await summary({ view: 'workspaces', groupBy: ['tags'] }, { 'filter[0][project_name][is][0]': 'Network', 'filter[0][project_name][is][1]': 'summaries' });
    expect(body.data).to.deep.equal(expectedSummary(filtered, { view: 'workspaces', groupBy: ['tags'] }).map((g) => ({ ...g, type: 'explorer-summary-groups' })));
    expect(body.meta.rows).to.equal(filtered.length);
  });

  it('exports every group as CSV, byte for byte', async () => {
    const asks: SummaryAsk[] = [
      { view: 'workspaces', groupBy: ['tags', 'workspace_created_at:month'], sum: ['resource_count', 'current_rum_count'] },
      { view: 'resources', groupBy: ['provider_type'], sort: ['provider_type'] },
      { view: 'providers', groupBy: ['workspaces', 'curated'], sum: ['workspace_count'], sort: ['-sum_workspace_count'] },
    ];
    for (const ask of asks) {
      const res = await h.explorer(`/summary/export/csv${clientQuery({ ...params(ask), 'page[size]': 'not paged' })}`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/csv/);
      expect(res.headers.get('content-disposition')).to.match(new RegExp(`filename="${ORG}-${ask.view}-summary-\\d{8}T\\d{6}Z\\.csv"`));
      expect(await res.text()).to.equal(expectedSummaryCsv(ask.view, ask, expectedSummary(ROWS[ask.view]!, ask)));
    }
  });

  it('summarizes a saved view\'s rows: its filters, not its fields or sort', async () => {
    const created = await h.request(`/api/v2/organizations/${ORG}/explorer/views`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ data: { name: 'network', query_type: 'workspaces',
        query: { fields: ['workspace_name'], sort: ['-workspace_name'], filter: [{ field: 'project_name', operator: 'is', value: ['Network'] }] } } }),
    });
    const view = await json(created);
    expect(created.status, JSON.stringify(view)).to.equal(201);
    const ask: SummaryAsk = { view: 'workspaces', groupBy: ['workspace_terraform_version'], sum: ['resource_count'] };
    const network = ROWS.workspaces!.filter((r) => r.attributes.project_name === 'Network');
    const body = await summary(ask, {}, `/views/${view.data.id}/summary`);
    expect(body.data).to.deep.equal(expectedSummary(network, ask).map((g) => ({ ...g, type: 'explorer-summary-groups' })));
    const csv = await h.explorer(`/views/${view.data.id}/summary/export/csv${clientQuery(params(ask))}`);
    expect(await csv.text()).to.equal(expectedSummaryCsv('workspaces', ask, expectedSummary(network, ask)));
  });

  it('answers 400 naming the parameter for every wrong group_by, sum and sort', async () => {
    const cases: [Record<string, string>, string, RegExp][] = [
      [{ type: 'workspaces' }, 'group_by', /required/],
      [{ type: 'workspaces', group_by: '' }, 'group_by', /names no field/],
      [{ type: 'workspaces', group_by: 'nope' }, 'group_by', /not a field/],
      [{ type: 'workspaces', group_by: 'tags,tags' }, 'group_by', /once/],
      [{ type: 'workspaces', group_by: 'workspace_created_at:month,workspace_created_at:year' }, 'group_by', /twice/],
      [{ type: 'workspaces', group_by: 'tags,drifted,project_name,providers' }, 'group_by', /At most 3/],
      [{ type: 'workspaces', group_by: 'workspace_created_at' }, 'group_by', /period/],
      [{ type: 'workspaces', group_by: 'workspace_created_at:fortnight' }, 'group_by', /not a period/],
      [{ type: 'workspaces', group_by: 'tags:month' }, 'group_by', /only a datetime/],
      [{ type: 'workspaces', group_by: 'tags', sum: 'tags' }, 'sum', /not a number field/],
      [{ type: 'workspaces', group_by: 'tags', sum: 'resource_count,resource_count' }, 'sum', /twice/],
      [{ type: 'workspaces', group_by: 'tags', sum: 'checks_errored,checks_failed,checks_passed,checks_unknown,current_rum_count,module_count' }, 'sum', /At most 5/],
      [{ type: 'workspaces', group_by: 'tags', sort: 'drifted' }, 'sort', /not a sort key/],
      [{ type: 'workspaces', group_by: 'tags', sort: 'sum_resource_count' }, 'sort', /not a sort key/],
      [{ type: 'workspaces', group_by: 'workspace_created_at:month', sort: 'workspace_created_at:month' }, 'sort', /not a sort key/],
      [{ type: 'workspaces', group_by: 'tags', sort: '' }, 'sort', /names no key/],
      [{ type: 'nope', group_by: 'tags' }, 'type', /not a view/],
      [{ type: 'workspaces', group_by: 'tags', 'filter[0][nope][is][0]': 'x' }, 'filter[0][nope][is][0]', /not a field/],
      [{ type: 'workspaces', group_by: 'tags', 'page[number]': '0' }, 'page[number]', /at least 1/],
    ];
    for (const [query, parameter, detail] of cases) {
      for (const path of ['/summary', '/summary/export/csv']) {
        if (path.endsWith('csv') && parameter.startsWith('page')) continue; // exports ignore paging
        const res = await h.explorer(`${path}${clientQuery(query)}`);
        const body = await json(res);
        expect(res.status, `${path} ${JSON.stringify(query)}: ${JSON.stringify(body)}`).to.equal(400);
        expect(body.errors[0].source).to.deep.equal({ parameter });
        expect(body.errors[0].detail).to.match(detail);
      }
    }
  });

  it('keeps organizations apart', async () => {
    const res = await h.explorer(`/summary${clientQuery({ type: 'workspaces', group_by: 'tags' })}`, h.tokens.otherOrg);
    expect(res.status).to.equal(404);
    const own = await h.request(`/api/v2/organizations/${fx.OTHER_ORG}/explorer/summary${clientQuery({ type: 'workspaces', group_by: 'organization_name' })}`, { token: h.tokens.otherOrg });
    expect((await json(own)).data.map((g: any) => [g.attributes['organization-name'], g.attributes.count])).to.deep.equal([[fx.OTHER_ORG, 1]]);
  });

  it('answers as of an earlier snapshot with snapshot=, and 304 to a client that holds the answer', async () => {
    const ask: SummaryAsk = { view: 'workspaces', groupBy: ['tags'] };
    const before = await summary(ask);
    const first = (await json(await h.explorer('/snapshots'))).data[0].id;
    const later: Sources = { ...SOURCES, workspaces: SOURCES.workspaces.filter((w) => w.id !== 'ws-sum1'), providers: FIXTURE.providers };
    const dir = join(h.dataDir, 'later');
    writeSource(dir, later);
    await loadSnapshot(dir, { dataDir: h.dataDir, memoryLimit: '1GB' });
    let now: any;
    for (let i = 0; i < 100; i++) {
      now = await summary(ask);
      if (JSON.stringify(now.data) !== JSON.stringify(before.data)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(now.data).to.deep.equal(expectedSummary(rowsOf(later).workspaces!, ask).map((g) => ({ ...g, type: 'explorer-summary-groups' })));
    const old = await summary(ask, { snapshot: first });
    expect(old.data).to.deep.equal(before.data);
    const res = await h.explorer(`/summary${clientQuery(params(ask, { 'page[size]': '100' }))}`);
    const again = await h.explorer(`/summary${clientQuery(params(ask, { 'page[size]': '100' }))}`);
    expect(res.headers.get('etag')).to.equal(again.headers.get('etag'));
    const cached = await h.request(`/api/v2/organizations/${ORG}/explorer/summary${clientQuery(params(ask, { 'page[size]': '100' }))}`, { headers: { 'If-None-Match': res.headers.get('etag')! } });
    expect(cached.status).to.equal(304);
  });
});
