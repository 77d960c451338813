// JSON Schemas derived from the catalog. The query validator compiles them at start-up for the
// configured engine; `npm run build` also writes the default-engine rendering to schemas/ for clients.
import { ALL_OPERATORS, ignoresValue, OPERATORS_BY_TYPE, VALUE_PATTERNS } from './operators.js';
import type { Catalog } from './catalog.js';
import type { FieldType, View } from './types.js';

type Schema = Record<string, unknown>;
const FIELD_TYPES: FieldType[] = ['string', 'number', 'boolean', 'datetime'];

/** One condition: a field, an operator its type supports, and a value of the field's type. */
function filterSchema(view: View): Schema {
  const rules: Schema[] = [];
  for (const type of FIELD_TYPES) {
    const names = view.fields.filter((f) => f.type === type).map((f) => f.name);
    if (names.length === 0) continue;
    const operators = OPERATORS_BY_TYPE[type];
    const pattern = VALUE_PATTERNS[type];
    const then: Schema = { properties: { operator: { enum: operators } } };
    if (pattern) {
      then.if = { properties: { operator: { enum: operators.filter((o) => !ignoresValue(o)) } } };
      then.then = { properties: { value: { type: 'string', pattern } } };
    }
    rules.push({ if: { properties: { field: { enum: names } } }, then });
  }
  return {
    type: 'object',
    required: ['field', 'operator', 'value'],
    properties: {
      field: { enum: view.fields.map((f) => f.name) },
      operator: { enum: ALL_OPERATORS },
      value: { type: 'string' },
    },
    allOf: rules,
  };
}

/** The id of a view's query schema: `query-<view>`, or `query-across-<view>` read across organizations. */
export const queryId = (view: View) => `query-${view.across ? 'across-' : ''}${view.name}`;

/** The normalized query of one view: what the query string and a saved view's body are both parsed into. */
export function viewQuerySchema(view: View): Schema {
  const names = view.fields.map((f) => f.name);
  return {
    $id: queryId(view),
    title: `A query of the ${view.name} view${view.across ? ' across organizations' : ''}`,
    type: 'object',
    required: ['filter'],
    properties: {
      fields: { type: 'array', minItems: 1, maxItems: 100, items: { enum: names } },
      sort: { type: 'array', minItems: 1, maxItems: 20, items: { enum: [...names, ...names.map((n) => `-${n}`)] } },
      filter: { type: 'array', maxItems: 100, items: filterSchema(view) },
      page: { $ref: 'page' },
    },
  };
}

/** The periods a summary groups a datetime by, in UTC (ISO weeks start on Monday): DuckDB's date_trunc parts. */
export const SUMMARY_PERIODS = ['day', 'week', 'month', 'year'] as const;
/** At most this many group fields in a summary. */
export const MAX_GROUP_FIELDS = 3;
/** At most this many summed fields, in a summary or a trend. */
export const MAX_SUMS = 5;

/**
 * A summary's `group_by` of one view, split at commas: one to three of the view's fields, a datetime with a
 * period (`workspace_created_at:month`), any other field by its name alone.
 */
export function summaryGroupSchema(view: View): Schema {
  const spellings = view.fields.flatMap((f) => (f.type === 'datetime' ? SUMMARY_PERIODS.map((p) => `${f.name}:${p}`) : [f.name]));
  return {
    $id: `summary-group-by-${view.across ? 'across-' : ''}${view.name}`,
    title: `The group_by of a summary of the ${view.name} view${view.across ? ' across organizations' : ''}`,
    type: 'array',
    minItems: 1,
    maxItems: MAX_GROUP_FIELDS,
    uniqueItems: true,
    items: { enum: spellings },
  };
}

/** page[number] and page[size] (interface §5), shared by queries and the saved-view list. */
export const PAGE_SCHEMA: Schema = {
  $id: 'page',
  title: 'Paging parameters',
  type: 'object',
  properties: {
    number: { type: 'string', pattern: '^0*[1-9]\\d*$' },
    size: { type: 'string', pattern: '^0*[1-9]\\d*$' },
  },
};

export function allSchemas(catalog: Catalog): Record<string, Schema> {
  const out: Record<string, Schema> = {
    page: PAGE_SCHEMA,
    'query-type': {
      $id: 'query-type',
      title: 'The view a query reads',
      type: 'string',
      enum: catalog.views.map((v) => v.name),
    },
  };
  for (const view of catalog.views) {
    out[queryId(view)] = viewQuerySchema(view);
    const across = catalog.across(view.name)!;
    out[queryId(across)] = viewQuerySchema(across);
  }
  return out;
}
