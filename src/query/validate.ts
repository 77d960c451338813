// Validates a normalized query document against the view's JSON Schema and turns it into a typed Query.
// Both the query string (endpoints 1, 2) and saved-view bodies (endpoints 4, 6) come through here.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { catalogFor, type Catalog } from '../catalog/catalog.js';
import { canonicalOperator, ignoresValue, OPERATORS_BY_TYPE, type Operator } from '../catalog/operators.js';
import { allSchemas, queryId } from '../catalog/schemas.js';
import type { Field, View } from '../catalog/types.js';
import { ApiError } from '../errors.js';
import { parseDatetime } from './values.js';
import { sortKeys, type BoundValue, type Condition, type Query, type QueryOrigin } from './query.js';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
export const MAX_CONDITIONS = 50;
export const MAX_VALUES = 100;

/** The shape every query is normalized into before validation (schemas/generated/query-<view>.schema.json). */
export interface QueryDocument {
  fields?: string[];
  sort?: string[];
  /** One entry per value; `group` ties the values of one (index, field, operator) together. */
  filter: { field: string; operator: string; value: string; group: string }[];
  page?: { number?: string; size?: string };
}

interface Validators {
  catalog: Catalog;
  byView: Map<string, ValidateFunction>;
  page: ValidateFunction;
}

/** 400 for query parameters, 422 for saved-view bodies; a function when one document mixes both. */
export type ErrorStatus = number | ((path: string) => number);
const validators = new Map<string, Validators>();

function validatorsFor(engine: string): Validators {
  let v = validators.get(engine);
  if (!v) {
    const catalog = catalogFor(engine);
    const ajv = new Ajv({ allErrors: false, strict: true, strictTypes: false });
    const byView = new Map<string, ValidateFunction>();
    const schemas = allSchemas(catalog);
    ajv.addSchema(schemas.page!);
    for (const view of catalog.views) {
      for (const v of [view, catalog.across(view.name)!]) byView.set(queryId(v), ajv.compile(schemas[queryId(v)]!));
    }
    v = { catalog, byView, page: ajv.getSchema('page')! };
    validators.set(engine, v);
  }
  return v;
}

export function invalid(origin: QueryOrigin, path: string, detail: string, statusOf: ErrorStatus = 400): ApiError {
  const where = origin.locate(path);
  const status = typeof statusOf === 'number' ? statusOf : statusOf(path);
  const title = status === 422 ? 'invalid saved view' : 'invalid query parameter';
  return new ApiError(status, title, detail, where.parameter !== undefined ? { parameter: where.parameter } : { pointer: where.pointer ?? path });
}

/** Turns the first schema error into a sentence about what the client sent. */
function describe(view: View, doc: QueryDocument, error: ErrorObject): { path: string; detail: string } {
  const path = error.instancePath;
  const [, section, indexText, member] = path.split('/');
  const index = Number(indexText);
  if (section === 'filter' && Number.isInteger(index)) {
    const f = doc.filter[index]!;
    const field = view.field(f.field);
    if (member === 'field' || !field) return { path, detail: `${JSON.stringify(f.field)} is not a field of the ${view.name} view. Fields: ${view.fields.map((x) => x.name).join(', ')}.` };
    if (member === 'operator') return { path, detail: `The operator ${JSON.stringify(f.operator)} does not apply to ${field.name} (a ${field.type} field). Operators: ${OPERATORS_BY_TYPE[field.type].join(', ')}.` };
    if (member === 'value') return { path, detail: `${JSON.stringify(f.value)} is not a valid ${field.type} value for ${field.name}: ${VALUE_HINT[field.type]}.` };
  }
  if (section === 'filter') return { path: '/filter', detail: `At most ${MAX_VALUES} filter values are allowed.` };
  if (section === 'fields' && indexText !== undefined) return { path, detail: `${JSON.stringify(doc.fields![index])} is not a field of the ${view.name} view. Fields: ${view.fields.map((x) => x.name).join(', ')}.` };
  if (section === 'fields') return { path, detail: error.keyword === 'maxItems' ? 'Name at most 100 fields.' : 'Name at least one field.' };
  if (section === 'sort' && indexText !== undefined) return { path, detail: `${JSON.stringify(doc.sort![index])} is not a sortable field of the ${view.name} view (a field name, optionally prefixed by "-").` };
  if (section === 'sort') return { path, detail: error.keyword === 'maxItems' ? 'Give at most 20 sort keys.' : 'Name at least one sort key.' };
  if (section === 'page') return { path, detail: `page[${indexText}] must be a whole number of at least 1.` };
  return { path, detail: `Invalid query: ${error.message ?? 'schema violation'}.` };
}

const VALUE_HINT: Record<string, string> = {
  boolean: 'use true or false',
  number: 'use digits with an optional leading - and decimal part, e.g. 42 or -1.5',
  datetime: 'use ISO 8601, YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS[.fff]] with an optional Z or ±HH:MM',
  string: 'any text',
};

const asciiFold = (s: string) => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

function bindValue(field: Field, operator: Operator, value: string): BoundValue | null {
  if (ignoresValue(operator)) return null;
  switch (field.type) {
    case 'boolean': return value.toLowerCase() === 'true';
    // Bound as text and cast to DOUBLE in SQL: a JS number past 2^63 would be bound as an out-of-range BIGINT.
    case 'number': return value;
    case 'datetime': return parseDatetime(value);
    case 'string': return operator === 'contains' || operator === 'does not contain' ? asciiFold(value) : value;
  }
}

function parsePositive(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : Number.POSITIVE_INFINITY;
}

/**
 * Validates `doc` for `viewName` and returns the typed query. `origin` names the client's parameters in
 * errors; `status` is 400 for query strings and 422 for saved-view bodies.
 */
export function validateQuery(engine: string, viewName: string, doc: QueryDocument, origin: QueryOrigin, status: ErrorStatus = 400, across = false): Query {
  const { catalog, byView } = validatorsFor(engine);
  const view = across ? catalog.across(viewName)! : catalog.view(viewName)!;
  for (const f of doc.filter) f.operator = canonicalOperator(f.operator);
  const validate = byView.get(queryId(view))!;
  if (!validate(doc)) {
    const { path, detail } = describe(view, doc, validate.errors![0]!);
    throw invalid(origin, path, detail, status);
  }
  const groups = new Map<string, Condition>();
  for (const [i, f] of doc.filter.entries()) {
    const field = view.field(f.field)!;
    const operator = f.operator as Operator;
    let value: BoundValue | null;
    try {
      value = bindValue(field, operator, f.value);
    } catch (e) {
      throw invalid(origin, `/filter/${i}/value`, `${JSON.stringify(f.value)} is not a valid ${field.type} value for ${field.name}: ${(e as Error).message}.`, status);
    }
    const key = `${f.group}\u0000${field.name}\u0000${operator}`;
    let condition = groups.get(key);
    if (!condition) groups.set(key, (condition = { field, operator, values: [] }));
    if (value !== null && !condition.values.some((v) => v === value)) condition.values.push(value);
  }
  if (groups.size > MAX_CONDITIONS) throw invalid(origin, '/filter', `At most ${MAX_CONDITIONS} filter conditions are allowed; got ${groups.size}.`, status);

  const named: Field[] = doc.fields ? [...new Set(doc.fields)].map((n) => view.field(n)!) : view.fields;
  let sort = sortKeys(view, doc.sort ?? view.defaultSort);
  // Across organizations (docs/access.md): organization_name is always a field, first; a sort on other fields
  // breaks its ties by it, then as each organization's own answer does (by row id). The view's default
  // order is organization_name and then the view's own (catalog.ts acrossOrganizations).
  const organization = across ? view.fields[0]! : undefined;
  const fields = organization ? [organization, ...named.filter((f) => f !== organization)] : named;
  if (organization) {
    if (!sort.some((k) => k.field === organization)) sort = [...sort, { field: organization, descending: false }];
    // A sort by organization_name alone leaves each organization's rows in that organization's default order.
    if (sort.every((k) => k.field === organization)) sort = [...sort, ...sortKeys(view, view.defaultSort.slice(1))];
  }

  return { view, fields, sort, conditions: [...groups.values()], page: pageOf(doc.page, origin, status) };
}

/** The effective page of already-validated paging parameters (interface §5, docs/decisions.md). */
function pageOf(page: QueryDocument['page'], origin: QueryOrigin, status: ErrorStatus): { number: number; size: number } {
  const number = parsePositive(page?.number, 1);
  if (!Number.isFinite(number)) throw invalid(origin, '/page/number', `page[number] must be at most ${Number.MAX_SAFE_INTEGER}.`, status);
  const size = Math.min(parsePositive(page?.size, DEFAULT_PAGE_SIZE), MAX_PAGE_SIZE);
  return { number, size };
}

/** Validates page[number] and page[size] of a request that has nothing else to validate (the saved-view list). */
export function validatePage(engine: string, params: Map<string, string>): { number: number; size: number } {
  const page: { number?: string; size?: string } = {};
  if (params.has('page[number]')) page.number = params.get('page[number]')!;
  if (params.has('page[size]')) page.size = params.get('page[size]')!;
  const origin: QueryOrigin = { locate: (path) => ({ parameter: path.endsWith('size') ? 'page[size]' : 'page[number]' }) };
  const validate = validatorsFor(engine).page;
  if (!validate(page)) {
    const which = validate.errors![0]!.instancePath.slice(1);
    throw invalid(origin, `/${which}`, `page[${which}] must be a whole number of at least 1.`);
  }
  return pageOf(page, { locate: (path) => origin.locate(path.replace('/page', '')) }, 400);
}

export function knownView(engine: string, name: string): View | undefined {
  return validatorsFor(engine).catalog.view(name);
}
