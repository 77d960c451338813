// How long a token lives: `--expires-in`, `--expires-at` and `TOKEN_MAX_TTL`. A token past its expiry, or
// older than the maximum lifetime in force now, is refused as an unknown token is: lowering the maximum
// retires the tokens made before it.
import type { TokenRecord } from '../store/state-store.js';

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A duration (`90s`, `30m`, `12h`, `90d`: a whole positive number and a unit) in milliseconds; null for anything else. */
export function parseDuration(text: string): number | null {
  const m = /^([1-9][0-9]{0,9})([smhd])$/.exec(text);
  return m ? Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS] : null;
}

/** An RFC 3339 date-time with an offset (`2027-01-31T12:00:00Z`, `…+05:30`) in epoch milliseconds; null for anything else. */
export function parseDateTime(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.exec(text);
  if (!m) return null;
  const ms = Date.parse(text.toUpperCase());
  if (Number.isNaN(ms)) return null;
  // Date.parse rolls 2027-02-30 over into March: the fields must name a real day and time.
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  const offset = m[8]!.toUpperCase() === 'Z' ? 0 : (m[8]!.startsWith('-') ? -1 : 1) * (Number(m[8]!.slice(1, 3)) * 60 + Number(m[8]!.slice(4, 6)));
  const local = new Date(ms + offset * 60_000);
  const real = local.getUTCFullYear() === y && local.getUTCMonth() + 1 === mo && local.getUTCDate() === d
    && local.getUTCHours() === h && local.getUTCMinutes() === mi && local.getUTCSeconds() === s;
  return real ? ms : null;
}

/** When `token` stops being accepted under a maximum lifetime of `maxTtlMs` (null: none); null if never. */
export function expiryOf(token: TokenRecord, maxTtlMs: number | null): number | null {
  const own = token.expiresAt ? Date.parse(token.expiresAt) : null;
  const cap = maxTtlMs === null ? null : Date.parse(token.createdAt) + maxTtlMs;
  if (own === null) return cap;
  return cap === null ? own : Math.min(own, cap);
}

/** Whether `token` is past its expiry at `now` (checked to the millisecond, on every request). */
export const hasExpired = (token: TokenRecord, maxTtlMs: number | null, now = Date.now()): boolean => {
  const expiry = expiryOf(token, maxTtlMs);
  return expiry !== null && now >= expiry;
};
