// History and summaries run under the same deadline as queries: with a deadline of 1 ms, a change set, its CSV,
// a filtered trend, a page of an older snapshot and a summary and its CSV answer 504 and name the deadline (within a few tries: a query of the small fixture may end inside its millisecond), and the server keeps answering
// (an unfiltered trend needs no query at all: the manifests have its counts).
import { expect } from 'chai';
import { DAY1, loadDays, writeDay } from '../helpers/history-days.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';

describe('history past its deadline', function () {
  this.timeout(60_000);
  let h: Harness;
  let ids: string[];
  before(async () => {
    h = await startHarness({ env: { QUERY_TIMEOUT_MS: '1', RESPONSE_CACHE_MB: '0' }, writeSource: (dir) => writeDay(dir, DAY1) });
    ids = await loadDays(h);
  });
  after(async () => { await h.close(); });

  it('answers 504 for changes, their CSV, a filtered trend, time travel and summaries; an unfiltered trend still answers', async () => {
    for (const path of [
      `/changes?type=workspaces&from=${ids[0]}`,
      `/changes/export/csv?type=workspaces&from=${ids[0]}`,
      '/trend?type=workspaces&filter%5B0%5D%5Bdrifted%5D%5Bis%5D%5B0%5D=true',
      `?type=workspaces&snapshot=${ids[0]}`,
      '/summary?type=workspaces&group_by=tags', '/summary/export/csv?type=resources&group_by=provider_type',
    ]) {
      // A small fixture's query can end within its millisecond now and then on a quiet machine: it may answer,
      // but within a few tries the deadline must stop it (without a deadline, none would).
      let timedOut = false;
      for (let attempt = 0; attempt < 20 && !timedOut; attempt++) {
        const res = await h.explorer(path);
        expect(res.status, path).to.be.oneOf([200, 504]);
        if (res.status === 504) {
          expect((await json(res)).errors[0].title, path).to.equal('query timed out');
          timedOut = true;
        } else {
          // An export whose deadline came after its first bytes is cut off: no 504 can follow its 200. Another try.
          await res.arrayBuffer().catch((e: Error) => { if (e.name !== 'TypeError' || !path.includes('/export/')) throw e; });
        }
      }
      expect(timedOut, `${path}: past its deadline in one of 20 tries`).to.equal(true);
    }
    const trend = await h.explorer('/trend?type=workspaces');
    expect(trend.status).to.equal(200);
    expect((await json(trend)).data).to.have.length(3);
    expect((await h.explorer('/snapshots')).status).to.equal(200);
  });
});
