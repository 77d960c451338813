// Validates a snapshot source (docs/snapshot-source.md) line by line, so that every problem is
// reported as `file:line: reason`. DuckDB then reads the same files in bulk, trusting what passed here.
import { createReadStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import { AddressSet } from './address-set.js';
import type { AccessData } from '../snapshot-dir.js';

export const SOURCE_FILES = [
  'organizations', 'projects', 'workspaces', 'workspace_providers', 'workspace_modules', 'workspace_resources', 'teams', 'team_members',
] as const;
export type SourceFile = (typeof SOURCE_FILES)[number];

export interface ValidationResult {
  errors: string[];
  errorCount: number;
  /** Path of each file found (plain or .gz); absent files have no records. */
  files: Partial<Record<SourceFile, string>>;
  counts: Record<SourceFile, number>;
  access: AccessData;
}

/**
 * Each source file present in `dir`, plain or gzip-compressed (`<file>.ndjson` first). The loader reads
 * these while they are validated, so both must agree on which file is which.
 */
export function sourceFiles(dir: string): Partial<Record<SourceFile, string>> {
  const files: Partial<Record<SourceFile, string>> = {};
  for (const file of SOURCE_FILES) {
    const plain = join(dir, `${file}.ndjson`);
    const path = existsSync(plain) ? plain : existsSync(`${plain}.gz`) ? `${plain}.gz` : undefined;
    if (path) files[file] = path;
  }
  return files;
}

const MAX_REPORTED = 100;
const ORG_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$/;
const ORG_ID = /^org-[A-Za-z0-9]{1,64}$/;
const PROJECT_ID = /^prj-[A-Za-z0-9]{1,64}$/;
const WORKSPACE_ID = /^ws-[A-Za-z0-9]{1,64}$/;
const RUN_ID = /^run-[A-Za-z0-9]{1,64}$/;
const USER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$/;
// Seconds are required: DuckDB's timestamp parser needs them, and every real export carries them.
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))$/;

type Json = Record<string, unknown>;
class Invalid extends Error {}
const fail = (reason: string): never => { throw new Invalid(reason); };

function obj(line: string): Json {
  let v: unknown;
  try { v = JSON.parse(line); } catch { fail('not valid JSON'); }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail('a line must hold one JSON object');
  return v as Json;
}
const absent = (v: unknown) => v === undefined || v === null;
function str(r: Json, key: string, required: boolean, pattern?: RegExp, what?: string): string | null {
  const v = r[key];
  if (absent(v) || v === '') return required ? fail(`${key} is required`) : null;
  if (typeof v !== 'string') return fail(`${key} must be a string`);
  if (pattern && !pattern.test(v)) fail(`${key} ${JSON.stringify(v)} is not ${what ?? `of the form ${pattern.source}`}`);
  return v;
}
/** A string of 1–`max` characters (code points); null when optional and absent. */
function text(r: Json, key: string, required: boolean, max = 255): string | null {
  const v = str(r, key, required);
  if (v !== null && v.length > max && [...v].length > max) fail(`${key} is longer than ${max} characters`);
  return v;
}
const name = (r: Json, key: string): string => text(r, key, true)!;
/** Whether `YYYY-MM-DD` is a real date: a source repeats few dates millions of times, so each is worked out once. */
const realDays = new Map<string, boolean>();
function realDay(day: string): boolean {
  let ok = realDays.get(day);
  if (ok === undefined) {
    const [y, mo, d] = day.split('-').map(Number) as [number, number, number];
    const date = new Date(Date.UTC(y, mo - 1, d));
    ok = date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
    if (realDays.size < 100_000) realDays.set(day, ok);
  }
  return ok;
}
function timestamp(r: Json, key: string, required: boolean): void {
  const v = str(r, key, required);
  if (v === null) return;
  const m = TIMESTAMP.exec(v);
  if (!m) return fail(`${key} ${JSON.stringify(v)} is not an ISO 8601 timestamp with seconds and an offset (2023-10-17T21:56:45.570Z)`);
  if (!realDay(v.slice(0, 10)) || +m[4]! > 23 || +m[5]! > 59 || +m[6]! > 59 || +(m[9] ?? 0) > 23 || +(m[10] ?? 0) > 59) {
    fail(`${key} ${JSON.stringify(v)} is not a real date and time`);
  }
}
function count(o: Json, key: string, where: string): void {
  const v = o[key];
  if (absent(v)) return;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail(`${where ? `${where}.` : ''}${key} must be a whole number ≥ 0`);
}
function bool(o: Json, key: string, where: string): void {
  const v = o[key];
  if (!absent(v) && typeof v !== 'boolean') fail(`${where}${key} must be true or false`);
}
function object(r: Json, key: string): Json | null {
  const v = r[key];
  if (absent(v)) return null;
  if (typeof v !== 'object' || Array.isArray(v)) return fail(`${key} must be an object`);
  return v as Json;
}

export async function validateSource(dir: string, onProgress?: (file: string, lines: number) => void): Promise<ValidationResult> {
  const errors: string[] = [];
  let errorCount = 0;
  const files = sourceFiles(dir);
  const counts = Object.fromEntries(SOURCE_FILES.map((f) => [f, 0])) as Record<SourceFile, number>;
  const seen = newSeen();
  const rules = rulesFor(seen);
  const report = (label: string, lineNo: number, reason: string) => {
    errorCount++;
    if (errors.length < MAX_REPORTED) errors.push(`${label}:${lineNo}: ${reason}`);
  };
  const labelOf = (path: string) => path.slice(dir.length).replace(/^\//, '');
  for (const file of SOURCE_FILES) {
    const path = files[file];
    if (!path) {
      if (file === 'organizations') { errors.push(`${file}.ndjson: the file is required`); errorCount++; }
      continue;
    }
    const label = labelOf(path);
    await eachLine(path, label, report, (line, lineNo) => {
      try {
        rules[file](obj(line));
        counts[file]++;
      } catch (e) {
        if (!(e instanceof Invalid)) throw e;
        report(label, lineNo, e.message);
      }
      if (onProgress && lineNo % 100_000 === 0) onProgress(label, lineNo);
    });
  }
  if (files.workspace_resources) await confirmDuplicateAddresses(files.workspace_resources, labelOf(files.workspace_resources), seen.addresses, report);
  return { errors, errorCount, files, counts, access: accessOf(seen) };
}

/** What the records read so far define, which later records refer to (and who may read what). */
interface Seen {
  orgs: Set<string>;
  orgIds: Set<string>;
  projectOrg: Map<string, string>;
  workspaceIds: Set<string>;
  workspaceNames: Set<string>;
  teams: Map<string, { qualifies: boolean }>;
  teamsByOrg: Record<string, string[]>;
  qualifyingTeams: Record<string, string[]>;
  userOrgs: Record<string, Set<string>>;
  addresses: AddressSet;
}

const newSeen = (): Seen => ({
  orgs: new Set(), orgIds: new Set(), projectOrg: new Map(), workspaceIds: new Set(), workspaceNames: new Set(),
  teams: new Map(), teamsByOrg: {}, qualifyingTeams: {}, userOrgs: {}, addresses: new AddressSet(),
});

/** The rules each file's records must follow, checked against what the files before them defined (`seen`). */
function rulesFor(seen: Seen): Record<SourceFile, (r: Json) => void> {
  const { orgs, orgIds, projectOrg, workspaceIds, workspaceNames, teams, teamsByOrg, qualifyingTeams, userOrgs, addresses } = seen;
  // The loader collects the distinct versions for their order keys itself (staging.ts): here they are only checked.
  const version = (r: Json, key: string, required = false) => { str(r, key, required); };
  const rules: Record<SourceFile, (r: Json) => void> = {
    organizations(r) {
      const n = str(r, 'name', true, ORG_NAME, 'a valid organization name')!;
      if (orgs.has(n)) fail(`organization ${JSON.stringify(n)} is defined twice`);
      orgs.add(n);
      const id = str(r, 'id', false, ORG_ID, 'an organization id (org-<1–64 letters or digits>)');
      if (id !== null && orgIds.has(id)) fail(`organization id ${id} is used twice`);
      if (id !== null) orgIds.add(id);
    },
    projects(r) {
      const id = str(r, 'id', true, PROJECT_ID, 'a project id (prj-<1–64 letters or digits>)')!;
      const org = knownOrg(r);
      if (projectOrg.has(id)) fail(`project ${id} is defined twice`);
      // Registered even if the rest is invalid, so that references to it report no second, false problem.
      projectOrg.set(id, org);
      name(r, 'name');
    },
    workspaces(r) {
      const id = str(r, 'id', true, WORKSPACE_ID, 'a workspace id (ws-<1–64 letters or digits>)')!;
      if (workspaceIds.has(id)) fail(`workspace ${id} is defined twice`);
      // Registered even if the rest is invalid, so that its providers and modules report no false problem.
      workspaceIds.add(id);
      const org = knownOrg(r);
      const project = str(r, 'project_id', true)!;
      if (projectOrg.get(project) !== org) fail(`project_id ${project} is not a project of organization ${org}`);
      const n = name(r, 'name');
      timestamp(r, 'created_at', true);
      timestamp(r, 'updated_at', true);
      version(r, 'engine_version');
      version(r, 'state_version_engine_version');
      str(r, 'vcs_repo_identifier', false);
      const tags = r.tags;
      if (!absent(tags) && (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string'))) fail('tags must be an array of strings');
      const run = object(r, 'current_run');
      if (run) {
        str(run, 'id', true, RUN_ID, 'a run id (run-<1–64 letters or digits>)');
        str(run, 'status', false);
        timestamp(run, 'applied_at', false);
      }
      const checks = object(r, 'checks');
      if (checks) for (const k of ['passed', 'failed', 'errored', 'unknown']) count(checks, k, 'checks');
      const drift = object(r, 'drift');
      if (drift) {
        bool(drift, 'drifted', 'drift.');
        for (const k of ['resources_drifted', 'resources_undrifted']) count(drift, k, 'drift');
      }
      for (const k of ['resource_count', 'current_rum_count']) count(r, k, '');
      text(r, 'source_module_id', false);
      const key = `${org}\n${n}`;
      if (workspaceNames.has(key)) fail(`organization ${org} already has a workspace named ${JSON.stringify(n)}`);
      workspaceNames.add(key);
    },
    workspace_providers: (r) => usage(r, true),
    workspace_modules: (r) => usage(r, false),
    workspace_resources(r) {
      const ws = str(r, 'workspace_id', true)!;
      if (!workspaceIds.has(ws)) fail(`workspace_id ${ws} does not exist`);
      const address = text(r, 'address', true, 1024)!;
      for (const k of ['name', 'type', 'provider']) text(r, k, true);
      text(r, 'module', false);
      version(r, 'engine_version');
      bool(r, 'billable', '');
      str(r, 'run_id', false, RUN_ID, 'a run id (run-<1–64 letters or digits>)');
      timestamp(r, 'state_updated_at', true);
      addresses.add(ws, address);
    },
    teams(r) {
      const org = knownOrg(r);
      const n = name(r, 'name');
      bool(r, 'read_workspaces', '');
      bool(r, 'read_projects', '');
      const key = `${org}\n${n}`;
      if (teams.has(key)) fail(`organization ${org} already has a team named ${JSON.stringify(n)}`);
      const qualifies = n === 'owners' || r.read_workspaces === true || r.read_projects === true;
      teams.set(key, { qualifies });
      (teamsByOrg[org] ??= []).push(n);
      if (qualifies) (qualifyingTeams[org] ??= []).push(n);
    },
    team_members(r) {
      const org = knownOrg(r);
      const team = str(r, 'team', true)!;
      const user = str(r, 'user', true, USER_NAME, 'a valid user name')!;
      const t = teams.get(`${org}\n${team}`);
      if (!t) fail(`team ${JSON.stringify(team)} does not exist in organization ${org}`);
      if (t!.qualifies) (userOrgs[user] ??= new Set()).add(org);
    },
  };
  function knownOrg(r: Json): string {
    const org = str(r, 'organization', true)!;
    if (!orgs.has(org)) fail(`organization ${JSON.stringify(org)} does not exist`);
    return org;
  }
  function usage(r: Json, versionRequired: boolean): void {
    const ws = str(r, 'workspace_id', true)!;
    if (!workspaceIds.has(ws)) fail(`workspace_id ${ws} does not exist`);
    str(r, 'name', true);
    str(r, 'source', true);
    version(r, 'version', versionRequired);
    const type = str(r, 'registry_type', false);
    if (type !== null && type !== 'public' && type !== 'private') fail(`registry_type must be public or private, not ${JSON.stringify(type)}`);
    bool(r, 'curated', '');
  }

  return rules;
}

/**
 * A resource address repeated in a workspace: the first read kept only hashes of (workspace, address), so a
 * second read, only when hashes repeat, confirms with the real strings and names both lines.
 */
async function confirmDuplicateAddresses(path: string, label: string, addresses: AddressSet, report: (label: string, lineNo: number, reason: string) => void): Promise<void> {
  const repeated = addresses.candidates();
  if (repeated.size === 0) return;
  const firstLine = new Map<string, number>();
  await eachLine(path, label, report, (line, lineNo) => {
    let r: Json;
    try { r = obj(line); } catch { return; }
    const { workspace_id: ws, address } = r;
    if (typeof ws !== 'string' || typeof address !== 'string' || !repeated.has(addresses.hashOf(ws, address))) return;
    const key = `${ws}\n${address}`;
    const first = firstLine.get(key);
    if (first === undefined) firstLine.set(key, lineNo);
    else report(label, lineNo, `duplicate address ${JSON.stringify(address)} in workspace ${ws} (first on line ${first})`);
  });
}

/** Who may read what (snapshot-dir.ts AccessData): the organizations, their teams, those that qualify, and each user's organizations. */
function accessOf(seen: Seen): ValidationResult['access'] {
  const sorted = (r: Record<string, string[]>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, [...v].sort()]));
  return {
    organizations: [...seen.orgs].sort(),
    qualifyingTeams: sorted(seen.qualifyingTeams),
    teams: sorted(seen.teamsByOrg),
    userOrganizations: Object.fromEntries(Object.entries(seen.userOrgs).map(([u, set]) => [u, [...set].sort()])),
  };
}

/** Every line of a source file, plain or gzip-compressed, blank ones included (they count in line numbers). */
export function sourceLines(path: string): AsyncIterable<string> {
  const input = createReadStream(path, { highWaterMark: 1 << 20 });
  return createInterface({ input: path.endsWith('.gz') ? input.pipe(createGunzip()) : input, crlfDelay: Infinity });
}

/** Calls `each` with every non-blank line and its number; a read error is reported at the line after the last. */
async function eachLine(path: string, label: string, report: (label: string, lineNo: number, reason: string) => void,
  each: (line: string, lineNo: number) => void): Promise<void> {
  let lineNo = 0;
  try {
    for await (const line of sourceLines(path)) {
      lineNo++;
      if (line.trim() !== '') each(line, lineNo);
    }
  } catch (e) {
    report(label, lineNo + 1, `cannot be read (${(e as Error).message})`);
  }
}
