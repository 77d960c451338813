// The source state of a snapshot (its `source_*` tables, write/staging.ts, merged with its delta's for a
// snapshot made by batches: delta-layout.ts) as a change batch asks for it: by key, in a few statements
// however large the batch, each key bound as a list parameter.
import { listValue, type DuckDBConnection, type DuckDBInstance, type DuckDBValue } from '@duckdb/node-api';
import { openInstance } from '../../duckdb/open-instance.js';

import type { SourceState } from './batch-validator.js';
import { BATCH_THREADS, mergedState } from '../delta-layout.js';
import { attachLayers, type LayerPaths } from './build-steps.js';

export interface SnapshotState extends SourceState {
  close(): void | Promise<void>;
}

/** An instance to read source state on: lookups by key, which need little memory. */
export const openStateInstance = (threads = BATCH_THREADS): Promise<DuckDBInstance> =>
  openInstance(':memory:', { threads: String(threads), memory_limit: '256MB' });

/** Opens the source state of a snapshot's layers (read-only), or of a loaded snapshot's DuckDB file at `path`. */
export async function openSnapshotState(paths: LayerPaths | string, threads = BATCH_THREADS): Promise<SnapshotState> {
  const instance = await openStateInstance(threads);
  const db: DuckDBConnection = await instance.connect();
  const layers = await attachLayers((sql) => db.run(sql),
    typeof paths === 'string' ? { base: paths, whole: null, overlays: [], major: null, minor: null } : paths);
  return stateOn(db, layers.stack, () => {
    db.closeSync();
    instance.closeSync();
  });
}

/**
 * The source state of the layers `stack` (attached aliases, attachLayers' `stack`) read on `db`, a connection
 * of its own: its views are the connection's own (temporary), so that it can share an instance with a writer
 * that attached the layers (a batch's build: delta.ts). `close` is what its close() does.
 */
export async function stateOn(db: DuckDBConnection, stack: readonly string[], close: () => void | Promise<void>): Promise<SnapshotState> {
  await db.run((['organizations', 'projects', 'workspaces'] as const)
    .map((kind) => `CREATE TEMP VIEW state_source_${kind} AS SELECT * FROM ${mergedState(stack, kind)}`).join(';\n'));
  /** `sql` with each of `lists` bound as a list parameter (none asked: no rows). */
  const rows = async (sql: string, ...lists: string[][]): Promise<unknown[][]> =>
    lists[0]!.length === 0 ? [] : (await db.runAndReadAll(sql, lists.map((l) => listValue(l) as DuckDBValue))).getRows();
  const within = 'IN (SELECT unnest(?::VARCHAR[]))';
  return {
    async organizations(names) {
      const found = await rows(`SELECT name, id FROM state_source_organizations WHERE name ${within}`, names);
      return new Map(found.map(([name, id]) => [name as string, { id: (id as string | null) ?? null }]));
    },
    async organizationIds(ids) {
      const found = await rows(`SELECT id, name FROM state_source_organizations WHERE id ${within}`, ids);
      return new Map(found.map(([id, name]) => [id as string, name as string]));
    },
    async projects(ids) {
      const found = await rows(`SELECT id, organization, name FROM state_source_projects WHERE id ${within}`, ids);
      return new Map(found.map(([id, organization, name]) => [id as string, { organization: organization as string, name: name as string }]));
    },
    async workspaces(ids) {
      const found = await rows(`SELECT id, organization, name, project_id FROM state_source_workspaces WHERE id ${within}`, ids);
      return new Map(found.map(([id, organization, name, project]) => [id as string, { organization: organization as string, name: name as string, project_id: project as string }]));
    },
    async workspacesNamed(keys) {
      // A join on both columns, not a test of their concatenation: that built a string for every workspace of
      // S, three to seven times slower (80 against 12 ms on a million workspaces).
      const pairs = keys.map((k) => k.split('\n'));
      const found = await rows(`SELECT w.organization, w.name, w.id FROM state_source_workspaces w
        JOIN (SELECT unnest(?::VARCHAR[]) AS organization, unnest(?::VARCHAR[]) AS name) k ON k.organization = w.organization AND k.name = w.name`,
      pairs.map((p) => p[0]!), pairs.map((p) => p.slice(1).join('\n')));
      return new Map(found.map(([organization, name, id]) => [`${organization}\n${name}`, id as string]));
    },
    async workspacesOfProjects(ids) {
      const found = await rows(`SELECT project_id, list(id ORDER BY id) FROM state_source_workspaces WHERE project_id ${within} GROUP BY project_id`, ids);
      return new Map(found.map(([project, list]) => [project as string, ((list as { items: unknown[] }).items ?? []) as string[]]));
    },
    close,
  };
}
