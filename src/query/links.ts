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
  last: string;
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
  const encoded = carried.map(([k, v]) => [encodeStrict(k), encodeStrict(v)] as const);
  const url = (n: number) => {
    const pairs = [...encoded, [encodeStrict('page[number]'), String(n)] as const, [encodeStrict('page[size]'), String(meta['page-size'])] as const];
    pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return `${base}?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`;
  };
  return {
    self: url(meta['current-page']),
    first: url(1),
    prev: meta['prev-page'] === null ? null : url(meta['prev-page']),
    next: meta['next-page'] === null ? null : url(meta['next-page']),
    last: url(meta['total-pages']),
  };
}
