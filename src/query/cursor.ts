// Cursors of cursor pages (docs/data-out.md): opaque base64url text naming a row by its sort term values,
// the snapshots the walk reads and the query it belongs to. Pure: no I/O.
//
// A cursor is not signed: what it can name is checked instead. Its scope (a hash of the organization, route,
// view, filters and sort) must be the request's, its snapshots must be retained, and each value must be text
// that its term's type reads back (a value DuckDB could not cast would fail the statement). A cursor forged
// to pass all that names a position in the requesting organization's own rows, which is all a page reads.
import { createHash } from 'node:crypto';
import type { KeyType } from './compile.js';

export interface Cursor {
  scope: string;
  snapshots: string[];
  /** The sort term values of the row the next page follows, as text (compile.ts keyColumns). */
  after: (string | null)[];
}

export class CursorError extends Error {}

/** The scope of a walk: every part that a cursor must not outlive a change of (page size and fields may change). */
export const cursorScope = (parts: unknown): string => createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 22);

export const encodeCursor = (cursor: Cursor): string =>
  Buffer.from(JSON.stringify([1, cursor.scope, cursor.snapshots, cursor.after])).toString('base64url');

/** What a walk's next cursor is made of besides its row: the walk's scope and the snapshots it reads. */
export type WalkScope = Pick<Cursor, 'scope' | 'snapshots'>;

/**
 * A cursor page reads one row more than it shows, to know whether another page follows: the rows it shows,
 * and whether there are more.
 */
export function cursorRows<R>(rows: R[], size: number): { rows: R[]; more: boolean } {
  return rows.length > size ? { rows: rows.slice(0, size), more: true } : { rows, more: false };
}

/**
 * The cursor of the page after the one whose last row is `row`: the row's sort term values (from `keysAt`,
 * `count` of them, or to the row's end), then `extra` (a row sought by position adds its position and layout).
 */
export function nextCursor(walk: WalkScope, row: readonly unknown[], keysAt: number, count?: number, extra: readonly (string | null)[] = []): string {
  const terms = row.slice(keysAt, count === undefined ? undefined : keysAt + count) as (string | null)[];
  return encodeCursor({ scope: walk.scope, snapshots: walk.snapshots, after: [...terms, ...extra] });
}

const isText = (v: unknown): v is string => typeof v === 'string';

/** Reads a cursor's text; a CursorError says what is wrong with it. */
export function decodeCursor(text: string): Cursor {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) throw new CursorError('it is not a cursor this service gave (not base64url)');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw new CursorError('it is not a cursor this service gave (damaged or cut short)');
  }
  if (!Array.isArray(parsed) || parsed.length !== 4 || parsed[0] !== 1) throw new CursorError('it is not a cursor this service gave');
  const [, scope, snapshots, after] = parsed as [number, unknown, unknown, unknown];
  if (!isText(scope) || !Array.isArray(snapshots) || !snapshots.every(isText) || snapshots.length === 0
    || !Array.isArray(after) || after.length === 0 || !after.every((v) => v === null || isText(v))) {
    throw new CursorError('it is not a cursor this service gave');
  }
  return { scope, snapshots, after: after as (string | null)[] };
}

const INTEGER_RANGE: Partial<Record<KeyType, bigint>> = { INTEGER: 2n ** 31n, BIGINT: 2n ** 63n, HUGEINT: 2n ** 127n };
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?$/;

/** Whether `text` is what DuckDB writes for a value of `type` and reads back (CAST(? AS type)) without error. */
export function readableAs(type: KeyType, text: string): boolean {
  switch (type) {
    case 'VARCHAR': return true;
    case 'BOOLEAN': return text === 'true' || text === 'false';
    case 'TIMESTAMP': {
      const m = TIMESTAMP.exec(text);
      if (!m) return false;
      const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
      const date = new Date(0);
      date.setUTCFullYear(y, mo - 1, d); // Date.UTC would read years below 100 as 19xx
      return y >= 1 && date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d && h < 24 && mi < 60 && s < 60;
    }
    default: {
      if (!/^-?\d{1,39}$/.test(text)) return false;
      const limit = INTEGER_RANGE[type]!;
      const n = BigInt(text);
      return n >= -limit && n < limit;
    }
  }
}
