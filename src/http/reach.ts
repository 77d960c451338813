// Whose rows a request reads: the organization its path names, or — on the cross-organization routes
// (docs/access.md) — every organization its token reaches in the snapshot it reads.
import type { ParameterizedContext } from 'koa';
import { reach } from '../access/policy.js';
import type { CompileTarget } from '../query/compile.js';
import type { Snapshot } from '../snapshots/read/current-snapshot.js';
import type { RequestState } from './state.js';

type Ctx = ParameterizedContext<RequestState>;

/** Where `view`'s rows for this request are in `snapshot`; across organizations, those of every organization the token reaches there. */
export function readTarget(ctx: Ctx, snapshot: Snapshot, view: string): CompileTarget {
  if (!ctx.state.across) return snapshot.target(view, ctx.state.organization!);
  const reached = reach(ctx.state.token!, snapshot);
  ctx.state.reached = reached.length;
  // How many organizations the answer read: the page offers "All organizations" when it is more than one.
  ctx.set('X-Explorer-Organizations', String(reached.length));
  return snapshot.across(view, reached);
}

/**
 * The request's scope as answers, cursors and downloads name it: its organization, or `*` across
 * organizations (never an organization's name: which ones an answer read is in its statement).
 */
export const scopeName = (ctx: Ctx): string => (ctx.state.across ? '*' : ctx.state.organization!);

/** Who a query waits behind for admission (pool/admission.ts): its organization, or across organizations its caller. */
export const admissionKey = (ctx: Ctx): string => (ctx.state.across ? `across:${ctx.state.rateKey}` : ctx.state.organization!);

/** The first part of a download's file name. */
export const downloadName = (ctx: Ctx): string => (ctx.state.across ? 'all-organizations' : ctx.state.organization!);
