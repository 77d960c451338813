// The fields of each view as the interface states them (docs/interface.md §2, engine `terraform`), written
// out by hand: the tests hold the catalog to this list instead of deriving the list from the catalog.
export const CONTRACT: Record<string, Record<string, 'string' | 'number' | 'boolean' | 'datetime'>> = {
  workspaces: {
    all_checks_succeeded: 'boolean', checks_errored: 'number', checks_failed: 'number', checks_passed: 'number',
    checks_unknown: 'number', current_rum_count: 'number', current_run_applied_at: 'datetime', current_run_external_id: 'string',
    current_run_status: 'string', drifted: 'boolean', external_id: 'string', module_count: 'number', modules: 'string',
    organization_name: 'string', project_external_id: 'string', project_name: 'string', provider_count: 'number',
    providers: 'string', resource_count: 'number', resources_drifted: 'number', resources_undrifted: 'number',
    source_module_id: 'string', state_version_terraform_version: 'string', tags: 'string', vcs_repo_identifier: 'string',
    workspace_created_at: 'datetime', workspace_name: 'string', workspace_terraform_version: 'string',
    workspace_updated_at: 'datetime',
  },
  tf_versions: { unique_identifier: 'string', version: 'string', workspace_count: 'number', workspaces: 'string' },
  providers: { curated: 'boolean', name: 'string', registry_type: 'string', source: 'string', version: 'string', workspace_count: 'number', workspaces: 'string' },
  modules: { curated: 'boolean', name: 'string', registry_type: 'string', source: 'string', version: 'string', workspace_count: 'number', workspaces: 'string' },
  resources: {
    address: 'string', billable_rum: 'boolean', module_name: 'string', name: 'string', organization_external_id: 'string',
    project_external_id: 'string', project_name: 'string', provider_name: 'string', provider_type: 'string', source_id: 'string',
    source_type: 'string', source_updated_at: 'datetime', terraform_version: 'string', workspace_external_id: 'string',
    workspace_name: 'string',
  },
};

/** Each view's fields in default order (alphabetical: the contract lists them so). */
export const FIELDS: Record<string, string[]> = Object.fromEntries(Object.entries(CONTRACT).map(([v, f]) => [v, Object.keys(f)]));
export const DATETIME_FIELDS: ReadonlySet<string> = new Set(Object.values(CONTRACT).flatMap((f) => Object.keys(f).filter((k) => f[k] === 'datetime')));
