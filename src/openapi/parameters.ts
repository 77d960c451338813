// Parameters of the OpenAPI document. Query parameters of the explorer routes take their schemas from the
// catalog (src/openapi/schemas.ts): the view enum, per-view sort and field lists, per-view filters.
import type { Catalog } from '../catalog/catalog.js';
import type { Json } from './schemas.js';
import { ref } from './schemas.js';

export const paramRef = (name: string): Json => ({ $ref: `#/components/parameters/${name}` });

export const PAGE_PARAMETERS = ['page.number', 'page.size'];
/** The paging of a route read from a snapshot: by number or by cursor (docs/data-out.md). */
export const CURSOR_PAGE_PARAMETERS = [...PAGE_PARAMETERS, 'page.after'];

/** Parameters that pick the snapshot a query reads (docs/history.md §3). */
export const TIME_TRAVEL_PARAMETERS = ['snapshot', 'as_of'];
/** Parameters that pick the two snapshots a change set compares (docs/history.md §4). */
export const CHANGE_PAIR_PARAMETERS = ['from', 'to', 'from_as_of', 'to_as_of'];
/** Parameters of a trend (docs/history.md §5). */
export const TREND_PARAMETERS = ['sum', 'since'];
/** Parameters of a summary (docs/summaries.md). */
export const SUMMARY_PARAMETERS = ['group_by', 'sum', 'summary.sort'];

/** Component names of the query parameters of endpoints 1 and 2 (interface §4–5). */
export function queryParameterNames(catalog: Catalog, paged: boolean, across = false): string[] {
  const a = across ? '.across' : '';
  return ['type', `filter${a}`, `sort${a}`, `fields${a}`, ...catalog.views.map((v) => `fields${a}.${v.name}`), ...(paged ? CURSOR_PAGE_PARAMETERS : [])];
}

type In = 'path' | 'query' | 'header';

/** One parameter: `in` where, a string unless `schema` says otherwise, required only in the path unless `required` says so. */
function parameter(name: string, where: In, description: string, more: { schema?: Json; required?: boolean; examples?: Json; style?: Json } = {}): Json {
  return {
    name, in: where, required: more.required ?? where === 'path',
    ...(more.style ?? {}),
    description,
    schema: more.schema ?? { type: 'string' },
    ...(more.examples ? { examples: more.examples } : {}),
  };
}
const single = (value: string): Json => ({ id: { value } });

export function componentParameters(catalog: Catalog): Record<string, Json> {
  const out: Record<string, Json> = {
    organization_name: parameter('organization_name', 'path', 'Name of the organization. An unknown one and one the token may not explore answer the same 404.'),
    view_id: parameter('view_id', 'path', 'Id of a saved view of the organization (`sq-` and 16 base-62 characters); any other answers 404.',
      { examples: single('sq-3kTMd9Qz1bX8yVwA') }),
    nc_id: parameter('nc_id', 'path', 'Id of a notification configuration of the saved view (`nc-` and 16 base-62 characters); any other answers 404.',
      { examples: single('nc-8Fq2Lm0Zc7Rt1KwP') }),
    asset: parameter('asset', 'path', 'A file name of the built page: letters, digits, `_` and `-` in dot-separated parts, with a known extension.',
      { schema: { type: 'string', pattern: '^[A-Za-z0-9_-]+(?:\\.[A-Za-z0-9_-]+)*\\.(?:html|js|css|json|svg|png)$' } }),
    type: parameter('type', 'query', 'The view to query.', { required: true, schema: ref('ViewType') }),
    filter: parameter('filter', 'query', 'Filters, one parameter per value: `filter[<i>][<field>][<operator>][<j>]=<value>` (i, j whole numbers; '
      + 'percent-encode brackets and spaces). Fields are those of the view named by `type` and operators those of the field\'s type '
      + '(see the Filter.<view> and FieldFilter.<type> schemas). Every condition is ANDed, whether they share an index or not; '
      + 'several values j of one condition mean "any of", or "none of" for is_not and does not contain. An unknown field or '
      + 'operator, or a value that does not parse, is a 400 naming the whole key.', {
      style: { style: 'deepObject', explode: true },
      schema: ref('Filter'),
      examples: Object.fromEntries(catalog.views.map((v) => {
        const f = v.fields.find((x) => x.type === 'string') ?? v.fields[0]!;
        return [v.name, { summary: `${v.name}: ${f.name} contains "a"`, value: { 0: { [f.name]: { contains: { 0: 'a' } } } } }];
      })),
    }),
    sort: parameter('sort', 'query', 'Sort keys of the view named by `type`, comma-separated, each optionally prefixed by `-` (descending). '
      + 'The default depends on the view; every order ends with the row id ascending.', { schema: ref('Sort') }),
    fields: parameter('fields', 'query', 'Fields to return, comma-separated, in the order wanted (CSV columns follow it). Give it once: `fields` or `fields[<type>]`, not both. Default: every field of the view, alphabetically.',
      { schema: ref('Fields') }),
    'page.number': parameter('page[number]', 'query', 'Page to return; default 1.', { schema: ref('PageNumber') }),
    'page.size': parameter('page[size]', 'query', 'Rows per page; default 20, clamped to 100.', { schema: ref('PageSize') }),
    'page.after': parameter('page[after]', 'query', 'Cursor paging instead of `page[number]` (both is a 400 naming `page`): empty for the first page, then the cursor in '
      + '`links.next`. The page holds the rows after the row the cursor names, in the request\'s sort, found by the sort keys: rows added '
      + 'or removed before it do not shift it. A cursor is opaque, bound to the organization, route, type, filters and sort it came from '
      + '(`page[size]` and `fields` may change), and reads the snapshots it began on; a cursor of another walk, a damaged one, or one '
      + 'whose snapshot is no longer retained is a 400 naming `page[after]`.', { schema: { type: 'string', pattern: '^[A-Za-z0-9_-]*$' } }),
    snapshot: parameter('snapshot', 'query', 'Answer from this retained snapshot (an id from GET …/explorer/snapshots) instead of the current one. '
      + 'Not with `as_of`. An id that is unknown, removed, or of a snapshot without this organization is a 400 naming `snapshot`.'),
    as_of: parameter('as_of', 'query', 'Answer from the newest retained snapshot loaded at or before this datetime (filter datetime syntax; no offset means UTC). '
      + 'Not with `snapshot`. Before every retained snapshot is a 400 naming `as_of`.', { examples: { utc: { value: '2026-11-20T09:00:00Z' } } }),
    from: parameter('from', 'query', 'The snapshot compared from; default: the retained snapshot loaded just before `to`. Must be older than `to`.'),
    to: parameter('to', 'query', 'The snapshot compared to; default: the current one.'),
    from_as_of: parameter('from_as_of', 'query', 'Like `from`, by datetime as `as_of` picks one. Not with `from`.'),
    to_as_of: parameter('to_as_of', 'query', 'Like `to`, by datetime as `as_of` picks one. Not with `to`.'),
    sum: parameter('sum', 'query', 'Number fields of the view to sum over the matching rows of each trend point or summary group, comma-separated, each once, at most 5.',
      { examples: { workspaces: { value: 'resource_count,current_rum_count' } } }),
    group_by: parameter('group_by', 'query', 'One to three fields of the view named by `type`, comma-separated, each once. A datetime is grouped by a period after a colon '
      + '(`workspace_created_at:month`: `day`, `week` (ISO, from Monday), `month` or `year`, in UTC); any other field by its name alone. '
      + 'A list field (`tags`, `providers`, `modules`, `workspaces`) groups by each of its elements, so a row may count in several groups.',
      { required: true, examples: { project: { value: 'project_name' }, tags: { value: 'tags' }, month: { value: 'workspace_created_at:month' } } }),
    'summary.sort': parameter('sort', 'query', 'Sort keys of the groups, comma-separated, each optionally prefixed by `-`: `count`, a grouped field by its name (without its period), '
      + 'or `sum_<field>` of a summed field. Default `-count`, then each group field ascending; ties always end by the group fields ascending, nulls last.',
      { examples: { largest: { value: '-count' }, billed: { value: '-sum_current_rum_count' } } }),
    since: parameter('since', 'query', 'Leave out the points loaded before this datetime (one loaded exactly then stays).'),
    'If-None-Match': parameter('If-None-Match', 'header', 'An `ETag` of an earlier response: when it still matches, the answer is 304 without a body (and a query is not run).'),
    'X-Request-Id': parameter('X-Request-Id', 'header', 'A request id to log and echo back; used when it matches the pattern, replaced otherwise.',
      { schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' } }),
  };
  for (const view of catalog.views.map((v) => v.name)) {
    out[`fields.${view}`] = parameter(`fields[${view}]`, 'query', `Like \`fields\`, as a JSON:API sparse fieldset: applies when \`type\` is ${view} and is ignored otherwise.`,
      { schema: ref(`Fields.${view}`) });
  }
  // The same parameters across organizations, where every view has organization_name first (docs/access.md).
  const across = ' Across organizations every view has `organization_name` first, as a field like any other.';
  for (const name of ['filter', 'sort', 'fields', ...catalog.views.map((v) => `fields.${v.name}`)]) {
    const schema = `${name === 'filter' ? 'Filter' : name === 'sort' ? 'Sort' : 'Fields'}${name.includes('.') ? `.across.${name.split('.')[1]}` : 'Across'}`;
    out[`${name.split('.')[0]}.across${name.includes('.') ? `.${name.split('.')[1]}` : ''}`] = { ...out[name]!, description: `${out[name]!.description}${across}`, schema: ref(schema) };
  }
  return out;
}
