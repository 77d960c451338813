// interface §1: EXPLORER_ENGINE renames the engine-version fields everywhere a client sees them.
import { expect } from 'chai';
import { startHarness, json, type Harness } from '../helpers/harness.js';

describe('EXPLORER_ENGINE', () => {
  let h: Harness;
  before(async () => { h = await startHarness({ env: { EXPLORER_ENGINE: 'opentofu' } }); });
  after(async () => { await h.close(); });

  it('names the version fields after the engine in filters, sort, JSON and CSV', async () => {
    const query = '?type=workspaces&fields=workspace_name,workspace_opentofu_version,state_version_opentofu_version'
      + '&sort=-workspace_opentofu_version&filter%5B0%5D%5Bworkspace_opentofu_version%5D%5Bis%5D%5B0%5D=1.5.7';
    const body = await json(await h.explorer(query));
    expect(body.data.map((r: any) => r.attributes)).to.deep.equal([
      { 'workspace-name': 'payments-api', 'workspace-opentofu-version': '1.5.7', 'state-version-opentofu-version': '1.5.7' },
    ]);
    const csv = await (await h.request(`/api/v2/organizations/acme-corp/explorer/export/csv${query}`)).text();
    expect(csv).to.equal('workspace_name,workspace_opentofu_version,state_version_opentofu_version\n"payments-api","1.5.7","1.5.7"\n');
    const old = await h.explorer('?type=workspaces&sort=workspace_terraform_version');
    expect(old.status).to.equal(400);
    expect((await json(old)).errors[0].source).to.deep.equal({ parameter: 'sort' });
  });

  it('names the resources view\'s version field <engine>_version, placed alphabetically by that name', async () => {
    const query = '?type=resources&sort=-opentofu_version,address&filter%5B0%5D%5Bopentofu_version%5D%5Bcontains%5D%5B0%5D=1.10';
    const body = await json(await h.explorer(query));
    expect(body.data.map((r: any) => [r.attributes.address, r.attributes['opentofu-version']])).to.deep.equal([
      ['module.vpc.aws_subnet.private["a,b"]', '1.10.0'], ['module.app.internal_thing.x', '1.10.0-rc1'],
    ]);
    const keys = Object.keys(body.data[0].attributes);
    expect(keys.indexOf('opentofu-version')).to.equal(keys.indexOf('name') + 1); // name < opentofu_version < organization_external_id
    const csv = await (await h.request(`/api/v2/organizations/acme-corp/explorer/export/csv${query}&fields=address,opentofu_version`)).text();
    expect(csv).to.equal('address,opentofu_version\n"module.vpc.aws_subnet.private[""a,b""]","1.10.0"\n"module.app.internal_thing.x","1.10.0-rc1"\n');
    const old = await h.explorer('?type=resources&fields=terraform_version');
    expect(old.status).to.equal(400);
    expect((await json(old)).errors[0].source).to.deep.equal({ parameter: 'fields' });
  });
});
