// Two servers over two data directories that must answer alike (a batch path and a full load of its result,
// batches taken together and one by one): one token per organization, the same in both, and servers that
// never poll (the test refreshes them) and cache nothing.
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { issueToken } from '../../src/access/tokens.js';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { openStateStore } from '../../src/store/open-store.js';

export async function twinServers(first: string, second: string, organizations: Iterable<string>, description: string):
Promise<{ a: RunningServer; b: RunningServer; tokens: Map<string, string> }> {
  const store = await openStateStore(loadConfig({ DATA_DIR: first }));
  const tokens = new Map<string, string>();
  for (const org of organizations) tokens.set(org, (await issueToken(store, { kind: 'organization', organization: org, description })).token);
  await store.close();
  cpSync(join(first, 'state'), join(second, 'state'), { recursive: true });
  const env = { PORT: '0', POOL_WORKERS: '2', WORKER_CONCURRENCY: '2', SNAPSHOT_POLL_MS: '3600000', DUCKDB_MEMORY_LIMIT: '512MB', RATE_LIMIT_MAX: '1000000', RESPONSE_CACHE_MB: '0' };
  const a = await startServer(loadConfig({ ...env, DATA_DIR: first }), silentLogger);
  const b = await startServer(loadConfig({ ...env, DATA_DIR: second }), silentLogger);
  return { a, b, tokens };
}
