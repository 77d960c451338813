// `explorer sync` when the upstream misbehaves, through a proxy that injects faults in front of a real
// upstream (another instance of this service): a 429 is waited out; an export that fails is read page by
// page, each page tried again; an upstream without a resources view leaves the mirror's resources as they
// were; a 401 fails its organization alone; TLS is verified, a private CA trusted through
// NODE_EXTRA_CA_CERTS; `--every` follows changes and stops cleanly on SIGTERM.
import { expect } from 'chai';
import { join } from 'node:path';
import type { RunningServer } from '../../src/server.js';
import { listSnapshotIds, readCurrentId, readManifest } from '../../src/snapshots/snapshot-dir.js';
import { startFaultProxy, type Fault } from '../helpers/fault-proxy.js';
import { makePrivateCa } from '../helpers/private-ca.js';
import { changeUpstream as applyUpstream, runSync, sameAnswers, spawnSync, startMirror, upstreamForTests, type Upstream } from '../helpers/sync-upstream.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const typeOf = (path: string) => new URL(path, 'http://x').searchParams.get('type');
const isExport = (path: string) => path.includes('/export/csv');
const pageNumber = (path: string) => new URL(path, 'http://x').searchParams.get('page[number]');

describe('explorer sync through faults', function () {
  this.timeout(300_000);
  let dir: string;
  let up: Upstream;
  let changes = 0;
  const servers: RunningServer[] = [];
  upstreamForTests('sync-faults', { organizations: 2, workspaces: 80, seed: 81 }, servers, (d, u) => { dir = d; up = u; });

  /** A batch of generated changes applied upstream. */
  const changeUpstream = (workspaces: number) => applyUpstream(up, join(dir, `changes-${++changes}`), { workspaces, seed: 80 + changes });
  const mirrorOf = async (down: string) => {
    const mirror = await startMirror(up, down, { METRICS_PUBLIC: '1' });
    servers.push(mirror);
    return mirror;
  };
  const csv = async (server: RunningServer, org: string, query: string) => {
    const res = await fetch(`${server.url}/api/v2/organizations/${org}/explorer/export/csv?${query}`, { headers: { Authorization: `Bearer ${up.tokens.get(org)}` } });
    expect(res.status).to.equal(200);
    return res.text();
  };

  it('waits out a 429; reads an export that fails (503, stalled, cut off) page by page, each page tried again; ends equal to the upstream', async () => {
    const org = up.organizations[0]!;
    const failing: Record<string, Fault> = { workspaces: '503', providers: 'stall', modules: 'cut', resources: '503' };
    const proxy = await startFaultProxy(up.server.url, (n, path) => {
      if (isExport(path)) return n === 1 ? '429' : n === 2 ? failing[typeOf(path)!]! : 'pass';
      return pageNumber(path) === '1' ? (['503', 'cut'] as const)[n - 1] ?? 'pass' : 'pass';
    });
    try {
      // The stalled export is given up after 3 s of silence: long enough that a page the upstream answers
      // slowly on a busy machine is not taken for a stall and asked again (the tries below are counted).
      const down = join(dir, 'faults');
      const r = await runSync(['--from', proxy.url, '--organization', org], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)!, SYNC_BACKOFF_MS: '20', SYNC_IDLE_TIMEOUT_MS: '3000' });
      expect(r.code, r.stderr).to.equal(0);
      const exports = [...proxy.seen.entries()].filter(([path]) => isExport(path));
      expect(exports.map(([path]) => typeOf(path)).sort()).to.deep.equal(['modules', 'providers', 'resources', 'workspaces']);
      for (const [path, faults] of exports) expect(faults, path).to.deep.equal(['429', failing[typeOf(path)!]]);
      const firstPages = [...proxy.seen.entries()].filter(([path]) => pageNumber(path) === '1');
      expect(firstPages.map(([path]) => typeOf(path)).sort()).to.deep.equal(['modules', 'providers', 'resources', 'workspaces']);
      for (const [path, faults] of firstPages) expect(faults, path).to.deep.equal(['503', 'cut', 'pass']);
      expect([...proxy.seen.keys()].filter((p) => typeOf(p) === 'resources' && !isExport(p)).length, 'resources pages').to.be.above(2);
      expect(r.stderr.match(/export failed \(.*\); reading it page by page/g) ?? []).to.have.length(4);
      expect(r.stderr).to.include('nothing came for 3 s');
      await sameAnswers(up.server, await mirrorOf(down), [org], up.tokens);
    } finally {
      await proxy.close();
    }
  });

  it('fails an organization whose resources keep failing, export and pages, and keeps what the mirror had', async () => {
    const org = up.organizations[1]!;
    const down = join(dir, 'failing');
    expect((await runSync(['--from', up.server.url, '--organization', org], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)! })).code).to.equal(0);
    const held = await readCurrentId(down);
    // A change upstream the mirror must not half-take: every resources request is cut off.
    await changeUpstream(10);
    const proxy = await startFaultProxy(up.server.url, (_n, path) => (typeOf(path) === 'resources' ? 'cut' : 'pass'));
    try {
      const r = await runSync(['--from', proxy.url, '--organization', org], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)!, SYNC_BACKOFF_MS: '20' });
      expect(r.code).to.equal(1);
      expect(r.stderr).to.match(new RegExp(`sync failed for ${org}: resources of ${org}, page 1: the transfer broke off .*\\(after 6 tries\\)`));
      expect(await readCurrentId(down)).to.equal(held);
    } finally {
      await proxy.close();
    }
  });

  it('syncs from an upstream without a resources view: the resources the mirror holds stay as they are', async () => {
    const org = up.organizations[0]!;
    const down = join(dir, 'no-resources');
    expect((await runSync(['--from', up.server.url, '--organization', org], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)! })).code).to.equal(0);
    const mirror = await mirrorOf(down);
    const resources = 'type=resources&fields=workspace_external_id,address,provider_name,source_id,source_updated_at';
    const before = await csv(mirror, org, resources);
    await changeUpstream(15);
    const proxy = await startFaultProxy(up.server.url, (_n, path) => (typeOf(path) === 'resources' ? '400' : 'pass'));
    try {
      const r = await runSync(['--from', proxy.url, '--organization', org], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)! });
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.match(/\(no resources view\).*snapshot \d{8}T/);
      expect(r.stderr.match(/no resources view/g)).to.have.length(1);
      await mirror.snapshots.refresh();
      const workspaces = 'type=workspaces&fields=external_id,workspace_name,tags,drifted';
      expect(await csv(mirror, org, workspaces), 'the workspaces as the upstream has them now').to.equal(await csv(up.server, org, workspaces));
      expect(await csv(up.server, org, resources), 'the resources changed upstream').to.not.equal(before);
      expect(await csv(mirror, org, resources), 'the resources as the mirror held them').to.equal(before);
    } finally {
      await proxy.close();
    }
  });

  it('fails the organization that the upstream answers 401 alone, and the token is in no output, label or metric', async () => {
    const [ok, refused] = up.organizations as [string, string];
    const token = up.tokens.get(ok)!;
    const proxy = await startFaultProxy(up.server.url, (_n, path) => (path.includes(`/organizations/${refused}/`) ? '401' : 'pass'));
    try {
      const down = join(dir, 'refused');
      const r = await runSync(['--from', proxy.url, '--organization', `${ok},${refused}`, '--label', 'nightly'], down, { EXPLORER_SYNC_TOKEN: token });
      expect(r.code).to.equal(1);
      expect(r.stderr).to.include(`sync failed for ${refused}: the upstream answered 401; it keeps what it had`);
      expect(r.stdout).to.match(new RegExp(`^${ok}: read \\d+ workspaces`, 'm'));
      const mirror = await mirrorOf(down);
      const snapshots = await (await fetch(`${mirror.url}/api/v2/organizations/${ok}/explorer/snapshots`, { headers: { Authorization: `Bearer ${token}` } })).text();
      const metrics = await (await fetch(`${mirror.url}/metrics`)).text();
      expect(snapshots).to.include('nightly');
      expect(metrics).to.include('explorer_');
      for (const [what, text] of Object.entries({ stdout: r.stdout, stderr: r.stderr, snapshots, metrics })) expect(text.includes(token), what).to.equal(false);
    } finally {
      await proxy.close();
    }
  });

  it('verifies TLS: trusts a private CA given by NODE_EXTRA_CA_CERTS, refuses a certificate it cannot verify', async () => {
    const org = up.organizations[1]!;
    const ca = makePrivateCa(join(dir, 'ca'));
    const proxy = await startFaultProxy(up.server.url, () => 'pass', { key: ca.key, cert: ca.cert });
    try {
      const env = { EXPLORER_SYNC_TOKEN: up.tokens.get(org)!, SYNC_BACKOFF_MS: '20' };
      // Two mirrors of their own, synced side by side.
      const [untrusted, trusted] = await Promise.all([
        runSync(['--from', proxy.url, '--organization', org], join(dir, 'tls-untrusted'), env),
        runSync(['--from', proxy.url, '--organization', org], join(dir, 'tls'), { ...env, NODE_EXTRA_CA_CERTS: ca.caFile }),
      ]);
      expect(untrusted.code).to.equal(1);
      expect(untrusted.stderr).to.match(new RegExp(`sync failed for ${org}: .*certificate`));
      expect(trusted.code, trusted.stderr).to.equal(0);
      await sameAnswers(up.server, await mirrorOf(join(dir, 'tls')), [org], up.tokens);
    } finally {
      await proxy.close();
    }
  });

  it('--every follows changes upstream, never starts a run before the previous one ended, and stops cleanly on SIGTERM', async () => {
    const org = up.organizations[0]!;
    const down = join(dir, 'every');
    // Each run's workspaces export comes late, so that a run takes longer than --every's second.
    const proxy = await startFaultProxy(up.server.url, (_n, path) => (isExport(path) && typeOf(path) === 'workspaces' ? 'slow' : 'pass'));
    const { child, out } = spawnSync(['--from', proxy.url, '--organization', org, '--every', '1s'], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)! });
    const waitFor = async (test: () => boolean, what: string) => {
      for (const end = Date.now() + 60_000; !test();) {
        if (Date.now() > end || child.exitCode !== null) throw new Error(`${what}: ${out()}`);
        await sleep(50);
      }
    };
    try {
      await waitFor(() => /unchanged/.test(out()), 'a run that found nothing changed');
      const before = (await listSnapshotIds(down)).length;
      await changeUpstream(12);
      const runs = () => out().split('\n').filter((l) => l.startsWith(`${org}: read`));
      const seen = runs().length;
      await waitFor(() => runs().slice(seen).some((l) => /snapshot \d{8}T/.test(l)), 'a run that took the change');
      expect((await listSnapshotIds(down)).length).to.equal(before + 1);
      expect((await readManifest(down, (await readCurrentId(down))!)).label).to.match(/^sync /);
    } finally {
      child.kill('SIGTERM');
    }
    const code = await new Promise<number | null>((r) => { if (child.exitCode !== null) r(child.exitCode); else child.once('exit', (c) => r(c)); });
    expect(code, out()).to.equal(0);
    await proxy.close();
    // A run starts with its workspaces export: every request before it had been answered by then.
    const starts = proxy.requests.filter((r) => r.fault === 'slow');
    expect(starts.length, 'runs').to.be.at.least(3);
    for (const start of starts.slice(1)) {
      const earlier = proxy.requests.filter((r) => r.started < start.started);
      for (const r of earlier) expect(r.ended, `${r.path} answered before the next run`).to.be.a('number').and.at.most(start.started);
    }
  });

  it('answers 502 through its proxy when the upstream is gone, and the test process goes on', async () => {
    // Port 1 refuses: the upstream a test stopped while its sync still retried.
    const proxy = await startFaultProxy('http://127.0.0.1:1', () => 'pass');
    try {
      const res = await fetch(`${proxy.url}/api/v2/ping`);
      expect(res.status).to.equal(502);
      expect(((await res.json()) as { errors: { status: string }[] }).errors[0]!.status).to.equal('502');
      expect(proxy.requests.map((r) => r.path)).to.deep.equal(['/api/v2/ping']);
    } finally {
      await proxy.close();
    }
  });
});
