// Pagination links and meta (docs/interface.md, interface §5).
import { encodeStrict } from './query-string.js';

export interface Pagination {
  'current-page': number;
  'page-size': number;
  'next-page': number | null;
  'prev-page': number | null;
  'total-pages': number;
  'total-count': number;
}

export interface Links {
  self: string;
  first: string;
  prev: string | null;
  next: string | null;
  /** Null on a cursor page: it has no last page to point at. */
  last: string | null;
}

/** meta.pagination of a cursor page (docs/data-out.md): no page numbers. */
export interface CursorPagination {
  'page-size': number;
  'total-count': number;
}

export const totalPages = (total: number, size: number) => Math.max(1, Math.ceil(total / size));

export function pagination(number: number, size: number, total: number): Pagination {
  const pages = totalPages(total, size);
  return {
    'current-page': number,
    'page-size': size,
    'next-page': number < pages ? number + 1 : null,
    'prev-page': number > 1 ? number - 1 : null,
    'total-pages': pages,
    'total-count': total,
  };
}

/** `base` is scheme, host and path; `carried` the parameters to repeat (decoded), without paging. */
export function pageLinks(base: string, carried: readonly [string, string][], meta: Pagination): Links {
  const encoded = encodePairs(carried);
  const url = (n: number) => linkTo(base, encoded, [['page[number]', String(n)], ['page[size]', String(meta['page-size'])]]);
  return {
    self: url(meta['current-page']),
    first: url(1),
    prev: meta['prev-page'] === null ? null : url(meta['prev-page']),
    next: meta['next-page'] === null ? null : url(meta['next-page']),
    last: url(meta['total-pages']),
  };
}

const encodePairs = (pairs: readonly [string, string][]) => pairs.map(([k, v]) => [encodeStrict(k), encodeStrict(v)] as const);

/** A link: `base` with `carried` (encoded once for all of a page's links) and `paging`, encoded, keys in order. */
function linkTo(base: string, carried: readonly (readonly [string, string])[], paging: readonly [string, string][]): string {
  const pairs = [...carried, ...encodePairs(paging)];
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return `${base}?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`;
}

/**
 * The links of a cursor page (docs/data-out.md): `self` as received, `first` from the start (`page[after]=`),
 * `next` after the page's last row (null when no row follows), no `prev` or `last`.
 */
export function cursorLinks(base: string, carried: readonly [string, string][], size: number, received: string, next: string | null): Links {
  const encoded = encodePairs(carried);
  const url = (after: string) => linkTo(base, encoded, [['page[after]', after], ['page[size]', String(size)]]);
  return { self: url(received), first: url(''), prev: null, next: next === null ? null : url(next), last: null };
}

/**
 * The links and meta.pagination of a page of `total` rows: a numbered page's, or with `cursor` a cursor
 * page's (`received` its page[after], `next` the cursor of its last row when another row follows).
 */
export function pageNavigation(base: string, carried: readonly [string, string][], page: { number: number; size: number }, total: number,
  cursor?: { received: string; next: string | null }): { links: Links; pagination: Pagination | CursorPagination } {
  if (cursor) return { links: cursorLinks(base, carried, page.size, cursor.received, cursor.next), pagination: { 'page-size': page.size, 'total-count': total } };
  const meta = pagination(page.number, page.size, total);
  return { links: pageLinks(base, carried, meta), pagination: meta };
}
