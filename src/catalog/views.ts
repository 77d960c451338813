// The five views, declared once. Field lists, JSON Schemas, the query compiler, CSV headers, the loader's
// Parquet layout and the docs are all derived from these declarations.
//
// `build`, `id`, `organization` and `from` are SQL over the loader's staging tables (snapshots/write/staging.ts):
//   src_organizations, src_workspaces, src_projects, src_providers, src_modules (de-duplicated), the
//   src_resources view, and per-workspace lists ws_providers / ws_modules (workspace_id, n, members); a
//   workspace's tags are a sorted list too. Lists are joined with ', ' in code-point order (§3).
import { listTextSql } from './list-text.js';
import type { ViewDecl } from './types.js';

const NL = 'chr(10)';
/** interface §3: prefix-<first 16 hex of sha256(org \n view \n keys…)>, null keys as ''. */
const rowId = (prefix: string, view: string, keys: string[], organization = 'g.organization') =>
  `'${prefix}-' || substr(sha256(concat_ws(${NL}, ${organization}, '${view}', ${keys.map((k) => `coalesce(${k}, '')`).join(', ')})), 1, 16)`;
/**
 * A list field: its elements (a sorted VARCHAR[], null when none) are declared once; the text is those
 * elements joined with ', ', and the loader stores both (FieldDecl.members).
 */
const listField = (name: string, members: string, description: string) =>
  ({ name, type: 'string' as const, members, build: listTextSql(members), description });
/**
 * A grouped row's workspaces: each appears in a group once, so neither their count nor their names need a
 * DISTINCT. A group is one organization's (workspace names are unique within an organization: both the source's
 * and a batch's validation refuse a second), and its source rows are one a workspace: a workspace's engine
 * version, or its provider or module rows, which staging merges by every key a group has (staging.ts). A
 * DISTINCT aggregate keeps a set per group: without them the largest organization's provider groups aggregate
 * in half the time (docs/performance.md, "Grouped rows without DISTINCT").
 */
const workspaceNames = (description: string) => listField('workspaces', 'list_sort(list(g.workspace_name))', description);
const workspaceCount = 'count(*)';

const workspaces: ViewDecl = {
  name: 'workspaces',
  rowType: 'visibility-workspace',
  description: 'One row per workspace.',
  defaultSort: ['workspace_name'],
  identifying: ['workspace_name'],
  id: 'w.id',
  organization: 'w.organization',
  from: `src_workspaces w
    JOIN src_projects p ON p.id = w.project_id
    LEFT JOIN ws_providers pv ON pv.workspace_id = w.id
    LEFT JOIN ws_modules md ON md.workspace_id = w.id`,
  fields: [
    { name: 'all_checks_succeeded', type: 'boolean', build: 'w.checks_failed = 0 AND w.checks_errored = 0', description: 'True if checks have succeeded for the workspace (no failed and no errored checks).' },
    { name: 'checks_errored', type: 'number', build: 'w.checks_errored', description: 'Checks that errored without completing.' },
    { name: 'checks_failed', type: 'number', build: 'w.checks_failed', description: 'Checks that completed and failed.' },
    { name: 'checks_passed', type: 'number', build: 'w.checks_passed', description: 'Checks that completed and passed.' },
    { name: 'checks_unknown', type: 'number', build: 'w.checks_unknown', description: 'Checks that could not be assessed.' },
    { name: 'current_run_applied_at', type: 'datetime', build: 'w.run_applied_at', description: 'When the current run was applied; null if not applied.' },
    { name: 'current_run_external_id', type: 'string', build: 'w.run_id', description: 'External ID of the current run (run-<id>).' },
    { name: 'current_run_status', type: 'string', build: 'w.run_status', description: 'Status of the current run.' },
    { name: 'current_rum_count', type: 'number', build: 'w.current_rum_count', description: 'Resources under management (billable resources); null if unknown.' },
    { name: 'drifted', type: 'boolean', build: 'w.drifted', description: 'True if drift was detected.' },
    { name: 'external_id', type: 'string', build: 'w.id', description: 'External ID of the workspace (ws-<id>).' },
    { name: 'module_count', type: 'number', build: 'coalesce(md.n, 0)', description: 'Distinct modules used by the workspace.' },
    listField('modules', 'md.members', 'Comma-separated modules used (<source>@<version>); null if none.'),
    { name: 'organization_name', type: 'string', build: 'w.organization', description: 'Organization the workspace belongs to.' },
    { name: 'project_external_id', type: 'string', build: 'w.project_id', description: 'External ID of the project (prj-<id>).' },
    { name: 'project_name', type: 'string', build: 'p.name', description: 'Name of the project.' },
    { name: 'provider_count', type: 'number', build: 'coalesce(pv.n, 0)', description: 'Distinct providers used.' },
    listField('providers', 'pv.members', 'Comma-separated providers used (<source>@<version>); null if none.'),
    { name: 'resources_drifted', type: 'number', build: 'w.resources_drifted', description: 'Resources for which drift was detected.' },
    { name: 'resource_count', type: 'number', build: 'w.resource_count', description: 'Resources in the current state; null if unknown.' },
    { name: 'resources_undrifted', type: 'number', build: 'w.resources_undrifted', description: 'Resources for which drift was not detected.' },
    { name: 'source_module_id', type: 'string', build: 'w.source_module_id', description: 'The module the workspace was created from (e.g. private/acme/rds/aws/1.0.2); null if none.' },
    { name: 'state_version_{engine}_version', type: 'string', version: true, build: 'w.state_version_engine_version', description: 'Engine version that created the current run\'s state file.' },
    listField('tags', 'w.tags', 'The workspace\'s tags, sorted and joined with ", "; null if none.'),
    { name: 'vcs_repo_identifier', type: 'string', build: 'w.vcs_repo_identifier', description: 'Repository configured for the workspace; null if none.' },
    { name: 'workspace_created_at', type: 'datetime', build: 'w.created_at', description: 'Creation time.' },
    { name: 'workspace_name', type: 'string', build: 'w.name', description: 'Workspace name.' },
    { name: 'workspace_{engine}_version', type: 'string', version: true, build: 'w.engine_version', description: 'Engine version currently configured for the workspace.' },
    { name: 'workspace_updated_at', type: 'datetime', build: 'w.updated_at', description: 'Last update time.' },
  ],
};

const TF_VERSION_ID = rowId('tfv', 'tf_versions', ['g.version']);
const tfVersions: ViewDecl = {
  name: 'tf_versions',
  rowType: 'visibility-tf-version',
  description: 'One row per engine version in use.',
  defaultSort: ['-version'],
  identifying: ['version'],
  id: TF_VERSION_ID,
  organization: 'g.organization',
  from: `(SELECT organization, engine_version AS version, id AS workspace_id, name AS workspace_name
          FROM src_workspaces WHERE engine_version IS NOT NULL) g
    GROUP BY g.organization, g.version`,
  fields: [
    { name: 'unique_identifier', type: 'string', build: TF_VERSION_ID, description: 'The row\'s id, repeated as a field.' },
    { name: 'version', type: 'string', version: true, build: 'g.version', description: 'Semantic version string.' },
    { name: 'workspace_count', type: 'number', build: workspaceCount, description: 'Workspaces using this version.' },
    workspaceNames('Comma-separated names of those workspaces.'),
  ],
};

/** providers and modules share one shape (interface §3). */
function usageView(name: 'providers' | 'modules', prefix: string, rowType: string, table: string, noun: string): ViewDecl {
  const keys = ['g.name', 'g.source', 'g.version', 'g.registry_type'];
  const Noun = noun[0]!.toUpperCase() + noun.slice(1);
  return {
    name,
    rowType,
    description: `One row per ${noun} in use: distinct name, source, version and registry type.`,
    defaultSort: ['name', '-version'],
    identifying: ['name', 'version'],
    id: rowId(prefix, name, keys),
    organization: 'g.organization',
    from: `(SELECT w.organization, u.name, u.source, u.version, u.registry_type, u.curated, w.id AS workspace_id, w.name AS workspace_name
          FROM ${table} u JOIN src_workspaces w ON w.id = u.workspace_id) g
    GROUP BY g.organization, g.name, g.source, g.version, g.registry_type`,
    fields: [
      { name: 'curated', type: 'boolean', build: 'bool_or(g.curated)', description: `True when the organization marks this ${noun} as curated (any of its source rows).` },
      { name: 'name', type: 'string', build: 'g.name', description: `${Noun} name.` },
      { name: 'registry_type', type: 'string', build: 'g.registry_type', description: 'public, private, or null if unknown.' },
      { name: 'source', type: 'string', build: 'g.source', description: `${Noun} source.` },
      { name: 'version', type: 'string', version: true, build: 'g.version', description: 'Semantic version string.' },
      { name: 'workspace_count', type: 'number', build: workspaceCount, description: `Workspaces using this ${noun} version.` },
      workspaceNames('Comma-separated names of those workspaces.'),
    ],
  };
}

/** One row per resource in a workspace's current state (the live API calls this view beta). */
const REGISTRY = 'registry.terraform.io/';
const resources: ViewDecl = {
  name: 'resources',
  rowType: 'visibility-resource',
  description: 'One row per resource in a workspace\'s current state.',
  defaultSort: ['workspace_name', 'address'],
  identifying: ['workspace_name', 'address', 'provider_type'],
  id: rowId('res', 'resources', ['w.id', 'r.address'], 'w.organization'),
  organization: 'w.organization',
  from: `src_resources r
    JOIN src_workspaces w ON w.id = r.workspace_id
    JOIN src_projects p ON p.id = w.project_id
    JOIN src_organizations o ON o.name = w.organization`,
  fields: [
    { name: 'address', type: 'string', build: 'r.address', description: 'The resource\'s address in the state (e.g. module.vpc.aws_subnet.private[0]).' },
    { name: 'billable_rum', type: 'boolean', build: 'r.billable', description: 'True when the resource counts as a resource under management.' },
    { name: 'module_name', type: 'string', build: `coalesce(r.module, 'root')`, description: 'The module the resource is declared in; root for a top-level resource.' },
    { name: 'name', type: 'string', build: 'r.name', description: 'Resource name.' },
    { name: 'organization_external_id', type: 'string', build: 'o.id', description: 'External ID of the organization (org-<id>); null if unknown.' },
    { name: 'project_external_id', type: 'string', build: 'w.project_id', description: 'External ID of the workspace\'s project (prj-<id>).' },
    { name: 'project_name', type: 'string', build: 'p.name', description: 'Name of the workspace\'s project.' },
    // One leading registry.terraform.io/ is removed, exactly and case-sensitively; anything else is kept as it is.
    { name: 'provider_name', type: 'string', build: `CASE WHEN starts_with(r.provider, '${REGISTRY}') THEN substr(r.provider, ${REGISTRY.length + 1}) ELSE r.provider END`, description: 'The resource\'s provider (hashicorp/aws; built-ins such as terraform.io/builtin/terraform as they are).' },
    { name: 'provider_type', type: 'string', indexed: true, build: 'r.type', description: 'The resource type (e.g. aws_instance).' },
    { name: 'source_id', type: 'string', build: 'r.run_id', description: 'External ID of the run that produced the state (run-<id>); null for local execution.' },
    { name: 'source_type', type: 'string', build: `CASE WHEN r.run_id IS NOT NULL THEN 'run' ELSE 'local' END`, description: 'run when a run produced the state, local for local execution.' },
    { name: 'source_updated_at', type: 'datetime', build: 'r.state_updated_at', description: 'When the state holding the resource was written.' },
    { name: 'workspace_external_id', type: 'string', build: 'w.id', description: 'External ID of the workspace (ws-<id>).' },
    { name: 'workspace_name', type: 'string', build: 'w.name', description: 'Name of the workspace.' },
    { name: '{engine}_version', type: 'string', version: true, build: 'r.engine_version', description: 'Engine version that wrote the resource.' },
  ],
};

export const VIEW_DECLS: readonly ViewDecl[] = [
  workspaces,
  tfVersions,
  usageView('providers', 'prv', 'visibility-provider-version', 'src_providers', 'provider'),
  usageView('modules', 'mod', 'visibility-module-version', 'src_modules', 'module'),
  resources,
];
