// Batches that wait together are applied as one snapshot (write/coalesce.ts), and that snapshot answers what
// the batches applied one by one make: the same batches rejected (one that alone breaks a rule is rejected even
// when a later batch mends it), and every query, export and summary of every organization the same bytes.
// The follower takes a spool holding every batch at once; beside it, a second data directory takes each
// batch through `apply` alone.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { catalogFor } from '../../src/catalog/catalog.js';
import { writeSample } from '../../src/sample/sample.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { type RunningServer } from '../../src/server.js';
import { readCurrentId, readManifest } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch, BatchRejectedError } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { writeEdgeBatch } from '../helpers/edge-batches.js';
import { comparableAnswer, comparedRoutes } from '../helpers/compare-routes.js';
import { applyBatch as oracle } from '../helpers/batch-oracle.js';
import { twinServers } from '../helpers/twin-servers.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Row = Record<string, any>;
const read = (dir: string, file: string): Row[] => {
  const path = join(dir, `${file}.ndjson`);
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Row) : [];
};
const write = (dir: string, file: string, rows: (Row | string)[]) => {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${file}.ndjson`), rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n');
};

describe('batches waiting together apply as one snapshot', function () {
  this.timeout(600_000);
  let dir: string;
  const servers: RunningServer[] = [];
  after(async () => {
    await Promise.all(servers.map((s) => s.shutdown()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers as the batches applied one by one, rejecting the same ones', async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-coalesce-'));
    const s0 = join(dir, 's0');
    await writeSample(s0, { organizations: 5, workspaces: 160, seed: 41 });
    const keep = read(s0, 'organizations')[0]!.name as string;
    await writeSampleChanges(s0, join(dir, 'sampled'), { batches: 3, workspaces: 12, seed: 42 });
    const sampled = (n: number) => join(dir, 'sampled', `batch-000${n}`);

    // Batches that touch what earlier ones touched, in the order they arrive.
    const b1 = read(sampled(1), 'workspaces');
    const again = join(dir, 'b-again');
    // The first batch's workspaces upserted again, renamed, with rows of their own (fewer of them).
    write(again, 'workspaces', b1.slice(0, 4).map((w) => ({ ...w, name: `${w.name}-again` })));
    for (const f of ['workspace_providers', 'workspace_modules', 'workspace_resources']) {
      const rows = read(sampled(1), f).filter((r) => b1.slice(0, 4).some((w) => w.id === r.workspace_id));
      if (rows.length > 0) write(again, f, rows.filter((_, i) => i % 2 === 0));
    }
    const gone = join(dir, 'b-gone');
    write(gone, 'deletions', b1.slice(4, 6).map((w) => ({ kind: 'workspace', id: w.id })));
    const bad = join(dir, 'b-bad');
    write(bad, 'workspaces', ['{not json']);
    // A project deleted while workspaces of it remain: rejected alone, though the next batch deletes them.
    const projects = read(s0, 'projects');
    const workspaces = read(s0, 'workspaces');
    const members = (p: Row) => workspaces.filter((w) => w.project_id === p.id).length;
    const project = projects.filter((p) => p.organization !== keep).sort((x, y) => members(y) - members(x))[0]!;
    expect(members(project)).to.be.above(2);
    const early = join(dir, 'b-early');
    write(early, 'deletions', [{ kind: 'project', id: project.id }]);
    const mender = join(dir, 'b-mender');
    write(mender, 'deletions', workspaces.filter((w) => w.project_id === project.id).map((w) => ({ kind: 'workspace', id: w.id })));
    // A new workspace, then the same one in another organization: a move, rejected after the first (though
    // alone against the snapshot it would be a new workspace, and coalesced the first would vanish under it).
    const model = workspaces.find((w) => w.organization === keep)!;
    const other = projects.find((p) => p.organization !== keep)!;
    const created = join(dir, 'b-new');
    write(created, 'workspaces', [{ ...model, id: 'ws-CoalesceNew1', name: 'coalesce-new' }]);
    const moved = join(dir, 'b-moved');
    write(moved, 'workspaces', [{ ...model, id: 'ws-CoalesceNew1', name: 'coalesce-new', organization: other.organization, project_id: other.id }]);
    const order: [string, string][] = [
      ['0001-sampled', sampled(1)], ['0002-sampled', sampled(2)], ['0003-new', created], ['0004-again', again], ['0005-gone', gone],
      ['0006-moved', moved], ['0007-bad', bad], ['0008-sampled', sampled(3)], ['0009-early', early], ['0010-mender', mender],
    ];
    const rejecting = ['0006-moved', '0007-bad', '0009-early'];
    // An edge batch (it deletes an organization: applied alone), then a last one on top of it.
    let state = s0;
    for (const [name, batch] of order) {
      if (rejecting.includes(name)) continue;
      oracle(state, batch, join(dir, `state-${name}`));
      state = join(dir, `state-${name}`);
    }
    writeEdgeBatch(state, join(dir, 'b-edge'), 1, keep);
    order.push(['0011-edge', join(dir, 'b-edge')]);
    oracle(state, join(dir, 'b-edge'), join(dir, 'state-edge'));
    writeEdgeBatch(join(dir, 'state-edge'), join(dir, 'b-edge-2'), 2, keep);
    oracle(join(dir, 'state-edge'), join(dir, 'b-edge-2'), join(dir, 'state-edge-2'));
    // Two more on top of what the edge batches left, which share a snapshot again.
    await writeSampleChanges(join(dir, 'state-edge-2'), join(dir, 'after'), { batches: 2, workspaces: 9, seed: 43 });
    order.push(['0012-edge', join(dir, 'b-edge-2')], ['0013-after', join(dir, 'after', 'batch-0001')], ['0014-after', join(dir, 'after', 'batch-0002')]);

    const singles = join(dir, 'singles');
    const together = join(dir, 'together');
    await loadSnapshot(s0, { dataDir: singles, memoryLimit: '1GB', label: 'base' });
    await loadSnapshot(s0, { dataDir: together, memoryLimit: '1GB', label: 'base' });
    const rejected: string[] = [];
    const problems: string[] = [];
    for (const [name, batch] of order) cpSync(batch, join(dir, 'named', name), { recursive: true });
    // Every batch in incoming/ before the follower starts; the batches go through `apply` one by one on the
    // other data directory meanwhile.
    const spool = join(together, 'spool');
    for (const [name] of order) cpSync(join(dir, 'named', name), join(spool, 'incoming', name), { recursive: true });
    const follower = spawn(process.execPath, [CLI, 'ingest', spool], { env: { ...process.env, DATA_DIR: together, INGEST_COMPACT_IDLE_SECONDS: '0', INGEST_NICE: '0' }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    follower.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
    try {
      for (const [name] of order) {
        await applyBatch(join(dir, 'named', name), { dataDir: singles, memoryLimit: '1GB', foldWorkspaces: 15 }).catch((e) => {
          if (!(e instanceof BatchRejectedError)) throw e;
          rejected.push(name);
          problems.push(`${name}: ${e.errors.join('; ')}`);
        });
      }
      expect(rejected, problems.join('\n')).to.deep.equal(rejecting);
      // A bound, not a timing: on a machine the rest of the suite kept busy a batch of 23 workspaces once took 40 s.
      for (const end = Date.now() + 300_000; readdirSync(join(spool, 'incoming')).length > 0;) {
        if (Date.now() > end) throw new Error(`the follower did not drain incoming/: ${out}`);
        await sleep(100);
      }
      await sleep(300);
    } finally {
      follower.kill('SIGTERM');
      await new Promise((r) => { if (follower.exitCode !== null) r(null); else follower.once('exit', r); });
    }
    const logged = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Row);
    expect(readdirSync(join(spool, 'rejected')).sort()).to.deep.equal(rejected);
    expect(readdirSync(join(spool, 'done')).sort()).to.deep.equal(order.map(([n]) => n).filter((n) => !rejected.includes(n)));
    const applied = logged.filter((l) => l.message === 'batch applied');
    // Fewer snapshots than batches: some shared one, and each names its batches' delays.
    expect(applied.some((l) => l.batches.length > 1), out).to.equal(true);
    for (const l of applied) expect(l.delays_seconds ?? [l.delay_seconds]).to.have.length(l.batches.length);
    const manifest = await readManifest(together, (await readCurrentId(together))!);
    expect(manifest.batches!.map((b) => b.name)).to.deep.equal(order.map(([n]) => n).filter((n) => !rejected.includes(n)));
    expect(manifest.label).to.equal('0014-after');
    const single = await readManifest(singles, (await readCurrentId(singles))!);
    expect(manifest.counts).to.deep.equal(single.counts);
    expect(manifest.organizationRows).to.deep.equal(single.organizationRows);

    // Every organization that ever existed answers the same on both.
    const orgs = new Set<string>();
    for (const d of [s0, state, join(dir, 'state-edge'), join(dir, 'state-edge-2')]) for (const o of read(d, 'organizations')) orgs.add(o.name);
    const { a, b, tokens } = await twinServers(singles, together, orgs, 'coalesce');
    servers.push(a, b);
    let compared = 0;
    // Two organizations at a time: two requests at once on each server, within its workers' slots.
    const pending = [...orgs];
    await Promise.all([0, 1].map(async () => {
      for (let org = pending.shift(); org !== undefined; org = pending.shift()) {
        // Snapshot ids (which differ: one side made more snapshots) put aside.
        for (const path of comparedRoutes(org)) {
          const [x, y] = await Promise.all([comparableAnswer(a, path, tokens.get(org)), comparableAnswer(b, path, tokens.get(org))]);
          expect(x.status, path).to.be.below(500);
          expect(y, path).to.deep.equal(x);
          compared++;
        }
      }
    }));
    expect(compared).to.equal(orgs.size * catalogFor().views.length * 5);
  });
});
