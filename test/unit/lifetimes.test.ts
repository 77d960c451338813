// Token lifetimes without a store: the durations and date-times `token create` and TOKEN_MAX_TTL take, and
// when a token stops being accepted.
import { expect } from 'chai';
import { expiryOf, hasExpired, parseDateTime, parseDuration } from '../../src/access/lifetimes.js';
import type { TokenRecord } from '../../src/store/state-store.js';

const token = (createdAt: string, expiresAt?: string | null): TokenRecord =>
  ({ id: 'at-x', kind: 'organization', organization: 'o', team: null, user: null, secretHash: '0', createdAt, description: null, expiresAt });

describe('token lifetimes', () => {
  it('reads a whole positive number with s, m, h or d, and nothing else', () => {
    expect([parseDuration('90s'), parseDuration('30m'), parseDuration('12h'), parseDuration('90d')]).to.deep.equal([90_000, 1_800_000, 43_200_000, 7_776_000_000]);
    for (const bad of ['0s', '-1h', '1.5h', '12', 'h', '12H', ' 1h', '1h ', '01h', '1w']) expect(parseDuration(bad), bad).to.equal(null);
  });

  it('reads an RFC 3339 date-time with an offset, and refuses one without, or one that names no real time', () => {
    expect(parseDateTime('2027-01-31T12:00:00Z')).to.equal(Date.UTC(2027, 0, 31, 12));
    expect(parseDateTime('2027-01-31T17:30:00.250+05:30')).to.equal(Date.UTC(2027, 0, 31, 12, 0, 0, 250));
    expect(parseDateTime('2027-01-31t12:00:00z')).to.equal(Date.UTC(2027, 0, 31, 12));
    for (const bad of ['2027-01-31T12:00:00', '2027-02-30T00:00:00Z', '2027-01-31 12:00:00Z', '2027-13-01T00:00:00Z', '2027-01-31T24:00:00Z', 'tomorrow']) {
      expect(parseDateTime(bad), bad).to.equal(null);
    }
  });

  it('expires at the earlier of its own expiry and its creation plus the maximum in force', () => {
    const made = '2027-01-01T00:00:00.000Z';
    expect(expiryOf(token(made), null)).to.equal(null);
    expect(expiryOf(token(made, '2027-01-02T00:00:00.000Z'), null)).to.equal(Date.UTC(2027, 0, 2));
    expect(expiryOf(token(made), 3_600_000)).to.equal(Date.UTC(2027, 0, 1, 1));
    expect(expiryOf(token(made, '2027-01-02T00:00:00.000Z'), 3_600_000)).to.equal(Date.UTC(2027, 0, 1, 1));
    expect(expiryOf(token(made, '2027-01-01T00:30:00.000Z'), 3_600_000)).to.equal(Date.UTC(2027, 0, 1, 0, 30));
    expect(hasExpired(token(made, '2027-01-01T00:30:00.000Z'), null, Date.UTC(2027, 0, 1, 0, 29, 59, 999))).to.equal(false);
    expect(hasExpired(token(made, '2027-01-01T00:30:00.000Z'), null, Date.UTC(2027, 0, 1, 0, 30))).to.equal(true);
  });
});
