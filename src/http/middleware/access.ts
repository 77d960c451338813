// The §7 precedence: 401 (token) before 503 (no snapshot, so no organization can be judged) before 404
// (organization) — and only then do handlers look at parameters (400/422).
import type { Middleware } from 'koa';
import { bearerOf, verifyToken } from '../../access/tokens.js';
import { mayExplore } from '../../access/policy.js';
import { noSnapshot, notFound, unauthorized } from '../../errors.js';
import type { SnapshotRegistry } from '../../snapshots/current-snapshot.js';
import type { TokenStore } from '../../store/state-store.js';
import type { RequestState } from '../state.js';

export const authenticate = (tokens: TokenStore): Middleware<RequestState> => async (ctx, next) => {
  const bearer = bearerOf(ctx.get('Authorization') || undefined);
  if (!bearer) throw unauthorized();
  const token = await verifyToken(tokens, bearer);
  if (!token) throw unauthorized('The API token is not valid: it is unknown, revoked or mistyped.');
  ctx.state.token = token;
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
