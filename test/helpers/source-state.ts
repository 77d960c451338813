// The batch validator's view of S over a small source directory, read whole: the suite's stand-in for a
// snapshot's stored state.
import type { SourceState } from '../../src/snapshots/write/batch-validator.js';
import { readRows as read } from './ndjson.js';

const pick = <V>(all: Map<string, V>, keys: string[]) => new Map(keys.filter((k) => all.has(k)).map((k) => [k, all.get(k)!]));

export function directoryState(dir: string): SourceState {
  const orgs = new Map(read(dir, 'organizations').map((o) => [o.name as string, { id: (o.id as string | undefined) ?? null }]));
  const orgIds = new Map(read(dir, 'organizations').filter((o) => o.id).map((o) => [o.id as string, o.name as string]));
  const projects = new Map(read(dir, 'projects').map((p) => [p.id as string, { organization: p.organization as string, name: p.name as string }]));
  const workspaces = read(dir, 'workspaces');
  const byId = new Map(workspaces.map((w) => [w.id as string, { organization: w.organization as string, name: w.name as string, project_id: w.project_id as string }]));
  const byName = new Map(workspaces.map((w) => [`${w.organization}\n${w.name}`, w.id as string]));
  const ofProject = new Map<string, string[]>();
  for (const w of workspaces) ofProject.set(w.project_id, [...(ofProject.get(w.project_id) ?? []), w.id]);
  for (const ids of ofProject.values()) ids.sort();
  return {
    organizations: async (names) => pick(orgs, names),
    organizationIds: async (ids) => pick(orgIds, ids),
    projects: async (ids) => pick(projects, ids),
    workspaces: async (ids) => pick(byId, ids),
    workspacesNamed: async (keys) => pick(byName, keys),
    workspacesOfProjects: async (ids) => pick(ofProject, ids),
  };
}
