// Change batches of the kinds the change sampler seldom or never writes, made against a source directory
// (plain NDJSON): a project renamed, an organization's id changed, a team deleted and one re-created with
// other members, a project deleted with its workspaces, an organization deleted, a new organization with an
// owners team, a member and a workspace with rows, and a workspace upserted unchanged.
import { mkdirSync } from 'node:fs';

import { readRows as read, type Row, writeRows as write } from './ndjson.js';

/**
 * Writes to `outDir` a batch over the source in `sourceDir` touching every kind of record: `variant` (0, 1, …)
 * picks which organization each part falls on, so that successive calls touch different ones. Leaves the
 * organization named `keep` (the one every comparison reads) in place.
 */
export function writeEdgeBatch(sourceDir: string, outDir: string, variant: number, keep: string): void {
  const orgs = read(sourceDir, 'organizations');
  const projects = read(sourceDir, 'projects');
  const workspaces = read(sourceDir, 'workspaces');
  const teams = read(sourceDir, 'teams');
  const members = read(sourceDir, 'team_members');
  const rowsOf = (file: string, ids: Set<string>) => read(sourceDir, file).filter((r) => ids.has(r.workspace_id));
  const pick = <T>(xs: T[], k: number) => xs[(variant * 7 + k) % xs.length]!;
  const out: Record<string, Row[]> = {};
  const deletions: Row[] = [];
  const others = orgs.filter((o) => o.name !== keep);

  // A project renamed: every row of its workspaces carries the new name, though the batch carries none of them.
  const withWorkspaces = projects.filter((p) => workspaces.some((w) => w.project_id === p.id));
  const renamed = pick(withWorkspaces, 0);
  out.projects = [{ ...renamed, name: `${renamed.name} (renamed ${variant})` }];
  // An organization's id changed: its resources' organization_external_id follow.
  const reIded = pick(orgs.filter((o) => o.name !== renamed.organization), 1);
  out.organizations = [{ ...reIded, id: `org-edge${variant}x${reIded.name.length}` }];
  // A team deleted, and another upserted with its members replaced.
  const deletedTeam = teams.find((t) => t.organization !== reIded.name && t.name !== 'owners');
  if (deletedTeam) deletions.push({ kind: 'team', organization: deletedTeam.organization, name: deletedTeam.name });
  const upsertedTeam = teams.find((t) => t !== deletedTeam && t.organization !== reIded.name);
  if (upsertedTeam) {
    out.teams = [{ ...upsertedTeam, read_workspaces: true }];
    out.team_members = [{ organization: upsertedTeam.organization, team: upsertedTeam.name, user: `edge_user_${variant}` },
      ...members.filter((m) => m.organization === upsertedTeam.organization && m.team === upsertedTeam.name).slice(1)];
  }
  // A project deleted with its workspaces (a project goes only when none of its workspaces remains).
  const candidates = projects.filter((p) => p.id !== renamed.id && p.organization !== reIded.name && p.organization !== keep);
  const gone = candidates.length > 0 ? pick(candidates, 2) : undefined;
  const goneWorkspaces = gone ? workspaces.filter((w) => w.project_id === gone.id) : [];
  if (gone) {
    deletions.push({ kind: 'project', id: gone.id });
    for (const w of goneWorkspaces) deletions.push({ kind: 'workspace', id: w.id });
  }
  // An organization deleted whole, when there are enough to spare one.
  const used = new Set([renamed.organization, reIded.name, gone?.organization, upsertedTeam?.organization, deletedTeam?.organization, keep]);
  const deletedOrg = others.filter((o) => !used.has(o.name))[0];
  if (deletedOrg && orgs.length > 3) deletions.push({ kind: 'organization', name: deletedOrg.name });
  // A new organization with an owners team, a member, a project and a workspace with rows.
  const org = `edge-org-${variant}`;
  out.organizations.push({ name: org, id: `org-edgenew${variant}` });
  out.projects.push({ id: `prj-edge${variant}`, organization: org, name: 'Edge Project' });
  (out.teams ??= []).push({ organization: org, name: 'owners' });
  (out.team_members ??= []).push({ organization: org, team: 'owners', user: `edge_owner_${variant}` });
  const template = pick(workspaces.filter((w) => !goneWorkspaces.includes(w)), 3);
  const newId = `ws-edge${variant}new`;
  out.workspaces = [{ ...template, id: newId, organization: org, project_id: `prj-edge${variant}`, name: `edge-${variant}` }];
  const templateIds = new Set([template.id]);
  for (const file of ['workspace_providers', 'workspace_modules', 'workspace_resources']) {
    out[file] = rowsOf(file, templateIds).map((r) => ({ ...r, workspace_id: newId }));
  }
  // A workspace upserted exactly as it is, with its rows: nothing changes but the batch's count.
  const same = pick(workspaces.filter((w) => w.organization === keep), 4);
  out.workspaces.push(same);
  for (const file of ['workspace_providers', 'workspace_modules', 'workspace_resources']) out[file]!.push(...rowsOf(file, new Set([same.id])));

  mkdirSync(outDir, { recursive: true });
  for (const [file, rows] of Object.entries(out)) write(outDir, file, rows);
  write(outDir, 'deletions', deletions);
}
