// Organization isolation, differentially: for every token kind and every organization (and names that do
// not exist), a response either shows only that organization's data or is the one 404 that reveals nothing.
// Who may see what is computed here from the source files, independently of src/access.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { issueToken } from '../../src/access/tokens.js';
import { writeSample } from '../../src/sample/sample.js';
import { openStateStore } from '../../src/store/open-store.js';
import { startHarness, json, type Harness } from '../helpers/harness.js';

type Row = Record<string, any>;
const read = (dir: string, file: string): Row[] =>
  readFileSync(join(dir, file), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));

interface Caller { label: string; token: string; sees: Set<string> }

describe('organization isolation (differential)', function () {
  this.timeout(120_000);
  let h: Harness;
  const callers: Caller[] = [];
  let orgs: string[] = [];
  const namesByOrg = new Map<string, Set<string>>();
  const source = () => join(h.dataDir, 'source');

  before(async () => {
    h = await startHarness({ writeSource: (dir) => writeSample(dir, { organizations: 12, workspaces: 1200, seed: 11 }) });
    orgs = read(source(), 'organizations.ndjson').map((o) => o.name);
    for (const w of read(source(), 'workspaces.ndjson')) {
      if (!namesByOrg.has(w.organization)) namesByOrg.set(w.organization, new Set());
      namesByOrg.get(w.organization)!.add(w.name);
    }
    const teams = read(source(), 'teams.ndjson');
    const qualifies = (org: string, team: string) => teams.some((t) => t.organization === org && t.name === team && (t.name === 'owners' || t.read_workspaces === true || t.read_projects === true));
    const members = read(source(), 'team_members.ndjson');
    const store = await openStateStore(h.config);
    const add = async (label: string, spec: Parameters<typeof issueToken>[1], sees: string[]) =>
      callers.push({ label, token: (await issueToken(store, spec)).token, sees: new Set(sees) });
    for (const org of orgs.slice(0, 4)) {
      await add(`org token ${org}`, { kind: 'organization', organization: org }, [org]);
      for (const team of teams.filter((t) => t.organization === org).slice(0, 3)) {
        await add(`team ${org}/${team.name}`, { kind: 'team', organization: org, team: team.name }, qualifies(org, team.name) ? [org] : []);
      }
    }
    for (const user of [...new Set(members.map((m) => m.user))].slice(0, 6)) {
      const sees = members.filter((m) => m.user === user && qualifies(m.organization, m.team)).map((m) => m.organization);
      await add(`user ${user}`, { kind: 'user', user }, sees);
    }
    await store.close();
    expect(callers.filter((c) => c.sees.size === 0).length, 'some callers see nothing').to.be.above(0);
    expect(callers.filter((c) => c.sees.size > 1).length, 'some callers see several organizations').to.be.above(0);
  });
  after(async () => { await h.close(); });

  const headerNames = (res: Response) => [...res.headers.keys()].filter((k) => !['date', 'x-request-id'].includes(k) && !k.startsWith('x-ratelimit')).sort().join(',');

  it('shows each caller exactly its organizations, and everything else as one indistinguishable 404', async () => {
    let reference: { body: string; headers: string } | undefined;
    let allowedChecked = 0;
    let deniedChecked = 0;
    const deniedRoutes = new Set<number>();
    for (const [c, caller] of callers.entries()) {
      for (const [o, org] of [...orgs, 'no-such-org', 'Acme-Corp'].entries()) {
        const base = `/api/v2/organizations/${org}/explorer`;
        const routes = [
          ...['workspaces', 'tf_versions', 'providers', 'modules'].map((view) => `${base}?type=${view}&page%5Bsize%5D=100`),
          `${base}/export/csv?type=workspaces&fields=organization_name,workspace_name`,
          `${base}/views`,
        ];
        // An organization the caller may see is asked on every route. One it may not is asked on two of the
        // six, in turn: each caller still meets the 404 on every route (it asks 14 organizations), every
        // organization on every route, and every answer is compared with the one reference.
        const asked = caller.sees.has(org) ? routes.map((_, i) => i) : [(c + o) % routes.length, (c + o + 3) % routes.length];
        const responses = await Promise.all(asked.map((i) => h.request(routes[i]!, { token: caller.token })));
        if (caller.sees.has(org)) {
          allowedChecked++;
          for (const res of responses) expect(res.status, `${caller.label} on ${org}`).to.equal(200);
          const [ws, tfv, prv, mod] = await Promise.all(responses.slice(0, 4).map(json));
          const mine = namesByOrg.get(org)!;
          for (const row of ws.data) expect(row.attributes['organization-name']).to.equal(org);
          for (const body of [tfv, prv, mod]) {
            for (const row of body.data) {
              for (const name of splitNames(row.attributes.workspaces)) expect(mine.has(name), `${name} listed for ${org}`).to.equal(true);
            }
          }
          const csv = (await responses[4]!.text()).trim().split('\n').slice(1);
          for (const line of csv) expect(line.startsWith(`"${org}",`), line).to.equal(true);
          expect(csv.length).to.equal(mine.size);
          await responses[5]!.text();
        } else {
          deniedChecked++;
          for (const i of asked) deniedRoutes.add(i);
          for (const res of responses) {
            expect(res.status, `${caller.label} on ${org}`).to.equal(404);
            const seen = { body: await res.text(), headers: headerNames(res) };
            reference ??= seen;
            expect(seen).to.deep.equal(reference);
          }
        }
      }
    }
    expect(allowedChecked).to.be.above(5);
    expect(deniedChecked).to.be.above(50);
    expect(deniedRoutes.size, 'every route answered a 404').to.equal(6);
  });

  it("answers another organization's saved view exactly like an unknown one, on every route", async () => {
    const owner = callers.find((c) => c.sees.size === 1 && c.label.startsWith('org token'))!;
    const org = [...owner.sees][0]!;
    const created = await h.request(`/api/v2/organizations/${org}/explorer/views`, {
      token: owner.token, method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ data: { name: 'secret view', query_type: 'workspaces', query: { filter: [] } } }),
    });
    expect(created.status).to.equal(201);
    const id = (await json(created)).data.id as string;
    const outsiders = callers.filter((c) => !c.sees.has(org));
    expect(outsiders.length).to.be.above(0);
    for (const caller of outsiders) {
      const target = [...caller.sees][0] ?? org;
      for (const [method, suffix] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['GET', '/results'], ['GET', '/csv']] as const) {
        const init = { token: caller.token, method, headers: { 'Content-Type': 'application/json' }, body: method === 'PATCH' ? JSON.stringify({ data: { name: 'x', query: { filter: [] } } }) : undefined };
        const known = await h.request(`/api/v2/organizations/${target}/explorer/views/${id}${suffix}`, init);
        const unknown = await h.request(`/api/v2/organizations/${target}/explorer/views/sq-AAAAAAAAAAAAAAAA${suffix}`, init);
        expect(known.status, `${caller.label} ${method} ${suffix}`).to.equal(404);
        expect(await known.text()).to.equal(await unknown.text());
      }
    }
    const still = await h.request(`/api/v2/organizations/${org}/explorer/views/${id}`, { token: owner.token });
    expect((await json(still)).data.attributes.name).to.equal('secret view');
  });
});

/** Splits a ", "-joined list of names; names may themselves contain ", " only if the fixture made them so. */
function splitNames(list: string | null): string[] {
  return list === null ? [] : list.split(', ');
}
