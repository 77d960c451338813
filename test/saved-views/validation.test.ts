// Saved views, every refusal over real HTTP (interface §6 body rules, §7 statuses and precedence, §8;
// docs/decisions.md "Saved views"): 415, 413, 400 for bodies that are not JSON, 422 with the exact
// source.pointer for every invalid member, the precedence 401 → 404 → 415/413/400/422, and the empty list.
//
// Pointers follow RFC 6901 and name the member in the request body: `/data/attributes/…` in the JSON:API
// layout, `/data/…` in the flat one. Bad input never yields a 500.
import { expect } from 'chai';
import { request as httpRequest } from 'node:http';
import { issueToken } from '../../src/access/tokens.js';
import { openStateStore } from '../../src/store/open-store.js';
import { ORG } from '../fixtures/small-source.js';
import { startHarness, type Harness } from '../helpers/harness.js';

const VIEWS = `/api/v2/organizations/${ORG}/explorer/views`;
const JSONAPI = 'application/vnd.api+json';
const LIMIT = 64 * 1024;
const NOT_FOUND = {
  errors: [{ status: '404', title: 'not found', detail: 'The organization or resource does not exist, or you are not authorized to access it.' }],
};

interface Answer { status: number; headers: Headers; text: string; body: any }
type Layout = 'flat' | 'jsonapi';

let serial = 0;
const uniqueName = (prefix = 'v') => `${prefix} ${++serial}`;

/** A body in either layout: `members` become data (flat) or data.attributes (JSON:API). */
function body(layout: Layout, members: Record<string, unknown>): unknown {
  return layout === 'flat' ? { data: members } : { data: { type: 'explorer-saved-queries', attributes: members } };
}
const base = (layout: Layout) => (layout === 'flat' ? '/data' : '/data/attributes');
const typeKey = (layout: Layout) => (layout === 'flat' ? 'query_type' : 'query-type');

describe('saved views: validation and errors (interface §6–§8)', function () {
  this.timeout(30_000);
  let h: Harness;
  before(async () => { h = await startHarness({ env: { RATE_LIMIT_MAX: '100000' } }); });
  after(async () => { await h.close(); });

  async function call(method: string, path: string, payload?: unknown, opts: { token?: string | null; contentType?: string | null } = {}): Promise<Answer> {
    const headers: Record<string, string> = {};
    let data: string | Uint8Array | undefined;
    if (payload !== undefined) {
      data = typeof payload === 'string' || payload instanceof Uint8Array ? payload : JSON.stringify(payload);
      if (typeof data === 'string') data = new TextEncoder().encode(data); // no implicit text/plain
      if (opts.contentType !== null) headers['Content-Type'] = opts.contentType ?? JSONAPI;
    }
    const res = await h.request(path, { method, headers, body: data, token: opts.token === undefined ? h.tokens.org : opts.token });
    const text = await res.text();
    let parsed: any;
    try { parsed = text === '' ? undefined : JSON.parse(text); } catch { parsed = undefined; }
    return { status: res.status, headers: res.headers, text, body: parsed };
  }

  function expectError(res: Answer, status: number, source?: Record<string, string>): void {
    expect(res.status, res.text).to.equal(status);
    expect(res.headers.get('content-type')).to.equal(JSONAPI);
    expect(res.body.errors).to.be.an('array').with.length(1);
    const e = res.body.errors[0];
    expect(e.status).to.equal(String(status));
    expect(e.title).to.be.a('string').and.not.empty;
    expect(e.detail).to.be.a('string').and.not.empty;
    if (source) expect(e.source).to.deep.equal(source);
  }
  const expect422 = (res: Answer, pointer: string) => expectError(res, 422, { pointer });

  let unknownOrg404: string;

  describe('empty lists', () => {
    it('lists no views in a store where no view was ever written', async () => {
      const res = await call('GET', VIEWS);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal(JSONAPI);
      const link = (n: number) => `${h.url}${VIEWS}?page%5Bnumber%5D=${n}&page%5Bsize%5D=20`;
      expect(res.body).to.deep.equal({
        data: [],
        links: { self: link(1), first: link(1), prev: null, next: null, last: link(1) },
        meta: { pagination: { 'current-page': 1, 'page-size': 20, 'next-page': null, 'prev-page': null, 'total-pages': 1, 'total-count': 0 } },
      });
    });

    it('lists no views for an organization that has none (while another has some)', async () => {
      const made = await call('POST', VIEWS, body('flat', { name: uniqueName(), query_type: 'workspaces', query: { filter: [] } }));
      expect(made.status).to.equal(201);
      const store = await openStateStore(h.config);
      let token: string;
      try { token = (await issueToken(store, { kind: 'organization', organization: 'empty-org' })).token; } finally { await store.close(); }
      for (const [org, t] of [['empty-org', token], ['globex', h.tokens.otherOrg]] as const) {
        const res = await call('GET', `/api/v2/organizations/${org}/explorer/views`, undefined, { token: t });
        expect(res.status, org).to.equal(200);
        expect(res.body.data, org).to.deep.equal([]);
        expect(res.body.meta.pagination['total-count'], org).to.equal(0);
      }
    });
  });

  describe('body type, size and syntax', () => {
    const valid = () => body('flat', { name: uniqueName(), query_type: 'workspaces', query: { filter: [] } });

    for (const [label, contentType] of [
      ['no Content-Type', null],
      ['text/plain', 'text/plain'],
      ['text/plain; charset=utf-8', 'text/plain; charset=utf-8'],
      ['multipart/form-data', 'multipart/form-data; boundary=xyz'],
      ['application/x-www-form-urlencoded', 'application/x-www-form-urlencoded'],
      ['application/xml', 'application/xml'],
    ] as const) {
      it(`answers 415 for a JSON body sent with ${label} (POST and PATCH)`, async () => {
        const res = await call('POST', VIEWS, valid(), { contentType });
        expectError(res, 415, { header: 'Content-Type' });
        const made = await call('POST', VIEWS, valid());
        expect(made.status).to.equal(201);
        const patch = await call('PATCH', `${VIEWS}/${made.body.data.id}`, { data: { name: uniqueName(), query: { filter: [] } } }, { contentType });
        expectError(patch, 415, { header: 'Content-Type' });
      });
    }

    it('answers 415 for a real multipart form (fetch FormData)', async () => {
      const form = new FormData();
      form.set('data', JSON.stringify({ name: uniqueName(), query_type: 'workspaces', query: { filter: [] } }));
      const res = await h.request(VIEWS, { method: 'POST', body: form });
      const text = await res.text();
      expectError({ status: res.status, headers: res.headers, text, body: JSON.parse(text) }, 415, { header: 'Content-Type' });
    });

    /** A JSON body of exactly `size` bytes (padded with spaces, which JSON ignores). */
    const sized = (size: number) => {
      const text = JSON.stringify(valid());
      return text + ' '.repeat(size - Buffer.byteLength(text));
    };

    it('accepts a body of exactly 64 KiB', async () => {
      const res = await call('POST', VIEWS, sized(LIMIT));
      expect(res.status, res.text).to.equal(201);
    });

    it('answers 413 for a body one byte over 64 KiB with a correct Content-Length', async () => {
      const res = await call('POST', VIEWS, sized(LIMIT + 1));
      expectError(res, 413);
      const big = await call('POST', VIEWS, sized(1024 * 1024));
      expectError(big, 413);
    });

    /** Sends `chunks` with Transfer-Encoding: chunked and no Content-Length; resolves with the answer. */
    function chunked(path: string, chunks: Buffer[], method = 'POST'): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
      const url = new URL(h.url + path);
      return new Promise((resolve, reject) => {
        const req = httpRequest({
          host: url.hostname, port: url.port, path: url.pathname, method,
          headers: { Authorization: `Bearer ${h.tokens.org}`, 'Content-Type': JSONAPI, 'Transfer-Encoding': 'chunked' },
        }, (res) => {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }));
          res.on('error', reject);
        });
        // The server may answer and close before the whole upload is sent; that is the point.
        req.on('error', (e) => reject(e));
        let i = 0;
        const next = () => {
          if (i === chunks.length) { req.end(); return; }
          const ok = req.write(chunks[i++]);
          if (ok) setImmediate(next); else req.once('drain', next);
        };
        next();
      });
    }

    it('answers 413 for a chunked body without Content-Length once it passes 64 KiB, and closes the connection', async () => {
      const text = Buffer.from(sized(LIMIT + 4096));
      const chunks: Buffer[] = [];
      for (let o = 0; o < text.length; o += 4096) chunks.push(text.subarray(o, o + 4096));
      const res = await chunked(VIEWS, chunks);
      expect(res.status, res.text).to.equal(413);
      expect(res.headers['content-type']).to.equal(JSONAPI);
      expect(JSON.parse(res.text).errors[0].status).to.equal('413');
      expect(res.headers.connection).to.equal('close');
      // the server keeps serving
      expect((await call('GET', VIEWS)).status).to.equal(200);
    });

    it('accepts a chunked body of at most 64 KiB', async () => {
      const text = Buffer.from(sized(LIMIT));
      const res = await chunked(VIEWS, [text.subarray(0, 1000), text.subarray(1000, 40_000), text.subarray(40_000)]);
      expect(res.status, res.text).to.equal(201);
    });

    for (const [label, raw] of [
      ['truncated JSON', '{"data": {"name": "x"'],
      ['an empty body', ''],
      ['trailing garbage', '{"data": {}} x'],
      ['single quotes', "{'data': {}}"],
      ['a bare word', 'data'],
    ] as const) {
      it(`answers 400 (never 500) for malformed JSON: ${label}`, async () => {
        const res = await call('POST', VIEWS, raw);
        expectError(res, 400, { pointer: '' });
      });
    }

    it('answers 400 (never 500) for a body that is not valid UTF-8', async () => {
      const good = new TextEncoder().encode(JSON.stringify({ data: { name: 'XX', query_type: 'workspaces', query: { filter: [] } } }));
      for (const bad of [[0xff, 0xfe], [0xc3, 0x28], [0xed, 0xa0, 0x80] /* a surrogate */, [0xe2, 0x82] /* truncated */]) {
        const i = good.indexOf('X'.charCodeAt(0));
        const bytes = new Uint8Array([...good.subarray(0, i), ...bad, ...good.subarray(i + 2)]);
        const res = await call('POST', VIEWS, bytes);
        expectError(res, 400, { pointer: '' });
      }
      const made = await call('POST', VIEWS, valid());
      const patch = await call('PATCH', `${VIEWS}/${made.body.data.id}`, new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]));
      expectError(patch, 400, { pointer: '' });
    });
  });

  describe('the envelope (create)', () => {
    for (const [label, raw] of [
      ['an array', '[]'],
      ['a string', '"data"'],
      ['a number', '42'],
      ['null', 'null'],
      ['true', 'true'],
    ] as const) {
      it(`answers 422 pointing at the whole document when the body is ${label}`, async () => {
        expect422(await call('POST', VIEWS, raw), '');
      });
    }

    for (const [label, b] of [
      ['{}', {}],
      ['{"meta": {}}', { meta: {} }],
      ['{"attributes": {...}} without data', { attributes: { name: 'x', query_type: 'workspaces', query: { filter: [] } } }],
    ] as const) {
      it(`answers 422 /data for a body without data: ${label}`, async () => {
        expect422(await call('POST', VIEWS, b), '/data');
      });
    }

    for (const [label, d] of [['an array', []], ['a string', 'x'], ['null', null], ['a number', 1]] as const) {
      it(`answers 422 /data when data is ${label}`, async () => {
        expect422(await call('POST', VIEWS, { data: d }), '/data');
      });
    }

    it('answers 422 /data/type for a JSON:API body whose type is wrong or missing', async () => {
      const attributes = { name: uniqueName(), 'query-type': 'workspaces', query: { filter: [] } };
      for (const type of ['saved-views', 'explorer-saved-query', 'Explorer-Saved-Queries', '', 1, null]) {
        expect422(await call('POST', VIEWS, { data: { type, attributes } }), '/data/type');
      }
      expect422(await call('POST', VIEWS, { data: { attributes } }), '/data/type');
    });

    it('answers 422 /data/attributes when attributes is not an object', async () => {
      for (const attributes of ['x', [], null]) {
        expect422(await call('POST', VIEWS, { data: { type: 'explorer-saved-queries', attributes } }), '/data/attributes');
      }
    });
  });

  for (const layout of ['flat', 'jsonapi'] as const) {
    const b = base(layout);
    const tk = typeKey(layout);
    const q = `${b}/query`;
    /** A valid create body with `query` (and other members) replaced. */
    const make = (members: Record<string, unknown> = {}) => body(layout, { name: uniqueName(), [tk]: 'workspaces', query: { filter: [] }, ...members });
    const post = (payload: unknown) => call('POST', VIEWS, payload);
    const withQuery = (query: unknown, view = 'workspaces') => make({ [tk]: view, query });

    describe(`create, ${layout} layout: members (pointers under ${b})`, () => {
      it(`answers 422 ${b}/name, ${b}/query, ${b}/${tk} when each is missing`, async () => {
        expect422(await post(body(layout, { [tk]: 'workspaces', query: { filter: [] } })), `${b}/name`);
        expect422(await post(body(layout, { name: uniqueName(), [tk]: 'workspaces' })), `${b}/query`);
        expect422(await post(body(layout, { name: uniqueName(), query: { filter: [] } })), `${b}/${tk}`);
      });

      it(`answers 422 ${b}/name for a name that is empty, only spaces, not a string, or over 255 characters`, async () => {
        for (const name of ['', ' ', '     ', '\t \n', 'x'.repeat(256), 'é'.repeat(256), '😀'.repeat(256), ` ${'x'.repeat(256)} `, 42, null, ['x'], { n: 'x' }]) {
          expect422(await post(make({ name })), `${b}/name`);
        }
      });

      it('accepts names of 1 and 255 characters, counted in characters (non-ASCII too), after trimming', async () => {
        for (const name of ['x', 'y'.repeat(255), 'é'.repeat(255), '😀'.repeat(255), `  ${'z'.repeat(255)}  `, '名'.repeat(255)]) {
          const res = await post(make({ name }));
          expect(res.status, `${[...name].length} characters`).to.equal(201);
          expect(res.body.data.attributes.name).to.equal(name.trim());
          // free the name again for the other layout
          expect((await call('DELETE', `${VIEWS}/${res.body.data.id}`)).status).to.equal(200);
        }
      });

      it(`answers 422 ${b}/name when the name is taken; names compare exactly after trimming`, async () => {
        const name = uniqueName(`Taken ${layout}`);
        const first = await post(make({ name }));
        expect(first.status).to.equal(201);
        expect422(await post(make({ name })), `${b}/name`);
        expect422(await post(make({ name: `  ${name}\t` })), `${b}/name`);
        expect422(await post(make({ name, [tk]: 'modules' })), `${b}/name`); // another view type does not matter
        for (const other of [name.toLowerCase(), name.toUpperCase(), `${name}.`, name.replace(' ', '  ')]) {
          const res = await post(make({ name: other }));
          expect(res.status, JSON.stringify(other)).to.equal(201);
          expect(res.body.data.attributes.name).to.equal(other);
        }
      });

      it(`answers 422 ${b}/${tk} for an unknown view type`, async () => {
        for (const type of ['nope', 'Workspaces', 'workspace', 'tf-versions', '', 42, null]) {
          expect422(await post(make({ [tk]: type })), `${b}/${tk}`);
        }
      });

      it(`answers 422 ${q}/type when query.type disagrees with ${tk}`, async () => {
        expect422(await post(make({ [tk]: 'workspaces', query: { type: 'modules', filter: [] } })), `${q}/type`);
        expect422(await post(make({ [tk]: 'providers', query: { type: 'nope', filter: [] } })), `${q}/type`);
        expect((await post(make({ [tk]: 'providers', query: { type: 'providers', filter: [] } }))).status).to.equal(201);
      });

      it(`answers 422 ${q} when query is not an object`, async () => {
        for (const query of ['x', [], 1, null]) expect422(await post(make({ query })), q);
      });

      it(`answers 422 ${q}/filter when filter is not an array`, async () => {
        for (const filter of [{}, 'workspace_name', { field: 'workspace_name', operator: 'is', value: ['x'] }, null, 0]) {
          expect422(await post(withQuery({ filter })), `${q}/filter`);
        }
      });

      it('answers 422 pointing at a filter entry of a wrong shape', async () => {
        const ok = { field: 'workspace_name', operator: 'is', value: ['x'] };
        const cases: [unknown, string][] = [
          ['workspace_name', `${q}/filter/1`],
          [['workspace_name', 'is', 'x'], `${q}/filter/1`],
          [null, `${q}/filter/1`],
          [{}, `${q}/filter/1`],
          [{ field: 'workspace_name', operator: 'is' }, `${q}/filter/1/value`],
          [{ field: 'workspace_name', value: ['x'] }, `${q}/filter/1/operator`],
          [{ field: 'workspace_name', operator: 'is', value: ['x'], extra: true }, `${q}/filter/1/extra`],
          [{ field: 7, operator: 'is', value: ['x'] }, `${q}/filter/1/field`],
          [{ field: 'workspace_name', operator: ['is'], value: ['x'] }, `${q}/filter/1/operator`],
          [{ workspace_name: ['x'] }, `${q}/filter/1/workspace_name`],
          [{ workspace_name: 'x' }, `${q}/filter/1/workspace_name`],
          [{ workspace_name: {} }, `${q}/filter/1/workspace_name`],
          [{ workspace_name: { is: 'x' } }, `${q}/filter/1/workspace_name/is`],
          [{ workspace_name: { is: ['x', 2] } }, `${q}/filter/1/workspace_name/is/1`],
        ];
        for (const [entry, pointer] of cases) {
          const res = await post(withQuery({ filter: [ok, entry] }));
          expect(res.status, JSON.stringify(entry)).to.equal(422);
          expect(res.body.errors[0].source, JSON.stringify(entry)).to.deep.equal({ pointer });
        }
      });

      it('answers 422 pointing at value or at the value element that is not a string', async () => {
        const f = (value: unknown) => withQuery({ filter: [{ field: 'workspace_name', operator: 'is', value }] });
        expect422(await post(f('x')), `${q}/filter/0/value`);
        expect422(await post(f({ 0: 'x' })), `${q}/filter/0/value`);
        expect422(await post(f(null)), `${q}/filter/0/value`);
        expect422(await post(f(['a', 1])), `${q}/filter/0/value/1`);
        expect422(await post(f(['a', 'b', null])), `${q}/filter/0/value/2`);
        expect422(await post(f([true])), `${q}/filter/0/value/0`);
        expect422(await post(f([['a']])), `${q}/filter/0/value/0`);
      });

      it('answers 422 for an empty value list except for is_empty / is_not_empty', async () => {
        expect422(await post(withQuery({ filter: [{ field: 'workspace_name', operator: 'is', value: [] }] })), `${q}/filter/0/value`);
        expect422(await post(withQuery({ filter: [{ field: 'checks_failed', operator: 'gt', value: [] }] })), `${q}/filter/0/value`);
        expect422(await post(withQuery({ filter: [{ field: 'workspace_name', operator: 'does_not_contain', value: [] }] })), `${q}/filter/0/value`);
        expect422(await post(withQuery({ filter: [{ field: 'drifted', operator: 'is_not_empty', value: [] }, { workspace_name: { contains: [] } }] })), `${q}/filter/1/workspace_name/contains`);
        for (const filter of [
          [{ field: 'vcs_repo_identifier', operator: 'is_empty', value: [] }],
          [{ field: 'drifted', operator: 'is_not_empty', value: [] }],
          [{ current_run_applied_at: { is_empty: [] } }],
        ]) {
          const res = await post(withQuery({ filter }));
          expect(res.status, JSON.stringify(filter)).to.equal(201);
          expect(res.body.data.attributes.query.filter[0].value).to.deep.equal([]);
        }
      });

      it('answers 422 pointing at an unknown field: …/field in the list shape, …/<field> in the map shape', async () => {
        const ok = { field: 'drifted', operator: 'is', value: ['true'] };
        expect422(await post(withQuery({ filter: [ok, { field: 'nope', operator: 'is', value: ['x'] }] })), `${q}/filter/1/field`);
        expect422(await post(withQuery({ filter: [{ field: 'Workspace_Name', operator: 'is', value: ['x'] }] })), `${q}/filter/0/field`);
        // a field of another view
        expect422(await post(withQuery({ filter: [{ field: 'workspace_count', operator: 'is', value: ['1'] }] })), `${q}/filter/0/field`);
        expect422(await post(withQuery({ filter: [ok, { nope: { is: ['x'] } }] })), `${q}/filter/1/nope`);
        // RFC 6901: "/" is escaped as ~1 and "~" as ~0
        expect422(await post(withQuery({ filter: [{ 'a/b~c': { is: ['x'] } }] })), `${q}/filter/0/a~1b~0c`);
        // a known field first, then the unknown one, under one entry
        expect422(await post(withQuery({ filter: [{ workspace_name: { is: ['x'] }, nope: { is: ['x'] } }] })), `${q}/filter/0/nope`);
        // the engine name is terraform by default (interface §1)
        expect422(await post(withQuery({ filter: [{ field: 'workspace_engine_version', operator: 'is', value: ['1'] }] })), `${q}/filter/0/field`);
        expect((await post(withQuery({ filter: [{ field: 'workspace_terraform_version', operator: 'is', value: ['1.5.7'] }] }))).status).to.equal(201);
        // registry_type belongs to providers and modules (interface §2), not to workspaces
        expect422(await post(withQuery({ filter: [{ field: 'registry_type', operator: 'is', value: ['public'] }] })), `${q}/filter/0/field`);
        expect((await post(withQuery({ filter: [{ field: 'registry_type', operator: 'is', value: ['public'] }] }, 'modules'))).status).to.equal(201);
      });

      it('answers 422 pointing at an operator the field type does not support', async () => {
        const cases: [string, string, string][] = [
          ['workspace_name', 'gt', '1'], // string
          ['checks_failed', 'contains', '1'], // number
          ['drifted', 'is_not', 'true'], // boolean
          ['drifted', 'gt', 'true'],
          ['workspace_created_at', 'is', '2024-01-01'], // datetime
          ['workspace_created_at', 'gt', '2024-01-01'],
          ['workspace_name', 'is_before', '2024-01-01'],
          ['workspace_name', 'like', 'x'], // no such operator
          ['workspace_name', 'IS', 'x'],
          ['workspace_name', 'does-not-contain', 'x'],
        ];
        for (const [field, operator, value] of cases) {
          const list = await post(withQuery({ filter: [{ field: 'drifted', operator: 'is', value: ['true'] }, { field, operator, value: [value] }] }));
          expect(list.status, `${field} ${operator}`).to.equal(422);
          expect(list.body.errors[0].source, `${field} ${operator}`).to.deep.equal({ pointer: `${q}/filter/1/operator` });
          const map = await post(withQuery({ filter: [{ [field]: { [operator]: [value] } }] }));
          expect(map.status, `${field} ${operator}`).to.equal(422);
          expect(map.body.errors[0].source, `${field} ${operator}`).to.deep.equal({ pointer: `${q}/filter/0/${field}/${operator}` });
        }
      });

      it('answers 422 pointing at the value element that does not fit the field type', async () => {
        const cases: [string, string, string[], number][] = [
          ['checks_failed', 'is', ['1', 'x'], 1],
          ['checks_failed', 'gt', ['1.5', '-2', '1e3'], 2],
          ['checks_failed', 'lt', [' 1'], 0],
          ['drifted', 'is', ['yes'], 0],
          ['drifted', 'is', ['true', 'FALSE', '1'], 2],
          ['workspace_created_at', 'is_before', ['2024-01-01', 'yesterday'], 1],
          ['workspace_created_at', 'is_after', ['2024-13-45'], 0],
          ['workspace_updated_at', 'is_after', ['2024-02-30T00:00:00Z'], 0],
          ['workspace_updated_at', 'is_before', ['2024-01-01T25:00'], 0],
        ];
        for (const [field, operator, value, bad] of cases) {
          // a two-value filter first, so that the element index is not the index among all values
          const lead = { field: 'workspace_name', operator: 'is', value: ['a', 'b'] };
          const list = await post(withQuery({ filter: [lead, { field, operator, value }] }));
          expect(list.status, `${field} ${operator} ${value}`).to.equal(422);
          expect(list.body.errors[0].source, `${field} ${operator} ${value}`).to.deep.equal({ pointer: `${q}/filter/1/value/${bad}` });
          const map = await post(withQuery({ filter: [lead, { [field]: { [operator]: value } }] }));
          expect(map.status, `${field} ${operator} ${value}`).to.equal(422);
          expect(map.body.errors[0].source, `${field} ${operator} ${value}`).to.deep.equal({ pointer: `${q}/filter/1/${field}/${operator}/${bad}` });
        }
      });

      it('answers 422 pointing at an unknown field in fields, in both fields shapes', async () => {
        expect422(await post(withQuery({ filter: [], fields: ['workspace_name', 'nope'] })), `${q}/fields/1`);
        expect422(await post(withQuery({ filter: [], fields: ['name'] })), `${q}/fields/0`);
        expect422(await post(withQuery({ filter: [], fields: { workspaces: ['workspace_name', 'drifted', 'nope'] } })), `${q}/fields/workspaces/2`);
        expect422(await post(withQuery({ filter: [], fields: ['workspace_name', 'workspace_name', 'version'] }, 'modules')), `${q}/fields/0`);
      });

      it('answers 422 pointing at the view key of a fields object that names another view', async () => {
        expect422(await post(withQuery({ filter: [], fields: { modules: ['name'] } })), `${q}/fields/modules`);
        expect422(await post(withQuery({ filter: [], fields: { tf_versions: ['version'] } }, 'providers')), `${q}/fields/tf_versions`);
        expect422(await post(withQuery({ filter: [], fields: { nope: ['workspace_name'] } })), `${q}/fields/nope`);
      });

      it('answers 422 pointing at fields when it is neither a list nor a one-view object', async () => {
        expect422(await post(withQuery({ filter: [], fields: 'workspace_name' })), `${q}/fields`);
        expect422(await post(withQuery({ filter: [], fields: { workspaces: ['workspace_name'], modules: ['name'] } })), `${q}/fields`);
      });

      it('answers 422 pointing at an unknown sort key', async () => {
        expect422(await post(withQuery({ filter: [], sort: ['nope'] })), `${q}/sort/0`);
        expect422(await post(withQuery({ filter: [], sort: ['workspace_name', '-nope'] })), `${q}/sort/1`);
        expect422(await post(withQuery({ filter: [], sort: ['workspace_name', '--drifted'] })), `${q}/sort/1`);
        expect422(await post(withQuery({ filter: [], sort: ['-workspace_count'] })), `${q}/sort/0`);
        expect422(await post(withQuery({ filter: [], sort: ['name', 'workspace_count', 'drifted'] }, 'providers')), `${q}/sort/2`);
        expect422(await post(withQuery({ filter: [], sort: 'workspace_name' })), `${q}/sort`);
        expect((await post(withQuery({ filter: [], sort: ['-workspace_count', 'name'] }, 'providers'))).status).to.equal(201);
      });

      it('answers 422 pointing at filter for more than 100 values or more than 50 conditions', async () => {
        const values = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`);
        const cond = (i: number) => ({ field: 'workspace_name', operator: 'is', value: [`w${i}`] });
        // limits reached exactly: accepted
        expect((await post(withQuery({ filter: [{ field: 'workspace_name', operator: 'is', value: values(100) }] }))).status).to.equal(201);
        expect((await post(withQuery({ filter: Array.from({ length: 50 }, (_, i) => cond(i)) }))).status).to.equal(201);
        expect((await post(withQuery({ filter: Array.from({ length: 50 }, (_, i) => ({ ...cond(i), value: [`a${i}`, `b${i}`] })) }))).status).to.equal(201);
        // one more: refused
        expect422(await post(withQuery({ filter: [{ field: 'workspace_name', operator: 'is', value: values(101) }] })), `${q}/filter`);
        expect422(await post(withQuery({ filter: [{ field: 'workspace_name', operator: 'is', value: values(60) }, { project_name: { is_not: values(41) } }] })), `${q}/filter`);
        expect422(await post(withQuery({ filter: Array.from({ length: 51 }, (_, i) => cond(i)) })), `${q}/filter`);
        expect422(await post(withQuery({ filter: Array.from({ length: 101 }, (_, i) => cond(i)) })), `${q}/filter`);
      });
    });
  }

  describe('create, JSON:API layout: query-type and query_type', () => {
  it('answers 422 when query-type and query_type of the JSON:API layout disagree', async () => {
    const res = await call('POST', VIEWS, body('jsonapi', { name: uniqueName(), 'query-type': 'workspaces', query_type: 'modules', query: { filter: [] } }));
    expect(res.status).to.equal(422);
    expect(['/data/attributes/query-type', '/data/attributes/query_type']).to.include(res.body.errors[0].source.pointer);
    const agree = await call('POST', VIEWS, body('jsonapi', { name: uniqueName(), 'query-type': 'modules', query_type: 'modules', query: { filter: [] } }));
    expect(agree.status).to.equal(201);
  });
  });

  describe('update (PATCH)', () => {
    let target: any;
    let other: any;
    before(async () => {
      target = (await call('POST', VIEWS, body('flat', { name: uniqueName('patch target'), query_type: 'workspaces', query: { filter: [], sort: ['drifted'] } }))).body.data;
      other = (await call('POST', VIEWS, body('flat', { name: uniqueName('patch other'), query_type: 'providers', query: { filter: [] } }))).body.data;
    });
    const patch = (payload: unknown, id = target.id) => call('PATCH', `${VIEWS}/${id}`, payload);

    for (const layout of ['flat', 'jsonapi'] as const) {
      const b = base(layout);
      const tk = typeKey(layout);
      it(`${layout}: answers 422 ${b}/${tk} when the view type would change; the same type or none is fine`, async () => {
        expect422(await patch(body(layout, { name: target.attributes.name, [tk]: 'modules', query: { filter: [] } })), `${b}/${tk}`);
        expect422(await patch(body(layout, { name: target.attributes.name, [tk]: 'nope', query: { filter: [] } })), `${b}/${tk}`);
        const same = await patch(body(layout, { name: target.attributes.name, [tk]: 'workspaces', query: { filter: [] } }));
        expect(same.status, same.text).to.equal(200);
        expect(same.body.data.attributes['query-type']).to.equal('workspaces');
        const none = await patch(body(layout, { name: target.attributes.name, query: { filter: [] } }));
        expect(none.status, none.text).to.equal(200);
        expect(none.body.data.attributes['query-type']).to.equal('workspaces');
        // unchanged after the refusals
        const shown = await call('GET', `${VIEWS}/${target.id}`);
        expect(shown.body.data.attributes['query-type']).to.equal('workspaces');
      });

      it(`${layout}: answers 422 ${b}/name and ${b}/query when either is missing (both must be sent)`, async () => {
        expect422(await patch(body(layout, { query: { filter: [] } })), `${b}/name`);
        expect422(await patch(body(layout, { name: target.attributes.name })), `${b}/query`);
        expect422(await patch(body(layout, {})), `${b}/name`);
      });

      it(`${layout}: answers 422 ${b}/name for a name taken by another view, empty or too long; its own name is fine`, async () => {
        expect422(await patch(body(layout, { name: other.attributes.name, query: { filter: [] } })), `${b}/name`);
        expect422(await patch(body(layout, { name: ` ${other.attributes.name} `, query: { filter: [] } })), `${b}/name`);
        expect422(await patch(body(layout, { name: '  ', query: { filter: [] } })), `${b}/name`);
        expect422(await patch(body(layout, { name: 'ü'.repeat(256), query: { filter: [] } })), `${b}/name`);
        const own = await patch(body(layout, { name: ` ${target.attributes.name} `, query: { filter: [] } }));
        expect(own.status).to.equal(200);
        expect(own.body.data.attributes.name).to.equal(target.attributes.name);
        const upper = await patch(body(layout, { name: other.attributes.name.toUpperCase(), query: { filter: [] } }));
        expect(upper.status).to.equal(200);
        expect(upper.body.data.attributes.name).to.equal(other.attributes.name.toUpperCase());
        expect((await patch(body(layout, { name: target.attributes.name, query: { filter: [] } }))).status).to.equal(200);
      });

      it(`${layout}: validates the query like create (pointers under ${b}/query)`, async () => {
        const q = `${b}/query`;
        const p = (query: unknown) => patch(body(layout, { name: target.attributes.name, query }));
        expect422(await p({ type: 'modules', filter: [] }), `${q}/type`);
        expect422(await p({ filter: {} }), `${q}/filter`);
        expect422(await p({ filter: [{ field: 'version', operator: 'is', value: ['1'] }] }), `${q}/filter/0/field`);
        expect422(await p({ filter: [{ workspace_name: { gt: ['1'] } }] }), `${q}/filter/0/workspace_name/gt`);
        expect422(await p({ filter: [{ field: 'checks_passed', operator: 'gteq', value: ['1', 'two'] }] }), `${q}/filter/0/value/1`);
        expect422(await p({ filter: [], fields: ['workspace_name', 'nope'] }), `${q}/fields/1`);
        expect422(await p({ filter: [], sort: ['nope'] }), `${q}/sort/0`);
        // nothing was changed by the refusals
        const shown = await call('GET', `${VIEWS}/${target.id}`);
        expect(shown.body.data.attributes.query).to.deep.equal({ type: 'workspaces', filter: [] });
      });
    }

    it('answers 422 /data/type for a JSON:API update whose type is wrong', async () => {
      expect422(await patch({ data: { type: 'workspaces', id: target.id, attributes: { name: target.attributes.name, query: { filter: [] } } } }), '/data/type');
    });

    it('answers 422 for the envelope like create', async () => {
      expect422(await patch('[]'), '');
      expect422(await patch({}), '/data');
      expect422(await patch({ data: 'x' }), '/data');
    });
  });

  describe('robustness', () => {
    it('never answers 500 for deeply nested JSON within 64 KiB', async () => {
      const depth = 30_000;
      const nested = '['.repeat(depth) + ']'.repeat(depth);
      for (const raw of [
        `{"data": ${nested}}`,
        `{"data": {"name": "deep", "query_type": "workspaces", "query": {"filter": [{"field": "workspace_name", "operator": "is", "value": ${nested}}]}}}`,
        `{"data": {"name": "deep", "query_type": "workspaces", "query": {"filter": ${nested}}}}`,
      ]) {
        const res = await call('POST', VIEWS, raw);
        // valid JSON whose members are wrong: 422; a parser depth limit would be a 400; never a 500
        expect([400, 422], res.text.slice(0, 200)).to.include(res.status);
      }
      expect((await call('GET', VIEWS)).status).to.equal(200);
    });

    it('answers a re-run of a stored query that no longer fits the catalog with 422 pointing at the stored member', async () => {
      // docs/decisions.md: a /results or /csv re-run validates the stored query again. Written straight
      // into the store, as if saved under another EXPLORER_ENGINE.
      const store = await openStateStore(h.config);
      const at = new Date().toISOString();
      const stale = [
        { id: 'sq-StaleField000001', query: { type: 'workspaces', filter: [{ field: 'workspace_engine_version', operator: 'is', value: ['1'] }] }, pointer: '/data/attributes/query/filter/0/field' },
        { id: 'sq-StaleSort0000001', query: { type: 'workspaces', filter: [], sort: ['-state_version_engine_version'] }, pointer: '/data/attributes/query/sort/0' },
        { id: 'sq-StaleFields00001', query: { type: 'workspaces', filter: [], fields: ['workspace_name', 'workspace_engine_version'] }, pointer: '/data/attributes/query/fields/1' },
      ];
      try {
        for (const s of stale) {
          await store.createView({ id: s.id, organization: ORG, name: `stale ${s.id}`, queryType: 'workspaces', query: s.query, createdAt: at, updatedAt: at });
        }
      } finally { await store.close(); }
      for (const s of stale) {
        expect((await call('GET', `${VIEWS}/${s.id}`)).status).to.equal(200);
        for (const route of ['results', 'csv', 'export/csv']) {
          expect422(await call('GET', `${VIEWS}/${s.id}/${route}`), s.pointer);
        }
      }
    });
  });

  describe('precedence: 401, then 404, then body errors', () => {
    const badBodies: [string, unknown, string | null][] = [
      ['a text/plain body', 'hello', 'text/plain'],
      ['malformed JSON', '{"data":', JSONAPI],
      ['an invalid body', { data: { name: '' } }, JSONAPI],
      ['a valid body', { data: { name: 'precedence', query_type: 'workspaces', query: { filter: [] } } }, JSONAPI],
    ];

    before(async () => {
      unknownOrg404 = (await call('GET', '/api/v2/organizations/no-such-org/explorer/views')).text;
      expect(JSON.parse(unknownOrg404)).to.deep.equal(NOT_FOUND);
    });

    it('answers 401 with WWW-Authenticate without a token or with an unknown one, whatever the body and organization', async () => {
      for (const [label, payload, contentType] of badBodies) {
        for (const token of [null, 'at-AAAAAAAAAAAAAAAA.BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB', 'garbage']) {
          for (const org of [ORG, 'no-such-org']) {
            const res = await call('POST', `/api/v2/organizations/${org}/explorer/views`, payload, { token, contentType });
            expect(res.status, `${label} ${token} ${org}`).to.equal(401);
            expect(res.headers.get('www-authenticate'), label).to.match(/^Bearer/);
          }
        }
      }
      const list = await call('GET', VIEWS, undefined, { token: null });
      expect(list.status).to.equal(401);
      const patch = await call('PATCH', `${VIEWS}/sq-AAAAAAAAAAAAAAAA`, 'x', { token: null, contentType: 'text/plain' });
      expect(patch.status).to.equal(401);
    });

    it('answers the 404 of an unknown organization before 415/400/422 for a token without access', async () => {
      const made = await call('POST', VIEWS, body('flat', { name: uniqueName('precedence target'), query_type: 'workspaces', query: { filter: [] } }));
      expect(made.status).to.equal(201);
      const id = made.body.data.id;
      for (const [label, payload, contentType] of badBodies) {
        for (const [who, token, org] of [
          ['globex token on acme-corp', h.tokens.otherOrg, ORG],
          ['developers on acme-corp', h.tokens.developers, ORG],
          ['bob on acme-corp', h.tokens.bob, ORG],
          ['acme token on an unknown organization', h.tokens.org, 'no-such-org'],
          ['acme token on globex', h.tokens.org, 'globex'],
        ] as const) {
          const views = `/api/v2/organizations/${org}/explorer/views`;
          for (const [method, path] of [['POST', views], ['PATCH', `${views}/${id}`]] as const) {
            const res = await call(method, path, payload, { token, contentType });
            expect(res.status, `${method} ${label}, ${who}`).to.equal(404);
            expect(res.text, `${method} ${label}, ${who}`).to.equal(unknownOrg404);
          }
        }
      }
      // nothing was created or changed by those requests
      const shown = await call('GET', `${VIEWS}/${id}`);
      expect(shown.body.data).to.deep.equal(made.body.data);
    });

    it('answers 404 for an unknown view id on PATCH before looking at the body', async () => {
      const path = `${VIEWS}/sq-ZZZZZZZZZZZZZZZZ`;
      for (const [label, payload, contentType] of [...badBodies, ['a missing Content-Type', '{}', null] as const]) {
        const res = await call('PATCH', path, payload, { contentType });
        expect(res.status, label).to.equal(404);
        expect(res.text, label).to.equal(unknownOrg404);
      }
      const big = await call('PATCH', path, JSON.stringify({ data: { name: 'x'.repeat(LIMIT), query: { filter: [] } } }));
      expect(big.status).to.equal(404);
      expect(big.text).to.equal(unknownOrg404);
    });
  });
});
