// What a sync compares the upstream with: the digests it kept, only while the snapshot still holds what they
// describe, and otherwise what the snapshot holds, read back in the views' form. A reload of the mirror's own
// source brings back every synced organization, changed upstream or not; another address of the same
// upstream, or a mirror whose kept digests were removed, makes no snapshot when nothing changed; a mirror
// loaded from the upstream's own source finds nothing to change; and the views of one run are all read at
// one upstream snapshot, so that a change upstream makes exactly one snapshot here, also when the upstream
// switches between two of a run's requests; a run whose snapshot the upstream no longer keeps reads again.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { writeSample } from '../../src/sample/sample.js';
import type { RunningServer } from '../../src/server.js';
import { listSnapshotIds, readCurrentId } from '../../src/snapshots/snapshot-dir.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { changeUpstream as applyUpstream, runSync, sameAnswers, spawnSync, startMirror, upstreamForTests, type Upstream } from '../helpers/sync-upstream.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const typeOf = (path: string) => new URL(path, 'http://x').searchParams.get('type');
const namesOf = (source: string) => readFileSync(join(source, 'organizations.ndjson'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).name as string);
const line = (out: string, org: string) => out.split('\n').find((l) => l.startsWith(`${org}: read`)) ?? '';

describe('explorer sync compares with what the snapshot holds', function () {
  this.timeout(300_000);
  let dir: string;
  let up: Upstream;
  let changes = 0;
  const servers: RunningServer[] = [];
  upstreamForTests('sync-held', { organizations: 4, workspaces: 120, seed: 91 }, servers, (d, u) => { dir = d; up = u; });

  /** A batch of generated changes to `org`'s workspaces applied upstream, which then serves it. */
  const changeUpstream = (org: string, workspaces: number) =>
    applyUpstream(up, join(dir, `changes-${++changes}`), { workspaces, seed: 90 + changes, organizations: [org] });
  const sync = (org: string, down: string, from = up.server.url) => runSync(['--from', from, '--organization', org], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)! });
  const load = (source: string, down: string) => promisify(execFile)(process.execPath, [CLI, 'load', source], { env: { ...process.env, DATA_DIR: down } });
  const mirrorOf = async (down: string) => {
    const mirror = await startMirror(up, down);
    servers.push(mirror);
    return mirror;
  };

  it('brings back every synced organization after a load of the same source, changed upstream or not', async () => {
    // The mirror's own source holds other organizations than the two it syncs.
    const own = join(dir, 'own-source');
    const onlyUpstream = () => up.organizations.filter((o) => !namesOf(own).includes(o));
    for (let seed = 92; seed === 92 || (seed < 120 && onlyUpstream().length < 2); seed++) {
      rmSync(own, { recursive: true, force: true });
      await writeSample(own, { organizations: 2, workspaces: 60, seed });
    }
    const [b, c] = onlyUpstream();
    expect(c, 'two organizations only the upstream has').to.be.a('string');
    const down = join(dir, 'reload');
    await load(own, down);
    const token = up.tokens.get(b!)!;
    for (const org of [b!, c!]) expect((await sync(org, down)).stdout).to.match(/snapshot \d{8}T/);

    await changeUpstream(c!, 10);
    await load(own, down);
    const mirror = await mirrorOf(down);
    const gone = await fetch(`${mirror.url}/api/v2/organizations/${b}/explorer?type=workspaces`, { headers: { Authorization: `Bearer ${token}` } });
    expect(gone.status, 'the load replaced what the syncs wrote').to.equal(404);
    for (const org of [b!, c!]) {
      const again = await sync(org, down);
      expect(again.code, again.stderr).to.equal(0);
      expect(line(again.stdout, org), org).to.match(/snapshot \d{8}T/);
    }
    await sameAnswers(up.server, mirror, [b!, c!], up.tokens);
  });

  it('makes no snapshot when nothing changed: from another address of the upstream, without its kept digests, or loaded from the upstream\'s own source', async () => {
    const org = up.organizations[0]!;
    const down = join(dir, 'addresses');
    expect((await sync(org, down)).stdout).to.match(/snapshot \d{8}T/);
    const held = await listSnapshotIds(down);

    // The same upstream by another address (a proxy that passes everything on): no digests kept for that host.
    const proxy = await startFaultProxy(up.server.url, () => 'pass');
    try {
      const other = await sync(org, down, proxy.url);
      expect(other.code, other.stderr).to.equal(0);
      expect(line(other.stdout, org)).to.contain('upserted 0, deleted 0').and.to.contain('unchanged');
    } finally {
      await proxy.close();
    }
    // Nothing kept at all: compared with what the snapshot holds.
    rmSync(join(down, 'sync'), { recursive: true, force: true });
    const bare = await sync(org, down);
    expect(line(bare.stdout, org)).to.contain('upserted 0, deleted 0').and.to.contain('unchanged');
    expect(await listSnapshotIds(down)).to.deep.equal(held);

    // A mirror loaded from the upstream's own source holds what the upstream serves of its other organizations.
    const loaded = join(dir, 'loaded');
    await load(up.source, loaded);
    const before = await readCurrentId(loaded);
    // Side by side, as syncs of two organizations into one mirror may run: neither has anything to write.
    const others = up.organizations.slice(1, 3);
    for (const [i, same] of (await Promise.all(others.map((o) => sync(o, loaded)))).entries()) {
      expect(line(same.stdout, others[i]!), same.stderr).to.contain('upserted 0, deleted 0').and.to.contain('unchanged');
    }
    expect(await readCurrentId(loaded)).to.equal(before);

    // And a change upstream is still found, compared with what the snapshot holds: only its workspaces.
    rmSync(join(down, 'sync'), { recursive: true, force: true });
    await changeUpstream(org, 6);
    const changed = await sync(org, down);
    const [, upserted] = /upserted (\d+)/.exec(line(changed.stdout, org))!;
    expect(Number(upserted)).to.be.within(1, 12);
    await sameAnswers(up.server, await mirrorOf(down), [org], up.tokens);
  });

  it('a follower makes one snapshot of one change upstream, also when the upstream switches between two views of a run', async () => {
    const org = up.organizations[3]!;
    const down = join(dir, 'follower');
    expect((await sync(org, down)).stdout).to.match(/snapshot \d{8}T/);
    const snapshots = (await listSnapshotIds(down)).length;
    // The change lands upstream, and the upstream serves it, after the first run's workspaces were read and
    // before its providers are.
    let switched = false;
    const proxy = await startFaultProxy(up.server.url, () => 'pass', undefined, async (_n, path) => {
      if (switched || typeOf(path) !== 'providers') return;
      switched = true;
      await changeUpstream(org, 4);
    });
    const { child, out } = spawnSync(['--from', proxy.url, '--organization', org, '--every', '1s'], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)! });
    const runs = () => out().split('\n').filter((l) => l.startsWith(`${org}: read`));
    // Three runs: the one the upstream switched during, the one that takes the change, and one after it that
    // finds nothing more to take.
    try {
      for (const end = Date.now() + 120_000; runs().length < 3;) {
        if (Date.now() > end || child.exitCode !== null) throw new Error(`three runs: ${out()}`);
        await sleep(50);
      }
    } finally {
      child.kill('SIGTERM');
      await new Promise<void>((r) => { if (child.exitCode !== null) r(); else child.once('exit', () => r()); });
      await proxy.close();
    }
    expect(switched, 'the upstream switched during the first run').to.equal(true);
    const made = runs().filter((l) => /snapshot \d{8}T/.test(l));
    expect(made, runs().join('\n')).to.have.length(1);
    expect((await listSnapshotIds(down)).length).to.equal(snapshots + 1);
    await sameAnswers(up.server, await mirrorOf(down), [org], up.tokens);
  });

  it('reads a run\'s views again when the upstream no longer keeps the snapshot they were pinned to', async () => {
    const org = up.organizations[2]!;
    const pinned = (path: string) => new URL(path, 'http://x').searchParams.has('snapshot');
    let gone = 0;
    const proxy = await startFaultProxy(up.server.url, (_n, path) => (pinned(path) && typeOf(path) === 'modules' && gone++ === 0 ? 'gone' : 'pass'));
    try {
      const down = join(dir, 'gone');
      const r = await sync(org, down, proxy.url);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stderr).to.contain('no longer keeps snapshot').and.to.contain('reading its views again');
      const workspaceReads = proxy.requests.filter((q) => typeOf(q.path) === 'workspaces');
      expect(workspaceReads.map((q) => pinned(q.path)), 'the workspaces read twice, unpinned').to.deep.equal([false, false]);
      expect(proxy.requests.filter((q) => typeOf(q.path) !== 'workspaces').every((q) => pinned(q.path)), 'every other view pinned').to.equal(true);
      await sameAnswers(up.server, await mirrorOf(down), [org], up.tokens);
    } finally {
      await proxy.close();
    }
  });
});
