// The response cache: bounded by bytes, least recently used out first, large pages not kept, off at 0.
import { expect } from 'chai';
import { ResponseCache } from '../../src/http/response-cache.js';

const page = (bytes: number, rows = 1) => ({ body: Buffer.alloc(bytes, 120), rows });

describe('ResponseCache', () => {
  it('returns what it keeps and counts hits and misses', () => {
    const c = new ResponseCache(1000);
    expect(c.get('a')).to.equal(undefined);
    c.set('a', page(10, 3));
    expect(c.get('a')!.rows).to.equal(3);
    expect([c.hits, c.misses, c.bytes, c.size]).to.deep.equal([1, 1, 10, 1]);
  });

  it('evicts the least recently used pages once over its bytes', () => {
    const c = new ResponseCache(800);
    for (const k of ['a', 'b', 'c', 'd']) c.set(k, page(100));
    c.get('a'); // now the most recent
    for (const k of ['e', 'f', 'g', 'h', 'i']) c.set(k, page(100));
    expect(c.bytes).to.be.at.most(800);
    expect(c.get('a')).to.not.equal(undefined);
    expect(c.get('b')).to.equal(undefined);
    expect(c.get('i')).to.not.equal(undefined);
  });

  it('keeps no page over an eighth of its size, and nothing at all when off', () => {
    const c = new ResponseCache(800);
    c.set('big', page(101));
    expect(c.size).to.equal(0);
    const off = new ResponseCache(0);
    off.set('a', page(1));
    expect(off.get('a')).to.equal(undefined);
  });
});
