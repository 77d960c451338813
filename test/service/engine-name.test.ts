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
});
