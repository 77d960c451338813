// Sample change batches (`explorer sample-changes <source> <out> --batches N --workspaces K`): what a
// platform would send as runs finish, derived from a snapshot source, for trying batches out and for the
// bench. Each batch touches K workspaces once each: most finish a run (engine, provider and module upgrades,
// resources added and removed, drift appearing or clearing), some are renamed, moved to another project of
// their organization, deleted or created; now and then a team's members change or a new organization
// appears with a project, a team and workspaces of its own.
//
// The source is streamed, never held: memory keeps the organizations, projects and teams (small), the ids
// and names of the workspaces (so that a created or renamed workspace never collides), and the records and
// rows of the workspaces the batches touch, picked at random up front. Batch n is derived from the state
// that batches 1 … n-1 leave, so the batches apply in name order.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sourceFiles, sourceLines } from '../snapshots/write/source-validator.js';
import { seededRandom } from './random.js';

type Row = Record<string, any>;

export interface SampleChangesOptions {
  batches: number;
  /** Workspaces each batch touches (fewer when the source has fewer). */
  workspaces: number;
  seed: number;
  /** Only workspaces of these organizations are touched (the bench shapes its batches so); all when absent. */
  organizations?: ReadonlySet<string>;
  onBatch?: (summary: BatchSummary) => void;
}

export interface BatchSummary {
  name: string;
  dir: string;
  /** What the batch does, by kind. */
  changes: Record<ChangeKind, number>;
}

export type ChangeKind = 'run' | 'engine' | 'provider' | 'module' | 'resources' | 'drift' | 'renamed' | 'moved'
  | 'created' | 'deleted' | 'teams' | 'organizations';

const ALNUM = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

async function eachRecord(path: string | undefined, each: (r: Row, line: number) => void): Promise<void> {
  if (!path) return;
  let n = 0;
  for await (const line of sourceLines(path)) if (line.trim() !== '') each(JSON.parse(line) as Row, n++);
}

const bump = (version: unknown, rnd: () => number): string => {
  const parts = typeof version === 'string' && /^\d+(\.\d+)*$/.test(version) ? version.split('.').map(Number) : [1, 0, 0];
  while (parts.length < 3) parts.push(0);
  if (rnd() < 0.2) return `${parts[0]! + 1}.0.0`;
  return `${parts[0]}.${parts[1]! + 1}.0`;
};

interface Touched {
  record: Row;
  providers: Row[];
  modules: Row[];
  resources: Row[];
}

export async function writeSampleChanges(sourceDir: string, outDir: string, opts: SampleChangesOptions): Promise<BatchSummary[]> {
  const files = sourceFiles(sourceDir);
  if (!files.organizations) throw new Error(`${sourceDir}: no organizations.ndjson`);
  const rnd = seededRandom(opts.seed); // the same source, seed and options always give the same batches
  const source = await readSmallKinds(files);
  const workspaces = await pickWorkspaces(files, opts, rnd);
  const maker = new BatchMaker(source, workspaces, rnd);
  await mkdir(outDir, { recursive: true });
  const width = Math.max(4, String(opts.batches).length);
  const summaries: BatchSummary[] = [];
  for (let b = 1; b <= opts.batches; b++) {
    const batch = maker.batch(b, opts.workspaces);
    const name = `batch-${String(b).padStart(width, '0')}`;
    const dir = await writeBatch(outDir, name, batch, source.members);
    const summary = { name, dir, changes: batch.changes };
    summaries.push(summary);
    opts.onBatch?.(summary);
  }
  return summaries;
}

/** The source's small kinds, held whole: organizations, projects, teams and their members. */
interface SmallKinds {
  organizations: Map<string, Row>;
  projects: Map<string, Row>;
  /** By `<organization>\n<name>`, as `members`. */
  teams: Map<string, Row>;
  members: Map<string, Row[]>;
}

async function readSmallKinds(files: ReturnType<typeof sourceFiles>): Promise<SmallKinds> {
  const organizations = new Map<string, Row>();
  await eachRecord(files.organizations, (r) => organizations.set(r.name, r));
  const projects = new Map<string, Row>();
  await eachRecord(files.projects, (r) => projects.set(r.id, r));
  const teams = new Map<string, Row>();
  await eachRecord(files.teams, (r) => teams.set(`${r.organization}\n${r.name}`, r));
  const members = new Map<string, Row[]>();
  await eachRecord(files.team_members, (r) => {
    const key = `${r.organization}\n${r.team}`;
    members.set(key, [...(members.get(key) ?? []), r]);
  });
  return { organizations, projects, teams, members };
}

/** Every workspace's id and name, the latest update, and the workspaces the batches touch with their rows, in the order they are taken. */
interface PickedWorkspaces { ids: Set<string>; names: Set<string>; latest: number; pool: Touched[] }

/** The workspaces the batches will touch, picked by reservoir sampling as the source streams by, with their rows; then shuffled. */
async function pickWorkspaces(files: ReturnType<typeof sourceFiles>, opts: SampleChangesOptions, rnd: () => number): Promise<PickedWorkspaces> {
  const wanted = opts.batches * opts.workspaces;
  const ids = new Set<string>();
  const names = new Set<string>();
  const picked: Row[] = [];
  let latest = 0;
  let seen = 0;
  await eachRecord(files.workspaces, (r, n) => {
    ids.add(r.id);
    names.add(`${r.organization}\n${r.name}`);
    latest = Math.max(latest, Date.parse(r.updated_at));
    if (opts.organizations && !opts.organizations.has(r.organization)) return;
    seen++;
    if (picked.length < wanted) picked.push(r);
    else {
      const j = Math.floor(rnd() * (opts.organizations ? seen : n + 1));
      if (j < wanted) picked[j] = r;
    }
  });
  const touched = new Map<string, Touched>(picked.map((r) => [r.id, { record: r, providers: [], modules: [], resources: [] }]));
  const collect = (key: 'providers' | 'modules' | 'resources') => (r: Row) => { touched.get(r.workspace_id)?.[key].push(r); };
  await eachRecord(files.workspace_providers, collect('providers'));
  await eachRecord(files.workspace_modules, collect('modules'));
  await eachRecord(files.workspace_resources, collect('resources'));
  const pool = [...touched.values()];
  for (let i = pool.length - 1; i > 0; i--) { // shuffled: which batch takes which workspace
    const j = Math.floor(rnd() * (i + 1));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return { ids, names, latest, pool };
}

/** One batch's records, by source file, and what it does. */
interface Batch {
  changes: Record<ChangeKind, number>;
  upserts: Touched[];
  deletions: Row[];
  teams: Row[];
  organizations: Row[];
  projects: Row[];
}

const CHANGE_KINDS: ChangeKind[] = ['run', 'engine', 'provider', 'module', 'resources', 'drift', 'renamed', 'moved', 'created', 'deleted', 'teams', 'organizations'];

/**
 * Makes batch after batch from the state the ones before left: each takes its workspaces from the pool
 * (those it changes or creates go back in, for a later batch to change in turn), now and then changes a
 * team's members or brings a new organization.
 */
class BatchMaker {
  private clock: number;

  constructor(private readonly source: SmallKinds, private readonly ws: PickedWorkspaces, private readonly rnd: () => number) {
    this.clock = Number.isFinite(ws.latest) && ws.latest > 0 ? ws.latest : Date.UTC(2026, 0, 1);
  }

  batch(b: number, size: number): Batch {
    const batch: Batch = {
      changes: Object.fromEntries(CHANGE_KINDS.map((k) => [k, 0])) as Record<ChangeKind, number>,
      upserts: [], deletions: [], teams: [], organizations: [], projects: [],
    };
    for (const t of this.ws.pool.splice(0, size)) this.workspace(batch, b, t);
    if (this.source.teams.size > 0 && this.rnd() < 0.3) this.teamMembers(batch, b);
    if (this.rnd() < 0.1) this.organization(batch, b);
    return batch;
  }

  private now(): string {
    return new Date((this.clock += 1000 + Math.floor(this.rnd() * 4000))).toISOString();
  }

  private newId(prefix: string, taken?: Set<string>): string {
    for (;;) {
      const id = `${prefix}-${Array.from({ length: 16 }, () => ALNUM[Math.floor(this.rnd() * 62)]).join('')}`;
      if (!taken?.has(id)) return id;
    }
  }

  private freeName(org: string, base: string): string {
    for (let i = 2; ; i++) {
      const name = `${base.slice(0, 240)}-${i}`;
      if (!this.ws.names.has(`${org}\n${name}`)) return name;
    }
  }

  /** A workspace deleted, created beside it, renamed, moved, or (most often) through a finished run. */
  private workspace(batch: Batch, b: number, t: Touched): void {
    const { rnd, ws } = this;
    const w = t.record;
    const roll = rnd();
    if (roll < 0.03) { // deleted
      batch.deletions.push({ kind: 'workspace', id: w.id });
      ws.names.delete(`${w.organization}\n${w.name}`);
      batch.changes.deleted++;
      return;
    }
    if (roll < 0.06) { // a new workspace beside it, made like it
      const id = this.newId('ws', ws.ids);
      ws.ids.add(id);
      const name = this.freeName(w.organization, w.name);
      ws.names.add(`${w.organization}\n${name}`);
      const at = this.now();
      const created: Touched = {
        record: { ...w, id, name, created_at: at, updated_at: at, current_run: { id: this.newId('run'), status: 'applied', applied_at: at } },
        providers: t.providers.map((r) => ({ ...r, workspace_id: id })),
        modules: t.modules.map((r) => ({ ...r, workspace_id: id })),
        resources: t.resources.map((r) => ({ ...r, workspace_id: id, state_updated_at: at })),
      };
      batch.upserts.push(created);
      ws.pool.push(created); // a later batch may change it in turn
      batch.changes.created++;
      return;
    }
    const at = this.now();
    const next: Touched = { record: { ...w, updated_at: at }, providers: t.providers.map((r) => ({ ...r })), modules: t.modules.map((r) => ({ ...r })), resources: t.resources.map((r) => ({ ...r })) };
    const r = next.record;
    if (roll < 0.09) { // renamed
      ws.names.delete(`${r.organization}\n${r.name}`);
      r.name = this.freeName(r.organization, r.name);
      ws.names.add(`${r.organization}\n${r.name}`);
      batch.changes.renamed++;
    } else if (roll < 0.12) { // moved to another project of its organization, a new one if it has no other
      let others = [...this.source.projects.values()].filter((p) => p.organization === r.organization && p.id !== r.project_id);
      if (others.length === 0) {
        const project = { id: this.newId('prj'), organization: r.organization, name: `Project ${b}` };
        this.source.projects.set(project.id, project);
        batch.projects.push(project);
        others = [project];
      }
      r.project_id = others[Math.floor(rnd() * others.length)]!.id;
      batch.changes.moved++;
    } else {
      this.run(batch, b, t, next, at);
    }
    batch.upserts.push(next);
    ws.pool.push(next);
  }

  /** A run finished: engine, provider and module upgrades, resources added and removed, drift appearing or clearing. */
  private run(batch: Batch, b: number, t: Touched, next: Touched, at: string): void {
    const { rnd } = this;
    const r = next.record;
    const run = this.newId('run');
    r.current_run = { id: run, status: 'applied', applied_at: at };
    batch.changes.run++;
    if (rnd() < 0.3) {
      r.engine_version = bump(r.engine_version, rnd);
      r.state_version_engine_version = r.engine_version;
      batch.changes.engine++;
    }
    if (next.providers.length > 0 && rnd() < 0.25) {
      const p = next.providers[Math.floor(rnd() * next.providers.length)]!;
      p.version = bump(p.version, rnd);
      batch.changes.provider++;
    }
    if (next.modules.length > 0 && rnd() < 0.2) {
      const m = next.modules[Math.floor(rnd() * next.modules.length)]!;
      if (typeof m.version === 'string') {
        m.version = bump(m.version, rnd);
        batch.changes.module++;
      }
    }
    if (rnd() < 0.5) { // resources added and removed
      const removed = Math.min(next.resources.length, Math.floor(rnd() * 3));
      next.resources.splice(0, removed);
      const template = t.resources[0] ?? { name: 'main', type: 'null_resource', provider: 'registry.terraform.io/hashicorp/null', billable: true };
      const added = 1 + Math.floor(rnd() * 3);
      for (let i = 0; i < added; i++) {
        const name = `b${b}_${i}_${Math.floor(rnd() * 1e6)}`;
        next.resources.push({ ...template, workspace_id: r.id, name, address: `${template.type}.${name}`, module: undefined });
      }
      batch.changes.resources++;
    }
    for (const res of next.resources) {
      res.run_id = run;
      res.state_updated_at = at;
    }
    r.resource_count = next.resources.length;
    r.current_rum_count = next.resources.filter((x) => x.billable !== false).length;
    if (rnd() < 0.1) {
      const drifted = !(r.drift?.drifted === true);
      const n = drifted ? 1 + Math.floor(rnd() * Math.max(1, next.resources.length)) : 0;
      r.drift = { drifted, resources_drifted: n, resources_undrifted: Math.max(0, next.resources.length - n) };
      batch.changes.drift++;
    }
  }

  /** A team's members change: most stay, one joins. */
  private teamMembers(batch: Batch, b: number): void {
    const { rnd } = this;
    const { teams, members } = this.source;
    const keys = [...teams.keys()];
    const key = keys[Math.floor(rnd() * keys.length)]!;
    const team = teams.get(key)!;
    const current = members.get(key) ?? [];
    const kept = current.filter(() => rnd() < 0.8);
    kept.push({ organization: team.organization, team: team.name, user: `user_b${b}_${Math.floor(rnd() * 1e6)}` });
    members.set(key, kept);
    batch.teams.push(team);
    batch.changes.teams++;
  }

  /** A new organization, with a project, an owners team and a couple of workspaces made like one of this batch's. */
  private organization(batch: Batch, b: number): void {
    const { organizations, projects, teams, members } = this.source;
    const name = `org-b${b}-${this.newId('x').slice(2, 10).toLowerCase()}`;
    if (organizations.has(name)) return;
    const org = { name, id: this.newId('org') };
    organizations.set(name, org);
    batch.organizations.push(org);
    const project = { id: this.newId('prj'), organization: name, name: 'Default Project' };
    projects.set(project.id, project);
    batch.projects.push(project);
    const owners = { organization: name, name: 'owners' };
    teams.set(`${name}\nowners`, owners);
    members.set(`${name}\nowners`, [{ organization: name, team: 'owners', user: `owner_b${b}` }]);
    batch.teams.push(owners);
    const template = batch.upserts[0] ?? this.ws.pool[0];
    for (let i = 0; template && i < 2; i++) {
      const id = this.newId('ws', this.ws.ids);
      this.ws.ids.add(id);
      const at = this.now();
      const wsName = `${template.record.name}`.slice(0, 200) + `-${i + 1}`;
      this.ws.names.add(`${name}\n${wsName}`);
      const created: Touched = {
        record: { ...template.record, id, organization: name, project_id: project.id, name: wsName, created_at: at, updated_at: at },
        providers: template.providers.map((r) => ({ ...r, workspace_id: id })),
        modules: template.modules.map((r) => ({ ...r, workspace_id: id })),
        resources: template.resources.map((r) => ({ ...r, workspace_id: id })),
      };
      batch.upserts.push(created);
      this.ws.pool.push(created);
      batch.changes.created++;
    }
    batch.changes.organizations++;
  }
}

/** Writes a batch under a temporary name and renames it: a batch directory is whole or absent. Returns its directory. */
async function writeBatch(outDir: string, name: string, batch: Batch, members: Map<string, Row[]>): Promise<string> {
  const tmp = join(outDir, `.${name}.tmp`);
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp);
  const write = async (file: string, rows: Row[]) => {
    if (rows.length > 0) await writeFile(join(tmp, `${file}.ndjson`), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  };
  await write('organizations', batch.organizations);
  await write('projects', batch.projects);
  await write('workspaces', batch.upserts.map((u) => u.record));
  await write('workspace_providers', batch.upserts.flatMap((u) => u.providers));
  await write('workspace_modules', batch.upserts.flatMap((u) => u.modules));
  await write('workspace_resources', batch.upserts.flatMap((u) => u.resources));
  await write('teams', batch.teams);
  await write('team_members', batch.teams.flatMap((t) => members.get(`${t.organization}\n${t.name}`) ?? []));
  await write('deletions', batch.deletions);
  const dir = join(outDir, name);
  await rm(dir, { recursive: true, force: true });
  await rename(tmp, dir);
  return dir;
}
