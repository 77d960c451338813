// Waiting batches applied as one snapshot (docs/changes.md §2, "Coalescing"): when batches arrive faster than
// they apply, the follower applies all that wait in one build, so that the delay stays bounded by one build
// however far behind it was. The snapshot is the one the batches would have made one after another:
//   - each batch is validated as if applied alone after the ones before it: against the snapshot's source
//     state with the earlier batches' records laid over it (overlayState), so a batch that alone would be
//     rejected is rejected, even when a later batch would have mended what it breaks;
//   - the valid ones are written out as one batch (writeCoalesced) in which each entity keeps its last
//     record: a later upsert replaces an earlier one with all its rows (a workspace's providers, modules and
//     resources, a team's members), a deletion after an upsert deletes, an upsert after a deletion upserts
//     (an upsert replaces everything the deletion would have removed). An organization's deletion removes
//     what no later record can bring back by upserting it alone, so a batch that deletes an organization
//     is never coalesced with another.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { deletionsFile, readBatchLines, type BatchLine, type SourceState } from './batch-validator.js';
import { SOURCE_FILES, sourceFiles, type SourceFile } from './source-validator.js';

type Row = Record<string, any>;

/** A batch's lines, read once: what the overlay and the coalesced batch need of it. */
export interface ReadBatch {
  dir: string;
  files: Record<SourceFile | 'deletions', BatchLine[]>;
}

const FILES = [...SOURCE_FILES, 'deletions'] as const;

export async function readBatch(dir: string): Promise<ReadBatch> {
  const paths: Partial<Record<(typeof FILES)[number], string>> = { ...sourceFiles(dir), deletions: deletionsFile(dir) };
  const files = {} as ReadBatch['files'];
  for (const f of FILES) files[f] = paths[f] ? await readBatchLines(paths[f]!, f) : [];
  return { dir, files };
}

/** Whether a batch can share a snapshot with others: it deletes no organization. */
export const coalescible = (batch: ReadBatch): boolean => !batch.files.deletions.some((l) => l.record?.kind === 'organization');

/** The key of the entity a line of `file` upserts, deletes, or belongs to (a workspace's or a team's rows). */
function entityKey(file: (typeof FILES)[number], r: Row): string | null {
  switch (file) {
    case 'organizations': return `organization\n${r.name}`;
    case 'projects': return `project\n${r.id}`;
    case 'workspaces': return `workspace\n${r.id}`;
    case 'workspace_providers': case 'workspace_modules': case 'workspace_resources': return `workspace\n${r.workspace_id}`;
    case 'teams': return `team\n${r.organization}\n${r.name}`;
    case 'team_members': return `team\n${r.organization}\n${r.team}`;
    case 'deletions':
      switch (r.kind) {
        case 'organization': return `organization\n${r.name}`;
        case 'project': return `project\n${r.id}`;
        case 'workspace': return `workspace\n${r.id}`;
        case 'team': return `team\n${r.organization}\n${r.name}`;
        default: return null;
      }
  }
}

/** The entities a batch upserts or deletes (the keys of its organizations, projects, workspaces, teams and deletions). */
const entities = (batch: ReadBatch) => new Set(
  (['organizations', 'projects', 'workspaces', 'teams', 'deletions'] as const).flatMap((f) => batch.files[f].flatMap((l) => {
    const key = l.record ? entityKey(f, l.record) : null;
    return key === null ? [] : [key];
  })),
);

/**
 * Writes into `outDir` one batch that makes, from any source, what `batches` (each valid, in order) make one
 * after another: each line of the last batch that names its entity, in the batches' order.
 */
export async function writeCoalesced(batches: ReadBatch[], outDir: string): Promise<void> {
  const last = new Map<string, number>();
  batches.forEach((b, i) => { for (const key of entities(b)) last.set(key, i); });
  await fs.mkdir(outDir, { recursive: true });
  for (const f of FILES) {
    const kept = batches.flatMap((b, i) => b.files[f].filter((l) => {
      const key = l.record ? entityKey(f, l.record) : null;
      return key !== null && last.get(key) === i;
    }).map((l) => `${l.text}\n`));
    if (kept.length > 0) await fs.writeFile(join(outDir, `${f}.ndjson`), kept.join(''));
  }
}

interface WorkspaceFacts { organization: string; name: string; project_id: string }

/**
 * The source state `inner` becomes once `applied` (valid batches that delete no organization) are applied in
 * order, as the batch validator asks for it.
 */
export function overlayState(inner: SourceState, applied: readonly ReadBatch[]): SourceState {
  const organizations = new Map<string, { id: string | null }>();
  const projects = new Map<string, { organization: string; name: string } | null>();
  const workspaces = new Map<string, WorkspaceFacts | null>();
  for (const b of applied) {
    for (const { record: d } of b.files.deletions) {
      if (d?.kind === 'project') projects.set(d.id, null);
      if (d?.kind === 'workspace') workspaces.set(d.id, null);
    }
    for (const { record: r } of b.files.organizations) if (r) organizations.set(r.name, { id: r.id ?? null });
    for (const { record: r } of b.files.projects) if (r) projects.set(r.id, { organization: r.organization, name: r.name });
    for (const { record: r } of b.files.workspaces) if (r) workspaces.set(r.id, { organization: r.organization, name: r.name, project_id: r.project_id });
  }
  const laid = <T>(found: Map<string, T>, over: Map<string, T | null>, ids: string[]) => {
    const out = new Map<string, T>();
    for (const id of ids) {
      const o = over.get(id);
      if (o !== undefined) { if (o !== null) out.set(id, o); } else if (found.has(id)) out.set(id, found.get(id)!);
    }
    return out;
  };
  return {
    async organizations(names) {
      return laid(await inner.organizations(names.filter((n) => !organizations.has(n))), organizations, names);
    },
    async organizationIds(ids) {
      const out = new Map<string, string>();
      // A holder in `inner` whose id a batch changed holds it no longer.
      for (const [id, name] of await inner.organizationIds(ids)) if (!organizations.has(name) || organizations.get(name)!.id === id) out.set(id, name);
      for (const [name, { id }] of organizations) if (id !== null && ids.includes(id)) out.set(id, name);
      return out;
    },
    async projects(ids) {
      return laid(await inner.projects(ids.filter((id) => !projects.has(id))), projects, ids);
    },
    async workspaces(ids) {
      return laid(await inner.workspaces(ids.filter((id) => !workspaces.has(id))), workspaces, ids);
    },
    async workspacesNamed(keys) {
      const out = new Map<string, string>();
      // A holder in `inner` that a batch deleted, renamed or moved holds the name no longer.
      for (const [key, id] of await inner.workspacesNamed(keys)) if (!workspaces.has(id)) out.set(key, id);
      const wanted = new Set(keys);
      for (const [id, w] of workspaces) if (w && wanted.has(`${w.organization}\n${w.name}`)) out.set(`${w.organization}\n${w.name}`, id);
      return out;
    },
    async workspacesOfProjects(ids) {
      const found = await inner.workspacesOfProjects(ids);
      const out = new Map<string, string[]>();
      for (const id of ids) {
        const members = new Set((found.get(id) ?? []).filter((w) => !workspaces.has(w)));
        for (const [w, facts] of workspaces) if (facts?.project_id === id) members.add(w);
        // Code-unit order, as the snapshot's state gives them.
        if (members.size > 0) out.set(id, [...members].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      }
      return out;
    },
  };
}
