// Response headers and error responses of the OpenAPI document: every status the service answers, with
// what the code behind it does (src/errors.ts, src/http/middleware/*, src/http/body.ts, src/server.ts).
import { MAX_BODY_BYTES } from '../http/body.js';
import { MAX_URL_BYTES } from '../http/middleware/limits.js';
import { MAX_HEADER_BYTES } from '../limits.js';
import { ref, type Json } from './schemas.js';

export const JSONAPI = 'application/vnd.api+json';

export interface ResponseOptions {
  queryTimeoutMs: number;
  rateLimit: { max: number; windowMs: number };
}

/** RFC 9110 §5.6.7: the only HTTP date form the service sends. */
const IMF_FIXDATE = '^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \\d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \\d{4} \\d{2}:\\d{2}:\\d{2} GMT$';
const header = (description: string, schema: Json, required = false): Json => ({ description, required, schema });
export const headerRef = (name: string): Json => ({ $ref: `#/components/headers/${name}` });

export function componentHeaders(opts: ResponseOptions): Record<string, Json> {
  const window = `${opts.rateLimit.max} requests per ${opts.rateLimit.windowMs / 1000} s`;
  return {
    'X-Request-Id': header('The request id: the caller\'s `X-Request-Id` when it matches `^[A-Za-z0-9._:-]{1,128}$`, otherwise a new UUID. Quote it when reporting a problem.', { type: 'string' }),
    'X-Explorer-Snapshot': header('Id of the snapshot that answered (organization routes, once the organization is authorized).', { type: 'string' }),
    'X-RateLimit-Limit': header(`Requests allowed per window for this token context (${window}); organization routes only.`, { type: 'integer', minimum: 1 }),
    'X-Explorer-Organizations': header('How many organizations a cross-organization answer read: those the token reaches in the snapshot read.', { type: 'integer', minimum: 0 }),
    'X-RateLimit-Remaining': header('Requests left in the current window.', { type: 'integer', minimum: 0 }),
    'X-RateLimit-Reset': header('Seconds until the window resets, fractional (millisecond precision).', { type: 'number', minimum: 0 }),
    'Retry-After': header('Whole seconds to wait before retrying, at least 1.', { type: 'integer', minimum: 1 }, true),
    'WWW-Authenticate': header('The authentication scheme to use.', { type: 'string', const: 'Bearer realm="explorer"' }, true),
    Allow: header('The methods this path answers.', { type: 'string' }, true),
    ETag: header('A strong validator of this representation — for queries and exports derived from the snapshot, the organization and the normalized request; for saved views from the document; for static content from its bytes. Send it back in `If-None-Match`.', { type: 'string', pattern: '^"[^"]*"$' }),
    'Last-Modified': header('When the snapshot this answer read became current (its `loaded-at`), as an HTTP date (IMF-fixdate, to the second). '
      + 'Where a route reads several snapshots, the newest it read: `to` for changes, the newest point for a trend, the newest listed '
      + '(the current one) for the snapshot list; with `snapshot` / `as_of`, the chosen one. It says how fresh the data is; conditional '
      + 'requests use `ETag` (`If-Modified-Since` is not evaluated: a saved view can change while its snapshot does not).',
    { type: 'string', pattern: IMF_FIXDATE }, true),
    'Content-Disposition': header('`attachment; filename="<organization>-<view>-<YYYYMMDDTHHMMSSZ>.<csv|parquet|ndjson>"` (the time of the export).', { type: 'string', pattern: '^attachment; filename="[^"]+-[a-z_]+-\\d{8}T\\d{6}Z\\.(csv|parquet|ndjson)"$' }, true),
    'Cache-Control': header('Caching directive.', { type: 'string' }),
  };
}

/** Headers every response of an organization route carries; the rate-limit ones also on its errors. */
export function organizationHeaders(): Record<string, Json> {
  return {
    'X-Request-Id': headerRef('X-Request-Id'),
    'X-Explorer-Snapshot': headerRef('X-Explorer-Snapshot'),
    'X-RateLimit-Limit': headerRef('X-RateLimit-Limit'),
    'X-RateLimit-Remaining': headerRef('X-RateLimit-Remaining'),
    'X-RateLimit-Reset': headerRef('X-RateLimit-Reset'),
  };
}

export type ErrorStatus = 400 | 401 | 403 | 404 | 405 | 413 | 414 | 415 | 422 | 429 | 431 | 500 | 503 | 504;

interface ErrorSpec {
  name: string;
  description: string;
  /** Where `source` points, when this status always names it. */
  source?: 'pointer' | 'header';
  headers?: string[];
}

function errorSpecs(opts: ResponseOptions): Record<ErrorStatus, ErrorSpec> {
  return {
    400: {
      name: 'BadRequest',
      description: 'A query parameter is invalid (`source.parameter` is its decoded name: an unknown view, field or operator, '
        + 'a value that does not parse, a bad index, a parameter given twice, too many conditions or values, a bad page); '
        + 'or a request body is not valid UTF-8 JSON (`source.pointer` is ""); or the request is not valid HTTP (no `X-Request-Id`).',
    },
    401: {
      name: 'Unauthorized',
      description: 'No bearer token, or a token that is unknown, revoked or mistyped. Checked before anything else the route does.',
      headers: ['WWW-Authenticate'],
    },
    403: {
      name: 'Forbidden',
      description: 'The token is read-only (an auditor token): it may read every organization and change nothing. Answered only for an organization that exists; for one that does not, 404 as for anyone.',
    },
    404: {
      name: 'NotFound',
      description: 'The organization does not exist, the token may not explore it, or the saved view does not exist — one identical body for all three, so existence never leaks. Also any path no route matches.',
    },
    405: {
      name: 'MethodNotAllowed',
      description: 'The path exists but not for this method (OPTIONS and unknown methods included); `Allow` lists the methods it answers.',
      headers: ['Allow'],
    },
    413: {
      name: 'PayloadTooLarge',
      description: `The body is larger than ${MAX_BODY_BYTES} bytes: refused from its Content-Length, or as soon as a chunked body passes the limit (the connection is then closed).`,
    },
    414: {
      name: 'UriTooLong',
      description: `The request URL is longer than ${MAX_URL_BYTES} bytes; checked before the token.`,
    },
    415: {
      name: 'UnsupportedMediaType',
      description: 'The body is not `application/vnd.api+json` or `application/json` (`source.header` is `Content-Type`).',
      source: 'header',
    },
    422: {
      name: 'InvalidSavedView',
      description: 'A saved-view body does not validate, its name is taken, or a stored query no longer fits the catalog on re-run; `source.pointer` names the member (`/data/query/filter/1/version/does not contain`).',
      source: 'pointer',
    },
    429: {
      name: 'TooManyRequests',
      description: `Rate limited: more than ${opts.rateLimit.max} requests per ${opts.rateLimit.windowMs / 1000} s for this user, team or organization token (or client address without a valid token).`,
      headers: ['Retry-After'],
    },
    431: {
      name: 'HeaderFieldsTooLarge',
      description: `The request line and headers are larger than ${MAX_HEADER_BYTES} bytes; answered before routing (no \`X-Request-Id\`).`,
    },
    500: {
      name: 'InternalError',
      description: 'A bug: bad input never yields a 500. Quote the request id when reporting it.',
    },
    503: {
      name: 'ServiceUnavailable',
      description: 'No snapshot is loaded or its data cannot be read; too many queries are waiting for a worker (overload); or tokens or saved views cannot be reached (Redis down); or, for an auditor token, the audit log cannot be written. Retry after `Retry-After` seconds.',
      headers: ['Retry-After'],
    },
    504: {
      name: 'QueryTimeout',
      description: `The query ran longer than ${opts.queryTimeoutMs / 1000} s and was stopped; try a simpler query with fewer filters. An export already streaming is broken off instead.`,
    },
  };
}

/** Components for every error status: a schema per status and a response referring to it. */
export function errorComponents(opts: ResponseOptions): { schemas: Record<string, Json>; responses: Record<string, Json> } {
  const schemas: Record<string, Json> = {};
  const responses: Record<string, Json> = {};
  for (const [status, spec] of Object.entries(errorSpecs(opts))) {
    const item: Json = spec.source
      ? { type: 'object', required: ['source'], properties: { status: { const: status }, source: { type: 'object', required: [spec.source] } } }
      : { type: 'object', properties: { status: { const: status } } };
    schemas[`Error.${status}`] = { allOf: [ref('ErrorDocument')], type: 'object', properties: { errors: { type: 'array', items: item } } };
    const headers: Json = { 'X-Request-Id': headerRef('X-Request-Id') };
    if (Number(status) !== 431 && Number(status) !== 414) {
      Object.assign(headers, { 'X-Explorer-Snapshot': headerRef('X-Explorer-Snapshot'), 'X-RateLimit-Limit': headerRef('X-RateLimit-Limit'), 'X-RateLimit-Remaining': headerRef('X-RateLimit-Remaining'), 'X-RateLimit-Reset': headerRef('X-RateLimit-Reset') });
    }
    for (const h of spec.headers ?? []) headers[h] = headerRef(h);
    responses[spec.name] = {
      description: `${status}: ${spec.description}`,
      headers,
      content: { [JSONAPI]: { schema: ref(`Error.${status}`) } },
    };
  }
  const notModified = '304: the `If-None-Match` of the request matches the current `ETag`; no body, and the query was not run.';
  responses.NotModified = { description: notModified, headers: { ...organizationHeaders(), ETag: headerRef('ETag') } };
  // Routes that answer from snapshot data: the 304 sends the validators of the 200, Last-Modified too.
  responses.NotModifiedSnapshot = {
    description: `${notModified} It carries the same \`ETag\` and \`Last-Modified\` as the 200.`,
    headers: { ...organizationHeaders(), ETag: headerRef('ETag'), 'Last-Modified': headerRef('Last-Modified') },
  };
  return { schemas, responses };
}

export function errorResponseRef(status: ErrorStatus, opts: ResponseOptions): Json {
  return { $ref: `#/components/responses/${errorSpecs(opts)[status].name}` };
}
