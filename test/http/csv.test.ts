// CSV export through the real HTTP endpoint GET /organizations/:org/explorer/export/csv (docs/interface.md;
// interface §5, §6): exact bytes, quoting, nulls, booleans, datetimes without fraction, header order,
// filters and sort applied, paging ignored, headers, and agreement with the JSON rows.
//
// acme-corp's workspaces in the default order (workspace_name: fold A–Z only, then code points):
// ws-aaa3 `Café "core", net`, ws-aaa5 network-core, ws-aaa1 payments-api, ws-aaa2 Payments-worker, ws-aaa4 ÉTL-job.
import { expect } from 'chai';
import { DATETIME_FIELDS, FIELDS } from '../helpers/contract-fields.js';
import { clientQuery, json, startHarness, type Harness } from '../helpers/harness.js';
import * as fx from '../fixtures/small-source.js';
import { csvOf as renderCsv, csvOfJson as renderJson } from '../helpers/csv-render.js';
import { cmpCodePoints, WS, workspaceModel, aggregateModel, resourceRows, type Model } from '../helpers/fixture-model.js';


const [a1, a2, a3, a4, a5] = ['ws-aaa1', 'ws-aaa2', 'ws-aaa3', 'ws-aaa4', 'ws-aaa5'];
const DEFAULT_ORDER = [a3, a5, a1, a2, a4];
const MODEL = new Map(WS.filter((w) => w.organization === fx.ORG).map((w) => [w.id as string, workspaceModel(w)]));
const PRV = aggregateModel('providers');
const prv = (name: string, version: string, registry: string | null) =>
  PRV.find((r) => r.attributes.name === name && r.attributes.version === version && r.attributes.registry_type === registry)!.id;

const WORKSPACE_FIELDS = FIELDS.workspaces!;
const USAGE_HEADER = FIELDS.providers!.join(',');
const TFV_HEADER = FIELDS.tf_versions!.join(',');
const RESOURCE_HEADER = FIELDS.resources!.join(',');
const tfv = (version: string) => aggregateModel('tf_versions').find((r) => r.attributes.version === version)!.id;
const csvOf = (fields: string[], rows: Model[]) => renderCsv(fields, rows, DATETIME_FIELDS);
const csvOfJson = (body: any, fields: string[]) => renderJson(body.data, fields, DATETIME_FIELDS);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let h: Harness;
let emptyOrgToken: string;

async function get(path: string, init: { token?: string; headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const res = await h.request(path, init);
    if (res.status !== 429 || attempt >= 30) return res;
    await res.arrayBuffer();
    await sleep(Math.min(1000, 1000 * Number(res.headers.get('retry-after') ?? '0.2') || 200));
  }
}
const csvPath = (org: string = fx.ORG) => `/api/v2/organizations/${org}/explorer/export/csv`;

/** An export of this fixture takes milliseconds; one that has not ended after this long never will. */
const EXPORT_STALL_MS = 5000;

interface Export { res: Response; bytes: Buffer; text: string }
async function exportCsv(q: string, init: { org?: string; token?: string; headers?: Record<string, string> } = {}): Promise<Export> {
  const path = `${csvPath(init.org)}${q}`;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), EXPORT_STALL_MS);
  const chunks: Buffer[] = [];
  let res: Response | undefined;
  try {
    res = await get(path, { ...init, signal: abort.signal });
    for await (const chunk of res.body ?? []) chunks.push(Buffer.from(chunk));
  } catch (e) {
    if (!abort.signal.aborted) throw e;
    const got = Buffer.concat(chunks).toString('utf8');
    throw new Error(`GET ${path}: the export did not end within ${EXPORT_STALL_MS} ms `
      + `(status ${res?.status ?? 'not received'}, ${got.length} characters, ${got.split('\n').length - 1} complete lines received)`);
  } finally {
    clearTimeout(timer);
  }
  const bytes = Buffer.concat(chunks);
  expect(res.status, `${q}: ${bytes.toString('utf8').slice(0, 300)}`).to.equal(200);
  expect(res.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
  // UTF-8 without BOM, \n line ends, the last line terminated.
  const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  expect(bytes.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf])), 'no BOM').to.equal(false);
  expect(text).to.not.include('\r');
  expect(text.endsWith('\n')).to.equal(true);
  return { res, bytes, text };
}
async function jsonQuery(q: string): Promise<any> {
  const res = await get(`/api/v2/organizations/${fx.ORG}/explorer${q}`);
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).to.equal(200);
  return body;
}

describe('HTTP explorer CSV export', function () {
  this.timeout(20_000);

  before(async () => {
    h = await startHarness();
    emptyOrgToken = h.tokens.emptyOrg;
  });
  after(async () => {
    await h?.close();
  });

  describe('exact bytes', () => {
    it('workspaces with fields: header in request order, every value quoted, "" doubled, nulls "", booleans, datetimes without fraction, numbers quoted', async () => {
      const fields = 'workspace_name,drifted,resources_drifted,workspace_updated_at,current_run_applied_at,vcs_repo_identifier,tags,all_checks_succeeded,checks_passed';
      const expected = [
        'workspace_name,drifted,resources_drifted,workspace_updated_at,current_run_applied_at,vcs_repo_identifier,tags,all_checks_succeeded,checks_passed',
        '"Café ""core"", net","","","2025-03-04T05:06:07+00:00","","","pci","true","0"',
        '"network-core","","","2025-01-01T00:00:00+00:00","","acme/network","","true","0"',
        '"payments-api","true","2","2024-05-06T07:08:09+00:00","2024-05-06T07:08:09+00:00","acme/payments-api","env:prod, team:payments","true","3"',
        '"Payments-worker","false","0","2023-12-31T22:00:00+00:00","","","","false","1"',
        '"ÉTL-job","","5","2021-01-01T00:00:00+00:00","","","","false","0"',
      ].map((l) => `${l}\n`).join('');
      const { bytes } = await exportCsv(`?type=workspaces&fields=${fields}`);
      expect(bytes.toString('utf8')).to.equal(expected);
      expect(bytes.equals(Buffer.from(expected, 'utf8')), 'byte-for-byte').to.equal(true);
      expect(bytes.includes(Buffer.from([0xc3, 0x89, 0x54, 0x4c]))).to.equal(true); // "ÉTL" as UTF-8
      // The literal above is the fixture model rendered by the CSV rules.
      expect(expected).to.equal(csvOf(fields.split(','), DEFAULT_ORDER.map((id) => MODEL.get(id)!)));
    });
    it('workspaces without fields: every field, alphabetical header, rows equal the model', async () => {
      const { text } = await exportCsv('?type=workspaces');
      const [header] = text.split('\n');
      expect(header).to.equal(WORKSPACE_FIELDS.join(','));
      expect(WORKSPACE_FIELDS).to.deep.equal([...WORKSPACE_FIELDS].sort());
      expect(header).to.include('workspace_terraform_version').and.include('state_version_terraform_version');
      expect(text).to.equal(csvOf(WORKSPACE_FIELDS, DEFAULT_ORDER.map((id) => MODEL.get(id)!)));
    });
    it('tf_versions (default sort -version)', async () => {
      const { text } = await exportCsv('?type=tf_versions');
      expect(text).to.equal([
        TFV_HEADER,
        `"${tfv('1.10.0')}","1.10.0","1","Payments-worker"`,
        `"${tfv('1.10.0-rc1')}","1.10.0-rc1","1","Café ""core"", net"`,
        `"${tfv('v1.5.7')}","v1.5.7","1","network-core"`,
        `"${tfv('1.5.7')}","1.5.7","1","payments-api"`,
        `"${tfv('latest')}","latest","1","ÉTL-job"`,
      ].map((l) => `${l}\n`).join(''));
    });
    it('providers (default sort name, -version, id)', async () => {
      const line: Record<string, string> = {
        // curated: one of the two identical aws rows of payments-api is marked, and the group shows it.
        [prv('aws', '5.31.0', 'public')]: '"true","aws","public","registry.terraform.io/hashicorp/aws","5.31.0","2","Café ""core"", net, payments-api"',
        [prv('aws', '5.31.0', null)]: '"false","aws","","registry.terraform.io/hashicorp/aws","5.31.0","1","network-core"',
        [prv('aws', '4.67.0', 'public')]: '"false","aws","public","registry.terraform.io/hashicorp/aws","4.67.0","1","Payments-worker"',
        [prv('internal', '0.1.0-beta.11', 'private')]: '"false","internal","private","app.terraform.io/acme-corp/internal","0.1.0-beta.11","1","ÉTL-job"',
        [prv('internal', '0.1.0-beta.2', 'private')]: '"false","internal","private","app.terraform.io/acme-corp/internal","0.1.0-beta.2","1","Café ""core"", net"',
        [prv('random', '3.6.0', 'public')]: '"false","random","public","registry.terraform.io/hashicorp/random","3.6.0","1","payments-api"',
      };
      const order = [
        ...[prv('aws', '5.31.0', 'public'), prv('aws', '5.31.0', null)].sort(cmpCodePoints), // tie on name and version → id
        prv('aws', '4.67.0', 'public'), prv('internal', '0.1.0-beta.11', 'private'), prv('internal', '0.1.0-beta.2', 'private'), prv('random', '3.6.0', 'public'),
      ];
      const { text } = await exportCsv('?type=providers');
      expect(text).to.equal([USAGE_HEADER, ...order.map((id) => line[id])].map((l) => `${l}\n`).join(''));
    });
    it('modules (local module: version and registry_type empty)', async () => {
      const { text } = await exportCsv('?type=modules');
      expect(text).to.equal([
        USAGE_HEADER,
        '"true","app","","./modules/app","","1","payments-api"',
        // curated false and absent: not curated (globex's curated vpc 2.0.0 is another organization's row).
        '"false","vpc","public","registry.terraform.io/terraform-aws-modules/vpc/aws","5.5.1","2","Payments-worker, payments-api"',
      ].map((l) => `${l}\n`).join(''));
    });
    it('resources (default sort workspace_name, address, id): every field, the model\'s values', async () => {
      const { text } = await exportCsv('?type=resources');
      const rows = resourceRows();
      expect(rows.map((r) => r.attributes.address)).to.deep.equal([
        'aws_vpc.main', 'module.é.null_resource.café', 'aws_vpc.main', 'aws_instance.web[0]', 'aws_instance.web[1]',
        'module.app.internal_thing.x', 'module.vpc.aws_subnet.private["a,b"]', 'Random_id.Suffix', 'terraform_data.marker',
      ]);
      expect(text).to.equal(csvOf(RESOURCE_HEADER.split(','), rows.map((r) => r.attributes)));
      expect(text).to.include('"module.vpc.aws_subnet.private[""a,b""]","true","module.vpc","private","org-AcmeCorp1","prj-pay","payments","hashicorp/aws","aws_subnet","run-r1","run","2024-05-06T07:08:09+00:00","1.10.0","ws-aaa1","payments-api"\n');
    });
  });

  describe('query parameters', () => {
    it('sort and filters are applied', async () => {
      const { text } = await exportCsv('?type=workspaces&sort=-resources_drifted&filter[0][resources_drifted][is_not_empty][0]=&fields=workspace_name,resources_drifted');
      expect(text).to.equal('workspace_name,resources_drifted\n"ÉTL-job","5"\n"payments-api","2"\n"Payments-worker","0"\n');
    });
    it('client-encoded query: does not contain, -sort, fields', async () => {
      const { text } = await exportCsv(clientQuery({
        type: 'workspaces', sort: '-workspace_name', fields: 'workspace_name,project_name',
        'filter[0][workspace_name][does not contain][0]': 'PAYMENTS',
      }));
      expect(text).to.equal('workspace_name,project_name\n"ÉTL-job","Network"\n"network-core","Network"\n"Café ""core"", net","Network"\n');
    });
    it('fields[workspaces] and a datetime filter with an offset', async () => {
      const { text } = await exportCsv('?type=workspaces&fields[workspaces]=workspace_created_at,external_id&filter[0][workspace_created_at][is_after][0]=2023-02-01T02:00:00%2B02:00');
      expect(text).to.equal('workspace_created_at,external_id\n"2024-12-31T12:00:00+00:00","ws-aaa5"\n');
    });
    it('aggregate view with filter and sort: private providers by version', async () => {
      const { text } = await exportCsv('?type=providers&filter[0][registry_type][is][0]=private&sort=version&fields=version,workspaces');
      expect(text).to.equal('version,workspaces\n"0.1.0-beta.2","Café ""core"", net"\n"0.1.0-beta.11","ÉTL-job"\n');
    });
    it('paging parameters are ignored: every row even with page[size]=1 and page[number]=2', async () => {
      const all = await exportCsv('?type=workspaces&fields=external_id');
      const paged = await exportCsv('?type=workspaces&fields=external_id&page[size]=1&page[number]=2');
      const far = await exportCsv('?type=workspaces&fields=external_id&page[number]=99');
      // Ignored means ignored: values the page route refuses (400) change nothing here either.
      const invalid = await exportCsv('?type=workspaces&fields=external_id&page[size]=0&page[number]=x');
      expect(invalid.text).to.equal(`external_id\n${DEFAULT_ORDER.map((id) => `"${id}"`).join('\n')}\n`);
      const expected = `external_id\n${DEFAULT_ORDER.map((id) => `"${id}"`).join('\n')}\n`;
      expect(all.text).to.equal(expected);
      expect(paged.text).to.equal(expected);
      expect(far.text).to.equal(expected);
    });
    it('no rows: the header line only', async () => {
      const { text } = await exportCsv('?type=workspaces&fields=workspace_name,drifted&filter[0][workspace_name][is][0]=nothing');
      expect(text).to.equal('workspace_name,drifted\n');
      const all = await exportCsv('?type=workspaces&filter[0][workspace_name][is][0]=nothing');
      expect(all.text).to.equal(`${WORKSPACE_FIELDS.join(',')}\n`);
    });
    it('an organization without workspaces (empty-org): header only for every view', async () => {
      const headers: Record<string, string> = {
        workspaces: WORKSPACE_FIELDS.join(','), tf_versions: TFV_HEADER, providers: USAGE_HEADER, modules: USAGE_HEADER, resources: RESOURCE_HEADER,
      };
      for (const [view, header] of Object.entries(headers)) {
        const { res, text } = await exportCsv(`?type=${view}`, { org: 'empty-org', token: emptyOrgToken });
        expect(text, view).to.equal(`${header}\n`);
        expect(res.headers.get('content-disposition')).to.match(new RegExp(`^attachment; filename="empty-org-${view}-\\d{8}T\\d{6}Z\\.csv"$`));
      }
    });
  });

  describe('headers', () => {
    for (const view of ['workspaces', 'tf_versions', 'providers', 'modules', 'resources']) {
      it(`${view}: Content-Type, Content-Disposition with the export time, X-Explorer-Snapshot`, async () => {
        const before = Date.now();
        const { res } = await exportCsv(`?type=${view}`);
        const after = Date.now();
        expect(res.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
        expect(res.headers.get('x-explorer-snapshot')).to.be.a('string').and.not.equal('');
        const m = /^attachment; filename="acme-corp-([a-z_]+)-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z\.csv"$/.exec(res.headers.get('content-disposition') ?? '');
        expect(m, String(res.headers.get('content-disposition'))).to.not.equal(null);
        expect(m![1]).to.equal(view);
        const stamp = Date.parse(`${m![2]}-${m![3]}-${m![4]}T${m![5]}:${m![6]}:${m![7]}Z`);
        expect(stamp).to.be.within(Math.floor(before / 1000) * 1000 - 3000, after + 3000);
      });
    }
    for (const accept of ['application/vnd.api+json', 'application/json', 'text/html', '*/*']) {
      it(`Accept: ${accept} does not cause a 406`, async () => {
        const { text, res } = await exportCsv('?type=tf_versions&fields=version', { headers: { Accept: accept } });
        expect(res.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
        expect(text).to.equal('version\n"1.10.0"\n"1.10.0-rc1"\n"v1.5.7"\n"1.5.7"\n"latest"\n');
      });
    }
    it('the snapshot id matches the JSON route\'s', async () => {
      const { res } = await exportCsv('?type=modules');
      const j = await get(`/api/v2/organizations/${fx.ORG}/explorer?type=modules`);
      await j.arrayBuffer();
      expect(res.headers.get('x-explorer-snapshot')).to.equal(j.headers.get('x-explorer-snapshot'));
    });
  });

  describe('CSV and JSON agree (the JSON rows of a page[size]=100 query rendered by the CSV rules)', () => {
    const FIELD_LISTS: Record<string, string[]> = {
      workspaces: WORKSPACE_FIELDS, tf_versions: TFV_HEADER.split(','),
      providers: USAGE_HEADER.split(','), modules: USAGE_HEADER.split(','), resources: RESOURCE_HEADER.split(','),
    };
    const QUERIES: [string, string, string[] | null][] = [
      ['workspaces', '', null],
      ['tf_versions', '', null],
      ['providers', '', null],
      ['modules', '', null],
      ['resources', '', null],
      ['resources', '&sort=-source_updated_at,provider_name&filter[0][billable_rum][is][0]=true', null],
      ['workspaces', '&sort=-drifted,workspace_name&fields=drifted,workspace_name,workspace_created_at,tags&filter[0][tags][does_not_contain][0]=PCI', ['drifted', 'workspace_name', 'workspace_created_at', 'tags']],
      ['workspaces', '&sort=workspace_terraform_version&filter[0][current_run_applied_at][is_empty][0]=', null],
      ['tf_versions', '&sort=version&filter[0][version][contains][0]=1.', null],
      ['providers', '&sort=-workspace_count,name&fields=workspaces,workspace_count,registry_type', ['workspaces', 'workspace_count', 'registry_type']],
      ['modules', '&filter[0][name][contains][0]=VPC&filter[0][version][is][0]=5.5.1', null],
    ];
    for (const [view, extra, fields] of QUERIES) {
      it(`type=${view}${extra}`, async () => {
        const [body, csv] = await Promise.all([jsonQuery(`?type=${view}&page[size]=100${extra}`), exportCsv(`?type=${view}${extra}`)]);
        expect(body.data.length).to.be.greaterThan(0);
        expect(body.meta.pagination['total-count']).to.equal(body.data.length);
        expect(csv.text).to.equal(csvOfJson(body, fields ?? FIELD_LISTS[view]!));
      });
    }
  });
});
