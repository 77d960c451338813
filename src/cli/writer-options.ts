// What every writing command (load, load-series, apply, ingest) passes the snapshot writers from the
// configuration: the data directory, retention, memory, and how long to wait for another writer, saying so.
import type { Config } from '../config.js';

export const writerOptions = (config: Config) => ({
  dataDir: config.dataDir, keep: config.snapshotKeep, keepDays: config.snapshotKeepDays, memoryLimit: config.loadMemoryLimit,
  wholeRows: config.batchWholeRows, liftRows: config.batchLiftRows,
  writerLock: {
    waitMs: config.writerWaitMs,
    onWait: (holder: { what: string; pid: number; host: string } | null) =>
      console.error(`waiting for ${holder ? `${holder.what} (pid ${holder.pid} on ${holder.host})` : 'another writer'} to finish writing ${config.dataDir}`),
  },
});
