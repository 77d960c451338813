// A change batch applied to a small snapshot source by the letter of the batch rules, in memory: deletions
// first (an organization with all under it, a project only when no workspace of it remains, a workspace with
// its rows, a team with its members), then upserts (an organization by name, a project by id, a workspace by
// id with all its rows replaced by the batch's, a team by organization and name with its members replaced).
// The suite's oracle for batches: what a full load of the resulting source must answer.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readRows as read, type Row } from './ndjson.js';

const FILES = ['organizations', 'projects', 'workspaces', 'workspace_providers', 'workspace_modules', 'workspace_resources', 'teams', 'team_members'] as const;
type File = (typeof FILES)[number];

/** Writes to `outDir` the source `sourceDir` becomes when `batchDir` is applied; throws on a rule of the batch format it breaks. */
export function applyBatch(sourceDir: string, batchDir: string, outDir: string): void {
  const s = Object.fromEntries(FILES.map((f) => [f, read(sourceDir, f)])) as Record<File, Row[]>;
  const b = Object.fromEntries(FILES.map((f) => [f, read(batchDir, f)])) as Record<File, Row[]>;
  const deletions = read(batchDir, 'deletions');

  const keys = new Set<string>();
  const once = (key: string) => {
    if (keys.has(key)) throw new Error(`${key} appears twice in the batch`);
    keys.add(key);
  };
  for (const d of deletions) once(d.kind === 'team' ? `team ${d.organization}/${d.name}` : `${d.kind} ${d.kind === 'organization' ? d.name : d.id}`);
  for (const o of b.organizations) once(`organization ${o.name}`);
  for (const p of b.projects) once(`project ${p.id}`);
  for (const w of b.workspaces) once(`workspace ${w.id}`);
  for (const t of b.teams) once(`team ${t.organization}/${t.name}`);
  const batchWorkspaces = new Set(b.workspaces.map((w) => w.id));
  for (const f of ['workspace_providers', 'workspace_modules', 'workspace_resources'] as const) {
    for (const r of b[f]) if (!batchWorkspaces.has(r.workspace_id)) throw new Error(`${f}: workspace ${r.workspace_id} is not in the batch`);
  }
  const batchTeams = new Set(b.teams.map((t) => `${t.organization}\n${t.name}`));
  for (const m of b.team_members) if (!batchTeams.has(`${m.organization}\n${m.team}`)) throw new Error(`team_members: team ${m.team} is not in the batch`);

  const without = (file: File, drop: (r: Row) => boolean) => { s[file] = s[file].filter((r) => !drop(r)); };
  const dropWorkspaces = (gone: Set<string>) => {
    without('workspaces', (w) => gone.has(w.id));
    for (const f of ['workspace_providers', 'workspace_modules', 'workspace_resources'] as const) without(f, (r) => gone.has(r.workspace_id));
  };
  const projectsToCheck: string[] = [];
  for (const d of deletions) {
    if (d.kind === 'organization') {
      without('organizations', (o) => o.name === d.name);
      without('projects', (p) => p.organization === d.name);
      dropWorkspaces(new Set(s.workspaces.filter((w) => w.organization === d.name).map((w) => w.id)));
      without('teams', (t) => t.organization === d.name);
      without('team_members', (m) => m.organization === d.name);
    } else if (d.kind === 'workspace') {
      dropWorkspaces(new Set([d.id]));
    } else if (d.kind === 'team') {
      without('teams', (t) => t.organization === d.organization && t.name === d.name);
      without('team_members', (m) => m.organization === d.organization && m.team === d.name);
    } else if (d.kind === 'project') {
      projectsToCheck.push(d.id);
    } else {
      throw new Error(`deletions: unknown kind ${JSON.stringify(d.kind)}`);
    }
  }
  const upsert = (file: File, key: (r: Row) => string) => {
    const index = new Map(s[file].map((r, i) => [key(r), i]));
    for (const r of b[file]) {
      const i = index.get(key(r));
      if (i === undefined) s[file].push(r);
      else s[file][i] = r;
    }
  };
  upsert('organizations', (o) => o.name);
  for (const p of b.projects) {
    const old = s.projects.find((x) => x.id === p.id);
    if (old && old.organization !== p.organization) throw new Error(`project ${p.id} cannot move to another organization`);
  }
  upsert('projects', (p) => p.id);
  for (const w of b.workspaces) {
    const old = s.workspaces.find((x) => x.id === w.id);
    if (old && old.organization !== w.organization) throw new Error(`workspace ${w.id} cannot move to another organization`);
  }
  dropWorkspaces(new Set(b.workspaces.map((w) => w.id)));
  s.workspaces.push(...b.workspaces);
  for (const f of ['workspace_providers', 'workspace_modules', 'workspace_resources'] as const) s[f].push(...b[f]);
  without('team_members', (m) => batchTeams.has(`${m.organization}\n${m.team}`));
  upsert('teams', (t) => `${t.organization}\n${t.name}`);
  s.team_members.push(...b.team_members);
  for (const id of projectsToCheck) {
    if (s.workspaces.some((w) => w.project_id === id)) throw new Error(`project ${id} still has workspaces`);
    without('projects', (p) => p.id === id);
  }

  mkdirSync(outDir, { recursive: true });
  for (const f of FILES) writeFileSync(join(outDir, `${f}.ndjson`), s[f].map((r) => JSON.stringify(r)).join('\n') + (s[f].length > 0 ? '\n' : ''));
}
