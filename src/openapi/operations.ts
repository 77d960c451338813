// Every route of the service as an OpenAPI operation. The routes themselves are registered in
// src/http/routes/*.ts; test/http/openapi.test.ts walks the app's routers and fails when one is missing here.
import type { Catalog } from '../catalog/catalog.js';
import {
  CHANGE_PAIR_PARAMETERS, CURSOR_PAGE_PARAMETERS, PAGE_PARAMETERS, paramRef, queryParameterNames, SUMMARY_PARAMETERS, TIME_TRAVEL_PARAMETERS, TREND_PARAMETERS,
} from './parameters.js';
import { errorResponseRef, headerRef, JSONAPI, organizationHeaders, type ErrorStatus, type ResponseOptions } from './responses.js';
import { ref, type Json } from './schemas.js';

export const OPENAPI_PATH = '/api/v2/explorer/openapi.json';
const ORG = '/api/v2/organizations/{organization_name}';

export interface OperationSpec {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** OpenAPI path template. */
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  /** No API token needed. */
  public?: boolean;
  /** Another security requirement than the API token (the metrics token). */
  security?: Json[];
  /** Under /api/v2/organizations/{organization_name}: rate limited, authorized per organization. */
  organization?: boolean;
  /** Across organizations (/api/v2/explorer…, docs/access.md): rate limited, every organization the token reaches, audited. */
  across?: boolean;
  /** Answers ETag and honours If-None-Match with 304. */
  conditional?: boolean;
  /** Answers from snapshot data: its 200 and 304 carry Last-Modified, when that data was loaded. */
  readsSnapshot?: boolean;
  parameters?: string[];
  requestBody?: Json;
  /** Success responses by status. */
  responses: Record<string, Json>;
  errors: ErrorStatus[];
}

/** Errors every route can answer: URL and header limits come before routing; a bug is a 500. */
const ALWAYS: ErrorStatus[] = [414, 431, 500];
/** Errors of every organization route (interface §7: 401, then 503 without snapshot, then 404). */
const ORGANIZATION: ErrorStatus[] = [401, 404, 429, 503];
/** Errors of every cross-organization route: no organization to be unknown, but a token, a snapshot and the audit log to need. */
const ACROSS: ErrorStatus[] = [401, 429, 503];
/** What every cross-organization operation reads (docs/access.md). */
const ACROSS_REACH = 'Across organizations: every organization the token reaches (an auditor token every one, a user token each it may explore, an '
  + 'organization or team token its own; none, an empty answer). Every view has `organization_name` first, a field like any other: filtered, '
  + 'sorted, named in `fields` (where it always is, first) and grouped by. The default order is `organization_name`, then the view\'s own; a '
  + 'sort on other fields breaks ties by `organization_name`, then as each organization orders its rows. The answer equals the union of the '
  + 'per-organization answers. Every request is a line of the audit log.';


const jsonApi = (schema: Json) => ({ [JSONAPI]: { schema } });

function csvResponse(catalog: Catalog, what: string): Json {
  const columns = catalog.views.map((v) => `${v.name}: \`${v.fields.map((f) => f.name).join(',')}\``).join('; ');
  return {
    description: `${what} as CSV (interface §6): a header row of snake_case field names, then every value double-quoted `
      + '(null as `""`, datetimes `YYYY-MM-DDTHH:MM:SS+00:00`), every line ending with `\\n`, UTF-8 without BOM. Paging is ignored. '
      + `Default columns by view — ${columns}. If the export fails after its first byte, the transfer is broken off.`,
    headers: {
      'Content-Disposition': headerRef('Content-Disposition'),
      'Cache-Control': headerRef('Cache-Control'),
    },
    content: { 'text/csv': { schema: { type: 'string' } } },
  };
}

/** An export beside a CSV one (docs/data-out.md): the same rows and order, typed. */
function typedResponse(format: 'parquet' | 'ndjson'): Json {
  const end = ' If the export fails after its first byte, the transfer is broken off.';
  return format === 'parquet'
    ? {
      description: 'The CSV export\'s rows, in its order, as one Parquet file (zstd): columns named and ordered as the CSV header, '
        + 'typed — strings and versions VARCHAR, numbers, `count` and sums BIGINT, booleans BOOLEAN, datetimes TIMESTAMP WITH TIME ZONE to '
        + 'the millisecond, a list field its joined string, `changed_fields` VARCHAR[]; nulls are nulls. The file is named as the CSV\'s, '
        + `with \`.parquet\`.${end} A file is never served without its footer.`,
      headers: { 'Content-Disposition': headerRef('Content-Disposition'), 'Cache-Control': headerRef('Cache-Control') },
      content: { 'application/vnd.apache.parquet': { schema: { type: 'string', contentMediaType: 'application/vnd.apache.parquet' } } },
    }
    : {
      description: 'The CSV export\'s rows, in its order, as NDJSON: one JSON object a row, keys named and ordered as the CSV header, each '
        + 'value the JSON answer\'s (numbers exact, datetimes `YYYY-MM-DDTHH:MM:SS.mmm+00:00`, `changed_fields` an array, null for null), '
        + `every line ending with \`\\n\` (no rows: an empty body). Streamed; the file is named as the CSV's, with \`.ndjson\`.${end}`,
      headers: { 'Content-Disposition': headerRef('Content-Disposition'), 'Cache-Control': headerRef('Cache-Control') },
      content: { 'application/x-ndjson': { schema: { type: 'string' } } },
    };
}

/** Beside every `/export/csv` operation, its `/export/parquet` and `/export/ndjson` (docs/data-out.md). */
function withTypedExports(specs: OperationSpec[]): OperationSpec[] {
  return specs.flatMap((spec) => (!spec.path.endsWith('/export/csv') ? [spec] : [spec, ...(['parquet', 'ndjson'] as const).map((format): OperationSpec => {
    const name = format === 'parquet' ? 'Parquet' : 'NDJSON';
    return {
      ...spec,
      path: spec.path.replace(/csv$/, format),
      operationId: spec.operationId.replace(/Csv$/, format === 'parquet' ? 'Parquet' : 'Ndjson'),
      summary: spec.summary.replace(/as CSV.*$/, `as ${name}`),
      responses: { 200: typedResponse(format) },
    };
  })]));
}

/** How GET /metrics is configured (METRICS_TOKEN, METRICS_PUBLIC): whether a token is set, never the token. */
export interface MetricsSetting {
  token: boolean;
  public: boolean;
}

function metricsSpec(setting: MetricsSetting): OperationSpec {
  const on = setting.token || setting.public;
  const spec: OperationSpec = {
    method: 'get', path: '/metrics', operationId: 'metrics', tag: 'Service', public: !setting.token,
    summary: 'Prometheus metrics',
    description: !on
      ? 'Off in this configuration: answers 404. `METRICS_TOKEN` turns it on behind that bearer token, `METRICS_PUBLIC=1` without one.'
      : setting.token
        ? 'The Prometheus text exposition format, behind the bearer token `METRICS_TOKEN` (not an API token). Not rate limited.'
        : 'The Prometheus text exposition format, without a token (`METRICS_PUBLIC`). Not rate limited.',
    responses: on
      ? { 200: { description: 'Requests by route and status, query latency by view, rows and bytes, time-outs, cancellations, rate limits, pool queue and utilisation, snapshot id and age, Redis state.', headers: { 'Cache-Control': headerRef('Cache-Control') }, content: { 'text/plain': { schema: { type: 'string' } } } } }
      : {},
    errors: on ? [] : [404],
  };
  if (setting.token) spec.security = [{ metricsToken: [] }];
  return spec;
}

export function operationSpecs(catalog: Catalog, metrics: MetricsSetting): OperationSpec[] {
  const savedViewBody = {
    required: true,
    description: 'A saved view: the documented flat layout (`data.name`, `data.query_type`, `data.query`) or the JSON:API one '
      + '(`data.type` = `explorer-saved-queries`, `data.attributes`). At most 64 KiB.',
    content: { [JSONAPI]: { schema: ref('SavedViewBody') }, 'application/json': { schema: ref('SavedViewBody') } },
  };
  const savedView = (description: string, status = '200') => ({ [status]: { description, content: jsonApi(ref('SavedViewDocument')) } });
  const viewPath = `${ORG}/explorer/views/{view_id}`;
  const csvReRun = (path: string, operationId: string, alias: boolean): OperationSpec => ({
    method: 'get', path, operationId, tag: 'Saved views', organization: true, conditional: true, readsSnapshot: true,
    summary: alias ? 'Re-run a saved view as CSV (alias of …/csv)' : 'Re-run a saved view as CSV',
    description: 'Runs the stored query on the current snapshot, or the one `snapshot` / `as_of` names. Every other query parameter, paging included, is ignored.',
    parameters: ['view_id', ...TIME_TRAVEL_PARAMETERS],
    responses: { 200: csvResponse(catalog, 'Every row of the stored query') },
    errors: [400, 422, 504],
  });

  return withTypedExports([
    {
      method: 'get', path: '/api/v2/ping', operationId: 'ping', tag: 'Service', public: true,
      summary: 'Check that the API answers',
      description: 'Clients call it first; no token needed, not rate limited.',
      responses: { 204: { description: 'The API answers.' } },
      errors: [],
    },
    {
      method: 'get', path: '/healthz', operationId: 'liveness', tag: 'Service', public: true,
      summary: 'Liveness',
      responses: { 200: { description: 'The process runs.', content: { 'application/json': { schema: ref('Health') } } } },
      errors: [],
    },
    {
      method: 'get', path: '/readyz', operationId: 'readiness', tag: 'Service', public: true,
      summary: 'Readiness: a snapshot is loaded and the pool is up',
      description: 'Reports the Redis state without failing on it.',
      responses: {
        200: { description: 'Ready.', content: { 'application/json': { schema: ref('Readiness') } } },
        503: { description: 'Not ready: no snapshot, a broken one, or shutting down (not a JSON:API error).', content: { 'application/json': { schema: ref('Readiness') } } },
      },
      errors: [],
    },
    {
      method: 'get', path: OPENAPI_PATH, operationId: 'openApiDocument', tag: 'Service', conditional: true,
      summary: 'This OpenAPI document',
      description: `Built once at start from the view catalog of the configured engine name (\`${catalog.engine}\`). Any valid token; not rate limited.`,
      responses: { 200: { description: 'The OpenAPI 3.1 document.', content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'paths'] } } } } },
      errors: [401, 503],
    },
    metricsSpec(metrics),
    {
      method: 'get', path: '/explorer', operationId: 'explorerPage', tag: 'Explorer page', public: true, conditional: true,
      summary: 'The explorer web page',
      description: 'Static, no token needed (the page asks for one and sends it with every API call it makes). `/explorer/` redirects here.',
      responses: {
        200: { description: 'The page.', headers: { 'Cache-Control': headerRef('Cache-Control') }, content: { 'text/html': { schema: { type: 'string' } } } },
        308: { description: 'Requested as `/explorer/`: redirects to `/explorer`.', headers: { Location: { description: 'Where the page is.', required: true, schema: { type: 'string' } } } },
      },
      errors: [404],
    },
    {
      method: 'get', path: '/explorer/{asset}', operationId: 'explorerPageAsset', tag: 'Explorer page', public: true, conditional: true,
      summary: 'A script, style sheet, image or the catalog of the explorer page',
      description: '`catalog.json` holds the views, fields and operators of the configured engine name. Only plain file names of the built page are served.',
      parameters: ['asset'],
      responses: {
        200: {
          description: 'The file.',
          headers: { 'Cache-Control': headerRef('Cache-Control') },
          content: Object.fromEntries(['text/javascript', 'text/css', 'application/json', 'image/svg+xml', 'image/png', 'text/html'].map((t) => [t, { schema: t === 'application/json' ? { type: 'object' } : { type: 'string' } }])),
        },
      },
      errors: [404],
    },
    {
      method: 'get', path: `${ORG}/explorer`, operationId: 'query', tag: 'Explorer', organization: true, conditional: true, readsSnapshot: true,
      summary: 'Run a query: one page of JSON:API rows (endpoint 1)',
      parameters: [...queryParameterNames(catalog, true), ...TIME_TRAVEL_PARAMETERS],
      responses: { 200: { description: 'One page of rows of the view named by `type`, with links and pagination.', content: jsonApi(ref('Page')) } },
      errors: [400, 504],
    },
    {
      method: 'get', path: `${ORG}/explorer/export/csv`, operationId: 'exportCsv', tag: 'Explorer', organization: true, conditional: true, readsSnapshot: true,
      summary: 'Export every matching row as CSV (endpoint 2)',
      description: 'Takes the parameters of the query route except paging: `page[number]`, `page[size]` and `page[after]` are ignored, whatever their value (interface §5).',
      parameters: [...queryParameterNames(catalog, false), ...TIME_TRAVEL_PARAMETERS],
      responses: { 200: csvResponse(catalog, 'Every matching row') },
      errors: [400, 504],
    },
    {
      method: 'get', path: `${ORG}/explorer/views`, operationId: 'listSavedViews', tag: 'Saved views', organization: true, conditional: true,
      summary: 'List saved views (endpoint 3)',
      description: 'Ordered by creation time, then id; paged like queries.',
      parameters: PAGE_PARAMETERS,
      responses: { 200: { description: 'One page of saved views.', content: jsonApi(ref('SavedViewList')) } },
      errors: [400],
    },
    {
      method: 'post', path: `${ORG}/explorer/views`, operationId: 'createSavedView', tag: 'Saved views', organization: true,
      summary: 'Create a saved view (endpoint 4)',
      requestBody: savedViewBody,
      responses: savedView('The created view.', '201'),
      errors: [400, 413, 415, 422],
    },
    {
      method: 'get', path: viewPath, operationId: 'showSavedView', tag: 'Saved views', organization: true, conditional: true,
      summary: 'Show a saved view (endpoint 5)',
      parameters: ['view_id'],
      responses: savedView('The view.'),
      errors: [],
    },
    {
      method: 'patch', path: viewPath, operationId: 'updateSavedView', tag: 'Saved views', organization: true,
      summary: 'Update a saved view (endpoint 6)',
      description: 'Replaces name and query whole; the view type cannot change.',
      parameters: ['view_id'],
      requestBody: savedViewBody,
      responses: savedView('The updated view.'),
      errors: [400, 413, 415, 422],
    },
    {
      method: 'delete', path: viewPath, operationId: 'deleteSavedView', tag: 'Saved views', organization: true,
      summary: 'Delete a saved view (endpoint 7)',
      parameters: ['view_id'],
      responses: savedView('The deleted view.'),
      errors: [],
    },
    {
      method: 'get', path: `${viewPath}/results`, operationId: 'savedViewResults', tag: 'Saved views', organization: true, conditional: true, readsSnapshot: true,
      summary: 'Re-run a saved view: one page of JSON:API rows (endpoint 8)',
      description: 'Runs the stored query on the current snapshot, or the one `snapshot` / `as_of` names; honours `page[number]`, `page[size]` and `page[after]` and ignores every other parameter. Links carry only those parameters.',
      parameters: ['view_id', ...CURSOR_PAGE_PARAMETERS, ...TIME_TRAVEL_PARAMETERS],
      responses: { 200: { description: 'One page of rows of the saved view\'s view type.', content: jsonApi(ref('Page')) } },
      errors: [400, 422, 504],
    },
    csvReRun(`${viewPath}/csv`, 'savedViewCsv', false),
    csvReRun(`${viewPath}/export/csv`, 'savedViewExportCsv', true),
    ...historySpecs(catalog, viewPath),
    ...summarySpecs(catalog, viewPath),
    ...acrossSpecs(catalog),
    ...notificationSpecs(viewPath),
  ]);
}

/** docs/notifications.md: a saved view's notification configurations. */
function notificationSpecs(viewPath: string): OperationSpec[] {
  const list = `${viewPath}/notification-configurations`;
  const one = `${list}/{nc_id}`;
  const body = {
    required: true,
    description: 'JSON:API: `data.type` = `notification-configurations`, `data.attributes`. A create needs `name`, `destination-type`, `url` and '
      + '`triggers`; an update changes only the attributes it carries (one without `token` keeps it). At most 64 KiB.',
    content: { [JSONAPI]: { schema: ref('NotificationConfigurationBody') }, 'application/json': { schema: ref('NotificationConfigurationBody') } },
  };
  const document = (description: string, status = '200') => ({ [status]: { description, content: jsonApi(ref('NotificationConfigurationDocument')) } });
  const tag = 'Notifications';
  return [
    {
      method: 'get', path: list, operationId: 'listNotificationConfigurations', tag, organization: true, conditional: true,
      summary: 'List a saved view\'s notification configurations',
      description: 'Ordered by creation time, then id; a view holds at most 20.',
      parameters: ['view_id'],
      responses: { 200: { description: 'The view\'s configurations.', content: jsonApi(ref('NotificationConfigurationList')) } },
      errors: [],
    },
    {
      method: 'post', path: list, operationId: 'createNotificationConfiguration', tag, organization: true,
      summary: 'Create a notification configuration',
      description: 'The url must be https (plain http only to a host in `NOTIFY_ALLOW_HOSTS`), carry no credentials, and neither be nor resolve to a '
        + 'address that is not globally reachable (loopback, private, link-local, documentation, benchmarking, reserved, multicast or unspecified: IANA\'s special-purpose registries); a numeric host is accepted only as a dotted quad or IPv6. A 422 names the attribute.',
      parameters: ['view_id'],
      requestBody: body,
      responses: document('The created configuration.', '201'),
      errors: [400, 413, 415, 422],
    },
    {
      method: 'get', path: one, operationId: 'showNotificationConfiguration', tag, organization: true, conditional: true,
      summary: 'Show a notification configuration',
      parameters: ['view_id', 'nc_id'],
      responses: document('The configuration.'),
      errors: [],
    },
    {
      method: 'patch', path: one, operationId: 'updateNotificationConfiguration', tag, organization: true,
      summary: 'Update a notification configuration',
      description: 'Changes the attributes the body carries. Moving `destination-type` away from `generic` drops the token.',
      parameters: ['view_id', 'nc_id'],
      requestBody: body,
      responses: document('The updated configuration.'),
      errors: [400, 413, 415, 422],
    },
    {
      method: 'post', path: `${one}/actions/verify`, operationId: 'verifyNotificationConfiguration', tag, organization: true,
      summary: 'Send a test notification now',
      description: 'Answers 200 with the delivery response whatever the receiver answered; it is kept among the configuration\'s `delivery-responses`.',
      parameters: ['view_id', 'nc_id'],
      responses: { 200: { description: 'How the receiver answered.', content: jsonApi(ref('DeliveryResponseDocument')) } },
      errors: [],
    },
    {
      method: 'delete', path: one, operationId: 'deleteNotificationConfiguration', tag, organization: true,
      summary: 'Delete a notification configuration',
      parameters: ['view_id', 'nc_id'],
      responses: document('The deleted configuration.'),
      errors: [],
    },
  ];
}

const changesCsv = (): Json => ({
  description: 'Every listed change as CSV: a header `change,changed_fields,` then, for each selected field, `<field>` (its value in `to`, '
    + 'or in `from` for a removed row) and `previous_<field>` (its value in `from`; empty for an added row). `changed_fields` joins '
    + 'names with ", ". Quoting, datetimes and line ends as in query exports; the file is named `<organization>-<view>-changes-<UTC time>.csv`.',
  headers: { 'Content-Disposition': headerRef('Content-Disposition'), 'Cache-Control': headerRef('Cache-Control') },
  content: { 'text/csv': { schema: { type: 'string' } } },
});

/** docs/summaries.md: a query's rows counted and summed by group, for queries and for saved views. */
function summarySpecs(catalog: Catalog, viewPath: string): OperationSpec[] {
  const description = 'Selects the rows as a query does (`filter`), then counts them, and sums any `sum` fields, by up to three group fields. '
    + 'Each group\'s id is `sg-` and the first 16 hex digits of sha256 over the view\'s name and each group field\'s spelling and CSV value, '
    + 'joined by line feeds: it does not depend on the organization.';
  const query = queryParameterNames(catalog, false).filter((p) => p === 'type' || p === 'filter');
  const csv = (): Json => ({
    description: 'Every group as CSV: a header of the group fields (snake_case, without their periods), `count`, then `sum_<field>` for each '
      + 'summed field; the same order; quoting, datetimes and line ends as in query exports; the file is named `<organization>-<view>-summary-<UTC time>.csv`.',
    headers: { 'Content-Disposition': headerRef('Content-Disposition'), 'Cache-Control': headerRef('Cache-Control') },
    content: { 'text/csv': { schema: { type: 'string' } } },
  });
  const page = { description: 'One page of groups, with links, pagination, the rows matched and the number of groups.', content: jsonApi(ref('SummaryPage')) };
  const specs: OperationSpec[] = [
    {
      method: 'get', path: `${ORG}/explorer/summary`, operationId: 'summary', tag: 'Summaries', organization: true, conditional: true,
      summary: 'Count and sum a view\'s rows by group: one page', description,
      parameters: [...query, ...SUMMARY_PARAMETERS, ...CURSOR_PAGE_PARAMETERS, ...TIME_TRAVEL_PARAMETERS],
      responses: { 200: page }, errors: [400, 504],
    },
    {
      method: 'get', path: `${ORG}/explorer/summary/export/csv`, operationId: 'summaryCsv', tag: 'Summaries', organization: true, conditional: true,
      summary: 'Export every group of a summary as CSV', description: `${description} Paging is ignored.`,
      parameters: [...query, ...SUMMARY_PARAMETERS, ...TIME_TRAVEL_PARAMETERS],
      responses: { 200: csv() }, errors: [400, 504],
    },
    {
      method: 'get', path: '/api/v2/explorer/summary', operationId: 'summaryAcross', tag: 'Across organizations', across: true, conditional: true, readsSnapshot: true,
      summary: 'Count and sum a view\'s rows by group across organizations: one page', description: `${description} ${ACROSS_REACH} Counts and sums are the sums of each organization's.`,
      parameters: ['type', 'filter.across', ...SUMMARY_PARAMETERS, ...CURSOR_PAGE_PARAMETERS, ...TIME_TRAVEL_PARAMETERS],
      responses: { 200: page },
      errors: [400, 504],
    },
    {
      method: 'get', path: '/api/v2/explorer/summary/export/csv', operationId: 'summaryAcrossCsv', tag: 'Across organizations', across: true, conditional: true, readsSnapshot: true,
      summary: 'Export every group of a summary across organizations as CSV', description: `${description} ${ACROSS_REACH} Paging is ignored.`,
      parameters: ['type', 'filter.across', ...SUMMARY_PARAMETERS, ...TIME_TRAVEL_PARAMETERS],
      responses: { 200: csv() },
      errors: [400, 504],
    },
    {
      method: 'get', path: `${viewPath}/summary`, operationId: 'savedViewSummary', tag: 'Saved views', organization: true, conditional: true,
      summary: 'Count and sum a saved view\'s rows by group: one page', description: `${description} The rows are the stored query's (its filters; its fields and sort do not apply).`,
      parameters: ['view_id', ...SUMMARY_PARAMETERS, ...CURSOR_PAGE_PARAMETERS, ...TIME_TRAVEL_PARAMETERS],
      responses: { 200: page }, errors: [400, 422, 504],
    },
    {
      method: 'get', path: `${viewPath}/summary/export/csv`, operationId: 'savedViewSummaryCsv', tag: 'Saved views', organization: true, conditional: true,
      summary: 'Export every group of a saved view\'s summary as CSV', description: `${description} The rows are the stored query's.`,
      parameters: ['view_id', ...SUMMARY_PARAMETERS, ...TIME_TRAVEL_PARAMETERS],
      responses: { 200: csv() }, errors: [400, 422, 504],
    },
  ];
  return specs.map((spec) => ({ ...spec, readsSnapshot: true }));
}

/**
 * docs/access.md: the query and its exports across every organization the token reaches (an
 * auditor token every one, a user token those it may explore, an organization or team token its own).
 */
function acrossSpecs(catalog: Catalog): OperationSpec[] {
  return [
    {
      method: 'get', path: '/api/v2/explorer', operationId: 'queryAcross', tag: 'Across organizations', across: true, conditional: true, readsSnapshot: true,
      summary: 'Run a query across organizations: one page of JSON:API rows', description: ACROSS_REACH,
      parameters: [...queryParameterNames(catalog, true, true), ...TIME_TRAVEL_PARAMETERS],
      responses: { 200: { description: 'One page of rows of the view named by `type`, `organization-name` first in each row\'s attributes.', content: jsonApi(ref('PageAcross')) } },
      errors: [400, 504],
    },
    {
      method: 'get', path: '/api/v2/explorer/export/csv', operationId: 'exportAcrossCsv', tag: 'Across organizations', across: true, conditional: true, readsSnapshot: true,
      summary: 'Export every matching row across organizations as CSV', description: `${ACROSS_REACH} Paging is ignored. The file is named \`all-organizations-<view>-<UTC time>\`.`,
      parameters: [...queryParameterNames(catalog, false, true), ...TIME_TRAVEL_PARAMETERS],
      responses: { 200: csvResponse(catalog, 'Every matching row, `organization_name` the first column,') },
      errors: [400, 504],
    },
  ];
}

/** docs/history.md: the snapshot list, changes and trends, for queries and for saved views. */
function historySpecs(catalog: Catalog, viewPath: string): OperationSpec[] {
  const changesDescription = 'Compares two retained snapshots of the view: rows only in `to` are added, only in `from` removed, in both with any '
    + 'field value different changed (every field is compared, whatever `fields` selects). A row is listed when the filter matches it in either '
    + 'snapshot; `sort` orders by its values in `to` (in `from` when removed), then by row id. Without `from`, the snapshot loaded just before `to`.';
  const trendDescription = 'One point per retained snapshot that includes the organization, oldest first: how many rows match the filter, '
    + 'and with `sum` the total of each named number field over them. Not paged.';
  const query = queryParameterNames(catalog, false).filter((p) => !p.startsWith('fields'));
  const specs: OperationSpec[] = [
    {
      method: 'get', path: `${ORG}/explorer/snapshots`, operationId: 'listSnapshots', tag: 'History', organization: true, conditional: true,
      summary: 'List the retained snapshots that include the organization',
      description: 'Newest first, paged like saved views. The newest `SNAPSHOT_KEEP` snapshots are retained.',
      parameters: PAGE_PARAMETERS,
      responses: { 200: { description: 'One page of snapshots.', content: jsonApi(ref('SnapshotList')) } },
      errors: [400],
    },
    {
      method: 'get', path: `${ORG}/explorer/changes`, operationId: 'changes', tag: 'History', organization: true, conditional: true,
      summary: 'What changed in a view between two snapshots: one page',
      description: changesDescription,
      parameters: [...queryParameterNames(catalog, true), ...CHANGE_PAIR_PARAMETERS],
      responses: { 200: { description: 'One page of changes, with links, pagination and the counts of the whole change set.', content: jsonApi(ref('ChangesPage')) } },
      errors: [400, 504],
    },
    {
      method: 'get', path: `${ORG}/explorer/changes/export/csv`, operationId: 'changesCsv', tag: 'History', organization: true, conditional: true,
      summary: 'Export every change between two snapshots as CSV',
      description: `${changesDescription} Paging is ignored.`,
      parameters: [...queryParameterNames(catalog, false), ...CHANGE_PAIR_PARAMETERS],
      responses: { 200: changesCsv() },
      errors: [400, 504],
    },
    {
      method: 'get', path: `${ORG}/explorer/trend`, operationId: 'trend', tag: 'History', organization: true, conditional: true,
      summary: 'How many rows match, in every retained snapshot',
      description: trendDescription,
      parameters: [...query, ...TREND_PARAMETERS],
      responses: { 200: { description: 'The points, oldest first.', content: jsonApi(ref('Trend')) } },
      errors: [400, 504],
    },
    {
      method: 'get', path: `${viewPath}/changes`, operationId: 'savedViewChanges', tag: 'Saved views', organization: true, conditional: true,
      summary: 'What changed in a saved view\'s query between two snapshots: one page',
      description: `${changesDescription} The query is the stored one; other query parameters than these are ignored.`,
      parameters: ['view_id', ...CURSOR_PAGE_PARAMETERS, ...CHANGE_PAIR_PARAMETERS],
      responses: { 200: { description: 'One page of changes.', content: jsonApi(ref('ChangesPage')) } },
      errors: [400, 422, 504],
    },
    {
      method: 'get', path: `${viewPath}/changes/export/csv`, operationId: 'savedViewChangesCsv', tag: 'Saved views', organization: true, conditional: true,
      summary: 'Export every change of a saved view\'s query between two snapshots as CSV',
      description: `${changesDescription} The query is the stored one.`,
      parameters: ['view_id', ...CHANGE_PAIR_PARAMETERS],
      responses: { 200: changesCsv() },
      errors: [400, 422, 504],
    },
    {
      method: 'get', path: `${viewPath}/trend`, operationId: 'savedViewTrend', tag: 'Saved views', organization: true, conditional: true,
      summary: 'The trend of a saved view\'s query over the retained snapshots',
      description: `${trendDescription} The query is the stored one.`,
      parameters: ['view_id', ...TREND_PARAMETERS],
      responses: { 200: { description: 'The points, oldest first.', content: jsonApi(ref('Trend')) } },
      errors: [400, 422, 504],
    },
  ];
  return specs.map((spec) => ({ ...spec, readsSnapshot: true })); // every one answers from snapshot data
}

/** The OpenAPI operation object of one spec. */
export function operationObject(spec: OperationSpec, opts: ResponseOptions): Json {
  const parameters = [
    ...(spec.organization ? ['organization_name'] : []),
    ...(spec.parameters ?? []),
    ...(spec.conditional ? ['If-None-Match'] : []),
    'X-Request-Id',
  ].map(paramRef);
  const responses: Json = {};
  for (const [status, response] of Object.entries(spec.responses)) {
    const headers: Json = spec.organization || spec.across ? organizationHeaders() : { 'X-Request-Id': headerRef('X-Request-Id') };
    if (spec.across && status === '200') headers['X-Explorer-Organizations'] = headerRef('X-Explorer-Organizations');
    if (spec.conditional && status.startsWith('2')) Object.assign(headers, { ETag: headerRef('ETag'), 'Cache-Control': headerRef('Cache-Control') });
    if (spec.readsSnapshot && status.startsWith('2')) headers['Last-Modified'] = headerRef('Last-Modified');
    Object.assign(headers, (response as { headers?: Json }).headers ?? {});
    responses[status] = { ...response, headers };
  }
  if (spec.conditional) responses['304'] = { $ref: `#/components/responses/${spec.readsSnapshot ? 'NotModifiedSnapshot' : 'NotModified'}` };
  // A write of an organization's: refused to a read-only (auditor) token.
  const refused: ErrorStatus[] = spec.organization && spec.method !== 'get' ? [403] : [];
  const errors = new Set<ErrorStatus>([...(spec.organization ? ORGANIZATION : []), ...(spec.across ? ACROSS : []), ...refused, ...spec.errors, ...(spec.public ? [] : [401 as const]), ...ALWAYS]);
  for (const status of [...errors].sort((a, b) => a - b)) responses[String(status)] = errorResponseRef(status, opts);
  const operation: Json = {
    operationId: spec.operationId,
    tags: [spec.tag],
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    parameters,
    ...(spec.requestBody ? { requestBody: spec.requestBody } : {}),
    responses,
  };
  if (spec.security) operation.security = spec.security;
  else if (spec.public) operation.security = [];
  return operation;
}
