// `explorer migrate-state --to-redis`: copy the embedded tokens and saved views into REDIS_URL or REDIS_CLUSTER.
import { join } from 'node:path';
import { loadConfig, redisConfigured } from '../config.js';
import { parseArgs, UsageError } from './args.js';
import { openStateStore } from '../store/open-store.js';
import { openJournalStore } from '../store/journal-store.js';
import { migrateState } from '../store/migrate.js';

export async function migrate(argv: string[]): Promise<number> {
  const args = parseArgs(argv.filter((a) => a !== '--to-redis'), []);
  if (!argv.includes('--to-redis') || args.positional.length > 0) throw new UsageError('migrate-state takes --to-redis');
  const config = loadConfig();
  if (!redisConfigured(config)) throw new UsageError('migrate-state --to-redis needs REDIS_URL or REDIS_CLUSTER');
  const from = await openJournalStore(join(config.dataDir, 'state'));
  const to = await openStateStore(config);
  try {
    const r = await migrateState(from, to);
    for (const c of r.conflicts) console.error(`conflict: ${c}`);
    console.log(`migrated ${r.tokens} tokens, ${r.views} saved views and ${r.configurations} notification configurations to Redis (${r.skipped} already there, ${r.conflicts.length} conflicts)`);
    return r.conflicts.length > 0 ? 1 : 0;
  } finally {
    await from.close();
    await to.close();
  }
}
