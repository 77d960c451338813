// page[after] (docs/data-out.md): a walk of cursor pages over one query, pinned to the snapshots it began on.
// The query parser reads page[after] (Page.cursor); here it is checked against the walk and its snapshots held.
import type { ParameterizedContext } from 'koa';
import { badParameter } from '../errors.js';
import type { SortTerm } from '../query/compile.js';
import { CursorError, cursorScope, decodeCursor, readableAs } from '../query/cursor.js';
import type { Condition, Query } from '../query/query.js';
import type { Snapshot, SnapshotRegistry } from '../snapshots/read/current-snapshot.js';
import type { RequestState } from './state.js';
import { hold, organizationHistory, readSnapshot } from './time-travel.js';

type Ctx = ParameterizedContext<RequestState>;

/** A cursor page's request: where it starts and what the next cursor is made of. */
export interface Walk {
  /** page[after] as received: `self` repeats it. */
  received: string;
  scope: string;
  /** The sort term values of the row the page follows; empty from the start. */
  after: (string | null)[];
  /** The snapshots the walk reads, as the next cursor names them. */
  snapshots: string[];
}

const conditionsKey = (conditions: readonly Condition[]) => conditions.map((c) => [c.field.name, c.operator, c.values]);

/** The parts of a query that a walk is bound to: its view, filters and sort (not its fields or page size). */
export const queryScope = (query: Query): unknown[] =>
  [query.view.name, conditionsKey(query.conditions), query.sort.map((k) => [k.field.name, k.descending])];

const refused = (detail: string) => badParameter('page[after]', detail);

/** The route a walk is bound to: a saved view's (by its id), or the query string's. */
const routeOf = (ctx: Ctx) => {
  if (ctx.state.across) return 'across';
  const viewId = (ctx as Ctx & { params?: Record<string, string> }).params?.view_id;
  return viewId === undefined ? 'explorer' : `views/${viewId}`;
};

/**
 * Reads page[after] against the walk it must belong to: the organization, the route and `scopeParts` (what
 * the query is); its values must be `terms`' (the sort's, in order), with `position` optionally followed by
 * a row position and its layout. From the start, the walk reads the request's snapshots; after a cursor,
 * the ones it names, which must still be retained. Returns them, held for the request, or null from the start.
 */
export async function resumeWalk(ctx: Ctx, registry: SnapshotRegistry, received: string, scopeParts: unknown[], terms: readonly SortTerm[], position = false)
  : Promise<{ scope: string; after: (string | null)[]; snapshots: Snapshot[] | null }> {
  const scope = cursorScope([ctx.state.organization ?? '', routeOf(ctx), ...scopeParts]);
  if (received === '') return { scope, after: [], snapshots: null };
  let cursor;
  try {
    cursor = decodeCursor(received);
  } catch (e) {
    if (e instanceof CursorError) throw refused(`page[after] is not a cursor of this walk: ${e.message}. Start again with page[after]= (empty).`);
    throw e;
  }
  // A query's cursor may carry its row's position and the layout it is in after the term values (compile.ts,
  // a page in stored order).
  const types = [...terms.map((t) => t.type), ...(position ? ['BIGINT' as const, 'VARCHAR' as const] : [])];
  if (cursor.scope !== scope || (cursor.after.length !== terms.length && cursor.after.length !== types.length)) {
    throw refused('page[after] belongs to another walk: the organization (or all organizations), route, type, filters or sort differ from the request that gave it. Start again with page[after]= (empty).');
  }
  cursor.after.forEach((value, i) => {
    if (value !== null && !readableAs(types[i]!, value)) throw refused('page[after] is not a cursor this service gave: a value in it cannot be read.');
  });
  // The snapshot the request reads already (a walk of the current one): held by the request's own lease.
  const current = ctx.state.lease!.snapshot;
  if (cursor.snapshots.every((id) => id === current.id)) return { scope, after: cursor.after, snapshots: cursor.snapshots.map(() => current) };
  const retained = await organizationHistory(ctx, registry);
  const snapshots = cursor.snapshots.map((id) => {
    const found = retained.find((s) => s.id === id);
    if (!found) throw refused(`The snapshot ${id} that this walk reads is no longer retained. Start again with page[after]= (empty).`);
    return hold(ctx, registry, found.snapshot);
  });
  return { scope, after: cursor.after, snapshots };
}

/** `query` resumed where its walk left off: the compiler reads the rows after `walk.after` (none: a numbered page, unchanged). */
export const resumed = (query: Query, walk: Walk | undefined): Query => (walk ? { ...query, page: { ...query.page, after: walk.after } } : query);

/** Whether a request names the snapshot it reads (`snapshot` or `as_of`), from the parameters its links carry. */
export const namesSnapshot = (carried: readonly [string, string][]) => carried.some(([k]) => k === 'snapshot' || k === 'as_of');

/**
 * A cursor page of one snapshot (queries, saved-view results, summaries): `received` is the query's
 * page[after] (Page.cursor; none: a numbered page), and the request reads the walk's snapshot. `snapshot` or
 * `as_of` may name it again (`named`: links carry them); naming another is a 400.
 */
export async function snapshotWalk(ctx: Ctx, registry: SnapshotRegistry, received: string | undefined, named: boolean, scopeParts: unknown[], terms: readonly SortTerm[], position = false): Promise<Walk | undefined> {
  if (received === undefined) return undefined;
  const { scope, after, snapshots } = await resumeWalk(ctx, registry, received, scopeParts, terms, position);
  const pinned = snapshots?.[0];
  if (pinned && pinned.id !== ctx.state.lease!.snapshot.id) {
    if (named) {
      throw refused(`page[after] reads snapshot ${pinned.id}, and the request names ${ctx.state.lease!.snapshot.id}: a walk keeps the snapshot it began on.`);
    }
    readSnapshot(ctx, registry, pinned);
  }
  return { received, scope, after, snapshots: [ctx.state.lease!.snapshot.id] };
}
