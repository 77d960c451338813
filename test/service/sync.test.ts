// `explorer sync` against a real upstream: another instance of this service on loopback, loaded with a
// generated source and changed between syncs with `apply`. After each sync every route of the synced
// organizations answers on the mirror as on the upstream (its whole-second datetimes: the CSV export has no
// fractions, so the upstream's source is written without them); a sync that finds nothing changed makes no
// snapshot, and one after a change applies only the changed workspaces.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { issueToken } from '../../src/access/tokens.js';
import { catalogFor } from '../../src/catalog/catalog.js';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { writeSample } from '../../src/sample/sample.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { readCurrentId, readManifest } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { openStateStore } from '../../src/store/open-store.js';
import { clientQuery } from '../helpers/harness.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const SERVER_ENV = { PORT: '0', POOL_WORKERS: '2', WORKER_CONCURRENCY: '2', SNAPSHOT_POLL_MS: '3600000', DUCKDB_MEMORY_LIMIT: '512MB', RATE_LIMIT_MAX: '1000000', RESPONSE_CACHE_MB: '0' };

/**
 * A source or batch as the views carry it whole (docs/sync.md, the round trip's exceptions): timestamps to the
 * whole second, and no ", " inside a tag or a workspace name (the lists are joined with it).
 */
function mirrorable(dir: string): void {
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.ndjson'))) {
    const path = join(dir, f);
    let text = readFileSync(path, 'utf8').replace(/(T\d{2}:\d{2}:\d{2})\.\d+Z/g, '$1Z');
    if (f === 'workspaces.ndjson') {
      text = text.split('\n').filter(Boolean).map((line) => {
        const w = JSON.parse(line);
        w.name = w.name.replaceAll(', ', ',');
        if (Array.isArray(w.tags)) w.tags = w.tags.map((t: string) => t.replaceAll(', ', ','));
        return JSON.stringify(w);
      }).join('\n') + '\n';
    }
    writeFileSync(path, text);
  }
}

/** `explorer sync` as a user runs it, the token in the environment. */
async function sync(args: string[], dataDir: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, 'sync', ...args], { env: { ...process.env, DATA_DIR: dataDir, ...env } });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/** Queries of every view (paged, sorted, filtered), its export and a summary. */
function routes(org: string): string[] {
  const base = `/api/v2/organizations/${encodeURIComponent(org)}/explorer`;
  return catalogFor().views.flatMap((view) => {
    const [first, second] = view.fields;
    const name = view.identifying[0]!;
    return [
      `${base}?type=${view.name}&page%5Bsize%5D=100`,
      `${base}${clientQuery({ type: view.name, sort: `-${second!.name}`, 'page[size]': '7', 'page[number]': '2' })}`,
      `${base}${clientQuery({ type: view.name, [`filter[0][${name}][contains][0]`]: 'a', sort: first!.name })}`,
      `${base}/export/csv?type=${view.name}`,
      `${base}/summary${clientQuery({ type: view.name, group_by: name, 'page[size]': '100' })}`,
    ];
  });
}

describe('explorer sync from another instance of this service', function () {
  this.timeout(300_000);
  let dir: string;
  let upstream: RunningServer;
  let mirror: RunningServer | null = null;
  const tokens = new Map<string, string>();
  after(async () => {
    await Promise.all([upstream?.shutdown(), mirror?.shutdown()]);
    rmSync(dir, { recursive: true, force: true });
  });

  /** Every route of `orgs` answers alike on both (the servers' own addresses and snapshot ids put aside). */
  async function sameAnswers(orgs: string[]): Promise<void> {
    await Promise.all([upstream.snapshots.refresh(), mirror!.snapshots.refresh()]);
    for (const org of orgs) {
      for (const path of routes(org)) {
        const get = async (server: RunningServer) => {
          const res = await fetch(`${server.url}${path}`, { headers: { Authorization: `Bearer ${tokens.get(org)}` } });
          return { status: res.status, body: (await res.text()).split(server.url).join('<server>').replace(/\d{8}T\d{9}Z-[0-9a-z]+/g, '<snapshot>') };
        };
        const [x, y] = await Promise.all([get(upstream), get(mirror!)]);
        expect(x.status, path).to.equal(200);
        if (y.body !== x.body) {
          // The first difference, for the message: the bodies are long.
          let i = 0;
          while (i < x.body.length && x.body[i] === y.body[i]) i++;
          expect(y.body.slice(Math.max(0, i - 200), i + 200), path).to.equal(x.body.slice(Math.max(0, i - 200), i + 200));
        }
        expect(y, path).to.deep.equal(x);
      }
    }
  }

  it('mirrors two organizations, applies only what changed upstream, and makes no snapshot when nothing did', async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-sync-'));
    const source = join(dir, 'source');
    await writeSample(source, { organizations: 3, workspaces: 120, seed: 71 });
    mirrorable(source);
    const up = join(dir, 'up');
    const down = join(dir, 'down');
    await loadSnapshot(source, { dataDir: up, memoryLimit: '1GB', label: 'upstream' });
    const orgs = readFileSync(join(source, 'organizations.ndjson'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).name as string);
    const synced = orgs.slice(0, 2);
    const store = await openStateStore(loadConfig({ DATA_DIR: up }));
    for (const org of orgs) tokens.set(org, (await issueToken(store, { kind: 'organization', organization: org, description: 'sync' })).token);
    await store.close();
    upstream = await startServer(loadConfig({ ...SERVER_ENV, DATA_DIR: up }), silentLogger);

    // Each organization with its own token: the first from EXPLORER_SYNC_TOKEN, the second from TF_TOKEN_<host>.
    const host = new URL(upstream.url).host;
    const variable = `TF_TOKEN_${host.replace(/\./g, '_').replace(/:/g, '___')}`;
    const first = await sync(['--from', upstream.url, '--organization', synced[0]!], down, { EXPLORER_SYNC_TOKEN: tokens.get(synced[0]!)! });
    expect(first.code, first.stderr).to.equal(0);
    expect(first.stdout).to.match(/snapshot \d{8}T/);
    const second = await sync(['--from', upstream.url, '--organization', synced[1]!], down, { [variable]: tokens.get(synced[1]!)! });
    expect(second.code, second.stderr).to.equal(0);
    const afterFirst = await readManifest(down, (await readCurrentId(down))!);
    expect(afterFirst.label).to.equal(`sync ${host} ${synced[1]}`);

    // The mirror answers with the upstream's tokens: the same state store.
    cpSync(join(up, 'state'), join(down, 'state'), { recursive: true });
    mirror = await startServer(loadConfig({ ...SERVER_ENV, DATA_DIR: down }), silentLogger);
    await sameAnswers(synced);

    // Nothing changed: no snapshot.
    const idle = await sync(['--from', upstream.url, '--organization', synced.join(',')], down, { EXPLORER_SYNC_TOKEN: tokens.get(synced[0]!)! });
    // One token reads one organization: the other is not found with it, fails alone, and keeps what it had.
    expect(idle.code).to.equal(1);
    expect(idle.stdout).to.contain(`${synced[0]}: read`).and.to.contain('unchanged');
    expect(idle.stderr, idle.stderr).to.contain(`sync failed for ${synced[1]}: the upstream answered 404`);
    expect(idle.stderr).not.to.contain('without resources');
    expect(idle.stderr).not.to.contain(tokens.get(synced[0]!)!);
    expect(await readCurrentId(down)).to.equal(afterFirst.id);

    // Changes upstream (upserts, renames, deletions, new workspaces), applied with `apply`; a sync applies
    // only the workspaces they touched.
    await writeSampleChanges(source, join(dir, 'changes'), { batches: 2, workspaces: 15, seed: 72 });
    for (const b of ['batch-0001', 'batch-0002']) {
      mirrorable(join(dir, 'changes', b));
      await applyBatch(join(dir, 'changes', b), { dataDir: up, memoryLimit: '1GB' });
    }
    await upstream.snapshots.refresh();
    for (const org of synced) {
      const again = await sync(['--from', upstream.url, '--organization', org], down, { EXPLORER_SYNC_TOKEN: tokens.get(org)! });
      expect(again.code, again.stderr).to.equal(0);
      const [, upserted] = /upserted (\d+)/.exec(again.stdout)!;
      expect(Number(upserted)).to.be.at.most(30);
    }
    await sameAnswers(synced);
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
    ];
    for (const [args, env, message] of cases) {
      const r = await sync(args, data, { EXPLORER_SYNC_TOKEN: '', ...env });
      expect(r.code, args.join(' ')).to.equal(2);
      expect(r.stderr, args.join(' ')).to.match(message);
    }
  });
});
