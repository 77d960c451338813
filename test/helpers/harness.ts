// A real service for tests: a temporary DATA_DIR, the small fixture loaded as a snapshot, tokens of every
// kind, and the HTTP server listening on a loopback port. Nothing is mocked.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueToken } from '../../src/access/tokens.js';
import { loadConfig, type Config } from '../../src/config.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { openStateStore } from '../../src/store/open-store.js';
import { writeSmallSource, ORG, OTHER_ORG } from '../fixtures/small-source.js';

export interface Tokens {
  /** Organization token of acme-corp. */
  org: string;
  /** Organization token of globex (another organization). */
  otherOrg: string;
  /** acme-corp team `owners`, `readers` (read_workspaces) and `developers` (no access). */
  owners: string;
  readers: string;
  developers: string;
  /** Organization token of empty-org, which has no workspaces. */
  emptyOrg: string;
  /** alice is in acme-corp/readers; bob only in acme-corp/developers; carol in globex/owners. */
  alice: string;
  bob: string;
  carol: string;
}

export interface Harness {
  url: string;
  dataDir: string;
  config: Config;
  tokens: Tokens;
  running: RunningServer;
  /** GET (or other method) with a bearer token; `path` is relative to the server root. */
  request(path: string, init?: RequestInit & { token?: string | null }): Promise<Response>;
  /** Shorthand for the organization routes of acme-corp. */
  explorer(query: string, token?: string): Promise<Response>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  env?: Record<string, string>;
  /** Write a different source instead of the small fixture. */
  writeSource?: (dir: string) => unknown;
  /**
   * Copy the small fixture's snapshot, loaded once by the test process, instead of loading it again (a load
   * costs about a CPU-second in the suite): the default without `writeSource`. Every harness still has a data
   * directory of its own; only the snapshot's id is the same in each. `false` loads the fixture afresh.
   */
  sharedSnapshot?: boolean;
  logger?: Logger;
}

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), 'explorer-test-'));
  const source = join(dataDir, 'source');
  if (opts.sharedSnapshot && opts.writeSource) throw new Error('sharedSnapshot is the small fixture: no writeSource with it');
  const shared = opts.sharedSnapshot ?? !opts.writeSource;
  if (shared) cpSync(await smallSnapshot(), dataDir, { recursive: true });
  else await (opts.writeSource ?? writeSmallSource)(source);
  const env: Record<string, string> = {
    DATA_DIR: dataDir, PORT: '0', POOL_WORKERS: '2', WORKER_CONCURRENCY: '2', SNAPSHOT_POLL_MS: '100',
    DUCKDB_MEMORY_LIMIT: '512MB', SHUTDOWN_GRACE_MS: '2000',
    // Tests that are not about the rate limit must not trip it; rate-limit tests set their own.
    RATE_LIMIT_MAX: '1000000', ...opts.env,
  };
  const config = loadConfig(env);
  if (!shared) await loadSnapshot(source, { dataDir, memoryLimit: '1GB' });
  // The tokens are the test's setting up, not what it tests: they wait for a Redis replica as long as the
  // default does, whatever shorter wait a test gives the server (a replica of a cluster just started can take
  // longer than a few hundred milliseconds to confirm on a busy machine).
  const { REDIS_WAIT_MS: _wait, ...setupEnv } = env;
  const store = await openStateStore(loadConfig(setupEnv));
  const make = async (kind: 'organization' | 'team' | 'user', organization: string | null, team: string | null, user: string | null) =>
    (await issueToken(store, { kind, organization, team, user })).token;
  const tokens: Tokens = {
    org: await make('organization', ORG, null, null),
    otherOrg: await make('organization', OTHER_ORG, null, null),
    emptyOrg: await make('organization', 'empty-org', null, null),
    owners: await make('team', ORG, 'owners', null),
    readers: await make('team', ORG, 'readers', null),
    developers: await make('team', ORG, 'developers', null),
    alice: await make('user', null, null, 'alice'),
    bob: await make('user', null, null, 'bob'),
    carol: await make('user', null, null, 'carol'),
  };
  await store.close();
  const running = await startServer(config, opts.logger ?? silentLogger);
  const url = running.url;
  const request = (path: string, init: RequestInit & { token?: string | null } = {}) => {
    const { token = tokens.org, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (token !== null) headers.set('Authorization', `Bearer ${token}`);
    return fetch(`${url}${path}`, { ...rest, headers });
  };
  return {
    url, dataDir, config, tokens, running, request,
    explorer: (query, token = tokens.org) => request(`/api/v2/organizations/${ORG}/explorer${query}`, { token }),
    async close() {
      await running.shutdown();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let loaded: Promise<string> | undefined;

/** A data directory with the small fixture loaded as a snapshot, once per process (removed when it exits). */
function smallSnapshot(): Promise<string> {
  if (!loaded) {
    const dir = mkdtempSync(join(tmpdir(), 'explorer-test-snapshot-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    loaded = (async () => {
      writeSmallSource(join(dir, 'source'));
      await loadSnapshot(join(dir, 'source'), { dataDir: dir, memoryLimit: '1GB' });
      return dir;
    })();
  }
  return loaded;
}

/** Builds a query string the way real clients do: keys sorted, brackets, commas and colons percent-encoded, + for spaces. */
export function clientQuery(params: Record<string, string>): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return '?' + Object.keys(params).sort().map((k) => `${enc(k)}=${enc(params[k]!)}`).join('&');
}

export async function json(res: Response): Promise<any> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`not JSON (status ${res.status}): ${text.slice(0, 300)}`);
  }
}

/** Creates a saved view of acme-corp (the flat body layout) and returns its id; anything but a 201 fails the test. */
export async function createSavedView(h: Harness, name: string, queryType: string, query: unknown): Promise<string> {
  const res = await h.request(`/api/v2/organizations/${ORG}/explorer/views`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ data: { name, query_type: queryType, query } }),
  });
  const body = await json(res);
  if (res.status !== 201) throw new Error(`creating saved view ${name}: ${res.status} ${JSON.stringify(body)}`);
  return body.data.id;
}
