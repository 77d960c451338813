// A model of the fixture's rows derived by the rules of interface §3 (never from the server's answers),
// shared by the HTTP tests that assert exact rows, orders and bytes.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fx from '../fixtures/small-source.js';

// ---------------------------------------------------------------------------------------------------------
// Fixture model: rows derived from the fixture arrays by interface §3 (nothing here comes from the server).
export type Src = Record<string, any>;
export type Value = string | number | boolean | null;
export type Model = Record<string, Value>;

export function cmpCodePoints(a: string, b: string): number {
  const A = Array.from(a);
  const B = Array.from(b);
  for (let i = 0; i < Math.min(A.length, B.length); i++) {
    const d = A[i]!.codePointAt(0)! - B[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return A.length - B.length;
}
export const opt = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
export const distinctSorted = (items: unknown[]) => [...new Set(items.map(opt).filter((x): x is string => x !== null))].sort(cmpCodePoints);
export const joinList = (items: unknown[]) => { const l = distinctSorted(items); return l.length ? l.join(', ') : null; };
/** Source timestamp → JSON form: UTC, digits past milliseconds truncated, `+00:00`. */
export function jsonTime(v: unknown): string | null {
  if (typeof v !== 'string' || v === '') return null;
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/.exec(v);
  if (!m) throw new Error(`unexpected fixture timestamp ${v}`);
  return new Date(`${m[1]}.${(m[2] ?? '').padEnd(3, '0').slice(0, 3)}${m[3]}`).toISOString().replace(/Z$/, '+00:00');
}
export function sourceFile(name: string): Src[] {
  const dir = mkdtempSync(join(tmpdir(), 'fixture-read-'));
  try {
    fx.writeSmallSource(dir);
    return readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
export const PROJECTS = sourceFile('projects.ndjson');
export const WS = fx.workspaces as Src[];
export const PROVIDERS = fx.providers as Src[];
export const MODULES = fx.modules as Src[];
export const RESOURCES = fx.resources as Src[];
export const ORGANIZATIONS = sourceFile('organizations.ndjson');

/** The source rows a model is derived from: the fixture's unless a test writes its own. */
export interface Sources { workspaces: Src[]; providers: Src[]; modules: Src[]; projects: Src[] }
export const FIXTURE: Sources = { workspaces: WS, providers: PROVIDERS, modules: MODULES, projects: PROJECTS };

/** A workspace's list fields as the lists they are joined from (interface §3): sorted, distinct, without empties. */
export function workspaceLists(w: Src, src: Sources = FIXTURE): { tags: string[]; providers: string[]; modules: string[] } {
  const uses = (rows: Src[]) => distinctSorted(rows.filter((r) => r.workspace_id === w.id).map((r) => (opt(r.version) ? `${r.source}@${r.version}` : r.source)));
  return { tags: distinctSorted(w.tags ?? []), providers: uses(src.providers), modules: uses(src.modules) };
}

export function workspaceModel(w: Src, src: Sources = FIXTURE): Model {
  const { providers, modules } = workspaceLists(w, src);
  const c = (k: string): number => w.checks?.[k] ?? 0;
  return {
    all_checks_succeeded: c('failed') === 0 && c('errored') === 0,
    checks_errored: c('errored'),
    checks_failed: c('failed'),
    checks_passed: c('passed'),
    checks_unknown: c('unknown'),
    current_rum_count: w.current_rum_count ?? null,
    current_run_applied_at: jsonTime(w.current_run?.applied_at),
    current_run_external_id: w.current_run?.id ?? null,
    current_run_status: opt(w.current_run?.status),
    drifted: w.drift?.drifted ?? null,
    external_id: w.id,
    module_count: modules.length,
    modules: modules.length ? modules.join(', ') : null,
    organization_name: w.organization,
    project_external_id: w.project_id,
    project_name: src.projects.find((p) => p.id === w.project_id)!.name,
    provider_count: providers.length,
    providers: providers.length ? providers.join(', ') : null,
    resource_count: w.resource_count ?? null,
    resources_drifted: w.drift?.resources_drifted ?? null,
    resources_undrifted: w.drift?.resources_undrifted ?? null,
    source_module_id: opt(w.source_module_id),
    state_version_terraform_version: opt(w.state_version_engine_version),
    tags: joinList(w.tags ?? []),
    vcs_repo_identifier: opt(w.vcs_repo_identifier),
    workspace_created_at: jsonTime(w.created_at),
    workspace_name: w.name,
    workspace_terraform_version: opt(w.engine_version),
    workspace_updated_at: jsonTime(w.updated_at),
  };
}

export type AggView = 'tf_versions' | 'providers' | 'modules';
export const PREFIX: Record<AggView, string> = { tf_versions: 'tfv', providers: 'prv', modules: 'mod' };
export const rowId = (prefix: string, org: string, view: string, keys: (string | null)[]) =>
  `${prefix}-${createHash('sha256').update([org, view, ...keys.map((k) => k ?? '')].join('\n'), 'utf8').digest('hex').slice(0, 16)}`;

export function aggregateModel(view: AggView, org: string = fx.ORG, src: Sources = FIXTURE): { id: string; attributes: Model; workspaces: string[] }[] {
  const orgWs = src.workspaces.filter((w) => w.organization === org);
  const groups = new Map<string, { keys: (string | null)[]; ws: Src[]; curated: boolean }>();
  const add = (keys: (string | null)[], w: Src, curated = false) => {
    const k = JSON.stringify(keys);
    const g = groups.get(k) ?? { keys, ws: [], curated: false };
    if (!g.ws.includes(w)) g.ws.push(w);
    g.curated ||= curated;
    groups.set(k, g);
  };
  if (view === 'tf_versions') {
    for (const w of orgWs) if (opt(w.engine_version) !== null) add([opt(w.engine_version)], w);
  } else {
    for (const u of view === 'providers' ? src.providers : src.modules) {
      const w = orgWs.find((x) => x.id === u.workspace_id);
      if (w) add([u.name, u.source, opt(u.version), opt(u.registry_type)], w, u.curated === true);
    }
  }
  return [...groups.values()].map((g) => {
    const id = rowId(PREFIX[view], org, view, g.keys);
    const common = { workspace_count: g.ws.length, workspaces: joinList(g.ws.map((w) => w.name)) };
    const attributes: Model = view === 'tf_versions'
      ? { unique_identifier: id, version: g.keys[0]!, ...common }
      : { curated: g.curated, name: g.keys[0]!, registry_type: g.keys[3]!, source: g.keys[1]!, version: g.keys[2]!, ...common };
    return { id, attributes, workspaces: distinctSorted(g.ws.map((w) => w.name)) };
  });
}
/** A resource row by decisions of the `resources` view: prefix rule, `root`, `run` / `local`, absent billable = false. */
export function resourceModel(r: Src): { id: string; attributes: Model } {
  const w = WS.find((x) => x.id === r.workspace_id)!;
  const provider = String(r.provider);
  const REGISTRY = 'registry.terraform.io/';
  return {
    id: rowId('res', w.organization, 'resources', [w.id, r.address]),
    attributes: {
      address: r.address,
      billable_rum: r.billable === true,
      module_name: opt(r.module) ?? 'root',
      name: r.name,
      organization_external_id: opt(ORGANIZATIONS.find((o) => o.name === w.organization)!.id),
      project_external_id: w.project_id,
      project_name: PROJECTS.find((p) => p.id === w.project_id)!.name,
      provider_name: provider.startsWith(REGISTRY) ? provider.slice(REGISTRY.length) : provider,
      provider_type: r.type,
      source_id: opt(r.run_id),
      source_type: opt(r.run_id) === null ? 'local' : 'run',
      source_updated_at: jsonTime(r.state_updated_at),
      terraform_version: opt(r.engine_version),
      workspace_external_id: w.id,
      workspace_name: w.name,
    },
  };
}
/** An organization's resources in the view's default order: workspace_name, address (A–Z folded, then exact), id. */
export const resourceRows = (org: string = fx.ORG) =>
  RESOURCES.filter((r) => WS.find((w) => w.id === r.workspace_id)!.organization === org).map(resourceModel).sort((x, y) => {
    const [a, b] = [x.attributes, y.attributes];
    const fold = (v: unknown) => String(v).replace(/[A-Z]/g, (c) => c.toLowerCase());
    return cmpCodePoints(fold(a.workspace_name), fold(b.workspace_name)) || cmpCodePoints(String(a.workspace_name), String(b.workspace_name))
      || cmpCodePoints(fold(a.address), fold(b.address)) || cmpCodePoints(String(a.address), String(b.address)) || cmpCodePoints(x.id, y.id);
  });

export const kebab = (m: Model) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k.replace(/_/g, '-'), v]));
