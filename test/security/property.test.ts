// Property-based robustness tests over real HTTP (fast-check, seeded): whatever a client sends — random and
// mutated query strings, random saved-view bodies, random paths — the service answers a JSON:API 2xx or
// 4xx within a bounded time, never a 5xx (interface §7 "Bad input never yields a 500"), and an error body
// names what the client actually sent (interface §4, §7; docs/decisions.md "Query parameters", "Limits").
//
// Requests go through node:http with the request target written byte for byte as generated: fetch (WHATWG
// URL) would percent-encode `'"<>` in queries, resolve dot segments and fold `\` into `/` in paths, so it
// could never send most of what is generated here. Bytes outside 0x21–0x7E are percent-encoded by the
// generators (Node's client refuses them raw).
import { expect } from 'chai';
import fc from 'fast-check';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { keptAgent } from '../helpers/kept-agent.js';
import { parse as legacyParse } from 'node:url';
import { catalogFor } from '../../src/catalog/catalog.js';
import { ALL_OPERATORS } from '../../src/catalog/operators.js';
import { ORG } from '../fixtures/small-source.js';
import { startHarness, type Harness } from '../helpers/harness.js';

const JSONAPI = 'application/vnd.api+json';
const EXPLORER = `/api/v2/organizations/${ORG}/explorer`;
const VIEWS_PATH = `${EXPLORER}/views`;
/** Every request must be answered completely within this time. */
const LIMIT_MS = 5000;
/** FC_SEED=<n> explores other inputs (by default every run repeats the same ones); FC_STATS=1 prints the statuses seen. */
const SEED = Number(process.env.FC_SEED ?? 0);
const MAX_BODY = 64 * 1024;
/** Text that only the other organization's rows contain (test/fixtures/small-source.ts). */
const GLOBEX_SECRETS = ['globex-secret-ws', 'secret-project', 'ws-bbb1', 'prj-glx'];

// ---------------------------------------------------------------------------------------------------------
// Raw HTTP.

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  ms: number;
}

const agent = keptAgent(8);

interface SendOptions {
  token?: string | null;
  headers?: Record<string, string>;
  body?: Buffer;
  /** Send the body with Transfer-Encoding: chunked instead of a Content-Length. */
  chunked?: boolean;
}

function send(h: Harness, method: string, path: string, opts: SendOptions = {}): Promise<Answer> {
  const { hostname, port } = new URL(h.url);
  const headers: Record<string, string> = { ...opts.headers };
  const token = opts.token === undefined ? h.tokens.org : opts.token;
  if (token !== null) headers['Authorization'] = `Bearer ${token}`;
  if (opts.body !== undefined && !opts.chunked) headers['Content-Length'] = String(opts.body.length);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest({ host: hostname, port: Number(port), method, path, headers, agent }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started }));
      res.on('error', reject);
    });
    req.setTimeout(LIMIT_MS, () => req.destroy(new Error(`no complete answer within ${LIMIT_MS} ms: ${method} ${path}`)));
    req.on('error', (e: NodeJS.ErrnoException) => {
      // The server may close after an early 413 while the upload is still being written; the answer counts.
      if (answered && (e.code === 'EPIPE' || e.code === 'ECONNRESET')) return;
      reject(new Error(`${method} ${JSON.stringify(path)}: ${e.message}`));
    });
    if (opts.body !== undefined && opts.chunked) {
      const half = Math.floor(opts.body.length / 2);
      req.write(opts.body.subarray(0, half));
      req.end(opts.body.subarray(half));
    } else req.end(opts.body);
  });
}

function parseJson(a: Answer, what: string): any {
  try {
    return JSON.parse(a.text);
  } catch {
    throw new Error(`${what}: not JSON (status ${a.status}): ${a.text.slice(0, 300)}`);
  }
}

/** The common contract of every answer: 2xx or 4xx, in time, and a JSON:API error body for 4xx. Returns the parsed body of a JSON answer. */
function checkAnswer(a: Answer, what: string, method = 'GET'): any {
  expect(a.status, `${what} → ${a.status} ${a.text.slice(0, 300)}`).to.be.within(200, 499);
  expect(a.status, `${what}: 3xx is not an answer here`).to.not.be.within(300, 399);
  expect(a.ms, `${what} took ${a.ms} ms`).to.be.below(LIMIT_MS);
  if (a.status >= 400) {
    if (method === 'HEAD') return undefined;
    expect(a.headers['content-type'], what).to.equal(JSONAPI);
    const body = parseJson(a, what);
    expect(Object.keys(body), what).to.deep.equal(['errors']);
    expect(body.errors, what).to.be.an('array').that.is.not.empty;
    for (const e of body.errors) {
      expect(Object.keys(e).every((k) => ['status', 'title', 'detail', 'source'].includes(k)), `${what}: ${a.text}`).to.equal(true);
      expect(e.status, `${what}: ${a.text}`).to.equal(String(a.status));
      expect(e.title, what).to.be.a('string').that.is.not.empty;
      expect(e.detail, what).to.be.a('string').that.is.not.empty;
      if (e.source !== undefined) {
        expect(e.source, what).to.be.an('object');
        const keys = Object.keys(e.source);
        expect(keys, `${what}: ${a.text}`).to.have.length(1);
        expect(['parameter', 'pointer', 'header'], `${what}: ${a.text}`).to.include(keys[0]);
        expect(e.source[keys[0]!], what).to.be.a('string');
      }
    }
    return body;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Encoding of generated text into request-target bytes.

type Mode = 'component' | 'strict' | 'plus' | 'raw' | 'bracketsRaw';
const MODES: Mode[] = ['component', 'strict', 'plus', 'raw', 'bracketsRaw'];
const hex = (b: number) => '%' + b.toString(16).toUpperCase().padStart(2, '0');

/** Percent-encodes the UTF-8 bytes of `text`; which bytes stay literal depends on `mode`. */
function encode(text: string, mode: Mode): string {
  let out = '';
  for (const b of Buffer.from(text, 'utf8')) {
    const ch = String.fromCharCode(b);
    const keep =
      mode === 'component' ? /[A-Za-z0-9\-_.!~*'()]/.test(ch)
        : mode === 'strict' ? /[A-Za-z0-9\-_.~]/.test(ch)
          : mode === 'plus' ? /[A-Za-z0-9\-_.!~*'()]/.test(ch)
            : mode === 'bracketsRaw' ? /[A-Za-z0-9\-_.~[\]]/.test(ch)
              : b >= 0x21 && b <= 0x7e; // raw: every printable ASCII byte as it is, `%&=#+[]` included
    if (keep) out += ch;
    else if (b === 0x20 && (mode === 'plus' || mode === 'raw')) out += '+';
    else out += hex(b);
  }
  return out;
}
const encoded = (text: fc.Arbitrary<string>) => fc.tuple(text, fc.constantFrom(...MODES)).map(([t, m]) => encode(t, m));

/** Decodes like a lenient server would, for recognising what a 400 names. */
function lenientDecode(text: string): string[] {
  const plus = text.replace(/\+/g, ' ');
  const out = [text, plus];
  try { out.push(decodeURIComponent(plus)); } catch { /* invalid encoding: the raw forms stand */ }
  try { out.push(decodeURIComponent(text)); } catch { /* idem */ }
  return out;
}

/** The parameter names a query string carries, raw and decoded, as the server may name them. */
function sentNames(query: string): Set<string> {
  const names = new Set<string>();
  // What Koa sees: parseurl falls back to the legacy parser (which escapes some bytes and drops a `#…`).
  const legacy = legacyParse(`/x?${query}`).query;
  for (const q of [query, typeof legacy === 'string' ? legacy : '']) {
    for (const component of q.split('&')) {
      const eq = component.indexOf('=');
      for (const name of lenientDecode(eq < 0 ? component : component.slice(0, eq))) names.add(name);
    }
  }
  return names;
}

// ---------------------------------------------------------------------------------------------------------
// Vocabulary.

const CATALOG = catalogFor('terraform');
const VIEW_NAMES = CATALOG.views.map((v) => v.name as string);
const fieldsOf = (view: string) => CATALOG.view(view)!.fields.map((f) => f.name);
const REAL_FIELDS = [...new Set(CATALOG.views.flatMap((v) => v.fields.map((f) => f.name)))];
const FAKE_FIELDS = [
  'nope', 'workspace-name', 'WORKSPACE_NAME', 'workspace_engine_version', '__proto__', 'constructor', 'toString',
  'hasOwnProperty', '', ' ', 'workspace_name ', '_id', '_org', 'workspace_name__f', 'workspace_terraform_version__vk',
  '"workspace_name"', 'workspace_name"--', 'workspace_name,drifted', 'id', 'type', '*',
];
const OPERATORS = [
  ...ALL_OPERATORS, 'does_not_contain', 'does+not+contain', 'IS', 'Is', 'eq', 'neq', 'like', 'ilike', 'in', 'between',
  '', '__proto__', 'constructor', 'toString', 'valueOf', 'is ', 'contains\u0000', 'gt;', 'is_empty ',
];
const INDEXES = ['0', '0', '0', '1', '2', '00', '007', '-1', '1.5', '1e3', '99999999999999999999', '18446744073709551616', '', 'a', ' 0', '0x1', '\u0663', '+1', '0 '];
const NUMBERS = [
  '1', '2', '0', '-1', '1.5', '1e30', '1E3', '99999999999999999999', '9007199254740991', '9007199254740992', '9007199254740993',
  '18446744073709551616', '100', '101', '1000000', '00', '01', '-0', '+1', ' 1', '1 ', '0x10', 'NaN', 'Infinity', '-Infinity', '\u0663',
];
const WEIRD = [
  '', ' ', '😀', '👨‍👩‍👧', '\u202Eevil\u202C', '\u200F', 'שלום', 'مرحبا', 'e\u0301', 'Z\u0351\u0358\u0300', '\uFEFF', 'Café', 'ÉTL', 'pay',
  '\u0000', 'a\u0000b', '\n', '\r\n', '\t', 'true', 'TRUE', 'false', 'null', 'undefined', '2024-01-01', '2024-02-30', '2024-02-29',
  '2023-02-29', '2024-01-01T00:00:00Z', '2024-01-01T00:00:00.123456789+14:00', '0000-01-01T00:00-00:01', '9999-12-31T23:59:59.999-23:59',
  '2024-13-01', '2024-01-01T24:00', '2024-01-01T23:59:60', ',', ',,', '-', '--', 'workspace_name,', ' workspace_name , drifted ',
  "'", "''", '"', '\\', '%', '%00', '?', '$1', "'; DROP TABLE workspaces; --", 'a'.repeat(300),
];
/** Text fragments spliced into query strings as they are (invalid encodings, separators, brackets). */
const FRAGMENTS = [
  '%', '%G1', '%E0%A4%A', '%00', '%FF', '%C0%AF', '%ED%A0%80', '%F4%90%80%80', '%2', '%%', '%%32%30', '[', ']', '[]', '][', '%5B',
  '%5D', '%5b%5d', '=', '==', '&', '&&', '+', ';', '%26', '%3D', '%2B', '%20', '#', '?', '/', '\\', '"', "'", '<', '>', '{', '}', '|', '^', '`',
];

const fieldName = fc.oneof({ arbitrary: fc.constantFrom(...REAL_FIELDS), weight: 4 }, { arbitrary: fc.constantFrom(...FAKE_FIELDS), weight: 1 });
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
  fc.string({ unit: 'grapheme-ascii', maxLength: 16 }),
);
const filterKey = fc.tuple(fc.constantFrom(...INDEXES), fc.oneof({ arbitrary: fieldName, weight: 5 }, { arbitrary: anyText, weight: 1 }),
  fc.oneof({ arbitrary: fc.constantFrom(...OPERATORS), weight: 5 }, { arbitrary: anyText, weight: 1 }), fc.constantFrom(...INDEXES))
  .map(([i, f, o, j]) => `filter[${i}][${f}][${o}][${j}]`);
const paramName = fc.oneof(
  { arbitrary: fc.constantFrom('type', 'sort', 'fields', ...VIEW_NAMES.map((v) => `fields[${v}]`), 'fields[nope]', 'fields[]', 'fields[__proto__]',
    'page[number]', 'page[size]', 'page[after]', 'page[after]', 'page', 'page[]', 'page[offset]', 'filter', 'filter[0]', 'filter[]', 'filter[0][workspace_name]',
    'filter[0][workspace_name][is]', 'filter[0][workspace_name][is][0][0]', 'include', 'sort[]', 'type[]', 'TYPE', 'Sort'), weight: 4 },
  { arbitrary: filterKey, weight: 5 },
  { arbitrary: anyText, weight: 1 },
);
const fieldList = fc.array(fc.tuple(fc.constantFrom('', '', '', '-', '--', '+', ' '), fieldName), { maxLength: 6 })
  .map((keys) => keys.map(([p, f]) => p + f).join(','));
/** Cursor-shaped values: base64url of what a cursor holds, well formed or not, none issued by this server. */
const CURSORS = ['[1,"x",["s"],["1"]]', '[1,"x",["s"],[null,"ws-1"]]', '[1]', '{}', '"a"', '[1,"AAAAAAAAAAAAAAAAAAAAAA",["20990101T000000000Z-x"],["a","b","c"]]']
  .map((json) => Buffer.from(json).toString('base64url'));
const paramValue = fc.oneof(
  { arbitrary: fc.constantFrom(...VIEW_NAMES, 'WORKSPACES', 'workspace', 'tf-versions'), weight: 2 },
  { arbitrary: fc.constantFrom(...CURSORS), weight: 1 },
  { arbitrary: fieldList, weight: 3 },
  { arbitrary: fc.constantFrom(...NUMBERS), weight: 3 },
  { arbitrary: fc.constantFrom(...WEIRD), weight: 3 },
  { arbitrary: anyText, weight: 2 },
);

const SHAPES: ((k: string, v: string) => string)[] = [
  (k, v) => `${k}=${v}`, (k, v) => `${k}=${v}`, (k, v) => `${k}=${v}`, (k, v) => `${k}=${v}`,
  (k) => k, (k) => `${k}=`, (_k, v) => `=${v}`, (k, v) => `${k}==${v}`, (k, v) => `${k}=${v}=${v}`,
];
const component = fc.tuple(encoded(paramName), encoded(paramValue), fc.nat({ max: SHAPES.length - 1 }))
  .map(([k, v, shape]) => SHAPES[shape]!(k, v));
const splice = (text: string, inserts: [number, string][]) => {
  let out = text;
  for (const [at, piece] of inserts) {
    const i = at % (out.length + 1);
    out = out.slice(0, i) + piece + out.slice(i);
  }
  return out;
};

/** A query string built from parts: mostly with a type, then random components, then spliced fragments. */
const builtQuery = fc.record({
  type: fc.option(fc.tuple(fc.constantFrom('type', 'type', 'type', 'typ%65', 'TYPE'), fc.constantFrom(...VIEW_NAMES, ...VIEW_NAMES, 'nope', '', 'workspaces%00')).map(([k, v]) => `${k}=${v}`), { freq: 4 }),
  components: fc.array(component, { maxLength: 10 }),
  separator: fc.constantFrom('&', '&', '&', '&&', '&;'),
  repeat: fc.option(fc.nat(), { freq: 4 }),
  fragments: fc.array(fc.tuple(fc.nat(), fc.constantFrom(...FRAGMENTS)), { maxLength: 3 }),
}).map(({ type, components, separator, repeat, fragments }) => {
  const parts = type === null ? [...components] : [type, ...components];
  if (repeat !== null && parts.length > 0) parts.push(parts[repeat % parts.length]!);
  return splice(parts.join(separator), fragments);
});

const VALID_QUERIES = [
  'type=workspaces',
  'type=workspaces&sort=-workspace_name&fields=workspace_name,drifted&page%5Bnumber%5D=1&page%5Bsize%5D=2',
  'type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bcontains%5D%5B0%5D=pay',
  'type=workspaces&filter[0][checks_failed][gt][0]=0&filter[1][drifted][is][0]=true',
  'type=tf_versions&filter%5B0%5D%5Bworkspace_count%5D%5Bgt%5D%5B0%5D=1',
  'type=providers&sort=-workspace_count&fields%5Bproviders%5D=name,version',
  'type=modules&filter%5B0%5D%5Bregistry_type%5D%5Bis%5D%5B0%5D=public&filter%5B0%5D%5Bname%5D%5Bcontains%5D%5B0%5D=vpc',
  'type=workspaces&filter%5B0%5D%5Bworkspace_created_at%5D%5Bis_before%5D%5B0%5D=2024-01-01T00%3A00%3A00Z',
  'type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bdoes+not+contain%5D%5B0%5D=core&filter%5B0%5D%5Bworkspace_name%5D%5Bdoes+not+contain%5D%5B1%5D=pay',
  'type=workspaces&filter%5B0%5D%5Bcurrent_run_applied_at%5D%5Bis_empty%5D%5B0%5D=&sort=workspace_terraform_version,-checks_passed',
];

type Mutation = { kind: 'insert'; at: number; piece: string } | { kind: 'delete'; at: number; length: number }
  | { kind: 'duplicate'; index: number } | { kind: 'revalue'; index: number; value: string } | { kind: 'rekey'; index: number; key: string }
  | { kind: 'brackets'; encodeThem: boolean };
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), piece: fc.oneof(fc.constantFrom(...FRAGMENTS), encoded(paramValue)) }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ kind: fc.constant('duplicate' as const), index: fc.nat() }),
  fc.record({ kind: fc.constant('revalue' as const), index: fc.nat(), value: encoded(paramValue) }),
  fc.record({ kind: fc.constant('rekey' as const), index: fc.nat(), key: encoded(paramName) }),
  fc.record({ kind: fc.constant('brackets' as const), encodeThem: fc.boolean() }),
);
function mutate(query: string, m: Mutation): string {
  const parts = query.split('&');
  switch (m.kind) {
    case 'insert': return splice(query, [[m.at, m.piece]]);
    case 'delete': { const i = m.at % (query.length + 1); return query.slice(0, i) + query.slice(i + m.length); }
    case 'duplicate': return [...parts, parts[m.index % parts.length]!].join('&');
    case 'revalue': { const i = m.index % parts.length; parts[i] = `${parts[i]!.split('=')[0]}=${m.value}`; return parts.join('&'); }
    case 'rekey': { const i = m.index % parts.length; const eq = parts[i]!.indexOf('='); parts[i] = m.key + (eq < 0 ? '' : parts[i]!.slice(eq)); return parts.join('&'); }
    case 'brackets': return m.encodeThem ? query.replace(/\[/g, '%5B').replace(/]/g, '%5D') : query.replace(/%5B/gi, '[').replace(/%5D/gi, ']');
  }
}
const mutatedQuery = fc.tuple(fc.constantFrom(...VALID_QUERIES), fc.array(mutation, { minLength: 1, maxLength: 3 }))
  .map(([q, ms]) => ms.reduce(mutate, q));

/** Many conditions, values, sort keys or fields at once: around the limits of docs/decisions.md (50, 100, 20, 100). */
const bulkQuery = fc.record({
  view: fc.constantFrom(...VIEW_NAMES),
  filters: fc.integer({ min: 0, max: 130 }),
  groups: fc.integer({ min: 1, max: 60 }),
  sortKeys: fc.integer({ min: 0, max: 25 }),
  fieldNames: fc.integer({ min: 0, max: 110 }),
  bracketsRaw: fc.boolean(),
}).map(({ view, filters, groups, sortKeys, fieldNames, bracketsRaw }) => {
  const names = fieldsOf(view);
  const key = (k: string) => (bracketsRaw ? k : k.replace(/\[/g, '%5B').replace(/]/g, '%5D'));
  const parts = [`type=${view}`];
  for (let n = 0; n < filters; n++) parts.push(`${key(`filter[${n % groups}][${names[n % names.length]}][is_not_empty][${Math.floor(n / groups)}]`)}=`);
  if (sortKeys > 0) parts.push(`sort=${Array.from({ length: sortKeys }, (_, i) => names[i % names.length]).join(',')}`);
  if (fieldNames > 0) parts.push(`fields=${Array.from({ length: fieldNames }, (_, i) => names[i % names.length]).join(',')}`);
  return parts.join('&');
});

const anyQuery = fc.oneof({ arbitrary: builtQuery, weight: 4 }, { arbitrary: mutatedQuery, weight: 4 }, { arbitrary: bulkQuery, weight: 1 });

// ---------------------------------------------------------------------------------------------------------
// JSON pointers (RFC 6901).

/** Resolves `pointer` in `doc`; `allowMissingLast` accepts an absent last member of an existing object. */
function resolvesIn(doc: unknown, pointer: string, allowMissingLast: boolean): { ok: boolean; why?: string } {
  if (pointer === '') return { ok: true };
  if (!pointer.startsWith('/')) return { ok: false, why: 'does not start with /' };
  const tokens = pointer.slice(1).split('/');
  let here: unknown = doc;
  for (const [i, raw] of tokens.entries()) {
    if (/~[^01]|~$/.test(raw)) return { ok: false, why: `bad escape in ${JSON.stringify(raw)}` };
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    const last = i === tokens.length - 1;
    if (Array.isArray(here)) {
      if (!/^(0|[1-9]\d*)$/.test(token) || Number(token) >= here.length) return { ok: false, why: `no index ${JSON.stringify(token)}` };
      here = here[Number(token)];
    } else if (here !== null && typeof here === 'object') {
      if (!Object.prototype.hasOwnProperty.call(here, token)) {
        return last && allowMissingLast ? { ok: true } : { ok: false, why: `no member ${JSON.stringify(token)}` };
      }
      here = (here as Record<string, unknown>)[token];
    } else return { ok: false, why: `${JSON.stringify(token)} goes into a scalar` };
  }
  return { ok: true };
}

// ---------------------------------------------------------------------------------------------------------
// Saved-view bodies.

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Layout = 'flat' | 'jsonapi';

const VALID_FILTERS: Record<string, { field: string; operator: string; value: string[] }[]> = {
  workspaces: [
    { field: 'workspace_name', operator: 'contains', value: ['pay'] },
    { field: 'drifted', operator: 'is', value: ['true'] },
    { field: 'checks_failed', operator: 'gt', value: ['0'] },
    { field: 'workspace_created_at', operator: 'is_after', value: ['2022-01-01'] },
    { field: 'vcs_repo_identifier', operator: 'is_empty', value: [] },
    { field: 'workspace_name', operator: 'does_not_contain', value: ['core', 'x'] },
  ],
  tf_versions: [{ field: 'workspace_count', operator: 'gteq', value: ['1'] }, { field: 'version', operator: 'is_not', value: ['1.5.7'] }],
  providers: [{ field: 'registry_type', operator: 'is', value: ['public'] }, { field: 'name', operator: 'does not contain', value: ['x'] }],
  modules: [{ field: 'registry_type', operator: 'is_not_empty', value: [] }, { field: 'version', operator: 'contains', value: ['5'] }],
  resources: [
    { field: 'provider_type', operator: 'is', value: ['aws_instance'] }, { field: 'billable_rum', operator: 'is', value: ['false'] },
    { field: 'source_updated_at', operator: 'is_before', value: ['2024-06-01'] }, { field: 'module_name', operator: 'is_not', value: ['root'] },
  ],
};

const nameArb = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 24 }), weight: 6 },
  { arbitrary: fc.constantFrom('', ' ', '   x   ', 'a'.repeat(255), 'a'.repeat(256), '😀'.repeat(255), '😀'.repeat(256), '\u0000', 'e\u0301', "'; DROP TABLE views; --"), weight: 1 },
);

const validBody = (views: string[]) => fc.record({
  layout: fc.constantFrom<Layout>('flat', 'jsonapi'),
  typeKey: fc.constantFrom('query-type', 'query_type', 'both', 'none'),
  name: nameArb,
  view: fc.constantFrom(...views),
  shortFilters: fc.boolean(),
  filterPicks: fc.array(fc.nat(), { maxLength: 3 }),
  fieldPicks: fc.option(fc.array(fc.nat(), { minLength: 1, maxLength: 4 })),
  fieldsAsObject: fc.boolean(),
  // The key of the {"<view>": [...]} form of fields, and a field name of a filter: usually right, sometimes
  // a name that needs JSON-pointer escaping (`/`, `~`) or that is no view / field at all.
  otherKey: fc.option(fc.constantFrom('a/b', '~', '~1', '/', 'x~0y', 'workspaces/', '', '__proto__', 'constructor', 'tf_versions', 'modules'), { freq: 3 }),
  otherKeyIn: fc.constantFrom('fields', 'filterField', 'filterOperator'),
  sortPicks: fc.option(fc.array(fc.tuple(fc.nat(), fc.boolean()), { minLength: 1, maxLength: 3 })),
  queryTypeInQuery: fc.boolean(),
}).map((r): Json => {
  const names = fieldsOf(r.view);
  const filters = r.filterPicks.map((i) => VALID_FILTERS[r.view]![i % VALID_FILTERS[r.view]!.length]!);
  const key = (k: string, place: string) => (r.otherKey !== null && r.otherKeyIn === place ? r.otherKey : k);
  const entry = (f: { field: string; operator: string; value: string[] }): Json => r.shortFilters
    ? Object.defineProperty({}, key(f.field, 'filterField'), { value: Object.defineProperty({}, key(f.operator, 'filterOperator'), { value: [...f.value], enumerable: true }), enumerable: true })
    : { field: key(f.field, 'filterField'), operator: key(f.operator, 'filterOperator'), value: [...f.value] };
  const query: { [k: string]: Json } = { filter: filters.map(entry) };
  if (r.fieldPicks) {
    const list = r.fieldPicks.map((i) => names[i % names.length]!);
    query.fields = r.fieldsAsObject ? Object.defineProperty({}, key(r.view, 'fields'), { value: list, enumerable: true }) : list;
  }
  if (r.sortPicks) query.sort = r.sortPicks.map(([i, d]) => (d ? '-' : '') + names[i % names.length]!);
  if (r.queryTypeInQuery) query.type = r.view;
  // Without a query type a create is a 422 and an update keeps the view's type.
  if (r.layout === 'flat') return { data: r.typeKey === 'none' ? { name: r.name, query } : { name: r.name, query_type: r.view, query } };
  const attributes: { [k: string]: Json } = { name: r.name, query };
  if (r.typeKey === 'query-type' || r.typeKey === 'both') attributes['query-type'] = r.view;
  if (r.typeKey === 'query_type' || r.typeKey === 'both') attributes.query_type = r.view;
  return { data: { type: 'explorer-saved-queries', attributes } };
});

type BodyMutation = { at: number; op: 'replace' | 'delete' | 'wrap' | 'deep' | 'null' | 'addKey' | 'string' | 'number' | 'emptyObject' | 'emptyArray' | 'push'; value: Json; key: string; depth: number };
const bodyMutation: fc.Arbitrary<BodyMutation> = fc.record({
  at: fc.nat(),
  op: fc.constantFrom('replace', 'delete', 'wrap', 'deep', 'null', 'addKey', 'string', 'number', 'emptyObject', 'emptyArray', 'push'),
  value: fc.oneof(fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>, fc.constantFrom<Json>(...WEIRD, ...VIEW_NAMES, ...REAL_FIELDS, ...ALL_OPERATORS)),
  key: fc.oneof(fc.constantFrom('__proto__', 'constructor', 'a/b', '~', '~1', '', 'field', 'operator', 'value', 'type', 'attributes', 'name', 'query', 'query_type', 'query-type', 'filter', 'fields', 'sort', ...VIEW_NAMES, ...REAL_FIELDS.slice(0, 5)), fc.string({ maxLength: 8 })),
  depth: fc.integer({ min: 1, max: 20000 }),
});

/** Paths (lists of member names / indexes) in `doc` down to depth 12, the root included; iterative, for deep documents. */
function paths(doc: Json): (string | number)[][] {
  const out: (string | number)[][] = [];
  const todo: [Json, (string | number)[]][] = [[doc, []]];
  while (todo.length > 0) {
    const [v, at] = todo.shift()!;
    out.push(at);
    if (at.length >= 12) continue;
    if (Array.isArray(v)) v.forEach((x, i) => todo.push([x, [...at, i]]));
    else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) todo.push([x, [...at, k]]);
  }
  return out;
}
/**
 * Deep nesting is spliced into the body text (JSON.stringify and fast-check's printer recurse and would
 * overflow the stack here; the server's JSON.parse does not): a marker string stands for it until then.
 */
const deep = (depth: number, asObject: boolean): Json => `\u0001deep:${depth}:${asObject ? 'o' : 'a'}\u0001`;
const DEEP_MARKER = /"\\u0001deep:(\d+):([oa])\\u0001"/g;
const expandDeep = (text: string) => text.replace(DEEP_MARKER, (_m, depth: string, kind: string) =>
  kind === 'o' ? '{"a":'.repeat(Number(depth)) + '"bottom"' + '}'.repeat(Number(depth)) : '['.repeat(Number(depth)) + '"bottom"' + ']'.repeat(Number(depth)));
function applyMutation(doc: Json, m: BodyMutation): Json {
  const all = paths(doc);
  const path = all[m.at % all.length]!;
  const get = (p: (string | number)[]) => p.reduce<any>((v, k) => v[k], doc);
  const current = get(path);
  const replacement = (): Json | undefined => {
    switch (m.op) {
      case 'replace': return m.value;
      case 'delete': return undefined;
      case 'wrap': return [current];
      case 'deep': return deep(m.depth, m.depth % 2 === 0);
      case 'null': return null;
      case 'string': return typeof m.value === 'string' ? m.value : JSON.stringify(m.value);
      case 'number': return typeof m.value === 'number' ? m.value : [1e30, -1, 0, 1.5, 2 ** 64, -0][m.depth % 6]!;
      case 'emptyObject': return {};
      case 'emptyArray': return [];
      case 'addKey':
        if (current !== null && typeof current === 'object' && !Array.isArray(current)) {
          Object.defineProperty(current, m.key, { value: m.value, enumerable: true, configurable: true, writable: true });
          return current;
        }
        return { [m.key]: m.value };
      case 'push': return Array.isArray(current) ? [...current, m.value] : [current, m.value];
    }
  };
  const next = replacement();
  if (path.length === 0) return next === undefined ? null : next;
  const parent = get(path.slice(0, -1));
  const key = path[path.length - 1]!;
  if (next === undefined) {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete parent[key];
  } else if (Array.isArray(parent)) parent[key as number] = next;
  else Object.defineProperty(parent, key, { value: next, enumerable: true, configurable: true, writable: true });
  return doc;
}

const mutatedBody = (views: string[]) => fc.tuple(validBody(views), fc.array(bodyMutation, { maxLength: 3 }))
  .map(([doc, ms]) => ms.reduce((d, m) => applyMutation(d, m), structuredClone(doc)));
/** Bodies for a create (any view) or for an update of a `workspaces` view (mostly keeping its type). */
const someBody = (views: string[]) => fc.oneof(
  { arbitrary: mutatedBody(views), weight: 8 },
  { arbitrary: fc.jsonValue({ maxDepth: 5 }) as fc.Arbitrary<Json>, weight: 1 },
  { arbitrary: fc.record({ data: fc.jsonValue({ maxDepth: 4 }) }) as fc.Arbitrary<Json>, weight: 1 },
  { arbitrary: fc.object({ maxDepth: 3, values: [fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<any>] }).map((o) => ({ data: o }) as Json), weight: 1 },
);

type Encoding = 'json' | 'truncated' | 'garbage' | 'badUtf8' | 'bom' | 'huge' | 'limit' | 'overLimit' | 'empty';
const bodyRequest = (views: string[]) => fc.record({
  doc: someBody(views),
  encoding: fc.oneof({ arbitrary: fc.constant<Encoding>('json'), weight: 14 },
    { arbitrary: fc.constantFrom<Encoding>('truncated', 'garbage', 'badUtf8', 'bom', 'huge', 'limit', 'overLimit', 'empty'), weight: 3 }),
  cut: fc.nat(),
  garbage: fc.uint8Array({ maxLength: 64 }),
  contentType: fc.oneof({ arbitrary: fc.constantFrom(JSONAPI, 'application/json'), weight: 12 },
    { arbitrary: fc.constantFrom('application/json; charset=utf-8', 'Application/JSON', ' application/vnd.api+json ; ext=x', 'text/plain',
      '', null, 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonp', 'application/json, text/plain',
      'text/json', 'application/*', '*/*', 'application/json\u00e9'), weight: 3 }),
  chunked: fc.boolean(),
});

function bodyBytes(r: { doc: Json; encoding: Encoding; cut: number; garbage: Uint8Array }): Buffer {
  const text = expandDeep(JSON.stringify(r.doc) ?? 'null');
  const padTo = (n: number) => {
    // An object body padded (in an ignored member) to exactly n bytes.
    const base = JSON.stringify({ data: { name: 'padded', query_type: 'workspaces', query: { filter: [] }, pad: '' } });
    return Buffer.from(base.replace('"pad":""', `"pad":"${'p'.repeat(n - Buffer.byteLength(base))}"`));
  };
  switch (r.encoding) {
    case 'json': return Buffer.from(text);
    case 'truncated': return Buffer.from(text).subarray(0, r.cut % Math.max(1, Buffer.byteLength(text)));
    case 'garbage': return Buffer.from(r.garbage);
    case 'badUtf8': return Buffer.concat([Buffer.from('{"data":{"name":"bad '), Buffer.from([0xff, 0xc0, 0xaf, 0xed, 0xa0, 0x80]), Buffer.from('","query_type":"workspaces","query":{"filter":[]}}}')]);
    case 'bom': return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]);
    case 'huge': return Buffer.from(JSON.stringify({ data: { name: 'huge', query_type: 'workspaces', query: { filter: [] }, pad: 'x'.repeat(MAX_BODY + (r.cut % 4096)) } }));
    case 'limit': return padTo(MAX_BODY);
    case 'overLimit': return padTo(MAX_BODY + 1);
    case 'empty': return Buffer.alloc(0);
  }
}

/** What interface §6/§7 say the body deserves before its content is judged: 415, 413, 400, or undefined (go on). */
function envelopeVerdict(contentType: string | null, bytes: Buffer): { status: number } | { parsed: unknown } {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && type !== JSONAPI) return { status: 415 };
  if (bytes.length > MAX_BODY) return { status: 413 };
  try {
    return { parsed: JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) };
  } catch {
    return { status: 400 };
  }
}

/** The name a body sends (flat or JSON:API layout), if it is a string. */
function sentName(doc: unknown): string | undefined {
  const data = (doc as { data?: Record<string, unknown> } | null)?.data;
  if (data === null || typeof data !== 'object') return undefined;
  const members = 'attributes' in data ? (data.attributes as Record<string, unknown>) : data;
  return typeof members?.name === 'string' ? members.name : undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Paths.

const SEGMENTS = [
  'acme-corp', 'acme-corp', 'globex', 'empty-org', 'ACME-CORP', 'acme%2Dcorp', 'acme-corp%00', '%00', '.', '..', '%2e', '%2E%2E', '.%2e',
  '%2e.', '%2f', '%2F', '..%2f', '%2e%2e%2f', '..%2F..%2Fglobex', '%5C', '\\', '..\\..', '%', '%G1', '%E0%A4%A', '%ED%A0%80', '', ';',
  ';x=1', '*', '~', 'sq-', 'sq-AAAAAAAAAAAAAAAA', '%20', '+', '%C0%AE%C0%AE', '%u002e', '__proto__', 'constructor', 'views', 'explorer',
  'results', 'csv', 'acme-corp%2Fexplorer%2Fviews', '%E2%80%AE', '%F0%9F%98%80', "'", '"', '<script>', '${x}', '{{x}}',
];
const segment = fc.oneof(
  { arbitrary: fc.constantFrom(...SEGMENTS), weight: 4 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => encode(s, 'component')), weight: 1 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 12 }).map((s) => encode(s, 'raw').replace(/[?#]/g, (c) => hex(c.charCodeAt(0)))), weight: 1 },
);
const TAILS = ['', '', '/', '/results', '/csv', '/export/csv', '/..', '/../..', '/%2e%2e', '/./results', '//', '/results/', '/results/x',
  '?page%5Bsize%5D=1', '/results?page%5Bnumber%5D=0', '/results?page%5Bsize%5D=1e3', '/csv?type=nope', '/..%2F..%2F..%2Fglobex%2Fexplorer%2Fviews'];
const PREFIXES = ['/api/v2/organizations/', '/api/v2/organizations/', '/api/v2/organizations/', '/api/v2/organizations//', '/api/v2/./organizations/',
  '/api/v2/organizations/../organizations/', '/API/V2/Organizations/', '/api/v2/organizations/%2e%2e/organizations/', '/api/v1/organizations/', '//api/v2/organizations/'];
// Other methods (OPTIONS, TRACE, WebDAV's…) have their own test below.
const METHODS = ['GET', 'GET', 'GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'PUT'];
type TokenKind = 'org' | 'otherOrg' | 'readers' | 'developers' | 'bob' | 'none' | 'garbage';
/** Stands for the id of a saved view that exists when the property starts. */
const EXISTING = '<existing>';
/** Mostly the canonical piece, sometimes a variant: so that real routes are reached as well as near misses. */
const mostly = <T>(canonical: T, variants: fc.Arbitrary<T>) => fc.oneof({ arbitrary: fc.constant(canonical), weight: 3 }, { arbitrary: variants, weight: 1 });
const pathRequest = fc.record({
  prefix: mostly('/api/v2/organizations/', fc.constantFrom(...PREFIXES)),
  org: mostly('acme-corp', fc.oneof(fc.constant('globex'), segment)),
  middle: mostly('/explorer/views/', fc.constantFrom('/explorer/views//', '/explorer/./views/', '/explorer/views/../views/', '/explorer/VIEWS/', '/explorer/%76iews/', '/explorer/views/%2F', '/explorer/views/..%2F')),
  id: mostly(EXISTING, segment),
  tail: mostly('', fc.constantFrom(...TAILS)),
  method: fc.constantFrom(...METHODS),
  token: mostly<TokenKind>('org', fc.constantFrom<TokenKind>('otherOrg', 'readers', 'developers', 'bob', 'none', 'garbage')),
  body: fc.boolean(),
});

// ---------------------------------------------------------------------------------------------------------

/** fc.assert with a reporter that prints the counterexample as (truncated) JSON and the failed assertion. */
async function check<T>(property: fc.IAsyncPropertyWithHooks<[T]>, params: { seed: number; numRuns: number }): Promise<void> {
  const show = (v: unknown) => {
    try { return (JSON.stringify(v) ?? String(v)).slice(0, 2000); } catch (e) { return `(unprintable: ${(e as Error).message})`; }
  };
  await fc.assert(property, {
    ...params,
    asyncReporter: async (out) => {
      if (!out.failed) return;
      const cause = out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance);
      throw new Error(`Property failed after ${out.numRuns} runs (seed ${out.seed}, path ${JSON.stringify(out.counterexamplePath)}).\n`
        + `Counterexample: ${show(out.counterexample)}\nCause: ${cause.slice(0, 3000)}`);
    },
  });
}

describe('security: properties over real HTTP (never a 5xx, always JSON:API, always in time)', function () {
  this.timeout(120_000);
  let h: Harness;
  let patchTarget: string;
  /** Ids of the saved views of acme-corp created by these properties, to check that no other caller sees them. */
  const acmeViewIds = new Set<string>();

  before(async () => {
    h = await startHarness();
    const created = await send(h, 'POST', VIEWS_PATH, {
      headers: { 'Content-Type': JSONAPI },
      body: Buffer.from(JSON.stringify({ data: { name: 'patch target', query_type: 'workspaces', query: { filter: [] } } })),
    });
    expect(created.status, created.text).to.equal(201);
    patchTarget = JSON.parse(created.text).data.id;
    acmeViewIds.add(patchTarget);
  });
  after(async () => {
    agent.destroy();
    await h?.close();
  });

  const tokenOf = (kind: TokenKind): string | null =>
    kind === 'none' ? null : kind === 'garbage' ? 'at-AAAAAAAAAAAAAAAA.BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB' : h.tokens[kind];

  const EXPORT_TYPES: Record<string, string> = { '/export/csv': 'text/csv; charset=utf-8', '/export/parquet': 'application/vnd.apache.parquet', '/export/ndjson': 'application/x-ndjson; charset=utf-8' };
  for (const route of ['', '/export/csv', '/export/parquet', '/export/ndjson']) {
    it(`(a) random and mutated query strings on GET ${EXPLORER}${route}`, async () => {
      const seen: Record<string, number> = { ok: 0, bad: 0 };
      await check(fc.asyncProperty(anyQuery, async (query) => {
        const path = `${EXPLORER}${route}?${query}`;
        const a = await send(h, 'GET', path);
        const what = `GET ${path}`;
        const body = checkAnswer(a, what);
        for (const secret of GLOBEX_SECRETS) expect(a.text, `${what} leaks ${secret}`).to.not.include(secret);
        if (a.status === 200) {
          seen.ok++;
          if (route === '') {
            expect(a.headers['content-type'], what).to.equal(JSONAPI);
            const page = parseJson(a, what);
            expect(page.data, what).to.be.an('array');
            expect(page.data.length, what).to.be.at.most(100);
            expect(page.meta.pagination['total-count'], what).to.be.a('number');
          } else {
            expect(a.headers['content-type'], what).to.equal(EXPORT_TYPES[route]);
            if (route === '/export/parquet') expect(a.text.startsWith('PAR1'), what).to.equal(true);
            else expect(a.text === '' || a.text.endsWith('\n'), what).to.equal(true);
          }
          return;
        }
        seen.bad++;
        seen[a.status] = (seen[a.status] ?? 0) + 1;
        expect([400, 414, 431], `${what} → ${a.status} ${a.text}`).to.include(a.status);
        if (a.status === 400) {
          const parameter = body.errors[0].source?.parameter;
          expect(parameter, `${what}: a 400 names a parameter: ${a.text}`).to.be.a('string');
          const names = sentNames(query);
          // `page` names page[number] and page[after] sent together.
          expect(parameter === 'type' || parameter === 'filter' || names.has(parameter) || (parameter === 'page' && names.has('page[after]')),
            `${what}: source.parameter ${JSON.stringify(parameter)} was not sent (sent: ${JSON.stringify([...names])})`).to.equal(true);
        }
      }), { seed: SEED + (route === '' ? 42 : route === '/export/csv' ? 4242 : 4242 + route.length), numRuns: route === '' || route === '/export/csv' ? 300 : 100 });
      // The generators must reach both answers, or the property says little.
      if (process.env.FC_STATS) console.log(route, JSON.stringify(seen));
      expect(seen.ok, 'some generated queries are valid').to.be.above(10);
      expect(seen.bad, 'some generated queries are invalid').to.be.above(10);
    });
  }

  for (const method of ['POST', 'PATCH'] as const) {
    it(`(b) random saved-view bodies on ${method}`, async () => {
      const seen: Record<number, number> = {};
      const views = method === 'POST' ? VIEW_NAMES : ['workspaces', 'workspaces', 'workspaces', 'workspaces', 'workspaces', 'modules'];
      await check(fc.asyncProperty(bodyRequest(views), async (r) => {
        const bytes = bodyBytes(r);
        const path = method === 'POST' ? VIEWS_PATH : `${VIEWS_PATH}/${patchTarget}`;
        const headers: Record<string, string> = r.contentType === null ? {} : { 'Content-Type': r.contentType };
        const a = await send(h, method, path, { headers, body: bytes, chunked: r.chunked });
        const what = `${method} ${path} (${r.contentType}, ${r.chunked ? 'chunked' : 'sized'}, ${bytes.length} bytes) ${bytes.toString('utf8').slice(0, 400)}`;
        const body = checkAnswer(a, what, method);
        seen[a.status] = (seen[a.status] ?? 0) + 1;
        const verdict = envelopeVerdict(r.contentType, bytes);
        if ('status' in verdict) {
          expect(a.status, `${what} → ${a.text}`).to.equal(verdict.status);
          if (a.status === 400) expect(body.errors[0].source, what).to.deep.equal({ pointer: '' });
          if (a.status === 415) expect(body.errors[0].source, what).to.deep.equal({ header: 'Content-Type' });
          return;
        }
        const success = method === 'POST' ? 201 : 200;
        expect([success, 422], `${what} → ${a.status} ${a.text}`).to.include(a.status);
        if (a.status === 422) {
          const pointer = body.errors[0].source?.pointer;
          expect(pointer, `${what}: a 422 carries source.pointer: ${a.text}`).to.be.a('string');
          const resolved = resolvesIn(verdict.parsed, pointer, true);
          expect(resolved.ok, `${what}: source.pointer ${JSON.stringify(pointer)} is not in the body (${resolved.why}): ${a.text}`).to.equal(true);
          return;
        }
        // Accepted: the answer shows what was sent, and the stored query re-runs.
        const view = parseJson(a, what).data;
        expect(view.id, what).to.match(/^sq-[0-9A-Za-z]{16}$/);
        expect(view.type, what).to.equal('explorer-saved-queries');
        expect(view.attributes.name, what).to.equal(sentName(verdict.parsed)!.trim());
        expect(VIEW_NAMES, what).to.include(view.attributes['query-type']);
        expect(view.attributes.query.type, what).to.equal(view.attributes['query-type']);
        if (method === 'PATCH') expect(view.id, what).to.equal(patchTarget);
        acmeViewIds.add(view.id);
        const rerun = await send(h, 'GET', `${VIEWS_PATH}/${view.id}/results?page%5Bsize%5D=100`);
        checkAnswer(rerun, `${what} → re-run`);
        expect(rerun.status, `${what} → re-run: ${rerun.text}`).to.equal(200);
      }), { seed: SEED + (method === 'POST' ? 7 : 77), numRuns: 300 });
      if (process.env.FC_STATS) console.log(method, JSON.stringify(seen));
      expect(seen[method === 'POST' ? 201 : 200] ?? 0, `some bodies are accepted: ${JSON.stringify(seen)}`).to.be.above(10);
      expect(seen[422] ?? 0, `some bodies are refused: ${JSON.stringify(seen)}`).to.be.above(10);
    });
  }

  it('(c) random paths under /api/v2/organizations/<x>/explorer/views/<y>', async () => {
    const seen: Record<number, number> = {};
    let serial = 0;
    const viewBody = () => Buffer.from(JSON.stringify({ data: { name: `path target ${++serial}`, query_type: 'workspaces', query: { filter: [] } } }));
    /** A saved view of acme-corp that exists; made again whenever a DELETE took it away. */
    const makeExisting = async () => {
      const made = await send(h, 'POST', VIEWS_PATH, { headers: { 'Content-Type': JSONAPI }, body: viewBody() });
      expect(made.status, made.text).to.equal(201);
      acmeViewIds.add(JSON.parse(made.text).data.id);
      return JSON.parse(made.text).data.id as string;
    };
    let existing = await makeExisting();
    await check(fc.asyncProperty(pathRequest, async (r) => {
      const path = `${r.prefix}${r.org}${r.middle}${r.id === EXISTING ? existing : r.id}${r.tail}`;
      const hasBody = r.body && r.method !== 'GET' && r.method !== 'HEAD';
      const a = await send(h, r.method, path, {
        token: tokenOf(r.token),
        ...(hasBody ? { headers: { 'Content-Type': JSONAPI }, body: viewBody() } : {}),
      });
      const what = `${r.method} ${path} (token ${r.token})`;
      checkAnswer(a, what, r.method);
      seen[a.status] = (seen[a.status] ?? 0) + 1;
      for (const secret of GLOBEX_SECRETS) expect(a.text, `${what} leaks ${secret}`).to.not.include(secret);
      if (a.status < 300) {
        // Only a caller with explorer access to some organization gets anywhere, and never to another's views.
        expect(['org', 'otherOrg', 'readers'], `${what} → ${a.status} ${a.text}`).to.include(r.token);
        if (r.token === 'otherOrg') for (const id of acmeViewIds) expect(a.text, `${what} shows acme-corp's view ${id}`).to.not.include(id);
        if (r.method === 'POST' && a.status === 201) acmeViewIds.add(JSON.parse(a.text).data.id);
        if (r.method === 'DELETE' && JSON.parse(a.text).data.id === existing) existing = await makeExisting();
      } else {
        expect([400, 401, 404, 405, 413, 414, 415, 422], `${what} → ${a.status} ${a.text}`).to.include(a.status);
        if (a.status === 401) expect(['none', 'garbage'], `${what} → 401`).to.include(r.token);
        if (a.status === 405) expect(a.headers.allow, `${what}: 405 carries Allow`).to.be.a('string').that.is.not.empty;
      }
    }), { seed: SEED + 1234, numRuns: 300 });
    if (process.env.FC_STATS) console.log('paths', JSON.stringify(seen));
    expect(seen[404] ?? 0, JSON.stringify(seen)).to.be.above(10);
    expect(Object.entries(seen).filter(([status]) => Number(status) < 300).reduce((n, [, k]) => n + k, 0), JSON.stringify(seen)).to.be.above(10);
  });

  // interface §7: a 422's source.pointer names the member (RFC 6901: `/` in a name is `~1`, `~` is `~0`). The
  // property above finds the first of these; here each place where a client-chosen name becomes a pointer token.
  for (const layout of ['flat', 'jsonapi'] as const) {
    it(`(b) 422 pointers escape "/" and "~" in member names the client chose (${layout} layout)`, async () => {
      const base = layout === 'flat' ? '/data' : '/data/attributes';
      const wrap = (query: Json): Json => (layout === 'flat'
        ? { data: { name: `escape ${layout} ${JSON.stringify(query)}`, query_type: 'workspaces', query } }
        : { data: { type: 'explorer-saved-queries', attributes: { name: `escape ${layout} ${JSON.stringify(query)}`, 'query-type': 'workspaces', query } } });
      const cases: [Json, string][] = [
        [{ filter: [{ 'a/b': { is: ['x'] } }] }, `${base}/query/filter/0/a~1b`],
        [{ filter: [{ 'x~y': { is: ['x'] } }] }, `${base}/query/filter/0/x~0y`],
        [{ filter: [{ workspace_name: { 'is/not': ['x'] } }] }, `${base}/query/filter/0/workspace_name/is~1not`],
        [{ filter: [], fields: { 'a/b': ['workspace_name'] } }, `${base}/query/fields/a~1b`],
        [{ filter: [], fields: { 'x~y': ['workspace_name'] } }, `${base}/query/fields/x~0y`],
        [{ filter: [], fields: { 'tf_versions/../workspaces': ['workspace_name'] } }, `${base}/query/fields/tf_versions~1..~1workspaces`],
      ];
      const wrong: string[] = [];
      for (const [query, pointer] of cases) {
        const doc = wrap(query);
        const a = await send(h, 'POST', VIEWS_PATH, { headers: { 'Content-Type': JSONAPI }, body: Buffer.from(JSON.stringify(doc)) });
        const body = checkAnswer(a, `POST ${JSON.stringify(doc)}`, 'POST');
        expect(a.status, a.text).to.equal(422);
        const got = body.errors[0].source?.pointer;
        expect(resolvesIn(doc, pointer, false).ok, `test bug: ${pointer} is not in ${JSON.stringify(doc)}`).to.equal(true);
        if (got !== pointer) wrong.push(`query ${JSON.stringify(query)}: pointer ${JSON.stringify(got)}, expected ${JSON.stringify(pointer)}`);
      }
      expect(wrong, wrong.join('\n')).to.deep.equal([]);
    });
  }

  // docs/decisions.md "Responses": unknown routes answer a JSON:API 404; a wrong method on a known route answers
  // 405 with Allow. interface §7: bad input never yields a 5xx. Any method a route does not implement is a
  // wrong method, whatever it is (OPTIONS and methods the router has never heard of included).
  const KNOWN_ROUTES = [EXPLORER, `${EXPLORER}/export/csv`, VIEWS_PATH, `${VIEWS_PATH}/sq-AAAAAAAAAAAAAAAA`, `${VIEWS_PATH}/sq-AAAAAAAAAAAAAAAA/results`];
  const methodCases: [string, string[]][] = [
    ['OPTIONS', ['OPTIONS']],
    ['methods the router does not know', ['TRACE', 'PROPFIND', 'SEARCH', 'LINK', 'PURGE', 'QUERY']],
  ];
  for (const [label, methods] of methodCases) {
    it(`answers ${label} on a known route with a JSON:API 405 and Allow (401 without a token), on an unknown route with a 404`, async () => {
      const wrong: string[] = [];
      for (const method of methods) {
        for (const path of KNOWN_ROUTES) {
          for (const token of [h.tokens.org, null]) {
            const a = await send(h, method, path, { token });
            const what = `${method} ${path} (${token ? 'org token' : 'no token'}) → ${a.status} ${a.headers['content-type']} ${JSON.stringify(a.text)}`;
            try {
              expect(token ? [405] : [401, 405], what).to.include(a.status);
              checkAnswer(a, what, method);
              if (a.status === 405) expect(a.headers.allow, what).to.be.a('string').that.is.not.empty;
            } catch {
              wrong.push(what);
            }
          }
        }
        const unknown = await send(h, method, '/api/v2/nothing-here');
        const what = `${method} /api/v2/nothing-here → ${unknown.status} ${unknown.text}`;
        try {
          expect(unknown.status, what).to.equal(404);
          checkAnswer(unknown, what, method);
        } catch {
          wrong.push(what);
        }
      }
      expect(wrong, `${wrong.length} answers differ from docs/decisions.md:\n${wrong.join('\n')}`).to.deep.equal([]);
    });
  }

  it('the service is still healthy afterwards: /readyz 200 and a normal query 200 with every row', async () => {
    const ready = await send(h, 'GET', '/readyz', { token: null });
    expect(ready.status, ready.text).to.equal(200);
    expect(JSON.parse(ready.text).status).to.equal('ready');
    const a = await send(h, 'GET', `${EXPLORER}?type=workspaces&page%5Bsize%5D=100`);
    expect(a.status, a.text).to.equal(200);
    const page = JSON.parse(a.text);
    expect(page.meta.pagination['total-count']).to.equal(5);
    expect(page.data.map((r: any) => r.id).sort()).to.deep.equal(['ws-aaa1', 'ws-aaa2', 'ws-aaa3', 'ws-aaa4', 'ws-aaa5']);
    const csv = await send(h, 'GET', `${EXPLORER}/export/csv?type=workspaces&fields=external_id`);
    expect(csv.status, csv.text).to.equal(200);
    expect(csv.text.startsWith('external_id\n')).to.equal(true);
    expect(csv.text.split('\n').filter(Boolean).slice(1).sort()).to.deep.equal(['"ws-aaa1"', '"ws-aaa2"', '"ws-aaa3"', '"ws-aaa4"', '"ws-aaa5"']);
  });
});
