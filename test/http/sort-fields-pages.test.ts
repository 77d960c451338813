// Sort, fields, pages, links and JSON formats through the real HTTP endpoint (docs/interface.md;
// interface §2, §3, §5, §6). Expected orders are worked out by hand from the fixture and the rules
// (see the comments); expected rows come from a model of the fixture built by interface §3.
//
// acme-corp's workspaces (test/fixtures/small-source.ts):
//   ws-aaa1 payments-api      tf 1.5.7       state 1.5.7  drifted true   res_drifted 2    checks ok      project payments
//   ws-aaa2 Payments-worker   tf 1.10.0      state 1.9.8  drifted false  res_drifted 0    checks failed  project payments
//   ws-aaa3 Café "core", net  tf 1.10.0-rc1  state null   drifted null   res_drifted null checks ok      project Network
//   ws-aaa4 ÉTL-job           tf latest      state null   drifted null   res_drifted 5    checks errored project Network
//   ws-aaa5 network-core      tf v1.5.7      state 1.5.7  drifted null   res_drifted null checks ok      project Network
// Name order (fold A–Z only, then code points): "café…" (c) < "network-core" (n) < "payments-api" <
// "payments-worker" (p…-a < p…-w) < "Étl-job" (É = U+00C9 sorts after every ASCII letter).
import { expect } from 'chai';
import { FIELDS } from '../helpers/contract-fields.js';
import { clientQuery, json, startHarness, type Harness } from '../helpers/harness.js';
import * as fx from '../fixtures/small-source.js';
import { cmpCodePoints, WS, workspaceModel, PREFIX, rowId, aggregateModel, kebab, resourceRows } from '../helpers/fixture-model.js';


const [a1, a2, a3, a4, a5] = ['ws-aaa1', 'ws-aaa2', 'ws-aaa3', 'ws-aaa4', 'ws-aaa5'];
const DEFAULT_ORDER = [a3, a5, a1, a2, a4];
const ACME = WS.filter((w) => w.organization === fx.ORG);
const MODEL = new Map(ACME.map((w) => [w.id as string, workspaceModel(w)]));
const TFV = aggregateModel('tf_versions');
const PRV = aggregateModel('providers');
const MOD = aggregateModel('modules');
const tfv = (v: string) => TFV.find((r) => r.attributes.version === v)!.id;
const prv = (name: string, version: string, registry: string | null) =>
  PRV.find((r) => r.attributes.name === name && r.attributes.version === version && r.attributes.registry_type === registry)!.id;
const mod = (name: string) => MOD.find((r) => r.attributes.name === name)!.id;
/** Rows that tie on every sort key are ordered by id ascending, in code-point order. */
const byId = (...ids: string[]) => [...ids].sort(cmpCodePoints);

const WORKSPACE_FIELDS = FIELDS.workspaces!;
const ROW_TYPE: Record<string, string> = {
  workspaces: 'visibility-workspace', tf_versions: 'visibility-tf-version', providers: 'visibility-provider-version', modules: 'visibility-module-version',
  resources: 'visibility-resource',
};
const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+00:00$/;

let h: Harness;
let emptyOrgToken: string;

/** GET relative to the server root (the harness sets a rate limit no test reaches). */
const get = (path: string, token?: string): Promise<Response> => h.request(path, { token });
const explorerPath = (org: string) => `/api/v2/organizations/${org}/explorer`;

async function query(q: string, org: string = fx.ORG, token?: string): Promise<any> {
  const res = await get(`${explorerPath(org)}${q}`, token);
  const body = await json(res);
  expect(res.status, `${q}: ${JSON.stringify(body)}`).to.equal(200);
  return body;
}
const ids = async (q: string) => (await query(q)).data.map((r: any) => r.id);

/** interface §5: every byte but A–Z a–z 0–9 - _ . ~ percent-encoded (upper-case hex, space as %20). */
function strict(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~]/.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
/** The link for page `n` carrying the decoded parameters `carried`, keys sorted by their encoded form. */
function link(org: string, carried: [string, string][], n: number, size: number): string {
  const pairs = [...carried, ['page[number]', String(n)], ['page[size]', String(size)]].map(([k, v]) => [strict(k!), strict(v!)] as const);
  pairs.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  return `${h.url}${explorerPath(org)}?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`;
}
function pagination(n: number, size: number, total: number) {
  const pages = Math.max(1, Math.ceil(total / size));
  return {
    'current-page': n, 'page-size': size, 'next-page': n < pages ? n + 1 : null, 'prev-page': n > 1 ? n - 1 : null,
    'total-pages': pages, 'total-count': total,
  };
}
function expectedEnvelope(org: string, carried: [string, string][], n: number, size: number, total: number) {
  const meta = pagination(n, size, total);
  return {
    links: {
      self: link(org, carried, n, size),
      first: link(org, carried, 1, size),
      prev: meta['prev-page'] === null ? null : link(org, carried, meta['prev-page'], size),
      next: meta['next-page'] === null ? null : link(org, carried, meta['next-page'], size),
      last: link(org, carried, meta['total-pages'], size),
    },
    meta: { pagination: meta },
  };
}
const envelope = (body: any) => ({ links: body.links, meta: body.meta });

describe('HTTP explorer: sort, fields, pages, links and formats', function () {
  this.timeout(20_000);

  before(async () => {
    h = await startHarness();
    // The harness has no token for empty-org: issue one in the running service's store (it sees it at once).
    emptyOrgToken = h.tokens.emptyOrg;
  });
  after(async () => {
    await h?.close();
  });

  describe('the model and the hand-worked orders agree with the rules', () => {
    it('default workspace order is the name order: fold A–Z only, then code points', () => {
      const fold = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
      const sorted = [...MODEL.entries()].sort(([, x], [, y]) =>
        cmpCodePoints(fold(String(x.workspace_name)), fold(String(y.workspace_name))) || cmpCodePoints(String(x.workspace_name), String(y.workspace_name)));
      expect(sorted.map(([id]) => id)).to.deep.equal(DEFAULT_ORDER);
    });
    it('the id of the spec\'s example provider row', () => {
      expect(rowId('prv', 'acme-corp', 'providers', ['aws', 'registry.terraform.io/hashicorp/aws', '5.31.0', 'public'])).to.equal('prv-39022641df8fbe25');
      expect(prv('aws', '5.31.0', 'public')).to.equal('prv-39022641df8fbe25');
    });
    it('the field lists are alphabetical by snake_case name', () => {
      for (const list of Object.values(FIELDS)) expect(list).to.deep.equal([...list].sort(cmpCodePoints));
      expect(Object.keys(MODEL.get(a1)!)).to.deep.equal(WORKSPACE_FIELDS);
    });
  });

  describe('rows, ids, types and formats', () => {
    it('workspaces: every row equals the fixture model, with kebab-case attributes in alphabetical order', async () => {
      const res = await get(`${explorerPath(fx.ORG)}?type=workspaces`);
      expect(res.headers.get('content-type')).to.match(/^application\/vnd\.api\+json(;|$)/);
      expect(res.headers.get('x-explorer-snapshot')).to.be.a('string').and.not.equal('');
      const body = await json(res);
      expect(body.data).to.deep.equal(DEFAULT_ORDER.map((id) => ({ id, type: 'visibility-workspace', attributes: kebab(MODEL.get(id)!) })));
      for (const row of body.data) {
        expect(Object.keys(row)).to.deep.equal(['id', 'type', 'attributes']);
        expect(Object.keys(row.attributes)).to.deep.equal(WORKSPACE_FIELDS.map((f) => f.replace(/_/g, '-')));
        expect(row.id).to.equal(row.attributes['external-id']).and.match(/^ws-/);
      }
    });
    it('resources: every row equals the model, id = res-<sha256 prefix of organization, view, workspace id, address>', async () => {
      const body = await query('?type=resources');
      const model = resourceRows();
      expect(body.data).to.have.length(model.length);
      for (const row of body.data) {
        const m = model.find((r) => r.id === row.id);
        expect(m, `row ${row.id} is not in the model`).to.not.equal(undefined);
        expect(row).to.deep.equal({ id: m!.id, type: 'visibility-resource', attributes: kebab(m!.attributes) });
        expect(Object.keys(row.attributes)).to.deep.equal(FIELDS.resources!.map((f) => f.replace(/_/g, '-')));
      }
      // The rules the model encodes, spelled out once on the fixture's own rows.
      const by = (address: string, ws = 'ws-aaa1') => body.data.find((r: any) => r.attributes.address === address && r.attributes['workspace-external-id'] === ws).attributes;
      expect(by('aws_instance.web[0]')['provider-name']).to.equal('hashicorp/aws');
      expect(by('terraform_data.marker')).to.include({ 'provider-name': 'terraform.io/builtin/terraform', 'module-name': 'root' }); // module ''
      expect(by('Random_id.Suffix')['provider-name']).to.equal('Registry.terraform.io/hashicorp/random'); // case-sensitive prefix
      expect(by('module.app.internal_thing.x')['provider-name']).to.equal('registry.terraform.io/acme/internal'); // one prefix only
      expect(by('module.vpc.aws_subnet.private["a,b"]')).to.include({ 'module-name': 'module.vpc', 'source-type': 'run', 'source-id': 'run-r1' });
      expect(by('aws_vpc.main', 'ws-aaa3')).to.include({ 'source-type': 'local', 'source-id': null, 'organization-external-id': 'org-AcmeCorp1' });
      expect(by('module.vpc.aws_subnet.private["a,b"]')['source-updated-at']).to.equal('2024-05-06T07:08:09.500+00:00'); // +02:00 in the source
    });
    for (const view of ['tf_versions', 'providers', 'modules'] as const) {
      it(`${view}: every row equals the model, id = ${PREFIX[view]}-<sha256 prefix>, type ${ROW_TYPE[view]}`, async () => {
        const res = await get(`${explorerPath(fx.ORG)}?type=${view}`);
        expect(res.headers.get('content-type')).to.match(/^application\/vnd\.api\+json(;|$)/);
        expect(res.headers.get('x-explorer-snapshot')).to.be.a('string').and.not.equal('');
        const body = await json(res);
        const model = aggregateModel(view);
        expect(body.data).to.have.length(model.length);
        for (const row of body.data) {
          const m = model.find((r) => r.id === row.id);
          expect(m, `row ${row.id} is not in the model`).to.not.equal(undefined);
          expect(row).to.deep.equal({ id: m!.id, type: ROW_TYPE[view], attributes: kebab(m!.attributes) });
          expect(Object.keys(row.attributes)).to.deep.equal(FIELDS[view]!.map((f) => f.replace(/_/g, '-')));
          expect(row.id).to.match(new RegExp(`^${PREFIX[view]}-[0-9a-f]{16}$`));
        }
      });
    }
    it('the spec\'s example id prv-39022641df8fbe25 appears in the providers view', async () => {
      const body = await query('?type=providers');
      const row = body.data.find((r: any) => r.id === 'prv-39022641df8fbe25');
      expect(row?.attributes).to.deep.equal({
        curated: true, name: 'aws', 'registry-type': 'public', source: 'registry.terraform.io/hashicorp/aws', version: '5.31.0',
        'workspace-count': 2, workspaces: 'Café "core", net, payments-api',
      });
    });
    it('datetimes are YYYY-MM-DDTHH:MM:SS.mmm+00:00, converted to UTC, fraction truncated to milliseconds', async () => {
      const body = await query('?type=workspaces');
      const row = (id: string) => body.data.find((r: any) => r.id === id).attributes;
      for (const r of body.data) {
        for (const f of ['workspace-created-at', 'workspace-updated-at', 'current-run-applied-at']) {
          if (r.attributes[f] !== null) expect(r.attributes[f], `${r.id} ${f}`).to.match(DATETIME);
        }
      }
      expect(row(a2)['workspace-updated-at']).to.equal('2023-12-31T22:00:00.000+00:00'); // source 2024-01-01T00:00:00+02:00
      expect(row(a2)['workspace-created-at']).to.equal('2023-02-01T00:00:00.000+00:00'); // source …Z without fraction
      expect(row(a3)['workspace-created-at']).to.equal('2022-06-30T23:59:59.500+00:00'); // source .5Z
      expect(row(a3)['workspace-updated-at']).to.equal('2025-03-04T05:06:07.891+00:00'); // source .891234Z
      expect(row(a1)['current-run-applied-at']).to.equal('2024-05-06T07:08:09.999+00:00'); // not rounded up
    });
    it('absent values are null, never ""', async () => {
      const bodies = await Promise.all(['workspaces', 'tf_versions', 'providers', 'modules', 'resources'].map((v) => query(`?type=${v}`)));
      for (const body of bodies) for (const r of body.data) for (const [k, v] of Object.entries(r.attributes)) expect(v, `${r.id} ${k}`).to.not.equal('');
      const row = (id: string) => bodies[0].data.find((r: any) => r.id === id).attributes;
      expect(row(a2)).to.include({ 'vcs-repo-identifier': null, tags: null, 'current-run-applied-at': null }); // '' and [] in the source
      expect(row(a4)).to.include({ drifted: null, 'resources-undrifted': null, 'state-version-terraform-version': null, 'current-run-status': null, modules: null });
      expect(row(a4)).to.include({ 'resources-drifted': 5, 'module-count': 0, 'checks-passed': 0 });
      const app = bodies[3].data.find((r: any) => r.attributes.name === 'app').attributes;
      expect(app).to.include({ version: null, 'registry-type': null });
      expect(row(a2)['source-module-id']).to.equal(null); // '' in the source
      expect(row(a4)).to.include({ 'resource-count': null, 'current-rum-count': null, 'source-module-id': null }); // absent
      const local = bodies[4].data.find((r: any) => r.attributes.address === 'module.é.null_resource.café').attributes;
      expect(local).to.include({ 'source-id': null, 'terraform-version': null, 'billable-rum': false });
    });
    it('engine-named fields use the configured engine (terraform)', async () => {
      const attrs = (await query('?type=workspaces&fields=workspace_terraform_version,state_version_terraform_version')).data[0].attributes;
      expect(Object.keys(attrs)).to.deep.equal(['workspace-terraform-version', 'state-version-terraform-version']);
      const all = (await query('?type=workspaces')).data[0].attributes;
      expect(all).to.not.have.any.keys('workspace-engine-version', 'state-version-engine-version');
    });
    it('X-Explorer-Snapshot is the same id on every response of one snapshot', async () => {
      const [x, y] = await Promise.all([get(`${explorerPath(fx.ORG)}?type=workspaces`), get(`${explorerPath(fx.ORG)}?type=modules`)]);
      await Promise.all([x.arrayBuffer(), y.arrayBuffer()]);
      expect(x.headers.get('x-explorer-snapshot')).to.be.a('string').and.equal(y.headers.get('x-explorer-snapshot'));
    });
  });

  describe('default sorts', () => {
    it('workspaces: workspace_name', async () => {
      expect(await ids('?type=workspaces')).to.deep.equal(DEFAULT_ORDER);
    });
    it('tf_versions: -version (1.10.0, 1.10.0-rc1, v1.5.7, 1.5.7, then the non-version latest)', async () => {
      expect(await ids('?type=tf_versions')).to.deep.equal(['1.10.0', '1.10.0-rc1', 'v1.5.7', '1.5.7', 'latest'].map(tfv));
    });
    it('providers: name, then -version (0.1.0-beta.11 before 0.1.0-beta.2), then id', async () => {
      expect(await ids('?type=providers')).to.deep.equal([
        ...byId(prv('aws', '5.31.0', 'public'), prv('aws', '5.31.0', null)),
        prv('aws', '4.67.0', 'public'),
        prv('internal', '0.1.0-beta.11', 'private'),
        prv('internal', '0.1.0-beta.2', 'private'),
        prv('random', '3.6.0', 'public'),
      ]);
    });
    it('modules: name, then -version', async () => {
      expect(await ids('?type=modules')).to.deep.equal([mod('app'), mod('vpc')]);
    });
    const res = (address: string, ws = a1) => resourceRows().find((r) => r.attributes.address === address && r.attributes.workspace_external_id === ws)!.id;
    it('resources: workspace_name, then address (folded A–Z), then id', async () => {
      expect(await ids('?type=resources')).to.deep.equal([
        res('aws_vpc.main', a3), res('module.é.null_resource.café', a3), res('aws_vpc.main', a5),
        res('aws_instance.web[0]'), res('aws_instance.web[1]'), res('module.app.internal_thing.x'),
        res('module.vpc.aws_subnet.private["a,b"]'), res('Random_id.Suffix'), res('terraform_data.marker'),
      ]);
    });
    it('resources: sort=terraform_version orders by version precedence, nulls last; -source_updated_at', async () => {
      const web = byId(res('aws_instance.web[0]'), res('aws_instance.web[1]'), res('terraform_data.marker'));
      expect(await ids('?type=resources&sort=terraform_version')).to.deep.equal([
        ...web, res('aws_vpc.main', a3), res('aws_vpc.main', a5), res('module.app.internal_thing.x'),
        res('module.vpc.aws_subnet.private["a,b"]'), ...byId(res('Random_id.Suffix'), res('module.é.null_resource.café', a3)),
      ]);
      expect(await ids('?type=resources&sort=-source_updated_at&fields=address')).to.deep.equal([
        res('aws_vpc.main', a3), res('aws_vpc.main', a5),
        ...byId(res('aws_instance.web[0]'), res('aws_instance.web[1]'), res('terraform_data.marker'), res('Random_id.Suffix'), res('module.app.internal_thing.x')),
        res('module.vpc.aws_subnet.private["a,b"]'), res('module.é.null_resource.café', a3),
      ]);
    });
  });

  describe('explicit sorts on workspaces', () => {
    const SORTS: [string, string[], string][] = [
      ['workspace_name', [a3, a5, a1, a2, a4], 'folded A–Z, then exact; É after ASCII'],
      ['-workspace_name', [a4, a2, a1, a5, a3], ''],
      ['-drifted,workspace_name', [a1, a2, a3, a5, a4], 'true, false, then nulls by name'],
      ['drifted,-workspace_name', [a2, a1, a4, a5, a3], 'false before true, nulls last'],
      ['drifted', [a2, a1, a3, a4, a5], 'nulls tie, broken by id'],
      ['-drifted', [a1, a2, a3, a4, a5], 'nulls last when descending'],
      ['all_checks_succeeded', [a2, a4, a1, a3, a5], 'false before true'],
      ['-all_checks_succeeded', [a1, a3, a5, a2, a4], 'the id tie-break stays ascending'],
      ['project_name', [a3, a4, a5, a1, a2], '"Network" folds before "payments"'],
      ['-project_name', [a1, a2, a3, a4, a5], 'the id tie-break stays ascending'],
      ['project_name,-workspace_name', [a4, a5, a3, a2, a1], ''],
      ['workspace_terraform_version', [a1, a5, a3, a2, a4], '1.5.7 = v1.5.7 by precedence, exact string "1" < "v"; rc1 < release; latest after versions'],
      ['-workspace_terraform_version', [a2, a3, a5, a1, a4], 'reversed, but the non-version latest still after all versions'],
      ['state_version_terraform_version', [a1, a5, a2, a3, a4], 'equal strings tie → id; nulls last'],
      ['-state_version_terraform_version', [a2, a1, a5, a3, a4], 'nulls last when descending, id tie-break ascending'],
      ['resources_drifted', [a2, a1, a4, a3, a5], 'numbers, nulls last'],
      ['-resources_drifted', [a4, a1, a2, a3, a5], 'nulls last when descending'],
      ['resources_drifted,-workspace_name', [a2, a1, a4, a5, a3], ''],
      ['-resources_drifted,-workspace_name', [a4, a1, a2, a5, a3], ''],
      ['checks_passed,workspace_name', [a3, a5, a4, a2, a1], ''],
      ['-checks_passed', [a1, a2, a3, a4, a5], ''],
      ['workspace_created_at', [a4, a3, a1, a2, a5], ''],
      ['workspace_updated_at', [a4, a2, a1, a5, a3], 'ws-aaa2 is 2023-12-31T22:00Z'],
      ['-workspace_updated_at', [a3, a5, a1, a2, a4], ''],
      ['current_run_applied_at,-workspace_name', [a1, a4, a2, a5, a3], 'datetime nulls last'],
      ['-current_run_applied_at,-workspace_name', [a1, a4, a2, a5, a3], 'datetime nulls last when descending'],
      ['-current_run_applied_at,workspace_name', [a1, a3, a5, a2, a4], ''],
      ['tags', [a1, a3, a2, a4, a5], '"env:…" < "pci", nulls last'],
      ['-tags', [a3, a1, a2, a4, a5], ''],
      ['vcs_repo_identifier', [a5, a1, a2, a3, a4], 'acme/network < acme/payments-api; "" in the source is null'],
      ['-vcs_repo_identifier', [a1, a5, a2, a3, a4], ''],
      ['providers', [a4, a3, a2, a5, a1], 'a plain string: …beta.11 < …beta.2; a prefix sorts first'],
      ['-external_id', [a5, a4, a3, a2, a1], ''],
    ];
    for (const [sort, expected, why] of SORTS) {
      it(`sort=${sort} → [${expected.join(', ')}]${why ? ` (${why})` : ''}`, async () => {
        expect(await ids(`?type=workspaces&sort=${sort}`)).to.deep.equal(expected);
      });
    }
    it('the same sorts client-encoded (comma as %2C)', async () => {
      for (const [sort, expected] of SORTS.slice(2, 4)) expect(await ids(clientQuery({ type: 'workspaces', sort }))).to.deep.equal(expected);
    });
  });

  describe('sorts on aggregate views (version order)', () => {
    it('tf_versions sort=version: 1.5.7, v1.5.7, 1.10.0-rc1, 1.10.0, latest', async () => {
      expect(await ids('?type=tf_versions&sort=version')).to.deep.equal(['1.5.7', 'v1.5.7', '1.10.0-rc1', '1.10.0', 'latest'].map(tfv));
    });
    it('tf_versions sort=-version is the default order', async () => {
      expect(await ids('?type=tf_versions&sort=-version')).to.deep.equal(['1.10.0', '1.10.0-rc1', 'v1.5.7', '1.5.7', 'latest'].map(tfv));
    });
    it('tf_versions sort=workspaces (a string): café…, network-core, payments-api, Payments-worker, ÉTL-job', async () => {
      expect(await ids('?type=tf_versions&sort=workspaces')).to.deep.equal(['1.10.0-rc1', 'v1.5.7', '1.5.7', '1.10.0', 'latest'].map(tfv));
    });
    it('providers sort=version: pre-releases by SemVer (beta.2 < beta.11), equal versions by id', async () => {
      expect(await ids('?type=providers&sort=version')).to.deep.equal([
        prv('internal', '0.1.0-beta.2', 'private'), prv('internal', '0.1.0-beta.11', 'private'), prv('random', '3.6.0', 'public'),
        prv('aws', '4.67.0', 'public'), ...byId(prv('aws', '5.31.0', 'public'), prv('aws', '5.31.0', null)),
      ]);
    });
    it('providers sort=-version: reversed, the id tie-break stays ascending', async () => {
      expect(await ids('?type=providers&sort=-version')).to.deep.equal([
        ...byId(prv('aws', '5.31.0', 'public'), prv('aws', '5.31.0', null)), prv('aws', '4.67.0', 'public'), prv('random', '3.6.0', 'public'),
        prv('internal', '0.1.0-beta.11', 'private'), prv('internal', '0.1.0-beta.2', 'private'),
      ]);
    });
    it('providers sort=-workspace_count (the spec\'s example): aws 5.31.0 public first, then ties by id', async () => {
      const rest = PRV.map((r) => r.id).filter((id) => id !== 'prv-39022641df8fbe25');
      expect(await ids(clientQuery({ type: 'providers', sort: '-workspace_count' }))).to.deep.equal(['prv-39022641df8fbe25', ...byId(...rest)]);
    });
    it('providers sort=registry_type / -registry_type: private < public, null last both ways', async () => {
      const privateIds = byId(prv('internal', '0.1.0-beta.2', 'private'), prv('internal', '0.1.0-beta.11', 'private'));
      const publicIds = byId(prv('aws', '5.31.0', 'public'), prv('aws', '4.67.0', 'public'), prv('random', '3.6.0', 'public'));
      const nullIds = [prv('aws', '5.31.0', null)];
      expect(await ids('?type=providers&sort=registry_type')).to.deep.equal([...privateIds, ...publicIds, ...nullIds]);
      expect(await ids('?type=providers&sort=-registry_type')).to.deep.equal([...publicIds, ...privateIds, ...nullIds]);
    });
    it('modules sort=version and sort=-version: the null version of the local module is last both ways', async () => {
      expect(await ids('?type=modules&sort=version')).to.deep.equal([mod('vpc'), mod('app')]);
      expect(await ids('?type=modules&sort=-version')).to.deep.equal([mod('vpc'), mod('app')]);
      expect(await ids('?type=modules&sort=-name')).to.deep.equal([mod('vpc'), mod('app')]);
    });
  });

  describe('fields', () => {
    const keysOf = (body: any) => body.data.map((r: any) => Object.keys(r.attributes));
    it('fields=a,b: attributes are exactly those keys, in that order', async () => {
      const body = await query('?type=workspaces&fields=workspace_name,drifted');
      expect(keysOf(body)).to.deep.equal(DEFAULT_ORDER.map(() => ['workspace-name', 'drifted']));
      expect(body.data.map((r: any) => r.attributes)).to.deep.equal(DEFAULT_ORDER.map((id) => ({ 'workspace-name': MODEL.get(id)!.workspace_name, drifted: MODEL.get(id)!.drifted })));
      expect(body.data.map((r: any) => [r.id, r.type])).to.deep.equal(DEFAULT_ORDER.map((id) => [id, 'visibility-workspace']));
    });
    it('fields[workspaces]=a,b (raw brackets and client-encoded), in the request order', async () => {
      const raw = await query('?type=workspaces&fields[workspaces]=drifted,workspace_name');
      const encoded = await query(clientQuery({ type: 'workspaces', 'fields[workspaces]': 'drifted,workspace_name' }));
      for (const body of [raw, encoded]) expect(keysOf(body)).to.deep.equal(DEFAULT_ORDER.map(() => ['drifted', 'workspace-name']));
    });
    it('duplicates are dropped', async () => {
      expect(keysOf(await query('?type=workspaces&fields=workspace_name,drifted,workspace_name'))[0]).to.deep.equal(['workspace-name', 'drifted']);
    });
    it('kebab-case for every multi-word field', async () => {
      const body = await query(`?type=workspaces&fields=${[...WORKSPACE_FIELDS].reverse().join(',')}`);
      expect(keysOf(body)[0]).to.deep.equal([...WORKSPACE_FIELDS].reverse().map((f) => f.replace(/_/g, '-')));
    });
    it('aggregate views: fields[providers]=workspaces,name and fields=workspace_count on tf_versions', async () => {
      const p = await query('?type=providers&fields[providers]=workspaces,name');
      expect(keysOf(p)).to.deep.equal(PRV.map(() => ['workspaces', 'name']));
      const t = await query('?type=tf_versions&fields=workspace_count');
      expect(t.data.map((r: any) => r.attributes)).to.deep.equal(TFV.map(() => ({ 'workspace-count': 1 })));
    });
    it('without fields, every field of the view in alphabetical order', async () => {
      for (const view of Object.keys(FIELDS)) {
        const body = await query(`?type=${view}`);
        for (const keys of keysOf(body)) expect(keys, view).to.deep.equal(FIELDS[view]!.map((f) => f.replace(/_/g, '-')));
      }
    });
    it('sorting by a field that is not selected', async () => {
      const body = await query('?type=workspaces&fields=workspace_name&sort=-resources_drifted');
      expect(body.data.map((r: any) => r.id)).to.deep.equal([a4, a1, a2, a3, a5]);
      expect(keysOf(body)[0]).to.deep.equal(['workspace-name']);
    });
  });

  describe('pages, links and meta', () => {
    it('page[size]=2 walks all pages by links.next: no duplicates, no missing rows, exact links and meta', async () => {
      const seen: string[] = [];
      let next: string | null = `${h.url}${explorerPath(fx.ORG)}?type=workspaces&page[size]=2`;
      let n = 0;
      while (next !== null) {
        n += 1;
        expect(next.startsWith(h.url)).to.equal(true);
        const res = await get(next.slice(h.url.length));
        const body = await json(res);
        expect(res.status).to.equal(200);
        expect(envelope(body)).to.deep.equal(expectedEnvelope(fx.ORG, [['type', 'workspaces']], n, 2, 5));
        seen.push(...body.data.map((r: any) => r.id));
        next = body.links.next;
        expect(n).to.be.below(10);
      }
      expect(n).to.equal(3);
      expect(seen).to.deep.equal(DEFAULT_ORDER);
    });
    it('the literal links of page 2 of 3', async () => {
      const body = await query('?type=workspaces&page[number]=2&page[size]=2');
      const base = `${h.url}/api/v2/organizations/acme-corp/explorer`;
      expect(h.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(body.links).to.deep.equal({
        self: `${base}?page%5Bnumber%5D=2&page%5Bsize%5D=2&type=workspaces`,
        first: `${base}?page%5Bnumber%5D=1&page%5Bsize%5D=2&type=workspaces`,
        prev: `${base}?page%5Bnumber%5D=1&page%5Bsize%5D=2&type=workspaces`,
        next: `${base}?page%5Bnumber%5D=3&page%5Bsize%5D=2&type=workspaces`,
        last: `${base}?page%5Bnumber%5D=3&page%5Bsize%5D=2&type=workspaces`,
      });
      expect(body.meta).to.deep.equal({ pagination: { 'current-page': 2, 'page-size': 2, 'next-page': 3, 'prev-page': 1, 'total-pages': 3, 'total-count': 5 } });
      expect(body.data.map((r: any) => r.id)).to.deep.equal([a1, a2]);
    });
    it('page[size]=1 with ties on the sort key pages stably (id tie-break)', async () => {
      const pages = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => ids(`?type=workspaces&sort=project_name&page[size]=1&page[number]=${n}`)));
      expect(pages.flat()).to.deep.equal([a3, a4, a5, a1, a2]);
      expect(pages[5]).to.deep.equal([]);
    });
    it('providers page[size]=2, sort=-workspace_count: pages concatenate to the full result', async () => {
      const full = await ids('?type=providers&sort=-workspace_count&page[size]=100');
      const pages = await Promise.all([1, 2, 3].map((n) => query(`?type=providers&sort=-workspace_count&page[size]=2&page[number]=${n}`)));
      expect(pages.flatMap((b) => b.data.map((r: any) => r.id))).to.deep.equal(full);
      expect(new Set(full).size).to.equal(6);
      pages.forEach((b, i) => expect(envelope(b)).to.deep.equal(expectedEnvelope(fx.ORG, [['sort', '-workspace_count'], ['type', 'providers']], i + 1, 2, 6)));
    });
    it('no page parameters: page 1 of size 20', async () => {
      const body = await query('?type=workspaces');
      expect(envelope(body)).to.deep.equal(expectedEnvelope(fx.ORG, [['type', 'workspaces']], 1, 20, 5));
      expect(body.links.self).to.equal(`${h.url}/api/v2/organizations/acme-corp/explorer?page%5Bnumber%5D=1&page%5Bsize%5D=20&type=workspaces`);
    });
    it('page[size]=1000 is clamped to 100 in meta and links', async () => {
      const body = await query('?type=workspaces&page[size]=1000');
      expect(body.data).to.have.length(5);
      expect(envelope(body)).to.deep.equal(expectedEnvelope(fx.ORG, [['type', 'workspaces']], 1, 100, 5));
      expect(body.links.self).to.equal(`${h.url}/api/v2/organizations/acme-corp/explorer?page%5Bnumber%5D=1&page%5Bsize%5D=100&type=workspaces`);
    });
    it('past the last page: empty data, prev-page n − 1, next null', async () => {
      const body = await query('?type=workspaces&page[number]=9&page[size]=2');
      expect(body.data).to.deep.equal([]);
      expect(body.meta.pagination).to.deep.equal({ 'current-page': 9, 'page-size': 2, 'next-page': null, 'prev-page': 8, 'total-pages': 3, 'total-count': 5 });
      expect(envelope(body)).to.deep.equal(expectedEnvelope(fx.ORG, [['type', 'workspaces']], 9, 2, 5));
      expect(body.links.next).to.equal(null);
      expect(body.links.last).to.equal(`${h.url}/api/v2/organizations/acme-corp/explorer?page%5Bnumber%5D=3&page%5Bsize%5D=2&type=workspaces`);
    });
    it('a filter that matches nothing: empty data, total-count 0, total-pages 1', async () => {
      const body = await query('?type=workspaces&filter[0][workspace_name][is][0]=nothing');
      expect(body.data).to.deep.equal([]);
      expect(body.meta.pagination).to.deep.equal({ 'current-page': 1, 'page-size': 20, 'next-page': null, 'prev-page': null, 'total-pages': 1, 'total-count': 0 });
      expect(envelope(body)).to.deep.equal(expectedEnvelope(fx.ORG, [['filter[0][workspace_name][is][0]', 'nothing'], ['type', 'workspaces']], 1, 20, 0));
    });
    it('organization empty-org (its own organization token): every view is empty', async () => {
      for (const view of Object.keys(FIELDS)) {
        const res = await get(`${explorerPath('empty-org')}?type=${view}&page[size]=5`, emptyOrgToken);
        const body = await json(res);
        expect(res.status, JSON.stringify(body)).to.equal(200);
        expect(res.headers.get('content-type')).to.match(/^application\/vnd\.api\+json(;|$)/);
        expect(res.headers.get('x-explorer-snapshot')).to.be.a('string').and.not.equal('');
        expect(body.data, view).to.deep.equal([]);
        expect(envelope(body)).to.deep.equal(expectedEnvelope('empty-org', [['type', view]], 1, 5, 0));
      }
    });

    describe('links carry type, sort, fields and filters as received, strictly encoded, keys sorted by encoded form', () => {
      // Filters at indexes 0, 10 and 2: encoded keys sort "filter%5B0…" < "filter%5B10…" < "filter%5B2…".
      const carried: [string, string][] = [
        ['type', 'workspaces'],
        ['sort', '-drifted,workspace_name'],
        ['fields', 'workspace_name,drifted'],
        ['filter[0][workspace_name][does not contain][0]', 'Café x'],
        ['filter[10][drifted][is_not_empty][0]', ''],
        ['filter[2][resources_drifted][gteq][0]', '-1.5'],
      ];
      const expectedSelf = (base: string) => `${base}?fields=workspace_name%2Cdrifted`
        + '&filter%5B0%5D%5Bworkspace_name%5D%5Bdoes%20not%20contain%5D%5B0%5D=Caf%C3%A9%20x'
        + '&filter%5B10%5D%5Bdrifted%5D%5Bis_not_empty%5D%5B0%5D='
        + '&filter%5B2%5D%5Bresources_drifted%5D%5Bgteq%5D%5B0%5D=-1.5'
        + '&page%5Bnumber%5D=1&page%5Bsize%5D=1&sort=-drifted%2Cworkspace_name&type=workspaces';
      const check = (body: any) => {
        // Rows: drifted not empty (ws-aaa1 true, ws-aaa2 false), resources_drifted ≥ -1.5 (2, 0); -drifted puts true first.
        expect(body.data.map((r: any) => r.id)).to.deep.equal([a1]);
        expect(Object.keys(body.data[0].attributes)).to.deep.equal(['workspace-name', 'drifted']);
        expect(body.links.self).to.equal(expectedSelf(`${h.url}/api/v2/organizations/acme-corp/explorer`));
        expect(envelope(body)).to.deep.equal(expectedEnvelope(fx.ORG, carried, 1, 1, 2));
      };
      it('raw brackets, +-spaces in the operator, unknown parameters dropped', async () => {
        check(await query('?type=workspaces&sort=-drifted,workspace_name&fields=workspace_name,drifted'
          + '&filter[0][workspace_name][does+not+contain][0]=Caf%C3%A9+x&filter[10][drifted][is_not_empty][0]='
          + '&filter[2][resources_drifted][gteq][0]=-1.5&foo=bar&include=x&page[size]=1&page[number]=1'));
      });
      it('client-encoded: the same links', async () => {
        check(await query(clientQuery({
          type: 'workspaces', sort: '-drifted,workspace_name', fields: 'workspace_name,drifted',
          'filter[0][workspace_name][does not contain][0]': 'Café x', 'filter[10][drifted][is_not_empty][0]': '',
          'filter[2][resources_drifted][gteq][0]': '-1.5', foo: 'bar', 'page[size]': '1',
        })));
      });
      it('next and last point at page 2', async () => {
        const body = await query(clientQuery({
          type: 'workspaces', sort: '-drifted,workspace_name', fields: 'workspace_name,drifted',
          'filter[0][workspace_name][does not contain][0]': 'Café x', 'filter[10][drifted][is_not_empty][0]': '',
          'filter[2][resources_drifted][gteq][0]': '-1.5', 'page[size]': '1', 'page[number]': '2',
        }));
        expect(body.data.map((r: any) => r.id)).to.deep.equal([a2]);
        expect(body.links.self).to.equal(expectedSelf(`${h.url}/api/v2/organizations/acme-corp/explorer`).replace('page%5Bnumber%5D=1', 'page%5Bnumber%5D=2'));
        expect(envelope(body)).to.deep.equal(expectedEnvelope(fx.ORG, carried, 2, 1, 2));
      });
      it('fields[workspaces] and does_not_contain are carried under their own keys', async () => {
        const body = await query('?type=workspaces&fields[workspaces]=drifted&filter[0][vcs_repo_identifier][does_not_contain][0]=a/b:c');
        expect(body.links.self).to.equal(`${h.url}/api/v2/organizations/acme-corp/explorer?fields%5Bworkspaces%5D=drifted`
          + '&filter%5B0%5D%5Bvcs_repo_identifier%5D%5Bdoes_not_contain%5D%5B0%5D=a%2Fb%3Ac&page%5Bnumber%5D=1&page%5Bsize%5D=20&type=workspaces');
        expect(body.data.map((r: any) => r.id)).to.deep.equal(DEFAULT_ORDER);
      });
      it('characters that encodeURIComponent leaves alone (!\'()*) are percent-encoded', async () => {
        const body = await query(clientQuery({ type: 'workspaces', 'filter[0][workspace_name][is_not][0]': "(it's)*!~" }));
        expect(body.links.self).to.equal(`${h.url}/api/v2/organizations/acme-corp/explorer?`
          + 'filter%5B0%5D%5Bworkspace_name%5D%5Bis_not%5D%5B0%5D=%28it%27s%29%2A%21~&page%5Bnumber%5D=1&page%5Bsize%5D=20&type=workspaces');
      });
    });
  });
});
