// Sample history: `sample --days N` writes N sources a day apart, each valid on its own, in which upgrades
// roll out, drift comes and goes and workspaces are created and deleted; `load-series` loads them in order.
import { expect } from 'chai';
import { appendFile, cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SAMPLE_FILES, writeSample, type SampleFile } from '../../src/sample/sample.js';
import { dayName, writeSampleSeries, type DaySummary } from '../../src/sample/sample-series.js';
import { cli } from '../helpers/cli.js';

type Row = Record<string, unknown>;
interface Day {
  rows: Record<SampleFile, Row[]>;
  lines: Record<SampleFile, string[]>;
}



async function readDay(dir: string): Promise<Day> {
  const rows = {} as Day['rows'];
  const lines = {} as Day['lines'];
  for (const f of SAMPLE_FILES) {
    const text = await readFile(join(dir, `${f}.ndjson`), 'utf8');
    lines[f] = text.split('\n').slice(0, -1);
    rows[f] = lines[f].map((l) => JSON.parse(l) as Row);
  }
  return { rows, lines };
}

async function sameFiles(a: string, b: string): Promise<string[]> {
  const differ: string[] = [];
  for (const f of SAMPLE_FILES) {
    const [x, y] = await Promise.all([readFile(join(a, `${f}.ndjson`)), readFile(join(b, `${f}.ndjson`))]);
    if (!x.equals(y)) differ.push(f);
  }
  return differ;
}

/** Snapshot manifests under a data directory, in load order. */
async function manifests(dataDir: string): Promise<Array<{ id: string; label?: string; createdAt: string; counts: Record<string, number> }>> {
  const root = join(dataDir, 'snapshots');
  const ids = (await readdir(root)).filter((n) => !n.startsWith('.') && n !== 'CURRENT');
  const all = await Promise.all(ids.map(async (id) => JSON.parse(await readFile(join(root, id, 'manifest.json'), 'utf8'))));
  return all.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
}

const RELEASE = /^\d+(\.\d+)*$/;
function compareRelease(a: string, b: string): number {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}
const newest = (versions: unknown[]) =>
  versions.filter((v): v is string => typeof v === 'string' && RELEASE.test(v)).sort(compareRelease).at(-1)!;
const AWS = 'registry.terraform.io/hashicorp/aws';

/** Problems with rules the loader does not check: unique ids and run ids, counts that match the rows, times in order. */
function consistency(day: Day): string[] {
  const problems: string[] = [];
  const ids = new Set<string>();
  const names = new Set<string>();
  const runs = new Set<string>();
  for (const w of day.rows.workspaces) {
    const id = w.id as string;
    if (ids.has(id)) problems.push(`workspace ${id} twice`);
    ids.add(id);
    const name = `${String(w.organization)}\n${String(w.name)}`;
    if (names.has(name)) problems.push(`name ${String(w.name)} twice in ${String(w.organization)}`);
    names.add(name);
    if ((w.updated_at as string) < (w.created_at as string)) problems.push(`${id} updated before it was created`);
    const r = w.current_run as Row | undefined;
    if (r) {
      if (runs.has(r.id as string)) problems.push(`run ${String(r.id)} twice`);
      runs.add(r.id as string);
      if (typeof r.applied_at === 'string' && r.applied_at > (w.updated_at as string)) problems.push(`${id} applied after its update`);
    }
  }
  const perWs = new Map<string, { count: number; billable: number; addresses: Set<string> }>();
  for (const r of day.rows.workspace_resources) {
    const ws = r.workspace_id as string;
    if (!ids.has(ws)) problems.push(`resource of missing workspace ${ws}`);
    const c = perWs.get(ws) ?? { count: 0, billable: 0, addresses: new Set<string>() };
    perWs.set(ws, c);
    if (c.addresses.has(r.address as string)) problems.push(`address ${String(r.address)} twice in ${ws}`);
    c.addresses.add(r.address as string);
    c.count++;
    if (r.billable === true) c.billable++;
  }
  for (const f of ['workspace_providers', 'workspace_modules'] as const) {
    for (const r of day.rows[f]) if (!ids.has(r.workspace_id as string)) problems.push(`${f} row of missing workspace ${String(r.workspace_id)}`);
  }
  for (const w of day.rows.workspaces) {
    const c = perWs.get(w.id as string);
    if (((w.resource_count as number | undefined) ?? 0) !== (c?.count ?? 0)) problems.push(`${String(w.id)}: resource_count ${String(w.resource_count)}, ${c?.count ?? 0} rows`);
    if (((w.current_rum_count as number | undefined) ?? 0) !== (c?.billable ?? 0)) problems.push(`${String(w.id)}: current_rum_count ${String(w.current_rum_count)}, ${c?.billable ?? 0} billable`);
  }
  return problems.slice(0, 20);
}

/** Each workspace's rows of a per-workspace file, as lines. */
function rowsByWorkspace(day: Day, file: SampleFile): Map<string, string> {
  const m = new Map<string, string>();
  day.rows[file].forEach((r, i) => {
    const ws = r.workspace_id as string;
    m.set(ws, `${m.get(ws) ?? ''}${day.lines[file][i]}\n`);
  });
  return m;
}

const OPTS = { organizations: 3, workspaces: 600, seed: 11 };
const DAYS = 5;

describe('sample history (sample --days, load-series)', function () {
  this.timeout(120_000);
  let root: string;
  let dir: string;
  let summaries: DaySummary[];
  let days: Day[];
  /** The series loaded once by `load-series` into `loadedDir`: the days' loads, and the command's answer. */
  let loadedDir: string;
  let loaded: Awaited<ReturnType<typeof cli>>;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'sample-series-test-'));
    dir = join(root, 'series');
    summaries = await writeSampleSeries(dir, { ...OPTS, days: DAYS });
    days = [];
    for (const s of summaries) days.push(await readDay(s.dir));
    loadedDir = join(root, 'cli-data');
    loaded = await cli(['load-series', dir], loadedDir);
  });

  after(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('writes day-01 … day-N, the first byte for byte the plain sample', async () => {
    const names = Array.from({ length: DAYS }, (_, i) => `day-0${i + 1}`);
    expect((await readdir(dir)).sort()).to.deep.equal(names);
    expect(summaries.map((s) => s.name)).to.deep.equal(names);
    const plain = join(root, 'plain');
    await writeSample(plain, OPTS);
    expect(await sameFiles(plain, join(dir, 'day-01'))).to.deep.equal([]);
    const one = join(root, 'one-day');
    const single = await writeSampleSeries(one, { ...OPTS, days: 1 });
    expect(single.map((s) => s.changes)).to.deep.equal([null]);
    expect(await readdir(one)).to.deep.equal(['day-01']);
    expect(await sameFiles(plain, join(one, 'day-01'))).to.deep.equal([]);
    expect([dayName(3, 9), dayName(12, 99), dayName(7, 100), dayName(100, 100), dayName(1, 1000)])
      .to.deep.equal(['day-03', 'day-12', 'day-007', 'day-100', 'day-0001']);
  });

  it('writes days that each load on their own and keep every rule of a source', async () => {
    // load-series (before()) loads each day as a snapshot of its own, with every row of the day.
    expect(loaded.code, loaded.stderr).to.equal(0);
    const byLabel = new Map((await manifests(loadedDir)).map((m) => [m.label, m]));
    for (const [i, s] of summaries.entries()) {
      expect(consistency(days[i]!), s.name).to.deep.equal([]);
      const manifest = byLabel.get(s.name);
      expect(manifest, s.name).to.not.equal(undefined);
      for (const f of SAMPLE_FILES) {
        expect(manifest!.counts[f], `${s.name} ${f}`).to.equal(days[i]!.rows[f].length);
        expect(s.counts[f], `${s.name} ${f}`).to.equal(days[i]!.rows[f].length);
      }
    }
  });

  it('is deterministic for a seed, whatever the number of days, and differs for another seed', async () => {
    const again = join(root, 'again');
    await writeSampleSeries(again, { ...OPTS, days: 3 });
    for (const name of ['day-01', 'day-02', 'day-03']) expect(await sameFiles(join(again, name), join(dir, name)), name).to.deep.equal([]);
    const other = join(root, 'other-seed');
    await writeSampleSeries(other, { ...OPTS, seed: 12, days: 2 });
    expect(await sameFiles(join(other, 'day-02'), join(dir, 'day-02'))).to.include('workspaces');
  });

  it('rolls out the newest engine, the next AWS provider major and newer modules, a little more each day', () => {
    const last = days.at(-1)!;
    const engine = newest(last.rows.workspaces.map((w) => w.engine_version));
    const engineShare = days.map((d) => d.rows.workspaces.filter((w) => w.engine_version === engine).length / d.rows.workspaces.length);
    const awsMajor = Number(newest(last.rows.workspace_providers.filter((r) => r.source === AWS).map((r) => r.version)).split('.')[0]);
    const awsShare = days.map((d) => {
      const aws = d.rows.workspace_providers.filter((r) => r.source === AWS);
      const adopted = new Set(aws.filter((r) => Number((r.version as string).split('.')[0]) === awsMajor).map((r) => r.workspace_id));
      return adopted.size / new Set(aws.map((r) => r.workspace_id)).size;
    });
    const newestModule = new Map<string, string>();
    for (const r of last.rows.workspace_modules) {
      const v = newest([r.version, newestModule.get(r.source as string)]);
      if (v !== undefined) newestModule.set(r.source as string, v);
    }
    const modulesOnNewest = days.map((d) => d.rows.workspace_modules.filter((r) => r.version !== undefined && r.version === newestModule.get(r.source as string)).length);
    for (let i = 1; i < days.length; i++) {
      expect(engineShare[i], `engine ${engine} on day ${i + 1}: ${engineShare.join(', ')}`).to.be.above(engineShare[i - 1]!);
      expect(awsShare[i], `aws ${awsMajor}.x on day ${i + 1}: ${awsShare.join(', ')}`).to.be.above(awsShare[i - 1]!);
      expect(modulesOnNewest[i], `modules on their newest version, day ${i + 1}: ${modulesOnNewest.join(', ')}`).to.be.above(modulesOnNewest[i - 1]!);
    }
    // A rollout, not a switch: most workspaces are still where they were.
    expect(engineShare.at(-1)! - engineShare[0]!).to.be.within(0.005, 0.2);
    expect(awsShare.at(-1)! - awsShare[0]!).to.be.within(0.005, 0.2);
  });

  it('creates and deletes workspaces, with all their rows, and lets drift appear and clear', () => {
    const ids = days.map((d) => new Set(d.rows.workspaces.map((w) => w.id as string)));
    const first = ids[0]!;
    const last = ids.at(-1)!;
    const deleted = [...first].filter((id) => !last.has(id));
    const created = [...last].filter((id) => !first.has(id));
    expect(deleted.length, 'deleted by the last day').to.be.at.least(2);
    expect(created.length, 'created by the last day').to.be.at.least(2);
    const lastDay = days.at(-1)!;
    for (const f of ['workspace_providers', 'workspace_modules', 'workspace_resources'] as const) {
      const rowsOf = new Set(lastDay.rows[f].map((r) => r.workspace_id));
      expect(deleted.filter((id) => rowsOf.has(id)), `${f} rows of deleted workspaces`).to.deep.equal([]);
    }
    const newOnes = lastDay.rows.workspaces.filter((w) => created.includes(w.id as string));
    const lastOfDay1 = days[0]!.rows.workspaces.reduce((m, w) => ((w.updated_at as string) > m ? (w.updated_at as string) : m), '');
    for (const w of newOnes) expect(Date.parse(w.created_at as string), String(w.name)).to.be.above(Date.parse(lastOfDay1));
    expect(newOnes.some((w) => ((w.resource_count as number | undefined) ?? 0) > 0), 'a new workspace with resources').to.equal(true);

    let appeared = 0;
    let cleared = 0;
    for (let i = 1; i < days.length; i++) {
      const before = new Map(days[i - 1]!.rows.workspaces.map((w) => [w.id, (w.drift as Row | undefined)?.drifted]));
      for (const w of days[i]!.rows.workspaces) {
        const was = before.get(w.id);
        const is = (w.drift as Row | undefined)?.drifted;
        if (was !== true && is === true) appeared++;
        if (was === true && is === false) {
          cleared++;
          expect((w.drift as Row).resources_drifted).to.equal(0);
        }
      }
    }
    expect(appeared, 'drift appeared').to.be.at.least(2);
    expect(cleared, 'drift cleared').to.be.at.least(2);
  });

  it('makes every kind of change every day in small estates too (a creation, a deletion, drift appearing and clearing, each upgrade)', async () => {
    for (const shape of [{ organizations: 3, workspaces: 300, seed: 5 }, { organizations: 2, workspaces: 150, seed: 6 }, { organizations: 3, workspaces: 300, seed: 1 }]) {
      const written = await writeSampleSeries(join(root, `small-${shape.seed}`), { ...shape, days: 3 });
      for (const day of written.slice(1)) {
        const c = day.changes!;
        const label = `${JSON.stringify(shape)} ${day.name}`;
        for (const kind of ['created', 'deleted', 'driftAppeared', 'driftCleared', 'engineUpgrades', 'providerUpgrades', 'moduleUpgrades'] as const) {
          expect(c[kind], `${label}: ${kind}`).to.be.at.least(1);
        }
      }
    }
  });

  it('changes about 2 % of the workspaces a day, moving their updated_at forward and leaving the rest as they were', () => {
    for (let i = 1; i < days.length; i++) {
      const before = days[i - 1]!;
      const after = days[i]!;
      const label = `day ${i} → ${i + 1}`;
      const old = new Map(before.rows.workspaces.map((w, j) => [w.id as string, { w, line: before.lines.workspaces[j]! }]));
      const now = new Map(after.rows.workspaces.map((w, j) => [w.id as string, { w, line: after.lines.workspaces[j]! }]));
      const added = [...now.keys()].filter((id) => !old.has(id));
      const removed = [...old.keys()].filter((id) => !now.has(id));
      const changed = [...now.keys()].filter((id) => old.has(id) && old.get(id)!.line !== now.get(id)!.line);
      const share = (added.length + removed.length + changed.length) / old.size;
      expect(share, label).to.be.within(0.01, 0.05);
      expect(summaries[i]!.changes?.workspaces, label).to.equal(added.length + removed.length + changed.length);
      expect(summaries[i]!.changes?.created, label).to.equal(added.length);
      expect(summaries[i]!.changes?.deleted, label).to.equal(removed.length);

      // Every change happened after anything the day before had seen.
      const latest = before.rows.workspaces.reduce((m, w) => ((w.updated_at as string) > m ? (w.updated_at as string) : m), '');
      for (const id of [...changed, ...added]) expect(Date.parse(now.get(id)!.w.updated_at as string), `${label} ${id}`).to.be.above(Date.parse(latest));

      // A workspace whose line did not change kept every row; rows changed only where their workspace did.
      const unchanged = [...now.keys()].filter((id) => old.has(id) && !changed.includes(id));
      let rowsChanged = 0;
      for (const f of ['workspace_providers', 'workspace_modules', 'workspace_resources'] as const) {
        const a = rowsByWorkspace(before, f);
        const b = rowsByWorkspace(after, f);
        for (const id of unchanged) expect(b.get(id), `${label} ${f} of ${id}`).to.equal(a.get(id));
        rowsChanged += changed.filter((id) => a.get(id) !== b.get(id)).length;
      }
      expect(rowsChanged, `${label}: upgrades show in the rows`).to.be.above(0);
      for (const f of ['organizations', 'projects', 'teams', 'team_members'] as const) expect(after.lines[f], `${label} ${f}`).to.deep.equal(before.lines[f]);
    }
  });

  it('loads every day oldest first with its name as label (load-series)', async () => {
    const dataDir = loadedDir;
    expect(loaded.code, loaded.stderr).to.equal(0);
    const lines = loaded.stdout.trim().split('\n');
    expect(lines.map((l) => /^loaded (day-\d+) as snapshot \S+: 3 organizations, (\d+) workspaces/.exec(l)?.slice(1)))
      .to.deep.equal(summaries.map((s) => [s.name, String(s.counts.workspaces)]));
    const loadedManifests = await manifests(dataDir);
    expect(loadedManifests.map((m) => m.label)).to.deep.equal(summaries.map((s) => s.name));
    expect(loadedManifests.map((m) => m.id)).to.deep.equal(loadedManifests.map((m) => m.id).sort());
    const current = (await readFile(join(dataDir, 'snapshots', 'CURRENT'), 'utf8')).trim();
    expect(current).to.equal(loadedManifests.at(-1)!.id);
  });

  it('stops at the first rejected day with the loader\'s messages (load-series)', async () => {
    const bad = join(root, 'bad-series');
    await cp(dir, bad, { recursive: true });
    await appendFile(join(bad, 'day-03', 'workspaces.ndjson'), '{"id":"ws-broken","organization":"acme-corp"}\n');
    const dataDir = join(root, 'bad-data');
    const loaded = await cli(['load-series', bad], dataDir);
    expect(loaded.code).to.equal(1);
    const line = days[2]!.rows.workspaces.length + 1;
    expect(loaded.stderr).to.include(`workspaces.ndjson:${line}: project_id is required`);
    expect(loaded.stderr).to.match(/stopped at day-03/);
    expect(loaded.stdout.trim().split('\n').map((l) => l.split(' ')[1])).to.deep.equal(['day-01', 'day-02']);
    expect((await manifests(dataDir)).map((m) => m.label)).to.deep.equal(['day-01', 'day-02']);
    expect((await cli(['load-series', join(root, 'nowhere')], dataDir)).code).to.equal(1);
    expect((await cli(['load-series'], dataDir)).code).to.equal(2);
  });

  it('writes the same series from the command line, and the plain sample without --days', async () => {
    const args = ['--organizations', '3', '--workspaces', '600', '--seed', '11'];
    const series = join(root, 'cli-series');
    const wrote = await cli(['sample', series, ...args, '--days', '2'], root);
    expect(wrote.code, wrote.stderr).to.equal(0);
    expect(wrote.stdout.trim().split('\n')).to.have.length(2);
    expect(await readdir(series)).to.deep.equal(['day-01', 'day-02']);
    for (const name of ['day-01', 'day-02']) expect(await sameFiles(join(series, name), join(dir, name)), name).to.deep.equal([]);
    const plain = join(root, 'cli-plain');
    const wrotePlain = await cli(['sample', plain, ...args], root);
    expect(wrotePlain.code, wrotePlain.stderr).to.equal(0);
    expect((await readdir(plain)).sort()).to.deep.equal(SAMPLE_FILES.map((f) => `${f}.ndjson`).sort());
    expect(await sameFiles(plain, join(dir, 'day-01'))).to.deep.equal([]);
    for (const bad of ['0', 'x', '-1']) expect((await cli(['sample', join(root, 'no'), ...args, '--days', bad], root)).code, bad).to.equal(2);
  });
});
