// Size limits (docs/decisions.md): answered with a JSON:API 4xx before any query runs.
import { expect } from 'chai';
import { connect } from 'node:net';
import { startHarness, json, type Harness } from '../helpers/harness.js';

/** Sends raw bytes and returns the raw answer (for requests fetch would refuse to send). */
function raw(h: Harness, request: string): Promise<string> {
  const { hostname, port } = new URL(h.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    let out = '';
    socket.on('data', (d) => { out += d.toString(); });
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}

describe('size limits', () => {
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.close(); });

  it('answers 414 for a URL over 8 KiB, before the token is checked', async () => {
    const long = `?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bcontains%5D%5B0%5D=${'a'.repeat(8200)}`;
    for (const token of [h.tokens.org, null]) {
      const res = await h.request(`/api/v2/organizations/acme-corp/explorer${long}`, { token });
      expect(res.status).to.equal(414);
      expect((await json(res)).errors[0]).to.include({ status: '414' });
    }
    const fits = `?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bcontains%5D%5B0%5D=${'a'.repeat(7900)}`;
    expect((await h.explorer(fits)).status).to.equal(200);
  });

  it('answers 431 with a JSON:API body for headers over 16 KiB', async () => {
    const answer = await raw(h, `GET /api/v2/ping HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(17000)}\r\n\r\n`);
    expect(answer).to.match(/^HTTP\/1\.1 431 /);
    expect(answer).to.include('Content-Type: application/vnd.api+json');
    expect(JSON.parse(answer.split('\r\n\r\n')[1]!).errors[0].status).to.equal('431');
  });

  it('answers 400 with a JSON:API body for a request that is not HTTP', async () => {
    const answer = await raw(h, 'THIS IS NOT HTTP\r\n\r\n');
    expect(answer).to.match(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(answer.split('\r\n\r\n')[1]!).errors[0].status).to.equal('400');
  });

  it('answers 400 for more than 20 sort keys or more than 100 fields', async () => {
    const sort = await h.explorer(`?type=workspaces&sort=${Array(21).fill('workspace_name').join(',')}`);
    expect(sort.status).to.equal(400);
    expect((await json(sort)).errors[0]).to.deep.include({ source: { parameter: 'sort' }, detail: 'Give at most 20 sort keys.' });
    expect((await h.explorer(`?type=workspaces&sort=${Array(20).fill('workspace_name').join(',')}`)).status).to.equal(200);
    const fields = await h.explorer(`?type=workspaces&fields=${Array(101).fill('workspace_name').join(',')}`);
    expect(fields.status).to.equal(400);
    expect((await json(fields)).errors[0]).to.deep.include({ source: { parameter: 'fields' }, detail: 'Name at most 100 fields.' });
  });
});
