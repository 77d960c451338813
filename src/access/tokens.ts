// Bearer tokens are `<id>.<secret>`. The id finds the record; only SHA-256 of the secret is stored, and it
// is compared in constant time so that response timing reveals nothing about a guessed secret.
import { createHash, timingSafeEqual } from 'node:crypto';
import { randomBase62 } from '../ids.js';
import { hasExpired } from './lifetimes.js';
import type { TokenKind, TokenRecord, TokenStore } from '../store/state-store.js';

const TOKEN = /^(at-[A-Za-z0-9]{16})\.([A-Za-z0-9]{40})$/;

const hashSecret = (secret: string) => createHash('sha256').update(secret, 'utf8').digest('hex');

export interface NewToken {
  kind: TokenKind;
  organization?: string | null;
  team?: string | null;
  user?: string | null;
  description?: string | null;
  /** When it stops being accepted (epoch ms); none: never. */
  expiresAt?: number | null;
}

/** Creates and stores a token; the returned bearer string is the only copy of its secret. */
export async function issueToken(store: TokenStore, spec: NewToken): Promise<{ record: TokenRecord; token: string }> {
  const id = `at-${randomBase62(16)}`;
  const secret = randomBase62(40);
  const record: TokenRecord = {
    id,
    kind: spec.kind,
    organization: spec.organization ?? null,
    team: spec.team ?? null,
    user: spec.user ?? null,
    secretHash: hashSecret(secret),
    createdAt: new Date().toISOString(),
    description: spec.description ?? null,
    ...(spec.expiresAt == null ? {} : { expiresAt: new Date(spec.expiresAt).toISOString() }),
  };
  await store.putToken(record);
  return { record, token: `${id}.${secret}` };
}

/**
 * The record of a valid bearer token, or null for anything else (malformed, unknown, revoked, wrong secret,
 * expired: lifetimes.ts, under a maximum lifetime of `maxTtlMs`).
 */
export async function verifyToken(store: TokenStore, bearer: string, maxTtlMs: number | null = null): Promise<TokenRecord | null> {
  const m = TOKEN.exec(bearer);
  if (!m) return null;
  const record = await store.getToken(m[1]!);
  const presented = Buffer.from(hashSecret(m[2]!), 'hex');
  // Compare even when the id is unknown, so that both paths take the same time.
  const expected = Buffer.from(record?.secretHash ?? '0'.repeat(64), 'hex');
  const equal = expected.length === presented.length && timingSafeEqual(expected, presented);
  return record && equal && !hasExpired(record, maxTtlMs) ? record : null;
}

/** The bearer token of an Authorization header value, or null. */
export function bearerOf(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return m ? m[1]! : null;
}
