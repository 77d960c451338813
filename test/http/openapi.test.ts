// The OpenAPI document: served to any valid token, valid OpenAPI 3.1 by a real validator, complete
// (every route of the app's routers, every view, field and operator of the catalog, every status the code
// can answer), and true: real answers of every operation validate against it (ajv, JSON Schema 2020-12),
// its parameter schemas accept and refuse what the server accepts and refuses, and it follows
// EXPLORER_ENGINE and the rate-limit settings of the server that serves it.
import type { Router } from '@koa/router';
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { catalogFor } from '../../src/catalog/catalog.js';
import { ALL_OPERATORS, OPERATOR_ALIASES, OPERATORS_BY_TYPE } from '../../src/catalog/operators.js';
import type { FieldType } from '../../src/catalog/types.js';
import type { Config } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { silentLogger } from '../../src/log.js';
import { OPENAPI_PATH, openApiDocument } from '../../src/openapi/document.js';
import { openApiOptions } from '../../src/openapi/options.js';
import { ORG } from '../fixtures/small-source.js';
import { clientQuery, startHarness, type Harness } from '../helpers/harness.js';
import { answer, Contract, rawGet, type Answer } from '../helpers/openapi-contract.js';
import { waitFor } from '../helpers/wait.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';

const ORG_PATH = '/api/v2/organizations/{organization_name}';
const EXPLORER = `${ORG_PATH}/explorer`;
const EXPORT = `${ORG_PATH}/explorer/export/csv`;
const VIEWS = `${ORG_PATH}/explorer/views`;
const VIEW = `${VIEWS}/{view_id}`;
const JSONAPI = 'application/vnd.api+json';
const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));

/** Fills an OpenAPI path template. */
const fill = (template: string, params: Record<string, string> = {}) =>
  template.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(params[k] ?? (k === 'organization_name' ? ORG : `missing-${k}`)));

/** Every `METHOD /path` the app's routers register (HEAD comes with GET), as OpenAPI templates. */
function appRoutes(config: Config): string[] {
  const app = createApp({ config, logger: silentLogger, snapshots: {} as never, pool: {} as never, store: {} as never, audit: {} as never, isDraining: () => false });
  const out = new Set<string>();
  for (const middleware of app.middleware as unknown as { router?: Router }[]) {
    for (const layer of middleware.router?.stack ?? []) {
      for (const method of layer.methods) if (method !== 'HEAD') out.add(`${method} ${String(layer.path).replace(/:(\w+)/g, '{$1}')}`);
    }
  }
  return [...out].sort();
}

function documentedRoutes(doc: any): string[] {
  return Object.entries(doc.paths as Record<string, Record<string, unknown>>)
    .flatMap(([path, item]) => Object.keys(item).filter((k) => ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'].includes(k)).map((m) => `${m.toUpperCase()} ${path}`))
    .sort();
}

/** `filter[i][field][op][j]=v` pairs as the deepObject value the document describes. */
function filterObject(pairs: [string, string][]): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [key, value] of pairs) {
    const [, i, field, op, j] = /^filter\[([^\]]*)\]\[([^\]]*)\]\[([^\]]*)\]\[([^\]]*)\]$/.exec(key)!;
    ((out[i!] ??= {})[field!] ??= {})[op!] ??= {};
    out[i!][field!][op!][j!] = value;
  }
  return out;
}

/** Statuses the source code can answer: ApiError(NNN…), ctx.status = …, and the server's raw client errors. */
function statusesInCode(): Set<number> {
  const found = new Set<number>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts')) {
        const text = readFileSync(path, 'utf8');
        for (const m of text.matchAll(/ApiError\(\s*(\d{3})|\[(\d{3}), '/g)) found.add(Number(m[1] ?? m[2]));
        for (const line of text.split('\n').filter((l) => /ctx\.status\s*=[^=]/.test(l))) {
          for (const m of line.matchAll(/\b([1-5]\d\d)\b/g)) found.add(Number(m[1]));
        }
      }
    }
  };
  walk(SRC);
  found.delete(499); // a client that went away sees nothing; only the log records 499
  return found;
}

const METRICS_SECRET = 'metrics-secret-7f3a9c';
const VALID_VALUE: Record<FieldType, string> = { string: 'a', number: '1', boolean: 'true', datetime: '2024-01-01' };
const INVALID_VALUE: Record<FieldType, string | null> = { string: null, number: 'one', boolean: 'yes', datetime: 'yesterday' };

describe('OpenAPI document (GET /api/v2/explorer/openapi.json)', function () {
  this.timeout(120_000);
  let h: Harness;
  let served: Answer;
  let doc: any;
  let contract: Contract;

  before(async () => {
    h = await startHarness({ env: { NOTIFY_ALLOW_HOSTS: '127.0.0.1' } });
    served = await answer(await h.request(OPENAPI_PATH));
    expect(served.status, served.text.slice(0, 300)).to.equal(200);
    doc = served.body;
    contract = new Contract(doc);
  });
  after(async () => { await h?.close(); });

  it('is served as application/json to a valid token of any kind, with an ETag that answers 304', async () => {
    expect(served.headers.get('content-type')).to.match(/^application\/json(;|$)/);
    expect(doc.openapi).to.equal('3.1.0');
    contract.check('GET', OPENAPI_PATH, served);
    // A team without explorer access and a user token see it too: the document reveals no data.
    for (const token of [h.tokens.developers, h.tokens.bob, h.tokens.otherOrg, h.tokens.alice]) {
      const a = await answer(await h.request(OPENAPI_PATH, { token }));
      expect(a.status).to.equal(200);
      expect(a.text).to.equal(served.text);
    }
    const etag = served.headers.get('etag')!;
    expect(etag).to.match(/^"[^"]+"$/);
    const again = await answer(await h.request(OPENAPI_PATH, { headers: { 'If-None-Match': etag } }));
    expect(again.status).to.equal(304);
    expect(again.text).to.equal('');
    contract.check('GET', OPENAPI_PATH, again);
    const other = await answer(await h.request(OPENAPI_PATH, { headers: { 'If-None-Match': '"something-else"' } }));
    expect(other.status).to.equal(200);
  });

  it('answers 401 as JSON:API without a token or with an unknown one', async () => {
    for (const [token, detail] of [[null, /valid API token is required/], ['at-AAAAAAAAAAAAAAAA.BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB', /not valid/]] as const) {
      const a = await answer(await h.request(OPENAPI_PATH, { token }));
      expect(a.status).to.equal(401);
      expect(a.headers.get('content-type')).to.match(/^application\/vnd\.api\+json/);
      expect(a.headers.get('www-authenticate')).to.equal('Bearer realm="explorer"');
      expect(a.body.errors[0]).to.include({ status: '401', title: 'unauthorized' });
      expect(a.body.errors[0].detail).to.match(detail);
      expect(a.text).to.not.include('openapi');
      contract.check('GET', OPENAPI_PATH, a);
    }
  });

  it('is a valid OpenAPI 3.1 document for @seriousme/openapi-schema-validator, which refuses broken copies', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors, JSON.stringify(result.errors)?.slice(0, 2000)).to.equal(undefined);
    expect(result.valid).to.equal(true);
    expect(validator.version).to.equal('3.1');

    // The validator is no rubber stamp: info without a title, a parameter in no valid place, a reference to nothing.
    const noTitle = structuredClone(doc);
    delete noTitle.info.title;
    expect((await new Validator().validate(noTitle)).valid).to.equal(false);
    const badParameter = structuredClone(doc);
    badParameter.components.parameters.filter.in = 'body';
    expect((await new Validator().validate(badParameter)).valid).to.equal(false);
    const dangling = structuredClone(doc);
    dangling.components.parameters.type.schema = { $ref: '#/components/schemas/NoSuchSchema' };
    expect((await new Validator().validate(dangling)).valid).to.equal(false);
  });

  it('documents every route the app\'s routers register, and no route they lack', () => {
    const registered = appRoutes(h.config);
    expect(registered.length).to.be.greaterThan(10);
    expect(documentedRoutes(doc)).to.deep.equal(registered);
  });

  it('documents every view, field and operator of the catalog, with field types', () => {
    const catalog = catalogFor(h.config.engine);
    const s = doc.components.schemas;
    expect(s.ViewType.enum).to.deep.equal(catalog.views.map((v) => v.name));
    for (const view of catalog.views) {
      const attributes = s[`Attributes.${view.name}`].properties;
      expect(Object.keys(attributes), view.name).to.deep.equal(view.fields.map((f) => f.attribute));
      for (const f of view.fields) {
        const types = attributes[f.attribute].type;
        expect(types, f.name).to.deep.equal([f.type === 'datetime' ? 'string' : f.type, 'null']);
        if (f.type === 'datetime') expect(attributes[f.attribute].format).to.equal('date-time');
        expect(attributes[f.attribute].description).to.include(f.description);
      }
      expect(s[`Row.${view.name}`].properties.type).to.deep.equal({ const: view.rowType });
      const conditions = s[`FilterCondition.${view.name}`].properties;
      expect(Object.keys(conditions)).to.deep.equal(view.fields.map((f) => f.name));
      for (const f of view.fields) expect(conditions[f.name].$ref).to.equal(`#/components/schemas/FieldFilter.${f.type}`);
      const sort = new RegExp(s[`Sort.${view.name}`].pattern, 'u');
      const fields = new RegExp(s[`Fields.${view.name}`].pattern, 'u');
      for (const f of view.fields) {
        expect(sort.test(f.name) && sort.test(`-${f.name}`) && fields.test(f.name), f.name).to.equal(true);
      }
      expect(sort.test(view.fields.slice(0, 20).map((f) => `-${f.name}`).join(', '))).to.equal(true);
      expect(sort.test(Array.from({ length: 21 }, () => view.fields[0]!.name).join(','))).to.equal(false);
      expect(sort.test('no_such_field') || fields.test('no_such_field') || fields.test(`-${view.fields[0]!.name}`)).to.equal(false);
      expect(doc.paths[EXPLORER].get.parameters.map((p: any) => p.$ref)).to.include(`#/components/parameters/fields.${view.name}`);
      expect(doc.components.parameters[`fields.${view.name}`].name).to.equal(`fields[${view.name}]`);
      // The CSV description names every view's default header row.
      expect(doc.paths[EXPORT].get.responses['200'].description).to.include(view.fields.map((f) => f.name).join(','));
    }
    const operators = new Set<string>();
    for (const [type, ops] of Object.entries(OPERATORS_BY_TYPE)) {
      const keys = Object.keys(s[`FieldFilter.${type}`].properties);
      expect(keys.filter((k) => !(k in OPERATOR_ALIASES)), type).to.deep.equal([...ops]);
      keys.forEach((k) => operators.add(k));
    }
    for (const op of ALL_OPERATORS) expect([...operators]).to.include(op);
    expect(s.SavedQuery.properties.filter.items.properties.operator.enum).to.deep.equal([...ALL_OPERATORS]);
    const queryParameters = doc.paths[EXPLORER].get.parameters.map((p: any) => contract.resolve(p.$ref).node.name);
    expect(queryParameters).to.include.members(['organization_name', 'type', 'filter', 'sort', 'fields', 'page[number]', 'page[size]']);
    // The export takes the query's parameters but paging, which it ignores (interface §5), and says so.
    const exportParameters = doc.paths[EXPORT].get.parameters.map((p: any) => contract.resolve(p.$ref).node.name);
    expect(exportParameters).to.deep.equal(queryParameters.filter((p: string) => !p.startsWith('page[')));
    expect(doc.paths[EXPORT].get.description).to.match(/page\[after\]` are ignored, whatever their value/);
  });

  it('documents every status the code can answer, and the errors of each route', () => {
    const documented = new Set<number>();
    for (const item of Object.values(doc.paths as Record<string, Record<string, any>>)) {
      for (const op of Object.values(item)) if (op?.responses) Object.keys(op.responses).forEach((s) => documented.add(Number(s)));
    }
    for (const r of Object.values(doc.components.responses as Record<string, any>)) documented.add(Number(/^(\d{3}):/.exec(r.description)![1]));
    const inCode = statusesInCode();
    expect(inCode.size).to.be.greaterThan(10);
    expect([...inCode].filter((s) => !documented.has(s)), 'answered by the code but not documented').to.deep.equal([]);
    for (const s of [304, 400, 401, 404, 405, 413, 414, 415, 422, 429, 431, 503, 504]) expect([...documented]).to.include(s);

    const statuses = (path: string, method = 'get') => Object.keys(doc.paths[path][method].responses).map(Number);
    for (const [path, method] of [[EXPLORER, 'get'], [EXPORT, 'get'], [VIEWS, 'get'], [VIEWS, 'post'], [VIEW, 'get'], [VIEW, 'patch'], [VIEW, 'delete'], [`${VIEW}/results`, 'get'], [`${VIEW}/csv`, 'get']] as const) {
      expect(statuses(path, method), `${method} ${path}`).to.include.members([401, 404, 414, 429, 431, 503]);
      expect(doc.paths[path][method].security, `${method} ${path}`).to.equal(undefined); // the global bearer requirement
    }
    for (const path of [EXPLORER, EXPORT, `${VIEW}/results`, `${VIEW}/csv`, `${VIEW}/export/csv`]) expect(statuses(path), path).to.include.members([200, 304, 400, 504]);
    for (const method of ['post', 'patch']) expect(statuses(method === 'post' ? VIEWS : VIEW, method)).to.include.members([400, 413, 415, 422]);
    expect(doc.paths[`${VIEW}/results`].get.responses['422']).to.exist;
    expect(doc.components.responses.TooManyRequests.headers).to.include.keys('Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset');
    expect(doc.components.responses.ServiceUnavailable.headers).to.include.keys('Retry-After');
    expect(doc.components.securitySchemes.bearer).to.include({ type: 'http', scheme: 'bearer' });
    expect(doc.security).to.deep.equal([{ bearer: [] }]);
    for (const path of ['/api/v2/ping', '/healthz', '/readyz', '/explorer', '/explorer/{asset}', '/metrics']) expect(doc.paths[path].get.security, path).to.deep.equal([]);
    expect(Object.keys(doc.paths['/metrics'].get.responses)).to.not.include('200'); // off in this configuration
    expect(doc.paths[OPENAPI_PATH].get.security).to.equal(undefined);
    expect(statuses(OPENAPI_PATH)).to.include(401);
  });

  it('answers every documented operation as documented (status, content type, body schema, headers)', async () => {
    const exercised = new Set<string>();
    const call = async (method: string, template: string, opts: { params?: Record<string, string>; query?: string; token?: string | null; body?: unknown; contentType?: string; headers?: Record<string, string> } = {}) => {
      const headers: Record<string, string> = { ...opts.headers };
      let body: string | undefined;
      if (opts.body !== undefined) {
        headers['Content-Type'] = opts.contentType ?? JSONAPI;
        body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      }
      const a = await answer(await h.request(fill(template, opts.params) + (opts.query ?? ''), { method, headers, body, token: opts.token }));
      contract.check(method, template, a);
      exercised.add(`${method} ${template}`);
      // Conditional GETs: the ETag of a 200 answers 304 to If-None-Match (sent as curl would, see rawGet).
      if (a.status === 200 && a.headers.get('etag')) {
        const token = opts.token === undefined ? h.tokens.org : opts.token;
        const again = await rawGet(`${h.url}${fill(template, opts.params)}${opts.query ?? ''}`, {
          'If-None-Match': a.headers.get('etag')!, ...(token ? { Authorization: `Bearer ${token}` } : {}),
        });
        expect(again.status, `${template}: If-None-Match`).to.equal(304);
        contract.check(method, template, again);
      }
      return a;
    };

    expect((await call('GET', '/api/v2/ping', { token: null })).status).to.equal(204);
    expect((await call('GET', '/healthz', { token: null })).status).to.equal(200);
    expect((await call('GET', '/readyz', { token: null })).status).to.equal(200);
    expect((await call('GET', OPENAPI_PATH)).status).to.equal(200);
    expect((await call('GET', '/metrics', { token: null })).status).to.equal(404); // off unless configured
    const page = await call('GET', '/explorer', { token: null });
    expect(page.status).to.be.oneOf([200, 404]); // 404 until the page is built
    await call('GET', '/explorer/{asset}', { params: { asset: 'catalog.json' }, token: null });
    expect((await call('GET', '/explorer/{asset}', { params: { asset: 'no-such-file.js' }, token: null })).status).to.equal(404);

    const catalog = catalogFor(h.config.engine);
    for (const view of catalog.views) {
      const all = await call('GET', EXPLORER, { query: clientQuery({ type: view.name, 'page[size]': '2' }) });
      expect(all.status, all.text.slice(0, 300)).to.equal(200);
      expect(all.body.data.length, view.name).to.be.greaterThan(0);
      // The same page validates against the view's own schema, and not against another view's.
      contract.expectValid(contract.schemaPointer(`Page.${view.name}`), all.body);
      const other = catalog.views.find((v) => v.name !== view.name)!;
      expect(contract.errors(contract.schemaPointer(`Page.${other.name}`), all.body)).to.not.deep.equal([]);
      const some = await call('GET', EXPLORER, { query: clientQuery({ type: view.name, [`fields[${view.name}]`]: view.fields.slice(0, 2).map((f) => f.name).join(','), sort: `-${view.fields[0]!.name}` }) });
      expect(Object.keys(some.body.data[0].attributes)).to.deep.equal(view.fields.slice(0, 2).map((f) => f.attribute));
      const csv = await call('GET', EXPORT, { query: clientQuery({ type: view.name }) });
      expect(csv.status).to.equal(200);
      expect(csv.text.split('\n')[0]).to.equal(view.fields.map((f) => f.name).join(','));
      expect((await call('GET', EXPORT.replace(/csv$/, 'parquet'), { query: clientQuery({ type: view.name }) })).status).to.equal(200);
      const ndjson = await call('GET', EXPORT.replace(/csv$/, 'ndjson'), { query: clientQuery({ type: view.name }) });
      expect(Object.keys(JSON.parse(ndjson.text.split('\n')[0]!))).to.deep.equal(view.fields.map((f) => f.name));
      // Cursor pages validate against the same page schema, from the start and after a cursor.
      const start = await call('GET', EXPLORER, { query: clientQuery({ type: view.name, 'page[after]': '', 'page[size]': '1' }) });
      contract.expectValid(contract.schemaPointer(`Page.${view.name}`), start.body);
      const next = await call('GET', EXPLORER, { query: new URL(start.body.links.next).search });
      expect(next.status, next.text.slice(0, 300)).to.equal(200);
      expect(next.body.data[0].id).to.equal(all.body.data[1].id);
    }
    const both = await call('GET', EXPLORER, { query: '?type=workspaces&page%5Bafter%5D=&page%5Bnumber%5D=1' });
    expect(both.status).to.equal(400);
    expect(both.body.errors[0].source).to.deep.equal({ parameter: 'page' });
    const bad = await call('GET', EXPLORER, { query: clientQuery({ type: 'workspaces', 'filter[0][no_such_field][is][0]': 'x' }) });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors[0].source).to.deep.equal({ parameter: 'filter[0][no_such_field][is][0]' });
    expect((await call('GET', EXPLORER, { query: '?type=workspaces', token: null })).status).to.equal(401);
    expect((await call('GET', EXPLORER, { query: '?type=workspaces', params: { organization_name: 'no-such-org' } })).status).to.equal(404);
    expect((await call('GET', EXPLORER, { query: '?type=workspaces', token: h.tokens.developers })).status).to.equal(404);
    expect((await call('GET', EXPLORER, { query: `?type=workspaces&x=${'a'.repeat(9000)}` })).status).to.equal(414);
    expect((await call('GET', EXPORT, { query: '?type=nope' })).status).to.equal(400);
    // interface §5: the CSV routes ignore paging parameters, even invalid ones.
    expect((await call('GET', EXPORT, { query: '?type=workspaces&page%5Bsize%5D=0&page%5Bnumber%5D=x' })).status).to.equal(200);

    // Saved views: every operation, successes and the body errors.
    const body = { data: { name: 'openapi aws', query_type: 'providers', query: { filter: [{ field: 'name', operator: 'is', value: ['aws'] }], sort: ['-version'] } } };
    // The request bodies sent here match the documented body schema; a body without data does not.
    const bodySchema = contract.resolve(`#/paths/${VIEWS.replace(/\//g, '~1')}/post/requestBody/content/application~1vnd.api+json/schema`).pointer;
    contract.expectValid(bodySchema, body);
    expect(contract.errors(bodySchema, { name: 'x' })).to.not.deep.equal([]);
    expect(contract.errors(bodySchema, { data: { type: 'explorer-saved-queries', attributes: { query: { filter: 'x' } } } })).to.not.deep.equal([]);
    const created = await call('POST', VIEWS, { body });
    expect(created.status, created.text).to.equal(201);
    const id: string = created.body.data.id;
    const jsonApiBody = { data: { type: 'explorer-saved-queries', attributes: { name: 'openapi modules', 'query-type': 'modules', query: { filter: [{ name: { contains: ['a'] } }], fields: { modules: ['name', 'version'] } } } } };
    contract.expectValid(bodySchema, jsonApiBody);
    const jsonApiLayout = await call('POST', VIEWS, { contentType: 'application/json', body: jsonApiBody });
    expect(jsonApiLayout.status, jsonApiLayout.text).to.equal(201);
    const invalid = await call('POST', VIEWS, { body: { data: { name: 'x', query_type: 'providers', query: { filter: [{ field: 'nope', operator: 'is', value: ['a'] }] } } } });
    expect(invalid.status).to.equal(422);
    expect(invalid.body.errors[0].source.pointer).to.equal('/data/query/filter/0/field');
    expect((await call('POST', VIEWS, { body: body, token: null })).status).to.equal(401);
    expect((await call('POST', VIEWS, { body: 'name=x', contentType: 'text/plain' })).status).to.equal(415);
    expect((await call('POST', VIEWS, { body: '{"data": ' })).status).to.equal(400);
    expect((await call('POST', VIEWS, { body: JSON.stringify({ data: { name: 'x'.repeat(70_000) } }) })).status).to.equal(413);
    const list = await call('GET', VIEWS, { query: '?page%5Bsize%5D=1' });
    expect(list.status).to.equal(200);
    expect(list.body.meta.pagination['total-count']).to.equal(2);
    expect((await call('GET', VIEWS, { query: '?page%5Bsize%5D=0' })).status).to.equal(400);
    expect((await call('GET', VIEW, { params: { view_id: id } })).status).to.equal(200);
    expect((await call('GET', VIEW, { params: { view_id: 'sq-0000000000000000' } })).status).to.equal(404);
    const update = { data: { name: 'openapi aws 2', query: { filter: [{ name: { is: ['aws'] } }], fields: ['version', 'workspace_count'] } } };
    expect((await call('PATCH', VIEW, { params: { view_id: id }, body: update })).status).to.equal(200);
    expect((await call('PATCH', VIEW, { params: { view_id: id }, body: { data: { name: 'y' } } })).status).to.equal(422);
    const results = await call('GET', `${VIEW}/results`, { params: { view_id: id }, query: '?page%5Bsize%5D=5' });
    expect(results.status).to.equal(200);
    contract.expectValid(contract.schemaPointer('Page.providers'), results.body);
    expect((await call('GET', `${VIEW}/results`, { params: { view_id: id }, query: '?page%5Bnumber%5D=0' })).status).to.equal(400);
    expect((await call('GET', `${VIEW}/csv`, { params: { view_id: id } })).status).to.equal(200);
    expect((await call('GET', `${VIEW}/export/csv`, { params: { view_id: id } })).status).to.equal(200);
    expect((await call('GET', `${VIEW}/export/parquet`, { params: { view_id: id } })).status).to.equal(200);
    expect((await call('GET', `${VIEW}/export/ndjson`, { params: { view_id: id } })).status).to.equal(200);
    const walked = await call('GET', `${VIEW}/results`, { params: { view_id: id }, query: '?page%5Bafter%5D=' });
    contract.expectValid(contract.schemaPointer('Page.providers'), walked.body);

    // History: one snapshot only, so changes have nothing to compare (a 400 naming `from`); then a second one.
    const lonely = await call('GET', `${EXPLORER}/changes`, { query: '?type=workspaces' });
    expect(lonely.status).to.equal(400);
    expect(lonely.body.errors[0].source).to.deep.equal({ parameter: 'from' });
    const second = await loadSnapshot(join(h.dataDir, 'source'), { dataDir: h.dataDir, label: 'openapi' });
    await waitFor(async () => (await h.explorer('?type=workspaces')).headers.get('x-explorer-snapshot') === second.manifest.id, 5000, 'second snapshot');
    const snapshots = await call('GET', `${EXPLORER}/snapshots`);
    expect(snapshots.body.data.map((s: any) => s.attributes.label)).to.deep.equal(['openapi', null]);
    const first = snapshots.body.data[1].id;
    expect((await call('GET', `${EXPLORER}/snapshots`, { query: '?page%5Bnumber%5D=0' })).status).to.equal(400);
    expect((await call('GET', EXPLORER, { query: `?type=providers&snapshot=${first}` })).status).to.equal(200);
    expect((await call('GET', EXPLORER, { query: '?type=providers&snapshot=nope' })).status).to.equal(400);
    expect((await call('GET', EXPORT, { query: `?type=modules&as_of=2999-01-01` })).status).to.equal(200);
    for (const view of catalog.views) {
      const changes = await call('GET', `${EXPLORER}/changes`, { query: `?type=${view.name}&from=${first}` });
      expect(changes.status, changes.text.slice(0, 300)).to.equal(200);
      expect(changes.body.meta.counts).to.deep.equal({ added: 0, removed: 0, changed: 0 }); // the same source twice
      const csv = await call('GET', `${EXPLORER}/changes/export/csv`, { query: `?type=${view.name}&fields=${view.fields[0]!.name}` });
      expect(csv.text).to.equal(`change,changed_fields,${view.fields[0]!.name},previous_${view.fields[0]!.name}\n`);
      expect((await call('GET', `${EXPLORER}/changes/export/parquet`, { query: `?type=${view.name}` })).status).to.equal(200);
      expect((await call('GET', `${EXPLORER}/changes/export/ndjson`, { query: `?type=${view.name}` })).status).to.equal(200);
      expect((await call('GET', `${EXPLORER}/changes`, { query: `?type=${view.name}&from=${first}&page%5Bafter%5D=` })).status).to.equal(200);
      const sum = view.fields.find((f) => f.type === 'number');
      const trend = await call('GET', `${EXPLORER}/trend`, { query: `?type=${view.name}${sum ? `&sum=${sum.name}` : ''}` });
      expect(trend.body.data.length, view.name).to.equal(2);
    }
    expect((await call('GET', `${EXPLORER}/trend`, { query: '?type=workspaces&sum=workspace_name' })).status).to.equal(400);
    expect((await call('GET', `${VIEW}/results`, { params: { view_id: id }, query: `?as_of=2999-01-01` })).status).to.equal(200);
    expect((await call('GET', `${VIEW}/trend`, { params: { view_id: id } })).status).to.equal(200);
    expect((await call('GET', `${VIEW}/changes`, { params: { view_id: id } })).status).to.equal(200);
    expect((await call('GET', `${VIEW}/changes/export/csv`, { params: { view_id: id } })).status).to.equal(200);
    expect((await call('GET', `${VIEW}/changes/export/parquet`, { params: { view_id: id } })).status).to.equal(200);
    expect((await call('GET', `${VIEW}/changes/export/ndjson`, { params: { view_id: id } })).status).to.equal(200);
    expect((await call('GET', `${VIEW}/changes`, { params: { view_id: id }, query: `?from=${second.manifest.id}` })).status).to.equal(400);

    // Summaries: every view, a page valid against SummaryPage, the CSV, the saved-view variants, and an error.
    for (const view of catalog.views) {
      const sum = view.fields.find((f) => f.type === 'number');
      const summary = await call('GET', `${EXPLORER}/summary`, { query: `?type=${view.name}&group_by=${view.fields[0]!.name}${sum ? `&sum=${sum.name}` : ''}` });
      expect(summary.status, summary.text.slice(0, 300)).to.equal(200);
      contract.expectValid(contract.schemaPointer('SummaryPage'), summary.body);
      for (const format of ['csv', 'parquet', 'ndjson']) {
        expect((await call('GET', `${EXPLORER}/summary/export/${format}`, { query: `?type=${view.name}&group_by=${view.fields[0]!.name}` })).status).to.equal(200);
      }
      const walked = await call('GET', `${EXPLORER}/summary`, { query: `?type=${view.name}&group_by=${view.fields[0]!.name}&page%5Bafter%5D=` });
      contract.expectValid(contract.schemaPointer('SummaryPage'), walked.body);
    }
    expect((await call('GET', `${EXPLORER}/summary`, { query: '?type=workspaces' })).status).to.equal(400);
    expect((await call('GET', `${VIEW}/summary`, { params: { view_id: id }, query: '?group_by=name' })).status).to.equal(200);
    for (const format of ['csv', 'parquet', 'ndjson']) {
      expect((await call('GET', `${VIEW}/summary/export/${format}`, { params: { view_id: id }, query: '?group_by=name' })).status).to.equal(200);
    }

    // Across organizations: a user token reaching one organization (alice), the query, its exports, the summary, and errors.
    const ACROSS = '/api/v2/explorer';
    for (const view of catalog.views) {
      const page = await call('GET', ACROSS, { query: clientQuery({ type: view.name, 'page[size]': '2' }), token: h.tokens.alice });
      expect(page.status, page.text.slice(0, 300)).to.equal(200);
      expect(page.body.data.length, view.name).to.be.greaterThan(0);
      expect(Object.keys(page.body.data[0].attributes)[0]).to.equal('organization-name');
      contract.expectValid(contract.schemaPointer(`Page.across.${view.name}`), page.body);
      const walked = await call('GET', ACROSS, { query: clientQuery({ type: view.name, 'page[after]': '', 'page[size]': '1' }), token: h.tokens.alice });
      contract.expectValid(contract.schemaPointer(`Page.across.${view.name}`), walked.body);
      for (const format of ['csv', 'parquet', 'ndjson']) {
        expect((await call('GET', `${ACROSS}/export/${format}`, { query: clientQuery({ type: view.name }), token: h.tokens.alice })).status).to.equal(200);
      }
      const summary = await call('GET', `${ACROSS}/summary`, { query: clientQuery({ type: view.name, group_by: 'organization_name' }), token: h.tokens.alice });
      contract.expectValid(contract.schemaPointer('SummaryPage'), summary.body);
      for (const format of ['csv', 'parquet', 'ndjson']) {
        expect((await call('GET', `${ACROSS}/summary/export/${format}`, { query: clientQuery({ type: view.name, group_by: 'organization_name' }), token: h.tokens.alice })).status).to.equal(200);
      }
    }
    expect((await call('GET', ACROSS, { query: '?type=workspaces', token: null })).status).to.equal(401);
    expect((await call('GET', ACROSS, { query: '?type=nope' })).status).to.equal(400);
    expect((await call('GET', `${ACROSS}/summary`, { query: '?type=workspaces&group_by=nope' })).status).to.equal(400);

    // Notification configurations: create, list, show, update, delete, and a refused url.
    const NCS = `${VIEW}/notification-configurations`;
    const ncBody = { data: { type: 'notification-configurations', attributes: {
      name: 'growth', 'destination-type': 'generic', url: 'https://93.184.216.34/hook', token: 'secret',
      triggers: ['explorer:rows-added', 'explorer:threshold'], threshold: { measure: 'count', above: 100 } } } };
    const nc = await call('POST', NCS, { params: { view_id: id }, body: ncBody });
    expect(nc.status, nc.text).to.equal(201);
    expect(nc.body.data.attributes.token).to.equal(null);
    const ncId = nc.body.data.id as string;
    expect((await call('GET', NCS, { params: { view_id: id } })).body.data.map((c: any) => c.id)).to.deep.equal([ncId]);
    expect((await call('GET', `${NCS}/{nc_id}`, { params: { view_id: id, nc_id: ncId } })).status).to.equal(200);
    const patched = await call('PATCH', `${NCS}/{nc_id}`, { params: { view_id: id, nc_id: ncId }, body: { data: { type: 'notification-configurations', attributes: { enabled: false } } } });
    expect(patched.body.data.attributes.enabled).to.equal(false);
    const refused = await call('POST', NCS, { params: { view_id: id }, body: { data: { ...ncBody.data, attributes: { ...ncBody.data.attributes, url: 'https://10.0.0.1/' } } } });
    expect(refused.status).to.equal(422);
    expect(refused.body.errors[0].source).to.deep.equal({ pointer: '/data/attributes/url' });
    expect((await call('GET', `${NCS}/{nc_id}`, { params: { view_id: id, nc_id: 'nc-0000000000000000' } })).status).to.equal(404);
    // A verification to a loopback port nothing listens on (allow-listed): the refusal is its answer.
    const loopback = await call('PATCH', `${NCS}/{nc_id}`, { params: { view_id: id, nc_id: ncId }, body: { data: { type: 'notification-configurations', attributes: { url: 'http://127.0.0.1:9/hook' } } } });
    expect(loopback.status, loopback.text).to.equal(200);
    const verified = await call('POST', `${NCS}/{nc_id}/actions/verify`, { params: { view_id: id, nc_id: ncId } });
    expect(verified.status, verified.text).to.equal(200);
    expect(verified.body.data).to.include({ code: null, successful: false, attempt: 1 });
    expect((await call('GET', `${NCS}/{nc_id}`, { params: { view_id: id, nc_id: ncId } })).body.data.attributes['delivery-responses']).to.have.length(1);
    expect((await call('DELETE', `${NCS}/{nc_id}`, { params: { view_id: id, nc_id: ncId } })).status).to.equal(200);

    expect((await call('DELETE', VIEW, { params: { view_id: id } })).status).to.equal(200);
    expect((await call('DELETE', VIEW, { params: { view_id: id } })).status).to.equal(404);

    expect([...exercised].sort()).to.deep.equal(documentedRoutes(doc));

    // Answers outside any operation: a wrong method (405 with the Allow the path item names) and an unknown path.
    const wrong = await answer(await h.request(fill(EXPLORER), { method: 'POST' }));
    expect(wrong.status).to.equal(405);
    contract.check('POST', EXPLORER, wrong, 'MethodNotAllowed');
    const allowed = /Allow: ([A-Z, ]+)\)/.exec(doc.paths[EXPLORER].description)![1]!.split(', ').sort();
    expect(wrong.headers.get('allow')!.split(/,\s*/).sort()).to.deep.equal(allowed);
    const nowhere = await answer(await h.request('/api/v2/no/such/route'));
    expect(nowhere.status).to.equal(404);
    contract.check('GET', '/api/v2/no/such/route', nowhere, 'NotFound');
  });

  it('has parameter schemas that accept and refuse what the server accepts and refuses', async () => {
    const catalog = catalogFor(h.config.engine);
    const filterSchema = (view: string) => contract.schemaPointer(`Filter.${view}`);
    const parameter = (name: string) => contract.parameterSchema('GET', EXPLORER, name);
    const agree = async (params: Record<string, string>, expected: 200 | 400, schemaErrors: string[], what: string) => {
      const a = await answer(await h.explorer(clientQuery({ 'page[size]': '1', ...params })));
      contract.check('GET', EXPLORER, a);
      expect(a.status, `${what}: ${a.text.slice(0, 200)}`).to.equal(expected);
      expect(schemaErrors.length === 0, `${what}: schema ${expected === 200 ? 'refuses' : 'accepts'} it (${schemaErrors.join('; ')})`).to.equal(expected === 200);
    };
    for (const view of catalog.views) {
      for (const f of view.fields) {
        const cases: [string, string, 200 | 400][] = [[OPERATORS_BY_TYPE[f.type][0]!, VALID_VALUE[f.type], 200]];
        cases.push([ALL_OPERATORS.find((op) => !OPERATORS_BY_TYPE[f.type].includes(op))!, VALID_VALUE[f.type], 400]);
        if (INVALID_VALUE[f.type] !== null) cases.push([OPERATORS_BY_TYPE[f.type][0]!, INVALID_VALUE[f.type]!, 400]);
        for (const [op, value, expected] of cases) {
          const key = `filter[0][${f.name}][${op}][0]`;
          const value2 = filterObject([[key, value]]);
          await agree({ type: view.name, [key]: value }, expected, contract.errors(filterSchema(view.name), value2), `${view.name} ${key}=${value}`);
        }
      }
      // A field of another view passes the union schema only when the other view has it too, but never the view's own.
      const foreign = catalog.views.flatMap((v) => v.fields).find((f) => !view.field(f.name))!;
      const foreignFilter = filterObject([[`filter[0][${foreign.name}][is_empty][0]`, '']]);
      await agree({ type: view.name, [`filter[0][${foreign.name}][is_empty][0]`]: '' }, 400, contract.errors(filterSchema(view.name), foreignFilter), `${view.name} foreign field`);

      const names = view.fields.map((f) => f.name);
      const twenty = names.slice(0, 20).map((n) => ` -${n} `).join(',');
      await agree({ type: view.name, sort: twenty }, 200, contract.errors(contract.schemaPointer(`Sort.${view.name}`), twenty), 'up to 20 sort keys');
      const tooMany = Array.from({ length: 21 }, (_, i) => names[i % names.length]).join(',');
      await agree({ type: view.name, sort: tooMany }, 400, contract.errors(contract.schemaPointer(`Sort.${view.name}`), tooMany), '21 sort keys');
      await agree({ type: view.name, sort: 'no_such_field' }, 400, contract.errors(contract.schemaPointer(`Sort.${view.name}`), 'no_such_field'), 'unknown sort key');
      await agree({ type: view.name, fields: names.join(', ') }, 200, contract.errors(contract.schemaPointer(`Fields.${view.name}`), names.join(', ')), 'every field');
      const hundredOne = Array.from({ length: 101 }, (_, i) => names[i % names.length]).join(',');
      await agree({ type: view.name, fields: hundredOne }, 400, contract.errors(contract.schemaPointer(`Fields.${view.name}`), hundredOne), '101 fields');
    }
    await agree({ type: 'nope' }, 400, contract.errors(parameter('type'), 'nope'), 'unknown view');
    await agree({ type: 'workspaces', 'page[size]': '0' }, 400, contract.errors(parameter('page[size]'), '0'), 'page[size]=0');
    await agree({ type: 'workspaces', 'page[number]': 'x' }, 400, contract.errors(parameter('page[number]'), 'x'), 'page[number]=x');
    await agree({ type: 'workspaces', 'page[number]': '007' }, 200, contract.errors(parameter('page[number]'), '007'), 'page[number]=007');
    // The filter parameter of the route is the union of the views' filters.
    expect(contract.errors(parameter('filter'), filterObject([['filter[0][workspace_name][contains][0]', 'a']]))).to.deep.equal([]);
    expect(contract.errors(parameter('filter'), filterObject([['filter[0][no_such_field][is][0]', 'a']]))).to.not.deep.equal([]);
  });

  describe(`with EXPLORER_ENGINE=opentofu, a rate limit of 2 requests a minute and METRICS_TOKEN`, () => {
    let h2: Harness;
    let doc2: any;
    let contract2: Contract;
    before(async () => {
      h2 = await startHarness({ env: { EXPLORER_ENGINE: 'opentofu', RATE_LIMIT_MAX: '2', RATE_LIMIT_WINDOW_MS: '60000', METRICS_TOKEN: METRICS_SECRET } });
      doc2 = await (await h2.request(OPENAPI_PATH)).json();
      contract2 = new Contract(doc2);
    });
    after(async () => { await h2?.close(); });

    it('names the engine fields after the configured engine, from the catalog the server uses', async () => {
      expect(doc2).to.not.deep.equal(doc);
      expect(doc2.info['x-explorer-engine']).to.equal('opentofu');
      expect(doc.info['x-explorer-engine']).to.equal('terraform');
      const attributes = Object.keys(doc2.components.schemas['Attributes.workspaces'].properties);
      expect(attributes).to.include.members(['workspace-opentofu-version', 'state-version-opentofu-version']);
      expect(attributes.filter((a) => a.includes('terraform'))).to.deep.equal([]);
      expect(Object.keys(doc2.components.schemas['FilterCondition.workspaces'].properties)).to.include('workspace_opentofu_version');
      expect(JSON.stringify(doc2.components.schemas)).to.not.include('terraform_version');
      expect(doc2).to.deep.equal(openApiDocument(openApiOptions(h2.config)));
      expect((await new Validator().validate(structuredClone(doc2))).valid).to.equal(true);

      // A real page of this server matches its document, and not the default engine's.
      const a = await answer(await h2.explorer('?type=workspaces&page%5Bsize%5D=3'));
      expect(a.status).to.equal(200);
      contract2.check('GET', EXPLORER, a);
      expect(contract.errors(contract.schemaPointer('Page.workspaces'), a.body)).to.not.deep.equal([]);
    });

    it('documents /metrics behind its own token, without revealing the token', async () => {
      expect(doc2.paths['/metrics'].get.security).to.deep.equal([{ metricsToken: [] }]);
      expect(doc2.components.securitySchemes.metricsToken).to.include({ type: 'http', scheme: 'bearer' });
      expect(JSON.stringify(doc2)).to.not.include(METRICS_SECRET);
      const scrape = await answer(await h2.request('/metrics', { token: METRICS_SECRET }));
      expect(scrape.status).to.equal(200);
      expect(scrape.text).to.match(/^# HELP /m);
      contract2.check('GET', '/metrics', scrape);
      for (const token of [null, h2.tokens.org]) {
        const refused = await answer(await h2.request('/metrics', { token }));
        expect(refused.status).to.equal(401);
        contract2.check('GET', '/metrics', refused);
      }
    });

    it('documents the 429 it answers, with Retry-After and the configured limit', async () => {
      expect(doc2.components.responses.TooManyRequests.description).to.include('more than 2 requests per 60 s');
      let last: Answer | undefined;
      for (let i = 0; i < 3; i++) {
        last = await answer(await h2.explorer('?type=tf_versions'));
        contract2.check('GET', EXPLORER, last);
      }
      expect(last!.status).to.equal(429);
      expect(Number(last!.headers.get('retry-after'))).to.be.greaterThan(0);
      expect(last!.headers.get('x-ratelimit-remaining')).to.equal('0');
      // The document itself is not rate limited.
      expect((await h2.request(OPENAPI_PATH)).status).to.equal(200);
    });
  });
});
