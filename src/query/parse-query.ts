// The query string of endpoints 1 and 2 → a validated Query (docs/interface.md, interface §4–5).
import { badParameter } from '../errors.js';
import type { Query, QueryOrigin } from './query.js';
import { knownView, MAX_VALUES, validateQuery, type QueryDocument } from './validate.js';
import { VIEW_NAMES } from '../catalog/catalog.js';

const FILTER_KEY = /^filter\[([^\]]*)\]\[([^\]]*)\]\[([^\]]*)\]\[([^\]]*)\]$/;
const INDEX = /^\d+$/;
const FIELDS_KEY = /^fields\[([^\]]*)\]$/;

export interface ParsedRequest {
  query: Query;
  /** The parameters that links carry forward (interface §5): type, sort, fields and filters as received. */
  carried: [string, string][];
}

const splitList = (text: string) => text.split(',').map((s) => s.trim());

/** page[after] as received, or undefined for a numbered page; with page[number] too, a 400 naming `page`. */
export function readPageAfter(params: ReadonlyMap<string, string>): string | undefined {
  const after = params.get('page[after]');
  if (after !== undefined && params.has('page[number]')) {
    throw badParameter('page', 'Give page[number] or page[after], not both: page[after] walks the rows by cursor, page[number] by page number.');
  }
  return after;
}

/** Parses decoded query parameters; throws a 400 ApiError naming the offending parameter. */
export function parseQueryParameters(engine: string, params: Map<string, string>, across = false): ParsedRequest {
  const type = params.get('type');
  if (type === undefined) throw badParameter('type', `The parameter type is required: one of ${VIEW_NAMES.join(', ')}.`);
  const view = knownView(engine, type);
  if (!view) throw badParameter('type', `${JSON.stringify(type)} is not a view: use one of ${VIEW_NAMES.join(', ')}.`);

  const doc: QueryDocument = { filter: [] };
  const where = new Map<string, string>(); // document path prefix → parameter name
  const carried: [string, string][] = [['type', type]];
  let fieldsKey: string | undefined;

  for (const [key, value] of params) {
    if (key === 'filter' || key.startsWith('filter[')) {
      const m = FILTER_KEY.exec(key);
      if (!m || !INDEX.test(m[1]!) || !INDEX.test(m[4]!)) {
        throw badParameter(key, `${JSON.stringify(key)} is not a filter: use filter[<index>][<field>][<operator>][<value index>] with whole-number indexes.`);
      }
      where.set(`/filter/${doc.filter.length}`, key);
      doc.filter.push({ field: m[2]!, operator: m[3]!, value, group: BigInt(m[1]!).toString() });
      carried.push([key, value]);
      if (doc.filter.length > MAX_VALUES) throw badParameter('filter', `At most ${MAX_VALUES} filter values are allowed.`);
    } else if (key === 'fields' || FIELDS_KEY.test(key)) {
      const named = FIELDS_KEY.exec(key)?.[1];
      if (named !== undefined && !VIEW_NAMES.includes(named as never)) {
        throw badParameter(key, `${JSON.stringify(key)} names no view: use fields or fields[${type}].`);
      }
      if (named !== undefined && named !== type) continue; // a sparse fieldset for another type does not apply
      if (fieldsKey !== undefined) throw badParameter(key, `Give the field list once: both ${fieldsKey} and ${key} are present.`);
      fieldsKey = key;
      doc.fields = value === '' ? [] : splitList(value);
      where.set('/fields', key);
      carried.push([key, value]);
    } else if (key === 'sort') {
      doc.sort = value === '' ? [] : splitList(value);
      where.set('/sort', key);
      carried.push([key, value]);
    } else if (key === 'page[number]' || key === 'page[size]') {
      doc.page ??= {};
      doc.page[key === 'page[number]' ? 'number' : 'size'] = value;
    }
  }
  where.set('/page/number', 'page[number]');
  where.set('/page/size', 'page[size]');

  const origin: QueryOrigin = {
    locate(path) {
      for (let p = path; p !== ''; p = p.slice(0, p.lastIndexOf('/'))) {
        const parameter = where.get(p);
        if (parameter !== undefined) return { parameter };
      }
      return { parameter: path.split('/')[1] ?? 'query' };
    },
  };
  const query = validateQuery(engine, type, doc, origin, 400, across);
  const cursor = readPageAfter(params);
  return { query: cursor === undefined ? query : { ...query, page: { ...query.page, cursor } }, carried };
}
