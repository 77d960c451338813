// pagination / pageLinks (src/query/links.ts), docs/interface.md and interface §5.
import { expect } from 'chai';
import { pagination, pageLinks, totalPages } from '../../src/query/links.js';
import { decodeQueryString } from '../../src/query/query-string.js';
import { parseQueryParameters } from '../../src/query/parse-query.js';

const BASE = 'http://example.test/api/v2/organizations/acme/explorer';

describe('pagination', () => {
  it('page inside the range: prev n-1, next n+1', () => {
    expect(pagination(3, 20, 95)).to.deep.equal({
      'current-page': 3, 'page-size': 20, 'next-page': 4, 'prev-page': 2, 'total-pages': 5, 'total-count': 95,
    });
  });

  it('first page: no prev', () => {
    expect(pagination(1, 20, 95)).to.deep.equal({
      'current-page': 1, 'page-size': 20, 'next-page': 2, 'prev-page': null, 'total-pages': 5, 'total-count': 95,
    });
  });

  it('last page: no next (also when the total is an exact multiple of the size)', () => {
    expect(pagination(5, 20, 95)).to.deep.equal({
      'current-page': 5, 'page-size': 20, 'next-page': null, 'prev-page': 4, 'total-pages': 5, 'total-count': 95,
    });
    expect(pagination(5, 20, 100)).to.deep.equal({
      'current-page': 5, 'page-size': 20, 'next-page': null, 'prev-page': 4, 'total-pages': 5, 'total-count': 100,
    });
    expect(pagination(5, 20, 101)['next-page']).to.equal(6);
  });

  it('past the end: prev n-1, next null', () => {
    expect(pagination(9, 20, 95)).to.deep.equal({
      'current-page': 9, 'page-size': 20, 'next-page': null, 'prev-page': 8, 'total-pages': 5, 'total-count': 95,
    });
  });

  it('no rows: one page, no prev, no next', () => {
    expect(pagination(1, 20, 0)).to.deep.equal({
      'current-page': 1, 'page-size': 20, 'next-page': null, 'prev-page': null, 'total-pages': 1, 'total-count': 0,
    });
    expect(pagination(3, 20, 0)).to.deep.equal({
      'current-page': 3, 'page-size': 20, 'next-page': null, 'prev-page': 2, 'total-pages': 1, 'total-count': 0,
    });
  });

  it('single page and page size 1', () => {
    expect(pagination(1, 100, 7)).to.deep.equal({
      'current-page': 1, 'page-size': 100, 'next-page': null, 'prev-page': null, 'total-pages': 1, 'total-count': 7,
    });
    expect(pagination(2, 1, 3)).to.deep.equal({
      'current-page': 2, 'page-size': 1, 'next-page': 3, 'prev-page': 1, 'total-pages': 3, 'total-count': 3,
    });
    expect(totalPages(0, 1)).to.equal(1);
    expect(totalPages(1, 1)).to.equal(1);
    expect(totalPages(21, 20)).to.equal(2);
  });
});

describe('pageLinks', () => {
  it('carries type and page parameters, brackets percent-encoded, keys sorted by encoded form', () => {
    const links = pageLinks(BASE, [['type', 'workspaces']], pagination(2, 20, 95));
    expect(links).to.deep.equal({
      self: `${BASE}?page%5Bnumber%5D=2&page%5Bsize%5D=20&type=workspaces`,
      first: `${BASE}?page%5Bnumber%5D=1&page%5Bsize%5D=20&type=workspaces`,
      prev: `${BASE}?page%5Bnumber%5D=1&page%5Bsize%5D=20&type=workspaces`,
      next: `${BASE}?page%5Bnumber%5D=3&page%5Bsize%5D=20&type=workspaces`,
      last: `${BASE}?page%5Bnumber%5D=5&page%5Bsize%5D=20&type=workspaces`,
    });
  });

  it('prev and next are null at the edges; first = last = self on a single page', () => {
    const one = pageLinks(BASE, [['type', 'tf_versions']], pagination(1, 20, 0));
    const self = `${BASE}?page%5Bnumber%5D=1&page%5Bsize%5D=20&type=tf_versions`;
    expect(one).to.deep.equal({ self, first: self, prev: null, next: null, last: self });

    const first = pageLinks(BASE, [['type', 'tf_versions']], pagination(1, 10, 25));
    expect(first.prev).to.equal(null);
    expect(first.next).to.equal(`${BASE}?page%5Bnumber%5D=2&page%5Bsize%5D=10&type=tf_versions`);
    const last = pageLinks(BASE, [['type', 'tf_versions']], pagination(3, 10, 25));
    expect(last.next).to.equal(null);
    expect(last.prev).to.equal(`${BASE}?page%5Bnumber%5D=2&page%5Bsize%5D=10&type=tf_versions`);
  });

  it('past the end: self is the requested page, prev the page before it, last the real last page', () => {
    const links = pageLinks(BASE, [['type', 'modules']], pagination(7, 10, 25));
    expect(links.self).to.equal(`${BASE}?page%5Bnumber%5D=7&page%5Bsize%5D=10&type=modules`);
    expect(links.prev).to.equal(`${BASE}?page%5Bnumber%5D=6&page%5Bsize%5D=10&type=modules`);
    expect(links.next).to.equal(null);
    expect(links.last).to.equal(`${BASE}?page%5Bnumber%5D=3&page%5Bsize%5D=10&type=modules`);
  });

  it('encodes spaces as %20, commas as %2C and every other reserved byte; sorts by the encoded key', () => {
    const carried: [string, string][] = [
      ['type', 'workspaces'],
      ['sort', '-workspace_name,drifted'],
      ['fields', 'workspace_name,drifted'],
      ['filter[10][workspace_name][is][0]', 'x'],
      ['filter[1][workspace_name][does not contain][0]', "a b+c/é!'()*~"],
    ];
    const links = pageLinks(BASE, carried, pagination(1, 50, 10));
    // Decoded, filter[10]… sorts before filter[1]] ('0' < ']'); encoded, filter%5B1%5D… sorts first ('%' < '0').
    expect(links.self).to.equal(
      `${BASE}?fields=workspace_name%2Cdrifted` +
        '&filter%5B1%5D%5Bworkspace_name%5D%5Bdoes%20not%20contain%5D%5B0%5D=a%20b%2Bc%2F%C3%A9%21%27%28%29%2A~' +
        '&filter%5B10%5D%5Bworkspace_name%5D%5Bis%5D%5B0%5D=x' +
        '&page%5Bnumber%5D=1&page%5Bsize%5D=50' +
        '&sort=-workspace_name%2Cdrifted' +
        '&type=workspaces',
    );
  });

  it('sorts keys by code point of the encoded form (upper case before lower case, %XX before letters)', () => {
    const links = pageLinks(BASE, [['type', 'a'], ['b.', '1'], ['b[', '2'], ['Zed', '3'], ['b', '0']], pagination(1, 20, 0));
    // encoded keys: Zed, b, b%5B, b., page%5Bnumber%5D, page%5Bsize%5D, type — a key before any longer key it prefixes
    expect(links.self).to.equal(`${BASE}?Zed=3&b=0&b%5B=2&b.=1&page%5Bnumber%5D=1&page%5Bsize%5D=20&type=a`);
  });

  it('uses the effective (clamped) page size from a parsed request', () => {
    const { query, carried } = parseQueryParameters('terraform', decodeQueryString('type=providers&page[size]=500&page[number]=2&sort=-workspace_count&foo=1'));
    const links = pageLinks(BASE, carried, pagination(query.page.number, query.page.size, 250));
    expect(links).to.deep.equal({
      self: `${BASE}?page%5Bnumber%5D=2&page%5Bsize%5D=100&sort=-workspace_count&type=providers`,
      first: `${BASE}?page%5Bnumber%5D=1&page%5Bsize%5D=100&sort=-workspace_count&type=providers`,
      prev: `${BASE}?page%5Bnumber%5D=1&page%5Bsize%5D=100&sort=-workspace_count&type=providers`,
      next: `${BASE}?page%5Bnumber%5D=3&page%5Bsize%5D=100&sort=-workspace_count&type=providers`,
      last: `${BASE}?page%5Bnumber%5D=3&page%5Bsize%5D=100&sort=-workspace_count&type=providers`,
    });
  });

  it('re-encodes a raw + (space) query as %20 and round-trips through decodeQueryString', () => {
    const raw = 'type=workspaces&filter[0][workspace_name][does+not+contain][0]=a+b%2Bc';
    const { query, carried } = parseQueryParameters('terraform', decodeQueryString(raw));
    const self = pageLinks(BASE, carried, pagination(query.page.number, query.page.size, 1)).self;
    expect(self).to.equal(`${BASE}?filter%5B0%5D%5Bworkspace_name%5D%5Bdoes%20not%20contain%5D%5B0%5D=a%20b%2Bc&page%5Bnumber%5D=1&page%5Bsize%5D=20&type=workspaces`);
    const again = decodeQueryString(self.slice(self.indexOf('?') + 1));
    expect([...again.entries()]).to.deep.equal([
      ['filter[0][workspace_name][does not contain][0]', 'a b+c'],
      ['page[number]', '1'],
      ['page[size]', '20'],
      ['type', 'workspaces'],
    ]);
  });
});
