// Component schemas of the OpenAPI document, derived from the view catalog and its JSON Schemas
// (src/catalog/schemas.ts): nothing here lists a view, a field or an operator by hand.
import type { Catalog } from '../catalog/catalog.js';
import { ALL_OPERATORS, ignoresValue, OPERATOR_ALIASES, OPERATORS_BY_TYPE, VALUE_PATTERNS, type Operator } from '../catalog/operators.js';
import { allSchemas, PAGE_SCHEMA, viewQuerySchema } from '../catalog/schemas.js';
import type { Field, FieldType, View } from '../catalog/types.js';
import { MAX_CONDITIONS, MAX_PAGE_SIZE } from '../query/validate.js';
import { SAVED_VIEW_TYPE } from '../saved-views/render.js';

export type Json = Record<string, unknown>;

export const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

const FIELD_TYPES: readonly FieldType[] = ['string', 'number', 'boolean', 'datetime'];

/** interface §6: datetimes of result rows carry milliseconds and the UTC offset +00:00. */
const ROW_DATETIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}\\+00:00$';
/** interface §6: a saved view's created-at / updated-at. */
const SAVED_DATETIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$';
const INDEX = '^\\d+$';

/** What each operator keeps (docs/interface.md, interface §4); the Record type makes it complete. */
const OPERATOR_MEANING: Readonly<Record<Operator, string>> = {
  is: 'equals one of the values (strings compare exactly, booleans are true/false in any case)',
  is_not: 'differs from every value; keeps nulls',
  contains: 'contains one of the values as a substring (ASCII case-insensitive)',
  'does not contain': 'contains none of the values as a substring (ASCII case-insensitive); keeps nulls',
  is_empty: 'has no value (null, or "" for strings); the value is ignored and may be empty',
  is_not_empty: 'has a value; the value is ignored and may be empty',
  gt: 'is greater than the value',
  lt: 'is less than the value',
  gteq: 'is greater than or equal to the value',
  lteq: 'is less than or equal to the value',
  is_before: 'is strictly earlier than the value (no offset means UTC)',
  is_after: 'is strictly later than the value (no offset means UTC)',
};

const regexEscape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** An object of exactly `properties`, `required` of them (all unless given). */
const closed = (properties: Json, required: string[] = Object.keys(properties), more: Json = {}): Json =>
  ({ type: 'object', required, additionalProperties: false, properties, ...more });

/** A JSON:API resource: its `id`, its `type` (one constant) and its `attributes`; `relationships` when given. */
const resource = (id: Json, type: string, attributes: Json, relationships?: Json): Json =>
  closed({ id, type: { const: type }, attributes, ...(relationships ? { relationships } : {}) });

/** A document of one resource of schema `name`. */
const documentOf = (name: string): Json => closed({ data: ref(name) });

/** A page of resources of schema `name`, with the page links and `meta` (the pagination unless given). */
const pageOf = (name: string, meta: Json = ref('PageMeta')): Json =>
  closed({ data: { type: 'array', items: ref(name), maxItems: MAX_PAGE_SIZE }, links: ref('PageLinks'), meta });

/** The draft-07 `$id`/`$schema` of the catalog's schemas have no place inside an OpenAPI document. */
function bare(schema: Json): Json {
  const { $id: _id, $schema: _schema, ...rest } = schema;
  return rest;
}

/** A comma-separated list of `item`s, at most `max` of them, spaces around items allowed (interface §5). */
function listPattern(item: string, max: number): string {
  const one = `\\s*${item}\\s*`;
  return `^${one}(?:,${one}){0,${max - 1}}$`;
}

interface QueryLimits {
  names: string[];
  maxFields: number;
  maxSort: number;
  maxValues: number;
}

/** Field names and limits of one view, read from its query schema (schemas/generated/query-<view>.schema.json). */
export function queryLimits(view: View): QueryLimits {
  type List = { maxItems: number; items: { enum: string[] } };
  const { fields, sort, filter } = (viewQuerySchema(view) as { properties: Record<'fields' | 'sort' | 'filter', List> }).properties;
  return { names: fields.items.enum, maxFields: fields.maxItems, maxSort: sort.maxItems, maxValues: filter.maxItems };
}

function attributeSchema(field: Field): Json {
  const description = `${field.description}${field.version ? ' Sorts by version precedence.' : ''} (${field.type}; \`${field.name}\` in query strings and CSV.)`;
  switch (field.type) {
    case 'string': return { type: ['string', 'null'], description };
    case 'number': return { type: ['number', 'null'], description };
    case 'boolean': return { type: ['boolean', 'null'], description };
    case 'datetime': return { type: ['string', 'null'], format: 'date-time', pattern: ROW_DATETIME, description };
  }
}

/** The value of one filter parameter: `filter[i][field][op][j]=<value>`, keyed by j. */
function filterValues(type: FieldType | null): Json {
  const pattern = type === null ? null : VALUE_PATTERNS[type];
  return {
    type: 'object',
    description: type === null
      ? 'Values by value index j (`0` for a single value); ignored by this operator.'
      : `Values by value index j (\`0\` for a single value); several values mean "any of", or "none of" for is_not and does not contain. ${type} syntax${pattern ? `: ${pattern}` : ': any text'}.`,
    propertyNames: { pattern: INDEX },
    minProperties: 1,
    additionalProperties: pattern ? { type: 'string', pattern } : { type: 'string' },
  };
}

/** Operators of one field type, each to its values; aliases of interface §4 included. */
function fieldFilter(type: FieldType): Json {
  const operators = OPERATORS_BY_TYPE[type];
  const properties: Json = {};
  for (const op of operators) {
    properties[op] = { ...ref(ignoresValue(op) ? 'FilterValues.ignored' : `FilterValues.${type}`), description: `Keeps rows whose field ${OPERATOR_MEANING[op]}.` };
  }
  for (const [alias, op] of Object.entries(OPERATOR_ALIASES)) {
    if (operators.includes(op)) properties[alias] = { ...ref(`FilterValues.${type}`), description: `Another spelling of \`${op}\`.` };
  }
  return {
    type: 'object',
    description: `Conditions on a ${type} field, by operator: ${operators.join(', ')}.`,
    minProperties: 1,
    additionalProperties: false,
    properties,
  };
}

/** A view's schemas, named `<Kind>.<view>`, or `<Kind>.across.<view>` for the view read across organizations. */
function viewSchemas(view: View): Record<string, Json> {
  const key = view.across ? `across.${view.name}` : view.name;
  const what = view.across ? `${view.name} view across organizations` : `${view.name} view`;
  const { names, maxFields, maxSort, maxValues } = queryLimits(view);
  const alternatives = `(?:${names.map(regexEscape).join('|')})`;
  const conditionFields: Json = {};
  for (const f of view.fields) conditionFields[f.name] = { ...ref(`FieldFilter.${f.type}`), description: `${f.name} (${f.type}).` };
  const attributes: Json = {};
  for (const f of view.fields) attributes[f.attribute] = attributeSchema(f);
  return {
    [`Attributes.${key}`]: {
      type: 'object',
      description: `Attributes of a ${view.name} row: every field in this order by default, or those chosen by \`fields\`.`,
      additionalProperties: false,
      properties: attributes,
    },
    [`Row.${key}`]: {
      ...resource({ type: 'string', description: 'Row id (interface §3).' }, view.rowType, ref(`Attributes.${key}`)),
      description: `${view.description} Default sort: \`${view.defaultSort.join(',')}\`, then the row id.`,
    },
    [`Page.${key}`]: { ...pageOf(`Row.${key}`), description: `One page of the ${what}.` },
    [`Sort.${key}`]: {
      type: 'string',
      description: `Sort keys of the ${what}, comma-separated, \`-\` for descending; at most ${maxSort}. Fields: ${names.join(', ')}.`,
      pattern: listPattern(`-?${alternatives}`, maxSort),
    },
    [`Fields.${key}`]: {
      type: 'string',
      description: `Fields of the ${what}, comma-separated, in the order wanted (duplicates dropped); at most ${maxFields}. Fields: ${names.join(', ')}.`,
      pattern: listPattern(alternatives, maxFields),
    },
    [`FilterCondition.${key}`]: {
      type: 'object',
      description: `The conditions under one filter index of the ${what}, by field.`,
      minProperties: 1,
      additionalProperties: false,
      properties: conditionFields,
    },
    [`Filter.${key}`]: {
      type: 'object',
      description: `Filters of the ${what} by filter index i: \`filter[i][field][operator][j]=value\`. Every condition is ANDed; at most ${MAX_CONDITIONS} conditions and ${maxValues} values.`,
      propertyNames: { pattern: INDEX },
      additionalProperties: ref(`FilterCondition.${key}`),
    },
  };
}

/**
 * Converts schemas/saved-view-body.schema.json (draft-07, `#/definitions/…`) into an OpenAPI 3.1 schema
 * component named `name`: `definitions` become `$defs`, and references point into the component.
 */
export function embedSchema(schema: Json, name: string): Json {
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (node === null || typeof node !== 'object') return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node as Json)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/definitions/')) out.$ref = `#/components/schemas/${name}/$defs/${v.slice('#/definitions/'.length)}`;
      else if (k === 'definitions') out.$defs = rewrite(v);
      else out[k] = rewrite(v);
    }
    return out;
  };
  return rewrite(bare(schema)) as Json;
}

/** Every component schema of the document. */
export function componentSchemas(catalog: Catalog, savedViewBody: Json, notificationConfigurationBody: Json): Record<string, Json> {
  const queries = querySchemas(catalog);
  const pagination = (queries.PageMeta!.properties as Json).pagination as Json;
  return {
    ...queries,
    ...savedViewSchemas(catalog, savedViewBody, notificationConfigurationBody),
    ...errorSchemas(),
    ...historySchemas(catalog, pagination),
    ...summarySchemas(pagination),
    ...probeSchemas(),
  };
}

/** A query's parameters, a view's rows and pages, and the page links and meta every paged answer has. */
function querySchemas(catalog: Catalog): Record<string, Json> {
  const schemas = allSchemas(catalog);
  const out: Record<string, Json> = {
    ViewType: { ...bare(schemas['query-type']!), description: `The view a query reads: ${catalog.views.map((v) => `\`${v.name}\` (${v.description.replace(/\.$/, '')})`).join('; ')}.` },
    PageNumber: { ...bare((PAGE_SCHEMA.properties as Json).number as Json), description: 'Page number, a whole number of at least 1 (default 1; at most 2^53 − 1). Past the last page `data` is empty.' },
    PageSize: { ...bare((PAGE_SCHEMA.properties as Json).size as Json), description: `Rows per page, a whole number of at least 1 (default 20; above ${MAX_PAGE_SIZE} it is clamped to ${MAX_PAGE_SIZE}).` },
    'FilterValues.ignored': filterValues(null),
  };
  for (const type of FIELD_TYPES) {
    out[`FilterValues.${type}`] = filterValues(type);
    out[`FieldFilter.${type}`] = fieldFilter(type);
  }
  for (const view of catalog.views) Object.assign(out, viewSchemas(view), viewSchemas(catalog.across(view.name)!));

  // Each kind once for the views of one organization, once (`…Across`) for the views read across organizations.
  for (const [suffix, prefix, what] of [['', '', 'the view named by `type`'], ['Across', 'across.', 'the view named by `type`, read across organizations']] as const) {
    out[`Filter${suffix}`] = { description: `Filters of ${what}.`, anyOf: catalog.views.map((v) => ref(`Filter.${prefix}${v.name}`)) };
    out[`Sort${suffix}`] = { description: `Sort keys of ${what}.`, anyOf: catalog.views.map((v) => ref(`Sort.${prefix}${v.name}`)) };
    out[`Fields${suffix}`] = { description: `Fields of ${what}.`, anyOf: catalog.views.map((v) => ref(`Fields.${prefix}${v.name}`)) };
    out[`Page${suffix}`] = { description: `One page of results of ${what}.`, anyOf: catalog.views.map((v) => ref(`Page.${prefix}${v.name}`)) };
  }

  out.PageLinks = {
    type: 'object',
    description: 'Absolute URLs of the same route with `page[number]` and the effective `page[size]` (interface §5); on a cursor page '
      + '(`page[after]`) with `page[after]` instead: `first` from the start, `next` after the page\'s last row (null when none follows), '
      + '`prev` and `last` null.',
    required: ['self', 'first', 'prev', 'next', 'last'],
    additionalProperties: false,
    properties: {
      self: { type: 'string', format: 'uri' },
      first: { type: 'string', format: 'uri' },
      prev: { type: ['string', 'null'], format: 'uri' },
      next: { type: ['string', 'null'], format: 'uri' },
      last: { type: ['string', 'null'], format: 'uri' },
    },
  };
  const pageNumber = { type: 'integer', minimum: 1 };
  const pageSize = { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE };
  const totalCount = { type: 'integer', minimum: 0 };
  out.PageMeta = {
    type: 'object',
    required: ['pagination'],
    additionalProperties: false,
    properties: {
      pagination: {
        oneOf: [
          {
            type: 'object',
            description: 'A numbered page.',
            required: ['current-page', 'page-size', 'next-page', 'prev-page', 'total-pages', 'total-count'],
            additionalProperties: false,
            properties: {
              'current-page': pageNumber,
              'page-size': pageSize,
              'next-page': { type: ['integer', 'null'], minimum: 2 },
              'prev-page': { type: ['integer', 'null'], minimum: 1 },
              'total-pages': pageNumber,
              'total-count': totalCount,
            },
          },
          {
            type: 'object',
            description: 'A cursor page (`page[after]`): no page numbers.',
            required: ['page-size', 'total-count'],
            additionalProperties: false,
            properties: { 'page-size': pageSize, 'total-count': totalCount },
          },
        ],
      },
    },
  };

  return out;
}

/** Saved views and their notification configurations. */
function savedViewSchemas(catalog: Catalog, savedViewBody: Json, notificationConfigurationBody: Json): Record<string, Json> {
  const out: Record<string, Json> = {};
  out.SavedQuery = {
    type: 'object',
    description: 'A saved query as stored: canonical operators, fields without duplicates. '
      + 'Names are those of the catalog when the view was saved (a re-run validates them again).',
    required: ['type', 'filter'],
    additionalProperties: false,
    properties: {
      type: ref('ViewType'),
      filter: {
        type: 'array',
        items: {
          type: 'object',
          required: ['field', 'operator', 'value'],
          additionalProperties: false,
          properties: {
            field: { type: 'string' },
            operator: { enum: [...ALL_OPERATORS] },
            value: { type: 'array', items: { type: 'string' } },
          },
        },
      },
      fields: { type: 'array', minItems: 1, items: { type: 'string' } },
      sort: { type: 'array', minItems: 1, items: { type: 'string' } },
    },
  };
  const savedAt = { type: 'string', format: 'date-time', pattern: SAVED_DATETIME };
  out.SavedView = resource({ type: 'string', pattern: '^sq-[0-9A-Za-z]{16}$' }, SAVED_VIEW_TYPE, closed({
    name: { type: 'string', minLength: 1, maxLength: 255, description: 'Unique within the organization, trimmed.' },
    'created-at': savedAt,
    'updated-at': savedAt,
    query: ref('SavedQuery'),
    'query-type': ref('ViewType'),
  }));
  out.NotificationConfiguration = resource({ type: 'string', pattern: '^nc-[0-9A-Za-z]{16}$' }, 'notification-configurations', closed({
    name: { type: 'string', minLength: 1, maxLength: 255 },
    enabled: { type: 'boolean' },
    'destination-type': { enum: ['generic', 'slack', 'microsoft-teams'] },
    url: { type: 'string' },
    token: { type: 'null', description: 'Write-only: always answered as null.' },
    triggers: { type: 'array', minItems: 1, items: { enum: ['explorer:rows-added', 'explorer:rows-removed', 'explorer:rows-changed', 'explorer:threshold'] } },
    threshold: {
      oneOf: [{ type: 'null' }, closed({ measure: { type: 'string', description: '`count`, or `sum:<number field of the view>`.' }, above: { type: 'number' }, below: { type: 'number' } }, ['measure'])],
    },
    'delivery-responses': { type: 'array', maxItems: 10, items: ref('DeliveryResponse'), description: 'The last tries, verifications included, newest first.' },
    'created-at': savedAt,
    'updated-at': savedAt,
  }), closed({ subscribable: closed({ data: closed({ id: { type: 'string' }, type: { const: SAVED_VIEW_TYPE } }) }) }));
  out.DeliveryResponse = closed({
    url: { type: 'string' },
    code: { type: ['integer', 'null'], description: 'The receiver\'s status; null when none came (refused, timed out, an address not allowed).' },
    body: { type: 'string', maxLength: 1024, description: 'The first 1,024 bytes of the receiver\'s body, or why no answer came.' },
    headers: { type: 'object', additionalProperties: false, properties: { 'content-type': { type: 'string' }, 'retry-after': { type: 'string' } } },
    'sent-at': { type: 'string', format: 'date-time' },
    successful: { type: 'boolean' },
    attempt: { type: 'integer', minimum: 1 },
  });
  out.DeliveryResponseDocument = documentOf('DeliveryResponse');
  out.NotificationConfigurationDocument = documentOf('NotificationConfiguration');
  out.NotificationConfigurationList = closed({ data: { type: 'array', items: ref('NotificationConfiguration'), maxItems: 20 } });
  out.NotificationConfigurationBody = embedSchema(notificationConfigurationBody, 'NotificationConfigurationBody');
  out.SavedViewDocument = documentOf('SavedView');
  out.SavedViewList = pageOf('SavedView');
  out.SavedViewBody = {
    ...embedSchema(savedViewBody, 'SavedViewBody'),
    description: `${String(savedViewBody.description ?? '')} Views: ${catalog.views.map((v) => v.name).join(', ')}; fields and operators as in the Filter.<view> schemas. Update (PATCH) requires name and query; the view type cannot change.`,
  };

  return out;
}

/** A JSON:API error document (interface §7). */
function errorSchemas(): Record<string, Json> {
  const out: Record<string, Json> = {};
  out.ErrorSource = {
    type: 'object',
    description: 'Where the error is: a query parameter (its decoded name), a JSON Pointer into the body, or a request header.',
    minProperties: 1,
    maxProperties: 1,
    additionalProperties: false,
    properties: {
      parameter: { type: 'string' },
      pointer: { type: 'string', pattern: '^(?:/.*)?$' },
      header: { type: 'string' },
    },
  };
  out.Error = {
    type: 'object',
    required: ['status', 'title', 'detail'],
    additionalProperties: false,
    properties: {
      status: { type: 'string', pattern: '^[45]\\d\\d$' },
      title: { type: 'string' },
      detail: { type: 'string' },
      source: ref('ErrorSource'),
    },
  };
  out.ErrorDocument = {
    type: 'object',
    description: 'A JSON:API error document (interface §7).',
    required: ['errors'],
    additionalProperties: false,
    properties: { errors: { type: 'array', minItems: 1, items: ref('Error') } },
  };

  return out;
}

/** History: retained snapshots, change sets and trends (docs/history.md). */
function historySchemas(catalog: Catalog, pagination: Json): Record<string, Json> {
  const out: Record<string, Json> = {};
  const loadedAt = { type: 'string', format: 'date-time', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}\\+00:00$', description: 'When the snapshot was loaded.' };
  const label = { type: ['string', 'null'], maxLength: 255, description: 'The label given at load, if any.' };
  out.Snapshot = resource({ type: 'string', description: 'Snapshot id: sortable by load time.' }, 'explorer-snapshots', closed({
    'loaded-at': loadedAt,
    label,
    current: { type: 'boolean' },
    counts: closed(Object.fromEntries(catalog.views.map((v) => [v.name, { type: 'integer', minimum: 0 }])), undefined,
      { description: 'The organization\'s rows in each view of this snapshot.' }),
  }));
  out.SnapshotList = pageOf('Snapshot');
  const side = { anyOf: [{ type: 'null' }, ...catalog.views.map((v) => ref(`Attributes.${v.name}`))], description: 'The selected fields of the row in that snapshot; null when it is not there.' };
  out.Change = resource({ type: 'string', description: 'The row id.' }, 'explorer-changes', closed({
    change: { enum: ['added', 'removed', 'changed'] },
    'changed-fields': { type: 'array', items: { type: 'string' }, description: 'Every field whose value differs (whatever `fields` selects), alphabetical; empty unless changed.' },
    before: side,
    after: side,
  }));
  const count = { type: 'integer', minimum: 0 };
  out.ChangesPage = pageOf('Change', closed({
    pagination,
    from: { type: 'string' },
    to: { type: 'string' },
    counts: closed({ added: count, removed: count, changed: count }),
  }));
  out.TrendPoint = resource({ type: 'string', description: 'The snapshot id.' }, 'explorer-trend-points', closed({
    'loaded-at': loadedAt,
    label,
    count,
    sums: { type: 'object', description: 'Present with `sum`: each summed field\'s total over the matching rows, null when none matches.', additionalProperties: { type: ['number', 'null'] } },
  }, ['loaded-at', 'label', 'count']));
  out.Trend = closed({ data: { type: 'array', items: ref('TrendPoint'), description: 'One point per retained snapshot that includes the organization, oldest first.' } });

  return out;
}

/** Summaries: groups and their page (docs/summaries.md). */
function summarySchemas(pagination: Json): Record<string, Json> {
  const out: Record<string, Json> = {};
  out.SummaryGroup = resource({ type: 'string', pattern: '^sg-[0-9a-f]{16}$' }, 'explorer-summary-groups', {
    type: 'object',
    required: ['count'],
    description: 'Each group field in kebab-case with its value as in a row (a datetime as its period\'s first instant; a list field as one element; '
      + 'null for the null group), `count`, and with `sum` the `sums`.',
    properties: {
      count: { type: 'integer', minimum: 1, description: 'Rows in the group.' },
      sums: { type: 'object', description: 'Present with `sum`: each summed field\'s total over the group\'s rows, null when every value is null.', additionalProperties: { type: ['number', 'null'] } },
    },
    additionalProperties: { type: ['string', 'number', 'boolean', 'null'] },
  });
  out.SummaryPage = pageOf('SummaryGroup', closed({
    pagination,
    rows: { type: 'integer', minimum: 0, description: 'Rows the filters matched.' },
    groups: { type: 'integer', minimum: 0, description: 'Groups in all.' },
  }));
  return out;
}

/** The health and readiness probes. */
function probeSchemas(): Record<string, Json> {
  const out: Record<string, Json> = {};
  out.Health = { type: 'object', required: ['status'], additionalProperties: false, properties: { status: { const: 'ok' } } };
  out.Readiness = {
    type: 'object',
    required: ['status', 'snapshot', 'pool', 'redis', 'draining'],
    properties: {
      status: { enum: ['ready', 'not ready'] },
      snapshot: {
        oneOf: [
          { type: 'object', required: ['status', 'id'], properties: { status: { const: 'ready' }, id: { type: 'string' } } },
          { type: 'object', required: ['status', 'id', 'error'], properties: { status: { const: 'broken' }, id: { type: 'string' }, error: { type: 'string' } } },
          { type: 'object', required: ['status'], properties: { status: { const: 'none' } } },
        ],
      },
      pool: { type: 'object', required: ['concurrency', 'queued'], properties: { concurrency: { type: 'integer' }, queued: { type: 'integer' } } },
      redis: { type: 'object', required: ['state'], properties: { state: { type: 'string', description: '`ready`, `connecting`, `down`, or `not configured`.' } } },
      draining: { type: 'boolean' },
    },
  };
  return out;
}
