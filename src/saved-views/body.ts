// The body of a create (POST) or update (PATCH) request → a validated saved-view change (interface §8).
// The envelope is checked by schemas/saved-view-body.schema.json; the query by the view's query schema.
import { Ajv, type ValidateFunction } from 'ajv';
import { readFileSync } from 'node:fs';
import { VIEW_NAMES } from '../catalog/catalog.js';
import type { SavedQuery, SavedView } from '../store/state-store.js';
import { escapePointer, invalidBody, normalizeFilters, storedQuery, validateSavedQuery, type QuerySource } from './saved-query.js';

// Compiled when the module loads, so that a broken schema stops the server at start, not a request.
// strictRequired is off: `if: {required: ["attributes"]}` tests a member that only the branches declare.
const envelope: ValidateFunction = new Ajv({ allErrors: false, strict: true, strictTypes: false, strictRequired: false })
  .compile(JSON.parse(readFileSync(new URL('../../../schemas/saved-view-body.schema.json', import.meta.url), 'utf8')));

export interface SavedViewChange {
  name: string;
  queryType: string;
  query: SavedQuery;
}

type Obj = Record<string, unknown>;

const TYPE_NAMES: Record<string, string> = { object: 'an object', array: 'an array', string: 'a string' };

function checkEnvelope(body: unknown): void {
  const validate = envelope;
  if (validate(body)) return;
  // With if/then/else, ajv also reports the failed branch itself; the first error is the precise one.
  const e = validate.errors![0]!;
  if (e.keyword === 'required') {
    const missing = (e.params as { missingProperty: string }).missingProperty;
    throw invalidBody(`${e.instancePath}/${missing}`, `${missing} is required.`);
  }
  if (e.keyword === 'const') throw invalidBody(e.instancePath, 'data.type must be "explorer-saved-queries".');
  if (e.keyword === 'type') throw invalidBody(e.instancePath, `Must be ${TYPE_NAMES[(e.params as { type: string }).type] ?? (e.params as { type: string }).type}.`);
  if (e.keyword === 'additionalProperties') {
    const extra = (e.params as { additionalProperty: string }).additionalProperty;
    throw invalidBody(`${e.instancePath}/${extra}`, `A filter is {"field", "operator", "value": [...]} or {"<field>": {"<operator>": [...]}}; ${JSON.stringify(extra)} does not belong.`);
  }
  if (e.keyword === 'maxItems') throw invalidBody(e.instancePath, `At most ${(e.params as { limit: number }).limit} filters are allowed.`);
  if (e.keyword === 'minProperties') throw invalidBody(e.instancePath, 'Must not be empty.');
  if (e.keyword === 'oneOf' || e.keyword === 'maxProperties') throw invalidBody(e.instancePath, 'fields is a list of field names or {"<view>": [names]}.');
  throw invalidBody(e.instancePath, `Invalid: ${e.message ?? e.keyword}.`);
}

/**
 * Parses and validates a body. `current` is the view being updated (undefined on create): update requires
 * name and query, and the view type cannot change.
 */
export function parseSavedViewBody(engine: string, body: unknown, current?: SavedView): SavedViewChange {
  checkEnvelope(body);
  const data = (body as { data: Obj }).data;
  const jsonapi = 'attributes' in data;
  const base = jsonapi ? '/data/attributes' : '/data';
  const members = (jsonapi ? data.attributes : data) as Obj;

  if (members.name === undefined) throw invalidBody(`${base}/name`, 'name is required.');
  const name = (members.name as string).trim();
  const length = [...name].length;
  if (length < 1 || length > 255) throw invalidBody(`${base}/name`, 'name must be 1 to 255 characters long, not counting surrounding spaces.');

  const typeKeys = jsonapi ? ['query-type', 'query_type'] : ['query_type'];
  const given = typeKeys.filter((k) => members[k] !== undefined);
  const typePointer = `${base}/${given[0] ?? typeKeys[0]}`;
  if (given.length === 2 && members[given[0]!] !== members[given[1]!]) throw invalidBody(`${base}/${given[1]}`, 'query-type and query_type disagree.');
  let queryType = given.length > 0 ? (members[given[0]!] as string) : current?.queryType;
  if (queryType === undefined) throw invalidBody(typePointer, `${typeKeys[0]} is required: one of ${VIEW_NAMES.join(', ')}.`);
  if (!VIEW_NAMES.includes(queryType as never)) throw invalidBody(typePointer, `${JSON.stringify(queryType)} is not a view: use one of ${VIEW_NAMES.join(', ')}.`);
  if (current && queryType !== current.queryType) throw invalidBody(typePointer, `The view type of a saved view cannot change (it is ${current.queryType}).`);

  if (members.query === undefined) throw invalidBody(`${base}/query`, 'query is required.');
  const query = members.query as Obj;
  const q = `${base}/query`;
  if (query.type !== undefined && query.type !== queryType) {
    throw invalidBody(`${q}/type`, `query.type ${JSON.stringify(query.type)} differs from the view type ${queryType}.`);
  }
  queryType = queryType as string;

  let fields: QuerySource['fields'];
  if (Array.isArray(query.fields)) fields = { names: query.fields as string[], pointer: `${q}/fields` };
  else if (query.fields !== undefined) {
    const [key, names] = Object.entries(query.fields as Record<string, string[]>)[0]!;
    if (key !== queryType) throw invalidBody(`${q}/fields/${escapePointer(key)}`, `fields names view ${JSON.stringify(key)}, but the saved view reads ${queryType}.`);
    fields = { names, pointer: `${q}/fields/${escapePointer(key)}` };
  }
  const source: QuerySource = {
    filters: normalizeFilters(query.filter as Obj[], `${q}/filter`),
    fields,
    sort: query.sort !== undefined ? { keys: query.sort as string[], pointer: `${q}/sort` } : undefined,
    filterPointer: `${q}/filter`,
  };
  validateSavedQuery(engine, queryType, source);
  return { name, queryType, query: storedQuery(queryType, source) };
}
