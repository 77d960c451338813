// Filters through the real HTTP endpoint (docs/interface.md, interface §4): every operator on every field
// type, null rules, ASCII-only case folding, multi-value filters, several fields under one index,
// aggregate views and organization isolation.
//
// Expected rows are worked out from the fixture (test/fixtures/small-source.ts) and the rules, never copied
// from the server. The acme-corp workspaces, in the default order (workspace_name ascending: fold A–Z only,
// then code points — 'café…' < 'network-core' < 'payments-api' < 'payments-worker' < 'Étl-job'):
//
//   id       name               created_at (UTC)           updated_at (UTC)          applied_at        drifted res_drifted vcs                tags
//   ws-aaa3  Café "core", net   2022-06-30T23:59:59.500Z   2025-03-04T05:06:07.891Z  null              null    null        null               pci
//   ws-aaa5  network-core       2024-12-31T12:00:00.000Z   2025-01-01T00:00:00.000Z  null              null    null        acme/network       null
//   ws-aaa1  payments-api       2023-01-02T03:04:05.678Z   2024-05-06T07:08:09.123Z  …07:08:09.999Z    true    2           acme/payments-api  env:prod, team:payments
//   ws-aaa2  Payments-worker    2023-02-01T00:00:00.000Z   2023-12-31T22:00:00.000Z  null              false   0           null ('' in source) null ([] in source)
//   ws-aaa4  ÉTL-job            2021-01-01T00:00:00.000Z   2021-01-01T00:00:00.000Z  null              null    5           null               null
import { expect } from 'chai';
import { clientQuery, json, startHarness, type Harness } from '../helpers/harness.js';
import * as fx from '../fixtures/small-source.js';
import { WS, workspaceModel, aggregateModel, kebab, resourceRows, type Model } from '../helpers/fixture-model.js';
import { CONTRACT } from '../helpers/contract-fields.js';

// ---------------------------------------------------------------------------------------------------------

const [a1, a2, a3, a4, a5] = ['ws-aaa1', 'ws-aaa2', 'ws-aaa3', 'ws-aaa4', 'ws-aaa5'];
/** Default order of acme-corp's workspaces (workspace_name ascending, worked out above). */
const DEFAULT_ORDER = [a3, a5, a1, a2, a4];
const ALL = DEFAULT_ORDER;
const inOrder = (ids: string[]) => DEFAULT_ORDER.filter((id) => ids.includes(id));
const MODEL = new Map(WS.filter((w) => w.organization === fx.ORG).map((w) => [w.id as string, workspaceModel(w)]));

let h: Harness;

/** GET relative to the server root (the harness sets a rate limit no test reaches). */
const get = (path: string, token?: string): Promise<Response> => h.request(path, { token });
const explorer = (query: string, token?: string) => get(`/api/v2/organizations/${fx.ORG}/explorer${query}`, token);

async function okBody(res: Response): Promise<any> {
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).to.equal(200);
  expect(res.headers.get('content-type')).to.match(/^application\/vnd\.api\+json/);
  return body;
}

/** Rows of a query on acme-corp (page[size]=100), checking that no row of another organization appears. */
async function rows(query: string): Promise<any[]> {
  const body = await okBody(await explorer(query));
  expect(body.meta.pagination['total-count']).to.equal(body.data.length);
  for (const row of body.data) {
    expect(row.id).to.not.equal('ws-bbb1');
    if (row.type === 'visibility-workspace') expect(row.attributes['organization-name'], row.id).to.equal(fx.ORG);
  }
  return body.data;
}
const ids = async (query: string) => (await rows(query)).map((r) => r.id);

type Cond = [field: string, op: string, values: string[]];

/** The query string with filters written with raw brackets (values percent-encoded). */
function rawQuery(type: string, conds: Cond[], sameIndex = false): string {
  const parts = [`type=${type}`, 'page[size]=100'];
  conds.forEach(([field, op, values], i) => values.forEach((v, j) =>
    parts.push(`filter[${sameIndex ? 0 : i}][${field}][${encodeURIComponent(op)}][${j}]=${encodeURIComponent(v)}`)));
  return '?' + parts.join('&');
}
/** The same query encoded the way real clients encode it. */
function encodedQuery(type: string, conds: Cond[], sameIndex = false): string {
  const params: Record<string, string> = { type, 'page[size]': '100' };
  conds.forEach(([field, op, values], i) => values.forEach((v, j) => { params[`filter[${sameIndex ? 0 : i}][${field}][${op}][${j}]`] = v; }));
  return clientQuery(params);
}

/** Asserts the ids of a workspaces query, sent both with raw brackets and client-encoded. */
async function expectIds(conds: Cond[], expected: string[], sameIndex = false): Promise<void> {
  const [raw, enc] = await Promise.all([ids(rawQuery('workspaces', conds, sameIndex)), ids(encodedQuery('workspaces', conds, sameIndex))]);
  expect(raw, `raw ${rawQuery('workspaces', conds, sameIndex)}`).to.deep.equal(expected);
  expect(enc, `encoded ${encodedQuery('workspaces', conds, sameIndex)}`).to.deep.equal(expected);
}

/**
 * Data-driven cases: the filter conditions and the expected ids in default order. Cases alternate between
 * raw brackets and client encoding. Their requests are sent together in `before` (the server runs queries
 * in parallel), and each `it` asserts its own answer.
 */
type Settled = { ok: true; ids: string[] } | { ok: false; error: unknown };
const planned: string[] = [];
const answers = new Map<string, Promise<Settled>>();
let caseCount = 0;
function cases(list: [conds: Cond[], expected: string[], note?: string][]): void {
  for (const [conds, expected, note] of list) {
    const encoded = caseCount++ % 2 === 1;
    const query = (encoded ? encodedQuery : rawQuery)('workspaces', conds);
    planned.push(query);
    const label = conds.map(([f, op, v]) => `${f} ${op} ${JSON.stringify(v.length === 1 ? v[0] : v)}`).join(' AND ');
    it(`${label} → [${expected.join(', ')}]${note ? ` (${note})` : ''}${encoded ? ' [client-encoded]' : ''}`, async () => {
      expect(expected, 'expected list must be in default order').to.deep.equal(inOrder(expected));
      const answer = await (answers.get(query) ?? settle(ids(query)));
      if (!answer.ok) throw answer.error;
      expect(answer.ids, query).to.deep.equal(expected);
    });
  }
}
const settle = (p: Promise<string[]>): Promise<Settled> => p.then((v) => ({ ok: true as const, ids: v }), (error) => ({ ok: false as const, error }));
async function prefetchPlanned(parallel = 6): Promise<void> {
  const queue = [...new Set(planned)];
  await Promise.all(Array.from({ length: parallel }, async () => {
    for (let q = queue.shift(); q !== undefined; q = queue.shift()) {
      const answer = settle(ids(q));
      answers.set(q, answer);
      await answer;
    }
  }));
}

describe('HTTP explorer filters', function () {
  this.timeout(20_000);

  before(async () => {
    h = await startHarness();
    await prefetchPlanned();
  });
  after(async () => {
    await h?.close();
  });

  it('the fixture model matches the rows the table at the top of this file describes', () => {
    // Sanity checks of the hand-worked table against the model derived from the fixture arrays.
    expect([...MODEL.values()].map((m) => m.workspace_name)).to.have.members(['payments-api', 'Payments-worker', 'Café "core", net', 'ÉTL-job', 'network-core']);
    expect(MODEL.get(a2)!.workspace_updated_at).to.equal('2023-12-31T22:00:00.000+00:00');
    expect(MODEL.get(a3)!.workspace_updated_at).to.equal('2025-03-04T05:06:07.891+00:00');
    expect(MODEL.get(a2)!.vcs_repo_identifier).to.equal(null);
    expect(MODEL.get(a4)!.drifted).to.equal(null);
    expect(MODEL.get(a4)!.resources_drifted).to.equal(5);
    expect(MODEL.get(a1)!.tags).to.equal('env:prod, team:payments');
  });

  it('no filter returns every acme-corp workspace in the default order', async () => {
    expect(await ids('?type=workspaces')).to.deep.equal(ALL);
  });

  describe('string fields', () => {
    describe('is / is_not (exact, case-sensitive)', () => cases([
      [[['workspace_name', 'is', ['payments-api']]], [a1]],
      [[['workspace_name', 'is', ['Payments-API']]], [], 'case-sensitive'],
      [[['workspace_name', 'is', ['payments']]], [], 'not a substring test'],
      [[['workspace_name', 'is', ['Café "core", net']]], [a3], 'non-ASCII, quotes, comma and space in the value'],
      [[['workspace_name', 'is', ['ÉTL-job']]], [a4]],
      [[['workspace_name', 'is_not', ['payments-api']]], [a3, a5, a2, a4]],
      [[['workspace_name', 'is_not', ['PAYMENTS-API']]], ALL],
      [[['vcs_repo_identifier', 'is', ['acme/network']]], [a5]],
      [[['vcs_repo_identifier', 'is_not', ['acme/network']]], [a3, a1, a2, a4], 'is_not keeps null'],
      [[['current_run_status', 'is', ['applied']]], [a1]],
      [[['current_run_status', 'is_not', ['applied']]], [a3, a5, a2, a4], 'is_not keeps null'],
      [[['project_name', 'is', ['Network']]], [a3, a5, a4]],
      [[['project_name', 'is', ['network']]], []],
      [[['project_external_id', 'is', ['prj-pay']]], [a1, a2]],
      [[['external_id', 'is', ['ws-aaa3']]], [a3]],
      [[['organization_name', 'is', ['acme-corp']]], ALL],
      [[['current_run_external_id', 'is', ['run-r2']]], [a2]],
      [[['tags', 'is', ['env:prod, team:payments']]], [a1], 'tags are de-duplicated, sorted, joined with ", "'],
      [[['providers', 'is', ['registry.terraform.io/hashicorp/aws@5.31.0']]], [a5]],
      [[['modules', 'is', ['./modules/app, registry.terraform.io/terraform-aws-modules/vpc/aws@5.5.1']]], [a1]],
      [[['workspace_terraform_version', 'is', ['1.5.7']]], [a1], 'string equality, not version equality'],
      [[['workspace_terraform_version', 'is', ['v1.5.7']]], [a5]],
      [[['state_version_terraform_version', 'is_not', ['1.5.7']]], [a3, a2, a4], 'is_not keeps null'],
    ]));

    describe('contains (ASCII-only case folding)', () => cases([
      [[['workspace_name', 'contains', ['PAYMENTS']]], [a1, a2]],
      [[['workspace_name', 'contains', ['payments']]], [a1, a2]],
      [[['workspace_name', 'contains', ['pAyMeNtS-W']]], [a2]],
      [[['workspace_name', 'contains', ['étl']]], [], 'É is not folded to é'],
      [[['workspace_name', 'contains', ['ÉTL']]], [a4]],
      [[['workspace_name', 'contains', ['Étl']]], [a4], 'T and L fold, É compares as it is'],
      [[['workspace_name', 'contains', ['CAFé']]], [a3]],
      [[['workspace_name', 'contains', ['CAFÉ']]], [], 'É does not fold to é'],
      [[['workspace_name', 'contains', ['"core", ']]], [a3]],
      [[['workspace_name', 'contains', ['-']]], [a5, a1, a2, a4]],
      [[['workspace_name', 'contains', ['%']]], [], '% is literal, not a wildcard'],
      [[['workspace_name', 'contains', ['_']]], [], '_ is literal, not a wildcard'],
      [[['current_run_status', 'contains', ['_']]], [a2], '_ matches only a real underscore'],
      [[['current_run_status', 'contains', ['ED_AND_F']]], [a2]],
      [[['vcs_repo_identifier', 'contains', ['ACME']]], [a5, a1], 'contains never matches null'],
      [[['tags', 'contains', ['ENV:']]], [a1]],
      [[['tags', 'contains', ['PCI']]], [a3]],
      [[['project_name', 'contains', ['NETWORK']]], [a3, a5, a4]],
      [[['providers', 'contains', ['hashicorp/AWS@5.31.0']]], [a3, a5, a1]],
      [[['modules', 'contains', ['./modules/']]], [a1]],
      [[['workspace_terraform_version', 'contains', ['1.10']]], [a3, a2]],
      [[['workspace_terraform_version', 'contains', ['V1']]], [a5]],
    ]));

    describe('does not contain, in all three spellings', () => {
      const spellings: [string, string][] = [
        ['does not contain (spaces, percent-encoded)', 'filter[0][vcs_repo_identifier][does%20not%20contain][0]=payments'],
        ['does+not+contain (raw plus signs)', 'filter[0][vcs_repo_identifier][does+not+contain][0]=payments'],
        ['does_not_contain', 'filter[0][vcs_repo_identifier][does_not_contain][0]=payments'],
        ['does not contain, client-encoded', clientQuery({ 'filter[0][vcs_repo_identifier][does not contain][0]': 'payments' }).slice(1)],
        ['does_not_contain, client-encoded', clientQuery({ 'filter[0][vcs_repo_identifier][does_not_contain][0]': 'payments' }).slice(1)],
      ];
      for (const [label, filter] of spellings) {
        it(`${label}: vcs_repo_identifier does not contain "payments" keeps nulls → [ws-aaa3, ws-aaa5, ws-aaa2, ws-aaa4]`, async () => {
          expect(await ids(`?type=workspaces&${filter}`)).to.deep.equal([a3, a5, a2, a4]);
        });
      }
      it('the spaces spelling sent unencoded by the URL parser also works', async () => {
        // fetch percent-encodes the spaces itself.
        expect(await ids('?type=workspaces&filter[0][workspace_name][does not contain][0]=PAYMENTS')).to.deep.equal([a3, a5, a4]);
      });
    });

    describe('does not contain (case folding and nulls)', () => cases([
      [[['workspace_name', 'does not contain', ['PAYMENTS']]], [a3, a5, a4]],
      [[['workspace_name', 'does_not_contain', ['étl']]], ALL, 'é does not fold É'],
      [[['workspace_name', 'does_not_contain', ['ÉTL']]], [a3, a5, a1, a2]],
      [[['workspace_name', 'does not contain', ['%']]], ALL],
      [[['tags', 'does not contain', ['PCI']]], [a5, a1, a2, a4], 'keeps null tags'],
      [[['current_run_status', 'does_not_contain', ['_']]], [a3, a5, a1, a4]],
      [[['modules', 'does not contain', ['vpc']]], [a3, a5, a4]],
    ]));

    describe('is_empty / is_not_empty', () => {
      cases([
        [[['vcs_repo_identifier', 'is_empty', ['']]], [a3, a2, a4], "'' in the source is stored as null and is empty"],
        [[['vcs_repo_identifier', 'is_empty', ['ignored']]], [a3, a2, a4], 'the value is ignored'],
        [[['vcs_repo_identifier', 'is_not_empty', ['']]], [a5, a1]],
        [[['tags', 'is_empty', ['']]], [a5, a2, a4], 'an empty tag list is null'],
        [[['tags', 'is_not_empty', ['']]], [a3, a1]],
        [[['modules', 'is_empty', ['']]], [a3, a5, a4]],
        [[['modules', 'is_not_empty', ['x']]], [a1, a2]],
        [[['providers', 'is_empty', ['']]], []],
        [[['current_run_status', 'is_empty', ['']]], [a3, a5, a4]],
        [[['current_run_external_id', 'is_not_empty', ['']]], [a1, a2]],
        [[['state_version_terraform_version', 'is_empty', ['']]], [a3, a4]],
        [[['workspace_name', 'is_empty', ['']]], []],
      ]);
      it('is_empty with no "=" in the component at all', async () => {
        expect(await ids('?type=workspaces&filter[0][vcs_repo_identifier][is_empty][0]')).to.deep.equal([a3, a2, a4]);
      });
    });
  });

  describe('number fields', () => {
    // resources_drifted: ws-aaa1 2, ws-aaa2 0, ws-aaa4 5, ws-aaa3 / ws-aaa5 null.
    describe('is / is_not', () => cases([
      [[['resources_drifted', 'is', ['2']]], [a1]],
      [[['resources_drifted', 'is', ['2.0']]], [a1], 'numeric, not textual equality'],
      [[['resources_drifted', 'is', ['2.5']]], []],
      [[['resources_drifted', 'is', ['-2']]], []],
      [[['resources_drifted', 'is', ['0']]], [a2], '0 is a value, not empty'],
      [[['resources_drifted', 'is_not', ['2']]], [a3, a5, a2, a4], 'is_not keeps null'],
      [[['resources_drifted', 'is_not', ['0.0']]], [a3, a5, a1, a4]],
      [[['checks_failed', 'is', ['0']]], [a3, a5, a1, a4], 'absent checks count as 0'],
      [[['checks_unknown', 'is', ['1']]], [a1]],
      [[['module_count', 'is', ['0']]], [a3, a5, a4]],
      [[['provider_count', 'is', ['2']]], [a3, a1], 'duplicate provider rows count once'],
      [[['resources_undrifted', 'is_not', ['40']]], [a3, a5, a2, a4]],
    ]));
    describe('gt / lt / gteq / lteq with decimals and negatives', () => cases([
      [[['resources_drifted', 'gt', ['1.5']]], [a1, a4]],
      [[['resources_drifted', 'gt', ['2']]], [a4], 'strict'],
      [[['resources_drifted', 'gt', ['5']]], []],
      [[['resources_drifted', 'gt', ['-1']]], [a1, a2, a4], 'gt never matches null'],
      [[['resources_drifted', 'gt', ['-0.5']]], [a1, a2, a4]],
      [[['resources_drifted', 'lt', ['2.5']]], [a1, a2]],
      [[['resources_drifted', 'lt', ['2']]], [a2], 'strict'],
      [[['resources_drifted', 'lt', ['0.5']]], [a2]],
      [[['resources_drifted', 'lt', ['0']]], []],
      [[['resources_drifted', 'lt', ['-1']]], []],
      [[['resources_drifted', 'lt', ['1000000']]], [a1, a2, a4], 'lt never matches null'],
      [[['resources_drifted', 'gteq', ['2']]], [a1, a4]],
      [[['resources_drifted', 'gteq', ['5.0']]], [a4]],
      [[['resources_drifted', 'gteq', ['-3.25']]], [a1, a2, a4], 'gteq never matches null'],
      [[['resources_drifted', 'gteq', ['5.001']]], []],
      [[['resources_drifted', 'lteq', ['2']]], [a1, a2]],
      [[['resources_drifted', 'lteq', ['0']]], [a2]],
      [[['resources_drifted', 'lteq', ['-0.5']]], []],
      [[['resources_drifted', 'lteq', ['99.99']]], [a1, a2, a4], 'lteq never matches null'],
      [[['checks_passed', 'lteq', ['1.5']]], [a3, a5, a2, a4]],
      [[['checks_passed', 'gteq', ['1']]], [a1, a2]],
      [[['checks_errored', 'gt', ['0']]], [a4]],
      [[['checks_failed', 'gt', ['-1']]], ALL],
      [[['resources_undrifted', 'gteq', ['12']]], [a1, a2]],
      [[['resources_undrifted', 'lt', ['12.000001']]], [a2]],
      [[['provider_count', 'gt', ['1']]], [a3, a1]],
      [[['module_count', 'lt', ['2']]], [a3, a5, a2, a4]],
    ]));
    describe('is_empty / is_not_empty on nullable numbers', () => cases([
      [[['resources_drifted', 'is_empty', ['']]], [a3, a5]],
      [[['resources_drifted', 'is_not_empty', ['']]], [a1, a2, a4]],
      [[['resources_undrifted', 'is_empty', ['']]], [a3, a5, a4], 'a drift object without resources_undrifted'],
      [[['checks_failed', 'is_empty', ['']]], [], 'checks are never null'],
      [[['checks_failed', 'is_not_empty', ['']]], ALL],
    ]));
  });

  describe('boolean fields', () => {
    // drifted: ws-aaa1 true, ws-aaa2 false, others null. all_checks_succeeded: false for ws-aaa2 (failed 2) and ws-aaa4 (errored 1).
    cases([
      [[['drifted', 'is', ['true']]], [a1]],
      [[['drifted', 'is', ['TRUE']]], [a1], 'any case'],
      [[['drifted', 'is', ['True']]], [a1]],
      [[['drifted', 'is', ['false']]], [a2], 'is false never matches null'],
      [[['drifted', 'is', ['FALSE']]], [a2]],
      [[['drifted', 'is_empty', ['']]], [a3, a5, a4]],
      [[['drifted', 'is_not_empty', ['']]], [a1, a2]],
      [[['all_checks_succeeded', 'is', ['true']]], [a3, a5, a1]],
      [[['all_checks_succeeded', 'is', ['fAlSe']]], [a2, a4]],
      [[['all_checks_succeeded', 'is_empty', ['']]], []],
      [[['all_checks_succeeded', 'is_not_empty', ['']]], ALL],
    ]);
  });

  describe('datetime fields', () => {
    describe('is_before / is_after on workspace_created_at (strict, offsets, fractions)', () => cases([
      [[['workspace_created_at', 'is_before', ['2023-01-01']]], [a3, a4]],
      [[['workspace_created_at', 'is_after', ['2023-01-01']]], [a5, a1, a2]],
      // ws-aaa2 was created at exactly 2023-02-01T00:00:00Z: the boundary is excluded both ways.
      [[['workspace_created_at', 'is_before', ['2023-02-01']]], [a3, a1, a4], 'YYYY-MM-DD is midnight UTC; equality excluded'],
      [[['workspace_created_at', 'is_after', ['2023-02-01']]], [a5], 'equality excluded'],
      [[['workspace_created_at', 'is_before', ['2023-02-01T00:00:00Z']]], [a3, a1, a4]],
      [[['workspace_created_at', 'is_after', ['2023-02-01T00:00:00.000Z']]], [a5]],
      [[['workspace_created_at', 'is_after', ['2023-01-31T23:59:59.999Z']]], [a5, a2]],
      [[['workspace_created_at', 'is_before', ['2023-02-01T00:00:00.001Z']]], [a3, a1, a2, a4]],
      [[['workspace_created_at', 'is_after', ['2023-02-01T00:00']]], [a5], 'no seconds, no offset = UTC'],
      [[['workspace_created_at', 'is_after', ['2023-01-31T23:59']]], [a5, a2]],
      [[['workspace_created_at', 'is_after', ['2023-02-01T02:00:00+02:00']]], [a5], '+02:00: the same instant as ws-aaa2'],
      [[['workspace_created_at', 'is_before', ['2023-02-01T02:00:00+02:00']]], [a3, a1, a4]],
      [[['workspace_created_at', 'is_after', ['2023-02-01T01:59:59+02:00']]], [a5, a2], 'offset applied: 2023-01-31T23:59:59Z'],
      [[['workspace_created_at', 'is_before', ['2023-02-01T02:00:01+02:00']]], [a3, a1, a2, a4]],
      [[['workspace_created_at', 'is_before', ['2023-01-31T19:00:00-05:00']]], [a3, a1, a4], '-05:00: the same instant as ws-aaa2'],
      [[['workspace_created_at', 'is_after', ['2023-01-31T19:00:00-05:00']]], [a5]],
      // ws-aaa1 was created at 2023-01-02T03:04:05.678Z.
      [[['workspace_created_at', 'is_after', ['2023-01-02T03:04:05.677']]], [a5, a1, a2], 'fraction'],
      [[['workspace_created_at', 'is_after', ['2023-01-02T03:04:05.678']]], [a5, a2], 'fraction, equality excluded'],
      [[['workspace_created_at', 'is_before', ['2023-01-02T03:04:05.679Z']]], [a3, a1, a4]],
      [[['workspace_created_at', 'is_before', ['2023-01-02T03:04:05.678Z']]], [a3, a4]],
      [[['workspace_created_at', 'is_after', ['2023-01-02T03:04:05.6779999Z']]], [a5, a1, a2], 'digits past milliseconds are truncated (.677)'],
      [[['workspace_created_at', 'is_before', ['2023-01-02T03:04:05.6789Z']]], [a3, a4], 'truncated to .678 = equal, excluded'],
      [[['workspace_created_at', 'is_after', ['2023-01-02T05:04:05.678+02:00']]], [a5, a2], 'fraction with offset'],
      // ws-aaa3 was created at 2022-06-30T23:59:59.5Z.
      [[['workspace_created_at', 'is_after', ['2022-06-30T23:59:59Z']]], [a3, a5, a1, a2]],
      [[['workspace_created_at', 'is_before', ['2022-06-30T23:59:59.5Z']]], [a4]],
      [[['workspace_created_at', 'is_before', ['2022-06-30T23:59:59.501Z']]], [a3, a4]],
    ]));
    describe('is_before / is_after on workspace_updated_at (source offsets and stored precision)', () => cases([
      // ws-aaa2's source value 2024-01-01T00:00:00+02:00 is 2023-12-31T22:00:00Z.
      [[['workspace_updated_at', 'is_before', ['2024-01-01']]], [a2, a4], 'the source offset was applied'],
      [[['workspace_updated_at', 'is_after', ['2023-12-31T22:00:00Z']]], [a3, a5, a1]],
      [[['workspace_updated_at', 'is_after', ['2023-12-31T23:59:59+02:00']]], [a3, a5, a1, a2]],
      // ws-aaa3's source value …07.891234Z is stored as …07.891Z.
      [[['workspace_updated_at', 'is_after', ['2025-03-04T05:06:07.891Z']]], [], 'stored value truncated to milliseconds'],
      [[['workspace_updated_at', 'is_after', ['2025-03-04T05:06:07.890999Z']]], [a3]],
    ]));
    describe('current_run_applied_at (nullable)', () => cases([
      [[['current_run_applied_at', 'is_empty', ['']]], [a3, a5, a2, a4], 'a run without applied_at is empty'],
      [[['current_run_applied_at', 'is_empty', ['whatever']]], [a3, a5, a2, a4]],
      [[['current_run_applied_at', 'is_not_empty', ['']]], [a1]],
      [[['current_run_applied_at', 'is_before', ['2100-01-01']]], [a1], 'is_before never matches null'],
      [[['current_run_applied_at', 'is_after', ['1970-01-01']]], [a1], 'is_after never matches null'],
      [[['current_run_applied_at', 'is_after', ['2024-05-06T07:08:09.999Z']]], []],
      [[['current_run_applied_at', 'is_after', ['2024-05-06T07:08:09.998Z']]], [a1]],
      [[['current_run_applied_at', 'is_before', ['2024-05-06T07:08:10Z']]], [a1]],
      [[['current_run_applied_at', 'is_after', ['2024-05-06T09:08:09.998+02:00']]], [a1]],
    ]));
  });

  describe('null rules (interface §4)', () => {
    // For each nullable field, the positive operators never return a null row and is_not / does not contain keep them.
    const NULLS = {
      vcs_repo_identifier: [a3, a2, a4],
      tags: [a5, a2, a4],
      resources_drifted: [a3, a5],
      drifted: [a3, a5, a4],
      current_run_applied_at: [a3, a5, a2, a4],
    };
    it('is / contains / gt / lt / gteq / lteq / is_before / is_after never return a row whose field is null', async () => {
      const probes: [keyof typeof NULLS, string, string][] = [
        ['vcs_repo_identifier', 'contains', ''], ['vcs_repo_identifier', 'contains', 'a'], ['tags', 'contains', ''],
        ['resources_drifted', 'gteq', '-1000'], ['resources_drifted', 'lteq', '1000'], ['resources_drifted', 'gt', '-1000'], ['resources_drifted', 'lt', '1000'],
        ['drifted', 'is', 'true'], ['drifted', 'is', 'false'],
        ['current_run_applied_at', 'is_before', '9999-12-31'], ['current_run_applied_at', 'is_after', '0001-01-01'],
      ];
      const results = await Promise.all(probes.map(([f, op, v]) => ids(rawQuery('workspaces', [[f, op, [v]]]))));
      probes.forEach(([f, op, v], i) => {
        for (const id of NULLS[f]) expect(results[i], `${f} ${op} ${JSON.stringify(v)} returned null row ${id}`).to.not.include(id);
      });
    });
    it('is_not and does not contain keep the rows whose field is null', async () => {
      const probes: [keyof typeof NULLS, string, string][] = [
        ['vcs_repo_identifier', 'is_not', 'acme/network'], ['vcs_repo_identifier', 'does not contain', 'acme'],
        ['tags', 'is_not', 'pci'], ['tags', 'does_not_contain', 'e'], ['resources_drifted', 'is_not', '5'],
      ];
      const results = await Promise.all(probes.map(([f, op, v]) => ids(rawQuery('workspaces', [[f, op, [v]]]))));
      probes.forEach(([f, op, v], i) => expect(results[i], `${f} ${op} ${v}`).to.include.members(NULLS[f]));
    });
    it('contains "" matches every non-null string and does not contain "" keeps only nulls', async () => {
      expect(await ids(rawQuery('workspaces', [['vcs_repo_identifier', 'contains', ['']]]))).to.deep.equal([a5, a1]);
      expect(await ids(rawQuery('workspaces', [['vcs_repo_identifier', 'does not contain', ['']]]))).to.deep.equal([a3, a2, a4]);
    });
  });

  describe('multi-value filters (j = 0, 1, …)', () => {
    cases([
      [[['workspace_name', 'is', ['payments-api', 'network-core']]], [a5, a1], 'any of'],
      [[['workspace_name', 'is_not', ['payments-api', 'network-core']]], [a3, a2, a4], 'none of'],
      [[['workspace_name', 'contains', ['PAYMENTS', 'core']]], [a3, a5, a1, a2], 'any of'],
      [[['workspace_name', 'does not contain', ['payments', 'core']]], [a4], 'none of'],
      [[['workspace_name', 'does_not_contain', ['api', 'WORKER']]], [a3, a5, a4]],
      [[['vcs_repo_identifier', 'does not contain', ['payments', 'network']]], [a3, a2, a4], 'none of; nulls kept'],
      [[['vcs_repo_identifier', 'is_not', ['acme/payments-api', 'acme/network']]], [a3, a2, a4]],
      [[['resources_drifted', 'is', ['2', '5']]], [a1, a4]],
      [[['resources_drifted', 'is_not', ['0', '2']]], [a3, a5, a4]],
      [[['resources_drifted', 'gt', ['4', '1']]], [a1, a4], 'any of: gt 4 or gt 1'],
      [[['resources_drifted', 'lt', ['1', '3']]], [a1, a2]],
      [[['drifted', 'is', ['true', 'false']]], [a1, a2]],
      [[['workspace_created_at', 'is_before', ['2021-06-01', '2022-07-01']]], [a3, a4]],
      [[['workspace_created_at', 'is_after', ['2024-01-01', '2023-01-31']]], [a5, a2]],
    ]);
    it('value indexes need not be contiguous (j = 0 and 3)', async () => {
      expect(await ids('?type=workspaces&filter[0][workspace_name][is][0]=payments-api&filter[0][workspace_name][is][3]=network-core')).to.deep.equal([a5, a1]);
    });
  });

  describe('several conditions (always AND)', () => {
    it('two fields under the same index 0 both apply', async () => {
      await expectIds([['workspace_name', 'contains', ['payments']], ['drifted', 'is', ['false']]], [a2], true);
      await expectIds([['project_name', 'is', ['Network']], ['resources_drifted', 'is_not_empty', ['']]], [a4], true);
    });
    it('two operators on the same field under the same index both apply', async () => {
      await expectIds([['resources_drifted', 'gt', ['0']], ['resources_drifted', 'lt', ['5']]], [a1], true);
    });
    it('conditions under different indexes combine with AND', async () => {
      await expectIds([['workspace_name', 'contains', ['PAY']], ['all_checks_succeeded', 'is', ['true']]], [a1]);
      await expectIds([['project_external_id', 'is', ['prj-net']], ['workspace_created_at', 'is_after', ['2022-01-01']], ['tags', 'is_empty', ['']]], [a5]);
    });
    it('indexes need not be contiguous, and a raw && is ignored', async () => {
      expect(await ids('?type=workspaces&&filter[7][workspace_name][contains][0]=pay&&filter[2][drifted][is][0]=true&')).to.deep.equal([a1]);
    });
  });

  describe('aggregate views', () => {
    const TFV = aggregateModel('tf_versions');
    const PRV = aggregateModel('providers');
    const MOD = aggregateModel('modules');
    const tfv = (v: string) => TFV.find((r) => r.attributes.version === v)!;
    const prv = (name: string, version: string, registry: string | null) =>
      PRV.find((r) => r.attributes.name === name && r.attributes.version === version && r.attributes.registry_type === registry)!;
    const mod = (name: string) => MOD.find((r) => r.attributes.name === name)!;
    const expectRows = (got: any[], expected: { id: string; attributes: Model }[], type: string) =>
      expect(got).to.deep.equal(expected.map((r) => ({ id: r.id, type, attributes: kebab(r.attributes) })));
    const sortIds = (...idList: string[]) => [...idList].sort(); // the final id tie-break, code-point order

    it('tf_versions: workspace_count gt 0 → every version, default order -version', async () => {
      // Descending versions: 1.10.0 > 1.10.0-rc1 > v1.5.7 (ties 1.5.7, exact string reversed) > 1.5.7, then the non-version latest.
      const got = await rows(encodedQuery('tf_versions', [['workspace_count', 'gt', ['0']]]));
      expectRows(got, ['1.10.0', '1.10.0-rc1', 'v1.5.7', '1.5.7', 'latest'].map(tfv), 'visibility-tf-version');
    });
    it('tf_versions: workspace_count gt 1 → none (globex also uses 1.5.7, but it is another organization)', async () => {
      expect(await rows(rawQuery('tf_versions', [['workspace_count', 'gt', ['1']]]))).to.deep.equal([]);
    });
    it('tf_versions: version is 1.5.7 → one row counting only payments-api', async () => {
      const got = await rows(rawQuery('tf_versions', [['version', 'is', ['1.5.7']]]));
      expectRows(got, [tfv('1.5.7')], 'visibility-tf-version');
      expect(got[0].attributes).to.include({ 'workspace-count': 1, workspaces: 'payments-api' });
    });
    it('tf_versions: version contains 1.10 / workspaces contains PAYMENTS', async () => {
      expectRows(await rows(rawQuery('tf_versions', [['version', 'contains', ['1.10']]])), [tfv('1.10.0'), tfv('1.10.0-rc1')], 'visibility-tf-version');
      expectRows(await rows(rawQuery('tf_versions', [['workspaces', 'contains', ['PAYMENTS']]])), [tfv('1.10.0'), tfv('1.5.7')], 'visibility-tf-version');
    });
    it('providers: registry_type is public', async () => {
      const got = await rows(encodedQuery('providers', [['registry_type', 'is', ['public']]]));
      // Default order name, then -version: aws 5.31.0, aws 4.67.0, random 3.6.0.
      expectRows(got, [prv('aws', '5.31.0', 'public'), prv('aws', '4.67.0', 'public'), prv('random', '3.6.0', 'public')], 'visibility-provider-version');
    });
    it('providers: registry_type is_empty / is_not public (null kept)', async () => {
      expectRows(await rows(rawQuery('providers', [['registry_type', 'is_empty', ['']]])), [prv('aws', '5.31.0', null)], 'visibility-provider-version');
      const got = await rows(rawQuery('providers', [['registry_type', 'is_not', ['public']]]));
      // aws (null registry) first by name; internal: -version puts beta.11 before beta.2 (numeric identifiers).
      expectRows(got, [prv('aws', '5.31.0', null), prv('internal', '0.1.0-beta.11', 'private'), prv('internal', '0.1.0-beta.2', 'private')], 'visibility-provider-version');
    });
    it('providers: version is 5.31.0 → the public and the unknown-registry rows, tie broken by id', async () => {
      const got = await rows(encodedQuery('providers', [['version', 'is', ['5.31.0']]]));
      const pub = prv('aws', '5.31.0', 'public');
      const unknown = prv('aws', '5.31.0', null);
      expect(got.map((r) => r.id)).to.deep.equal(sortIds(pub.id, unknown.id));
      expect(got.map((r) => r.id)).to.include('prv-39022641df8fbe25');
      expect(got.find((r) => r.id === pub.id).attributes).to.deep.equal(kebab(pub.attributes));
      expect(pub.attributes.workspaces).to.equal('Café "core", net, payments-api');
    });
    it('providers: workspace_count gt 1 → only aws 5.31.0 public; version is 3.0.0 (globex only) → none', async () => {
      expectRows(await rows(rawQuery('providers', [['workspace_count', 'gt', ['1']]])), [prv('aws', '5.31.0', 'public')], 'visibility-provider-version');
      expect(await rows(rawQuery('providers', [['version', 'is', ['3.0.0']]]))).to.deep.equal([]);
    });
    it('modules: name contains vpc → only acme-corp\'s vpc 5.5.1', async () => {
      const got = await rows(encodedQuery('modules', [['name', 'contains', ['vpc']]]));
      expectRows(got, [mod('vpc')], 'visibility-module-version');
      expect(got[0].attributes).to.deep.include({ version: '5.5.1', 'workspace-count': 2, workspaces: 'Payments-worker, payments-api' });
    });
    it('modules: name contains VPC and version is 5.5.1 under the same index (the spec\'s sample shape)', async () => {
      expectRows(await rows(rawQuery('modules', [['name', 'contains', ['VPC']], ['version', 'is', ['5.5.1']]], true)), [mod('vpc')], 'visibility-module-version');
      expect(await rows(rawQuery('modules', [['name', 'contains', ['vpc']], ['version', 'is', ['2.0.0']]], true))).to.deep.equal([]);
    });
    it('modules: version is_empty (local module), registry_type is public, source contains ./', async () => {
      expectRows(await rows(rawQuery('modules', [['version', 'is_empty', ['']]])), [mod('app')], 'visibility-module-version');
      expectRows(await rows(rawQuery('modules', [['registry_type', 'is', ['public']]])), [mod('vpc')], 'visibility-module-version');
      expectRows(await rows(rawQuery('modules', [['source', 'contains', ['./']]])), [mod('app')], 'visibility-module-version');
    });
  });

  describe('every operator of every field, against the fixture model', () => {
    // The model evaluates interface §4 on the fixture rows; one request per (view, field, operator, value).
    // Workspaces and resources come back in the model's default order; aggregate rows are compared by id.
    const VIEWS: Record<string, { rows: { id: string; attributes: Model }[]; ordered: boolean }> = {
      workspaces: { rows: DEFAULT_ORDER.map((id) => ({ id, attributes: MODEL.get(id)! })), ordered: true },
      resources: { rows: resourceRows(), ordered: true },
      tf_versions: { rows: aggregateModel('tf_versions'), ordered: false },
      providers: { rows: aggregateModel('providers'), ordered: false },
      modules: { rows: aggregateModel('modules'), ordered: false },
    };
    const OPS = {
      string: ['is', 'is_not', 'contains', 'does not contain', 'is_empty', 'is_not_empty'],
      number: ['is', 'is_not', 'gt', 'lt', 'gteq', 'lteq', 'is_empty', 'is_not_empty'],
      boolean: ['is', 'is_empty', 'is_not_empty'],
      datetime: ['is_before', 'is_after', 'is_empty', 'is_not_empty'],
    };
    const fold = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
    const ms = (iso: string) => Date.parse(iso.replace(/\+00:00$/, 'Z'));
    function evaluate(type: string, v: Model[string], op: string, value: string): boolean {
      if (op === 'is_empty') return v === null || v === '';
      if (op === 'is_not_empty') return !(v === null || v === '');
      switch (type) {
        case 'string':
          if (op === 'is') return v === value;
          if (op === 'is_not') return v !== value; // null kept
          if (op === 'contains') return v !== null && fold(String(v)).includes(fold(value));
          return v === null || !fold(String(v)).includes(fold(value));
        case 'number': {
          const n = Number(value);
          if (op === 'is_not') return v === null || v !== n;
          if (v === null) return false;
          return op === 'is' ? v === n : op === 'gt' ? (v as number) > n : op === 'lt' ? (v as number) < n : op === 'gteq' ? (v as number) >= n : (v as number) <= n;
        }
        case 'boolean':
          return v !== null && v === (value.toLowerCase() === 'true');
        case 'datetime':
          if (v === null) return false;
          return op === 'is_before' ? ms(String(v)) < ms(value) : ms(String(v)) > ms(value);
      }
      throw new Error(type);
    }
    /** One probe value per operator: the median of the field's non-null values in the model (a substring for contains). */
    function valuesFor(type: string, seen: Model[string][], op: string): string[] {
      if (op.endsWith('empty')) return [''];
      switch (type) {
        case 'boolean': return ['true', 'FALSE'];
        case 'number': {
          const sorted = (seen as number[]).sort((x, y) => x - y);
          return [String(sorted[Math.floor(sorted.length / 2)])];
        }
        case 'datetime': {
          const sorted = (seen as string[]).sort();
          return [sorted[Math.floor(sorted.length / 2)]!.replace('+00:00', 'Z')];
        }
        default: {
          const pick = String(seen[Math.floor(seen.length / 2)]);
          return op === 'is' || op === 'is_not' ? [pick] : [pick.slice(1, 5).toUpperCase()];
        }
      }
    }
    for (const [view, { rows: model, ordered }] of Object.entries(VIEWS)) {
      for (const [field, type] of Object.entries(CONTRACT[view]!)) {
        it(`${view}.${field}`, async () => {
          const seen = [...new Set(model.map((m) => m.attributes[field]).filter((v) => v !== null))];
          expect(seen.length, 'the fixture has values to probe').to.be.above(0);
          const checks = OPS[type].flatMap((op) => valuesFor(type, seen, op).map((value) => ({ op, value })));
          const results = await Promise.all(checks.map(({ op, value }) => ids(rawQuery(view, [[field, op, [value]]]))));
          checks.forEach(({ op, value }, i) => {
            const expected = model.filter((m) => evaluate(type, m.attributes[field]!, op, value)).map((m) => m.id);
            const got = ordered ? results[i]! : [...results[i]!].sort();
            expect(got, `${view}: ${field} ${op} ${JSON.stringify(value)}`).to.deep.equal(ordered ? expected : expected.sort());
          });
        });
      }
    }
  });

  describe('organization isolation', () => {
    it('no filter on acme-corp returns globex\'s workspace, project, tags or versions', async () => {
      const probes: Cond[][] = [
        [['organization_name', 'is', ['globex']]],
        [['organization_name', 'is_not', ['acme-corp']]],
        [['workspace_name', 'contains', ['globex']]],
        [['external_id', 'is', ['ws-bbb1']]],
        [['project_name', 'is', ['secret-project']]],
        [['project_external_id', 'is', ['prj-glx']]],
        [['tags', 'contains', ['secret']]],
        [['modules', 'contains', ['@2.0.0']]],
        [['providers', 'contains', ['@3.0.0']]],
      ];
      const results = await Promise.all(probes.map((p) => ids(rawQuery('workspaces', p))));
      results.forEach((r, i) => expect(r, JSON.stringify(probes[i])).to.deep.equal([]));
      expect(await ids(rawQuery('workspaces', [['workspace_terraform_version', 'is', ['1.5.7']]]))).to.deep.equal([a1]);
      expect(await ids(rawQuery('workspaces', [['workspace_name', 'is_not', ['nothing']]]))).to.deep.equal(ALL);
      expect(await ids(rawQuery('workspaces', [['tags', 'does not contain', ['zzz']]]))).to.deep.equal(ALL);
    });
    it('aggregate views count only acme-corp\'s workspaces', async () => {
      expect(await rows(rawQuery('modules', [['version', 'is', ['2.0.0']]]))).to.deep.equal([]);
      expect(await rows(rawQuery('tf_versions', [['workspaces', 'contains', ['globex']]]))).to.deep.equal([]);
      expect(await rows(rawQuery('providers', [['workspaces', 'contains', ['globex']]]))).to.deep.equal([]);
      const all = await rows('?type=providers&page[size]=100');
      expect(all.reduce((s, r) => s + r.attributes['workspace-count'], 0)).to.equal(7); // acme-corp provider usages by workspace
    });
    it('the globex rows exist: globex\'s token sees them on its own organization', async () => {
      const res = await get('/api/v2/organizations/globex/explorer?type=workspaces&filter[0][tags][contains][0]=secret', h.tokens.otherOrg);
      const body = await okBody(res);
      expect(body.data.map((r: any) => r.id)).to.deep.equal(['ws-bbb1']);
    });
  });

  describe('invalid filters are a 400 (interface §4)', () => {
    const bad: [string, string | null][] = [
      ['filter[0][workspace_name][gt][0]=a', 'filter[0][workspace_name][gt][0]'],
      ['filter[0][drifted][is_not][0]=true', 'filter[0][drifted][is_not][0]'],
      ['filter[0][resources_drifted][contains][0]=1', 'filter[0][resources_drifted][contains][0]'],
      ['filter[0][workspace_created_at][is][0]=2023-01-01', 'filter[0][workspace_created_at][is][0]'],
      ['filter[0][no_such_field][is][0]=x', 'filter[0][no_such_field][is][0]'],
      ['filter[x][workspace_name][is][0]=x', 'filter[x][workspace_name][is][0]'],
      ['filter[0][drifted][is][0]=yes', null],
      ['filter[0][resources_drifted][gt][0]=1e3', null],
      ['filter[0][resources_drifted][gt][0]=.5', null],
      ['filter[0][workspace_created_at][is_before][0]=yesterday', null],
    ];
    for (const [q, parameter] of bad) {
      it(`${q} → 400${parameter ? ` naming ${parameter}` : ''}`, async () => {
        const res = await explorer(`?type=workspaces&${q}`);
        const body = await json(res);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(body.errors?.[0]?.status).to.equal('400');
        if (parameter) expect(body.errors[0].source?.parameter).to.equal(parameter);
      });
    }
  });
});
