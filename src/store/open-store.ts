import { join } from 'node:path';
import type { Config } from '../config.js';
import { openJournalStore } from './journal-store.js';
import type { StateStore } from './state-store.js';

/** The configured state store: the embedded journal under DATA_DIR/state. */
export async function openStateStore(config: Pick<Config, 'dataDir'>): Promise<StateStore> {
  return openJournalStore(join(config.dataDir, 'state'));
}
