// Checks real HTTP answers against an OpenAPI 3.1 document: the status is documented for the operation,
// the content type is one of the documented media types, JSON bodies validate (ajv, JSON Schema 2020-12)
// against the documented schema, required headers are present, present headers validate, and the
// service's own headers are documented where they appear.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { expect } from 'chai';
import { get } from 'node:http';

export interface Answer { status: number; headers: Headers; text: string; body: any }

/** Reads a fetch Response whole, parsing JSON when it is JSON. */
export async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: any;
  try { body = text === '' ? undefined : JSON.parse(text); } catch { body = undefined; }
  return { status: res.status, headers: res.headers, text, body };
}

/**
 * A GET over node:http with exactly the given headers. fetch() adds `Cache-Control: no-cache` to every
 * request with If-None-Match, which some servers (Koa's ctx.fresh) take as a reason never to answer 304.
 */
export function rawGet(url: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
        const text = Buffer.concat(chunks).toString('utf8');
        let body: any;
        try { body = text === '' ? undefined : JSON.parse(text); } catch { body = undefined; }
        resolve({ status: res.statusCode!, headers: h, text, body });
      });
      res.on('error', reject);
    }).on('error', reject);
  });
}

const DOC_ID = 'https://explorer.test/openapi.json';
const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const unescape = (s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~');
const JSON_TYPES = new Set(['application/json', 'application/vnd.api+json']);
/** Headers the service sets itself: wherever one appears, the document must name it. */
const OWN_HEADERS = ['x-request-id', 'x-explorer-snapshot', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset',
  'retry-after', 'etag', 'www-authenticate', 'allow', 'content-disposition'];

export class Contract {
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(readonly doc: any) {
    // strict: an unknown keyword or format in the document's schemas is an error, not silently ignored.
    this.ajv = new Ajv2020({ strict: true, strictTypes: false, strictRequired: false, allErrors: true });
    this.ajv.addFormat('date-time', (s: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(s) && !Number.isNaN(Date.parse(s)));
    this.ajv.addFormat('uri', (s: string) => URL.canParse(s));
    // The document's top-level members are no JSON Schema keywords: known, they make it a valid root schema
    // whose parts `$ref`s can point into (compiled one by one, in strict mode).
    this.ajv.addVocabulary(['openapi', 'info', 'jsonSchemaDialect', 'servers', 'tags', 'security', 'paths', 'webhooks', 'components', 'externalDocs']);
    this.ajv.addSchema(structuredClone(doc), DOC_ID);
  }

  /** The node at a `#/…` pointer of the document. */
  at(pointer: string): any {
    let node = this.doc;
    for (const part of pointer.replace(/^#\/?/, '').split('/').filter((p) => p !== '')) node = node?.[unescape(part)];
    return node;
  }

  /** Follows `$ref`s from `pointer`; returns the final pointer and node. */
  resolve(pointer: string): { pointer: string; node: any } {
    let node = this.at(pointer);
    while (node && typeof node.$ref === 'string') {
      pointer = node.$ref;
      node = this.at(pointer);
    }
    return { pointer, node };
  }

  /** Validation errors of `value` against the schema at `pointer` ([] when valid). */
  errors(pointer: string, value: unknown): string[] {
    let validate = this.compiled.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOC_ID}${pointer}` });
      this.compiled.set(pointer, validate);
    }
    return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message} ${JSON.stringify(e.params)}`);
  }

  expectValid(pointer: string, value: unknown, what = pointer): void {
    const errors = this.errors(pointer, value);
    expect(errors, `${what}: ${JSON.stringify(value).slice(0, 400)}`).to.deep.equal([]);
  }

  schemaPointer(name: string): string {
    return `#/components/schemas/${escape(name)}`;
  }

  /** Pointer to the schema of a documented parameter of an operation, by its `name`. */
  parameterSchema(method: string, path: string, name: string): string {
    const base = `#/paths/${escape(path)}/${method.toLowerCase()}/parameters`;
    const list = this.at(base) as unknown[];
    expect(list, `parameters of ${method} ${path}`).to.be.an('array');
    for (let i = 0; i < list.length; i++) {
      const { pointer, node } = this.resolve(`${base}/${i}`);
      if (node.name === name) return `${pointer}/schema`;
    }
    throw new Error(`${method} ${path} documents no parameter ${name}`);
  }

  /**
   * Checks one answer of `method path` (an OpenAPI path template). `response` names a component response
   * instead, for answers that belong to no operation (405, an unknown path).
   */
  check(method: string, path: string, a: Answer, response?: string): void {
    let base: string;
    if (response) {
      base = `#/components/responses/${response}`;
      expect(this.at(base), `component response ${response}`).to.be.an('object');
    } else {
      const op = this.at(`#/paths/${escape(path)}/${method.toLowerCase()}`);
      expect(op, `${method} ${path} is documented`).to.be.an('object');
      expect(Object.keys(op.responses), `${method} ${path} answered ${a.status} (${a.text.slice(0, 200)})`).to.include(String(a.status));
      base = `#/paths/${escape(path)}/${method.toLowerCase()}/responses/${a.status}`;
    }
    const { pointer, node: documented } = this.resolve(base);
    const what = `${method} ${path} → ${a.status}`;
    expect(documented, what).to.be.an('object');
    if (response) expect(documented.description, what).to.match(new RegExp(`^${a.status}: `));

    const type = (a.headers.get('content-type') ?? '').split(';')[0]!.trim();
    // An NDJSON export of no rows is an empty body (docs/data-out.md), of its documented type.
    const emptyNdjson = type === 'application/x-ndjson' && documented.content?.[type] !== undefined;
    if (a.text === '') {
      expect(a.status === 204 || a.status === 304 || a.status === 308 || method === 'HEAD' || emptyNdjson, `${what}: empty body`).to.equal(true);
    } else {
      const content = documented.content ?? {};
      expect(Object.keys(content), `${what}: content type ${type}`).to.include(type);
      if (JSON_TYPES.has(type)) this.expectValid(`${pointer}/content/${escape(type)}/schema`, a.body, `${what} body`);
    }

    const headers: Record<string, unknown> = documented.headers ?? {};
    const names = Object.keys(headers).map((n) => n.toLowerCase());
    for (const name of Object.keys(headers)) {
      const h = this.resolve(`${pointer}/headers/${escape(name)}`);
      const value = a.headers.get(name);
      if (h.node.required) expect(value, `${what}: header ${name} is required`).to.not.equal(null);
      if (value === null) continue;
      const t = h.node.schema?.type ?? this.resolve(`${h.pointer}/schema`).node?.type;
      this.expectValid(`${h.pointer}/schema`, t === 'integer' || t === 'number' ? Number(value) : value, `${what}: header ${name}`);
    }
    for (const own of OWN_HEADERS) {
      if (a.headers.has(own)) expect(names, `${what}: header ${own} is sent but not documented`).to.include(own);
    }
  }
}
