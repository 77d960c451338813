// Validates a change batch against the source state it applies to (S), by the batch rules: a directory in
// the source format with only new or changed records, plus deletions.ndjson. Every problem is reported as
// `file:line: reason` of the batch, and a batch with any problem is rejected whole.
//
// The records' own rules are the source's (source-validator.ts), checked by running that validator on the
// batch's files with the few records of S they refer to appended after the batch's lines (organizations,
// projects): the batch's line numbers stay what they are, and a reference resolves exactly as it would in
// S'. What only a batch has is checked here: each key once, rows and members of the batch's own workspaces
// and teams, deletion records, no workspace or project moving to another organization, workspace names unique
// in S', and a project deleted only when no workspace of it remains.
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SOURCE_FILES, sourceFiles, sourceLines, validateSource, type SourceFile } from './source-validator.js';

type Row = Record<string, any>;

/** What a batch needs to know of S, asked for by key: implemented over a source directory or a snapshot. */
export interface SourceState {
  /** Organizations by name, with their ids; absent names are not in S. */
  organizations(names: string[]): Promise<Map<string, { id: string | null }>>;
  /** Organizations by id: which name holds each id. */
  organizationIds(ids: string[]): Promise<Map<string, string>>;
  /** Projects by id. */
  projects(ids: string[]): Promise<Map<string, { organization: string; name: string }>>;
  /** Workspaces by id. */
  workspaces(ids: string[]): Promise<Map<string, { organization: string; name: string; project_id: string }>>;
  /** The workspace holding each (organization, name), keyed `${organization}\n${name}`. */
  workspacesNamed(keys: string[]): Promise<Map<string, string>>;
  /** The ids of each project's workspaces, in code-unit order. */
  workspacesOfProjects(ids: string[]): Promise<Map<string, string[]>>;
}

export interface BatchValidation {
  errors: string[];
  errorCount: number;
}

const MAX_REPORTED = 100;
const DELETION_KINDS: Record<string, string[]> = { organization: ['name'], project: ['id'], workspace: ['id'], team: ['organization', 'name'] };

/** A batch file's non-blank line: its number in the file, its text, and its record when it holds one JSON object. */
export interface BatchLine { file: string; line: number; text: string; record: Row | null }
type Line = BatchLine;

/** A batch's deletions file, plain or gzipped, if it has one. */
export const deletionsFile = (dir: string): string | undefined =>
  [join(dir, 'deletions.ndjson'), join(dir, 'deletions.ndjson.gz')].find((p) => existsSync(p));

/** The non-blank lines of a batch file (`file` names it in problems). */
export async function readBatchLines(path: string, file: string): Promise<BatchLine[]> {
  const out: Line[] = [];
  let n = 0;
  for await (const text of sourceLines(path)) {
    n++;
    if (text.trim() === '') continue;
    let record: Row | null = null;
    try {
      const v = JSON.parse(text);
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) record = v as Row;
    } catch { /* the source validator names it */ }
    out.push({ file, line: n, text, record });
  }
  return out;
}

export async function validateBatch(dir: string, state: SourceState): Promise<BatchValidation> {
  const errors: string[] = [];
  let errorCount = 0;
  const report = (at: string, reason: string) => {
    errorCount++;
    if (errors.length < MAX_REPORTED) errors.push(`${at}: ${reason}`);
  };
  const files = sourceFiles(dir);
  const deletionsPath = deletionsFile(dir);
  const label = (file: string) => ((file === 'deletions' ? deletionsPath : files[file as SourceFile]) ?? `${file}.ndjson`).slice(dir.length).replace(/^\//, '');
  const batch = Object.fromEntries(await Promise.all(SOURCE_FILES.map(async (f) => [f, files[f] ? await readBatchLines(files[f]!, f) : []]))) as Record<SourceFile, Line[]>;
  const deletions = deletionsPath ? await readBatchLines(deletionsPath, 'deletions') : [];
  const at = (l: Line) => `${label(l.file)}:${l.line}`;
  const str = (v: unknown) => (typeof v === 'string' ? v : null);

  // Deletions: their shape, then what they remove.
  const deleted = { organizations: new Set<string>(), projects: new Map<string, Line>(), workspaces: new Set<string>(), teams: new Set<string>() };
  const seen = new Map<string, Line>();
  const once = (key: string, l: Line) => {
    const first = seen.get(key);
    if (first) report(at(l), `${key} appears twice in the batch (first on ${at(first)})`);
    else seen.set(key, l);
  };
  for (const l of deletions) {
    const r = l.record;
    if (!r) { report(at(l), 'a line must hold one JSON object'); continue; }
    const fields = DELETION_KINDS[r.kind as string];
    if (!fields) { report(at(l), `kind must be one of organization, project, workspace or team, not ${JSON.stringify(r.kind)}`); continue; }
    const missing = fields.find((f) => typeof r[f] !== 'string' || r[f] === '');
    if (missing) { report(at(l), `${missing} is required`); continue; }
    const extra = Object.keys(r).find((k) => k !== 'kind' && !fields.includes(k));
    if (extra) { report(at(l), `a ${r.kind} deletion has no field ${extra}`); continue; }
    if (r.kind === 'organization') { once(`organization ${r.name}`, l); deleted.organizations.add(r.name); }
    if (r.kind === 'project') { once(`project ${r.id}`, l); deleted.projects.set(r.id, l); }
    if (r.kind === 'workspace') { once(`workspace ${r.id}`, l); deleted.workspaces.add(r.id); }
    if (r.kind === 'team') { once(`team ${r.name} of ${r.organization}`, l); deleted.teams.add(`${r.organization}\n${r.name}`); }
  }
  for (const l of batch.organizations) if (str(l.record?.name)) once(`organization ${l.record!.name}`, l);
  for (const l of batch.projects) if (str(l.record?.id)) once(`project ${l.record!.id}`, l);
  for (const l of batch.workspaces) if (str(l.record?.id)) once(`workspace ${l.record!.id}`, l);
  for (const l of batch.teams) if (str(l.record?.organization) && str(l.record?.name)) once(`team ${l.record!.name} of ${l.record!.organization}`, l);

  // The facts of S the batch refers to.
  const upserted = (f: SourceFile, key: string) => batch[f].flatMap((l) => (str(l.record?.[key]) ? [l.record![key] as string] : []));
  const orgNames = new Set([...upserted('projects', 'organization'), ...upserted('workspaces', 'organization'), ...upserted('teams', 'organization')]);
  const projectIds = new Set([...upserted('workspaces', 'project_id'), ...upserted('projects', 'id')]);
  const wsIds = upserted('workspaces', 'id');
  const upsertedWorkspaces = new Set(wsIds);
  const [orgs, orgIds, projects, workspaces, projectMembers] = await Promise.all([
    state.organizations([...orgNames]),
    state.organizationIds(upserted('organizations', 'id')),
    state.projects([...projectIds]),
    state.workspaces(wsIds),
    state.workspacesOfProjects([...deleted.projects.keys()]),
  ]);
  const names = await state.workspacesNamed(batch.workspaces.flatMap((l) => (str(l.record?.organization) && str(l.record?.name) ? [`${l.record!.organization}\n${l.record!.name}`] : [])));

  // What stays of S in S': an organization not deleted, a project neither deleted nor of a deleted organization.
  const orgStays = (name: string) => !deleted.organizations.has(name);
  const batchOrgs = new Set(upserted('organizations', 'name'));
  for (const l of batch.organizations) {
    const id = str(l.record?.id);
    const holder = id ? orgIds.get(id) : undefined;
    if (id && holder !== undefined && holder !== l.record!.name && orgStays(holder) && !batchOrgs.has(holder)) report(at(l), `organization id ${id} is already used by organization ${holder}`);
  }
  for (const l of batch.projects) {
    const old = projects.get(l.record?.id);
    if (old && str(l.record?.organization) && old.organization !== l.record!.organization) report(at(l), `project ${l.record!.id} cannot move to another organization (it is in ${old.organization})`);
  }
  const movedIn = new Map<string, string>(); // project id → a batch workspace now in it
  for (const l of batch.workspaces) {
    const r = l.record;
    if (!r || !str(r.id)) continue;
    const old = workspaces.get(r.id);
    if (old && str(r.organization) && old.organization !== r.organization) report(at(l), `workspace ${r.id} cannot move to another organization (it is in ${old.organization})`);
    if (str(r.project_id)) movedIn.set(r.project_id, r.id);
    const holder = names.get(`${r.organization}\n${r.name}`);
    // The name is free in S' when its holder in S is this workspace, goes with this batch, or takes another name in it.
    if (holder !== undefined && holder !== r.id && !deleted.workspaces.has(holder) && orgStays(r.organization) && !upsertedWorkspaces.has(holder)) {
      report(at(l), `organization ${r.organization} already has a workspace named ${JSON.stringify(r.name)}`);
    }
  }
  for (const [id, l] of deleted.projects) {
    const remaining = (projectMembers.get(id) ?? []).filter((w) => !deleted.workspaces.has(w) && !(upsertedWorkspaces.has(w) && batch.workspaces.some((b) => b.record?.id === w && b.record?.project_id !== id)));
    if (remaining.length > 0 || movedIn.has(id)) report(at(l), `project ${id} still has workspaces (${[...remaining, ...(movedIn.has(id) ? [movedIn.get(id)!] : [])].slice(0, 3).join(', ')})`);
  }

  // The records' own rules, with the organizations and projects of S they refer to appended as context.
  const scratch = await mkdtemp(join(tmpdir(), 'explorer-batch-'));
  try {
    const context: Partial<Record<SourceFile, Row[]>> = {
      // Without their ids: a batch organization's id is checked against S above, not against these.
      organizations: [...orgNames].filter((n) => orgs.has(n) && orgStays(n) && !batchOrgs.has(n)).map((name) => ({ name })),
      projects: [...projects].filter(([id, p]) => orgStays(p.organization) && !deleted.projects.has(id) && !upserted('projects', 'id').includes(id))
        .map(([id, p]) => ({ id, organization: p.organization, name: p.name })),
    };
    const counts = Object.fromEntries(SOURCE_FILES.map((f) => [f, 0])) as Record<SourceFile, number>;
    for (const f of SOURCE_FILES) {
      const own = files[f] ? await readRaw(files[f]!) : '';
      counts[f] = own.split('\n').length - 1;
      const extra = (context[f] ?? []).map((r) => JSON.stringify(r) + '\n').join('');
      await writeFile(join(scratch, `${f}.ndjson`), own + extra);
    }
    const checked = await validateSource(scratch);
    for (const e of checked.errors) {
      const m = /^([a-z_]+)\.ndjson:(\d+): (.*)$/.exec(e);
      // A problem on an appended line of S would be ours, not the batch's: name it plainly all the same.
      if (m && Number(m[2]) <= counts[m[1] as SourceFile]) report(`${label(m[1]!)}:${m[2]}`, m[3]!);
      else report(label('organizations'), m ? m[3]! : e);
    }
    errorCount += Math.max(0, checked.errorCount - checked.errors.length);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return { errors, errorCount };
}

/** A file's lines as the validator reads them, each ending in a line feed. */
async function readRaw(path: string): Promise<string> {
  let text = '';
  for await (const line of sourceLines(path)) text += `${line}\n`;
  return text;
}
