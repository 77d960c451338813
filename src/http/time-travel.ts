// Which snapshots a request reads (docs/history.md §3): the current one, unless `snapshot` / `as_of` name a
// retained one. Each snapshot read is leased, so that retention removes none while the request uses it.
// An answer says how fresh its data is: Last-Modified, the time its newest snapshot read became current.
import type { ParameterizedContext } from 'koa';
import { chooseSnapshot } from '../query/snapshot-choice.js';
import type { Snapshot, SnapshotRegistry } from '../snapshots/read/current-snapshot.js';
import type { RequestState } from './state.js';

type Ctx = ParameterizedContext<RequestState>;

/** A retained snapshot as the choice functions see it. */
export interface RetainedSnapshot {
  id: string;
  loadedAt: string;
  snapshot: Snapshot;
}

/**
 * The retained snapshots that include the request's organization (across organizations: every one), oldest
 * first; the current one always.
 */
export async function organizationHistory(ctx: Ctx, registry: SnapshotRegistry): Promise<RetainedSnapshot[]> {
  const organization = ctx.state.organization;
  const current = ctx.state.lease!.snapshot;
  const all = await registry.history();
  if (!all.some((s) => s.id === current.id)) all.push(current);
  return all
    .filter((s) => s.id <= current.id && (organization === undefined || s.organizations.has(organization)))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((snapshot) => ({ id: snapshot.id, loadedAt: snapshot.manifest.createdAt, snapshot }));
}

/** Leases `snapshot` for the rest of the request. */
export function hold(ctx: Ctx, registry: SnapshotRegistry, snapshot: Snapshot): Snapshot {
  (ctx.state.history ??= []).push(registry.lease(snapshot));
  return snapshot;
}

/**
 * Makes the request read the snapshot its `snapshot` or `as_of` parameter names, if any, and returns that
 * parameter as received, for links to carry. Throws the 400 of docs/history.md §3 for a bad one.
 */
export async function travel(ctx: Ctx, registry: SnapshotRegistry, params: ReadonlyMap<string, string>): Promise<[string, string][]> {
  if (!params.has('snapshot') && !params.has('as_of')) return [];
  const chosen = chooseSnapshot(params, await organizationHistory(ctx, registry));
  const carried: [string, string][] = params.has('snapshot') ? [['snapshot', params.get('snapshot')!]] : [['as_of', params.get('as_of')!]];
  if (chosen) readSnapshot(ctx, registry, chosen.snapshot);
  return carried;
}

/** Makes the request read `snapshot` (a retained one) instead of the one it read so far. */
export function readSnapshot(ctx: Ctx, registry: SnapshotRegistry, snapshot: Snapshot): void {
  if (snapshot.id === ctx.state.lease!.snapshot.id) return;
  // The lease of the snapshot read so far is kept (and released) with the others.
  (ctx.state.history ??= []).push(ctx.state.lease!);
  ctx.state.lease = registry.lease(snapshot);
  ctx.set('X-Explorer-Snapshot', snapshot.id);
}

/**
 * Records that the answer's data is as of `snapshot`, the newest it reads: `Last-Modified` (RFC 9110
 * §8.8.2) is the time that snapshot became current, on the answer and on its 304 alike. An error carries
 * none (jsonapi.ts sendError). Returns `snapshot`.
 */
export function readAsOf(ctx: Ctx, snapshot: Snapshot): Snapshot {
  ctx.set('Last-Modified', new Date(snapshot.manifest.createdAt).toUTCString());
  return snapshot;
}

/** `loaded-at` as row datetimes are written (docs/interface.md): milliseconds and `+00:00`. */
export const loadedAt = (snapshot: Snapshot) => new Date(snapshot.manifest.createdAt).toISOString().replace('Z', '+00:00');
