// One organization's sync: its views read from the upstream, its source records rebuilt, compared with what
// the previous sync of it read, and only what changed applied through the one writer as a change batch (the
// first sync into an empty data directory is a load). docs/sync.md.
import type { DuckDBConnection } from '@duckdb/node-api';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { openInstance } from '../duckdb/open-instance.js';
import { mergedState } from '../snapshots/delta-layout.js';
import { readCurrentId, readManifest, snapshotPath, type Manifest } from '../snapshots/snapshot-dir.js';
import { applyBatch, type ApplyOptions } from '../snapshots/write/apply.js';
import { attachLayers, layerPaths } from '../snapshots/write/build-steps.js';
import { DataDirNotEmptyError, loadSnapshot } from '../snapshots/write/load.js';
import { sqlLiteral } from '../snapshots/write/staging.js';
import { Limiter, readViewCsv, SYNCED_VIEWS, ViewMissingError, type ReadOptions } from './read-views.js';
import { stageRebuilt, writeHeldResources, writeRebuilt, type ViewFiles } from './rebuild-source.js';
import type { Upstream } from './upstream-endpoint.js';

export interface SyncOptions {
  upstream: Upstream;
  token: string;
  limiter: Limiter;
  /** The writers' options (data directory, retention, lock, memory). */
  writer: ApplyOptions & { keepFull?: number };
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

/** What the previous sync of an organization read, kept beside the snapshots (`sync/<host>/<organization>/`). */
interface SyncState {
  /** The base database the mirror held then: another means a load replaced what the sync had written. */
  database: string;
  organizationId: string | null;
  projects: Record<string, string>;
}

const stateDir = (dataDir: string, upstream: Upstream, organization: string) =>
  join(dataDir, 'sync', upstream.host.replace(/[^A-Za-z0-9.-]/g, '_'), organization);

export async function syncOrganization(organization: string, opts: SyncOptions): Promise<SyncReport> {
  const { dataDir } = opts.writer;
  const dir = stateDir(dataDir, opts.upstream, organization);
  const work = join(dataDir, 'sync', `.run-${process.pid}-${organization}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const started = performance.now();
  const lap = () => (performance.now() - started) / 1000;
  const seconds = (s: number) => Math.round(s * 100) / 100;
  try {
    // The views, each by its CSV export (or page by page), as many at once as the limiter lets.
    const read: ReadOptions = { upstream: opts.upstream, token: opts.token, limiter: opts.limiter,
      ...(opts.signal ? { signal: opts.signal } : {}), ...(opts.retries === undefined ? {} : { retries: opts.retries }),
      ...(opts.backoffMs === undefined ? {} : { backoffMs: opts.backoffMs }), ...(opts.idleMs === undefined ? {} : { idleMs: opts.idleMs }),
      ...(opts.log ? { log: opts.log } : {}) };
    const files = {} as ViewFiles;
    let bytes = 0;
    let resourcesRead = true;
    // The workspaces first: a 401 or 404 for them is the organization's, and only once they answered is a
    // 404 for resources the upstream lacking that view.
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
    const readSeconds = lap();

    const label = opts.label ?? `sync ${opts.upstream.host} ${organization}`;
    const batch = join(work, 'batch');
    const plan = async (): Promise<SyncPlan> => {
      rmSync(batch, { recursive: true, force: true });
      const currentId = await readCurrentId(dataDir);
      const current = currentId ? await readManifest(dataDir, currentId) : null;
      return planSync(organization, dataDir, dir, current, files, resourcesRead, batch, join(work, 'digests.parquet'), join(work, 'spill'));
    };
    let planned: SyncPlan = await plan();
    const rebuildSeconds = lap() - readSeconds;
    // Written with the rebuild's database closed: the writer's memory is the sync's only large part.
    let snapshot: string | null = null;
    if (planned.write === 'load') {
      // Only into a data directory that is still empty: another writer (a sync of another organization
      // beside this one) may have made a snapshot current meanwhile, which a load would replace whole. Then
      // this one is planned again against that snapshot, as a batch.
      snapshot = await loadSnapshot(batch, { ...opts.writer, label, onlyIfEmpty: true }).then((r) => r.manifest.id, async (e: Error) => {
        if (!(e instanceof DataDirNotEmptyError)) throw e;
        planned = await plan();
        return null;
      });
    }
    if (planned.write === 'batch') snapshot = (await applyBatch(batch, { ...opts.writer, label })).manifest.id;
    const applySeconds = lap() - readSeconds - rebuildSeconds;
    // Recorded only once applied: a sync that failed midway compares the next one with what is held.
    const after = await readManifest(dataDir, (await readCurrentId(dataDir))!);
    mkdirSync(dir, { recursive: true });
    renameSync(join(work, 'digests.parquet'), join(dir, 'digests.parquet'));
    const state: SyncState = { database: after.database!, organizationId: planned.organizationId, projects: planned.projects };
    writeFileSync(join(dir, 'state.json.new'), JSON.stringify(state));
    renameSync(join(dir, 'state.json.new'), join(dir, 'state.json'));
    return { organization, workspaces: planned.workspaces, resources: planned.resources, bytes, upserted: planned.upserted, deleted: planned.deleted, snapshot,
      seconds: { read: seconds(readSeconds), rebuild: seconds(rebuildSeconds), apply: seconds(applySeconds) } };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** What a sync found, and what it wrote for the writer to apply. */
interface SyncPlan {
  /** A load of `batch` (nothing held yet), a change batch in it, or nothing to write. */
  write: 'load' | 'batch' | null;
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
 * and the new digests to `digests`; `dir` holds what the previous sync recorded. Its database is closed when it
 * returns.
 */
async function planSync(organization: string, dataDir: string, dir: string, current: Manifest | null, files: ViewFiles, resourcesRead: boolean,
  batch: string, digests: string, spill: string): Promise<SyncPlan> {
  const instance = await openInstance(':memory:', { threads: '2', memory_limit: '400MB', temp_directory: spill });
  const db = await instance.connect();
  try {
    if (!resourcesRead) {
      files.resources = join(dirname(batch), 'held-resources.csv');
      await withLayers(db, dataDir, current, (layers) => writeHeldResources(db, layers, current?.organizationKeys?.[organization], files.resources));
    }
    await stageRebuilt(db, organization, files);
    await db.run(`COPY rs_digests TO ${sqlLiteral(digests)} (FORMAT PARQUET)`);
    const count = async (sql: string) => Number((await db.runAndReadAll(sql)).getRows()[0]![0]);
    const workspaces = await count('SELECT count(*) FROM rs_workspaces');
    const found = {
      workspaces,
      resources: resourcesRead ? await count('SELECT count(*) FROM rs_resources') : null,
      organizationId: (await db.runAndReadAll('SELECT id FROM rs_organizations')).getRows()[0]![0] as string | null,
      projects: Object.fromEntries((await db.runAndReadAll('SELECT id, name FROM rs_projects')).getRows() as [string, string][]),
    };
    mkdirSync(batch);
    if (!current) {
      // Nothing held yet: the first sync is a load of what it read.
      await writeRebuilt(db, batch, null, null, []);
      return { ...found, write: 'load', upserted: workspaces, deleted: 0 };
    }
    const previous = readState(dir, current);
    const held = previous ? null : await heldBy(db, dataDir, current, organization);
    // What the last sync read, or else what the mirror holds of the organization (all of it then replaced).
    await db.run(`CREATE TEMP TABLE prev_digests AS ${previous
      ? `SELECT id, hi, lo FROM read_parquet(${sqlLiteral(join(dir, 'digests.parquet'))})`
      : 'SELECT NULL::VARCHAR AS id, NULL::UBIGINT AS hi, NULL::UBIGINT AS lo WHERE false'}`);
    await db.run(`CREATE TEMP TABLE changed AS SELECT n.id FROM rs_digests n LEFT JOIN prev_digests p ON p.id = n.id
      WHERE p.hi IS DISTINCT FROM n.hi OR p.lo IS DISTINCT FROM n.lo`);
    const heldWorkspaces = previous ? await column(db, 'SELECT id FROM prev_digests') : held!.workspaces;
    const upstreamWorkspaces = new Set(await column(db, 'SELECT id FROM rs_workspaces'));
    const heldProjects = previous ? previous.projects : held!.projects;
    const deletions = [
      ...heldWorkspaces.filter((id) => !upstreamWorkspaces.has(id)).map((id) => ({ kind: 'workspace', id })),
      ...Object.keys(heldProjects).filter((id) => !(id in found.projects)).map((id) => ({ kind: 'project', id })),
    ];
    const changedProjects = Object.entries(found.projects).filter(([id, name]) => heldProjects[id] !== name).map(([id]) => id);
    const upserted = await count('SELECT count(*) FROM changed');
    const deleted = deletions.filter((d) => d.kind === 'workspace').length;
    const organizationChanged = previous ? previous.organizationId !== found.organizationId : true;
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

/** The previous sync's record, when the mirror still holds what it wrote: no load has replaced the base since. */
function readState(dir: string, current: Manifest): SyncState | null {
  const file = join(dir, 'state.json');
  if (!existsSync(file) || !existsSync(join(dir, 'digests.parquet'))) return null;
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as SyncState;
    return state.database === current.database ? state : null;
  } catch { return null; }
}

/** `task` with the layers of `current` attached (none when there is no snapshot yet), detached after. */
async function withLayers<T>(db: DuckDBConnection, dataDir: string, current: Manifest | null, task: (layers: string[]) => Promise<T>): Promise<T> {
  const layers = current ? await attachLayers((sql) => db.run(sql), layerPaths(snapshotPath(dataDir, current.id), current)) : [];
  try {
    return await task(layers);
  } finally {
    for (const alias of layers) await db.run(`DETACH ${alias}`);
  }
}

/** The workspaces and projects the current snapshot holds of `organization`, read from its source state. */
function heldBy(db: DuckDBConnection, dataDir: string, current: Manifest, organization: string) {
  return withLayers(db, dataDir, current, async (layers) => {
    const org = sqlLiteral(organization);
    return {
      workspaces: await column(db, `SELECT id FROM ${mergedState(layers, 'workspaces')} t WHERE t.organization = ${org}`),
      projects: Object.fromEntries((await db.runAndReadAll(`SELECT id, name FROM ${mergedState(layers, 'projects')} t WHERE t.organization = ${org}`)).getRows() as [string, string][]),
    };
  });
}
