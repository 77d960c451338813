// versionKey (src/catalog/version-order.ts) against a reference comparator written from interface §5:
// numeric parts (a missing part is 0), then a pre-release before its release with SemVer 2.0 pre-release
// precedence, build metadata ignored. Sorting by the key with plain `<` must agree with the reference for
// every pair the reference does not call equal.
import { expect } from 'chai';
import { versionKey } from '../../src/catalog/version-order.js';
import { seededRandom } from '../../src/sample/random.js';
import { reference, sign, VERSION } from '../helpers/version-reference.js';

function checkAllPairs(versions: string[]): void {
  const keys = versions.map((v) => {
    const k = versionKey(v);
    expect(k, `versionKey(${JSON.stringify(v)})`).to.be.a('string');
    return k!;
  });
  const failures: string[] = [];
  for (let i = 0; i < versions.length; i++) {
    for (let j = 0; j < versions.length; j++) {
      const expected = reference(versions[i]!, versions[j]!);
      if (expected === 0) continue;
      const actual = sign(keys[i]!, keys[j]!);
      if (actual !== expected) {
        failures.push(`${versions[i]} vs ${versions[j]}: reference ${expected}, key order ${actual}`);
        if (failures.length >= 10) break;
      }
    }
    if (failures.length >= 10) break;
  }
  expect(failures).to.deep.equal([]);
}

// A seeded generator, so that a failure is reproducible.
const rng = seededRandom;

function randomVersion(r: () => number): string {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const number = () => {
    const x = r();
    if (x < 0.5) return String(Math.floor(r() * 3));
    if (x < 0.7) return String(Math.floor(r() * 12));
    if (x < 0.8) return pick(['0', '00', '01', '007', '10', '010']);
    if (x < 0.9) return pick(['9', '99', '100', '999999999', '1000000000', '9999999999', '10000000000']);
    return pick(['99999999999999999999', '100000000000000000000', '0099999999999999999999', '18446744073709551616']);
  };
  const ident = () => {
    const x = r();
    if (x < 0.4) return number();
    if (x < 0.85) return pick(['alpha', 'beta', 'rc', 'a', 'b', 'A', 'Z', 'rc1', 'rc10', 'rc2', 'alpha-1', 'alpha-', '-', '--', '0a', 'x-y', 'beta2']);
    if (x < 0.95) return pick(['0', '1', '2', '11', '00']);
    return ''; // the interface §5 pattern allows an empty identifier (`1.0.0-a..b`)
  };
  let v = (r() < 0.1 ? 'v' : '') + number();
  const parts = r();
  if (parts > 0.15) v += '.' + number();
  if (parts > 0.35) v += '.' + number();
  if (r() < 0.55) {
    const n = 1 + Math.floor(r() * 4);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(ident());
    let pre = ids.join('.');
    if (pre === '') pre = 'rc';
    v += '-' + pre;
  }
  if (r() < 0.15) v += '+' + pick(['build', '001', 'exp.sha.5114f85', 'a-b', '20240101']);
  return v;
}

const TRICKY = [
  '0', '0.0', '0.0.0', '1', '1.0', '1.0.0', 'v1', 'v1.0.0', '01.002.0003', '1.2', '1.2.0', '1.2.3', 'v1.2.3',
  '1.2.3+build', '1.2.3+build.5', '1.2.10', '1.10.2', '1.9.99', '2', '2.0.0-rc.1', '10.0.0', '9.99.99',
  '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11',
  '1.0.0-rc.1', '1.0.0-rc1', '1.0.0-rc10', '1.0.0-rc2', '1.0.0-0', '1.0.0-1', '1.0.0-01', '1.0.0-10', '1.0.0-9',
  '1.0.0-0a', '1.0.0-a', '1.0.0-A', '1.0.0-Z', '1.0.0-z', '1.0.0--', '1.0.0-a-', '1.0.0-a-b', '1.0.0-a.-',
  '1.0.0-a..b', '1.0.0-a.', '1.0.0-.', '1.0.0-alpha+001', '1.0.0-alpha.1+x', '1.0.0-1.2.3.4.5', '1.0.0-1.2.3.4',
  '99999999999999999999', '100000000000000000000', '99999999999999999999.0.1', '100000000000000000000.0.0-rc.1',
  '1.0.0-99999999999999999999', '1.0.0-100000000000000000000', '1.0.0-999999999', '1.0.0-1000000000',
  '1.999999999.0', '1.1000000000.0', '0.0.0-0', 'v0.0.0-0+0',
];

describe('versionKey (interface §5 version order)', () => {
  it('returns null for values that are not versions', () => {
    for (const v of ['latest', '1.2.3.4', '1.0.0-', '', '1..2', 'V1.0.0', 'vv1', '1.0.0+', '1.0.0-a_b', '-1.0.0', ' 1.0.0', '1.0.0 ', '1.x', 'x1', '1.0.0-é']) {
      expect(versionKey(v), JSON.stringify(v)).to.equal(null);
    }
  });

  it('returns a key for every shape the interface §5 pattern accepts', () => {
    for (const v of ['1', '1.2', '1.2.3', 'v1', 'v1.2.3-rc.1+b', '1.0.0+build', '1.0.0-a..b', '007']) {
      expect(versionKey(v), v).to.be.a('string');
    }
  });

  it('gives equal keys to versions of equal precedence (missing part = 0, v prefix, leading zeros, build metadata)', () => {
    const groups = [
      ['1', '1.0', '1.0.0', 'v1', 'v1.0.0', '01.00.000', '1.0.0+build', '1.0+x.y'],
      ['1.0.0-rc.1', 'v1.0.0-rc.1+sha.1', '1.0-rc.01', '1-rc.1'],
      ['99999999999999999999.0.0', '099999999999999999999', 'v99999999999999999999.0'],
    ];
    for (const g of groups) {
      const keys = new Set(g.map((v) => versionKey(v)));
      expect(keys.size, g.join(' ')).to.equal(1);
    }
  });

  it('orders the SemVer 2.0 §11 example chain', () => {
    const chain = ['1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0', '2.0.0', '2.1.0', '2.1.1'];
    const shuffled = [...chain].reverse();
    shuffled.sort((a, b) => sign(versionKey(a)!, versionKey(b)!));
    expect(shuffled).to.deep.equal(chain);
  });

  it('orders huge numeric parts numerically', () => {
    const k = (v: string) => versionKey(v)!;
    expect(k('99999999999999999999') < k('100000000000000000000')).to.equal(true);
    expect(k('1.0.0-99999999999999999999') < k('1.0.0-100000000000000000000')).to.equal(true);
    expect(k('9') < k('10')).to.equal(true);
    expect(k('999999999') < k('1000000000')).to.equal(true);
    expect(k('1.0.0-rc.9') < k('1.0.0-rc.10')).to.equal(true);
  });

  it('puts a pre-release before its release and after the previous release', () => {
    const k = (v: string) => versionKey(v)!;
    expect(k('1.0.0-rc.1') < k('1.0.0')).to.equal(true);
    expect(k('0.9.9') < k('1.0.0-0')).to.equal(true);
    expect(k('1.0.0') < k('1.0.1-alpha')).to.equal(true);
  });

  it('the reference comparator itself behaves as SemVer 2.0 says', () => {
    // A guard on the oracle: if it were wrong, the agreement checks below would prove nothing.
    expect(reference('1.0.0-alpha', '1.0.0-alpha.1')).to.equal(-1);
    expect(reference('1.0.0-beta.11', '1.0.0-beta.2')).to.equal(1);
    expect(reference('1.0.0-1', '1.0.0-a')).to.equal(-1);
    expect(reference('1.0.0-rc.1', '1.0.0')).to.equal(-1);
    expect(reference('1', '1.0.0+b')).to.equal(0);
    expect(reference('100000000000000000000', '99999999999999999999')).to.equal(1);
    expect(reference('1.0.0-Z', '1.0.0-a')).to.equal(-1);
  });

  it('agrees with the reference on every pair of ~60 tricky versions', () => {
    expect(TRICKY.length).to.be.greaterThanOrEqual(60);
    checkAllPairs(TRICKY);
  });

  it('agrees with the reference on 2,000 seeded random versions (all pairs)', () => {
    const r = rng(20240208);
    const versions: string[] = [];
    for (let i = 0; i < 2000; i++) versions.push(randomVersion(r));
    for (const v of versions) expect(VERSION.test(v), v).to.equal(true);
    // All pairs by sorting: sort by key, then every adjacent and every pair must be non-decreasing by reference.
    const keyed = versions.map((v) => ({ v, k: versionKey(v)! }));
    keyed.sort((a, b) => sign(a.k, b.k));
    const failures: string[] = [];
    for (let i = 0; i < keyed.length && failures.length < 10; i++) {
      for (let j = i + 1; j < keyed.length; j++) {
        const c = reference(keyed[i]!.v, keyed[j]!.v);
        // Sorted by key: a later element must never have lower precedence; equal keys must mean equal precedence.
        if (c > 0 || (keyed[i]!.k === keyed[j]!.k && c !== 0)) {
          failures.push(`${keyed[i]!.v} (key ${keyed[i]!.k}) sorts before ${keyed[j]!.v} (key ${keyed[j]!.k}), reference ${c}`);
          if (failures.length >= 10) break;
        }
      }
    }
    expect(failures).to.deep.equal([]);
  });
});
