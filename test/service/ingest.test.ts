// `explorer apply` and the `explorer ingest` follower as a user runs them (child processes on the built CLI):
// rejected batches (exit 1, file:line, nothing changed), a batch without a snapshot to apply to, two writers
// at once, the spool's done/ and rejected/, and kill -9 at many moments: after restarts every batch is applied
// exactly once, and the result is that of a full load of the resulting source.
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSample } from '../../src/sample/sample.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { issueToken } from '../../src/access/tokens.js';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { startServer } from '../../src/server.js';
import { listSnapshotIds, readCurrentId, readManifest, snapshotPath } from '../../src/snapshots/snapshot-dir.js';
import { openStateStore } from '../../src/store/open-store.js';
import { acquireWriterLock } from '../../src/snapshots/writer-lock.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { BUILD_STEPS } from '../../src/snapshots/write/delta.js';
import { applyBatch as oracle } from '../helpers/batch-oracle.js';
import { cli } from '../helpers/cli.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('explorer apply and explorer ingest', function () {
  this.timeout(300_000);
  let dir: string;
  let source: string;
  let batches: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-ingest-'));
    source = join(dir, 'source');
    batches = join(dir, 'batches');
    await writeSample(source, { organizations: 4, workspaces: 120, seed: 31 });
    await writeSampleChanges(source, batches, { batches: 6, workspaces: 8, seed: 32 });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A fresh data directory with the source loaded. */
  const loaded = async (name: string) => {
    const dataDir = join(dir, name);
    await loadSnapshot(source, { dataDir, memoryLimit: '1GB', label: 'base' });
    return dataDir;
  };
  /** A copy of batch `n` (1-based) with `file` replaced by `lines`. */
  const broken = (name: string, n: number, file: string, lines: unknown[]) => {
    const out = join(dir, 'broken', name);
    cpSync(join(batches, `batch-000${n}`), out, { recursive: true });
    writeFileSync(join(out, `${file}.ndjson`), lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
    return out;
  };
  /**
   * The source loaded and batch-0001 applied once by `explorer apply`, with the snapshot it replaced and the
   * command's result: made once, checked by the first test and compared against by the kill -9 of apply.
   */
  let once: Promise<{ dataDir: string; before: string | null; r: Awaited<ReturnType<typeof cli>> }> | undefined;
  const appliedOnce = () => once ??= (async () => {
    const dataDir = await loaded('apply-ok');
    const before = await readCurrentId(dataDir);
    return { dataDir, before, r: await cli(['apply', join(batches, 'batch-0001')], dataDir) };
  })();
  const records = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);

  it('applies a batch, printing the new snapshot and what it upserted and deleted', async () => {
    const { dataDir, before, r } = await appliedOnce();
    expect(r.code, r.stderr).to.equal(0);
    const id = await readCurrentId(dataDir);
    expect(id).to.not.equal(before);
    expect(r.stdout).to.match(new RegExp(`^applied batch-0001 as snapshot ${id}: upserted \\d+ organizations, \\d+ projects, \\d+ workspaces, \\d+ teams; deleted .* in [\\d.]+ s\\n$`));
    const manifest = await readManifest(dataDir, id!);
    expect(manifest.label).to.equal('batch-0001');
    expect(manifest.base).to.equal(before);
    expect(manifest.batches!.map((b) => b.name)).to.deep.equal(['batch-0001']);
  });

  it('refuses a batch when there is no snapshot yet, saying to load first', async () => {
    const dataDir = join(dir, 'empty');
    const r = await cli(['apply', join(batches, 'batch-0001')], dataDir);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/no current snapshot: load a source first/);
  });

  describe('rejects a batch whole, naming file:line, and changes nothing', () => {
    let dataDir: string;
    before(async () => { dataDir = await loaded('rejects'); });
    const ws = () => records(join(batches, 'batch-0001', 'workspaces.ndjson'));
    const cases: Array<[string, () => string, RegExp]> = [
      ['a record that breaks a source rule', () => broken('rule', 1, 'workspaces', [{ ...ws()[0], created_at: 'yesterday' }, ...ws().slice(1)]), /^workspaces\.ndjson:1: /m],
      ['a line that is not JSON', () => broken('json', 1, 'workspaces', [...ws().slice(0, 1), '{not json', ...ws().slice(1)]), /^workspaces\.ndjson:2: /m],
      ['a workspace twice', () => broken('twice', 1, 'workspaces', [...ws(), ws()[0]]), /^workspaces\.ndjson:\d+: .*(twice|more than once|already|repeat)/mi],
      ['an upsert and a deletion of one workspace', () => broken('both', 1, 'deletions', [{ kind: 'workspace', id: ws()[0]!.id }]), /^(deletions|workspaces)\.ndjson:\d+: /m],
      ['a deletion of an unknown kind', () => broken('kind', 1, 'deletions', [{ kind: 'planet', name: 'x' }]), /^deletions\.ndjson:1: /m],
      ['a workspace moving to another organization', () => broken('move', 1, 'workspaces', [{ ...ws()[0], organization: 'no-such-org' }, ...ws().slice(1)]), /^workspaces\.ndjson:1: /m],
      ['a row of a workspace not in the batch', () => broken('row', 1, 'workspace_resources', [{ workspace_id: 'ws-notinthebatch', address: 'a.b', name: 'b', type: 'a', provider: 'p', billable: true, state_updated_at: '2026-01-01T00:00:00Z' }]), /^workspace_resources\.ndjson:1: /m],
      ['a member of a team not in the batch', () => broken('member', 1, 'team_members', [{ organization: 'acme-corp', team: 'no-such-team', user: 'x' }]), /^team_members\.ndjson:1: /m],
    ];
    for (const [what, make, where] of cases) {
      it(what, async () => {
        const batch = make();
        const before = { current: await readCurrentId(dataDir), ids: await listSnapshotIds(dataDir) };
        const r = await cli(['apply', batch], dataDir);
        expect(r.code, r.stdout).to.equal(1);
        expect(r.stderr).to.match(where);
        expect(r.stderr).to.match(/apply rejected: the batch has \d+ problems?; the current snapshot is unchanged/);
        expect({ current: await readCurrentId(dataDir), ids: await listSnapshotIds(dataDir) }).to.deep.equal(before);
        expect(readdirSync(join(dataDir, 'snapshots')).filter((n) => n.startsWith('.tmp-'))).to.deep.equal([]);
      });
    }
    it('counts every rejection where /metrics reads it', () => {
      expect(records(join(dataDir, 'snapshots', 'rejected-batches.ndjson'))).to.have.length(cases.length);
    });
  });

  it('waits for another writer, or exits 1 naming it when WRITER_WAIT_MS is up', async () => {
    const dataDir = await loaded('two-writers');
    const release = await acquireWriterLock(dataDir, 'load');
    const before = await readCurrentId(dataDir);
    process.env.WRITER_WAIT_MS = '300';
    const busy = await cli(['apply', join(batches, 'batch-0001')], dataDir).finally(() => { delete process.env.WRITER_WAIT_MS; });
    expect(busy.code).to.equal(1);
    expect(busy.stderr).to.match(/being written by load \(pid \d+/);
    expect(await readCurrentId(dataDir)).to.equal(before);
    const child = spawn(process.execPath, [CLI, 'apply', join(batches, 'batch-0001')], { env: { ...process.env, DATA_DIR: dataDir }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
    const code = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    // Once it says it waits, it has found the lock held: nothing changes until the lock is released.
    await until(() => /waiting for load/.test(stderr) || child.exitCode !== null, 60_000, 'apply to wait');
    await sleep(300);
    expect(await readCurrentId(dataDir)).to.equal(before);
    await release();
    expect(await code, stderr).to.equal(0);
    expect(stderr).to.match(/waiting for load/);
    expect(await readCurrentId(dataDir)).to.not.equal(before);
  });

  /** Runs `explorer ingest <spool>` as a child process. */
  const follower = (spool: string, dataDir: string, env: Record<string, string> = {}): { child: ChildProcess; lines: () => Record<string, any>[] } => {
    // At nice 0 unless a test says otherwise: these tests hold what a follower does, not its priority, and at
    // nice 10 beside the rest of the suite it got a tenth of a core or less.
    const child = spawn(process.execPath, [CLI, 'ingest', spool], { env: { ...process.env, DATA_DIR: dataDir, INGEST_NICE: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr!.resume();
    return { child, lines: () => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, any>) };
  };
  const exited = (child: ChildProcess) => new Promise<void>((r) => { if (child.exitCode !== null || child.signalCode !== null) r(); else child.once('exit', () => r()); });
  const until = async (test: () => boolean, ms: number, what: string) => {
    const end = Date.now() + ms;
    while (!test()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await sleep(50);
    }
  };

  it('follows a spool: applies batches in name order, moves them to done/, a bad one to rejected/ with problems.txt', async () => {
    const dataDir = await loaded('spool');
    const spool = join(dataDir, 'spool');
    mkdirSync(join(spool, 'incoming'), { recursive: true });
    cpSync(join(batches, 'batch-0001'), join(spool, 'incoming', 'batch-0001'), { recursive: true });
    cpSync(broken('spool-bad', 2, 'workspaces', ['{not json']), join(spool, 'incoming', 'batch-0002'), { recursive: true });
    const f = follower(spool, dataDir);
    try {
      await until(() => existsSync(join(spool, 'done', 'batch-0001')) && existsSync(join(spool, 'rejected', 'batch-0002')), 60_000, 'the first two batches');
      // A producer writes elsewhere in the spool and renames the complete batch into incoming/.
      cpSync(join(batches, 'batch-0003'), join(spool, 'writing'), { recursive: true });
      renameSync(join(spool, 'writing'), join(spool, 'incoming', 'batch-0003'));
      // The follower logs a batch after moving it to done/: wait for its line too, which may come a moment later.
      await until(() => existsSync(join(spool, 'done', 'batch-0003')) && f.lines().some((l) => l.batches?.includes('batch-0003')), 60_000, 'batch-0003');
      expect(readFileSync(join(spool, 'rejected', 'batch-0002', 'problems.txt'), 'utf8')).to.match(/^workspaces\.ndjson:1: /);
      expect(readdirSync(join(spool, 'incoming'))).to.deep.equal([]);
      const manifest = await readManifest(dataDir, (await readCurrentId(dataDir))!);
      expect(manifest.batches!.map((b) => b.name)).to.deep.equal(['batch-0001', 'batch-0003']);
      expect(manifest.label).to.equal('batch-0003');
      const logged = f.lines();
      expect(logged.map((l) => [l.message, l.batches])).to.deep.equal([['batch applied', ['batch-0001']], ['batch rejected', ['batch-0002']], ['batch applied', ['batch-0003']]]);
      const applied = logged[2]!;
      expect(applied.snapshot).to.equal(manifest.id);
      expect(applied.delay_seconds).to.be.a('number').and.at.least(0);
      expect(applied.upserted.workspaces).to.be.above(0);
      // Where the batch's time went: each step of its delta's build, in order, within the build's own seconds.
      expect(Object.keys(applied.steps)).to.deep.equal([...BUILD_STEPS]);
      const stepSeconds = Object.values(applied.steps as Record<string, number>);
      for (const seconds of stepSeconds) expect(seconds).to.be.a('number').and.at.least(0);
      expect(stepSeconds.reduce((a, b) => a + b, 0)).to.be.above(0).and.at.most(applied.phases.write + 0.01);
    } finally {
      f.child.kill('SIGTERM');
      await exited(f.child);
    }
    expect(f.child.exitCode).to.equal(0);
  });

  it('compacts the layers once idle, through kill -9 at many moments, and a server follows the same snapshot in its new form', async () => {
    const dataDir = await loaded('idle');
    const spool = join(dataDir, 'spool');
    mkdirSync(join(spool, 'incoming'), { recursive: true });
    for (const name of ['batch-0001', 'batch-0002']) cpSync(join(batches, name), join(spool, 'incoming', name), { recursive: true });
    // Every organization layered (none written whole into an overlay): deltas for the compaction to take in.
    const off = follower(spool, dataDir, { INGEST_COMPACT_IDLE_SECONDS: '0', BATCH_WHOLE_ROWS: '0' });
    // Both in one snapshot or one each (they wait together: coalesced), as long as both are applied.
    await until(() => readdirSync(join(spool, 'incoming')).length === 0 && off.lines().flatMap((l) => l.batches ?? []).length === 2, 60_000, 'the batches');
    off.child.kill('SIGTERM');
    await exited(off.child);
    const id = (await readCurrentId(dataDir))!;
    const layered = await readManifest(dataDir, id);
    expect(layered.delta, 'a newer delta to compact').to.be.a('string');
    const server = await startServer(loadConfig({ DATA_DIR: dataDir, PORT: '0', POOL_WORKERS: '1', SNAPSHOT_POLL_MS: '3600000', RATE_LIMIT_MAX: '1000000', RESPONSE_CACHE_MB: '0' }), silentLogger);
    try {
      const store = await openStateStore(loadConfig({ DATA_DIR: dataDir }));
      const org = layered.deltaOrganizations!.find((o) => layered.organizationKeys?.[o] !== undefined)!;
      const token = (await issueToken(store, { kind: 'organization', organization: org, description: 'idle' })).token;
      await store.close();
      const pages = async () => Promise.all(['workspaces', 'resources', 'providers'].map(async (type) => {
        const res = await fetch(`${server.url}/api/v2/organizations/${org}/explorer?type=${type}&sort=-${type === 'providers' ? 'workspace_count' : 'workspace_name'}`, { headers: { Authorization: `Bearer ${token}` } });
        return { status: res.status, snapshot: res.headers.get('x-explorer-snapshot'), modified: res.headers.get('last-modified'), body: await res.text() };
      }));
      const before = await pages();
      // Killed while it compacts, at growing delays from the moment its file appears (so that the kills land
      // in the compaction whatever the machine's load): a compaction killed midway changes nothing. Once one
      // got through its switch there is nothing left to compact.
      // The file a follower compacts into is named by its pid (one a killed follower left is another's).
      const writing = (pid: number) => readdirSync(join(dataDir, 'snapshots')).some((n) => n.startsWith(`.whole-${pid}.`));
      const switched = () => (JSON.parse(readFileSync(join(snapshotPath(dataDir, id), 'manifest.json'), 'utf8')) as { whole?: string }).whole !== undefined;
      let midway = 0;
      for (let delay = 0; delay <= 1400 && !switched(); delay += 350) {
        const f = follower(spool, dataDir, { INGEST_COMPACT_IDLE_SECONDS: '1' });
        await until(() => writing(f.child.pid!) || switched(), 60_000, 'the compaction to start');
        await sleep(delay);
        f.child.kill('SIGKILL');
        await exited(f.child);
        if (writing(f.child.pid!)) midway++;
        const m = await readManifest(dataDir, id);
        expect(m.delta === undefined ? m.whole !== undefined : m.major === layered.major && m.delta === layered.delta && m.whole === undefined, `after a kill at ${delay} ms`).to.equal(true);
      }
      expect(midway, 'kills that landed while the compaction wrote its file').to.be.above(0);
      // The next follower, once idle, compacts what a kill left uncompacted, or finishes a switch a kill cut
      // short (the replaced layers removed, CURRENT written again).
      const f = follower(spool, dataDir, { INGEST_COMPACT_IDLE_SECONDS: '1' });
      const tidy = () => {
        const m = JSON.parse(readFileSync(join(snapshotPath(dataDir, id), 'manifest.json'), 'utf8')) as { whole?: string };
        return m.whole !== undefined && readdirSync(snapshotPath(dataDir, id)).length === 4;
      };
      try {
        await until(tidy, 60_000, 'the compaction');
      } finally {
        f.child.kill('SIGTERM');
        await exited(f.child);
      }
      const whole = await readManifest(dataDir, id);
      expect(await readCurrentId(dataDir)).to.equal(id);
      expect([whole.major, whole.delta]).to.deep.equal([undefined, undefined]);
      expect(whole.wholeOrganizations).to.include.members(layered.deltaOrganizations!);
      expect(readdirSync(snapshotPath(dataDir, id)).sort()).to.deep.equal(['access.json', 'manifest.json', 'snapshot.duckdb', whole.whole]);
      // The server noticed CURRENT written again and reads the new form: the same answers, the same snapshot.
      await until(() => server.snapshots.current.status === 'ready' && server.snapshots.current.snapshot.manifest.whole !== undefined, 10_000, 'the server to follow');
      expect(await pages()).to.deep.equal(before);
    } finally {
      await server.shutdown();
    }
  });

  it('applies every batch exactly once through kill -9 of ingest at many moments, as a full load of the result answers', async () => {
    const dataDir = await loaded('crashes');
    const spool = join(dataDir, 'spool');
    mkdirSync(join(spool, 'incoming'), { recursive: true });
    const names = ['batch-0001', 'batch-0002', 'batch-0003', 'batch-0004'];
    for (const name of names) cpSync(join(batches, name), join(spool, 'incoming', name), { recursive: true });
    // Kill after a delay two fifths longer each time (from before the first apply starts to well into one, as
    // long as an apply takes on this machine), until the follower has drained incoming/ by itself.
    let kills = 0;
    for (let delay = 150; readdirSync(join(spool, 'incoming')).length > 0; delay = Math.round(delay * 1.4)) {
      const f = follower(spool, dataDir);
      await sleep(delay);
      f.child.kill('SIGKILL');
      await exited(f.child);
      kills++;
      if (kills > 20) throw new Error('the follower made no progress');
    }
    expect(kills).to.be.above(3);
    // One more run after the last kill moves what a crash left applied but not yet moved.
    const f = follower(spool, dataDir);
    try {
      await until(() => existsSync(join(spool, 'done')) && readdirSync(join(spool, 'done')).length >= names.length, 60_000, 'every batch in done/');
    } finally {
      f.child.kill('SIGTERM');
      await exited(f.child);
    }
    expect(readdirSync(join(spool, 'done')).sort()).to.deep.equal(names);
    const manifest = await readManifest(dataDir, (await readCurrentId(dataDir))!);
    expect(manifest.batches!.map((b) => b.name)).to.deep.equal(names);
    // The result is the source with each batch applied once: a full load of it has the same rows.
    let state = source;
    for (const [i, name] of names.entries()) {
      const next = join(dir, `crash-state-${i}`);
      oracle(state, join(batches, name), next);
      state = next;
    }
    const full = (await loadSnapshot(state, { dataDir: join(dir, 'crash-full'), memoryLimit: '1GB' })).manifest;
    expect(manifest.organizationRows).to.deep.equal(full.organizationRows);
    expect(manifest.counts).to.deep.include({ organizations: full.counts.organizations, projects: full.counts.projects, workspaces: full.counts.workspaces, teams: full.counts.teams, team_members: full.counts.team_members });
  });

  it('survives kill -9 of apply at many moments: the snapshot is the old or the new one, and apply again lands it', async () => {
    const dataDir = await loaded('apply-crashes');
    const batch = join(batches, 'batch-0001');
    const first = await readCurrentId(dataDir);
    // Before it starts, while it starts, and well into the apply.
    for (let delay = 100; delay < 2500; delay += 1100) {
      const child = spawn(process.execPath, [CLI, 'apply', batch], { env: { ...process.env, DATA_DIR: dataDir }, stdio: 'ignore' });
      await sleep(delay);
      child.kill('SIGKILL');
      await exited(child);
      const current = await readCurrentId(dataDir);
      const manifest = await readManifest(dataDir, current!);
      expect(current === first || manifest.batches?.at(-1)?.name === 'batch-0001').to.equal(true);
    }
    const r = await cli(['apply', batch], dataDir);
    expect(r.code, r.stderr).to.equal(0);
    const manifest = await readManifest(dataDir, (await readCurrentId(dataDir))!);
    // Applying a batch again is allowed (a producer may re-send) and changes nothing but adds its record.
    expect(manifest.batches!.every((b) => b.name === 'batch-0001')).to.equal(true);
    const { dataDir: once, r: applied } = await appliedOnce();
    expect(applied.code, applied.stderr).to.equal(0);
    expect(manifest.organizationRows).to.deep.equal((await readManifest(once, (await readCurrentId(once))!)).organizationRows);
  });
});
