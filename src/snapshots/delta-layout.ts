// The contract between the change-batch writer (write/apply.ts) and the readers (the server's registry, the
// batch validator's state): what a batch snapshot's layer files hold and how their rows merge with the base's.
//
// An organization reads at most three layers: where its rows lie whole (its overlay, else the whole layer if
// it holds it, else the base), then the older delta (`major.duckdb`) and the newer one (`delta.duckdb`) where
// they hold it. The layers under the deltas are:
//   the base                the loaded snapshot's file
//   the whole layer         `whole-<n>.duckdb`, written by the follower's compaction (write/whole-layer.ts):
//                           the organizations the deltas held, each whole, in the base's layout; and a large
//                           organization (RUN_ROWS) whose changes replace little of it (RUN_SHARE) as a run
//                           over its lowest layer (the base, or a file a compaction wrote and left in place):
//                           the rows of its workspaces changed since that layer was written, as a delta holds
//                           them, which the manifest lists apart (wholeRuns, with the file each lies over)
//   overlays                `overlay-<n>.duckdb`, written by batches (write/delta.ts writeOverlay): a small organization
//                           a batch touches (at most BATCH_WHOLE_ROWS rows; none by default) that no delta holds is written
//                           whole into the batch's overlay, which the manifest then names as its current copy;
//                           its write is its compaction, and it reads one file with the base's plans. The
//                           manifest keeps at most MAX_OVERLAYS of them: past that, a batch's overlay also
//                           takes in the organizations of the overlays that hold the fewest rows. An organization
//                           a batch deletes is written whole too, with no rows: its overlay hides it by its key.
//                           After a batch, the follower's tidying (write/tidy.ts) writes a unit of the small
//                           organizations the deltas hold into `overlay-<n>-tidy.duckdb` and takes them off the
//                           manifest's lists of the deltas' organizations: the deltas forget them unrewritten.
// A batch that touches an organization of at most LIFT_ROWS rows that the older delta holds **lifts** it: the
// newer delta takes in its rows there that still stand (in the batch's run) and replaces its workspaces the
// older delta replaced, and the manifest no longer lists it as the older delta's. The older delta file is not
// rewritten: what it still stores of the organization is replaced by the newer delta for every read that
// goes by the files (the writers' merges), and the manifest's readers read the organization from the layer
// under the deltas and the newer delta alone.
// An overlay holds the same tables as the whole layer; every organization it is the current copy of replaces
// that organization's rows below it whole (by organization key for views, by name for the source state).
// Each delta is cumulative over the layers below it: a batch writes a new newer delta only, as a copy of the
// current one's file changed in place (write/delta.ts attachStack), so its cost follows what it changes;
// once the newer delta holds enough workspaces or bytes, or the
// batch itself is large (apply.ts FOLD_WORKSPACES, FOLD_BYTES, FOLD_BATCH_WORKSPACES), a batch folds it into a
// new older delta instead. A delta holds:
//   replaced_workspaces                       every workspace whose rows below no longer stand: changed,
//     (_org_key, organization, id)            deleted, or whose project or organization changed a value its
//                                            rows carry
//   <view> for views with rows per workspace  the current rows of those workspaces that exist
//   <view> for views grouped across them      every row of each organization it holds
//   held_organizations (name)                 the organizations whose rows it holds (whole or in part)
//   source_organizations, source_projects,    the whole source state of these (small) kinds
//   source_teams, source_team_members
//   source_workspaces, source_providers,      the replaced workspaces' current source state
//   source_modules
// View tables have the base's columns and are a series of runs, one per batch: the rows a batch wrote, in the
// base's order (organization key, then the view's default order), after the earlier batches' rows that still
// stand; an older delta, written by a fold, is one run sorted whole. An organization of a grouped view lies
// whole, in order, in one run. Positions (`_pos`) are unique
// across the layers: the n-th batch since the load numbers its rows from DELTA_POSITION_BASE + n × BATCH_POSITIONS.
// The whole layer has the same tables, each organization it holds whole in one run in the base's order (with
// the base's position index and index tables), and replaces every base workspace of those organizations.
import { POSITION_COLUMN, VIEW_NAMES, workspaceColumn } from '../catalog/catalog.js';
import { ident, sqlLiteral } from '../duckdb/sql.js';
import type { Manifest } from './snapshot-dir.js';


export const DELTA_FILE = 'delta.duckdb';
/** The older, larger delta a snapshot may also read (delta-layout above): a small delta folded into it. */
export const MAJOR_FILE = 'major.duckdb';
/**
 * The layer that holds organizations whole, under the deltas (write/whole-layer.ts), numbered by the
 * batches the compacted snapshot had: a compaction never reuses the name of a file a manifest names.
 */
export const wholeFile = (sequence: number) => `whole-${Math.trunc(sequence)}.duckdb`;
/** The overlay a batch writes (delta-layout above), numbered by the batch's sequence. */
export const overlayFile = (sequence: number) => `overlay-${Math.trunc(sequence)}.duckdb`;
/** The overlay a tidying unit writes into the snapshot of that sequence (write/tidy.ts): one a snapshot. */
export const tidyFile = (sequence: number) => `overlay-${Math.trunc(sequence)}-tidy.duckdb`;
export const isTidyFile = (file: string) => /^overlay-\d+-tidy\.duckdb$/.test(file);
/** A compaction's file (wholeFile), whether the whole layer or one a later compaction left in place among the overlays. */
export const isWholeFile = (file: string) => /^whole-\d+\.duckdb$/.test(file);
/**
 * Files a compaction wrote that later compactions left in place (write/whole-layer.ts planCompaction), kept
 * among the overlays: past this many, the smallest are rewritten with the next compaction whatever their size.
 */
export const KEPT_WHOLE_LAYERS = 4;
/**
 * An organization of more than this many rows of workspaces and resources whose lowest layer is the base or a
 * file a compaction wrote is compacted as a run over that layer (the whole layer holds its workspaces changed
 * since, and lists the positions of that layer's rows they replace) while those replace at most RUN_SHARE of
 * its workspaces, that layer left in place: a compaction then costs what changed of it, not its every row.
 * Written whole, the bench snapshot's largest organization (2.2 million rows) cost every compaction most of its
 * CPU, and every large batch of the stream touches it (docs/performance.md, "A large organization compacted as
 * a run").
 */
export const RUN_ROWS = 200_000;
/** The share of its workspaces a run may replace before a compaction writes the organization whole (RUN_ROWS). */
export const RUN_SHARE = 0.1;

/**
 * A touched organization with at most this many rows of workspaces and resources after the batch, that no
 * delta holds, is written whole into the batch's overlay: it then reads one file as an untouched organization
 * reads the base. None by default (BATCH_WHOLE_ROWS sets a bound): on the bench snapshot, 20,000 makes the
 * touched small organizations' pages 0.92–0.99× the base's instead of 1.9–5.1×, but a 10-workspace batch
 * costs 2.5–4× the CPU (it copies its organizations' rows, not its workspaces'), and under the steady stream
 * the follower fell further behind (docs/performance.md, "Steady stream: small organizations written whole").
 */
export const WHOLE_ROWS = 0;

/**
 * A batch's newer delta takes over whole each organization it touches that the older delta holds and that has
 * at most this many rows of workspaces and resources (write/delta.ts liftFromOlder): such an organization then
 * reads the layer under the deltas and one delta, never both deltas and a join between them. The bound keeps
 * the copy small (an organization's rows in the older delta are those of its changed workspaces) and covers
 * 1,868 of the bench snapshot's 2,000 organizations.
 */
export const LIFT_ROWS = 20_000;

/**
 * With INGEST_TIDY_ROWS set, the follower tidies organizations of at most that many rows of workspaces and
 * resources that the deltas hold (write/tidy.ts), a unit taking up to TIDY_UNIT_ROWS of them
 * (INGEST_TIDY_UNIT_ROWS) after each batch. None by default: on the bench snapshot a unit of six small
 * organizations costs 2.4–2.6 s of CPU, most of it copying their rows' serving columns, more than the 10-workspace
 * batch before it, and under the stream's rate it could not keep its organizations tidied (docs/performance.md,
 * "Steady stream: tidying").
 */
export const TIDY_ROWS = 0;
export const TIDY_UNIT_ROWS = 50_000;
/**
 * With INGEST_TIDY_SHARE set, the follower also tidies an organization of any size once the deltas replace that
 * share of its workspaces (write/tidy.ts tidyCandidates): it is then written whole once per that share of it
 * changed, and the next fold leaves its rows out of the older delta.
 */
export const TIDY_SHARE = 0;
/**
 * Only organizations of more than this many rows of workspaces and resources are in debt by their share
 * replaced: a smaller one is lifted into the newer delta (LIFT_ROWS), so what the deltas hold of it stays small,
 * and on the bench snapshot tidying the 5,000-row organizations the stream's large batches touch cost 0.6 s of
 * CPU a unit, after nearly every batch, and filled the overlays (docs/performance.md, "Steady stream: the
 * largest organization by its share replaced").
 */
export const TIDY_SHARE_ROWS = LIFT_ROWS;
/**
 * The share of a core tidying spends on average (INGEST_TIDY_CPU; write/cpu-budget.ts): a unit starts only
 * while the follower's budget has CPU-seconds left, and its cost is charged to it once done.
 */
export const TIDY_CPU = 0.1;
/**
 * The longest a lone batch waits for others to share its snapshot while more organizations are in debt than
 * tidying keeps up with (INGEST_COALESCE_MAX_SECONDS; write/ingest.ts coalesceDelayMs).
 */
export const COALESCE_MAX_MS = 5_000;

/**
 * Overlays a snapshot keeps. A batch that finds this many makes its own overlay take in the organizations of
 * the smaller half of them (by rows) among those batches and tidying wrote, so that an organization is copied
 * again a few times over its life rather than every batch, and a snapshot has at most this many overlays plus
 * one, the kept layers of compactions (KEPT_WHOLE_LAYERS) among them or besides.
 */
export const MAX_OVERLAYS = 8;
/**
 * Overlays number their rows apart from the deltas and whole layers, from OVERLAY_POSITION_BASE + n × OVERLAY_POSITIONS
 * for the n-th batch's overlay (n below 2^23).
 */
export const OVERLAY_POSITION_BASE = 2 ** 51;
export const OVERLAY_POSITIONS = 2 ** 28;
/**
 * The upper part of the n-th batch's range is the tidying unit's of snapshot n (write/tidy.ts); the batch's
 * overlay numbers its rows in the lower part.
 */
export const TIDY_POSITIONS = 2 ** 27;
/** Delta positions start here, above every base position. */
export const DELTA_POSITION_BASE = 2 ** 40;
/** Positions each batch numbers its rows in (the n-th batch since the load: from DELTA_POSITION_BASE + n × this). */
export const BATCH_POSITIONS = 2 ** 24;
/**
 * Whole layers number their rows apart from every delta, from WHOLE_POSITION_BASE + n × WHOLE_POSITIONS for
 * the layer compacted from the snapshot of sequence n: a compaction that runs while batches apply lands under
 * deltas written meanwhile (write/whole-layer.ts), whose positions must differ from its own. Below 2^53.
 */
export const WHOLE_POSITION_BASE = 2 ** 52;
export const WHOLE_POSITIONS = 2 ** 28;
/** Source-state kinds a delta stores whole. */
export const WHOLE_STATE = ['organizations', 'projects', 'teams', 'team_members'] as const;
/** Source-state kinds a delta stores for its replaced workspaces only, by the column naming the workspace. */
export const WORKSPACE_STATE = { workspaces: 'id', providers: 'workspace_id', modules: 'workspace_id' } as const;
export type StateKind = (typeof WHOLE_STATE)[number] | keyof typeof WORKSPACE_STATE;

/** Whether two manifests read the same layers under the deltas: the same base file and whole layer. */
export const sameLayersBelow = (a: Manifest, b: Manifest) => a.base === b.base && a.database === b.database && a.whole === b.whole && a.wholeId === b.wholeId;

/**
 * Whether `now` is a later batch snapshot of `read`'s line: the same layers under the deltas, and batches that
 * continue `read`'s (its last batch among them), so that the batches since only stacked deltas. What a
 * background writer that read `read` may put its file under (write/whole-layer.ts, write/tidy.ts).
 */
export function continuesLine(read: Manifest, now: Manifest): boolean {
  const last = read.batches?.[read.batches.length - 1];
  return sameLayersBelow(read, now) && (now.sequence ?? 0) > (read.sequence ?? 0)
    && (last === undefined || (now.batches ?? []).some((b) => b.name === last.name && b.digest === last.digest && b.arrivedAt === last.arrivedAt));
}

/**
 * `rows` of one layer less those whose workspace (in `column`) a later layer replaced. An explicit anti join
 * on each later layer's replaced workspaces: written as NOT EXISTS, DuckDB decorrelated it through a grouping
 * of every row's workspace, 150 ms for the largest organization's 100,000 workspaces instead of a few.
 * With an organization's key, only that organization's replaced workspaces are looked up: the tables are
 * stored in key order, so the lookup reads a few row groups instead of every replaced workspace.
 */
export const standing = (rows: string, column: string, later: readonly string[], organizationKey?: OrganizationKey, columns?: readonly string[]) =>
  `SELECT ${selected('b', columns)} FROM ${rows} b${later.map((delta, i) => ` ANTI JOIN (SELECT ${organizationKey === 'each' ? '_org_key, ' : ''}id FROM ${delta}.replaced_workspaces${
    typeof organizationKey === 'number' ? ` WHERE _org_key = ${Math.trunc(organizationKey)}` : ''}) r${i} ON r${i}.id = b.${ident(column)}${
    organizationKey === 'each' ? ` AND r${i}._org_key = b._org_key` : ''}`).join('')}`;

/**
 * What a layer's branch of a merge selects: every column, or only `columns` (quoted catalog names). A page's
 * statement is planned again at every execution, and a branch's `SELECT *` binds each of the workspaces' 54
 * columns in every layer it reads: the largest organization's A page over a run took 22.8 ms with every column
 * against 19.8 ms with the page's own (docs/performance.md, "Layered organizations: the columns a page reads").
 */
const selected = (alias: string | null, columns?: readonly string[]) =>
  (columns === undefined ? (alias === null ? '*' : `${alias}.*`) : columns.map((c) => (alias === null ? c : `${alias}.${c}`)).join(', '));

/**
 * Which replaced workspaces a merge looks up: those of one organization (its key), those of each row's own
 * organization (`each`: a read across organizations, so that every organization's rows are merged exactly
 * as a read of it alone merges them), or every one (undefined: the writer's own reads).
 */
export type OrganizationKey = number | 'each';

/**
 * The rows of `view`, a view with rows per workspace, as a stack of layers gives them (`layers`: the
 * attached aliases, the base first, then each delta, older first): each layer's rows that no later layer
 * replaced. Given the key of the one organization a read is about (a number from the manifest, never a
 * client's), only its replaced workspaces are looked up.
 */
export function mergedViewRows(layers: readonly string[], view: string, organizationKey?: OrganizationKey, columns?: readonly string[]): string {
  const column = workspaceColumn(view);
  if (!column) throw new Error(`view ${view} has no rows per workspace`);
  return standingRows(layers, ident(view), column, organizationKey, columns);
}

/** Each layer's `table` less the rows whose workspace (in `column`) a later layer replaced. */
const standingRows = (layers: readonly string[], table: string, column: string, organizationKey?: OrganizationKey, columns?: readonly string[]) =>
  `(${standingBranches(layers, table, column, organizationKey, columns).join('\n  UNION ALL ')})`;

const standingBranches = (layers: readonly string[], table: string, column: string, organizationKey?: OrganizationKey, columns?: readonly string[]) =>
  layers.map((layer, i) => (i === layers.length - 1 ? `SELECT ${selected(null, columns)} FROM ${layer}.${table}`
    : standing(`${layer}.${table}`, column, layers.slice(i + 1), organizationKey, columns)));

/**
 * The rows of `view` (rows per workspace) of one organization (`organizationKey`, the manifest's) where a delta
 * file (`positions`, an alias) lists the positions of the rows of its lowest layer (`layers[0]`) that the layers
 * over it replace (hiddenTable): that layer's rows less those positions, then the standing rows of the layers
 * over it, as mergedViewRows gives them. The lowest layer is tested by the integer it already reads rather than
 * by a key anti join on each row's workspace, whose text column a scan of the largest organization's 100,000
 * workspaces otherwise decodes (docs/performance.md, "Layered organizations: replaced rows hidden by position").
 */
export function positionedViewRows(layers: readonly string[], view: string, organizationKey: number, positions: string, columns?: readonly string[]): string {
  const column = workspaceColumn(view);
  if (!column || layers.length < 2) throw new Error(`view ${view} has no rows per workspace, or no layer over the lowest`);
  const key = Math.trunc(organizationKey);
  // A `NOT IN` of the listed positions (never NULL), not an anti join: DuckDB built the join's table of the
  // lowest layer's matching rows and all the columns they carry, where the `NOT IN` hashes the list's integers
  // (docs/performance.md, "Layered organizations: the columns a page reads").
  const lowest = `SELECT ${selected('b', columns)} FROM ${layers[0]}.${ident(view)} b WHERE b.${ident(POSITION_COLUMN)} NOT IN ${hiddenPositions(positions, view, key)}`;
  return `(${[lowest, ...standingBranches(layers.slice(1), ident(view), column, key, columns)].join('\n  UNION ALL ')})`;
}

/**
 * The table of a delta file that lists, for each organization whose HiddenRows name that file (`positionsIn`),
 * the positions of the rows of `view` in its lowest layer that the deltas replace: (`_org_key`, `pos`).
 */
export const hiddenTable = (view: string) => `hidden_${view}`;

/** The positions `positions` (a delta's alias) lists for organization `organizationKey` in `view`: a relation of one `pos` column. */
export const hiddenPositions = (positions: string, view: string, organizationKey: number) =>
  `(SELECT pos FROM ${positions}.${ident(hiddenTable(view))} WHERE _org_key = ${Math.trunc(organizationKey)})`;

/**
 * The rows of `view` (rows per workspace) of organization `organizationKey` split the way a page in the
 * view's default order reads them (compile.ts StoredMerge): the lowest layer's table, which stores each
 * organization's rows in that order, the workspaces the layers over it replace (`replaced`, one `id` column),
 * and the standing rows of the layers over it (`upper`). Needs a layer over the lowest.
 */
export function storedMerge(layers: readonly string[], view: string, organizationKey: number, columns?: readonly string[]): { stored: string; replaced: string; upper: string; column: string } {
  const column = workspaceColumn(view);
  if (!column || layers.length < 2) throw new Error(`view ${view} has no rows per workspace, or no layer over the lowest`);
  const key = Math.trunc(organizationKey);
  return {
    stored: `${layers[0]}.${ident(view)}`,
    replaced: `(${layers.slice(1).map((l) => `SELECT id FROM ${l}.replaced_workspaces WHERE _org_key = ${key}`).join(' UNION ALL ')})`,
    // One layer over the lowest: its table itself, whose columns a statement binds only as it reads them (a
    // subquery's SELECT * binds all 54 of the workspaces', which every page statement pays again: DuckDB plans a
    // statement with parameters anew at each execution).
    upper: layers.length === 2 ? `${layers[1]}.${ident(view)}` : standingRows(layers.slice(1), ident(view), column, key, columns),
    column: ident(column),
  };
}

/**
 * Every row of every layer of `view`, replaced ones included: what a page reads its rows from by their
 * positions, which are unique across the layers and name only standing rows when they come from
 * `mergedViewRows`. Without the anti joins, the largest organization's A page took 17.1 instead of 20.1 ms
 * (2026-11-25, in-process, after 41 batches; 11.0 ms on the base alone).
 */
export function layeredRows(layers: readonly string[], view: string, columns?: readonly string[]): string {
  return `(${layers.map((layer) => `SELECT ${selected(null, columns)} FROM ${layer}.${ident(view)}`).join('\n  UNION ALL ')})`;
}

/** The rows of `view`, a view grouped across workspaces: each organization's from the newest layer that holds it. */
export function mergedGroupedRows(layers: readonly string[], view: string): string {
  return `(${layers.map((layer, i) => standingGroups(layer, view, layers.slice(i + 1))).join('\n  UNION ALL ')})`;
}

/** A layer's rows of `view`, a view grouped across workspaces, less those of the organizations a later layer holds. */
export const standingGroups = (layer: string, view: string, later: readonly string[]) =>
  `SELECT * FROM ${layer}.${ident(view)}${later.length === 0 ? '' : ` WHERE ${later.map((l) => `_org NOT IN (SELECT name FROM ${l}.held_organizations)`).join(' AND ')}`}`;

/** The source state of `kind` as a stack of layers gives it. */
export function mergedState(layers: readonly string[], kind: StateKind): string {
  const table = `source_${kind}`;
  if (layers.length === 1) return `${layers[0]}.${table}`;
  if ((WHOLE_STATE as readonly string[]).includes(kind)) return `${layers[layers.length - 1]}.${table}`;
  const column = WORKSPACE_STATE[kind as keyof typeof WORKSPACE_STATE];
  return standingRows(layers, table, column);
}

/**
 * The rows of an organization's lowest layer that the deltas over it replace, found by the batch that last
 * touched it: how many of each view's (rows per workspace), and where there are at most HIDDEN_RANGES runs of
 * them, the runs of their positions (first, last), which a page in the default order leaves out of its scan
 * of that layer as constants, with no join (compile.ts StoredMerge). `lowest` names the layer's file: a
 * compaction or an overlay that moves the organization's lowest rows elsewhere makes the figures another
 * layer's, and a reader then counts the replaced rows itself.
 */
export interface HiddenRows {
  lowest: string;
  rows: Record<string, number>;
  ranges: Record<string, [number, number][]> | null;
  /**
   * The delta whose file lists every one of those positions (hiddenTable): `delta` (the newer) or `major` (the
   * older). The batch that found them wrote them into the delta it wrote; a newer delta written over the current
   * one is a copy of its file and keeps the list, the older delta's file does not change, and a fold writes new
   * files holding only its own organizations' lists, so the figures a fold carries lose it. `whole`: the whole
   * layer, which lists those of the organizations it holds as runs over the base (RUN_ROWS) as it found them,
   * until a batch touches one (and lists them, the run's among them, in its delta).
   */
  positionsIn?: 'delta' | 'major' | 'whole';
}

/** Runs of replaced positions an organization's page may leave out as constants (HiddenRows). */
export const HIDDEN_RANGES = 256;

/**
 * An organization's rows of workspaces and resources, as the manifest counts them: the size by which
 * organizations are lifted, written whole, tidied, merged and compacted.
 */
export const organizationSize = (m: Pick<Manifest, 'organizationRows'>, organization: string) =>
  (m.organizationRows?.workspaces?.[organization] ?? 0) + (m.organizationRows?.resources?.[organization] ?? 0);

/** The file of an organization's lowest layer: its overlay, else the whole layer if it holds it, else the base. */
export function lowestFile(manifest: Pick<Manifest, 'overlays' | 'whole' | 'wholeOrganizations' | 'database'>, organization: string): string | undefined {
  const overlay = manifest.overlays?.find((o) => o.organizations[organization] !== undefined);
  if (overlay) return overlay.file;
  if (manifest.whole && manifest.wholeOrganizations?.includes(organization)) return manifest.whole;
  return manifest.database;
}

/**
 * The organizations the whole layer holds as runs (RUN_ROWS) that read them: those whose lowest layer is still
 * the file the run lies over (a batch or tidying that wrote one whole into an overlay since ends its run).
 */
export function standingRuns(m: Pick<Manifest, 'overlays' | 'whole' | 'wholeOrganizations' | 'wholeRuns' | 'database'>): Set<string> {
  if (!m.whole) return new Set();
  // A manifest of the first version with runs lists them by name alone: each lies over the base.
  const recorded: unknown = m.wholeRuns;
  const runs = Array.isArray(recorded) ? Object.fromEntries((recorded as string[]).map((o) => [o, m.database])) : m.wholeRuns ?? {};
  return new Set(Object.entries(runs).filter(([o, over]) => lowestFile(m, o) === over).map(([o]) => o));
}

/** The layers a snapshot's organization may read, as its reader names them (aliases, or anything else). */
export interface LayerSet<T> {
  base: T;
  whole: T | null;
  /** The overlay that is the organization's current copy, or null. */
  overlayOf: (organization: string) => T | null;
  major: T | null;
  minor: T | null;
  /** The manifest's lists: wholeOrganizations, the standing runs (standingRuns), majorOrganizations, deltaOrganizations. */
  wholeHolds: ReadonlySet<string>;
  runHolds: ReadonlySet<string>;
  majorHolds: ReadonlySet<string>;
  minorHolds: ReadonlySet<string>;
}

/**
 * The layers `organization` reads, lowest first (`stack`): its overlay, else the whole layer where that holds it
 * whole, else the base; over that, the whole layer where it holds a run of it; then each delta that holds it.
 * `whole` is the file holding it whole when that is its lowest layer (an overlay or the whole layer), which it
 * reads alone, as the base is read, when `stack` is that file alone. The newest layer of the stack holds its
 * rows of the views grouped across workspaces.
 */
export function organizationLayers<T>(organization: string, s: LayerSet<T>): { stack: T[]; whole: T | null } {
  const overlay = s.overlayOf(organization);
  const whole = overlay ?? (s.whole !== null && s.wholeHolds.has(organization) ? s.whole : null);
  const run = s.whole !== null && s.runHolds.has(organization);
  return {
    whole,
    stack: [whole ?? s.base, ...(run ? [s.whole!] : []), ...(s.major !== null && s.majorHolds.has(organization) ? [s.major] : []),
      ...(s.minor !== null && s.minorHolds.has(organization) ? [s.minor] : [])],
  };
}

/**
 * An overlay as the layers under the deltas read it: its alias and the organizations (name → key) it is the
 * current copy of; of those, the ones the whole layer holds a run over (`runs`), read through it.
 */
export interface OverlayPart {
  alias: string;
  organizations: Readonly<Record<string, number>>;
  runs?: Readonly<Record<string, number>>;
}

/** The alias of the overlay that is `organization`'s current copy, or null when none is. */
export const overlayHolding = (overlays: readonly OverlayPart[], organization: string): string | null =>
  overlays.find((o) => o.organizations[organization] !== undefined)?.alias ?? null;

/**
 * The statements that make schema `schema` the layers under the deltas: `low` (the base, then the whole layer
 * if any) with each organization an overlay is the current copy of read from that overlay alone. The schema
 * then serves as one layer (`schema.<view>`, `schema.source_<kind>`) under the deltas. Keys and names are
 * the manifest's, never a client's: written out as constant lists.
 * The overlays' organizations leave the lower part by an anti join on their list, not a `NOT IN` filter on its
 * scan: a lookup of workspaces by id through the schema (a batch's validation and what it replaces) then
 * still reaches the scan as a join filter, where a filter on the scan kept it out, and each such lookup read
 * the base's million workspaces (5–14 against 90–110 ms on the bench snapshot; docs/performance.md, "Change
 * batches: each organization read from its own layer").
 */
export function underStatements(schema: string, low: readonly string[], overlays: readonly OverlayPart[]): string[] {
  const keyList = (organizations: Readonly<Record<string, number>>) => Object.values(organizations).map((k) => Math.trunc(k)).join(', ');
  const nameList = (organizations: Readonly<Record<string, number>>) => Object.keys(organizations).map(sqlLiteral).join(', ');
  const every = Object.assign({}, ...overlays.map((o) => o.organizations)) as Record<string, number>;
  const lowRows = (view: string) => (low.length === 1 ? `${low[0]}.${ident(view)}`
    : workspaceColumn(view) ? mergedViewRows(low, view) : mergedGroupedRows(low, view));
  // No organization in an overlay: nothing to leave out (and `IN ()` is no SQL: an overlay of none keeps nothing).
  const unless = (column: string, list: string) => (list === '' ? '' : ` ANTI JOIN (SELECT unnest([${list}]) AS v) x ON x.v = t.${column}`);
  // Each overlay's organizations read from it alone, but those the whole layer (the last of `low`) holds a run
  // over: the overlay's rows that the run does not replace, then the run's (its grouped rows the run's alone).
  const parts = (table: string, column: string | null, by: '_org_key' | 'organization') => overlays.map((o) => {
    const runs = o.runs ?? {};
    const plain = Object.fromEntries(Object.entries(o.organizations).filter(([org]) => runs[org] === undefined));
    const list = by === '_org_key' ? keyList : nameList;
    const whole = low[low.length - 1]!;
    const over = Object.keys(runs).length === 0 || low.length < 2 ? '' : `${column === null ? ''
      : `\n  UNION ALL SELECT * FROM (${standing(`${o.alias}.${table}`, column, [whole], by === '_org_key' ? 'each' : undefined)}) WHERE ${by} IN (${list(runs)})`}
  UNION ALL SELECT * FROM ${whole}.${table} WHERE ${by} IN (${list(runs)})`;
    return `\n  UNION ALL SELECT * FROM ${o.alias}.${table} WHERE ${by} IN (${list(plain) || 'NULL'})${over}`;
  }).join('');
  const statements = [`CREATE SCHEMA ${schema}`];
  for (const view of VIEW_NAMES) {
    statements.push(`CREATE VIEW ${schema}.${ident(view)} AS SELECT t.* FROM ${lowRows(view)} t${unless('_org_key', keyList(every))}${parts(ident(view), workspaceColumn(view) ?? null, '_org_key')}`);
  }
  for (const kind of WHOLE_STATE) statements.push(`CREATE VIEW ${schema}.source_${kind} AS SELECT * FROM ${mergedState(low, kind)}`);
  for (const kind of Object.keys(WORKSPACE_STATE) as StateKind[]) {
    statements.push(`CREATE VIEW ${schema}.source_${kind} AS SELECT t.* FROM ${mergedState(low, kind)} t${unless('organization', nameList(every))}${parts(`source_${kind}`, WORKSPACE_STATE[kind as keyof typeof WORKSPACE_STATE], 'organization')}`);
  }
  return statements;
}

/**
 * `columns` of the rows of `table` (a view with rows per workspace, its workspace in `column`, or a kind of
 * workspace source state) that the layers under the deltas hold of the organizations `test` keeps, all of
 * them read from the same part of underStatements' schema: the overlay `overlay` where it is their current
 * copy (through the whole layer's runs over it with `overRun`), else `low` (the base, then the whole layer if
 * any), given `organizationKey` when `test` keeps one organization by its key. What the schema gives of them, read from that part alone: the other parts' scans
 * and the tests that keep each organization in one part are left out, and each scan reads only `columns`.
 */
export function partRows(low: readonly string[], overlay: string | null, table: string, column: string, columns: string, test: string, organizationKey?: number, overRun = false): string {
  if (overlay !== null && overRun && low.length > 1) {
    const whole = low[low.length - 1]!;
    return `SELECT ${columns} FROM (${standing(`${overlay}.${table}`, column, [whole], organizationKey)}) b WHERE ${test}
  UNION ALL SELECT ${columns} FROM ${whole}.${table} WHERE ${test}`;
  }
  if (overlay !== null) return `SELECT ${columns} FROM ${overlay}.${table} WHERE ${test}`;
  if (low.length === 1) return `SELECT ${columns} FROM ${low[0]}.${table} WHERE ${test}`;
  return low.map((layer, i) => (i === low.length - 1 ? `SELECT ${columns} FROM ${layer}.${table} WHERE ${test}`
    : `SELECT ${columns} FROM (${standing(`${layer}.${table}`, column, low.slice(i + 1), organizationKey)}) b WHERE ${test}`)).join('\n  UNION ALL ');
}

/**
 * One DuckDB thread a batch, unless configured otherwise. A batch is many short statements, whose second
 * thread mostly hands work over: on the bench snapshot, the stream's 10-workspace batches took 0.83–0.84
 * CPU-s at the median on one thread against 1.00–1.03 on two, and its 1,000-workspace batches 5.0–5.5 against
 * 5.9–7.4 CPU-s, for at most a tenth more time on an idle machine; on a machine whose cores the servers keep
 * busy, the second thread has no core to run on (docs/performance.md, "Change batches: one thread").
 */
export const BATCH_THREADS = 1;
