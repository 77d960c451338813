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

export const authorizeOrganization = (snapshots: SnapshotRegistry): Middleware<RequestState> => async (ctx, next) => {
  const organization = (ctx as unknown as { params: Record<string, string> }).params.organization_name!;
  const lease = snapshots.acquire();
  if (!lease) throw noSnapshot();
  ctx.state.lease = lease; // released by the request log when the response is done
  if (!mayExplore(ctx.state.token!, organization, lease.snapshot)) throw notFound();
  ctx.state.organization = organization;
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

/** After authorizeOrganization: a read-only token (an auditor's) may read what it reaches and change nothing. */
export const refuseWritesOfReaders = (): Middleware<RequestState> => async (ctx, next) => {
  if (readOnly(ctx.state.token!) && !READING.has(ctx.method)) {
    throw forbidden('This token is read-only (an auditor token): it may read every organization and change nothing.');
  }
  await next();
};
