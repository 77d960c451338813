// Injection corpus (SQL, path traversal, unicode, NUL) in every parameter a client controls: the organization
// and view id in the path, every query parameter (field, operator, indexes, value, sort, fields, page, type,
// unknown names) and every saved-view body member. Each request answers a JSON:API 4xx or the correct result:
// a filter VALUE is legal anywhere, so it gets a 200 whose rows are those the rules of interface §4 give over
// the fixture (test/helpers/fixture-model.ts derives them independently of the server). Afterwards nothing was
// written (/tmp/pwn, /tmp/x.db), the snapshot answers exactly as before, and the service is ready.
//
// A second part checks the compiler itself: a payload reaches compileQuery's bound parameters, never its SQL.
import { expect } from 'chai';
import { existsSync, statSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { keptAgent } from '../helpers/kept-agent.js';
import { catalogFor } from '../../src/catalog/catalog.js';
import { ApiError } from '../../src/errors.js';
import { compileQuery, type CompiledQuery } from '../../src/query/compile.js';
import { parseQueryParameters } from '../../src/query/parse-query.js';
import { decodeQueryString, encodeStrict } from '../../src/query/query-string.js';
import { parseSavedViewBody } from '../../src/saved-views/body.js';
import { sourceOfStored, validateSavedQuery } from '../../src/saved-views/saved-query.js';
import { ORG } from '../fixtures/small-source.js';
import { WS, workspaceModel, type Model } from '../helpers/fixture-model.js';
import { startHarness, type Harness } from '../helpers/harness.js';

const JSONAPI = 'application/vnd.api+json';
const EXPLORER = `/api/v2/organizations/${ORG}/explorer`;
const VIEWS = `${EXPLORER}/views`;
const NOT_FOUND = {
  errors: [{ status: '404', title: 'not found', detail: 'The organization or resource does not exist, or you are not authorized to access it.' }],
};
const ENGINE = 'terraform';

/** The corpus. Every entry is used in every place; NUL-bearing entries are refused in query strings (docs/decisions.md). */
const PAYLOADS: string[] = [
  "'",
  "''",
  "'; DROP TABLE workspaces; --",
  '" OR 1=1 --',
  "') OR ('1'='1",
  '\\',
  '$1',
  '?',
  "%' OR '%'='",
  "UNION SELECT * FROM read_csv('/etc/passwd')",
  "read_parquet('x')",
  "COPY x TO '/tmp/pwn'",
  "; ATTACH '/tmp/x.db'",
  "'); COPY (SELECT 1) TO '/tmp/pwn'; --",
  "x' UNION SELECT * FROM \"_org\" --",
  '"workspace_name"',
  '../../etc/passwd',
  '%2e%2e%2f',
  '..%2F..%2Fetc%2Fpasswd',
  '😀',
  '\u202Eevil\u202C',
  'e\u0301\u0301',
  'ＤＲＯＰ ＴＡＢＬＥ',
  'x\uFEFFy',
  '\u0000',
  "x\u0000'; DROP TABLE workspaces; --",
];
const hasNul = (p: string) => p.includes('\u0000');

// ---------------------------------------------------------------------------------------------------------
// Raw HTTP: node:http sends the request target exactly as built (fetch would normalize `..` and re-encode).

interface Answer { status: number; headers: IncomingHttpHeaders; text: string }
const agent = keptAgent(8);

function send(h: Harness, method: string, path: string, opts: { token?: string | null; body?: unknown } = {}): Promise<Answer> {
  const { hostname, port } = new URL(h.url);
  const headers: Record<string, string> = {};
  const token = opts.token === undefined ? h.tokens.org : opts.token;
  if (token !== null) headers['Authorization'] = `Bearer ${token}`;
  let body: Buffer | undefined;
  if (opts.body !== undefined) {
    body = Buffer.from(JSON.stringify(opts.body));
    headers['Content-Type'] = JSONAPI;
    headers['Content-Length'] = String(body.length);
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port: Number(port), method, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.setTimeout(5000, () => req.destroy(new Error(`no answer within 5 s: ${method} ${path}`)));
    req.on('error', (e) => reject(new Error(`${method} ${JSON.stringify(path)}: ${e.message}`)));
    req.end(body);
  });
}

function parsed(a: Answer, what: string): any {
  try {
    return JSON.parse(a.text);
  } catch {
    throw new Error(`${what}: not JSON (status ${a.status}): ${a.text.slice(0, 300)}`);
  }
}

/** A JSON:API error of `status`; returns its single error object. */
function expectError(a: Answer, status: number, what: string): any {
  expect(a.status, `${what} → ${a.status} ${a.text.slice(0, 400)}`).to.equal(status);
  expect(a.headers['content-type'], what).to.equal(JSONAPI);
  const body = parsed(a, what);
  expect(body.errors, what).to.be.an('array').with.length(1);
  expect(body.errors[0].status, what).to.equal(String(status));
  return body.errors[0];
}

/** A 400 naming one of `names` (the decoded key; the raw key when it cannot be decoded, e.g. it holds NUL). */
function expect400(a: Answer, names: string[], what: string): void {
  const e = expectError(a, 400, what);
  expect(names, `${what}: source ${JSON.stringify(e.source)}`).to.include(e.source?.parameter);
}

/** A 422 whose source.pointer is exactly `pointer`. */
function expect422(a: Answer, pointer: string, what: string): void {
  const e = expectError(a, 422, what);
  expect(e.source, `${what}: ${a.text}`).to.deep.equal({ pointer });
}

/** Every byte but unreserved percent-encoded (interface §5), as clients are told to send. */
const enc = encodeStrict;
/** Printable ASCII as it is (a careless client), except the bytes that would end the component; space as `+`. */
function rawish(text: string, keep = (ch: string) => ch !== '&' && ch !== '#' && ch !== '+'): string {
  let out = '';
  for (const b of Buffer.from(text, 'utf8')) {
    const ch = String.fromCharCode(b);
    if (b === 0x20) out += '+';
    else if (b > 0x20 && b < 0x7f && keep(ch)) out += ch;
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}
const escapePointer = (t: string) => t.replace(/~/g, '~0').replace(/\//g, '~1');

// ---------------------------------------------------------------------------------------------------------
// What the rules say (interface §4) over the fixture: acme-corp's workspaces, modelled without the server.

const ACME: Model[] = WS.filter((w) => w.organization === ORG).map((w) => workspaceModel(w));
const STRING_FIELDS = catalogFor(ENGINE).view('workspaces')!.fields.filter((f) => f.type === 'string').map((f) => f.name);
const FILTERED_FIELDS = ['workspace_name', 'vcs_repo_identifier', 'tags', 'providers', 'project_name', 'state_version_terraform_version'];
const STRING_OPERATORS = ['contains', 'does not contain', 'is', 'is_not'] as const;
type StringOperator = (typeof STRING_OPERATORS)[number];
const fold = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

function expectedIds(field: string, operator: StringOperator, value: string): string[] {
  return ACME.filter((m) => {
    const v = m[field] as string | null;
    switch (operator) {
      case 'is': return v !== null && v === value;
      case 'is_not': return v === null || v !== value;
      case 'contains': return v !== null && fold(v).includes(fold(value));
      case 'does not contain': return v === null || !fold(v).includes(fold(value));
    }
  }).map((m) => m.external_id as string).sort();
}

// ---------------------------------------------------------------------------------------------------------

describe('security: injection corpus in every parameter (real HTTP)', function () {
  this.timeout(120_000);
  let h: Harness;
  const baseline: Record<string, string> = {};
  const pwnBefore = existsSync('/tmp/pwn') ? statSync('/tmp/pwn').mtimeMs : null;
  const xdbBefore = existsSync('/tmp/x.db') ? statSync('/tmp/x.db').mtimeMs : null;

  /** Every row of every view, as JSON and CSV: to compare before and after the corpus. */
  const SNAPSHOT_PROBES = [
    `${EXPLORER}?type=workspaces&page%5Bsize%5D=100`,
    `${EXPLORER}?type=tf_versions&page%5Bsize%5D=100`,
    `${EXPLORER}?type=providers&page%5Bsize%5D=100`,
    `${EXPLORER}?type=modules&page%5Bsize%5D=100`,
    `${EXPLORER}/export/csv?type=workspaces`,
  ];

  before(async () => {
    h = await startHarness();
    for (const probe of SNAPSHOT_PROBES) {
      const a = await send(h, 'GET', probe);
      expect(a.status, `${probe}: ${a.text}`).to.equal(200);
      baseline[probe] = a.text;
    }
    expect(JSON.parse(baseline[SNAPSHOT_PROBES[0]!]!).meta.pagination['total-count']).to.equal(5);
  });
  after(async () => {
    agent.destroy();
    await h?.close();
  });

  /** GETs the explorer with `params` (already encoded) plus a page of every row's id; returns the answer. */
  const query = (params: string, route = '') => send(h, 'GET', `${EXPLORER}${route}?type=workspaces&fields=external_id&page%5Bsize%5D=100&${params}`);

  describe('path parameters', () => {
    it('organization name: the one 404 of §7 for every payload, percent-encoded', async () => {
      for (const p of PAYLOADS) {
        for (const tail of ['/explorer?type=workspaces', '/explorer/export/csv?type=workspaces', '/explorer/views']) {
          const path = `/api/v2/organizations/${encodeURIComponent(p)}${tail}`;
          const a = await send(h, 'GET', path);
          expect(a.status, `GET ${path}: ${a.text}`).to.equal(404);
          expect(parsed(a, path), path).to.deep.equal(NOT_FOUND);
        }
        const post = `/api/v2/organizations/${encodeURIComponent(p)}/explorer/views`;
        const a = await send(h, 'POST', post, { body: { data: { name: 'never stored', query_type: 'workspaces', query: { filter: [] } } } });
        expect(parsed(a, post), `POST ${post}`).to.deep.equal(NOT_FOUND);
      }
    });

    it('organization name: a JSON:API 404 for every payload sent with its bytes unencoded (dot segments included)', async () => {
      for (const p of PAYLOADS) {
        const segment = rawish(p, (ch) => ch !== '?' && ch !== '#').replace(/\+/g, '%20');
        const path = `/api/v2/organizations/${segment}/explorer?type=workspaces`;
        const a = await send(h, 'GET', path);
        expectError(a, 404, `GET ${path}`);
        expect(a.text, path).to.not.include('ws-aaa');
      }
    });

    it('view id: the one 404 of §7 on every saved-view route, for every payload', async () => {
      for (const p of PAYLOADS) {
        for (const id of [encodeURIComponent(p), rawish(p, (ch) => ch !== '?' && ch !== '#' && ch !== '/').replace(/\+/g, '%20')]) {
          for (const [method, tail] of [['GET', ''], ['GET', '/results'], ['GET', '/csv'], ['GET', '/export/csv'], ['PATCH', ''], ['DELETE', '']] as const) {
            const path = `${VIEWS}/${id}${tail}`;
            const a = await send(h, method, path, method === 'PATCH' ? { body: { data: { name: 'never stored', query: { filter: [] } } } } : {});
            expect(a.status, `${method} ${path}: ${a.text}`).to.equal(404);
            expect(parsed(a, path), `${method} ${path}`).to.deep.equal(NOT_FOUND);
          }
        }
      }
    });
  });

  describe('query parameters', () => {
    it('field name and operator of a filter: 400 naming the filter', async () => {
      for (const p of PAYLOADS) {
        for (const key of [`filter[0][${p}][is][0]`, `filter[0][workspace_name][${p}][0]`, `filter[0][${p}][${p}][0]`]) {
          const a = await query(`${enc(key)}=x`);
          expect400(a, [key, enc(key)], `field/operator ${JSON.stringify(key)}`);
        }
      }
    });

    it('filter and value indexes: 400 naming the filter', async () => {
      for (const p of PAYLOADS) {
        for (const key of [`filter[${p}][workspace_name][is][0]`, `filter[0][workspace_name][is][${p}]`]) {
          const a = await query(`${enc(key)}=x`);
          expect400(a, [key, enc(key)], `index ${JSON.stringify(key)}`);
        }
      }
    });

    it('filter value on string fields: 200 with exactly the rows interface §4 gives (any operator, JSON and CSV)', async () => {
      const wrong: string[] = [];
      // Every payload on every field, the operator taking turns ((payload + field) mod 4): each payload meets
      // every operator, and each field every operator, without asking every triple.
      for (const [i, p] of PAYLOADS.filter((x) => !hasNul(x)).entries()) {
        for (const [j, field] of FILTERED_FIELDS.entries()) {
          const op = STRING_OPERATORS[(i + j) % STRING_OPERATORS.length]!;
          const key = `filter[0][${field}][${op}][0]`;
          const a = await query(`${enc(key)}=${enc(p)}`);
          const what = `${key}=${JSON.stringify(p)}`;
          expect(a.status, `${what}: ${a.text}`).to.equal(200);
          const body = parsed(a, what);
          const ids = body.data.map((r: any) => r.attributes['external-id']).sort();
          const want = expectedIds(field, op, p);
          if (JSON.stringify(ids) !== JSON.stringify(want) || body.meta.pagination['total-count'] !== want.length) {
            wrong.push(`${what}: rows ${JSON.stringify(ids)}, expected ${JSON.stringify(want)}`);
          }
        }
        // The documented examples: contains matches no row, is_not matches all five.
        expect(expectedIds('workspace_name', 'contains', p), `corpus entry ${JSON.stringify(p)} must match no fixture name`).to.deep.equal([]);
        expect(expectedIds('workspace_name', 'is_not', p)).to.have.length(5);
        const csv = await query(`${enc('filter[0][workspace_name][contains][0]')}=${enc(p)}`, '/export/csv');
        expect(csv.status, csv.text).to.equal(200);
        expect(csv.text, `CSV contains ${JSON.stringify(p)}`).to.equal('external_id\n');
        const all = await query(`${enc('filter[0][workspace_name][is_not][0]')}=${enc(p)}`, '/export/csv');
        expect(all.text.split('\n').filter(Boolean), `CSV is_not ${JSON.stringify(p)}`).to.have.length(6);
      }
      expect(wrong, wrong.join('\n')).to.deep.equal([]);
    });

    it('filter value with its bytes unencoded: 200 with the rows of the decoded value, or 400 naming the filter if it does not decode', async () => {
      for (const p of PAYLOADS.filter((x) => !hasNul(x))) {
        for (const op of STRING_OPERATORS) {
          const key = `filter[0][workspace_name][${op}][0]`;
          const raw = rawish(p);
          const a = await query(`${enc(key)}=${raw}`);
          const what = `${key}=${raw}`;
          let decoded: string | undefined;
          try { decoded = decodeURIComponent(raw.replace(/\+/g, ' ')); } catch { decoded = undefined; }
          if (decoded === undefined) {
            expect400(a, [key], what);
            continue;
          }
          expect(a.status, `${what}: ${a.text}`).to.equal(200);
          const ids = parsed(a, what).data.map((r: any) => r.attributes['external-id']).sort();
          expect(ids, what).to.deep.equal(expectedIds('workspace_name', op, decoded));
        }
      }
    });

    it('filter value with NUL: 400 naming the filter (docs/decisions.md)', async () => {
      for (const p of PAYLOADS.filter(hasNul)) {
        for (const field of FILTERED_FIELDS) {
          const key = `filter[0][${field}][contains][0]`;
          expect400(await query(`${enc(key)}=${enc(p)}`), [key], `${key}=${JSON.stringify(p)}`);
        }
      }
    });

    it('filter value on number, boolean and datetime fields: 400 naming the filter', async () => {
      for (const p of PAYLOADS) {
        for (const key of ['filter[0][checks_failed][is][0]', 'filter[0][checks_failed][gt][0]', 'filter[0][drifted][is][0]', 'filter[0][workspace_created_at][is_before][0]']) {
          expect400(await query(`${enc(key)}=${enc(p)}`), [key], `${key}=${JSON.stringify(p)}`);
        }
      }
    });

    it('filter value that a presence test ignores: 200 with the rows of is_empty / is_not_empty', async () => {
      for (const p of PAYLOADS.filter((x) => !hasNul(x))) {
        const empty = await query(`${enc('filter[0][vcs_repo_identifier][is_empty][0]')}=${enc(p)}`);
        expect(empty.status, empty.text).to.equal(200);
        expect(parsed(empty, p).data.map((r: any) => r.attributes['external-id']).sort())
          .to.deep.equal(ACME.filter((m) => m.vcs_repo_identifier === null).map((m) => m.external_id).sort());
      }
    });

    it('sort, fields, fields[workspaces], fields[<payload>], page[number], page[size], type: 400 naming the parameter', async () => {
      for (const p of PAYLOADS) {
        const cases: [string, string][] = [
          ['sort', p], ['sort', `-${p}`], ['sort', `workspace_name,${p}`], ['fields', p], ['fields', `external_id,${p}`],
          ['fields[workspaces]', p], [`fields[${p}]`, 'workspace_name'], ['page[number]', p], ['page[size]', p],
        ];
        for (const [key, value] of cases) {
          const a = await send(h, 'GET', `${EXPLORER}?type=workspaces&${enc(key)}=${enc(value)}`);
          expect400(a, [key, enc(key)], `${key}=${JSON.stringify(value)}`);
        }
        const t = await send(h, 'GET', `${EXPLORER}?type=${enc(p)}`);
        expect400(t, ['type'], `type=${JSON.stringify(p)}`);
        const csv = await send(h, 'GET', `${EXPLORER}/export/csv?type=workspaces&sort=${enc(p)}`);
        expect400(csv, ['sort'], `CSV sort=${JSON.stringify(p)}`);
      }
    });

    it('an unknown parameter named by a payload is ignored (200, every row); with NUL it is a 400 naming it', async () => {
      for (const p of PAYLOADS) {
        const a = await query(`${enc(p)}=${enc(p)}`);
        if (hasNul(p)) {
          expect400(a, [p, enc(p)], `unknown ${JSON.stringify(p)}`);
          continue;
        }
        expect(a.status, `${JSON.stringify(p)}: ${a.text}`).to.equal(200);
        expect(parsed(a, p).meta.pagination['total-count'], JSON.stringify(p)).to.equal(5);
      }
    });

    it('saved-view list and re-run paging parameters: 400 naming them', async () => {
      for (const p of PAYLOADS) {
        for (const key of ['page[number]', 'page[size]']) {
          expect400(await send(h, 'GET', `${VIEWS}?${enc(key)}=${enc(p)}`), [key], `list ${key}=${JSON.stringify(p)}`);
        }
      }
    });
  });

  describe('history parameters', () => {
    it('snapshot, as_of, from, to, their _as_of forms, sum and since: 400 naming the parameter on every route that takes them', async () => {
      const routes: [string, string[]][] = [
        ['?type=workspaces', ['snapshot', 'as_of']],
        ['/export/csv?type=workspaces', ['snapshot', 'as_of']],
        ['/changes?type=workspaces', ['from', 'to', 'from_as_of', 'to_as_of']],
        ['/changes/export/csv?type=workspaces', ['from', 'to', 'from_as_of', 'to_as_of']],
        ['/trend?type=workspaces', ['sum', 'since']],
      ];
      for (const p of PAYLOADS) {
        for (const [route, keys] of routes) {
          for (const key of keys) {
            const a = await send(h, 'GET', `${EXPLORER}${route}&${enc(key)}=${enc(p)}`);
            expect400(a, [key], `${route} ${key}=${JSON.stringify(p)}`);
          }
        }
      }
    });
  });

  describe('summary parameters', () => {
    it('group_by, sum and sort: 400 naming the parameter on both summary routes', async () => {
      for (const p of PAYLOADS) {
        for (const route of ['/summary', '/summary/export/csv']) {
          expect400(await send(h, 'GET', `${EXPLORER}${route}?type=workspaces&group_by=${enc(p)}`), ['group_by'], `${route} group_by=${JSON.stringify(p)}`);
          expect400(await send(h, 'GET', `${EXPLORER}${route}?type=workspaces&group_by=tags&sum=${enc(p)}`), ['sum'], `${route} sum=${JSON.stringify(p)}`);
          expect400(await send(h, 'GET', `${EXPLORER}${route}?type=workspaces&group_by=tags&sort=${enc(p)}`), ['sort'], `${route} sort=${JSON.stringify(p)}`);
        }
      }
    });

    it('a filter value is bound in a summary as in a query: it selects the same rows', async () => {
      for (const p of PAYLOADS.filter((x) => !hasNul(x))) {
        const filter = `filter%5B0%5D%5Bworkspace_name%5D%5Bcontains%5D%5B0%5D=${enc(p)}`;
        const rows = parsed(await send(h, 'GET', `${EXPLORER}?type=workspaces&${filter}`), p).meta.pagination['total-count'];
        const summary = parsed(await send(h, 'GET', `${EXPLORER}/summary?type=workspaces&group_by=project_name&${filter}`), p);
        expect(summary.meta.rows, JSON.stringify(p)).to.equal(rows);
      }
    });
  });

  describe('saved-view bodies', () => {
    const flat = (members: Record<string, unknown>) => ({ data: members });
    const jsonapi = (members: Record<string, unknown>) => ({ data: { type: 'explorer-saved-queries', attributes: members } });
    let serial = 0;
    const unique = (label: string) => `${label} ${++serial}`;

    it('name: created (201), listed with exactly that name, shown, renamed, and re-run normally', async () => {
      for (const p of PAYLOADS) {
        const created = await send(h, 'POST', VIEWS, { body: flat({ name: p, query_type: 'workspaces', query: { filter: [] } }) });
        expect(created.status, `POST name ${JSON.stringify(p)}: ${created.text}`).to.equal(201);
        const view = parsed(created, p).data;
        expect(view.attributes.name).to.equal(p.trim());

        const list = parsed(await send(h, 'GET', `${VIEWS}?page%5Bsize%5D=100`), 'list').data;
        const named = list.filter((v: any) => v.attributes.name === p.trim());
        expect(named.map((v: any) => v.id), `listed under ${JSON.stringify(p)}`).to.deep.equal([view.id]);
        const shown = await send(h, 'GET', `${VIEWS}/${view.id}`);
        expect(parsed(shown, p).data.attributes.name).to.equal(p.trim());

        const results = await send(h, 'GET', `${VIEWS}/${view.id}/results?page%5Bsize%5D=100`);
        expect(results.status, results.text).to.equal(200);
        expect(parsed(results, p).data.map((r: any) => r.id).sort()).to.deep.equal(ACME.map((m) => m.external_id).sort());
        const csv = await send(h, 'GET', `${VIEWS}/${view.id}/csv`);
        expect(csv.status, csv.text).to.equal(200);
        expect(csv.text.split('\n').filter(Boolean), `CSV of ${JSON.stringify(p)}`).to.have.length(6);

        // The same payload twice is a clash (exact comparison, interface §8), pointed at in the JSON:API layout.
        const again = await send(h, 'POST', VIEWS, { body: jsonapi({ name: p, 'query-type': 'workspaces', query: { filter: [] } }) });
        expect422(again, '/data/attributes/name', `POST the name ${JSON.stringify(p)} again`);

        const newName = `renamed ${p}${p}`;
        const renamed = await send(h, 'PATCH', `${VIEWS}/${view.id}`, { body: jsonapi({ name: newName, query: { filter: [] } }) });
        expect(renamed.status, renamed.text).to.equal(200);
        expect(parsed(renamed, p).data.attributes.name).to.equal(newName.trim());
        expect(parsed(await send(h, 'GET', `${VIEWS}/${view.id}`), p).data.attributes.name).to.equal(newName.trim());
      }
    });

    it('query_type / query-type: 422 pointing at it', async () => {
      for (const p of PAYLOADS) {
        expect422(await send(h, 'POST', VIEWS, { body: flat({ name: unique('qt'), query_type: p, query: { filter: [] } }) }), '/data/query_type', `query_type ${JSON.stringify(p)}`);
        expect422(await send(h, 'POST', VIEWS, { body: jsonapi({ name: unique('qt'), 'query-type': p, query: { filter: [] } }) }), '/data/attributes/query-type', `query-type ${JSON.stringify(p)}`);
        expect422(await send(h, 'POST', VIEWS, { body: flat({ name: unique('qt'), query_type: 'workspaces', query: { type: p, filter: [] } }) }), '/data/query/type', `query.type ${JSON.stringify(p)}`);
      }
    });

    it('filter field and operator, in both filter shapes: 422 pointing at the member', async () => {
      for (const p of PAYLOADS) {
        const cases: [unknown, string][] = [
          [{ field: p, operator: 'is', value: ['x'] }, '/data/query/filter/0/field'],
          [{ field: 'workspace_name', operator: p, value: ['x'] }, '/data/query/filter/0/operator'],
          [{ [p]: { is: ['x'] } }, `/data/query/filter/0/${escapePointer(p)}`],
          [{ workspace_name: { [p]: ['x'] } }, `/data/query/filter/0/workspace_name/${escapePointer(p)}`],
        ];
        for (const [entry, pointer] of cases) {
          const a = await send(h, 'POST', VIEWS, { body: flat({ name: unique('filter'), query_type: 'workspaces', query: { filter: [entry] } }) });
          expect422(a, pointer, `filter ${JSON.stringify(entry)}`);
        }
      }
    });

    it('filter value: created (201) and re-run with exactly the rows interface §4 gives, as JSON and CSV', async () => {
      const wrong: string[] = [];
      // The two filter shapes take turns ((payload + filter) mod 2): each payload and each filter in both shapes.
      for (const [i, p] of PAYLOADS.entries()) {
        for (const [k, [field, op]] of ([['workspace_name', 'contains'], ['workspace_name', 'is_not'], ['vcs_repo_identifier', 'does not contain'], ['tags', 'is']] as const).entries()) {
          const shape = (['long', 'short'] as const)[(i + k) % 2]!;
          const entry = shape === 'long' ? { field, operator: op, value: [p] } : { [field]: { [op]: [p] } };
          const created = await send(h, 'POST', VIEWS, { body: flat({ name: unique('value'), query_type: 'workspaces', query: { filter: [entry] } }) });
          const what = `${field} ${op} ${JSON.stringify(p)} (${shape})`;
          expect(created.status, `${what}: ${created.text}`).to.equal(201);
          const view = parsed(created, what).data;
          expect(view.attributes.query.filter, what).to.deep.equal([{ field, operator: op, value: [p] }]);
          const want = expectedIds(field, op, p);
          const results = await send(h, 'GET', `${VIEWS}/${view.id}/results?page%5Bsize%5D=100`);
          expect(results.status, `${what}: ${results.text}`).to.equal(200);
          const ids = parsed(results, what).data.map((r: any) => r.id).sort();
          if (JSON.stringify(ids) !== JSON.stringify(want)) wrong.push(`${what}: rows ${JSON.stringify(ids)}, expected ${JSON.stringify(want)}`);
          const csv = await send(h, 'GET', `${VIEWS}/${view.id}/csv`);
          expect(csv.status, `${what} CSV: ${csv.text}`).to.equal(200);
          expect(csv.text.split('\n').filter(Boolean).length - 1, `${what} CSV rows`).to.equal(want.length);
        }
        // The documented examples.
        expect(expectedIds('workspace_name', 'contains', p)).to.deep.equal([]);
        expect(expectedIds('workspace_name', 'is_not', p)).to.have.length(5);
      }
      expect(wrong, wrong.join('\n')).to.deep.equal([]);
    });

    it('fields and sort, as lists and as {"<view>": [...]}: 422 pointing at the entry', async () => {
      for (const p of PAYLOADS) {
        const cases: [Record<string, unknown>, string][] = [
          [{ filter: [], fields: [p] }, '/data/query/fields/0'],
          [{ filter: [], fields: ['workspace_name', p] }, '/data/query/fields/1'],
          [{ filter: [], fields: { workspaces: [p] } }, '/data/query/fields/workspaces/0'],
          [{ filter: [], sort: [p] }, '/data/query/sort/0'],
          [{ filter: [], sort: ['workspace_name', `-${p}`] }, '/data/query/sort/1'],
        ];
        for (const [q, pointer] of cases) {
          const a = await send(h, 'POST', VIEWS, { body: flat({ name: unique('fs'), query_type: 'workspaces', query: q }) });
          expect422(a, pointer, `query ${JSON.stringify(q)}`);
        }
      }
    });
  });

  describe('afterwards', () => {
    it('nothing was written: no /tmp/pwn, no /tmp/x.db (or the same one as before the corpus)', () => {
      expect(existsSync('/tmp/pwn') ? statSync('/tmp/pwn').mtimeMs : null, '/tmp/pwn').to.equal(pwnBefore);
      expect(existsSync('/tmp/x.db') ? statSync('/tmp/x.db').mtimeMs : null, '/tmp/x.db').to.equal(xdbBefore);
      expect(pwnBefore, '/tmp/pwn existed before the corpus ran; this run cannot tell whether it wrote it').to.equal(null);
    });

    it('the snapshot answers exactly as before the corpus, and /readyz is 200', async () => {
      for (const probe of SNAPSHOT_PROBES) {
        const a = await send(h, 'GET', probe);
        expect(a.status, `${probe}: ${a.text}`).to.equal(200);
        if (probe.includes('/export/csv')) expect(a.text, probe).to.equal(baseline[probe]);
        else expect(JSON.parse(a.text), probe).to.deep.equal(JSON.parse(baseline[probe]!));
      }
      const ready = await send(h, 'GET', '/readyz', { token: null });
      expect(ready.status, ready.text).to.equal(200);
      expect(JSON.parse(ready.text).status).to.equal('ready');
    });
  });
});

// ---------------------------------------------------------------------------------------------------------

describe('security: compileQuery keeps every payload out of the SQL text (unit)', () => {
  const TARGET = { relation: 'ws_rel', organization: 'acme-corp' };
  const BENIGN = 'benign';
  const texts = (c: CompiledQuery) => [c.count.sql, c.page.sql, c.export.sql];
  const params = (c: CompiledQuery) => [c.count.params, c.page.params, c.export.params];
  const compileRaw = (raw: string, target = TARGET) => compileQuery(parseQueryParameters(ENGINE, decodeQueryString(raw)).query, target);

  /** The payload changed only the bound parameters: the SQL is that of a harmless value, and the value is bound. */
  function expectOnlyBound(withPayload: CompiledQuery, withBenign: CompiledQuery, bound: unknown, benignBound: unknown, what: string): void {
    expect(texts(withPayload), what).to.deep.equal(texts(withBenign));
    for (const [i, list] of params(withPayload).entries()) {
      const benignList = params(withBenign)[i]!;
      expect(list.length, what).to.equal(benignList.length);
      const at = benignList.findIndex((v) => v === benignBound);
      expect(at, `${what}: the harmless value is bound`).to.be.at.least(0);
      expect(list[at], `${what}: the payload is bound in its place`).to.equal(bound);
    }
  }

  /** The payload does not appear in the SQL, unless the compiler writes that text itself for a harmless value (`'`, `?`). */
  function expectAbsent(c: CompiledQuery, benign: CompiledQuery, payload: string, what: string): void {
    for (const [i, sql] of texts(c).entries()) {
      if (texts(benign)[i]!.includes(payload)) continue;
      expect(sql.includes(payload), `${what}: SQL contains the payload:\n${sql}`).to.equal(false);
      expect(sql.includes(fold(payload)), `${what}: SQL contains the folded payload:\n${sql}`).to.equal(false);
    }
  }

  for (const p of PAYLOADS.filter((x) => !hasNul(x))) {
    it(`binds ${JSON.stringify(p)} as a filter value of every string field and operator, never into SQL`, () => {
      for (const field of STRING_FIELDS) {
        for (const op of STRING_OPERATORS) {
          const key = encodeStrict(`filter[0][${field}][${op}][0]`);
          const what = `${field} ${op} ${JSON.stringify(p)}`;
          const c = compileRaw(`type=workspaces&${key}=${encodeStrict(p)}`);
          const b = compileRaw(`type=workspaces&${key}=${BENIGN}`);
          // contains / does not contain bind the ASCII-folded value (interface §4).
          const bound = op === 'contains' || op === 'does not contain' ? fold(p) : p;
          expectOnlyBound(c, b, bound, BENIGN, what);
          expectAbsent(c, b, p, what);
        }
      }
    });

    it(`binds ${JSON.stringify(p)} as the organization, never into SQL`, () => {
      const c = compileRaw('type=workspaces', { ...TARGET, organization: p });
      const b = compileRaw('type=workspaces', { ...TARGET, organization: BENIGN });
      expectOnlyBound(c, b, p, BENIGN, `organization ${JSON.stringify(p)}`);
      expectAbsent(c, b, p, `organization ${JSON.stringify(p)}`);
    });

    it(`binds ${JSON.stringify(p)} from a saved view's filter value, never into SQL; its name goes nowhere near SQL`, () => {
      const body = (value: string, name: string) => ({ data: { name, query_type: 'workspaces', query: { filter: [{ field: 'workspace_name', operator: 'is', value: [value] }, { project_name: { contains: [value] } }] } } });
      const compileBody = (value: string, name: string) => {
        const change = parseSavedViewBody(ENGINE, body(value, name));
        return compileQuery(validateSavedQuery(ENGINE, change.queryType, sourceOfStored(change.query)), TARGET);
      };
      const c = compileBody(p, p);
      const b = compileBody(BENIGN, 'harmless name');
      expect(texts(c)).to.deep.equal(texts(b));
      expect(c.count.params).to.deep.equal([TARGET.organization, p, fold(p)]);
      expectAbsent(c, b, p, `saved view ${JSON.stringify(p)}`);
    });
  }

  for (const p of PAYLOADS) {
    it(`refuses ${JSON.stringify(p)} as field, operator, index, sort, fields, page or type with a 400 ApiError before any SQL exists`, () => {
      const raws = [
        `${encodeStrict(`filter[0][${p}][is][0]`)}=x`,
        `${encodeStrict(`filter[0][workspace_name][${p}][0]`)}=x`,
        `${encodeStrict(`filter[${p}][workspace_name][is][0]`)}=x`,
        `sort=${encodeStrict(p)}`,
        `fields=${encodeStrict(p)}`,
        `${encodeStrict(`fields[${p}]`)}=workspace_name`,
        `page%5Bnumber%5D=${encodeStrict(p)}`,
        `page%5Bsize%5D=${encodeStrict(p)}`,
      ].map((r) => `type=workspaces&${r}`).concat([`type=${encodeStrict(p)}`]);
      for (const raw of raws) {
        let error: unknown;
        try {
          compileRaw(raw);
        } catch (e) {
          error = e;
        }
        expect(error, raw).to.be.instanceOf(ApiError);
        expect((error as ApiError).status, raw).to.equal(400);
      }
    });
  }

  for (const p of PAYLOADS.filter(hasNul)) {
    it(`refuses ${JSON.stringify(p)} in a query-string value with a 400 ApiError while decoding (docs/decisions.md)`, () => {
      expect(() => decodeQueryString(`type=workspaces&${encodeStrict('filter[0][workspace_name][is][0]')}=${encodeStrict(p)}`)).to.throw(ApiError);
    });
  }
});
