// A summary request (docs/summaries.md): the rows a query's filters select, counted and summed by up to
// three group fields. Parsed here from `group_by`, `sum` and `sort`; the filters and paging are a query's.
import { Ajv, type ValidateFunction } from 'ajv';
import { MAX_GROUP_FIELDS, MAX_SUMS, SUMMARY_PERIODS, summaryGroupSchema } from '../catalog/schemas.js';
import type { Field, View } from '../catalog/types.js';
import { badParameter } from '../errors.js';
import type { Query } from './query.js';

export type Period = (typeof SUMMARY_PERIODS)[number];

export interface GroupKey {
  field: Field;
  /** A datetime field's period; absent for any other type. */
  period?: Period;
  /** As written in `group_by` (`workspace_created_at:month`): part of each group's id. */
  spelling: string;
}

/** `count`, a group field (its index in `groups`) or a summed field (its index in `sums`). */
export type SummarySortKey = { descending: boolean } & ({ by: 'count' } | { by: 'group'; index: number } | { by: 'sum'; index: number });

export interface Summary {
  /** The rows summarized: the query's view and conditions; its page is the page of groups. */
  query: Query;
  groups: GroupKey[];
  sums: Field[];
  sort: SummarySortKey[];
}

/** The parameters a summary adds to a query's; a query's own `sort` and `fields` do not apply to one. */
export const SUMMARY_PARAMETERS = ['group_by', 'sum', 'sort'] as const;

const split = (text: string) => (text === '' ? [] : text.split(',').map((s) => s.trim()));

const validators = new Map<string, ValidateFunction>();
function groupValidator(engine: string, view: View): ValidateFunction {
  const key = `${engine}\u0000${view.name}\u0000${view.across === true}`;
  let validate = validators.get(key);
  if (!validate) {
    validate = new Ajv({ allErrors: false, strict: true }).compile(summaryGroupSchema(view));
    validators.set(key, validate);
  }
  return validate;
}

/** Why one `group_by` entry is not one of the view's spellings, in words. */
function unknownGroup(view: View, entry: string): string {
  const [name, period, ...more] = entry.split(':');
  const field = view.field(name!);
  const periods = SUMMARY_PERIODS.join(', ');
  if (!field) return `${JSON.stringify(name)} is not a field of the ${view.name} view. Fields: ${view.fields.map((f) => f.name).join(', ')}.`;
  if (field.type !== 'datetime') return `${field.name} is a ${field.type} field: only a datetime is grouped by a period.`;
  if (period === undefined) return `${field.name} is a datetime: group it by a period, e.g. ${field.name}:month (one of ${periods}).`;
  return `${JSON.stringify(more.length > 0 ? [period, ...more].join(':') : period)} is not a period: use one of ${periods}.`;
}

/** `group_by`: one to three fields of the view, each once, a datetime with its period. */
export function parseGroupBy(engine: string, view: View, raw: string | undefined): GroupKey[] {
  if (raw === undefined) throw badParameter('group_by', `The parameter group_by is required: one to ${MAX_GROUP_FIELDS} fields of ${view.name}, comma-separated.`);
  const entries = split(raw);
  const validate = groupValidator(engine, view);
  const valid: boolean = validate(entries);
  if (!valid) {
    const error = validate.errors![0]!;
    if (error.keyword === 'minItems') throw badParameter('group_by', 'group_by names no field: give one to three.');
    if (error.keyword === 'maxItems') throw badParameter('group_by', `At most ${MAX_GROUP_FIELDS} fields can be grouped by; got ${entries.length}.`);
    if (error.keyword === 'uniqueItems') throw badParameter('group_by', 'Each field can be grouped by once only.');
    throw badParameter('group_by', unknownGroup(view, entries[Number(error.instancePath.slice(1))]!));
  }
  const groups = entries.map((spelling): GroupKey => {
    const [name, period] = spelling.split(':');
    return { field: view.field(name!)!, ...(period === undefined ? {} : { period: period as Period }), spelling };
  });
  const seen = new Set<Field>();
  for (const g of groups) {
    if (seen.has(g.field)) throw badParameter('group_by', `${g.field.name} is grouped by twice: each field can be grouped by once only.`);
    seen.add(g.field);
  }
  return groups;
}

/** `sum=<field>[,<field>…]`: number fields of the view, each once, at most five (trends take the same). */
export function parseSums(view: View, raw: string | undefined): Field[] {
  if (raw === undefined) return [];
  // Not `split`: an empty `sum=` names one empty field, a 400, as in trends.
  const names = raw.split(',').map((s) => s.trim());
  const numbers = view.fields.filter((f) => f.type === 'number').map((f) => f.name);
  if (names.length > MAX_SUMS) throw badParameter('sum', `At most ${MAX_SUMS} fields can be summed; got ${names.length}.`);
  const fields: Field[] = [];
  for (const name of names) {
    const field = view.field(name);
    if (!field || field.type !== 'number') {
      throw badParameter('sum', `${JSON.stringify(name)} is not a number field of ${view.name}: sum one of ${numbers.join(', ')}.`);
    }
    if (fields.includes(field)) throw badParameter('sum', `${name} is named twice in sum.`);
    fields.push(field);
  }
  return fields;
}

/** `sort`: `count`, a grouped field by its name, or `sum_<field>` of a summed one, each `-` for descending. */
export function parseSummarySort(groups: readonly GroupKey[], sums: readonly Field[], raw: string | undefined): SummarySortKey[] {
  if (raw === undefined) return [{ by: 'count', descending: true }, ...groups.map((_, index) => ({ by: 'group' as const, index, descending: false }))];
  const keys = split(raw);
  if (keys.length === 0) throw badParameter('sort', 'sort names no key: give count, a grouped field or sum_<field>.');
  const allowed = ['count', ...groups.map((g) => g.field.name), ...sums.map((f) => `sum_${f.name}`)];
  return keys.map((key): SummarySortKey => {
    const descending = key.startsWith('-');
    const name = descending ? key.slice(1) : key;
    if (name === 'count') return { by: 'count', descending };
    const group = groups.findIndex((g) => g.field.name === name);
    if (group >= 0) return { by: 'group', index: group, descending };
    const sum = sums.findIndex((f) => `sum_${f.name}` === name);
    if (sum >= 0) return { by: 'sum', index: sum, descending };
    throw badParameter('sort', `${JSON.stringify(key)} is not a sort key of this summary: use ${allowed.join(', ')}, each optionally prefixed by "-".`);
  });
}

/** The summary of `query`'s rows that `params` asks for; throws a 400 naming the parameter at fault. */
export function parseSummary(engine: string, query: Query, params: ReadonlyMap<string, string>): Summary {
  const groups = parseGroupBy(engine, query.view, params.get('group_by'));
  const sums = parseSums(query.view, params.get('sum'));
  return { query, groups, sums, sort: parseSummarySort(groups, sums, params.get('sort')) };
}

/** The summary parameters as received, for links to repeat. */
export const summaryCarried = (params: ReadonlyMap<string, string>): [string, string][] =>
  SUMMARY_PARAMETERS.filter((p) => params.has(p)).map((p) => [p, params.get(p)!]);
