import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { existsSync } from 'node:fs';
import { writeSampleSeries } from '../../src/sample/sample-series.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  SAMPLE_DEFAULTS,
  SAMPLE_FILES,
  isoTime,
  organizationSizes,
  writeSample,
  type SampleFile,
  type SampleSummary,
} from '../../src/sample/sample.js';

type Row = Record<string, unknown>;

const ORG_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$/;
const PROJECT_ID = /^prj-[A-Za-z0-9]{1,64}$/;
const WORKSPACE_ID = /^ws-[A-Za-z0-9]{16}$/;
const RUN_ID = /^run-[A-Za-z0-9]{1,64}$/;
const USER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$/;
const TIMESTAMP = /^20(2[1-6])-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function readRows(dir: string, file: SampleFile): Promise<Row[]> {
  const bytes = await readFile(join(dir, `${file}.ndjson`));
  const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes); // throws on invalid UTF-8
  expect(text.endsWith('\n') || text === '', `${file} ends with a newline`).to.equal(true);
  return text
    .split('\n')
    .slice(0, -1)
    .map((line, i) => {
      const v: unknown = JSON.parse(line);
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`${file}:${i + 1}: not an object`);
      return v as Row;
    });
}

const present = (v: unknown) => v !== undefined && v !== null;
function isName(v: unknown): boolean {
  return typeof v === 'string' && v.length > 0 && [...v].length <= 255;
}
function optString(v: unknown): boolean {
  return !present(v) || typeof v === 'string';
}
function optCount(v: unknown): boolean {
  return !present(v) || (Number.isSafeInteger(v) && (v as number) >= 0);
}

/** A compact version of the snapshot-source rules; returns the problems found (`file:line: reason`). */
function validate(data: Record<SampleFile, Row[]>): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, file: string, i: number, reason: string) => {
    if (!ok && problems.length < 20) problems.push(`${file}:${i + 1}: ${reason}`);
  };

  const orgs = new Set<string>();
  data.organizations.forEach((r, i) => {
    check(typeof r.name === 'string' && ORG_NAME.test(r.name), 'organizations', i, 'name');
    check(!orgs.has(r.name as string), 'organizations', i, 'duplicate name');
    orgs.add(r.name as string);
  });

  const projectOrg = new Map<string, string>();
  data.projects.forEach((r, i) => {
    check(typeof r.id === 'string' && PROJECT_ID.test(r.id), 'projects', i, 'id');
    check(!projectOrg.has(r.id as string), 'projects', i, 'duplicate id');
    check(orgs.has(r.organization as string), 'projects', i, 'organization');
    check(isName(r.name), 'projects', i, 'name');
    projectOrg.set(r.id as string, r.organization as string);
  });

  const workspaces = new Set<string>();
  const namesPerOrg = new Map<string, Set<string>>();
  data.workspaces.forEach((r, i) => {
    const f = 'workspaces';
    check(typeof r.id === 'string' && WORKSPACE_ID.test(r.id), f, i, 'id');
    check(!workspaces.has(r.id as string), f, i, 'duplicate id');
    workspaces.add(r.id as string);
    check(orgs.has(r.organization as string), f, i, 'organization');
    check(projectOrg.get(r.project_id as string) === r.organization, f, i, 'project of another organization');
    check(isName(r.name), f, i, 'name');
    const names = namesPerOrg.get(r.organization as string) ?? new Set<string>();
    namesPerOrg.set(r.organization as string, names);
    check(!names.has(r.name as string), f, i, `duplicate name ${String(r.name)}`);
    names.add(r.name as string);
    for (const k of ['created_at', 'updated_at']) check(TIMESTAMP.test(r[k] as string), f, i, k);
    check((r.updated_at as string) >= (r.created_at as string), f, i, 'updated before created');
    for (const k of ['engine_version', 'state_version_engine_version', 'vcs_repo_identifier']) {
      check(optString(r[k]), f, i, k);
    }
    if (present(r.tags)) {
      check(Array.isArray(r.tags) && r.tags.every((t) => typeof t === 'string' && t !== ''), f, i, 'tags');
    }
    if (present(r.current_run)) {
      const run = r.current_run as Row;
      check(typeof run.id === 'string' && RUN_ID.test(run.id), f, i, 'current_run.id');
      check(run.status === 'applied' || run.status === 'planned_and_finished', f, i, 'current_run.status');
      if (run.status === 'applied') {
        check(TIMESTAMP.test(run.applied_at as string), f, i, 'current_run.applied_at');
        check((run.applied_at as string) <= (r.updated_at as string), f, i, 'applied after update');
      } else check(!present(run.applied_at), f, i, 'applied_at without apply');
    }
    if (present(r.checks)) {
      const c = r.checks as Row;
      check(['passed', 'failed', 'errored', 'unknown'].every((k) => optCount(c[k])), f, i, 'checks');
    }
    if (present(r.drift)) {
      const d = r.drift as Row;
      check(typeof d.drifted === 'boolean', f, i, 'drift.drifted');
      check(optCount(d.resources_drifted) && optCount(d.resources_undrifted), f, i, 'drift counts');
    }
  });

  for (const file of ['workspace_providers', 'workspace_modules'] as const) {
    const sources = new Map<string, Set<string>>();
    data[file].forEach((r, i) => {
      check(workspaces.has(r.workspace_id as string), file, i, 'workspace_id');
      check(typeof r.name === 'string' && r.name !== '', file, i, 'name');
      check(typeof r.source === 'string' && r.source !== '', file, i, 'source');
      if (file === 'workspace_providers') check(typeof r.version === 'string' && r.version !== '', file, i, 'version');
      else check(optString(r.version), file, i, 'version');
      check(!present(r.registry_type) || r.registry_type === 'public' || r.registry_type === 'private', file, i, 'registry_type');
      if (present(r.registry_type)) {
        const privateSource = (r.source as string).startsWith('app.terraform.io/');
        check((r.registry_type === 'private') === privateSource, file, i, 'registry_type does not match source');
      }
      if (file === 'workspace_providers') {
        const seen = sources.get(r.workspace_id as string) ?? new Set<string>();
        sources.set(r.workspace_id as string, seen);
        check(!seen.has(r.source as string), file, i, `provider ${String(r.source)} listed twice`);
        seen.add(r.source as string);
      }
    });
  }

  // Resources: the source rules, unique addresses per workspace, and the workspace's counts agree with its rows.
  const perWorkspace = new Map<string, { count: number; billable: number; addresses: Set<string> }>();
  data.workspace_resources.forEach((r, i) => {
    const f = 'workspace_resources';
    check(workspaces.has(r.workspace_id as string), f, i, 'workspace_id');
    for (const k of ['address', 'name', 'type', 'provider']) check(isName(r[k]), f, i, k);
    check(optString(r.module) && optString(r.engine_version), f, i, 'module / engine_version');
    check(!present(r.billable) || typeof r.billable === 'boolean', f, i, 'billable');
    check(!present(r.run_id) || (typeof r.run_id === 'string' && RUN_ID.test(r.run_id)), f, i, 'run_id');
    check(TIMESTAMP.test(r.state_updated_at as string), f, i, 'state_updated_at');
    const w = perWorkspace.get(r.workspace_id as string) ?? { count: 0, billable: 0, addresses: new Set<string>() };
    perWorkspace.set(r.workspace_id as string, w);
    check(!w.addresses.has(r.address as string), f, i, `duplicate address ${String(r.address)}`);
    w.addresses.add(r.address as string);
    w.count++;
    if (r.billable === true) w.billable++;
  });
  data.workspaces.forEach((r, i) => {
    const w = perWorkspace.get(r.id as string);
    check(optCount(r.resource_count) && optCount(r.current_rum_count), 'workspaces', i, 'resource counts');
    check((r.resource_count ?? 0) === (w?.count ?? 0), 'workspaces', i, `resource_count ${String(r.resource_count)} but ${w?.count ?? 0} rows`);
    check((r.current_rum_count ?? 0) === (w?.billable ?? 0), 'workspaces', i, `current_rum_count ${String(r.current_rum_count)} but ${w?.billable ?? 0} billable rows`);
    check(optString(r.source_module_id), 'workspaces', i, 'source_module_id');
  });

  const teams = new Set<string>();
  data.teams.forEach((r, i) => {
    check(orgs.has(r.organization as string), 'teams', i, 'organization');
    check(isName(r.name), 'teams', i, 'name');
    const key = `${String(r.organization)}\n${String(r.name)}`;
    check(!teams.has(key), 'teams', i, 'duplicate team');
    teams.add(key);
    for (const k of ['read_workspaces', 'read_projects']) check(!present(r[k]) || typeof r[k] === 'boolean', 'teams', i, k);
  });
  for (const o of orgs) check(teams.has(`${o}\nowners`), 'teams', 0, `${o} has no owners team`);
  data.team_members.forEach((r, i) => {
    check(teams.has(`${String(r.organization)}\n${String(r.team)}`), 'team_members', i, 'team');
    check(typeof r.user === 'string' && USER_NAME.test(r.user), 'team_members', i, 'user');
  });
  return problems;
}

describe('sample snapshot source', function () {
  // Writing 20,000 workspaces takes seconds alone, and over 20 s beside three other files of the suite.
  this.timeout(120_000);
  let root: string;
  let dir: string;
  let summary: SampleSummary;
  let data: Record<SampleFile, Row[]>;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'sample-test-'));
    dir = join(root, 'a', 'nested');
    const progress: Array<[number, number]> = [];
    summary = await writeSample(dir, { organizations: 50, workspaces: 20000, seed: 7, onProgress: (w, t) => progress.push([w, t]) });
    expect(progress).to.deep.equal([[20000, 20000]]);
    data = {} as Record<SampleFile, Row[]>;
    for (const f of SAMPLE_FILES) data[f] = await readRows(dir, f);
  });

  after(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  describe('organization sizes', () => {
    it('gives the largest of 2,000 organizations exactly 10% of 1,000,000 workspaces, Zipf-like below', () => {
      const s = organizationSizes(2000, 1_000_000);
      expect(s).to.have.length(2000);
      expect(s[0]).to.equal(100_000);
      expect(s.reduce((a, b) => a + b, 0)).to.equal(1_000_000);
      expect(Math.min(...s)).to.be.at.least(1);
      for (let i = 1; i < s.length; i++) expect(s[i]).to.be.at.most(s[i - 1]!);
      expect(s[1]).to.be.below(100_000);
      expect(s.filter((x) => x <= 500).length).to.be.above(1000);
      // Zipf, exponent ~1: rank × size is roughly constant
      expect((s[9]! * 10) / (s[99]! * 100)).to.be.within(0.8, 1.25);
    });

    it('keeps every rule for small and odd configurations', () => {
      for (const [orgs, ws] of [[50, 20000], [40, 20000], [10, 20000], [11, 20001], [12, 100], [5, 100], [1, 7], [3, 3], [10, 10]] as const) {
        const s = organizationSizes(orgs, ws);
        expect(s, `${orgs}/${ws}`).to.have.length(orgs);
        expect(s.reduce((a, b) => a + b, 0)).to.equal(ws);
        expect(Math.min(...s)).to.be.at.least(1);
        expect(Math.max(...s)).to.equal(s[0]);
        if (orgs >= 10 && ws >= 10 * orgs) expect(s[0], `${orgs}/${ws}`).to.equal(Math.round(ws / 10));
      }
      const s = organizationSizes(50, 20000);
      expect(s[0]).to.equal(2000);
      expect(s[1]).to.be.below(2000);
      expect(s.some((x) => x <= 500)).to.equal(true);
    });

    it('clamps organizations to workspaces', () => {
      expect(organizationSizes(30, 12)).to.deep.equal(new Array(12).fill(1));
    });
  });

  it('summarizes what it wrote', () => {
    expect(summary.dir).to.equal(dir);
    expect(summary.largestOrganization).to.equal('acme-corp');
    expect(summary.organizations[0]).to.deep.equal({ name: 'acme-corp', workspaces: 2000 });
    expect(summary.organizations).to.have.length(50);
    const sizes = summary.organizations.map((o) => o.workspaces);
    expect(sizes.reduce((a, b) => a + b, 0)).to.equal(20000);
    for (let i = 1; i < sizes.length; i++) expect(sizes[i]).to.be.below(2000).and.at.most(sizes[i - 1]!);
    expect(Math.min(...sizes)).to.be.at.least(1);
    expect(sizes.some((x) => x <= 500)).to.equal(true);
    for (const f of SAMPLE_FILES) expect(summary.counts[f], f).to.equal(data[f].length);
    for (const f of SAMPLE_FILES) expect(summary.bytes[f], f).to.be.above(0);
    expect(new Set(summary.organizations.map((o) => o.name)).size).to.equal(50);
    const perOrg = new Map<string, number>();
    for (const w of data.workspaces) perOrg.set(w.organization as string, (perOrg.get(w.organization as string) ?? 0) + 1);
    for (const o of summary.organizations) expect(perOrg.get(o.name), o.name).to.equal(o.workspaces);
    expect(data.organizations.map((o) => o.name)).to.include.members(['acme-corp', 'globex', 'initech', 'umbrella', 'hooli']);
  });

  it('writes only records that satisfy the snapshot-source rules', () => {
    expect(validate(data)).to.deep.equal([]);
  });

  it('looks realistic and exercises quoting, case folding and optional values', () => {
    const ws = data.workspaces;
    const frac = (p: (r: Row) => boolean) => ws.filter(p).length / ws.length;
    expect(data.workspace_providers.length / ws.length).to.be.within(4.5, 5.5);
    expect(data.workspace_modules.length / ws.length).to.be.within(2.5, 3.5);
    expect(frac((r) => !present(r.vcs_repo_identifier) || r.vcs_repo_identifier === '')).to.be.within(0.15, 0.25);
    expect(frac((r) => !present(r.current_run))).to.be.within(0.07, 0.13);
    expect(frac((r) => !present(r.drift))).to.be.within(0.25, 0.35);
    expect(frac((r) => !present(r.engine_version))).to.be.within(0.01, 0.06);
    expect(frac((r) => (r.current_run as Row | undefined)?.status === 'planned_and_finished')).to.be.above(0.05);
    expect(frac((r) => Array.isArray(r.tags) && r.tags.length === 0)).to.be.above(0.01);
    expect(frac((r) => Array.isArray(r.tags) && new Set(r.tags).size < r.tags.length)).to.be.above(0.002);
    expect(frac((r) => ((r.checks as Row | undefined)?.failed as number) > 0)).to.be.above(0.01);
    expect(frac((r) => (r.drift as Row | undefined)?.drifted === true)).to.be.above(0.03);
    const names = ws.map((r) => r.name as string);
    expect(names.some((n) => /[^\x00-\x7f]/.test(n))).to.equal(true);
    expect(names.some((n) => n.includes('"'))).to.equal(true);
    expect(names.some((n) => n.includes(','))).to.equal(true);
    expect(names.some((n) => /[A-Z]/.test(n))).to.equal(true);
    expect(names).to.include('Café-API');
    expect(names.some((n) => /^[a-z0-9-]+-(prod|staging|dev)-\d+$/.test(n))).to.equal(true);
    const versions = new Set(ws.map((r) => r.engine_version));
    expect(versions).to.include.members(['1.9.8', '1.5.7', '0.14.11']);
    const sv = ws.filter((r) => present(r.engine_version) && present(r.state_version_engine_version));
    expect(sv.filter((r) => r.engine_version === r.state_version_engine_version).length / sv.length).to.be.within(0.6, 0.9);
    const vcs = ws.find((r) => r.organization === 'acme-corp' && typeof r.vcs_repo_identifier === 'string' && r.vcs_repo_identifier);
    expect(vcs?.vcs_repo_identifier).to.match(/^acme-corp\/[a-z0-9-]+$/);

    const sources = new Set(data.workspace_providers.map((r) => `${String(r.name)} ${String(r.source)} ${String(r.registry_type)}`));
    expect(sources).to.include.members([
      'aws registry.terraform.io/hashicorp/aws public',
      'datadog registry.terraform.io/DataDog/datadog public',
      'github registry.terraform.io/integrations/github public',
      'internal app.terraform.io/acme-corp/internal private',
      'aws registry.terraform.io/hashicorp/aws undefined',
    ]);
    const aws = data.workspace_providers.filter((r) => r.name === 'aws').map((r) => r.version);
    expect(new Set(aws)).to.include.members(['5.31.0', '5.82.2', '4.67.0', '3.76.1']);

    const mods = data.workspace_modules;
    expect(mods.find((r) => r.source === 'registry.terraform.io/terraform-aws-modules/vpc/aws')).to.include({ name: 'vpc', registry_type: 'public' });
    expect(mods.find((r) => r.source === 'app.terraform.io/acme-corp/network/aws')).to.include({ name: 'network', registry_type: 'private' });
    const local = mods.find((r) => r.source === './modules/app');
    expect(local).to.deep.equal({ workspace_id: local?.workspace_id, name: 'app', source: './modules/app' });

    const teamsOf = (user: string) =>
      data.team_members.filter((m) => m.user === user).map((m) => `${String(m.organization)}/${String(m.team)}`).sort();
    expect(teamsOf('alice')).to.deep.equal(['acme-corp/owners', 'globex/owners', 'initech/developers']);
    expect(teamsOf('bob.smith')).to.deep.equal(['acme-corp/platform', 'globex/developers', 'initech/security']);
    expect(teamsOf('carol')).to.deep.equal(['acme-corp/developers']);
    const orgsPerUser = new Map<string, Set<string>>();
    for (const m of data.team_members) {
      const s = orgsPerUser.get(m.user as string) ?? new Set<string>();
      s.add(m.organization as string);
      orgsPerUser.set(m.user as string, s);
    }
    expect([...orgsPerUser.values()].filter((s) => s.size > 1).length).to.be.above(5);
    expect(data.teams.some((t) => t.read_workspaces === true)).to.equal(true);
    expect(data.teams.some((t) => t.read_projects === true && t.read_workspaces !== true)).to.equal(true);
    expect(data.teams.some((t) => t.name === 'developers' && !t.read_workspaces && !t.read_projects)).to.equal(true);
    expect(data.projects.filter((p) => p.organization === 'acme-corp').length).to.equal(11);
    expect(data.projects.filter((p) => p.name === 'Default Project').length).to.equal(50);
  });

  it('writes resources with a long tail, local execution, built-ins, modules and non-billable rows', () => {
    const res = data.workspace_resources;
    const perWs = new Map<string, number>();
    for (const r of res) perWs.set(r.workspace_id as string, (perWs.get(r.workspace_id as string) ?? 0) + 1);
    expect(res.length / data.workspaces.length).to.be.within(15, 30);
    expect(Math.max(...perWs.values())).to.be.at.least(1000);
    expect([...perWs.values()].filter((n) => n < 10).length).to.be.above(perWs.size / 4);
    const frac = (p: (r: Row) => boolean) => res.filter(p).length / res.length;
    expect(frac((r) => !present(r.run_id))).to.be.within(0.005, 0.2);
    expect(frac((r) => r.billable !== true)).to.be.within(0.005, 0.3);
    expect(frac((r) => present(r.module) && r.module !== '')).to.be.within(0.1, 0.6);
    expect(res.some((r) => r.provider === 'terraform.io/builtin/terraform' && r.type === 'terraform_data')).to.equal(true);
    expect(res.some((r) => r.module === '')).to.equal(true);
    expect(res.some((r) => /\[\d+\]$/.test(r.address as string))).to.equal(true);
    expect(data.workspace_providers.some((r) => r.curated === true)).to.equal(true);
    expect(data.organizations.filter((o) => present(o.id)).length).to.be.within(30, 50);
    expect(data.workspaces.some((w) => typeof w.source_module_id === 'string')).to.equal(true);
  });

  it('is deterministic for a seed and differs between seeds', async () => {
    const opts = { organizations: 12, workspaces: 3000, seed: 42 };
    const a = join(root, 'det-a');
    const b = join(root, 'det-b');
    const c = join(root, 'det-c');
    await writeSample(a, opts);
    await writeSample(b, opts);
    await writeSample(c, { ...opts, seed: 43 });
    for (const f of SAMPLE_FILES) {
      const [x, y] = await Promise.all([readFile(join(a, `${f}.ndjson`)), readFile(join(b, `${f}.ndjson`))]);
      expect(x.equals(y), f).to.equal(true);
    }
    for (const f of ['projects', 'workspaces', 'workspace_providers', 'workspace_modules'] as const) {
      const [x, z] = await Promise.all([readFile(join(a, `${f}.ndjson`)), readFile(join(c, `${f}.ndjson`))]);
      expect(x.equals(z), f).to.equal(false);
    }
  });

  it('writes the same lines gzip-compressed with gzip, and refuses a gzip series', async () => {
    const opts = { organizations: 12, workspaces: 3000, seed: 42 };
    const plain = join(root, 'gz-plain');
    const zipped = join(root, 'gz-zipped');
    await writeSample(plain, opts);
    const summary = await writeSample(zipped, { ...opts, gzip: true });
    for (const f of SAMPLE_FILES) {
      const [x, z] = await Promise.all([readFile(join(plain, `${f}.ndjson`)), readFile(join(zipped, `${f}.ndjson.gz`))]);
      expect(gunzipSync(z).equals(x), f).to.equal(true);
      expect(summary.bytes[f], f).to.equal(z.length);
      expect(existsSync(join(zipped, `${f}.ndjson`)), f).to.equal(false);
    }
    const refused = await writeSampleSeries(join(root, 'gz-series'), { ...opts, days: 2, gzip: true }).then(() => null, (e: Error) => e);
    expect(refused).to.be.instanceOf(RangeError);
    expect(refused!.message).to.match(/plain files/);
  });

  it('clamps organizations to workspaces and rejects bad options', async () => {
    const s = await writeSample(join(root, 'tiny'), { organizations: 20, workspaces: 5, seed: 1 });
    expect(s.organizations).to.have.length(5);
    expect(s.counts.workspaces).to.equal(5);
    expect(s.largestOrganization).to.equal('acme-corp');
    for (const bad of [{ workspaces: 0 }, { organizations: 0 }, { workspaces: 1.5 }, { seed: Number.NaN }]) {
      let err: unknown;
      try {
        await writeSample(join(root, 'bad'), { ...SAMPLE_DEFAULTS, ...bad });
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(bad)).to.be.instanceOf(RangeError);
    }
  });

  it('has the documented defaults', () => {
    expect(SAMPLE_DEFAULTS).to.deep.equal({ organizations: 40, workspaces: 20000, seed: 1 });
  });

  it('formats timestamps exactly like Date#toISOString', () => {
    const start = Date.UTC(2021, 0, 1);
    const end = Date.UTC(2026, 10, 1);
    for (let i = 0; i <= 2000; i++) {
      const ms = start + Math.floor(((end - start) * i) / 2000) + (i % 1000);
      const t = Math.min(ms, end);
      expect(isoTime(t)).to.equal(new Date(t).toISOString());
    }
  });
});
