// One organization's sync: its views read from the upstream, its source records rebuilt, compared with what
// the previous sync of it read, and only what changed applied through the one writer as a change batch (the
// first sync into an empty data directory is a load). docs/sync.md.
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { openInstance } from '../duckdb/open-instance.js';
import { readCurrentId, readManifest, snapshotPath, type Manifest } from '../snapshots/snapshot-dir.js';
import { applyBatch, type ApplyOptions } from '../snapshots/write/apply.js';
import { attachLayers, layerPaths } from '../snapshots/write/build-steps.js';
import { DataDirNotEmptyError, loadSnapshot } from '../snapshots/write/load.js';

import { Limiter, PinnedSnapshotGoneError, readViewCsv, SYNCED_VIEWS, ViewMissingError, type ReadOptions } from './read-views.js';
import { stageRebuilt, writeHeldView, writeRebuilt, type ViewFiles } from './rebuild-source.js';
import type { Upstream } from './upstream-endpoint.js';
import { sqlLiteral } from '../duckdb/sql.js';
import { SYNC_MEMORY_LIMIT } from '../config.js';

export interface SyncOptions {
  upstream: Upstream;
  token: string;
  limiter: Limiter;
  /** The writers' options (data directory, retention, lock, memory). */
  writer: ApplyOptions & { keepFull?: number };
  /**
   * DuckDB's memory for a first sync's load (SYNC_MEMORY_LIMIT, default 300MB): a mirror is started on
   * laptops and small VMs. A change batch keeps the writer's own limit, the rebuild its 400 MB.
   */
  memoryLimit?: string;
  label?: string;
  signal?: AbortSignal;
  retries?: number;
  backoffMs?: number;
  idleMs?: number;
  log?: (line: string) => void;
}

export interface SyncReport {
  organization: string;
  workspaces: number;
  resources: number | null;
  bytes: number;
  upserted: number;
  deleted: number;
  /** The snapshot made, or null when nothing changed. */
  snapshot: string | null;
  seconds: { read: number; rebuild: number; apply: number };
}

/**
 * What the previous sync of an organization read, kept beside the snapshots (`sync/organizations/<name>/`,
 * with `digests.parquet`). Kept per organization, not per upstream: the digests describe what the snapshot
 * holds of it, whichever address it was read from.
 */
interface SyncState {
  /** The loaded snapshot the layers stood on (`base`, or its own id when loaded): a load makes another. */
  base: string;
  /** The organization's rows per view in the snapshot the sync made or found: another count means something else changed it since. */
  rows: Record<string, number>;
  /** Where it was read from; for a reader of the folder, not compared. */
  host: string;
  organizationId: string | null;
  projects: Record<string, string>;
}

/** What a sync compares the upstream with: the kept state, or what the snapshot holds when none describes it. */
interface Previous {
  /** The snapshot holds the organization: one it does not hold is written even with no workspace. */
  present: boolean;
  organizationId: string | null;
  projects: Record<string, string>;
  /** A Parquet file of (id, hi, lo) per workspace. */
  digests: string;
}

/**
 * The first sync's load, made to fit a small machine: DuckDB under the sync's limit on one thread (on two,
 * the Parquet writer's buffers outgrow 300 MB), and the source validated before the build rather than
 * beside it, so that the validating worker's heap is gone before DuckDB's peak. About 20 s slower than a
 * load under LOAD_MEMORY_LIMIT for 100,000 workspaces, and a third of its peak.
 */
const firstLoadOptions = (opts: SyncOptions) => ({ memoryLimit: opts.memoryLimit ?? SYNC_MEMORY_LIMIT, threads: 1, validateFirst: true });

const stateDir = (dataDir: string, organization: string) => join(dataDir, 'sync', 'organizations', organization);
const baseOf = (m: Manifest) => m.base ?? m.id;
const rowsOf = (m: Manifest, organization: string): Record<string, number> | null => (m.organizationRows
  ? Object.fromEntries(Object.entries(m.organizationRows).map(([view, byOrganization]) => [view, byOrganization[organization] ?? 0]).sort(([x], [y]) => (x < y ? -1 : 1)))
  : null);

export async function syncOrganization(organization: string, opts: SyncOptions): Promise<SyncReport> {
  const { dataDir } = opts.writer;
  const dir = stateDir(dataDir, organization);
  const work = join(dataDir, 'sync', `.run-${process.pid}-${organization}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const started = performance.now();
  const lap = () => (performance.now() - started) / 1000;
  const seconds = (s: number) => Math.round(s * 100) / 100;
  try {
    const { files, bytes, resourcesRead } = await readViews(organization, work, opts);
    const readSeconds = lap();

    const label = opts.label ?? `sync ${opts.upstream.host} ${organization}`;
    const batch = join(work, 'batch');
    const plan = async (): Promise<SyncPlan> => {
      rmSync(batch, { recursive: true, force: true });
      const currentId = await readCurrentId(dataDir);
      const current = currentId ? await readManifest(dataDir, currentId) : null;
      return planSync(organization, dataDir, dir, current, files, resourcesRead, batch, join(work, 'digests.parquet'), work);
    };
    let planned: SyncPlan = await plan();
    const rebuildSeconds = lap() - readSeconds;
    // Written with the rebuild's database closed: the writer's memory is the sync's only large part.
    let made: Manifest | null = null;
    if (planned.write === 'load') {
      // Only into a data directory that is still empty: another writer (a sync of another organization
      // beside this one) may have made a snapshot current meanwhile, which a load would replace whole. Then
      // this one is planned again against that snapshot, as a batch.
      made = await loadSnapshot(batch, { ...opts.writer, label, onlyIfEmpty: true, ...firstLoadOptions(opts) }).then((r) => r.manifest, async (e: Error) => {
        if (!(e instanceof DataDirNotEmptyError)) throw e;
        planned = await plan();
        return null;
      });
    }
    if (planned.write === 'batch') made = (await applyBatch(batch, { ...opts.writer, label })).manifest;
    const applySeconds = lap() - readSeconds - rebuildSeconds;
    // Recorded only once applied, and tied to the snapshot that holds what the digests describe: a sync that
    // failed midway, or a load since, makes the next one compare with what the snapshot holds.
    const holding = made ?? planned.current!;
    mkdirSync(dir, { recursive: true });
    rmSync(join(dir, 'state.json'), { force: true });
    renameSync(join(work, 'digests.parquet'), join(dir, 'digests.parquet'));
    const state: SyncState = { base: baseOf(holding), rows: rowsOf(holding, organization) ?? {}, host: opts.upstream.host,
      organizationId: planned.organizationId, projects: planned.projects };
    writeFileSync(join(dir, 'state.json.new'), JSON.stringify(state));
    renameSync(join(dir, 'state.json.new'), join(dir, 'state.json'));
    return { organization, workspaces: planned.workspaces, resources: planned.resources, bytes, upserted: planned.upserted, deleted: planned.deleted,
      snapshot: made?.id ?? null, seconds: { read: seconds(readSeconds), rebuild: seconds(rebuildSeconds), apply: seconds(applySeconds) } };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The organization's views into `work`, each by its CSV export (or page by page), as many at once as the
 * limiter lets, all of one upstream snapshot (read-views.ts Pin). An upstream that no longer keeps that
 * snapshot by the time a later view asks for it (a run that took longer than its retention) is read again.
 */
async function readViews(organization: string, work: string, opts: SyncOptions): Promise<{ files: ViewFiles; bytes: number; resourcesRead: boolean }> {
  for (let tried = 1; ; tried++) {
    const read: ReadOptions = { upstream: opts.upstream, token: opts.token, limiter: opts.limiter, pin: {},
      ...(opts.signal ? { signal: opts.signal } : {}), ...(opts.retries === undefined ? {} : { retries: opts.retries }),
      ...(opts.backoffMs === undefined ? {} : { backoffMs: opts.backoffMs }), ...(opts.idleMs === undefined ? {} : { idleMs: opts.idleMs }),
      ...(opts.log ? { log: opts.log } : {}) };
    try {
      const files = {} as ViewFiles;
      let bytes = 0;
      let resourcesRead = true;
      // The workspaces first: a 401 or 404 for them is the organization's, and only once they answered is a
      // 404 for resources the upstream lacking that view. Their answer names the snapshot the others are read at.
      const [first, ...rest] = SYNCED_VIEWS;
      bytes += await readViewCsv(organization, first, join(work, `${first}.csv`), read);
      files[first] = join(work, `${first}.csv`);
      await Promise.all(rest.map(async (view) => {
        const file = join(work, `${view}.csv`);
        try {
          bytes += await readViewCsv(organization, view, file, read);
          files[view] = file;
        } catch (e) {
          if (!(e instanceof ViewMissingError)) throw e;
          opts.log?.(`${organization}: ${e.message}; its resources stay as the mirror holds them`);
          resourcesRead = false;
        }
      }));
      return { files, bytes, resourcesRead };
    } catch (e) {
      if (!(e instanceof PinnedSnapshotGoneError) || tried >= 3) throw e;
      opts.log?.(`${organization}: ${e.message}; reading its views again`);
    }
  }
}

/** What a sync found, and what it wrote for the writer to apply. */
interface SyncPlan {
  /** A load of `batch` (nothing held yet), a change batch in it, or nothing to write. */
  write: 'load' | 'batch' | null;
  /** The snapshot it compared with (null when there was none). */
  current: Manifest | null;
  workspaces: number;
  resources: number | null;
  upserted: number;
  deleted: number;
  organizationId: string | null;
  projects: Record<string, string>;
}

/**
 * Rebuilds the organization's source records from the view files, compares them with what the previous sync
 * read (or with what the mirror holds), and writes what changed as a source or batch directory into `batch`,
 * and the new digests to `digests`; `dir` holds what the previous sync recorded, `work` is scratch. Its
 * database is closed when it returns.
 */
async function planSync(organization: string, dataDir: string, dir: string, current: Manifest | null, files: ViewFiles, resourcesRead: boolean,
  batch: string, digests: string, work: string): Promise<SyncPlan> {
  const instance = await openInstance(':memory:', { threads: '2', memory_limit: '400MB', temp_directory: join(work, 'spill') });
  const db = await instance.connect();
  try {
    const kept = current ? keptState(dir, current, organization) : null;
    // What the snapshot holds of the organization, in the export's form: its resources when the upstream has
    // no resources view, and every view when no kept digests describe the snapshot.
    const organizationKey = current?.organizationKeys?.[organization];
    const heldViews = current && !kept ? [...SYNCED_VIEWS] : resourcesRead ? [] : ['resources' as const];
    const held = {} as Partial<ViewFiles>;
    if (heldViews.length > 0) {
      await withLayers(db, dataDir, current, async (layers) => {
        for (const view of heldViews) await writeHeldView(db, layers, view, organizationKey, held[view] = join(work, `held-${view}.csv`));
      });
    }
    if (!resourcesRead) files.resources = held.resources!;
    await stageRebuilt(db, organization, files);
    await db.run(`COPY rs_digests TO ${sqlLiteral(digests)} (FORMAT PARQUET)`);
    const count = async (sql: string) => Number((await db.runAndReadAll(sql)).getRows()[0]![0]);
    const workspaces = await count('SELECT count(*) FROM rs_workspaces');
    const found = {
      current,
      workspaces,
      resources: resourcesRead ? await count('SELECT count(*) FROM rs_resources') : null,
      organizationId: await organizationIdOf(db),
      projects: await projectsOf(db),
    };
    mkdirSync(batch);
    if (!current) {
      // Nothing held yet: the first sync is a load of what it read.
      await writeRebuilt(db, batch, null, null, []);
      return { ...found, write: 'load', upserted: workspaces, deleted: 0 };
    }
    const previous: Previous = kept
      ? { present: true, organizationId: kept.organizationId, projects: kept.projects, digests: join(dir, 'digests.parquet') }
      : await heldRecords(instance, organization, organizationKey !== undefined, held as ViewFiles, join(work, 'held-digests.parquet'));
    await db.run(`CREATE TEMP TABLE prev_digests AS SELECT id, hi, lo FROM read_parquet(${sqlLiteral(previous.digests)})`);
    await db.run(`CREATE TEMP TABLE changed AS SELECT n.id FROM rs_digests n LEFT JOIN prev_digests p ON p.id = n.id
      WHERE p.hi IS DISTINCT FROM n.hi OR p.lo IS DISTINCT FROM n.lo`);
    const heldWorkspaces = await column(db, 'SELECT id FROM prev_digests');
    const upstreamWorkspaces = new Set(await column(db, 'SELECT id FROM rs_workspaces'));
    const deletions = [
      ...heldWorkspaces.filter((id) => !upstreamWorkspaces.has(id)).map((id) => ({ kind: 'workspace', id })),
      ...Object.keys(previous.projects).filter((id) => !(id in found.projects)).map((id) => ({ kind: 'project', id })),
    ];
    const changedProjects = Object.entries(found.projects).filter(([id, name]) => previous.projects[id] !== name).map(([id]) => id);
    const upserted = await count('SELECT count(*) FROM changed');
    const deleted = deletions.filter((d) => d.kind === 'workspace').length;
    const organizationChanged = !previous.present || previous.organizationId !== found.organizationId;
    if (upserted === 0 && deletions.length === 0 && changedProjects.length === 0 && !organizationChanged) return { ...found, write: null, upserted, deleted };
    // Projects renamed or new, beside those the changed workspaces use.
    const renamed = changedProjects.length > 0 ? `id IN (${changedProjects.map(sqlLiteral).join(', ')}) OR ` : '';
    await writeRebuilt(db, batch, 'changed', `${renamed}id IN (SELECT project_id FROM rs_workspaces WHERE id IN (SELECT id FROM changed))`, deletions);
    return { ...found, write: 'batch', upserted, deleted };
  } finally {
    db.closeSync();
    instance.closeSync();
  }
}

const column = async (db: DuckDBConnection, sql: string) =>
  (await db.runAndReadAll(sql)).getRows().map(([v]) => v as string);
const organizationIdOf = async (db: DuckDBConnection) => (await db.runAndReadAll('SELECT id FROM rs_organizations')).getRows()[0]![0] as string | null;
const projectsOf = async (db: DuckDBConnection) =>
  Object.fromEntries((await db.runAndReadAll('SELECT id, name FROM rs_projects')).getRows() as [string, string][]);

/**
 * The previous sync's record, when the snapshot still holds what it describes: the same load under it, and
 * the organization's rows per view as that sync left them.
 */
function keptState(dir: string, current: Manifest, organization: string): SyncState | null {
  const file = join(dir, 'state.json');
  if (!existsSync(file) || !existsSync(join(dir, 'digests.parquet'))) return null;
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as SyncState;
    const rows = rowsOf(current, organization);
    return state.base === baseOf(current) && rows !== null && JSON.stringify(state.rows) === JSON.stringify(rows) ? state : null;
  } catch { return null; }
}

/**
 * The held views rebuilt and digested as the upstream's are (on a connection of its own: the staged tables
 * are the connection's), so that a workspace the snapshot holds as the upstream has it compares equal.
 */
async function heldRecords(instance: DuckDBInstance, organization: string, present: boolean, held: ViewFiles, digests: string): Promise<Previous> {
  const db = await instance.connect();
  try {
    await stageRebuilt(db, organization, held);
    await db.run(`COPY rs_digests TO ${sqlLiteral(digests)} (FORMAT PARQUET)`);
    return { present, organizationId: await organizationIdOf(db), projects: await projectsOf(db), digests };
  } finally {
    db.closeSync();
  }
}

/** `task` with the layers of `current` attached (none when there is no snapshot yet), detached after. */
async function withLayers<T>(db: DuckDBConnection, dataDir: string, current: Manifest | null, task: (layers: string[]) => Promise<T>): Promise<T> {
  if (!current) return task([]);
  const layers = await attachLayers((sql) => db.run(sql), layerPaths(snapshotPath(dataDir, current.id), current));
  try {
    return await task(layers.stack);
  } finally {
    await layers.detach();
  }
}
