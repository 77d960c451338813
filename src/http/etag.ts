// Conditional GETs (RFC 9110 §8.8.3, §13.1.2). A query's ETag is derived, before anything runs, from what
// decides its bytes: the snapshot, the organization and the compiled statement (the normalized request:
// two spellings of one query compile to the same SQL and parameters) plus the links' base. A saved view's
// own document is hashed as rendered. A match answers 304 without running the query.
import { createHash } from 'node:crypto';
import type { ParameterizedContext } from 'koa';

export function entityTag(parts: readonly unknown[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(typeof part === 'string' || Buffer.isBuffer(part) ? part : JSON.stringify(part, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))).update('\0');
  return `"${hash.digest('base64url').slice(0, 32)}"`;
}

/** Whether an If-None-Match header matches `etag` (weak comparison, as §13.1.2 asks). */
export function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  const mine = opaque(etag);
  return header.split(',').some((tag) => opaque(tag) === mine);
}

/**
 * Answers 304 and returns true when the client already holds this representation. Otherwise the caller
 * sets the ETag on its success response only (an error must not carry the tag of what it failed to make).
 * Cache-Control is the caller's: it is the same on the 304 as on the 200.
 */
export function notModified(ctx: ParameterizedContext, etag: string): boolean {
  if (!ifNoneMatch(ctx.get('If-None-Match') || undefined, etag)) return false;
  ctx.status = 304;
  ctx.set('ETag', etag);
  ctx.body = null;
  return true;
}

/** Responses hold one organization's data: private to the caller, and checked again before each reuse. */
export const REVALIDATE = 'private, no-cache';
