// `explorer sync` against a real upstream: another instance of this service on loopback, loaded with a
// generated source and changed between syncs with `apply`. After each sync every route of the synced
// organizations answers on the mirror as on the upstream; a sync that finds nothing changed makes no
// snapshot, one after a change applies only the changed workspaces, and errors of use stop it before any request.
import { expect } from 'chai';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { readCurrentId, readManifest } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { mirrorable, runSync, sameAnswers, SERVER_ENV, startUpstream, type Upstream } from '../helpers/sync-upstream.js';

describe('explorer sync from another instance of this service', function () {
  this.timeout(300_000);
  let dir: string;
  let up: Upstream;
  let mirror: RunningServer | null = null;
  before(() => { dir = mkdtempSync(join(tmpdir(), 'explorer-sync-')); });
  after(async () => {
    await Promise.all([up?.server.shutdown(), mirror?.shutdown()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('mirrors two organizations, applies only what changed upstream, and makes no snapshot when nothing did', async () => {
    up = await startUpstream(dir, { organizations: 3, workspaces: 120, seed: 71 });
    const synced = up.organizations.slice(0, 2);
    const down = join(dir, 'down');
    const url = up.server.url;

    // Each organization with its own token: the first from EXPLORER_SYNC_TOKEN, the second from TF_TOKEN_<host>.
    const host = new URL(url).host;
    const variable = `TF_TOKEN_${host.replace(/\./g, '_').replace(/:/g, '___')}`;
    const first = await runSync(['--from', url, '--organization', synced[0]!], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(synced[0]!)! });
    expect(first.code, first.stderr).to.equal(0);
    expect(first.stdout).to.match(/snapshot \d{8}T/);
    const second = await runSync(['--from', url, '--organization', synced[1]!], down, { EXPLORER_SYNC_TOKEN: '', [variable]: up.tokens.get(synced[1]!)! });
    expect(second.code, second.stderr).to.equal(0);
    const afterFirst = await readManifest(down, (await readCurrentId(down))!);
    expect(afterFirst.label).to.equal(`sync ${host} ${synced[1]}`);

    // The mirror answers with the upstream's tokens: the same state store.
    cpSync(join(up.dataDir, 'state'), join(down, 'state'), { recursive: true });
    mirror = await startServer(loadConfig({ ...SERVER_ENV, DATA_DIR: down }), silentLogger);
    await sameAnswers(up.server, mirror, synced, up.tokens);

    // Nothing changed: no snapshot. One token reads one organization: the other is not found with it, fails
    // alone, and keeps what it had.
    const idle = await runSync(['--from', url, '--organization', synced.join(',')], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(synced[0]!)! });
    expect(idle.code).to.equal(1);
    expect(idle.stdout).to.contain(`${synced[0]}: read`).and.to.contain('unchanged');
    expect(idle.stderr, idle.stderr).to.contain(`sync failed for ${synced[1]}: the upstream answered 404`);
    expect(idle.stderr).not.to.contain('without resources');
    expect(idle.stderr + idle.stdout).not.to.contain(up.tokens.get(synced[0]!)!);
    expect(await readCurrentId(down)).to.equal(afterFirst.id);

    // Changes upstream (upserts, renames, deletions, new workspaces), applied with `apply`; a sync applies
    // only the workspaces they touched.
    await writeSampleChanges(up.source, join(dir, 'changes'), { batches: 2, workspaces: 15, seed: 72 });
    for (const b of ['batch-0001', 'batch-0002']) {
      mirrorable(join(dir, 'changes', b));
      await applyBatch(join(dir, 'changes', b), { dataDir: up.dataDir, memoryLimit: '1GB' });
    }
    await up.server.snapshots.refresh();
    for (const org of synced) {
      const again = await runSync(['--from', url, '--organization', org], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)! });
      expect(again.code, again.stderr).to.equal(0);
      const [, upserted] = /upserted (\d+)/.exec(again.stdout)!;
      expect(Number(upserted)).to.be.at.most(30);
    }
    await sameAnswers(up.server, mirror, synced, up.tokens);
  });

  it('refuses errors of use before any request: plain http off loopback, credentials in the URL, no token, --token', async () => {
    const data = join(dir, 'usage');
    const cases: [string[], Record<string, string>, RegExp][] = [
      [['--from', 'http://example.com', '--organization', 'a'], { EXPLORER_SYNC_TOKEN: 'x' }, /plain http is refused/],
      [['--from', 'https://user:pw@example.com', '--organization', 'a'], { EXPLORER_SYNC_TOKEN: 'x' }, /must not carry credentials/],
      [['--from', 'ftp://example.com', '--organization', 'a'], { EXPLORER_SYNC_TOKEN: 'x' }, /https:\/\//],
      [['--from', 'https://example.com', '--organization', 'a', '--token', 'x'], {}, /unknown option --token/],
      [['--from', 'https://example.com', '--organization', 'a'], { HOME: data, TF_CLI_CONFIG_DIR: data }, /no token for example.com/],
      [['--from', 'https://example.com', '--organization', 'a', '--every', '0m'], { EXPLORER_SYNC_TOKEN: 'x' }, /--every/],
      [['--from', 'https://example.com'], { EXPLORER_SYNC_TOKEN: 'x' }, /--organization/],
      [['--from', 'https://example.com', '--organization', 'a'], { EXPLORER_SYNC_TOKEN: 'x', SYNC_MEMORY_LIMIT: 'plenty' }, /SYNC_MEMORY_LIMIT must be a size/],
    ];
    // Each refused before it reads or writes anything: the cases run side by side.
    const refused = await Promise.all(cases.map(([args, env]) => runSync(args, data, { EXPLORER_SYNC_TOKEN: '', ...env })));
    for (const [i, [args, , message]] of cases.entries()) {
      expect(refused[i]!.code, args.join(' ')).to.equal(2);
      expect(refused[i]!.stderr, args.join(' ')).to.match(message);
    }
  });
});
