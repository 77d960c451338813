// From an organization's views, as their CSV exports give them, back to the source records they were built
// from (docs/sync.md, "From views back to a source"), and a digest of each workspace's records: what a sync
// compares with the previous sync's to find what changed. All of it is SQL over the files, streamed: an
// organization of 2M resources is never held whole in memory.
import type { DuckDBConnection } from '@duckdb/node-api';
import { closeSync, openSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { csvText } from '../query/compile.js';
import { catalogFor, workspaceColumn } from '../catalog/catalog.js';
import { mergedGroupedRows, mergedViewRows } from '../snapshots/delta-layout.js';

import type { SyncedView } from './read-views.js';
import { ident, sqlLiteral } from '../duckdb/sql.js';

/** The view files of one organization, as read from the upstream (resources as the mirror holds them when it has no such view). */
export type ViewFiles = Record<SyncedView, string>;

/** The first line of a CSV file: its header, the fields' names. */
function headerOf(file: string): string[] {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(64 * 1024);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const line = buf.subarray(0, n).toString('utf8').split('\n')[0]!.replace(/\r$/, '');
    return line.split(',').map((h) => h.replace(/^"|"$/g, ''));
  } finally { closeSync(fd); }
}

/** The one header field matching `pattern` (the engine's name is in the version fields' names), or an error naming the view. */
function field(header: string[], pattern: RegExp, view: string): string {
  const found = header.filter((h) => pattern.test(h));
  if (found.length !== 1) throw new Error(`the upstream's ${view} export has no field like ${pattern.source} (its header: ${header.join(',')})`);
  return found[0]!;
}

const csv = (file: string) => `read_csv(${sqlLiteral(file)}, header = true, all_varchar = true, delim = ',', quote = '"', escape = '"', auto_detect = false, columns = ${columnsOf(file)})`;
const columnsOf = (file: string) => `{${headerOf(file).map((h) => `${sqlLiteral(h)}: 'VARCHAR'`).join(', ')}}`;
/** A CSV value as the view had it: the export writes null as an empty string. */
const v = (column: string, alias = '') => `nullif(${alias ? `${alias}.` : ''}${ident(column)}, '')`;
const int = (column: string) => `CAST(${v(column)} AS BIGINT)`;
const bool = (column: string, alias = '') => `CAST(${v(column, alias)} AS BOOLEAN)`;

/**
 * Stages the organization's source records in `db` as tables: `rs_organizations`, `rs_projects`,
 * `rs_workspaces`, `rs_providers`, `rs_modules` (the workspaces, providers and modules are small beside
 * resources), and the view `rs_resources` over the resources export; and `rs_digests (id, hi, lo)`, one per
 * workspace over every record of it.
 */
export async function stageRebuilt(db: DuckDBConnection, organization: string, files: ViewFiles): Promise<void> {
  const run = (sql: string) => db.run(sql);
  const ws = headerOf(files.workspaces);
  const engineVersion = field(ws, /^workspace_.+_version$/, 'workspaces');
  const stateVersion = field(ws, /^state_version_.+_version$/, 'workspaces');
  await run(`CREATE TEMP TABLE up_workspaces AS SELECT * FROM ${csv(files.workspaces)}`);
  await run(`CREATE TEMP TABLE rs_organizations AS SELECT ${sqlLiteral(organization)} AS name,
    (SELECT max(${v('organization_external_id')}) FROM ${csv(files.resources)}) AS id`);
  await run(`CREATE TEMP TABLE rs_projects AS SELECT DISTINCT ${v('project_external_id')} AS id, ${sqlLiteral(organization)} AS organization, ${v('project_name')} AS name FROM up_workspaces`);
  await run(`CREATE TEMP TABLE rs_workspaces AS SELECT
      ${v('external_id')} AS id, ${sqlLiteral(organization)} AS organization, ${v('project_external_id')} AS project_id,
      ${v('workspace_name')} AS name, ${v('workspace_created_at')} AS created_at, ${v('workspace_updated_at')} AS updated_at,
      ${v(engineVersion)} AS engine_version, ${v(stateVersion)} AS state_version_engine_version,
      ${v('vcs_repo_identifier')} AS vcs_repo_identifier,
      CASE WHEN ${v('tags')} IS NULL THEN NULL ELSE string_split(tags, ', ') END AS tags,
      CASE WHEN ${v('current_run_external_id')} IS NULL THEN NULL
        ELSE {'id': current_run_external_id, 'status': ${v('current_run_status')}, 'applied_at': ${v('current_run_applied_at')}} END AS current_run,
      {'passed': ${int('checks_passed')}, 'failed': ${int('checks_failed')}, 'errored': ${int('checks_errored')}, 'unknown': ${int('checks_unknown')}} AS checks,
      CASE WHEN ${v('drifted')} IS NULL AND ${v('resources_drifted')} IS NULL AND ${v('resources_undrifted')} IS NULL THEN NULL
        ELSE {'drifted': ${bool('drifted')}, 'resources_drifted': ${int('resources_drifted')}, 'resources_undrifted': ${int('resources_undrifted')}} END AS drift,
      ${int('resource_count')} AS resource_count, ${int('current_rum_count')} AS current_rum_count,
      ${v('source_module_id')} AS source_module_id
    FROM up_workspaces`);
  // A provider or module row names its workspaces; each becomes a row of each workspace, found by name.
  for (const kind of ['providers', 'modules'] as const) {
    await run(`CREATE TEMP TABLE rs_${kind} AS SELECT w.id AS workspace_id, ${v('name', 'u')} AS name, ${v('source', 'u')} AS source,
        ${v('version', 'u')} AS version, ${v('registry_type', 'u')} AS registry_type, ${bool('curated', 'u')} AS curated
      FROM (SELECT *, unnest(string_split(workspaces, ', ')) AS workspace_name FROM ${csv(files[kind])} WHERE ${v('workspaces')} IS NOT NULL) u
      JOIN rs_workspaces w ON w.name = u.workspace_name`);
  }
  const version = field(headerOf(files.resources), /^[a-z0-9]+_version$/, 'resources');
  // provider_name drops one leading registry.terraform.io/: a two-part namespace/name gets it back.
  await run(`CREATE TEMP VIEW rs_resources AS SELECT ${v('workspace_external_id')} AS workspace_id, ${v('address')} AS address,
      ${v('name')} AS name, ${v('provider_type')} AS type,
      CASE WHEN regexp_full_match(provider_name, '[^/]+/[^/]+') THEN 'registry.terraform.io/' || provider_name ELSE provider_name END AS provider,
      CASE WHEN module_name = 'root' THEN NULL ELSE ${v('module_name')} END AS module,
      ${v(version)} AS engine_version, ${bool('billable_rum')} AS billable, ${v('source_id')} AS run_id,
      ${v('source_updated_at')} AS state_updated_at
    FROM ${csv(files.resources)}`);
  // A digest per workspace over its record and every row of it: the md5 of each record's JSON (tagged with
  // its kind, so that a provider row and a module row alike do not cancel), combined by XOR, which needs no
  // order and no memory beyond one value per workspace (rows of a workspace are distinct). Kept as two
  // 64-bit halves: Parquet has no 128-bit integer, and a 128-bit integer's text costs more than its md5.
  const rows = (kind: string, table: string, id: string) => `SELECT ${id} AS id, md5_number(${sqlLiteral(kind)} || CAST(to_json(t) AS VARCHAR)) AS n FROM ${table} t`;
  await run(`CREATE TEMP TABLE rs_digests AS SELECT id, CAST(d >> 64 AS UBIGINT) AS hi, CAST(d & 18446744073709551615::UHUGEINT AS UBIGINT) AS lo
    FROM (SELECT id, bit_xor(n) AS d FROM (${rows('w', 'rs_workspaces', 'id')} UNION ALL ${rows('p', 'rs_providers', 'workspace_id')}
      UNION ALL ${rows('m', 'rs_modules', 'workspace_id')} UNION ALL ${rows('r', 'rs_resources', 'workspace_id')}) GROUP BY id)
    WHERE id IN (SELECT id FROM rs_workspaces)`);
}

/**
 * Writes the staged records of the workspaces in `chosen` (a relation of one column `id`; every workspace
 * when null) as a source directory, with the organization, the projects `projects` picks (a condition on
 * rs_projects; every project when null), and the `deletions` given.
 */
export async function writeRebuilt(db: DuckDBConnection, dir: string, chosen: string | null, projects: string | null,
  deletions: { kind: string; id?: string; name?: string }[]): Promise<void> {
  const run = (sql: string) => db.run(sql);
  const to = (name: string) => sqlLiteral(join(dir, `${name}.ndjson`));
  const pick = (column: string) => (chosen === null ? 'true' : `${column} IN (SELECT id FROM ${chosen})`);
  await run(`COPY (SELECT * FROM rs_organizations) TO ${to('organizations')} (FORMAT JSON)`);
  await run(`COPY (SELECT * FROM rs_projects WHERE ${projects ?? 'true'} ORDER BY id) TO ${to('projects')} (FORMAT JSON)`);
  await run(`COPY (SELECT * FROM rs_workspaces WHERE ${pick('id')} ORDER BY id) TO ${to('workspaces')} (FORMAT JSON)`);
  await run(`COPY (SELECT * FROM rs_providers WHERE ${pick('workspace_id')}) TO ${to('workspace_providers')} (FORMAT JSON)`);
  await run(`COPY (SELECT * FROM rs_modules WHERE ${pick('workspace_id')}) TO ${to('workspace_modules')} (FORMAT JSON)`);
  await run(`COPY (SELECT * FROM rs_resources WHERE ${pick('workspace_id')}) TO ${to('workspace_resources')} (FORMAT JSON)`);
  if (deletions.length > 0) writeFileSync(join(dir, 'deletions.ndjson'), deletions.map((d) => JSON.stringify(d)).join('\n') + '\n');
}

/**
 * The rows a snapshot holds of one organization in `view` (`layers` attached, its key from the manifest; none
 * when it holds none), written to `file` as this service's CSV export writes them: what a sync reads in place
 * of an upstream that has no resources view, and what it compares the upstream's views with when no kept
 * digests describe the snapshot (sync-organization.ts).
 */
export async function writeHeldView(db: DuckDBConnection, layers: readonly string[], view: SyncedView, organizationKey: number | undefined, file: string): Promise<void> {
  const fields = catalogFor().view(view)!.fields;
  if (layers.length === 0 || organizationKey === undefined) {
    writeFileSync(file, `${fields.map((f) => `"${f.name}"`).join(',')}\n`);
    return;
  }
  const key = Math.trunc(organizationKey);
  const rows = workspaceColumn(view) ? mergedViewRows(layers, view, key) : mergedGroupedRows(layers, view);
  await db.run(`COPY (SELECT ${fields.map((f) => `${csvText(f)} AS ${ident(f.name)}`).join(', ')} FROM ${rows} r WHERE r."_org_key" = ${key})
    TO ${sqlLiteral(file)} (FORMAT CSV, HEADER, FORCE_QUOTE *)`);
}
