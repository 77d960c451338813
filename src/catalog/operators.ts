import type { FieldType } from './types.js';

export type Operator =
  | 'is' | 'is_not' | 'contains' | 'does not contain' | 'is_empty' | 'is_not_empty'
  | 'gt' | 'lt' | 'gteq' | 'lteq' | 'is_before' | 'is_after';

/** §4.2 operator table, plus interface §4 (emptiness tests also apply to datetimes). */
export const OPERATORS_BY_TYPE: Readonly<Record<FieldType, readonly Operator[]>> = {
  boolean: ['is', 'is_empty', 'is_not_empty'],
  number: ['is', 'is_not', 'gt', 'lt', 'gteq', 'lteq', 'is_empty', 'is_not_empty'],
  string: ['is', 'is_not', 'contains', 'does not contain', 'is_empty', 'is_not_empty'],
  datetime: ['is_before', 'is_after', 'is_empty', 'is_not_empty'],
};

export const ALL_OPERATORS: readonly Operator[] = [
  'is', 'is_not', 'contains', 'does not contain', 'is_empty', 'is_not_empty',
  'gt', 'lt', 'gteq', 'lteq', 'is_before', 'is_after',
];

/** Spellings real clients send for the same operator (interface §4). */
export const OPERATOR_ALIASES: Readonly<Record<string, Operator>> = {
  'does_not_contain': 'does not contain',
  'does+not+contain': 'does not contain',
};

export function canonicalOperator(spelling: string): string {
  return OPERATOR_ALIASES[spelling] ?? spelling;
}

/** Operators whose several values mean "none of" rather than "any of". */
export function isNegative(op: Operator): boolean {
  return op === 'is_not' || op === 'does not contain';
}

/** Operators that test presence and ignore their value. */
export function ignoresValue(op: Operator): boolean {
  return op === 'is_empty' || op === 'is_not_empty';
}

/** Value syntax per field type (interface §4); strings accept anything. */
export const VALUE_PATTERNS: Readonly<Record<FieldType, string | null>> = {
  boolean: '^(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$',
  number: '^-?\\d+(?:\\.\\d+)?$',
  datetime: '^\\d{4}-\\d{2}-\\d{2}(?:T\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d+)?)?(?:Z|[+-]\\d{2}:\\d{2})?)?$',
  string: null,
};
