// Reads a validated source into DuckDB staging tables (src_*, ws_providers, ws_modules) that the view
// declarations in catalog/views.ts are written against. Normalization rules: snapshot-source.md and
// interface §3 (empty optional strings are null, lists sorted and de-duplicated, UTC millisecond times).
import type { SourceFile } from './source-validator.js';

const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;
// timezone('UTC', …) names the zone instead of relying on the instance's TimeZone setting (open-instance.ts).
const ts = (expr: string) => `date_trunc('millisecond', timezone('UTC', CAST(nullif(${expr}, '') AS TIMESTAMPTZ)))`;
const opt = (expr: string) => `nullif(${expr}, '')`;

const COLUMNS: Record<SourceFile, string> = {
  organizations: `{name: 'VARCHAR'}`,
  projects: `{id: 'VARCHAR', organization: 'VARCHAR', name: 'VARCHAR'}`,
  workspaces: `{id: 'VARCHAR', organization: 'VARCHAR', project_id: 'VARCHAR', name: 'VARCHAR',
    created_at: 'VARCHAR', updated_at: 'VARCHAR', engine_version: 'VARCHAR', state_version_engine_version: 'VARCHAR',
    vcs_repo_identifier: 'VARCHAR', tags: 'VARCHAR[]',
    current_run: 'STRUCT(id VARCHAR, status VARCHAR, applied_at VARCHAR)',
    checks: 'STRUCT(passed BIGINT, failed BIGINT, errored BIGINT, "unknown" BIGINT)',
    drift: 'STRUCT(drifted BOOLEAN, resources_drifted BIGINT, resources_undrifted BIGINT)'}`,
  workspace_providers: `{workspace_id: 'VARCHAR', name: 'VARCHAR', source: 'VARCHAR', version: 'VARCHAR', registry_type: 'VARCHAR'}`,
  workspace_modules: `{workspace_id: 'VARCHAR', name: 'VARCHAR', source: 'VARCHAR', version: 'VARCHAR', registry_type: 'VARCHAR'}`,
  teams: `{organization: 'VARCHAR', name: 'VARCHAR'}`,
  team_members: `{organization: 'VARCHAR', team: 'VARCHAR', "user": 'VARCHAR'}`,
};

/** The raw rows of one source file, or an empty relation of the same shape when the file is absent. */
function raw(file: SourceFile, path: string | undefined): string {
  const read = `read_json(${literal(path ?? '/dev/null')}, format = 'newline_delimited', columns = ${COLUMNS[file]})`;
  return path ? read : `(SELECT * FROM ${read} LIMIT 0)`;
}

export function stagingStatements(files: Partial<Record<SourceFile, string>>): string[] {
  const usage = (file: 'workspace_providers' | 'workspace_modules', table: string) => `
    CREATE TABLE ${table} AS SELECT DISTINCT workspace_id, name, source, ${opt('version')} AS version, ${opt('registry_type')} AS registry_type
    FROM ${raw(file, files[file])}`;
  const list = (table: string, usageTable: string) => `
    CREATE TABLE ${table} AS
    SELECT workspace_id, count(*) AS n, array_to_string(list_sort(list(element)), ', ') AS list
    FROM (SELECT DISTINCT workspace_id, source || coalesce('@' || version, '') AS element FROM ${usageTable})
    GROUP BY workspace_id`;
  return [
    `CREATE TABLE src_projects AS SELECT id, organization, name FROM ${raw('projects', files.projects)}`,
    `CREATE TABLE src_workspaces AS SELECT
       id, organization, project_id, name,
       ${ts('created_at')} AS created_at, ${ts('updated_at')} AS updated_at,
       ${opt('engine_version')} AS engine_version,
       ${opt('state_version_engine_version')} AS state_version_engine_version,
       ${opt('vcs_repo_identifier')} AS vcs_repo_identifier,
       nullif(array_to_string(list_sort(list_distinct(list_filter(tags, t -> t IS NOT NULL AND t <> ''))), ', '), '') AS tags,
       current_run.id AS run_id, ${opt('current_run.status')} AS run_status, ${ts('current_run.applied_at')} AS run_applied_at,
       coalesce(checks.passed, 0) AS checks_passed, coalesce(checks.failed, 0) AS checks_failed,
       coalesce(checks.errored, 0) AS checks_errored, coalesce(checks."unknown", 0) AS checks_unknown,
       drift.drifted AS drifted, drift.resources_drifted AS resources_drifted, drift.resources_undrifted AS resources_undrifted
     FROM ${raw('workspaces', files.workspaces)}`,
    // Provider and module rows are one row only when every key agrees, null equal to null (interface §3):
    // rows that differ in any key are all kept, even when they share workspace, source and version.
    usage('workspace_providers', 'src_providers'),
    usage('workspace_modules', 'src_modules'),
    list('ws_providers', 'src_providers'),
    list('ws_modules', 'src_modules'),
    `CREATE TABLE version_keys (v VARCHAR PRIMARY KEY, k VARCHAR)`,
  ];
}

/** Distinct values of every column that holds versions, for the version order keys. */
export const DISTINCT_VERSIONS_SQL = `
  SELECT v FROM (
    SELECT engine_version AS v FROM src_workspaces UNION SELECT state_version_engine_version FROM src_workspaces
    UNION SELECT version FROM src_providers UNION SELECT version FROM src_modules
  ) WHERE v IS NOT NULL`;

export { literal as sqlLiteral };
