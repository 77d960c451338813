// The contract between the change-batch writer (write/apply.ts) and the readers (the server's registry, the
// batch validator's state): what a batch snapshot's delta file holds and how its rows merge with the base's.
//
// A delta is cumulative: it holds everything the batches since the base changed, so a read merges two files,
// never a chain. In it:
//   replaced_workspaces (_org_key,           every workspace whose base rows no longer stand: changed,
//     organization, id)
//                                            deleted, or whose project or organization changed a value its
//                                            rows carry
//   <view> for views with rows per workspace  the current rows of those workspaces that exist
//   <view> for views grouped across them      every row of each organization in deltaOrganizations
//   source_organizations, source_projects,    the whole source state of these (small) kinds
//   source_teams, source_team_members
//   source_workspaces, source_providers,      the replaced workspaces' current source state
//   source_modules
// View tables have the base's columns; their rows are stored in the base's order (organization key, then the
// view's default order), with positions (`_pos`) above every base position.
import { workspaceColumn } from '../catalog/catalog.js';
import { ident } from '../query/compile.js';

export const DELTA_FILE = 'delta.duckdb';
/** A delta row's position is this plus its rowid in the delta's table: no base row has one so high. */
export const DELTA_POSITION_BASE = 2 ** 40;
/** Source-state kinds a delta stores whole. */
export const WHOLE_STATE = ['organizations', 'projects', 'teams', 'team_members'] as const;
/** Source-state kinds a delta stores for its replaced workspaces only, by the column naming the workspace. */
export const WORKSPACE_STATE = { workspaces: 'id', providers: 'workspace_id', modules: 'workspace_id' } as const;
export type StateKind = (typeof WHOLE_STATE)[number] | keyof typeof WORKSPACE_STATE;

/**
 * The base rows whose workspace the delta (alias `delta`) replaced, left out of `rows` (whose workspace is in
 * `column`). With an organization's key, only that organization's replaced workspaces are looked up: the
 * table is stored in key order, so the lookup reads a few row groups instead of every replaced workspace.
 */
const standing = (rows: string, column: string, delta: string, organizationKey?: number) =>
  `SELECT * FROM ${rows} b WHERE NOT EXISTS (SELECT 1 FROM ${delta}.replaced_workspaces r WHERE r.id = b.${ident(column)}${
    organizationKey === undefined ? '' : ` AND r._org_key = ${Math.trunc(organizationKey)}`})`;

/**
 * The rows of `view` as base and delta give them together, for a view with rows per workspace: the base's
 * that stand, then the delta's. `base` and `delta` are the attached databases' aliases. Given the key of
 * the one organization a read is about (a number from the manifest, never a client's), only its replaced
 * workspaces are looked up.
 */
export function mergedViewRows(base: string, delta: string, view: string, organizationKey?: number): string {
  const column = workspaceColumn(view);
  if (!column) throw new Error(`view ${view} has no rows per workspace`);
  return `(${standing(`${base}.${ident(view)}`, column, delta, organizationKey)}\n  UNION ALL SELECT * FROM ${delta}.${ident(view)})`;
}

/** The source state of `kind` as base and delta (null: none) give them together. */
export function mergedState(base: string, delta: string | null, kind: StateKind): string {
  const table = `source_${kind}`;
  if (delta === null) return `${base}.${table}`;
  if ((WHOLE_STATE as readonly string[]).includes(kind)) return `${delta}.${table}`;
  const column = WORKSPACE_STATE[kind as keyof typeof WORKSPACE_STATE];
  return `(${standing(`${base}.${table}`, column, delta)}\n  UNION ALL SELECT * FROM ${delta}.${table})`;
}
