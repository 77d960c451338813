// Token lifetimes as a user runs them: `token create --expires-in / --expires-at`, TOKEN_MAX_TTL, `token
// list`, and a server that refuses a token past its expiry as it refuses an unknown one, checked on every
// request, in the embedded store, Redis and a Redis Cluster, across restarts.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { writeSmallSource } from '../fixtures/small-source.js';
import { cli } from '../helpers/cli.js';
import { REDIS_BACKENDS, type RedisBackend, type StartedBackend } from '../helpers/redis-backends.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const route = '/api/v2/organizations/acme-corp/explorer?type=tf_versions';

const EMBEDDED: RedisBackend = { name: 'the embedded store', start: async () => ({ env: {}, close: async () => undefined }) };

const BACKENDS = [EMBEDDED, ...REDIS_BACKENDS];

// What `token create` refuses: each backend tries its share of them (they are refused before the store is
// written), and every one is tried in one backend at least.
const BAD_EXPIRIES = (offset: string) => [
  ['--expires-in', '3s', '--expires-at', offset], ['--expires-in', '0s'], ['--expires-in', '5x'], ['--expires-in', '1.5h'],
  ['--expires-at', '2020-01-01T00:00:00Z'], ['--expires-at', '2030-02-30T00:00:00Z'], ['--expires-at', '2030-01-01T00:00:00'],
];

describe('token lifetimes', function () {
  this.timeout(60_000);
  // One snapshot for every backend: the tokens are in the store, not beside the snapshot (the embedded
  // store's alone are in DATA_DIR, and the other backends do not read them).
  let dataDir: string;
  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'explorer-lifetimes-'));
    await writeSmallSource(join(dataDir, 'source'));
    await loadSnapshot(join(dataDir, 'source'), { dataDir, memoryLimit: '512MB' });
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  for (const [index, backend] of BACKENDS.entries()) describe(`in ${backend.name}`, function () {
    this.timeout(60_000);
    let store: StartedBackend;
    before(async () => {
      store = await backend.start();
    });
    after(async () => {
      await store.close();
    });

    const explorer = (args: string[], env: Record<string, string> = {}) => cli(args, dataDir, { ...store.env, ...env });
    const create = async (extra: string[] = [], env: Record<string, string> = {}) => {
      const r = await explorer(['token', 'create', '--organization', 'acme-corp', ...extra], env);
      expect(r.code, r.stderr).to.equal(0);
      return r.stdout.trim().split('\n').pop()!;
    };
    const listed = async (env: Record<string, string> = {}) => new Map((await explorer(['token', 'list'], env)).stdout.trim().split('\n')
      .filter(Boolean).map((line) => line.split('\t')).map((f) => [f[0]!, { expires: f[6]!, state: f[7]! }]));
    const serving = async <T>(env: Record<string, string>, task: (server: RunningServer) => Promise<T>): Promise<T> => {
      const server = await startServer(loadConfig({ DATA_DIR: dataDir, PORT: '0', POOL_WORKERS: '1', RATE_LIMIT_MAX: '1000000', ...store.env, ...env }), silentLogger);
      try { return await task(server); } finally { await server.shutdown(); }
    };
    const get = async (server: RunningServer, token: string) => {
      const res = await fetch(`${server.url}${route}`, { headers: { Authorization: `Bearer ${token}` } });
      return { status: res.status, challenge: res.headers.get('www-authenticate'), body: await res.text() };
    };

    it('refuses a token from the second it expires, as it refuses an unknown token', async () => {
      await serving({}, async (server) => {
        // Ten seconds: on a machine the rest of the suite keeps busy, creating it and listing it (two CLI
        // processes) and starting a server once took longer than three.
        const token = await create(['--expires-in', '10s']);
        expect((await get(server, token)).status).to.equal(200);
        const stops = Date.parse((await listed()).get(token.split('.')[0]!)!.expires);
        await sleep(Math.max(0, stops - Date.now()) + 50);
        const expired = await get(server, token);
        const unknown = await get(server, `at-${'x'.repeat(16)}.${'y'.repeat(40)}`);
        expect(expired.status).to.equal(401);
        expect(expired).to.deep.equal(unknown);
        expect(expired.challenge).to.match(/^Bearer/);
        expect((await listed()).get(token.split('.')[0]!)!.state).to.equal('expired');
      });
    });

    it('takes --expires-at with an offset, and refuses anything else, creating nothing', async () => {
      const at = new Date(Math.floor((Date.now() + 3_600_000) / 1000) * 1000);
      // The same instant written in a zone five hours ahead of UTC.
      const offset = `${new Date(at.getTime() + 5 * 3_600_000).toISOString().slice(0, 19)}+05:00`;
      const token = await create(['--expires-at', offset]);
      expect(Date.parse((await listed()).get(token.split('.')[0]!)!.expires)).to.equal(at.getTime());
      const before = [...(await listed()).keys()];
      for (const bad of BAD_EXPIRIES(offset).filter((_, i) => i % BACKENDS.length === index)) {
        const r = await explorer(['token', 'create', '--organization', 'acme-corp', ...bad]);
        expect(r.code, bad.join(' ')).to.equal(2);
        expect(r.stderr, bad.join(' ')).to.match(/expires/);
      }
      expect([...(await listed()).keys()]).to.deep.equal(before);
    });

    it('gives TOKEN_MAX_TTL as the default lifetime and refuses a longer one', async () => {
      const started = Date.now();
      const token = await create([], { TOKEN_MAX_TTL: '1h' });
      expect(Date.parse((await listed()).get(token.split('.')[0]!)!.expires) - started).to.be.within(3_590_000, 3_610_000);
      const longer = await explorer(['token', 'create', '--organization', 'acme-corp', '--expires-in', '2h'], { TOKEN_MAX_TTL: '1h' });
      expect(longer.code).to.equal(2);
      expect(longer.stderr).to.include('TOKEN_MAX_TTL');
      expect((await explorer(['token', 'list'], { TOKEN_MAX_TTL: 'soon' })).code).to.not.equal(0);
    });

    it('retires older tokens once TOKEN_MAX_TTL is lowered, across a restart', async () => {
      const token = await create();
      const created = Date.now();
      expect((await listed()).get(token.split('.')[0]!)!.expires).to.equal('never');
      await serving({}, async (server) => expect((await get(server, token)).status).to.equal(200));
      // Older than the two seconds below.
      await sleep(Math.max(0, created + 2_100 - Date.now()));
      await serving({ TOKEN_MAX_TTL: '2s' }, async (server) => expect((await get(server, token)).status).to.equal(401));
      expect((await listed({ TOKEN_MAX_TTL: '2s' })).get(token.split('.')[0]!)!.state).to.equal('expired');
      // Raised again, the token serves again: the store was not changed.
      await serving({ TOKEN_MAX_TTL: '1h' }, async (server) => expect((await get(server, token)).status).to.equal(200));
    });
  });
});
