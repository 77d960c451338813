// The page's query model and its three spellings: the API's query string (docs/interface.md), the page's
// URL fragment (the same parameters plus the organization: a shareable link, never the token) and a saved
// view's stored query (§2.7, §4.3). Pure functions, no DOM.
import type { Catalog, WebView } from './catalog.js';

export interface Filter {
  field: string;
  operator: string;
  /** Several values: "any of" (or "none of" for negative operators); none for presence tests. */
  values: string[];
}

export interface UiQuery {
  type: string;
  filters: Filter[];
  /** null: every field of the view, in catalog order (no `fields` parameter). */
  fields: string[] | null;
  /** Sort keys as the API takes them (`-` for descending); empty: the view's default order. */
  sort: string[];
  page: number;
  size: number;
  /** A retained snapshot to read instead of the current one (time travel); a link carries it. */
  snapshot?: string;
}

export type Pairs = [string, string][];

export function emptyQuery(catalog: Catalog, type?: string, size?: number): UiQuery {
  const view = (type !== undefined ? catalog.view(type) : undefined) ?? catalog.defaultView;
  return { type: view.name, filters: [], fields: null, sort: [], page: 1, size: size ?? catalog.data.page.defaultSize };
}

export function cloneQuery(q: UiQuery): UiQuery {
  return { ...q, filters: q.filters.map((f) => ({ ...f, values: [...f.values] })), fields: q.fields ? [...q.fields] : null, sort: [...q.sort] };
}

/** A new filter on the view's first field with its type's first operator. */
export function newFilter(catalog: Catalog, view: WebView, fieldName?: string): Filter {
  const field = (fieldName !== undefined ? catalog.field(view, fieldName) : undefined) ?? view.fields[0]!;
  const operator = catalog.operators(field.type)[0]!;
  return { field: field.name, operator, values: initialValues(catalog, field.type, operator) };
}

export function initialValues(catalog: Catalog, type: string, operator: string): string[] {
  if (catalog.ignoresValue(operator)) return [];
  return [type === 'boolean' ? 'true' : ''];
}

/** The API's query parameters, in a stable order. Filter i is the i-th filter; its values are j = 0, 1, … */
export function apiParams(catalog: Catalog, q: UiQuery, paging: 'all' | 'none' | 'non-default'): Pairs {
  const out: Pairs = [['type', q.type]];
  q.filters.forEach((f, i) => {
    // A presence test ignores its value, but the key must be there: one empty value (interface §4).
    const values = catalog.ignoresValue(f.operator) ? [''] : f.values;
    values.forEach((v, j) => out.push([`filter[${i}][${f.field}][${f.operator}][${j}]`, v]));
  });
  if (q.fields) out.push(['fields', q.fields.join(',')]);
  if (q.sort.length > 0) out.push(['sort', q.sort.join(',')]);
  if (q.snapshot !== undefined) out.push(['snapshot', q.snapshot]);
  if (paging === 'all' || (paging === 'non-default' && q.page !== 1)) out.push(['page[number]', String(q.page)]);
  if (paging === 'all' || (paging === 'non-default' && q.size !== catalog.data.page.defaultSize)) out.push(['page[size]', String(q.size)]);
  return out;
}

/** Percent-encodes keys and values (brackets, commas and spaces included). */
export function encodePairs(pairs: Pairs): string {
  return pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
}

export function decodePairs(text: string): Pairs {
  const out: Pairs = [];
  for (const part of text.replace(/^[#?]/, '').split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const dec = (s: string) => { try { return decodeURIComponent(s.replace(/\+/g, ' ')); } catch { return s; } };
    out.push([dec(eq < 0 ? part : part.slice(0, eq)), dec(eq < 0 ? '' : part.slice(eq + 1))]);
  }
  return out;
}

const FILTER_KEY = /^filter\[(\d+)\]\[([^\]]+)\]\[([^\]]+)\]\[(\d+)\]$/;
const positive = (text: string | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER) => {
  const n = Number(text);
  return text !== undefined && /^\d+$/.test(text) && n >= 1 ? Math.min(n, max) : fallback;
};
const canonical = (op: string) => (op === 'does_not_contain' ? 'does not contain' : op);

export interface ParsedLink {
  organization: string | null;
  /** A saved view's id (`view=`): the link opens that view as it is saved now, whatever else it holds. */
  savedView: string | null;
  query: UiQuery;
  /** What the link held that this page cannot show (unknown fields or operators), for the status line. */
  dropped: string[];
}

/** Reads a page URL fragment (or query string) written by `linkOf`, or by hand in the API's own syntax. */
export function parseLink(catalog: Catalog, text: string): ParsedLink {
  const pairs = decodePairs(text);
  const get = (k: string) => pairs.find(([key]) => key === k)?.[1];
  const dropped: string[] = [];
  const typeName = get('type');
  const view = (typeName !== undefined ? catalog.view(typeName) : undefined) ?? catalog.defaultView;
  if (typeName !== undefined && typeName !== view.name) dropped.push(`view ${typeName}`);
  const groups = new Map<string, { index: number; order: number; filter: Filter; values: [number, string][] }>();
  pairs.forEach(([key, value], order) => {
    const m = FILTER_KEY.exec(key);
    if (!m) return;
    const [, index, fieldName, op] = m as unknown as [string, string, string, string, string];
    const operator = canonical(op);
    const field = catalog.field(view, fieldName);
    if (!field || !catalog.operators(field.type).includes(operator)) {
      dropped.push(`filter ${fieldName} ${operator}`);
      return;
    }
    const id = `${index}\u0000${fieldName}\u0000${operator}`;
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { index: Number(index), order, filter: { field: fieldName, operator, values: [] }, values: [] }));
    g.values.push([Number(m[4]), value]);
  });
  const filters = [...groups.values()]
    .sort((a, b) => a.index - b.index || a.order - b.order)
    .map((g) => ({ ...g.filter, values: catalog.ignoresValue(g.filter.operator) ? [] : g.values.sort((a, b) => a[0] - b[0]).map(([, v]) => v) }));
  const fieldsText = get('fields') ?? get(`fields[${view.name}]`);
  let fields: string[] | null = null;
  if (fieldsText !== undefined) {
    const names = [...new Set(fieldsText.split(',').map((s) => s.trim()).filter((s) => s !== ''))];
    const known = names.filter((n) => catalog.field(view, n));
    for (const n of names) if (!known.includes(n)) dropped.push(`field ${n}`);
    fields = known.length > 0 && !isEveryField(known, view) ? known : null;
  }
  const snapshot = get('snapshot');
  const sortText = get('sort');
  const sort = sortText === undefined ? [] : sortText.split(',').map((s) => s.trim()).filter((s) => {
    const ok = s !== '' && catalog.field(view, s.replace(/^-/, '')) !== undefined;
    if (!ok && s !== '') dropped.push(`sort ${s}`);
    return ok;
  });
  return {
    organization: get('org') ?? null,
    savedView: get('view') || null,
    query: {
      type: view.name,
      filters,
      fields,
      sort,
      page: positive(get('page[number]'), 1),
      size: positive(get('page[size]'), catalog.data.page.defaultSize, catalog.data.page.maxSize),
      ...(snapshot !== undefined && snapshot !== '' ? { snapshot } : {}),
    },
    dropped,
  };
}

/** The page URL fragment for a query: the organization and the API's own parameters, never the token. */
export function linkOf(catalog: Catalog, organization: string, q: UiQuery, savedView: string | null = null): string {
  return encodePairs([['org', organization], ...(savedView === null ? [] : [['view', savedView] as [string, string]]), ...apiParams(catalog, q, 'non-default')]);
}

// ---- saved views (§2.7, §4.3) ----

export interface StoredQuery {
  filter?: { field: string; operator: string; value: string[] }[];
  fields?: string[];
  sort?: string[];
  type?: string;
}

export interface SavedViewResource {
  id: string;
  type: string;
  attributes: { name: string; 'created-at': string; 'updated-at'?: string; query: StoredQuery; 'query-type': string };
}

export function storedQueryOf(catalog: Catalog, q: UiQuery): StoredQuery {
  const out: StoredQuery = {
    filter: q.filters.map((f) => ({ field: f.field, operator: f.operator, value: catalog.ignoresValue(f.operator) ? [] : [...f.values] })),
  };
  if (q.fields) out.fields = [...q.fields];
  if (q.sort.length > 0) out.sort = [...q.sort];
  return out;
}

/** A saved view's query as the page's query, first page, keeping the page size the user chose. */
export function queryOfSaved(catalog: Catalog, saved: SavedViewResource, size: number): UiQuery {
  const type = saved.attributes['query-type'];
  const stored = saved.attributes.query;
  const view = catalog.view(type);
  return {
    type,
    filters: (stored.filter ?? []).map((f) => ({ field: f.field, operator: canonical(f.operator), values: catalog.ignoresValue(canonical(f.operator)) ? [] : [...f.value] })),
    fields: stored.fields && !(view && isEveryField(stored.fields, view)) ? [...stored.fields] : null,
    sort: stored.sort ? [...stored.sort] : [],
    page: 1,
    size,
  };
}

/** Every field of the view in catalog order: the same as no `fields` at all. */
export const isEveryField = (names: string[], view: WebView) =>
  names.length === view.fields.length && names.every((n, i) => view.fields[i]?.name === n);

// ---- columns ----

/**
 * The table's column order for the fields a query shows: the view's identifying fields that are among them
 * first, then the others in the query's order (the catalog's unless the query names its own). Only the
 * table: the query, its link, the API's answer and the CSV keep the query's order.
 */
export function columnOrder(view: Pick<WebView, 'identifying'>, names: readonly string[]): string[] {
  const leading = view.identifying.filter((n) => names.includes(n));
  return [...leading, ...names.filter((n) => !leading.includes(n))];
}

// ---- sorting by column headers ----

export const sortKeysOf = (q: UiQuery, view: WebView): string[] => (q.sort.length > 0 ? q.sort : view.defaultSort);
const nameOfKey = (key: string) => key.replace(/^-/, '');

/**
 * A click on a column header: the column becomes the only sort key, ascending, or flips when it already is
 * the first key. With `additive` (shift-click) it is appended, or flips where it stands.
 */
export function toggleSort(keys: string[], field: string, additive: boolean): string[] {
  const at = keys.findIndex((k) => nameOfKey(k) === field);
  const flip = (k: string) => (k.startsWith('-') ? nameOfKey(k) : `-${k}`);
  if (!additive) return at === 0 ? [flip(keys[0]!)] : [field];
  if (at < 0) return [...keys, field];
  return keys.map((k, i) => (i === at ? flip(k) : k));
}

/** The direction and position (0-based) of `field` in the sort keys, if it is one. */
export function sortStateOf(keys: string[], field: string): { descending: boolean; position: number } | null {
  const position = keys.findIndex((k) => nameOfKey(k) === field);
  return position < 0 ? null : { descending: keys[position]!.startsWith('-'), position };
}
