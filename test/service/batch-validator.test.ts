// A change batch checked against the source it applies to (src/snapshots/write/batch-validator.ts): the
// sample batches pass; each way a batch can break a rule is named at its line; and the validator accepts a
// batch exactly when the oracle (helpers/batch-oracle.ts) applies it and the resulting source is valid.
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSample } from '../../src/sample/sample.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { validateBatch } from '../../src/snapshots/write/batch-validator.js';
import { validateSource } from '../../src/snapshots/write/source-validator.js';
import { applyBatch } from '../helpers/batch-oracle.js';
import { directoryState } from '../helpers/source-state.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { openSnapshotState } from '../../src/snapshots/write/snapshot-state.js';
import { snapshotPath } from '../../src/snapshots/snapshot-dir.js';

type Row = Record<string, any>;
const read = (path: string): Row[] => readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
const write = (path: string, rows: (Row | string)[]) => writeFileSync(path, rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n');

/** Whether the oracle applies `batch` to `source` and the result is a valid source. */
async function oracleAccepts(source: string, batch: string, scratch: string): Promise<boolean> {
  rmSync(scratch, { recursive: true, force: true });
  try {
    applyBatch(source, batch, scratch);
  } catch {
    return false;
  }
  return (await validateSource(scratch)).errorCount === 0;
}

describe('change batches checked against their source', function () {
  this.timeout(120_000);
  let dir: string;
  let source: string;
  let base: string; // a valid batch every mutation starts from
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-batch-check-'));
    source = join(dir, 'source');
    await writeSample(source, { organizations: 4, workspaces: 400, seed: 5 });
    await writeSampleChanges(source, join(dir, 'one'), { batches: 1, workspaces: 20, seed: 2 });
    base = join(dir, 'one', 'batch-0001');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('passes every sample batch, each checked against the source the batches before it made', async () => {
    await writeSampleChanges(source, join(dir, 'many'), { batches: 12, workspaces: 15, seed: 9 });
    let current = source;
    for (let i = 1; i <= 12; i++) {
      const batch = join(dir, 'many', `batch-${String(i).padStart(4, '0')}`);
      const result = await validateBatch(batch, directoryState(current));
      expect(result.errors, `batch ${i}`).to.deep.equal([]);
      const next = join(dir, `many-after-${i}`);
      applyBatch(current, batch, next);
      current = next;
    }
  });

  /** A copy of the base batch changed by `change`, checked; returns its problems. */
  let copies = 0;
  const mutated = async (change: (batch: string, rows: (file: string) => Row[]) => void) => {
    const batch = join(dir, `mutated-${++copies}`);
    cpSync(base, batch, { recursive: true });
    change(batch, (file) => read(join(batch, `${file}.ndjson`)));
    const result = await validateBatch(batch, directoryState(source));
    expect(result.errors.length > 0, 'the oracle agrees').to.equal(!(await oracleAccepts(source, batch, join(dir, `oracle-${copies}`))));
    return result.errors;
  };
  const sourceRows = (file: string) => read(join(source, `${file}.ndjson`));

  it('names each broken rule at its line', async () => {
    const ws = (b: string) => join(b, 'workspaces.ndjson');
    // A key twice: the same workspace upserted on two lines.
    expect(await mutated((b, rows) => write(ws(b), [...rows('workspaces'), rows('workspaces')[0]!])))
      .to.satisfy((e: string[]) => e.some((x) => /^workspaces\.ndjson:\d+: workspace ws-\S+ appears twice in the batch \(first on workspaces\.ndjson:1\)$/.test(x)));
    // A workspace both upserted and deleted.
    const first = read(ws(base))[0]!;
    expect(await mutated((b) => write(join(b, 'deletions.ndjson'), [{ kind: 'workspace', id: first.id }])))
      .to.include(`workspaces.ndjson:1: workspace ${first.id} appears twice in the batch (first on deletions.ndjson:1)`);
    // A row of a workspace the batch does not hold.
    const outsider = sourceRows('workspaces').find((w) => !read(ws(base)).some((x) => x.id === w.id))!;
    expect(await mutated((b, rows) => write(join(b, 'workspace_providers.ndjson'), [...rows('workspace_providers'), { workspace_id: outsider.id, name: 'aws', source: 'registry.terraform.io/hashicorp/aws', version: '5.0.0' }])))
      .to.satisfy((e: string[]) => e.some((x) => x.endsWith(`: workspace_id ${outsider.id} does not exist`)));
    // A workspace moved to another organization.
    const otherOrg = sourceRows('projects').find((p) => p.organization !== first.organization)!;
    expect(await mutated((b, rows) => write(ws(b), rows('workspaces').map((w, i) => (i === 0 ? { ...w, organization: otherOrg.organization, project_id: otherOrg.id } : w)))))
      .to.include(`workspaces.ndjson:1: workspace ${first.id} cannot move to another organization (it is in ${first.organization})`);
    // A name another workspace of the organization keeps.
    const neighbour = sourceRows('workspaces').find((w) => w.organization === first.organization && w.id !== first.id && !read(ws(base)).some((x) => x.id === w.id))!;
    expect(await mutated((b, rows) => write(ws(b), rows('workspaces').map((w, i) => (i === 0 ? { ...w, name: neighbour.name } : w)))))
      .to.include(`workspaces.ndjson:1: organization ${first.organization} already has a workspace named ${JSON.stringify(neighbour.name)}`);
    // …which is free when that workspace goes in the same batch.
    expect(await mutated((b, rows) => {
      write(ws(b), rows('workspaces').map((w, i) => (i === 0 ? { ...w, name: neighbour.name } : w)));
      write(join(b, 'deletions.ndjson'), [{ kind: 'workspace', id: neighbour.id }]);
    })).to.deep.equal([]);
    // A project that still has workspaces, deleted.
    expect(await mutated((b) => write(join(b, 'deletions.ndjson'), [{ kind: 'project', id: neighbour.project_id }])))
      .to.satisfy((e: string[]) => e.some((x) => x.startsWith(`deletions.ndjson:1: project ${neighbour.project_id} still has workspaces`)));
    // A project that is not of the workspace's organization.
    expect(await mutated((b, rows) => write(ws(b), rows('workspaces').map((w, i) => (i === 0 ? { ...w, project_id: otherOrg.id } : w)))))
      .to.include(`workspaces.ndjson:1: project_id ${otherOrg.id} is not a project of organization ${first.organization}`);
    // An organization deleted while a team of it is upserted.
    expect(await mutated((b) => {
      write(join(b, 'deletions.ndjson'), [{ kind: 'organization', name: otherOrg.organization }]);
      write(join(b, 'teams.ndjson'), [{ organization: otherOrg.organization, name: 'newcomers' }]);
      write(join(b, 'team_members.ndjson'), []);
    })).to.include(`teams.ndjson:1: organization ${JSON.stringify(otherOrg.organization)} does not exist`);
    // A member of a team the batch does not hold.
    const team = sourceRows('teams')[0]!;
    expect(await mutated((b) => { write(join(b, 'teams.ndjson'), []); write(join(b, 'team_members.ndjson'), [{ organization: team.organization, team: team.name, user: 'zed' }]); }))
      .to.include(`team_members.ndjson:1: team ${JSON.stringify(team.name)} does not exist in organization ${team.organization}`);
    // Deletion records of no kind, or missing their key; a line that is no JSON.
    expect(await mutated((b) => write(join(b, 'deletions.ndjson'), [{ kind: 'run', id: 'run-1' }, { kind: 'team', name: 'x' }, '{oops'])))
      .to.include.members([
        'deletions.ndjson:1: kind must be one of organization, project, workspace or team, not "run"',
        'deletions.ndjson:2: organization is required',
        'deletions.ndjson:3: a line must hold one JSON object',
      ]);
    // An organization id another organization holds.
    const [a, c] = sourceRows('organizations').filter((o) => o.id);
    if (a && c) {
      expect(await mutated((b) => write(join(b, 'organizations.ndjson'), [{ name: a.name, id: c.id }])))
        .to.include(`organizations.ndjson:1: organization id ${c.id} is already used by organization ${c.name}`);
    }
  });

  it('accepts an empty batch, and deleting what does not exist', async () => {
    const empty = join(dir, 'empty');
    cpSync(base, empty, { recursive: true });
    for (const f of ['workspaces', 'workspace_providers', 'workspace_modules', 'workspace_resources', 'teams', 'team_members', 'organizations', 'projects']) rmSync(join(empty, `${f}.ndjson`), { force: true });
    write(join(empty, 'deletions.ndjson'), [{ kind: 'workspace', id: 'ws-nothere' }, { kind: 'team', organization: 'nobody', name: 'none' }]);
    expect((await validateBatch(empty, directoryState(source))).errors).to.deep.equal([]);
    expect(await oracleAccepts(source, empty, join(dir, 'empty-after'))).to.equal(true);
  });

  it('asks a loaded snapshot for the same state as its source gives', async () => {
    const dataDir = join(dir, 'data');
    const { manifest } = await loadSnapshot(source, { dataDir });
    expect(manifest.sourceState).to.equal(true);
    const stored = await openSnapshotState(join(snapshotPath(dataDir, manifest.id), manifest.database!));
    try {
      const fromSource = directoryState(source);
      const ws = read(join(source, 'workspaces.ndjson'));
      const orgs = read(join(source, 'organizations.ndjson'));
      const projects = read(join(source, 'projects.ndjson'));
      const keys = {
        names: [...orgs.map((o) => o.name), 'no-such-org'],
        orgIds: [...orgs.filter((o) => o.id).map((o) => o.id), 'org-none'],
        projects: [...projects.map((p) => p.id), 'prj-none'],
        workspaces: [...ws.slice(0, 50).map((w) => w.id), 'ws-none'],
        named: [...ws.slice(0, 50).map((w) => `${w.organization}\n${w.name}`), 'acme-corp\nno-such-name'],
      };
      const both = async <T>(ask: (s: typeof fromSource) => Promise<Map<string, T>>) => {
        const [a, b] = [await ask(stored), await ask(fromSource)];
        expect([...a].sort(), 'stored = source').to.deep.equal([...b].sort());
        return a;
      };
      expect((await both((s) => s.organizations(keys.names))).size).to.equal(orgs.length);
      await both((s) => s.organizationIds(keys.orgIds));
      await both((s) => s.projects(keys.projects));
      expect((await both((s) => s.workspaces(keys.workspaces))).size).to.equal(50);
      await both((s) => s.workspacesNamed(keys.named));
      expect((await both((s) => s.workspacesOfProjects(keys.projects))).size).to.be.greaterThan(0);
      // And the validator gives the same answer from either.
      for (const batch of [base]) expect((await validateBatch(batch, stored)).errors).to.deep.equal((await validateBatch(batch, fromSource)).errors);
    } finally {
      stored.close();
    }
  });
});
