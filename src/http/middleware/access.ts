// The §7 precedence: 401 (token) before 503 (no snapshot, so no organization can be judged) before 404
// (organization) — and only then do handlers look at parameters (400/422). Identification comes first
// and does not fail, so that the rate limit can count callers without a valid token by address.
import type { Middleware } from 'koa';
import { rateLimitContext, mayExplore, readOnly } from '../../access/policy.js';
import { bearerOf, verifyToken } from '../../access/tokens.js';
import { ApiError, forbidden, noSnapshot, notFound, unauthorized } from '../../errors.js';
import type { SnapshotRegistry } from '../../snapshots/read/current-snapshot.js';
import { StoreUnavailableError, type TokenStore } from '../../store/state-store.js';
import type { RequestState } from '../state.js';
import type { AuditLog } from '../../audit/audit-log.js';
import type { Logger } from '../../log.js';
import type { OrganizationReads } from '../../metrics/organization-reads.js';
import { auditOnClose } from './audit.js';

/** Finds the caller's token, if any (an expired one is none: `maxTtlMs` is TOKEN_MAX_TTL); sets the rate-limit context either way. */
export const identify = (tokens: TokenStore, maxTtlMs: number | null): Middleware<RequestState> => async (ctx, next) => {
  const bearer = bearerOf(ctx.get('Authorization') || undefined);
  if (bearer) {
    try {
      const token = await verifyToken(tokens, bearer, maxTtlMs);
      if (token) ctx.state.token = token;
    } catch (e) {
      if (!(e instanceof StoreUnavailableError)) throw e;
      throw new ApiError(503, 'service unavailable', 'Tokens cannot be checked right now; retry shortly.', undefined, { 'Retry-After': '5' });
    }
  }
  ctx.state.rateKey = ctx.state.token ? rateLimitContext(ctx.state.token) : `ip:${ctx.ip}`;
  await next();
};

export const requireToken = (): Middleware<RequestState> => async (ctx, next) => {
  if (!ctx.state.token) {
    throw ctx.get('Authorization') ? unauthorized('The API token is not valid: it is unknown, revoked, expired or mistyped.') : unauthorized();
  }
  await next();
};

/** `reads` counts each organization a request is authorized for (organization-reads.ts: the follower tidies the most-read first). */
export const authorizeOrganization = (snapshots: SnapshotRegistry, reads?: OrganizationReads): Middleware<RequestState> => async (ctx, next) => {
  const organization = (ctx as unknown as { params: Record<string, string> }).params.organization_name!;
  const lease = snapshots.acquire();
  if (!lease) throw noSnapshot();
  ctx.state.lease = lease; // released by the request log when the response is done
  if (!mayExplore(ctx.state.token!, organization, lease.snapshot)) throw notFound();
  ctx.state.organization = organization;
  reads?.record(organization);
  ctx.set('X-Explorer-Snapshot', lease.snapshot.id);
  await next();
};

/** The cross-organization routes: a snapshot to read; which organizations the token reaches is the handler's (reach.ts). */
export const acrossOrganizations = (snapshots: SnapshotRegistry): Middleware<RequestState> => async (ctx, next) => {
  const lease = snapshots.acquire();
  if (!lease) throw noSnapshot();
  ctx.state.lease = lease; // released by the request log when the response is done
  ctx.state.across = true;
  ctx.set('X-Explorer-Snapshot', lease.snapshot.id);
  await next();
};

const READING = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A write no route takes (PUT anywhere, POST on a read route) answers 405 (Allow) to anyone, before any token
 * is looked at; a read-only token is told 403 instead where it reads, as on every writing route: on the
 * cross-organization routes and on the routes of an organization that exists. Runs outside the routers,
 * after them: only a 405 is looked at again.
 */
export const refuseWritesOfReadersWithoutRoute = (tokens: TokenStore, maxTtlMs: number | null, snapshots: SnapshotRegistry, audit: { log: AuditLog; logger: Logger }): Middleware<RequestState> => async (ctx, next) => {
  await next();
  if (ctx.status !== 405 || READING.has(ctx.method)) return;
  const bearer = bearerOf(ctx.get('Authorization') || undefined);
  const token = bearer ? await verifyToken(tokens, bearer, maxTtlMs).catch(() => null) : null;
  if (!token || !readOnly(token)) return;
  const organization = /^\/api\/v2\/organizations\/([^/]+)(?:\/|$)/.exec(ctx.path)?.[1];
  const current = snapshots.current;
  let name: string | null = null;
  try { name = organization === undefined ? null : decodeURIComponent(organization); } catch { return; }
  const reads = organization === undefined ? /^\/api\/v2\/explorer(?:\/|$)/.test(ctx.path)
    : current.status === 'ready' && current.snapshot.organizations.has(name!);
  if (!reads) return;
  ctx.remove('Allow');
  // Its request is accounted for as every other of its requests (audit.ts).
  auditOnClose(audit.log, audit.logger, ctx, token, () => (organization === undefined ? 0 : name));
  throw forbidden('This token is read-only (an auditor token): it may read every organization and change nothing.');
};

/** After authorizeOrganization: a read-only token (an auditor's) may read what it reaches and change nothing. */
export const refuseWritesOfReaders = (): Middleware<RequestState> => async (ctx, next) => {
  if (readOnly(ctx.state.token!) && !READING.has(ctx.method)) {
    throw forbidden('This token is read-only (an auditor token): it may read every organization and change nothing.');
  }
  await next();
};
