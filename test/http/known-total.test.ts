// An unfiltered page takes its total from the manifest (no count query). It must equal what DuckDB counts:
// the rows of the same query's CSV export, which never uses the manifest.
import { expect } from 'chai';
import { readManifest, readCurrentId } from '../../src/snapshots/snapshot-dir.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';

describe('totals of unfiltered pages', () => {
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.close(); });

  it('are recorded per view and organization in the manifest', async () => {
    const manifest = await readManifest(h.dataDir, (await readCurrentId(h.dataDir))!);
    expect(manifest.organizationRows).to.have.keys(Object.keys(manifest.files));
    for (const view of Object.keys(manifest.files)) {
      const sum = Object.values(manifest.organizationRows![view]!).reduce((a, b) => a + b, 0);
      expect(sum, view).to.equal(manifest.rows[view]);
    }
  });

  for (const [org, token] of [['acme-corp', 'org'], ['globex', 'otherOrg'], ['empty-org', 'emptyOrg']] as const) {
    for (const view of ['workspaces', 'tf_versions', 'providers', 'modules', 'resources']) {
      it(`equal the exported rows for ${org} / ${view}`, async () => {
        const base = `/api/v2/organizations/${org}/explorer`;
        const page = await h.request(`${base}?type=${view}&page%5Bsize%5D=1`, { token: h.tokens[token] });
        expect(page.status).to.equal(200);
        const total = (await json(page)).meta.pagination['total-count'];
        const csv = await (await h.request(`${base}/export/csv?type=${view}`, { token: h.tokens[token] })).text();
        expect(total).to.equal(csv.trimEnd().split('\n').length - 1);
        if (org !== 'empty-org') expect(total).to.be.above(0);
      });
    }
  }
});
