// Reads a validated source into DuckDB staging tables (src_*, ws_providers, ws_modules) and the src_resources view that the view
// declarations in catalog/views.ts are written against. Normalization rules: snapshot-source.md and
// interface §3 (empty optional strings are null, lists sorted and de-duplicated, UTC millisecond times).
import type { SourceFile } from './source-validator.js';
import { sqlLiteral } from '../../duckdb/sql.js';
import { foldSql } from '../../query/compile.js';

// timezone('UTC', …) names the zone instead of relying on the instance's TimeZone setting (open-instance.ts).
const ts = (expr: string) => `date_trunc('millisecond', timezone('UTC', CAST(nullif(${expr}, '') AS TIMESTAMPTZ)))`;
const opt = (expr: string) => `nullif(${expr}, '')`;
/** Slices of the workspaces that each per-workspace list is built in (see `list` below). */
const LIST_SLICES = 8;

const COLUMNS: Record<SourceFile, string> = {
  organizations: `{name: 'VARCHAR', id: 'VARCHAR'}`,
  projects: `{id: 'VARCHAR', organization: 'VARCHAR', name: 'VARCHAR'}`,
  workspaces: `{id: 'VARCHAR', organization: 'VARCHAR', project_id: 'VARCHAR', name: 'VARCHAR',
    created_at: 'VARCHAR', updated_at: 'VARCHAR', engine_version: 'VARCHAR', state_version_engine_version: 'VARCHAR',
    vcs_repo_identifier: 'VARCHAR', tags: 'VARCHAR[]',
    current_run: 'STRUCT(id VARCHAR, status VARCHAR, applied_at VARCHAR)',
    checks: 'STRUCT(passed BIGINT, failed BIGINT, errored BIGINT, "unknown" BIGINT)',
    drift: 'STRUCT(drifted BOOLEAN, resources_drifted BIGINT, resources_undrifted BIGINT)',
    resource_count: 'BIGINT', current_rum_count: 'BIGINT', source_module_id: 'VARCHAR'}`,
  workspace_providers: `{workspace_id: 'VARCHAR', name: 'VARCHAR', source: 'VARCHAR', version: 'VARCHAR', registry_type: 'VARCHAR', curated: 'BOOLEAN'}`,
  workspace_modules: `{workspace_id: 'VARCHAR', name: 'VARCHAR', source: 'VARCHAR', version: 'VARCHAR', registry_type: 'VARCHAR', curated: 'BOOLEAN'}`,
  workspace_resources: `{workspace_id: 'VARCHAR', address: 'VARCHAR', name: 'VARCHAR', type: 'VARCHAR', provider: 'VARCHAR',
    module: 'VARCHAR', engine_version: 'VARCHAR', billable: 'BOOLEAN', run_id: 'VARCHAR', state_updated_at: 'VARCHAR'}`,
  teams: `{organization: 'VARCHAR', name: 'VARCHAR', read_workspaces: 'BOOLEAN', read_projects: 'BOOLEAN'}`,
  team_members: `{organization: 'VARCHAR', team: 'VARCHAR', "user": 'VARCHAR'}`,
};

/** The raw rows of one source file, or an empty relation of the same shape when the file is absent. */
function raw(file: SourceFile, path: string | undefined): string {
  if (path) return `read_json(${sqlLiteral(path)}, format = 'newline_delimited', columns = ${COLUMNS[file]})`;
  // No read_json of an empty path: DuckDB refuses to bind one inside a view, LIMIT 0 or not.
  const struct = [...COLUMNS[file].matchAll(/("?\w+"?): '([^']+)'/g)].map(([, name, type]) => `${name} ${type}`).join(', ');
  return `(SELECT unnest(NULL::STRUCT(${struct})) WHERE false)`;
}

/** `slices`: how many slices of the workspaces each list is built in (a change batch's few need one). */
export function stagingStatements(files: Partial<Record<SourceFile, string>>, slices = LIST_SLICES): string[] {
  // `curated` is no key: rows that agree on every key are one row, curated when any of them is (interface §3).
  const usage = (file: 'workspace_providers' | 'workspace_modules', table: string) => `
    CREATE TABLE ${table} AS SELECT workspace_id, name, source, ${opt('version')} AS version, ${opt('registry_type')} AS registry_type,
      bool_or(coalesce(curated, false)) AS curated
    FROM ${raw(file, files[file])}
    GROUP BY ALL`;
  // A list() aggregate's states are not spilled to disk: over 5M workspaces at once they outgrew the
  // loader's memory limit. Built a slice of the workspaces at a time, each slice's states are a fraction.
  const list = (table: string, usageTable: string) => Array.from({ length: slices }, (_, slice) => `
    ${slice === 0 ? `CREATE TABLE ${table} AS` : `INSERT INTO ${table}`}
    SELECT workspace_id, count(*) AS n, list_sort(list(element)) AS members
    FROM (SELECT DISTINCT workspace_id, source || coalesce('@' || version, '') AS element FROM ${usageTable}
      WHERE hash(workspace_id) % ${slices} = ${slice})
    GROUP BY workspace_id`);
  return [
    `CREATE TABLE src_organizations AS SELECT name, ${opt('id')} AS id FROM ${raw('organizations', files.organizations)}`,
    // Each organization's integer key, in name order (view-files.ts): rows are stored by it, and a page
    // finds its organization by it, because zone maps prove an integer equal where a string's 8-byte prefix cannot.
    // The order is the one names sort in (interface §4: ASCII-folded, then exactly), so that the stored order
    // is also the default order of a read across organizations (docs/access.md): its export is a scan, not a sort.
    `CREATE TABLE org_keys AS SELECT name, (row_number() OVER (ORDER BY ${foldSql('name')}, name))::INTEGER AS k FROM src_organizations`,
    `CREATE TABLE src_projects AS SELECT id, organization, name FROM ${raw('projects', files.projects)}`,
    `CREATE TABLE src_workspaces AS SELECT
       id, organization, project_id, name,
       ${ts('created_at')} AS created_at, ${ts('updated_at')} AS updated_at,
       ${opt('engine_version')} AS engine_version,
       ${opt('state_version_engine_version')} AS state_version_engine_version,
       ${opt('vcs_repo_identifier')} AS vcs_repo_identifier,
       CASE WHEN len(list_filter(tags, t -> t IS NOT NULL AND t <> '')) > 0
         THEN list_sort(list_distinct(list_filter(tags, t -> t IS NOT NULL AND t <> ''))) END AS tags,
       current_run.id AS run_id, ${opt('current_run.status')} AS run_status, ${ts('current_run.applied_at')} AS run_applied_at,
       coalesce(checks.passed, 0) AS checks_passed, coalesce(checks.failed, 0) AS checks_failed,
       coalesce(checks.errored, 0) AS checks_errored, coalesce(checks."unknown", 0) AS checks_unknown,
       drift.drifted AS drifted, drift.resources_drifted AS resources_drifted, drift.resources_undrifted AS resources_undrifted,
       resource_count, current_rum_count, ${opt('source_module_id')} AS source_module_id
     FROM ${raw('workspaces', files.workspaces)}`,
    // Provider and module rows are one row only when every key agrees, null equal to null (interface §3):
    // rows that differ in any key are all kept, even when they share workspace, source and version.
    usage('workspace_providers', 'src_providers'),
    usage('workspace_modules', 'src_modules'),
    // A view, not a table: a hundred million resources stream from the file into the view's sort once.
    `CREATE VIEW src_resources AS SELECT workspace_id, address, name, type, provider, ${opt('module')} AS module,
       ${opt('engine_version')} AS engine_version, coalesce(billable, false) AS billable, ${opt('run_id')} AS run_id,
       ${ts('state_updated_at')} AS state_updated_at
     FROM ${raw('workspace_resources', files.workspace_resources)}`,
    ...list('ws_providers', 'src_providers'),
    ...list('ws_modules', 'src_modules'),
    // Every distinct version of every column that holds one: the loader computes their order keys
    // (interface §5) into version_keys, which the views join.
    `CREATE TABLE versions_seen AS SELECT DISTINCT v FROM (
       SELECT engine_version FROM src_workspaces UNION ALL SELECT state_version_engine_version FROM src_workspaces
       UNION ALL SELECT version FROM src_providers UNION ALL SELECT version FROM src_modules
       UNION ALL SELECT engine_version FROM src_resources) t(v)
     WHERE v IS NOT NULL`,
    `CREATE TABLE version_keys (v VARCHAR PRIMARY KEY, k VARCHAR)`,
  ];
}

/**
 * The source state a change batch is checked against and applied to, stored in the snapshot's DuckDB file
 * (`database`) beside the views: what the views cannot give back (a project without workspaces, the
 * provider and module rows behind the joined lists, teams and their members). Run after the staging
 * statements.
 */
export function sourceStateStatements(files: Partial<Record<SourceFile, string>>, database: string): string[] {
  // ORDER BY ALL: a total order, so that the same source stores the same rows in the same order however it
  // was loaded (in one range of organizations or several).
  const table = (name: string, select: string) => `CREATE TABLE ${database}.source_${name} AS SELECT * FROM (${select}) ORDER BY ALL`;
  return [
    table('organizations', 'SELECT name, id FROM src_organizations'),
    table('projects', 'SELECT organization, id, name FROM src_projects'),
    table('workspaces', 'SELECT organization, id, project_id, name FROM src_workspaces'),
    // With their workspace's organization first: a batch reads the rows of the organizations it touches,
    // which this order keeps together (zone maps skip the rest).
    table('providers', 'SELECT w.organization, u.* FROM src_providers u JOIN src_workspaces w ON w.id = u.workspace_id'),
    table('modules', 'SELECT w.organization, u.* FROM src_modules u JOIN src_workspaces w ON w.id = u.workspace_id'),
    table('teams', `SELECT organization, name, coalesce(read_workspaces, false) AS read_workspaces, coalesce(read_projects, false) AS read_projects
       FROM ${raw('teams', files.teams)}`),
    table('team_members', `SELECT organization, team, "user" FROM ${raw('team_members', files.team_members)}`),
  ];
}

/**
 * The loaded source state's index: a batch's validation looks up each workspace it names by id in the
 * merged state, which without it scans every id of the base (40 ms and 76 ms of CPU for ten ids on the
 * bench's million workspaces, the largest part of a small batch's validation; 3 ms with it: docs/performance.md,
 * "Change batches: the newer delta changed in place"). A load builds it once (about a second for a million
 * workspaces); a batch's own state is small and has none.
 */
export const sourceStateIndexes = (database: string): string[] => [
  `CREATE INDEX source_workspaces_id ON ${database}.source_workspaces (id)`,
];

