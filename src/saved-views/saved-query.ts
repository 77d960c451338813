// A saved view's query in its stored (documented, §2.7) shape ↔ the normalized document that the query
// validator checks. Bodies (endpoints 4, 6) and re-runs (endpoints 8, 9) both go through here, so a
// saved view is validated exactly like an ad-hoc query of endpoint 1.
import { ignoresValue, canonicalOperator, type Operator } from '../catalog/operators.js';
import { ApiError } from '../errors.js';
import type { Query, QueryOrigin } from '../query/query.js';
import { validateQuery, type ErrorStatus, type QueryDocument } from '../query/validate.js';
import type { SavedQuery, SavedQueryFilter } from '../store/state-store.js';

/** JSON Pointer escaping (RFC 6901). */
export const escapePointer = (token: string) => token.replace(/~/g, '~0').replace(/\//g, '~1');

export const invalidBody = (pointer: string, detail: string) => new ApiError(422, 'invalid saved view', detail, { pointer });

/** A filter as stored, with pointers to where each of its members was in the body. */
export interface LocatedFilter {
  filter: SavedQueryFilter;
  at: { entry: string; field: string; operator: string; value: string };
}

/** Both filter entry shapes of interface §8: {field, operator, value} and {"<field>": {"<op>": [...]}}. */
export function normalizeFilters(entries: Record<string, unknown>[], pointer: string): LocatedFilter[] {
  const out: LocatedFilter[] = [];
  entries.forEach((entry, i) => {
    const at = `${pointer}/${i}`;
    if ('field' in entry) {
      const f = entry as unknown as SavedQueryFilter;
      out.push({ filter: { field: f.field, operator: canonicalOperator(f.operator), value: f.value }, at: { entry: at, field: `${at}/field`, operator: `${at}/operator`, value: `${at}/value` } });
      return;
    }
    for (const [field, ops] of Object.entries(entry as Record<string, Record<string, string[]>>)) {
      for (const [operator, value] of Object.entries(ops)) {
        const fieldAt = `${at}/${escapePointer(field)}`;
        const opAt = `${fieldAt}/${escapePointer(operator)}`;
        out.push({ filter: { field, operator: canonicalOperator(operator), value }, at: { entry: at, field: fieldAt, operator: opAt, value: opAt } });
      }
    }
  });
  return out;
}

export interface QuerySource {
  filters: LocatedFilter[];
  fields?: { names: string[]; pointer: string };
  sort?: { keys: string[]; pointer: string };
  /** Pointer of query.filter itself (for "too many" errors). */
  filterPointer: string;
}

/**
 * Validates a saved query against its view and returns the typed Query. `page` comes from the query
 * string on re-runs (400 on error); everything else from the saved view (422, with body pointers).
 */
export function validateSavedQuery(engine: string, view: string, source: QuerySource, page: { number?: string; size?: string } = {}): Query {
  const doc: QueryDocument = { filter: [], page };
  const where = new Map<string, string>();
  source.filters.forEach(({ filter, at }, group) => {
    // A condition that tests presence has no value; every other needs at least one.
    const values = filter.value.length === 0 && ignoresValue(filter.operator as Operator) ? [''] : filter.value;
    if (values.length === 0) throw invalidBody(at.value, `The filter on ${JSON.stringify(filter.field)} needs at least one value.`);
    values.forEach((value, j) => {
      const k = doc.filter.length;
      doc.filter.push({ field: filter.field, operator: filter.operator, value, group: String(group) });
      where.set(`/filter/${k}`, at.entry);
      where.set(`/filter/${k}/field`, at.field);
      where.set(`/filter/${k}/operator`, at.operator);
      where.set(`/filter/${k}/value`, `${at.value}/${j}`);
    });
  });
  where.set('/filter', source.filterPointer);
  if (source.fields) {
    doc.fields = source.fields.names;
    where.set('/fields', source.fields.pointer);
    source.fields.names.forEach((_, i) => where.set(`/fields/${i}`, `${source.fields!.pointer}/${i}`));
  }
  if (source.sort) {
    doc.sort = source.sort.keys;
    where.set('/sort', source.sort.pointer);
    source.sort.keys.forEach((_, i) => where.set(`/sort/${i}`, `${source.sort!.pointer}/${i}`));
  }
  const origin: QueryOrigin = {
    locate(path) {
      if (path.startsWith('/page/')) return { parameter: `page[${path.slice(6)}]` };
      return { pointer: where.get(path) ?? where.get(path.replace(/\/[^/]*$/, '')) ?? source.filterPointer.replace(/\/filter$/, '') };
    },
  };
  const status: ErrorStatus = (path) => (path.startsWith('/page') ? 400 : 422);
  return validateQuery(engine, view, doc, origin, status);
}

/** The stored shape: canonical operators, fields without duplicates. */
export function storedQuery(view: string, source: QuerySource): SavedQuery {
  const query: SavedQuery = { type: view, filter: source.filters.map((f) => f.filter) };
  if (source.fields) query.fields = [...new Set(source.fields.names)];
  if (source.sort) query.sort = source.sort.keys;
  return query;
}

/** A stored query as a QuerySource, for re-running it; pointers name the saved view's attributes. */
export function sourceOfStored(query: SavedQuery): QuerySource {
  const base = '/data/attributes/query';
  return {
    filters: normalizeFilters(query.filter as unknown as Record<string, unknown>[], `${base}/filter`),
    fields: query.fields ? { names: query.fields, pointer: `${base}/fields` } : undefined,
    sort: query.sort ? { keys: query.sort, pointer: `${base}/sort` } : undefined,
    filterPointer: `${base}/filter`,
  };
}
