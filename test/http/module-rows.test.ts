// interface §3: provider and module rows are the same row only when every key is equal (workspace, name,
// source, version, registry_type; empty and absent are both null). Rows that share workspace, source and
// version but differ in name or registry type are all kept: the loader once kept one of them, so the
// `modules` view lost rows and undercounted workspaces. The expected answers are computed here from the
// source rows by the rule, never from the server.
import { expect } from 'chai';
import { writeSmallSource, ORG, workspaces } from '../fixtures/small-source.js';
import { joinList, opt, rowId } from '../helpers/fixture-model.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';

type Use = { workspace_id: string; name: string; source: string; version?: string; registry_type?: string; curated?: boolean };
const VPC = 'registry.terraform.io/terraform-aws-modules/vpc/aws';
const AWS = 'registry.terraform.io/hashicorp/aws';

const MODULES: Use[] = [
  { workspace_id: 'ws-aaa1', name: 'vpc', source: VPC, version: '5.5.1', registry_type: 'public' },
  { workspace_id: 'ws-aaa1', name: 'network', source: VPC, version: '5.5.1', registry_type: 'public' }, // another name
  { workspace_id: 'ws-aaa2', name: 'vpc', source: VPC, version: '5.5.1', registry_type: 'public' },
  { workspace_id: 'ws-aaa2', name: 'vpc', source: VPC, version: '5.5.1' }, // registry type unknown
  { workspace_id: 'ws-aaa2', name: 'vpc', source: VPC, version: '5.5.1', registry_type: '' }, // the same row as above
  { workspace_id: 'ws-aaa3', name: 'vpc', source: VPC, version: '5.5.1', registry_type: 'private' },
  { workspace_id: 'ws-aaa3', name: 'vpc', source: VPC, version: '5.5.1', registry_type: 'public' },
  { workspace_id: 'ws-aaa4', name: 'vpc', source: VPC, version: '5.5.1', registry_type: 'public' },
  { workspace_id: 'ws-aaa5', name: 'vpc', source: VPC, version: '5.5.1', registry_type: 'public' },
  { workspace_id: 'ws-aaa5', name: 'vpc', source: VPC, version: '5.5.1', registry_type: 'public', curated: true }, // a duplicate but for curated
  { workspace_id: 'ws-aaa1', name: 'app', source: './modules/app' },
  { workspace_id: 'ws-aaa1', name: 'app', source: './modules/app', version: '' }, // the same row as above
  { workspace_id: 'ws-aaa3', name: 'app', source: './modules/app', registry_type: 'private', curated: false },
  { workspace_id: 'ws-bbb1', name: 'vpc', source: VPC, version: '5.5.1', registry_type: 'public', curated: true }, // another organization
];
const PROVIDERS: Use[] = [
  { workspace_id: 'ws-aaa1', name: 'aws', source: AWS, version: '5.31.0', registry_type: 'public' },
  { workspace_id: 'ws-aaa1', name: 'aws', source: AWS, version: '5.31.0' },
  { workspace_id: 'ws-aaa1', name: 'aws', source: AWS, version: '5.31.0', registry_type: 'private', curated: true },
  { workspace_id: 'ws-aaa2', name: 'amazon', source: AWS, version: '5.31.0', registry_type: 'public' },
  { workspace_id: 'ws-aaa2', name: 'aws', source: AWS, version: '5.31.0', registry_type: 'public' },
  { workspace_id: 'ws-aaa3', name: 'aws', source: AWS, version: '5.31.0', registry_type: 'public' },
];

const NAMES = new Map(workspaces.map((w) => [w.id as string, w.name as string]));
const inOrg = (u: Use) => workspaces.some((w) => w.id === u.workspace_id && w.organization === ORG);

/**
 * The view's rows by interface §3: one per distinct (name, source, version, registry_type); `curated` is no
 * key, and a group is curated when any of its rows is.
 */
function grouped(view: 'providers' | 'modules', uses: Use[]) {
  const groups = new Map<string, { keys: (string | null)[]; ws: Set<string>; curated: boolean }>();
  for (const u of uses.filter(inOrg)) {
    const keys = [u.name, u.source, opt(u.version), opt(u.registry_type)];
    const g = groups.get(JSON.stringify(keys)) ?? { keys, ws: new Set<string>(), curated: false };
    g.ws.add(u.workspace_id);
    g.curated ||= u.curated === true;
    groups.set(JSON.stringify(keys), g);
  }
  return [...groups.values()].map(({ keys, ws, curated }) => ({
    id: rowId(view === 'providers' ? 'prv' : 'mod', ORG, view, keys),
    attributes: {
      curated,
      name: keys[0], 'registry-type': keys[3], source: keys[1], version: keys[2],
      'workspace-count': ws.size, workspaces: joinList([...ws].map((id) => NAMES.get(id))),
    },
  })).sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** The workspaces view's own rule: distinct `<source>@<version>` (or `<source>`) elements. */
function listOf(uses: Use[], workspaceId: string) {
  const list = joinList(uses.filter((u) => u.workspace_id === workspaceId).map((u) => (opt(u.version) ? `${u.source}@${u.version}` : u.source)));
  return { list, count: list === null ? 0 : list.split(', ').length };
}

const ndjson = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

describe('provider and module rows that share workspace, source and version (interface §3)', function () {
  this.timeout(30_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({
      writeSource: (dir) => writeSmallSource(dir, {
        'workspace_modules.ndjson': ndjson(MODULES), 'workspace_providers.ndjson': ndjson(PROVIDERS),
      }),
    });
  });
  after(async () => { await h?.close(); });

  for (const [view, uses] of [['modules', MODULES], ['providers', PROVIDERS]] as const) {
    it(`${view}: every distinct row of the source is a group, with every workspace counted`, async () => {
      const body = await json(await h.explorer(`?type=${view}&page%5Bsize%5D=100`));
      const got = body.data.map((r: any) => ({ id: r.id, attributes: r.attributes })).sort((a: any, b: any) => (a.id < b.id ? -1 : 1));
      expect(got).to.deep.equal(grouped(view, uses));
    });
  }

  it('modules: the module used by all five workspaces counts five, and the variants are rows of their own', async () => {
    const body = await json(await h.explorer(`?type=modules&filter%5B0%5D%5Bsource%5D%5Bis%5D%5B0%5D=${encodeURIComponent(VPC)}&page%5Bsize%5D=100`));
    const rows = body.data.map((r: any) => [r.attributes.name, r.attributes['registry-type'], r.attributes['workspace-count']]);
    expect(rows).to.have.deep.members([['network', 'public', 1], ['vpc', 'public', 5], ['vpc', 'private', 1], ['vpc', null, 1]]);
  });

  it('workspaces: modules and module_count (and providers) still list each <source>@<version> once', async () => {
    const body = await json(await h.explorer('?type=workspaces&fields=external_id,modules,module_count,providers,provider_count&page%5Bsize%5D=100'));
    expect(body.data).to.have.length(5);
    for (const r of body.data) {
      const modules = listOf(MODULES, r.id);
      const providers = listOf(PROVIDERS, r.id);
      expect(r.attributes, r.id).to.deep.equal({
        'external-id': r.id, modules: modules.list, 'module-count': modules.count, providers: providers.list, 'provider-count': providers.count,
      });
    }
    expect(body.data.find((r: any) => r.id === 'ws-aaa1').attributes['module-count']).to.equal(2);
  });

  it('the CSV export holds the same rows', async () => {
    const csv = await (await h.request(`/api/v2/organizations/${ORG}/explorer/export/csv?type=modules&fields=name,registry_type,workspace_count`)).text();
    expect(csv.split('\n').filter(Boolean).slice(1).sort()).to.deep.equal(
      grouped('modules', MODULES).map((r) => `"${r.attributes.name}","${r.attributes['registry-type'] ?? ''}","${r.attributes['workspace-count']}"`).sort(),
    );
  });
});
