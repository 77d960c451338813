// Resources for the sample generator (sample.ts): each workspace's current state holds resources of the
// types its providers define, some declared in the modules it uses, with a long tail of sizes (most hold
// a few dozen, one in a thousand holds thousands). The workspace line's resource_count and
// current_rum_count are computed from the same draw, so they always agree with the rows. Every part of a
// line is ASCII.

/** The generator's PRNG, as far as resources use it. */
export interface Draw {
  float(): number;
  int(n: number): number;
  range(lo: number, hi: number): number;
  chance(p: number): boolean;
}

/** Resource types per provider name, weighted; providers with data sources only define none. */
const TYPES: Record<string, Array<[string, number]>> = {
  aws: [
    ['aws_iam_role_policy_attachment', 5], ['aws_security_group_rule', 5], ['aws_iam_role', 4], ['aws_instance', 3],
    ['aws_s3_bucket', 3], ['aws_security_group', 3], ['aws_subnet', 3], ['aws_cloudwatch_log_group', 3],
    ['aws_route53_record', 3], ['aws_iam_policy', 2], ['aws_route_table', 2], ['aws_route', 2], ['aws_lambda_function', 2],
    ['aws_db_instance', 1], ['aws_kms_key', 1], ['aws_ecs_service', 1], ['aws_ecs_task_definition', 1], ['aws_vpc', 1],
    ['aws_eip', 1], ['aws_nat_gateway', 1], ['aws_lb', 1], ['aws_lb_target_group', 1], ['aws_lb_listener', 1],
    ['aws_sqs_queue', 1], ['aws_sns_topic', 1], ['aws_dynamodb_table', 1],
  ],
  azurerm: [
    ['azurerm_role_assignment', 4], ['azurerm_resource_group', 3], ['azurerm_subnet', 3], ['azurerm_network_security_group', 2],
    ['azurerm_storage_account', 2], ['azurerm_linux_virtual_machine', 2], ['azurerm_network_interface', 2],
    ['azurerm_virtual_network', 1], ['azurerm_key_vault', 1], ['azurerm_kubernetes_cluster', 1], ['azurerm_public_ip', 1],
  ],
  google: [
    ['google_project_iam_member', 5], ['google_compute_instance', 2], ['google_compute_subnetwork', 2], ['google_compute_firewall', 2],
    ['google_storage_bucket', 2], ['google_service_account', 2], ['google_compute_network', 1], ['google_container_cluster', 1],
    ['google_container_node_pool', 1], ['google_sql_database_instance', 1], ['google_pubsub_topic', 1],
  ],
  kubernetes: [
    ['kubernetes_namespace', 2], ['kubernetes_deployment', 2], ['kubernetes_service', 2], ['kubernetes_config_map', 2],
    ['kubernetes_secret', 2], ['kubernetes_service_account', 1],
  ],
  helm: [['helm_release', 1]],
  random: [['random_id', 2], ['random_password', 2], ['random_string', 2], ['random_pet', 1]],
  null: [['null_resource', 1]],
  tls: [['tls_private_key', 2], ['tls_self_signed_cert', 1]],
  datadog: [['datadog_monitor', 3], ['datadog_dashboard', 1]],
  github: [['github_repository', 2], ['github_team', 1], ['github_branch_protection', 1], ['github_repository_file', 1]],
  cloudflare: [['cloudflare_record', 3], ['cloudflare_zone', 1]],
  vault: [['vault_policy', 2], ['vault_generic_secret', 2], ['vault_mount', 1]],
  time: [['time_sleep', 1], ['time_rotating', 1]],
  local: [['local_file', 1]],
  internal: [['internal_service', 1], ['internal_account', 1]],
};
/** Weight of each provider's types in a workspace: the cloud providers hold most resources. */
const PROVIDER_SHARE: Record<string, number> = { aws: 10, azurerm: 10, google: 10, kubernetes: 3, helm: 1 };
/** Not resources under management (the RUM rule counts neither). */
const NOT_BILLABLE = new Set(['null_resource', 'terraform_data']);
const BUILTIN = 'terraform.io/builtin/terraform';
const LOCAL_NAMES = ['this', 'main', 'default', 'primary', 'app', 'web', 'worker', 'api', 'db', 'cache', 'logs', 'private',
  'public', 'admin', 'readonly', 'ci', 'deploy', 'monitoring', 'backup', 'internal'];

/** A provider the workspace uses: its name and the source its resources name as their provider. */
export interface UsedProvider { name: string; source: string }

export interface WorkspaceResources {
  /** The resource lines (NDJSON, each ended by \n). */
  lines: string;
  count: number;
  billable: number;
}

/** How many resources a workspace's state holds: 0 without state, else long-tailed with a mean near 20. */
export function resourceCount(rng: Draw, hasState: boolean): number {
  if (!hasState) return 0;
  if (rng.chance(0.001)) return rng.range(1000, 5000);
  // Log-normal (Box–Muller): median ~10, mean ~20.
  const u = 1 - rng.float();
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.float());
  return Math.min(999, Math.max(1, Math.floor(Math.exp(2.28 + 1.2 * z))));
}

export function writeResources(
  rng: Draw, workspaceId: string, count: number, providers: UsedProvider[], modules: string[],
  runId: string | null, versions: readonly string[], updatedIso: string, olderIso: () => string,
): WorkspaceResources {
  const kinds: Array<[type: string, provider: string, weight: number]> = [];
  for (const p of providers) {
    const types = TYPES[p.name];
    if (!types) continue;
    const total = types.reduce((s, [, w]) => s + w, 0);
    for (const [type, w] of types) kinds.push([type, p.source, ((PROVIDER_SHARE[p.name] ?? 1) * w) / total]);
  }
  kinds.push(['terraform_data', BUILTIN, 0.05]);
  const totalWeight = kinds.reduce((s, k) => s + k[2], 0);
  const head = `{"workspace_id":"ws-${workspaceId}","address":"`;
  const tail = runId === null ? '' : `,"run_id":"run-${runId}"`;
  const next = new Map<string, number>();
  let lines = '';
  let billable = 0;
  for (let i = 0; i < count; i++) {
    let x = rng.float() * totalWeight;
    let k = 0;
    while (k < kinds.length - 1 && x >= kinds[k]![2]) x -= kinds[k++]![2];
    const [type, provider] = kinds[k]!;
    const module = modules.length > 0 && rng.chance(0.45) ? `module.${modules[rng.int(modules.length)]}` : null;
    const name = LOCAL_NAMES[rng.int(LOCAL_NAMES.length)]!;
    const base = `${module === null ? '' : `${module}.`}${type}.${name}`;
    // The second resource of a base address is base[1], then base[2]: unique within the workspace.
    const n = next.get(base) ?? 0;
    next.set(base, n + 1);
    const address = n === 0 ? base : `${base}[${n}]`;
    let line = `${head}${address}","name":"${name}","type":"${type}","provider":"${provider}"`;
    if (module !== null) line += `,"module":"${module}"`;
    else if (rng.chance(0.02)) line += ',"module":""';
    // Most resources were last written by the workspace's current engine version; some by an older one.
    if (versions.length > 0) line += `,"engine_version":"${versions[rng.chance(0.9) ? 0 : rng.int(versions.length)]}"`;
    if (NOT_BILLABLE.has(type)) {
      if (rng.chance(0.5)) line += ',"billable":false';
    } else {
      line += ',"billable":true';
      billable++;
    }
    line += `${tail},"state_updated_at":"${rng.chance(0.8) ? updatedIso : olderIso()}"}\n`;
    lines += line;
  }
  return { lines, count, billable };
}
