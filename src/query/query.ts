import type { Operator } from '../catalog/operators.js';
import type { Field, View } from '../catalog/types.js';

/** A typed comparison value, ready to bind. Datetimes are UTC `YYYY-MM-DD HH:MM:SS.mmm`; numbers their validated text. */
export type BoundValue = string | number | boolean;

/** One condition: values of the same (index, field, operator) mean any-of, or none-of for negative operators. */
export interface Condition {
  field: Field;
  operator: Operator;
  values: BoundValue[];
}

export interface SortKey {
  field: Field;
  descending: boolean;
}

/** Sort keys from their API spelling (`name`, `-version`); the names must be fields of `view`. */
export const sortKeys = (view: View, names: readonly string[]): SortKey[] =>
  names.map((key) => ({ field: view.field(key.replace(/^-/, ''))!, descending: key.startsWith('-') }));

export interface Query {
  view: View;
  /** Selected fields in output order (all fields, alphabetical, when the request names none). */
  fields: Field[];
  sort: SortKey[];
  conditions: Condition[];
  page: Page;
}

/**
 * A numbered page, or with `after` a cursor page (docs/data-out.md): the rows after the position whose sort
 * term values (as text, null for null; compile.ts keysetAfter) `after` holds; empty, from the start.
 */
export interface Page {
  number: number;
  size: number;
  /** page[after] as received (`''`: from the start): a cursor page. The walk (http/cursor-walk.ts) reads it into `after`. */
  cursor?: string;
  after?: readonly (string | null)[];
}

/** Where a query came from, so that a validation error can name what the client sent. */
export interface QueryOrigin {
  /** Maps a normalized-document path (`/filter/3/value`, `/sort/0`) to a query parameter or body pointer. */
  locate(path: string): { parameter?: string; pointer?: string };
}
