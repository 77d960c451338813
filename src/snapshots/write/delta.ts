// A change batch's delta (delta-layout.ts): what the current snapshot's delta held, with what the batch changes
// replacing it. The work follows the batch, not the platform: the batch's workspaces are built by the same
// view statements a load runs, over the batch's own rows with the source state they refer to; the views
// grouped across workspaces are rebuilt for the organizations the batch touches, from their rows alone.
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { constants as fsConstants, promises as fs } from 'node:fs';
import { catalogFor, declaredColumn, ORGANIZATION_KEY_COLUMN, POSITION_COLUMN, VIEW_NAMES, workspaceColumn } from '../../catalog/catalog.js';
import { VIEW_DECLS } from '../../catalog/views.js';
import { interruptible } from '../../duckdb/interruptible.js';
import { openInstance } from '../../duckdb/open-instance.js';

import { sortKeys } from '../../query/query.js';
import {
  BATCH_POSITIONS, BATCH_THREADS, DELTA_POSITION_BASE, mergedGroupedRows, mergedState, mergedViewRows, OVERLAY_POSITION_BASE, standing, standingGroups, OVERLAY_POSITIONS, TIDY_POSITIONS, WHOLE_STATE, WORKSPACE_STATE, type StateKind,
  type OverlayPart, type HiddenRows, hiddenTable, lowestFile, organizationSize, overlayHolding, partRows, standingRuns,
} from '../delta-layout.js';
import { writeWholeViews } from './whole-views.js';
import type { AccessData, Manifest } from '../snapshot-dir.js';
import { countHidden } from './hidden-rows.js';
import { attachLayers, createViewTable, fillVersionKeys, STORAGE_VERSION, type KeptLayers, type LayerPaths } from './build-steps.js';
import type { WriterInstance } from './writer-instance.js';
import { deletionsFile, type SourceState } from './batch-validator.js';
import { sourceFiles, type SourceFile } from './source-validator.js';
import { sourceStateStatements, stagingStatements } from './staging.js';
import { stateOn, type SnapshotState } from './snapshot-state.js';
import { viewStatements } from './view-files.js';
import { ident, sqlLiteral } from '../../duckdb/sql.js';

export interface DeltaInput {
  batchDir: string;
  /** The current snapshot: its manifest and who may read what in it. */
  current: Manifest;
  currentAccess: AccessData;
  /** The current snapshot's layers (delta-layout.ts): the base's DuckDB file, its whole layer, older and newer deltas if any. */
  layers: LayerPaths;
  /** Fold the newer delta into the older one: the new file is a new older delta over the base and the whole layer alone. */
  fold: boolean;
  /**
   * The batch's overlay (delta-layout.ts): its file, the organizations it carries over from the overlays it
   * replaces (name → key), and how many rows of workspaces and resources a touched organization may have to
   * be written whole into it.
   */
  overlay: { path: string; carried: Readonly<Record<string, number>>; wholeRows: number };
  /**
   * How many rows of workspaces and resources a touched organization the older delta holds may have for the
   * newer delta to take it over whole (LIFT_ROWS); 0: none.
   */
  liftRows?: number;
  /** The new delta file, and a directory for DuckDB's spills (a kept instance's own, with `writer`). */
  outPath: string;
  tempDir: string;
  /** An instance kept from one batch to the next (writer-instance.ts): its threads and memory, not these. */
  writer?: WriterInstance;
  memoryLimit?: string;
  threads?: number;
  /** Interrupts the build (its statement in flight, then every next one): validation found the batch bad. */
  signal?: AbortSignal;
  /**
   * Validation, run beside the build on a connection of its own to the build's instance, over the layers the
   * build attached (snapshot-state.ts stateOn): the instance, its attachments and its cache serve both. The build
   * ends only once it has settled.
   */
  validate?: (state: SourceState) => Promise<unknown>;
  /** How the touched organizations' rows are read (readTouched): scans apart up to this many (SCANS_APART), kept up to this many rows (TOUCHED_TABLE_ROWS). */
  touchedRead?: { scansApart?: number; tableRows?: number };
  /** The most runs of replaced positions the manifest records of an organization's view (HIDDEN_RANGES unless given). */
  hiddenRanges?: number;
}

/** Per kind of record (organization, project, workspace, team): how many the batch upserted and deleted. */
export interface BatchCounts {
  upserted: Record<string, number>;
  deleted: Record<string, number>;
}

export interface DeltaResult {
  organizationKeys: Record<string, number>;
  organizationRows: Record<string, Record<string, number>>;
  rows: Record<string, number>;
  /** The organizations the new delta holds, and how many workspaces it replaces. */
  held: string[];
  /** The organizations the batch's overlay holds (name → key), written whole; none when it wrote no overlay. */
  overlaid: Record<string, number>;
  /** For each organization the batch touched that the deltas hold: the rows of its lowest layer they replace. */
  hidden: Record<string, HiddenRows>;
  /** The organizations this batch touched (upserted or deleted something of). */
  touched: string[];
  /** The organizations the older delta held that the new newer delta holds whole over the layers under the deltas (liftFromOlder). */
  lifted: string[];
  /** The organizations a fold left rows of out (settledRows): what their lowest layer has hidden changed, unless the batch found it again. */
  settled: string[];
  replacedWorkspaces: number;
  /** The bytes the new delta's blocks in use hold once written (its size less its free blocks: Manifest.usedBytes). */
  usedBytes: number;
  /** Records per source file of the resulting source (provider and module rows as stored: duplicates merged). */
  counts: Record<string, number>;
  access: AccessData;
  batch: BatchCounts;
  /** Seconds of each step of the build (BUILD_STEPS), wall time: where a batch's time goes, validation running beside it. */
  steps: Record<BuildStep, number>;
}

/** The build's steps, in the order they run, as DeltaResult.steps names them. */
export const BUILD_STEPS = ['attach', 'stage', 'source_state', 'workspace_views', 'touched_rows', 'grouped_views', 'counts', 'overlay', 'checkpoint'] as const;
export type BuildStep = (typeof BUILD_STEPS)[number];

/** Below this many rows of workspaces and resources, a delta is written uncompressed (see the checkpoint below). */
const UNCOMPRESSED_ROWS = 20_000;

/** What the merged current state is called while the delta is built. */
const cur = (kind: StateKind) => `cur_${kind}`;

/**
 * Fields whose value a row takes from its project or organization (`p.…`, `o.…` in views.ts): a batch that
 * changes a project's name or an organization's id changes them in rows of workspaces it does not carry.
 */
const contextFields = (view: string) => VIEW_DECLS.find((d) => d.name === view)!.fields.filter((f) => /^[po]\./.test(f.build));

/** What each step of a delta's build works with. */
interface Build {
  input: DeltaInput;
  db: DuckDBConnection;
  run: (sql: string) => Promise<unknown>;
  all: (sql: string) => Promise<DuckDBValue[][]>;
  count: (sql: string) => Promise<number>;
  /** `prev` when the new delta replaces the current one (or both, for a fold): the schema reading them. */
  prev: string | null;
  /** The layers under the deltas, read as one, and the overlays among them (build-steps.ts AttachedLayers). */
  under: string;
  overlays: OverlayPart[];
  /** The whole layer as attached, if any: under the deltas with the base and the overlays. */
  whole: string | null;
  /** The older delta when the new one is a newer delta over it (no fold): its replaced workspaces stay replaced. */
  kept: string | null;
  /**
   * The new delta starts as a copy of the file of the lowest delta it replaces (attachStack): each table then
   * loses the rows that no longer stand and gains the batch's (and, in a fold, the newer delta's), instead of
   * being written again whole.
   */
  inPlace: boolean;
  /**
   * In place: the copied delta as `prev` reads it (itself, or for a fold that delta less what the manifest no
   * longer lists as its: foldedLayer), and the delta `prev` reads over it (a fold's newer delta), if any. When
   * the copy's tables are exactly what `prev` reads of it (`exact`), a table loses only the rows the batch does
   * not keep.
   */
  copied: string | null;
  over: string | null;
  exact: boolean;
  /** The keys of the organizations the new delta takes over from the older one (liftFromOlder); none before that step. */
  lifted: Record<string, number>;
}

/**
 * The steps, in order: the layers attached, the batch staged, what it replaces found, the source state of S′
 * written, organization keys given, each view's table written, then what the manifest records of the result.
 * Each step's temporary tables are named where they are made; later steps read them by those names.
 */
export async function buildDelta(input: DeltaInput): Promise<DeltaResult> {
  // Each step's seconds end where the next one's begin: opening the instance counts as attaching.
  const steps = {} as Record<BuildStep, number>;
  let since = performance.now();
  const stepDone = (step: BuildStep) => {
    const now = performance.now();
    steps[step] = (now - since) / 1000;
    since = now;
  };
  const kept = input.writer ? await input.writer.take() : null;
  const instance = kept ? kept.instance : await openInstance(':memory:', {
    threads: String(input.threads ?? BATCH_THREADS),
    memory_limit: input.memoryLimit ?? '2GB',
    temp_directory: input.tempDir,
  });
  const db = await instance.connect();
  let failed = true;
  const { run, rows: all, release } = interruptible(db, input.signal);
  let validation: Promise<unknown> | undefined;
  let state: SnapshotState | undefined;
  try {
    const count = async (sql: string) => Number((await all(sql))[0]![0]);
    const { stack, ...stacked } = await attachStack(input, db, run, kept?.layers);
    if (input.validate) {
      const stateDb = await instance.connect();
      state = await stateOn(stateDb, stack, () => stateDb.closeSync());
      validation = input.validate(state);
    }
    stepDone('attach');
    const b: Build = { input, db, run, all, count, lifted: {}, ...stacked };
    await stageBatch(b);
    const patches = await findReplaced(b);
    b.lifted = await liftFromOlder(b);
    stepDone('stage');
    await writeSourceState(b, patches);
    const organizationKeys = await giveOrganizationKeys(b);
    stepDone('source_state');
    const write = viewWriter(b, (input.current.sequence ?? 0) + 1);
    await writeWorkspaceViews(b, write, patches);
    stepDone('workspace_views');
    const touchedNames = (await all('SELECT name FROM touched ORDER BY name')).map(([n]) => n as string);
    await readTouched(b, touchedNames, organizationKeys);
    stepDone('touched_rows');
    await writeGroupedViews(b, write, organizationKeys);
    stepDone('grouped_views');
    const heldAll = await writeHeld(b, touchedNames);
    const settled = input.fold ? (await all('SELECT name FROM settled ORDER BY name')).map(([n]) => n as string) : [];
    const { organizationRows, rows } = await countOrganizationRows(b, organizationKeys, touchedNames);
    const counts = await sourceCounts(b, rows, touchedNames);
    const access = await accessAfter(b);
    const batch = await batchCounts(b);
    const hidden = await findHidden(b, touchedNames, organizationKeys);
    stepDone('counts');
    const { whole, carried } = await writeOverlay(b, touchedNames, organizationKeys, organizationRows);
    const overlaid = { ...whole, ...carried };
    // A carried organization stays held: its overlay copy is its lowest layer, and the deltas' rows of it
    // (this batch's, or an earlier one's) still lie over that copy.
    const held = heldAll.filter((o) => whole[o] === undefined);
    for (const o of Object.keys(whole)) delete hidden[o];
    const replacedWorkspaces = await count('SELECT count(*) FROM out.replaced_workspaces');
    stepDone('overlay');
    const usedBytes = await checkpoint(b, Object.keys(overlaid).length > 0);
    stepDone('checkpoint');
    failed = false;
    return {
      organizationKeys, organizationRows, rows, held, overlaid, hidden, touched: [...touchedNames].sort(), lifted: Object.keys(b.lifted).sort(), settled,
      replacedWorkspaces, usedBytes, counts, access, batch, steps,
    };
  } finally {
    // Validation reads through this instance: it closes once validation is done, whatever the build came to.
    await validation?.catch(() => undefined);
    await state?.close();
    release();
    db.closeSync();
    if (!input.writer) instance.closeSync();
    else if (failed) await input.writer.closeBuilder();
    else await input.writer.afterBuild().catch(() => input.writer!.closeBuilder());
  }
}

/**
 * Attaches the current snapshot's layers and the new delta (`out`). The layers below the new delta are read
 * as schema `base`, the delta it replaces as schema `prev` (delta-layout.ts): the statements of the later
 * steps are those of one delta over one base, whatever the stack. The merged current state is `cur_<kind>`.
 */
async function attachStack(input: DeltaInput, db: DuckDBConnection, run: Build['run'], kept?: KeptLayers): Promise<Pick<Build, 'prev' | 'under' | 'overlays' | 'whole' | 'kept' | 'inPlace' | 'copied' | 'over' | 'exact'> & { stack: string[] }> {
  const attached = await attachLayers(run, input.layers, kept);
  // A newer delta over the current newer delta is that file, copied by the kernel, less the rows this batch
  // replaces and plus its own: DuckDB's checkpoint then writes the row groups the batch changed and keeps the
  // others' blocks (a small delta's tables are a row group or two, so it still writes most of them).
  // Copying the delta's rows through DuckDB instead cost a batch what every batch since the fold had written
  // (0.22–0.43 CPU-s on a newer delta of 28 MB, against 0.03–0.04 CPU-s this way; a small batch about 15 %
  // less CPU side by side: docs/performance.md, "Change batches: the newer delta changed in place"). A fold
  // likewise starts from the older delta's file and adds the newer delta's rows to it: copied through DuckDB
  // and sorted, the older delta cost every fold (every large batch) what the stream had written since the
  // last compaction (docs/performance.md, "Change batches: the older delta changed in place"). The current
  // snapshot's files are never written: the new delta is a copy. On a filesystem that clones files (XFS with
  // reflinks, btrfs) the copy is a clone (FICLONE asked first; the kernel's copy_file_range clones there too):
  // it shares the blocks of the one before and only those the batch writes take space, so the retained
  // snapshots' copies cost what changed between them (docs/deployment.md, "Disk"). Elsewhere it is whole.
  const copiedFile = input.fold ? input.layers.major ?? input.layers.minor : input.layers.minor;
  const inPlace = copiedFile !== null;
  if (copiedFile !== null) await fs.copyFile(copiedFile, input.outPath, fsConstants.COPYFILE_FICLONE);
  await run(`ATTACH ${sqlLiteral(input.outPath)} AS out (STORAGE_VERSION '${STORAGE_VERSION}')`);
  // One checkpoint, the last statement's: past DuckDB's default 16 MB of log, a statement midway checkpointed
  // the whole delta with every column compressed (0.17–0.2 s of a small batch's 1 s), before the choice of
  // compression below was made. The delta is not current until its file is complete, so the log is no loss.
  await run(`SET checkpoint_threshold = '64GB'`);
  await run('SET disabled_optimizers = \'join_order,build_side_probe_side\'');
  // Asked of the table itself: a look through duckdb_columns() cost 9–13 ms of every batch.
  const form = await db.run('SELECT organization FROM f_base.source_providers LIMIT 0').then(() => true, () => false);
  if (!form) throw new Error('the current snapshot stores its source state in an older form: load a source again before applying batches');
  const below = [attached.under, ...(input.fold || !attached.major ? [] : [attached.major])];
  // A fold writes of each delta only the organizations the manifest says it holds: what it still stores of one
  // tidying took off its list lies in that organization's overlay (tidy.ts), so the older delta a fold writes
  // holds what the deltas hold, not everything they ever held.
  // Nor the rows of an organization that a tidying unit's overlay, its lowest layer, holds already: those the
  // batches up to the unit's snapshot wrote (settledRows).
  if (input.fold) await settledRows(db, run, input.current);
  const replacing = [
    ...(input.fold && attached.major ? [await foldedLayer(db, run, attached.major, input.current.majorOrganizations)] : []),
    ...(attached.minor ? [input.fold ? await foldedLayer(db, run, attached.minor, input.current.deltaOrganizations) : attached.minor] : []),
  ];
  // The copied file is the lowest of the deltas replaced (the older in a fold, else the newer).
  const copied = inPlace ? replacing[0]! : null;
  const over = inPlace ? replacing[1] ?? null : null;
  const exact = copied !== null && over === null && (copied === attached.major || copied === attached.minor);
  const stateKinds = [...WHOLE_STATE, ...Object.keys(WORKSPACE_STATE)] as StateKind[];
  // Each schema's views in one call: DuckDB runs the statements of one string in turn, and each call of its own
  // cost a round trip to the engine's thread.
  const layered = async (schema: string, layers: string[]) => {
    await run([`CREATE SCHEMA ${schema}`,
      ...VIEW_NAMES.map((view) => `CREATE VIEW ${schema}.${ident(view)} AS SELECT * FROM ${workspaceColumn(view) ? mergedViewRows(layers, view) : mergedGroupedRows(layers, view)}`),
      ...stateKinds.map((kind) => `CREATE VIEW ${schema}.source_${kind} AS SELECT * FROM ${mergedState(layers, kind)}`)].join(';\n'));
  };
  await layered('base', below);
  const prev = replacing.length > 0 ? 'prev' : null;
  if (prev) {
    await layered('prev', replacing);
    await run(`CREATE VIEW prev.replaced_workspaces AS SELECT DISTINCT organization, id FROM (${replacing.map((l) => `SELECT organization, id FROM ${l}.replaced_workspaces`).join(' UNION ALL ')})`);
  }
  await run([...stateKinds.map((kind) => `CREATE TEMP VIEW ${cur(kind)} AS SELECT * FROM ${mergedState(prev ? ['base', 'prev'] : ['base'], kind)}`),
    prev ? 'CREATE TEMP VIEW cur_replaced AS SELECT organization, id FROM prev.replaced_workspaces'
      : 'CREATE TEMP VIEW cur_replaced AS SELECT NULL::VARCHAR AS organization, NULL::VARCHAR AS id WHERE false'].join(';\n'));
  return { prev, under: attached.under, overlays: attached.overlays, whole: attached.whole, kept: input.fold ? null : attached.major, inPlace, copied, over, exact, stack: attached.stack };
}

/**
 * In place: deletes from the new delta's copy of `table` the rows that `kept` does not keep and, unless the copy
 * is exactly what `prev` reads of the copied delta, those `prev` does not read there (`read`: the copied
 * delta's rows as `prev` reads them, told apart from the others by `key`: a view's position, a source-state
 * row's workspace; null where `prev` reads the table as the file has it).
 */
function deleteUnkept({ exact }: Build, table: string, kept: string | null, read: { rows: string; key: string } | null): string {
  return `DELETE FROM out.${table} t WHERE ${kept ? `(${kept}) IS NOT TRUE` : 'true'}${exact || read === null ? '' : `
    OR t.${ident(read.key)} NOT IN (SELECT s.${ident(read.key)} FROM (${read.rows}) s)`}`;
}

/**
 * The organizations the deltas hold whose lowest layer is a tidying unit's overlay, each with the first position
 * of the batches after the unit's snapshot (`settled`: name, bound): their rows below it, and the replaced
 * workspaces and source state of the workspaces those rows are of, are in the overlay (tidy.ts), each delta
 * being cumulative. A fold leaves them out, so that an organization tidied while batches kept touching it (the
 * largest, which a large batch touches every time) leaves the older delta all the same.
 */
async function settledRows(db: DuckDBConnection, run: Build['run'], current: Manifest): Promise<void> {
  await run('CREATE TEMP TABLE settled (name VARCHAR, bound BIGINT)');
  const held = new Set([...current.majorOrganizations ?? [], ...current.deltaOrganizations ?? []]);
  const appender = await db.createAppender('settled');
  for (const o of current.overlays ?? []) {
    if (o.sequence === undefined) continue;
    for (const org of Object.keys(o.organizations)) {
      if (!held.has(org) || lowestFile(current, org) !== o.file) continue;
      appender.appendVarchar(org);
      appender.appendBigInt(BigInt(DELTA_POSITION_BASE + (Math.trunc(o.sequence) + 1) * BATCH_POSITIONS));
      appender.endRow();
    }
  }
  appender.closeSync();
}

/**
 * The delta attached as `alias` as a fold reads it: for the organizations `listed` alone, less the rows that
 * are `settled` (settledRows). Itself when it stores nothing else; else the schema `<alias>_folded` of views
 * over its tables. Names, not keys, for the organizations forgotten: a deleted organization's replaced
 * workspaces have no key.
 */
async function foldedLayer(db: DuckDBConnection, run: Build['run'], alias: string, listed: readonly string[] | undefined): Promise<string> {
  const holds = new Set(listed ?? []);
  const stored = (await db.runAndReadAll(`SELECT name FROM ${alias}.held_organizations`)).getRows().map(([n]) => n as string);
  const forgotten = stored.filter((o) => !holds.has(o));
  const settles = Number((await db.runAndReadAll(`SELECT count(*) FROM settled WHERE name IN (SELECT name FROM ${alias}.held_organizations)`)).getRows()[0]![0]) > 0;
  if (forgotten.length === 0 && !settles) return alias;
  // Written only where there are some: `NOT IN (NULL)` keeps nothing.
  const notForgotten = (column: string) => (forgotten.length > 0 ? ` AND ${column} NOT IN (${nameConstants(forgotten)})` : '');
  const position = ident(POSITION_COLUMN);
  const schema = `${alias}_folded`;
  // The workspaces whose rows in this delta are settled: their replaced workspace and source state go with them.
  const settledWorkspaces = `(SELECT w.${ident(workspaceColumn('workspaces')!)} FROM ${alias}.workspaces w JOIN settled s ON s.name = w._org AND w.${position} < s.bound)`;
  await run([`CREATE SCHEMA ${schema}`,
    ...VIEW_NAMES.map((view) => `CREATE VIEW ${schema}.${ident(view)} AS SELECT t.* FROM ${alias}.${ident(view)} t
      ANTI JOIN settled s ON s.name = t._org AND t.${position} < s.bound WHERE true${notForgotten('t._org')}`),
    `CREATE VIEW ${schema}.replaced_workspaces AS SELECT * FROM ${alias}.replaced_workspaces WHERE id NOT IN ${settledWorkspaces}${notForgotten('organization')}`,
    `CREATE VIEW ${schema}.held_organizations AS SELECT * FROM ${alias}.held_organizations WHERE true${notForgotten('name')}`,
    ...WHOLE_STATE.map((kind) => `CREATE VIEW ${schema}.source_${kind} AS SELECT * FROM ${alias}.source_${kind}`),
    ...Object.entries(WORKSPACE_STATE).map(([kind, column]) => `CREATE VIEW ${schema}.source_${kind} AS SELECT * FROM ${alias}.source_${kind}
      WHERE ${column} NOT IN ${settledWorkspaces}${notForgotten('organization')}`),
  ].join(';\n'));
  return schema;
}

/**
 * The batch, staged as a load stages a source (the view statements read src_*), in the stored source state's
 * shape (bs.source_*), and its deletions (b_deletions).
 */
async function stageBatch({ input, run }: Build): Promise<void> {
  const files = sourceFiles(input.batchDir);
  for (const sql of stagingStatements(files, 1)) await run(sql);
  await run(`ATTACH ':memory:' AS bs`);
  for (const sql of sourceStateStatements(files, 'bs')) await run(sql);
  const deletionsPath = deletionsFile(input.batchDir);
  await run(`CREATE TEMP TABLE b_deletions AS ${deletionsPath
    ? `SELECT kind, name, id, organization FROM read_json(${sqlLiteral(deletionsPath)}, format = 'newline_delimited', columns = {kind: 'VARCHAR', name: 'VARCHAR', id: 'VARCHAR', organization: 'VARCHAR'})`
    : 'SELECT NULL::VARCHAR AS kind, NULL::VARCHAR AS name, NULL::VARCHAR AS id, NULL::VARCHAR AS organization WHERE false'}`);
}

/**
 * What the batch replaces: the workspaces it deletes (gone_ws), those whose rows carry a project name or an
 * organization id it changes (patched_ws), all of them with its own (replaced_new), and the organizations it
 * touches (touched). Returns whether any workspace is patched.
 */
async function findReplaced({ run, count }: Build): Promise<boolean> {
  await run(`CREATE TEMP TABLE del_orgs AS SELECT name FROM b_deletions WHERE kind = 'organization'`);
  await run(`CREATE TEMP TABLE del_teams AS SELECT organization, name FROM b_deletions WHERE kind = 'team'`);
  // Each step that reads every workspace of S runs only when the batch asks for it: most batches only upsert.
  const deletesWorkspaces = (await count(`SELECT count(*) FROM b_deletions WHERE kind IN ('workspace', 'organization')`)) > 0;
  // Two semi joins, not one scan testing either: DuckDB marks every workspace against both lists for an OR
  // (21.9 against 13.6 ms on the bench's million workspaces).
  await run(`CREATE TEMP TABLE gone_ws AS ${deletesWorkspaces
    ? `SELECT organization, id FROM ${cur('workspaces')} WHERE id IN (SELECT id FROM b_deletions WHERE kind = 'workspace')
      UNION SELECT organization, id FROM ${cur('workspaces')} WHERE organization IN (SELECT name FROM del_orgs)`
    : `SELECT organization, id FROM ${cur('workspaces')} WHERE false`}`);
  await run(`CREATE TEMP TABLE renamed_projects AS SELECT b.id FROM bs.source_projects b JOIN ${cur('projects')} c ON c.id = b.id WHERE b.name IS DISTINCT FROM c.name`);
  await run(`CREATE TEMP TABLE reided_orgs AS SELECT b.name FROM bs.source_organizations b JOIN ${cur('organizations')} c ON c.name = b.name WHERE b.id IS DISTINCT FROM c.id`);
  const patches = (await count('SELECT (SELECT count(*) FROM renamed_projects) + (SELECT count(*) FROM reided_orgs)')) > 0;
  await run(`CREATE TEMP TABLE patched_ws AS SELECT * FROM ${cur('workspaces')} w
    WHERE ${patches ? `w.id NOT IN (SELECT id FROM gone_ws) AND w.id NOT IN (SELECT id FROM bs.source_workspaces)
      AND (w.project_id IN (SELECT id FROM renamed_projects) OR w.organization IN (SELECT name FROM reided_orgs))` : 'false'}`);
  await run(`CREATE TEMP TABLE replaced_new AS SELECT organization, id FROM gone_ws
    UNION SELECT organization, id FROM bs.source_workspaces UNION SELECT organization, id FROM patched_ws`);
  await run(`CREATE TEMP TABLE touched AS SELECT organization AS name FROM replaced_new
    UNION SELECT name FROM del_orgs UNION SELECT name FROM bs.source_organizations`);
  return patches;
}

/**
 * The touched organizations the older delta holds that the new newer delta takes over whole (delta-layout.ts,
 * lifting): their rows in the older delta that still stand are copied into this batch's run, and the
 * workspaces the older delta replaced of them are replaced by the new delta too, so that a reader of such an
 * organization reads the layer under the deltas and the newer delta alone: two scans instead of three and a
 * join (docs/performance.md, "Layered organizations: one delta for a small organization": a count over both
 * deltas 3.7 ms, over one 2.1 ms). Only organizations of at most `liftRows` rows of workspaces and resources:
 * their rows in the older delta are few, and the newer delta copies what it holds at every batch. Makes
 * `lifted_replaced` (organization, id); returns the organizations' keys.
 */
async function liftFromOlder({ input, run, all, kept }: Build): Promise<Record<string, number>> {
  const { current } = input;
  const bound = input.liftRows ?? 0;
  const size = (o: string) => organizationSize(current, o);
  const older = new Set(kept ? current.majorOrganizations ?? [] : []);
  const deleted = new Set((await all('SELECT name FROM del_orgs')).map(([n]) => n as string));
  const lifted: Record<string, number> = {};
  for (const [name] of await all('SELECT name FROM touched ORDER BY name')) {
    const o = name as string;
    const key = current.organizationKeys?.[o];
    if (bound > 0 && older.has(o) && !deleted.has(o) && key !== undefined && size(o) <= bound) lifted[o] = key;
  }
  await run(kept && Object.keys(lifted).length > 0
    ? `CREATE TEMP TABLE lifted_replaced AS SELECT organization, id FROM ${kept}.replaced_workspaces WHERE organization IN (${nameConstants(Object.keys(lifted))})`
    : 'CREATE TEMP TABLE lifted_replaced AS SELECT NULL::VARCHAR AS organization, NULL::VARCHAR AS id WHERE false');
  return lifted;
}

/**
 * The rows of `table` (a view with rows per workspace, or a source-state kind, whose workspace is in
 * `column`) of the lifted organizations that stand in the older delta: neither the newer delta before this
 * batch nor this batch replaces their workspace. Null when nothing is lifted.
 */
function liftedRows({ kept, lifted }: Build, table: string, column: string, by: 'key' | 'name'): string | null {
  if (!kept || Object.keys(lifted).length === 0) return null;
  const test = by === 'key' ? `_org_key IN (${keyConstants(Object.values(lifted))})` : `organization IN (${nameConstants(Object.keys(lifted))})`;
  return `SELECT * FROM ${kept}.${table} WHERE ${test}
    AND ${column} NOT IN (SELECT id FROM cur_replaced) AND ${column} NOT IN (SELECT id FROM replaced_new)`;
}

/**
 * Organization keys from our manifest, never a client's, written out as a constant list (`NULL` for none):
 * DuckDB tests constants against the zone maps in the scans themselves, where a join or a parameter is tested
 * row by row.
 */
const keyConstants = (keys: Iterable<number>) => [...keys].map((k) => Math.trunc(k)).join(', ') || 'NULL';
/** Organization names, from our manifest and the batch's validated records, written out the same way as literals. */
const nameConstants = (names: Iterable<string>) => [...names].map(sqlLiteral).join(', ') || 'NULL';

/** The source state of S′: the small kinds whole, the replaced workspaces' rows of the others. */
async function writeSourceState(b: Build, patches: boolean): Promise<void> {
  const { run, count, prev, inPlace, copied, over } = b;
  // Most batches change no team: their teams and members stand as the current delta has them.
  const teamsChange = (await count('SELECT (SELECT count(*) FROM bs.source_teams) + (SELECT count(*) FROM bs.source_team_members) + (SELECT count(*) FROM del_teams) + (SELECT count(*) FROM del_orgs)')) > 0;
  // Each table: the rows of `from` (alias t) that `kept` keeps, then `added`. In place, the copy of the
  // current delta (whose table `from` reads: the whole kinds' newest layer, or the replaced workspaces'
  // rows, their workspace in `column`) loses the others, unless the batch changes none of them (`unchanged`),
  // and gains the kept rows of the delta over it. A whole kind under another delta is that delta's: written again.
  const stored = async (table: string, from: string | null, kept: string, added: string[], columns = '*', unchanged = false, column?: string) => {
    if (inPlace && (column !== undefined || over === null)) {
      if (unchanged && over === null) return;
      await run(deleteUnkept(b, table, kept, column ? { rows: standing(`${copied}.${table}`, column, over ? [over] : []), key: column } : null));
      if (over) await run(`INSERT INTO out.${table} BY NAME SELECT * FROM ${over}.${table} t WHERE ${kept}`);
      for (const select of added) await run(`INSERT INTO out.${table} BY NAME ${select}`);
      return;
    }
    if (inPlace) await run(`DROP TABLE out.${table}`);
    const keptRows = from ? `SELECT ${columns} FROM ${from} t WHERE ${kept}` : null;
    await run(`CREATE TABLE out.${table} AS SELECT * FROM (${[...(keptRows ? [keptRows] : []), ...added].join('\n    UNION ALL ')}) ORDER BY ALL`);
  };
  await stored('source_organizations', cur('organizations'), `t.name NOT IN (SELECT name FROM del_orgs) AND t.name NOT IN (SELECT name FROM bs.source_organizations)`,
    ['SELECT name, id FROM bs.source_organizations'], 'name, id');
  await stored('source_projects', cur('projects'), `t.organization NOT IN (SELECT name FROM del_orgs)
      AND t.id NOT IN (SELECT id FROM b_deletions WHERE kind = 'project') AND t.id NOT IN (SELECT id FROM bs.source_projects)`,
  ['SELECT organization, id, name FROM bs.source_projects'], 'organization, id, name');
  // A team deleted, or upserted (its members replaced by the batch's), or of a deleted organization.
  const teamGone = (name: string) => `t.organization IN (SELECT name FROM del_orgs)
    OR EXISTS (SELECT 1 FROM del_teams d WHERE d.organization = t.organization AND d.name = t.${name})
    OR EXISTS (SELECT 1 FROM bs.source_teams b WHERE b.organization = t.organization AND b.name = t.${name})`;
  await stored('source_teams', cur('teams'), `NOT (${teamGone('name')})`, ['SELECT * FROM bs.source_teams'], '*', !teamsChange);
  await stored('source_team_members', cur('team_members'), `NOT (${teamGone('team')})`, ['SELECT * FROM bs.source_team_members'], '*', !teamsChange);
  for (const [kind, column] of Object.entries(WORKSPACE_STATE)) {
    const table = `source_${kind}`;
    const lifted = liftedRows(b, table, column, 'name');
    await stored(table, prev ? `prev.${table}` : null, `t.${column} NOT IN (SELECT id FROM replaced_new)`, [
      `SELECT * FROM bs.${table}`,
      // The patched workspaces' rows, read through the layers: none unless a project was renamed or an organization re-identified.
      ...(patches ? [`SELECT * FROM ${cur(kind as StateKind)} WHERE ${column} IN (SELECT id FROM patched_ws)`] : []),
      ...(lifted ? [lifted] : []),
    ], '*', false, column);
  }
}

/**
 * Organization keys: those of S, new organizations after them (keys only identify; their order is no one's).
 * Writes the delta's replaced workspaces by key, and sets the context the view statements read: the
 * organizations, projects and keys of S′.
 */
async function giveOrganizationKeys({ input, db, run, all, inPlace }: Build): Promise<Record<string, number>> {
  const deletedOrgs = new Set((await all('SELECT name FROM del_orgs')).map(([n]) => n as string));
  const organizationKeys: Record<string, number> = {};
  for (const [name, k] of Object.entries(input.current.organizationKeys ?? {})) if (!deletedOrgs.has(name)) organizationKeys[name] = k;
  let next = Math.max(0, ...Object.values(input.current.organizationKeys ?? {})) + 1;
  for (const [name] of await all('SELECT name FROM out.source_organizations ORDER BY name')) {
    if (organizationKeys[name as string] === undefined) organizationKeys[name as string] = next++;
  }
  // Replaced workspaces by organization key (the keys of S for deleted organizations; none for one deleted by
  // an earlier batch, whose workspaces stay replaced for the source state), the order reads look them up in.
  await appendKeys(db, run, 'all_keys', { ...input.current.organizationKeys, ...organizationKeys });
  if (inPlace) await run('DROP TABLE out.replaced_workspaces');
  await run(`CREATE TABLE out.replaced_workspaces AS SELECT * FROM (SELECT k.k AS _org_key, r.organization, r.id
    FROM (SELECT organization, id FROM cur_replaced UNION SELECT organization, id FROM replaced_new UNION SELECT organization, id FROM lifted_replaced) r
      LEFT JOIN all_keys k ON k.name = r.organization) ORDER BY ALL`);
  await run('DROP TABLE src_organizations');
  await run('DROP TABLE src_projects');
  await run('DROP TABLE org_keys');
  await run('CREATE TEMP TABLE src_organizations AS SELECT name, id FROM out.source_organizations');
  await run('CREATE TEMP TABLE src_projects AS SELECT id, organization, name FROM out.source_projects');
  await appendKeys(db, run, 'org_keys', organizationKeys);
  await fillVersionKeys(db);
  return organizationKeys;
}

/** A temporary table (name, k) of `keys`. */
async function appendKeys(db: DuckDBConnection, run: Build['run'], table: string, keys: Record<string, number>): Promise<void> {
  await run(`CREATE TEMP TABLE ${table} (name VARCHAR, k INTEGER)`);
  const appender = await db.createAppender(table);
  for (const [name, k] of Object.entries(keys)) { appender.appendVarchar(name); appender.appendInteger(k); appender.endRow(); }
  appender.closeSync();
}

/**
 * Writes a view's delta table from its new rows and a condition on the current delta's rows that still stand.
 * `stored`: the rows' table holds them in stored order already (a grouped view's, derived from its sorted rows
 * as a load derives them; every instance keeps insertion order, open-instance.ts), so that each row's position
 * is its rowid and they need no sort of their own.
 */
type ViewWriter = (view: string, rows: string, kept: string | null, stored?: boolean) => Promise<void>;

/**
 * The delta's tables for the `sequence`-th batch: the current deltas' rows that stand (`kept`), in their stored
 * order, then this batch's rows (`rows`) sorted, at this batch's positions. Only the batch's rows are sorted: a
 * delta is a series of such runs, each in stored order, and an organization whose rows a run holds whole (the
 * grouped views) finds them together and in order. Sorting the whole delta again at every batch made a batch's
 * cost grow with every batch before it, and so did sorting the older delta at every fold (docs/performance.md,
 * "Change batches: the older delta changed in place").
 */
function viewWriter(b: Build, sequence: number): ViewWriter {
  const { db, run, all, inPlace, copied, over } = b;
  const statements = new Map(viewStatements().map((v) => [v.view, v]));
  return async (view, rows, kept, stored = false) => {
    const { order } = statements.get(view)!;
    // The base's columns, whatever the code builds today: every layer of a stack then has the same
    // columns in the same order (readers union them by position), and a base loaded before a column was
    // added (the list members) is served as it was until the next full load.
    // Asked of the base's table, not of the merged view over the layers, whose binding cost 3–4 ms a view.
    const columns = (await all(`SELECT column_name FROM (DESCRIBE f_base.${ident(view)})`)).map(([c]) => ident(c as string));
    // In place, the table is the copied delta's: its rows that do not stand go, and a fold adds those of the
    // newer delta that do, each delta's rows read as `prev` reads them.
    if (inPlace) {
      const column = workspaceColumn(view);
      const read = column ? standing(`${copied}.${ident(view)}`, column, over ? [over] : []) : standingGroups(copied!, view, over ? [over] : []);
      await run(deleteUnkept(b, ident(view), kept, { rows: read, key: POSITION_COLUMN }));
      if (over && kept) await run(`INSERT INTO out.${ident(view)} BY NAME SELECT ${columns.join(', ')} FROM ${over}.${ident(view)} WHERE ${kept}`);
    } else {
      await createViewTable(db, `out.${ident(view)}`, `SELECT ${columns.join(', ')} FROM ${rows} LIMIT 0`);
    }
    const rowCount = Number((await all(`SELECT count(*) FROM ${rows}`))[0]![0]);
    if (rowCount >= BATCH_POSITIONS) throw new Error(`a batch of ${rowCount} ${view} rows is more than one batch may hold (${BATCH_POSITIONS - 1})`);
    // Numbered in stored order. Rows stored in that order already are numbered by their rowid: a window over the
    // order sorted the largest organization's grouped rows (lists of tens of thousands of names, their JSON and
    // CSV lines) once more in every large batch (docs/performance.md, "Change batches: grouped rows numbered as stored").
    const first = DELTA_POSITION_BASE + sequence * BATCH_POSITIONS;
    const position = stored ? `(${first} + t.rowid)::BIGINT AS _pos` : `(${first} + row_number() OVER (ORDER BY ${order}) - 1)::BIGINT AS _pos`;
    const fresh = `SELECT ${columns.map((c) => (c === ident(POSITION_COLUMN) ? position : c)).join(', ')} FROM ${rows} t`;
    await run(`INSERT INTO out.${ident(view)} BY NAME ${fresh}${stored ? '' : ` ORDER BY ${order}`}`);
  };
}

/**
 * Views with rows per workspace: the batch's workspaces built anew, the patched ones re-derived from their
 * current rows with the context values of S′, the delta's other rows kept.
 */
async function writeWorkspaceViews(b: Build, write: ViewWriter, patches: boolean): Promise<void> {
  const { run, prev } = b;
  await run('SET preserve_insertion_order = true');
  for (const { view, sorted, derive, derived } of viewStatements()) {
    const column = workspaceColumn(view);
    if (!column) continue;
    await run(`CREATE TEMP TABLE new_sorted AS ${sorted()}`);
    await run(`CREATE TEMP TABLE new_rows AS ${derive('new_sorted', 0)}`);
    const context = contextFields(view);
    const resolved = catalogFor().view(view)!;
    const sortFields = new Set(sortKeys(resolved, resolved.defaultSort).map((k) => k.field.column));
    if (context.some((f) => sortFields.has(declaredColumn(f)))) throw new Error(`${view}: a field taken from the project or organization is in the default order`);
    const projectField = VIEW_DECLS.find((d) => d.name === view)!.fields.find((f) => f.build === 'w.project_id');
    if (context.length > 0 && patches) {
      if (!projectField) throw new Error(`${view}: the project of a row is not one of its fields`);
      await run(`CREATE TEMP TABLE patch_sorted AS SELECT t.* EXCLUDE (${derived.map(ident).join(', ')})
          REPLACE (${context.map((f) => `${f.build} AS ${ident(declaredColumn(f))}`).join(', ')})
        FROM ${prev ? mergedViewRows(['base', prev], view) : `base.${ident(view)}`} t
        JOIN src_projects p ON p.id = t.${ident(declaredColumn(projectField))}
        JOIN src_organizations o ON o.name = t._org
        WHERE t.${ident(column)} IN (SELECT id FROM patched_ws)`);
      await run(`INSERT INTO new_rows BY NAME ${derive('patch_sorted', 0)}`);
      await run('DROP TABLE patch_sorted');
    }
    // The lifted organizations' standing rows join this batch's run, numbered with its rows.
    const lifted = liftedRows(b, ident(view), ident(column), 'key');
    if (lifted) await run(`INSERT INTO new_rows BY NAME ${lifted}`);
    await write(view, 'new_rows', `${ident(column)} NOT IN (SELECT id FROM replaced_new)`);
    await run('DROP TABLE new_sorted');
    await run('DROP TABLE new_rows');
  }
}

/**
 * The columns of the workspaces view the grouped views read back, as the names their statements give them (the
 * merged workspaces view gives the workspaces' values back: its fields built as `w.<column>` are those columns).
 * Only these: the workspaces view is wide.
 */
function groupedSourceColumns(): { column: string; as: string }[] {
  const grouped = VIEW_DECLS.filter((d) => !workspaceColumn(d.name)).map((d) => d.from).join('\n');
  return VIEW_DECLS.find((d) => d.name === 'workspaces')!.fields
    .filter((f) => /^w\.\w+$/.test(f.build) && new RegExp(`\\b${f.build.slice(2)}\\b`).test(grouped))
    .map((f) => ({ column: declaredColumn(f), as: f.build.slice(2) }));
}

/** The kinds of source state (besides the views with rows per workspace) whose touched rows `readTouched` copies. */
const TOUCHED_STATE = ['providers', 'modules'] as const;

/**
 * The touched organizations' rows of the layers under the deltas (`under`), read once each into `t_<table>`:
 * the largest reads a batch makes, through the zone maps of tables of millions of rows. Their standing rows
 * over the deltas (`overTouched`) then give the grouped views' source rows, the organizations' row counts,
 * the source counts and the positions the deltas hide, each of which read the same rows again before
 * (docs/performance.md, "Change batches: fewer statements, each organization's rows read once"). Per view
 * with rows per workspace, only the columns those read; per kind of source state, every column (few).
 */
async function readTouched({ input, run, overlays, whole }: Build, touchedNames: string[], organizationKeys: Record<string, number>): Promise<void> {
  // Keys and names from our manifest and the batch's validated records, written out as constants, which
  // DuckDB tests against the zone maps in the scans themselves: one scan per organization, where a list of
  // them is few enough. A scan for a list tests every row group between the list's least and greatest value
  // (touched organizations lie all over the key order); a scan for one organization only its own: 137 against
  // 212 ms for nine small organizations' rows of the four tables on the bench base.
  // Each organization is read from the one part of the layers under the deltas its rows lie in (its overlay,
  // else the base and the whole layer), not through the union of them all (delta-layout.ts partRows): an
  // overlay of organizations the batch does not touch then costs it nothing, where through the union it cost
  // a small batch's read of its workspaces a tenth to a quarter more (docs/performance.md, "Change batches: each
  // organization read from its own layer").
  const key = ident(ORGANIZATION_KEY_COLUMN);
  const low = ['f_base', ...(whole ? [whole] : [])];
  // By overlay, and apart within one those the whole layer holds a run over (read through it).
  const parts = new Map<string, { overlay: string | null; overRun: boolean; names: string[] }>();
  for (const name of touchedNames) {
    const overlay = overlayHolding(overlays, name);
    const overRun = overlay !== null && overlays.some((o) => o.runs?.[name] !== undefined);
    const part = `${overlay} ${overRun}`;
    if (!parts.has(part)) parts.set(part, { overlay, overRun, names: [] });
    parts.get(part)!.names.push(name);
  }
  const apart = input.touchedRead?.scansApart ?? SCANS_APART;
  // Each scan's rows of `table`, its workspace in `column`: one scan per organization where they are few, else
  // one per part for the list of its organizations, by key (`keyed`) or by name.
  const scans = (table: string, column: string, columns: string, keyed: boolean) => {
    const selects: string[] = [];
    const by = keyed ? key : 'organization';
    const constant = (v: string | number) => (typeof v === 'number' ? String(v) : sqlLiteral(v));
    for (const { overlay, overRun, names } of parts.values()) {
      const values = keyed ? names.filter((n) => organizationKeys[n] !== undefined).map((n) => Math.trunc(organizationKeys[n]!)) : names;
      if (values.length === 0) continue;
      if (touchedNames.length <= apart) {
        for (const v of values) selects.push(partRows(low, overlay, table, column, columns, `${by} = ${constant(v)}`, typeof v === 'number' ? v : undefined, overRun));
      } else {
        selects.push(partRows(low, overlay, table, column, columns, `${by} IN (${values.map(constant).join(', ')})`, undefined, overRun));
      }
    }
    return selects.length === 0 ? `SELECT ${columns} FROM ${low[0]}.${table} WHERE false` : selects.join('\n  UNION ALL ');
  };
  const back = groupedSourceColumns().map((c) => ident(c.column));
  // Many rows (a batch that touches a large organization) are read again by each step rather than kept: kept,
  // they cost a 1,000-workspace batch a tenth more.
  const rows = touchedNames.reduce((a, o) => a + organizationSize(input.current, o), 0);
  const kind = rows <= (input.touchedRead?.tableRows ?? TOUCHED_TABLE_ROWS) ? 'TABLE' : 'VIEW';
  await run([
    ...VIEW_NAMES.filter((v) => workspaceColumn(v)).map((view) => {
      const columns = [...new Set(['_org', key, ident(POSITION_COLUMN), ident(workspaceColumn(view)!), ...(view === 'workspaces' ? back : [])])];
      return `CREATE TEMP ${kind} ${touchedTable(view)} AS ${scans(ident(view), workspaceColumn(view)!, columns.join(', '), true)}`;
    }),
    ...TOUCHED_STATE.map((state) => `CREATE TEMP ${kind} ${touchedTable(`source_${state}`)} AS ${scans(`source_${state}`, WORKSPACE_STATE[state], '*', false)}`),
  ].join(';\n'));
}

/** Up to this many touched organizations, readTouched scans for each apart; more, for the list of them. */
const SCANS_APART = 32;
/** Up to this many rows of workspaces and resources in the touched organizations, readTouched keeps their rows; more, it names the scans. */
const TOUCHED_TABLE_ROWS = 250_000;

const touchedTable = (table: string) => ident(`t_${table}`);

/**
 * `columns` (of alias b) of the touched organizations' rows of `table` (a view with rows per workspace, or a
 * source-state kind, its workspace in `column`) that stand over the layers `over` (aliases, older first): the
 * rows under the deltas (readTouched) and each layer's rows that `test` keeps, less those whose workspace a later
 * layer replaced, as mergedViewRows and mergedState merge them.
 */
function overTouched(table: string, column: string, columns: string, over: readonly string[], test: string): string {
  const layers = [touchedTable(table), ...over.map((l) => `${l}.${table}`)];
  return layers.map((rows, i) => `SELECT ${columns} FROM (${standing(`(SELECT * FROM ${rows}${i > 0 ? ` WHERE ${test}` : ''})`, column, over.slice(i))}) b`)
    .join('\n  UNION ALL ');
}

/** The layers over those under the deltas in S′ (`kept` is the older delta when the new one is a newer delta over it). */
const afterLayers = ({ kept }: Build) => [...(kept ? [kept] : []), 'out'];
/** And in S. */
const beforeLayers = ({ kept, prev }: Build) => [...(kept ? [kept] : []), ...(prev ? [prev] : [])];

/** Views grouped across workspaces: every row of each touched organization, from its rows in S′. */
async function writeGroupedViews(b: Build, write: ViewWriter, organizationKeys: Record<string, number>): Promise<void> {
  const { run, all, db } = b;
  await run(`CREATE TEMP TABLE agg_orgs AS SELECT name FROM touched WHERE name IN (SELECT name FROM out.source_organizations)`);
  for (const t of ['src_workspaces', 'src_providers', 'src_modules']) await run(`DROP TABLE ${t}`);
  // The touched organizations' keys and names written out (ours, never a client's) as constant lists.
  const aggregated = (await all('SELECT name FROM agg_orgs ORDER BY name')).map(([n]) => n as string);
  const keys = keyConstants(aggregated.map((n) => organizationKeys[n]!));
  const names = nameConstants(aggregated);
  const back = groupedSourceColumns();
  await run(`CREATE TEMP TABLE src_workspaces AS SELECT ${back.map((c) => `${ident(c.column)} AS ${c.as}`).join(', ')} FROM (${
    overTouched('workspaces', workspaceColumn('workspaces')!, back.map((c) => `b.${ident(c.column)}`).join(', ') + `, b.${ident(ORGANIZATION_KEY_COLUMN)}`, afterLayers(b), `${ident(ORGANIZATION_KEY_COLUMN)} IN (${keys})`)}) t
    WHERE t.${ident(ORGANIZATION_KEY_COLUMN)} IN (${keys})`);
  for (const kind of TOUCHED_STATE) {
    await run(`CREATE TEMP TABLE src_${kind} AS SELECT * FROM (${overTouched(`source_${kind}`, WORKSPACE_STATE[kind], 'b.*', afterLayers(b), `organization IN (${names})`)}) u
      WHERE u.organization IN (${names})`);
  }
  await run(`CREATE TEMP TABLE agg_versions AS SELECT DISTINCT v FROM (SELECT engine_version FROM src_workspaces
    UNION ALL SELECT version FROM src_providers UNION ALL SELECT version FROM src_modules) t(v) WHERE v IS NOT NULL`);
  await fillVersionKeys(db, 'agg_versions');
  for (const { view, sorted, derive } of viewStatements()) {
    if (workspaceColumn(view)) continue;
    await run(`CREATE TEMP TABLE new_sorted AS ${sorted()}`);
    await run(`CREATE TEMP TABLE new_rows AS ${derive('new_sorted', 0)}`);
    await write(view, 'new_rows', '_org NOT IN (SELECT name FROM touched)', true);
    await run('DROP TABLE new_sorted');
    await run('DROP TABLE new_rows');
  }
}

/**
 * The batch's overlay (delta-layout.ts): each touched organization that existed before the batch, that no
 * delta holds and that has at most `wholeRows` rows of workspaces and resources after it, written whole (its
 * rows taken out of the new delta: its write is its compaction), with the organizations carried over from the
 * overlays this one replaces as the layers under the deltas have them. An organization the batch deletes is
 * written whole too, with no rows: the overlay then hides what lies below it by its key, and no delta needs
 * to. Returns what the overlay holds (name → key): the organizations written whole, and those carried.
 */
async function writeOverlay(b: Build, touched: string[], keys: Record<string, number>, organizationRows: Record<string, Record<string, number>>): Promise<{ whole: Record<string, number>; carried: Record<string, number> }> {
  const { input, run, all, db, overlays } = b;
  const { current } = input;
  const deltaHeld = new Set([...(current.major ? current.majorOrganizations ?? [] : []), ...(current.delta ? current.deltaOrganizations ?? [] : [])]);
  const size = (o: string) => (organizationRows.workspaces?.[o] ?? 0) + (organizationRows.resources?.[o] ?? 0);
  const whole: Record<string, number> = {};
  for (const o of touched) {
    const before = current.organizationKeys?.[o];
    if (before === undefined || deltaHeld.has(o)) continue;
    if (keys[o] === undefined || (keys[o] === before && size(o) <= input.overlay.wholeRows)) whole[o] = before;
  }
  const carried = Object.fromEntries(Object.entries(input.overlay.carried).filter(([o]) => whole[o] === undefined));
  if (Object.keys(whole).length + Object.keys(carried).length === 0) return { whole, carried };
  const sequence = (current.sequence ?? 0) + 1;
  if (sequence * OVERLAY_POSITIONS >= OVERLAY_POSITION_BASE) throw new Error(`batch ${sequence} since the load: load a source again before applying more`);
  // Keys and names from our manifest, never a client's: written out as constant lists.
  const keyList = (r: Record<string, number>) => keyConstants(Object.values(r));
  const nameList = (r: Record<string, number>) => nameConstants(Object.keys(r));
  await run(`ATTACH ${sqlLiteral(input.overlay.path)} AS ov (STORAGE_VERSION '${STORAGE_VERSION}')`);
  // Each organization written whole read by its own key or name, which the scans test against their zone
  // maps (a list of keys is tested row by row: 2.2 s for ten organizations' workspaces on the bench base);
  // each carried one from the overlay it was the current copy in.
  const key = ident(ORGANIZATION_KEY_COLUMN);
  const carriedFrom = (table: string, by: 'key' | 'name') => overlays.flatMap((o) => {
    const mine = Object.keys(o.organizations).filter((org) => carried[org] !== undefined);
    if (mine.length === 0) return [];
    return [`SELECT * FROM ${o.alias}.${table} WHERE ${by === 'key' ? `${key} IN (${keyConstants(mine.map((org) => carried[org]!))})` : `organization IN (${nameConstants(mine)})`}`];
  });
  const union = (branches: string[], empty: string) => `(${branches.length > 0 ? branches.join('\n  UNION ALL ') : `SELECT * FROM ${empty} WHERE false`})`;
  const rows = (view: string) => union([
    ...(workspaceColumn(view)
      ? Object.values(whole).map((k) => `SELECT * FROM ${mergedViewRows(['base', 'out'], view, k)} t WHERE t.${key} = ${Math.trunc(k)}`)
      // The batch wrote every grouped row of each organization it touched.
      : [`SELECT * FROM out.${ident(view)} WHERE ${key} IN (${keyList(whole)})`]),
    ...carriedFrom(ident(view), 'key'),
  ], `out.${ident(view)}`);
  const written = await writeWholeViews({ db, run, all, out: 'ov', rows, first: OVERLAY_POSITION_BASE + sequence * OVERLAY_POSITIONS, positions: OVERLAY_POSITIONS - TIDY_POSITIONS, layout: current });
  // Checked: a wrong count is a wrong answer for some organization. (A carried organization a delta holds
  // too has its rows under the delta's: the manifest does not count those.)
  const checked = Object.keys(carried).filter((o) => !deltaHeld.has(o));
  for (const view of VIEW_NAMES) {
    const expected = Object.keys(whole).reduce((a, o) => a + (organizationRows[view]?.[o] ?? 0), 0)
      + checked.reduce((a, o) => a + (current.organizationRows?.[view]?.[o] ?? 0), 0);
    const n = checked.length === Object.keys(carried).length ? written[view]
      : Number((await all(`SELECT count(*) FROM ov.${ident(view)} WHERE ${ident(ORGANIZATION_KEY_COLUMN)} NOT IN (${keyList(Object.fromEntries(Object.entries(carried).filter(([o]) => deltaHeld.has(o))))})`))[0]![0]);
    if (n !== expected) throw new Error(`the batch's overlay: ${view} has ${n} rows, not ${expected}`);
  }
  for (const kind of Object.keys(WORKSPACE_STATE) as StateKind[]) {
    await run(`CREATE TABLE ov.source_${kind} AS SELECT * FROM ${union([
      ...Object.keys(whole).map((o) => `SELECT * FROM ${mergedState(['base', 'out'], kind)} s WHERE s.organization = ${sqlLiteral(o)}`),
      ...carriedFrom(`source_${kind}`, 'name'),
    ], `out.source_${kind}`)} ORDER BY ALL`);
  }
  // What the new delta held of the organizations written whole: none of it stands over the overlay.
  for (const view of VIEW_NAMES) await run(`DELETE FROM out.${ident(view)} WHERE ${ident(ORGANIZATION_KEY_COLUMN)} IN (${keyList(whole)})`);
  await run(`DELETE FROM out.replaced_workspaces WHERE organization IN (${nameList(whole)})`);
  await run(`DELETE FROM out.held_organizations WHERE name IN (${nameList(whole)})`);
  for (const kind of Object.keys(WORKSPACE_STATE)) await run(`DELETE FROM out.source_${kind} WHERE organization IN (${nameList(whole)})`);
  return { whole, carried };
}

/**
 * The rows of each touched organization's lowest layer (the base, the whole layer or its overlay: the layers
 * under the deltas) that the deltas replace once this batch is applied (delta-layout.ts HiddenRows): those
 * of the workspaces the new delta replaces and, for a newer delta over an older one, the older one's, each
 * looked up by the organization's key as a reader looks them up.
 */
async function findHidden({ input, run, all, kept, inPlace, whole }: Build, touched: string[], keys: Record<string, number>): Promise<Record<string, HiddenRows>> {
  const orgs = touched.filter((o) => keys[o] !== undefined);
  if (orgs.length === 0) return {};
  // Keys from our manifest, never a client's: written out as constants.
  const keyList = keyConstants(orgs.map((o) => keys[o]!));
  // The older delta's only for the organizations the manifest says it holds: a reader reads no other's rows
  // there, and what the file still stores of an organization it forgot (tidy.ts) lies in that organization's
  // lowest layer now, which those rows must not hide.
  const olderHolds = new Set(input.current.majorOrganizations ?? []);
  const olderKeys = keyConstants(orgs.filter((o) => olderHolds.has(o)).map((o) => keys[o]!));
  await run(`CREATE TEMP TABLE hidden_ws AS SELECT _org_key, id FROM out.replaced_workspaces WHERE _org_key IN (${keyList})${
    kept ? ` UNION SELECT _org_key, id FROM ${kept}.replaced_workspaces WHERE _org_key IN (${olderKeys})` : ''}`);
  const position = ident(POSITION_COLUMN);
  // The delta this batch writes lists the positions (delta-layout.ts hiddenTable), which pages in any order
  // leave out by them; the runs below serve pages in the default order as constants.
  const positionsIn = input.fold ? 'major' : 'delta';
  const hidden: Record<string, HiddenRows> = Object.fromEntries(orgs.map((o) => [o, { lowest: lowestFile(input.current, o) ?? '', rows: {}, ranges: {}, positionsIn }]));
  const byKey = new Map(orgs.map((o) => [Math.trunc(keys[o]!), hidden[o]!]));
  // An organization the whole layer holds as a run over its lowest layer (delta-layout.ts RUN_ROWS): the rows
  // of that layer the run replaces are listed in the whole layer; the rows read under the deltas are that
  // layer's that stand and the run's, of which only the former are the lowest layer's.
  const runs = standingRuns(input.current);
  const inRuns = whole === null ? [] : orgs.filter((o) => runs.has(o));
  const inRun = inRuns.length === 0 ? null : keyConstants(inRuns.map((o) => keys[o]!));
  for (const view of VIEW_NAMES) {
    const column = workspaceColumn(view);
    if (!column) continue;
    for (const h of byKey.values()) { h.rows[view] = 0; if (h.ranges) h.ranges[view] = []; }
    // The rows under the deltas, as readTouched read them, listed once; their runs are read back from the list.
    // A newer delta written over the current one is a copy of its file: its lists of other organizations stay.
    const list = `out.${ident(hiddenTable(view))}`;
    // A fold's lists are of the organizations it touches alone (apply.ts hiddenRowsOf).
    await run(`CREATE TABLE IF NOT EXISTS ${list} (_org_key INTEGER, pos BIGINT);${inPlace ? `
      DELETE FROM ${list}${input.fold ? '' : ` WHERE _org_key IN (${keyList})`};` : ''}
      INSERT INTO ${list} SELECT t._org_key, t.${position} AS pos FROM ${touchedTable(view)} t SEMI JOIN hidden_ws h ON h._org_key = t._org_key AND h.id = t.${ident(column)}${
  inRun ? ` ANTI JOIN (SELECT ${position} FROM ${whole}.${ident(view)} WHERE _org_key IN (${inRun})) w ON w.${position} = t.${position}
        UNION SELECT _org_key, pos FROM ${whole}.${ident(hiddenTable(view))} WHERE _org_key IN (${inRun})` : ''} ORDER BY ALL`);
    await countHidden(all, list, view, byKey, keyList, input.hiddenRanges);
  }
  await run('DROP TABLE hidden_ws');
  return hidden;
}

/** What the new delta holds: what the deltas it replaces held, and what this batch touched. */
async function writeHeld({ input, db, run, all, inPlace }: Build, touchedNames: string[]): Promise<string[]> {
  const heldBefore = [...(input.fold ? input.current.majorOrganizations ?? [] : []), ...(input.layers.minor ? input.current.deltaOrganizations ?? [] : [])];
  // A fold leaves out an organization's settled rows (settledRows): one it left nothing of is held no more.
  const left = input.fold ? await settledLeft({ all }, touchedNames) : null;
  const held = [...new Set([...heldBefore, ...touchedNames])].filter((o) => left === null || left.has(o)).sort();
  if (inPlace) await run('DROP TABLE out.held_organizations');
  await run('CREATE TABLE out.held_organizations (name VARCHAR)');
  const appender = await db.createAppender('held_organizations', 'main', 'out');
  for (const name of held) { appender.appendVarchar(name); appender.endRow(); }
  appender.closeSync();
  return held;
}

/**
 * Of the organizations a fold held before, those it still holds anything of: all but the settled ones it did not
 * touch and left no replaced workspace, row or grouped row of.
 */
async function settledLeft({ all }: Pick<Build, 'all'>, touchedNames: string[]): Promise<{ has: (o: string) => boolean }> {
  const settled = (await all('SELECT name FROM settled')).map(([n]) => n as string).filter((o) => !touchedNames.includes(o));
  if (settled.length === 0) return { has: () => true };
  const names = nameConstants(settled);
  const remaining = new Set((await all(`SELECT organization FROM out.replaced_workspaces WHERE organization IN (${names})
    ${VIEW_NAMES.map((view) => `UNION SELECT _org FROM out.${ident(view)} WHERE _org IN (${names})`).join('\n    ')}`)).map(([n]) => n as string));
  const gone = new Set(settled.filter((o) => !remaining.has(o)));
  return { has: (o) => !gone.has(o) };
}

/** Rows per organization and view: those of S for the organizations no batch has touched, counted for the others. */
async function countOrganizationRows(b: Build, organizationKeys: Record<string, number>, touchedNames: string[]) {
  const { input, all } = b;
  const organizationRows: Record<string, Record<string, number>> = {};
  const rows: Record<string, number> = {};
  const touchedSet = new Set(touchedNames);
  // Keys from our own manifest, never a client's: integers written out so that zone maps skip the rest.
  const keyList = keyConstants(touchedNames.flatMap((n) => (organizationKeys[n] === undefined ? [] : [organizationKeys[n]!])));
  for (const view of VIEW_NAMES) {
    const counts: Record<string, number> = {};
    for (const [org, n] of Object.entries(input.current.organizationRows?.[view] ?? {})) if (!touchedSet.has(org) && organizationKeys[org] !== undefined) counts[org] = n;
    const key = ident(ORGANIZATION_KEY_COLUMN);
    const column = workspaceColumn(view);
    const merged = column ? `(${overTouched(view, column, `b._org, b.${key}`, afterLayers(b), `${key} IN (${keyList})`)})` : `out.${ident(view)}`;
    for (const [org, n] of await all(`SELECT _org, count(*) FROM ${merged} t WHERE t.${key} IN (${keyList}) GROUP BY _org`)) {
      counts[org as string] = Number(n);
    }
    organizationRows[view] = counts;
    rows[view] = Object.values(counts).reduce((a, b) => a + b, 0);
  }
  return { organizationRows, rows };
}

/** Records per source file of S′ (provider and module rows as stored: duplicates merged). */
async function sourceCounts(b: Build, rows: Record<string, number>, touchedNames: string[]): Promise<Record<SourceFile, number>> {
  const { input, count, all } = b;
  // The replaced workspaces' rows of S lie in the touched organizations, whose rows under the deltas readTouched read.
  const touchedList = nameConstants(touchedNames);
  const replacedRows = (kind: (typeof TOUCHED_STATE)[number]) =>
    count(`SELECT count(*) FROM (${overTouched(`source_${kind}`, WORKSPACE_STATE[kind], 'b.workspace_id', beforeLayers(b), `organization IN (${touchedList})`)}) t
      WHERE workspace_id IN (SELECT id FROM replaced_new)`);
  const [whole] = await all(`SELECT ${['organizations', 'projects', 'teams', 'team_members'].map((k) => `(SELECT count(*) FROM out.source_${k})`).join(', ')}`);
  const [organizations, projects, teams, members] = whole!.map(Number);
  return {
    organizations: organizations!,
    projects: projects!,
    workspaces: rows.workspaces ?? 0,
    // S's rows, less those of the workspaces this batch replaced, plus theirs in S′ (the delta's rows of them).
    workspace_providers: (input.current.counts.workspace_providers ?? 0) - await replacedRows('providers')
      + await count('SELECT count(*) FROM out.source_providers WHERE workspace_id IN (SELECT id FROM replaced_new)'),
    workspace_modules: (input.current.counts.workspace_modules ?? 0) - await replacedRows('modules')
      + await count('SELECT count(*) FROM out.source_modules WHERE workspace_id IN (SELECT id FROM replaced_new)'),
    workspace_resources: rows.resources ?? 0,
    teams: teams!,
    team_members: members!,
  };
}

/**
 * Who may read what in S′. It changes only with organizations and teams, and only for the organizations whose
 * teams the batch upserts or deletes, that it adds or that it deletes (access names organizations, teams and
 * members only): their entries are derived again from their teams and members in S′, every other entry is the
 * current snapshot's. Reading every team and member back instead cost a batch that carried a team 0.1 s on
 * the bench source (docs/performance.md, "Change batches: fewer statements, each organization's rows read once").
 */
async function accessAfter({ input, run, all }: Build): Promise<AccessData> {
  await run(`CREATE TEMP TABLE access_orgs AS SELECT name FROM bs.source_organizations WHERE name NOT IN (SELECT name FROM ${cur('organizations')})
    UNION SELECT organization FROM bs.source_teams
    UNION SELECT coalesce(organization, name) FROM b_deletions WHERE kind IN ('organization', 'team')`);
  const changed = new Set((await all('SELECT name FROM access_orgs')).map(([n]) => n as string));
  if (changed.size === 0) return input.currentAccess;
  const part = accessOf([],
    (await all('SELECT organization, name, read_workspaces, read_projects FROM out.source_teams WHERE organization IN (SELECT name FROM access_orgs)')) as [string, string, boolean, boolean][],
    (await all('SELECT organization, team, "user" FROM out.source_team_members WHERE organization IN (SELECT name FROM access_orgs)')) as [string, string, string][]);
  const current = input.currentAccess;
  const others = <T>(r: Record<string, T>) => Object.entries(r).filter(([o]) => !changed.has(o));
  const users: Record<string, string[]> = {};
  for (const [user, orgs] of Object.entries(current.userOrganizations)) {
    const kept = orgs.filter((o) => !changed.has(o));
    if (kept.length > 0) users[user] = kept;
  }
  for (const [user, orgs] of Object.entries(part.userOrganizations)) users[user] = [...users[user] ?? [], ...orgs].sort();
  const byKey = <T>(entries: [string, T][]) => Object.fromEntries(entries.sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
  return {
    organizations: (await all('SELECT name FROM out.source_organizations')).map(([n]) => n as string).sort(),
    qualifyingTeams: byKey([...others(current.qualifyingTeams), ...Object.entries(part.qualifyingTeams)]),
    teams: byKey([...others(current.teams), ...Object.entries(part.teams)]),
    userOrganizations: byKey(Object.entries(users)),
  };
}

/** How many records of each kind the batch upserted and deleted. */
async function batchCounts({ all }: Build): Promise<BatchCounts> {
  const kinds = ['organization', 'project', 'workspace', 'team'] as const;
  const [row] = await all(`SELECT ${kinds.map((k) => `(SELECT count(*) FROM bs.source_${k}s)`).join(', ')},
    ${kinds.map((k) => `(SELECT count(*) FROM b_deletions WHERE kind = '${k}')`).join(', ')}`);
  const n = row!.map(Number);
  return {
    upserted: Object.fromEntries(kinds.map((k, i) => [`${k}s`, n[i]!])),
    deleted: Object.fromEntries(kinds.map((k, i) => [`${k}s`, n[kinds.length + i]!])),
  };
}

/**
 * Writes the delta's file out; returns the bytes its blocks in use hold. A small delta is written uncompressed: choosing and applying each column's
 * compression cost a fixed 0.08–0.15 s per file, most of a 10-workspace batch's checkpoint, to save a few
 * hundred KB. Larger deltas (a batch of 1,000 workspaces already holds 20,000 resource rows) keep DuckDB's
 * choice, for the disk the retained batch snapshots take (docs/performance.md, "Change batches: small deltas uncompressed").
 */
async function checkpoint({ run, count }: Build, overlay: boolean): Promise<number> {
  let used = 0;
  for (const file of overlay ? ['ov', 'out'] : ['out']) {
    const small = await count(`SELECT (SELECT count(*) FROM ${file}.workspaces) + (SELECT count(*) FROM ${file}.resources)`) < UNCOMPRESSED_ROWS;
    await run(`SET force_compression = '${small ? 'uncompressed' : 'auto'}'`);
    await run(`CHECKPOINT ${file}`);
    if (file === 'out') used = await count(`SELECT used_blocks * block_size FROM pragma_database_size() WHERE database_name = 'out'`);
    await run(`DETACH ${file}`);
  }
  return used;
}

/** Who may read what (snapshot-dir.ts AccessData), from the organizations, teams and members of a source, as the source validator derives it. */
function accessOf(organizations: string[], teams: [string, string, boolean, boolean][], members: [string, string, string][]): AccessData {
  const byOrg: Record<string, string[]> = {};
  const qualifying: Record<string, string[]> = {};
  const qualifies = new Set<string>();
  for (const [org, name, readWorkspaces, readProjects] of teams) {
    (byOrg[org] ??= []).push(name);
    if (name === 'owners' || readWorkspaces || readProjects) {
      (qualifying[org] ??= []).push(name);
      qualifies.add(`${org}\n${name}`);
    }
  }
  const userOrgs: Record<string, Set<string>> = {};
  for (const [org, team, user] of members) if (qualifies.has(`${org}\n${team}`)) (userOrgs[user] ??= new Set()).add(org);
  const sorted = (r: Record<string, string[]>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, [...v].sort()]));
  return {
    organizations: [...organizations].sort(),
    qualifyingTeams: sorted(qualifying),
    teams: sorted(byOrg),
    userOrganizations: Object.fromEntries(Object.entries(userOrgs).map(([u, s]) => [u, [...s].sort()])),
  };
}
