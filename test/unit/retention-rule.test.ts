// What history keeps (docs/history.md §1): the newest SNAPSHOT_KEEP snapshots and, besides them, the
// newest snapshot of each of the last SNAPSHOT_KEEP_DAYS UTC days, today included.
import { expect } from 'chai';
import fc from 'fast-check';
import { newSnapshotId, retainedIds } from '../../src/snapshots/snapshot-dir.js';

const at = (iso: string) => newSnapshotId(new Date(iso));
const sorted = (ids: string[]) => [...ids].sort();

describe('the retention rule', () => {
  const now = new Date('2026-11-25T12:00:00Z');

  it('keeps the newest `keep` alone when days are off', () => {
    const ids = sorted(['2026-11-20T01:00:00Z', '2026-11-24T01:00:00Z', '2026-11-25T01:00:00Z', '2026-11-25T02:00:00Z'].map(at));
    expect(retainedIds(ids, { keep: 2, keepDays: 0 }, now)).to.deep.equal(ids.slice(2));
    expect(retainedIds(ids, { keep: 10, keepDays: 0 }, now)).to.deep.equal(ids);
  });

  it('keeps besides them the newest of each recent UTC day, today included, and no day older', () => {
    const day23 = ['2026-11-23T00:00:00.000Z', '2026-11-23T23:59:59.999Z'].map(at);
    const day24 = ['2026-11-24T08:00:00Z', '2026-11-24T09:00:00Z'].map(at);
    const day25 = ['2026-11-25T00:00:00Z', '2026-11-25T00:00:01Z', '2026-11-25T00:00:02Z'].map(at);
    const old = at('2026-11-22T23:59:59.999Z');
    const ids = sorted([old, ...day23, ...day24, ...day25]);
    // Two days back from today: the 25th and the 24th; the 23rd is one too many.
    expect(retainedIds(ids, { keep: 1, keepDays: 2 }, now)).to.deep.equal(sorted([day24[1]!, day25[2]!]));
    expect(retainedIds(ids, { keep: 1, keepDays: 3 }, now)).to.deep.equal(sorted([day23[1]!, day24[1]!, day25[2]!]));
    // A day with no snapshot keeps nothing; the newest `keep` still come first.
    expect(retainedIds(ids, { keep: 4, keepDays: 30 }, now)).to.deep.equal(sorted([old, day23[1]!, day24[1]!, ...day25]));
  });

  it('counts days in UTC whatever the host zone, across a month and a year', () => {
    const ids = sorted(['2025-12-31T23:30:00Z', '2026-01-01T00:30:00Z'].map(at));
    const newYear = new Date('2026-01-01T05:00:00Z');
    expect(retainedIds(ids, { keep: 1, keepDays: 2 }, newYear)).to.deep.equal(ids);
    expect(retainedIds(ids, { keep: 1, keepDays: 1 }, newYear)).to.deep.equal(ids.slice(1));
  });

  it('agrees with the rule read literally, for any ids, keep and days', () => {
    const day = 86_400_000;
    fc.assert(fc.property(
      fc.array(fc.integer({ min: 0, max: 40 * day }), { maxLength: 40 }),
      fc.integer({ min: 1, max: 8 }),
      fc.integer({ min: 0, max: 45 }),
      fc.integer({ min: 0, max: 50 * day }),
      (offsets, keep, keepDays, nowOffset) => {
        const base = Date.UTC(2026, 0, 1);
        const ids = sorted(offsets.map((o) => newSnapshotId(new Date(base + o))));
        const nowAt = new Date(base + nowOffset);
        const today = Math.floor(nowAt.getTime() / day);
        const dayOf = (id: string) => Math.floor(Date.UTC(+id.slice(0, 4), +id.slice(4, 6) - 1, +id.slice(6, 8)) / day);
        const expected = ids.filter((id, i) => {
          if (i >= ids.length - keep) return true;
          const d = dayOf(id);
          const newestOfDay = !ids.some((other) => other > id && dayOf(other) === d);
          return newestOfDay && d <= today && d > today - keepDays;
        });
        expect(retainedIds(ids, { keep, keepDays }, nowAt)).to.deep.equal(expected);
      },
    ), { numRuns: 300 });
  });
});
