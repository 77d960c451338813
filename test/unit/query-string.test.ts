// decodeQueryString / encodeStrict (src/query/query-string.ts), interface §4 and §5.
import { expect } from 'chai';
import fc from 'fast-check';
import { decodeQueryString, encodeStrict } from '../../src/query/query-string.js';
import { ApiError } from '../../src/errors.js';

function decodeError(raw: string): ApiError {
  try {
    decodeQueryString(raw);
  } catch (e) {
    expect(e, raw).to.be.instanceOf(ApiError);
    return e as ApiError;
  }
  expect.fail(`decodeQueryString(${JSON.stringify(raw)}) did not throw`);
}

const entries = (raw: string) => [...decodeQueryString(raw).entries()];

describe('decodeQueryString', () => {
  it('decodes keys and values, keeping the order received', () => {
    expect(entries('type=workspaces&sort=-name&page%5Bsize%5D=5')).to.deep.equal([
      ['type', 'workspaces'],
      ['sort', '-name'],
      ['page[size]', '5'],
    ]);
  });

  it('decodes + as a space in keys and values, and %2B as a plus', () => {
    expect(entries('filter%5B0%5D%5Bname%5D%5Bdoes+not+contain%5D%5B0%5D=a+b%2Bc')).to.deep.equal([
      ['filter[0][name][does not contain][0]', 'a b+c'],
    ]);
  });

  it('decodes %5B / %5D (either case) and literal brackets alike', () => {
    expect(entries('filter%5b0%5d%5Bname%5D%5Bis%5D%5B0%5D=x&fields[workspaces]=a')).to.deep.equal([
      ['filter[0][name][is][0]', 'x'],
      ['fields[workspaces]', 'a'],
    ]);
  });

  it('ignores empty components (&&, leading and trailing &)', () => {
    expect(entries('&&type=tf_versions&&&sort=version&')).to.deep.equal([
      ['type', 'tf_versions'],
      ['sort', 'version'],
    ]);
    expect(entries('')).to.deep.equal([]);
    expect(entries('&')).to.deep.equal([]);
  });

  it('gives a key without = the empty value, and an empty value stays empty', () => {
    expect(entries('a&b=&c==')).to.deep.equal([
      ['a', ''],
      ['b', ''],
      ['c', '='],
    ]);
  });

  it('decodes UTF-8 multibyte sequences', () => {
    expect(entries('q=caf%C3%A9%20%E2%82%AC%F0%9F%98%80')).to.deep.equal([['q', 'café €😀']]);
  });

  it('rejects a key given twice with a 400 naming the decoded key', () => {
    const e = decodeError('type=workspaces&sort=a&type=modules');
    expect(e.status).to.equal(400);
    expect(e.source).to.deep.equal({ parameter: 'type' });
  });

  it('rejects a key given twice when one spelling is percent-encoded (type / %74ype)', () => {
    const e = decodeError('type=a&%74ype=b');
    expect(e.status).to.equal(400);
    expect(e.source).to.deep.equal({ parameter: 'type' });
  });

  it('rejects a filter key given once with brackets and once encoded', () => {
    const e = decodeError('filter[0][name][is][0]=a&filter%5B0%5D%5Bname%5D%5Bis%5D%5B0%5D=b');
    expect(e.status).to.equal(400);
    expect(e.source).to.deep.equal({ parameter: 'filter[0][name][is][0]' });
  });

  it('rejects keys that differ only by + versus %20 as the same key', () => {
    const e = decodeError('a+b=1&a%20b=2');
    expect(e.status).to.equal(400);
    expect(e.source).to.deep.equal({ parameter: 'a b' });
  });

  it('rejects invalid percent-encoding with a 400', () => {
    for (const raw of ['q=%E0%A4%A', 'q=%ZZ', 'q=%', 'q=abc%2', 'q=%C3%28', 'q=%FF', '%ZZ=1', '%E0%A4%A=1']) {
      const e = decodeError(raw);
      expect(e.status, raw).to.equal(400);
      expect(e.title, raw).to.equal('invalid query parameter');
    }
  });

  it('names the decoded key when the value is badly encoded', () => {
    const e = decodeError('filter%5B0%5D%5Bname%5D%5Bis%5D%5B0%5D=%ZZ');
    expect(e.source).to.deep.equal({ parameter: 'filter[0][name][is][0]' });
  });

  it('rejects a NUL byte, encoded or raw, in a key or a value with a 400', () => {
    for (const raw of ['q=a%00b', '%00=1', 'q%00=1', 'q=a\u0000b']) {
      const e = decodeError(raw);
      expect(e.status, JSON.stringify(raw)).to.equal(400);
    }
    expect(decodeError('q=a%00b').source).to.deep.equal({ parameter: 'q' });
  });
});

describe('encodeStrict', () => {
  it('leaves only A–Z a–z 0–9 - _ . ~ unencoded', () => {
    const unreserved = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~';
    expect(encodeStrict(unreserved)).to.equal(unreserved);
    for (let c = 0x20; c < 0x7f; c++) {
      const ch = String.fromCharCode(c);
      const expected = unreserved.includes(ch) ? ch : '%' + c.toString(16).toUpperCase().padStart(2, '0');
      expect(encodeStrict(ch), JSON.stringify(ch)).to.equal(expected);
    }
  });

  it('encodes a space as %20, never +', () => {
    expect(encodeStrict('does not contain')).to.equal('does%20not%20contain');
  });

  it('gives, for any string, the bytes of its UTF-8 (a lone surrogate as U+FFFD) encoded one by one', () => {
    // The rule written out byte by byte, as the oracle of the encoder's faster form.
    const byBytes = (text: string) => [...Buffer.from(text, 'utf8')]
      .map((b) => (/[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (text) => { expect(encodeStrict(text)).to.equal(byBytes(text)); }), { numRuns: 2000 });
    for (const lone of ['\ud800', 'a\udfffb', '\ud83d']) expect(encodeStrict(lone), JSON.stringify(lone)).to.equal(byBytes(lone));
  });

  it("encodes !'()* which encodeURIComponent leaves alone", () => {
    expect(encodeStrict("!'()*")).to.equal('%21%27%28%29%2A');
  });

  it('encodes brackets, commas, plus and percent', () => {
    expect(encodeStrict('filter[0][name][is][0]')).to.equal('filter%5B0%5D%5Bname%5D%5Bis%5D%5B0%5D');
    expect(encodeStrict('a,b+c%d')).to.equal('a%2Cb%2Bc%25d');
  });

  it('encodes control characters and UTF-8 multibyte characters byte by byte, upper-case hex', () => {
    expect(encodeStrict('\n\t\u007f')).to.equal('%0A%09%7F');
    expect(encodeStrict('é')).to.equal('%C3%A9');
    expect(encodeStrict('€')).to.equal('%E2%82%AC');
    expect(encodeStrict('😀')).to.equal('%F0%9F%98%80');
    expect(encodeStrict('Ünï-cödé')).to.equal('%C3%9Cn%C3%AF-c%C3%B6d%C3%A9');
  });

  it('round-trips through decodeQueryString', () => {
    const samples = ["a b+c", "x'; DROP TABLE x; --", 'filter[0][name][does not contain][0]', '50% & more = 😀', '~._-', 'é,ü'];
    for (const s of samples) {
      const decoded = decodeQueryString(`${encodeStrict(s)}=${encodeStrict(s)}`);
      expect([...decoded.entries()], s).to.deep.equal([[s, s]]);
    }
  });
});
