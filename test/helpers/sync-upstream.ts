// What the sync tests share: an upstream that is another instance of this service (loaded with a generated
// source, a token per organization), `explorer sync` run as a user runs it, and the comparison of every
// route of the synced organizations on mirror and upstream.
import { expect } from 'chai';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { issueToken } from '../../src/access/tokens.js';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { writeSample } from '../../src/sample/sample.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { openStateStore } from '../../src/store/open-store.js';
import { comparableAnswer, comparedRoutes } from './compare-routes.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
export const SERVER_ENV = { PORT: '0', POOL_WORKERS: '2', WORKER_CONCURRENCY: '2', SNAPSHOT_POLL_MS: '3600000', DUCKDB_MEMORY_LIMIT: '512MB', RATE_LIMIT_MAX: '1000000', RESPONSE_CACHE_MB: '0' };

/**
 * A source or batch as the views carry it whole (docs/sync.md, the round trip's exceptions): timestamps to the
 * whole second, and no ", " inside a tag or a workspace name (the lists are joined with it).
 */
export function mirrorable(dir: string): void {
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

export interface Upstream { server: RunningServer; dataDir: string; source: string; organizations: string[]; tokens: Map<string, string> }

/** An instance of this service over `dir/up`, serving a generated source made mirrorable, a token per organization. */
export async function startUpstream(dir: string, sample: { organizations: number; workspaces: number; seed: number }): Promise<Upstream> {
  const source = join(dir, 'source');
  await writeSample(source, sample);
  mirrorable(source);
  const dataDir = join(dir, 'up');
  await loadSnapshot(source, { dataDir, memoryLimit: '1GB', label: 'upstream' });
  const organizations = readFileSync(join(source, 'organizations.ndjson'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).name as string);
  const store = await openStateStore(loadConfig({ DATA_DIR: dataDir }));
  const tokens = new Map<string, string>();
  for (const org of organizations) tokens.set(org, (await issueToken(store, { kind: 'organization', organization: org, description: 'sync' })).token);
  await store.close();
  const server = await startServer(loadConfig({ ...SERVER_ENV, DATA_DIR: dataDir }), silentLogger);
  return { server, dataDir, source, organizations, tokens };
}

/** A batch of generated changes (to `organizations` alone, when given) written to `at` and applied upstream, which then serves it. */
/**
 * For a describe block: a temporary directory and an upstream serving `sample` from it, made before its tests
 * (`ready` hands them over) and stopped after them with every server the tests pushed onto `servers`.
 */
export function upstreamForTests(name: string, sample: { organizations: number; workspaces: number; seed: number }, servers: RunningServer[],
  ready: (dir: string, up: Upstream) => void): void {
  let dir: string | undefined;
  let up: Upstream | undefined;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), `explorer-${name}-`));
    up = await startUpstream(dir, sample);
    ready(dir, up);
  });
  after(async () => {
    await Promise.all([up?.server.shutdown(), ...servers.map((s) => s.shutdown())]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
}

export async function changeUpstream(up: Upstream, at: string, opts: { workspaces: number; seed: number; organizations?: string[] }): Promise<void> {
  await writeSampleChanges(up.source, at, { batches: 1, workspaces: opts.workspaces, seed: opts.seed, ...(opts.organizations ? { organizations: new Set(opts.organizations) } : {}) });
  mirrorable(join(at, 'batch-0001'));
  await applyBatch(join(at, 'batch-0001'), { dataDir: up.dataDir, memoryLimit: '1GB' });
  await up.server.snapshots.refresh();
}

/** A server over the mirror `down` that answers with the upstream's tokens (a copy of its state store). */
export async function startMirror(up: Upstream, down: string, env: Record<string, string> = {}): Promise<RunningServer> {
  cpSync(join(up.dataDir, 'state'), join(down, 'state'), { recursive: true });
  return startServer(loadConfig({ ...SERVER_ENV, DATA_DIR: down, ...env }), silentLogger);
}

/** `explorer sync` as a user runs it, the token in the environment. */
export async function runSync(args: string[], dataDir: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, 'sync', ...args], { env: { ...process.env, DATA_DIR: dataDir, ...env } });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/** `explorer sync` left running (with --every), its output gathered as it comes. */
export function spawnSync(args: string[], dataDir: string, env: Record<string, string>): { child: ChildProcess; out: () => string } {
  const child = spawn(process.execPath, [CLI, 'sync', ...args], { env: { ...process.env, DATA_DIR: dataDir, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  return { child, out: () => out };
}

/**
 * Every route of `orgs` answers alike on both (the servers' own addresses and snapshot ids put aside). The
 * routes are asked all at once (well under the pool's queue), and compared in their order.
 */
export async function sameAnswers(upstream: RunningServer, mirror: RunningServer, orgs: string[], tokens: Map<string, string>): Promise<void> {
  await Promise.all([upstream.snapshots.refresh(), mirror.snapshots.refresh()]);
  const routes = orgs.flatMap((org) => comparedRoutes(org).map((path) => ({ org, path })));
  const answers = await Promise.all(routes.map(({ org, path }) =>
    Promise.all([comparableAnswer(upstream, path, tokens.get(org)), comparableAnswer(mirror, path, tokens.get(org))])));
  for (const [n, { path }] of routes.entries()) {
    const [x, y] = answers[n]!;
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
