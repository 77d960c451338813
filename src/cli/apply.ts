// `explorer apply <batch-dir>` and `explorer ingest <spool-dir>`: change batches (docs/changes.md).
import { loadConfig } from '../config.js';
import { writerOptions } from './writer-options.js';
import { parseArgs, UsageError } from './args.js';
import { recordRejectedBatch } from '../snapshots/snapshot-dir.js';
import { WriterBusyError } from '../snapshots/writer-lock.js';
import { applyBatch, batchDigest, BatchRejectedError, NoSnapshotError } from '../snapshots/write/apply.js';
import { lowerPriority } from '../snapshots/write/priority.js';
import { basename } from 'node:path';

const kinds = (counts: Record<string, number>) => Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(', ');

export async function apply(argv: string[]): Promise<number> {
  const args = parseArgs(argv, ['label']);
  const dir = args.positional[0];
  if (!dir || args.positional.length > 1) throw new UsageError('apply takes one batch directory');
  const config = loadConfig();
  try {
    const { manifest, batch, seconds } = await applyBatch(dir, { ...writerOptions(config), threads: config.batchThreads, ...(args.options.has('label') ? { label: args.options.get('label')! } : {}) });
    console.log(`applied ${basename(dir)} as snapshot ${manifest.id}: upserted ${kinds(batch.upserted)}; deleted ${kinds(batch.deleted)}; in ${seconds.toFixed(2)} s`);
    return 0;
  } catch (e) {
    if (e instanceof BatchRejectedError) {
      for (const line of e.errors) console.error(line);
      if (e.errorCount > e.errors.length) console.error(`… and ${e.errorCount - e.errors.length} more`);
      await recordRejectedBatch(config.dataDir, { name: basename(dir), digest: await batchDigest(dir).catch(() => ''), problems: e.errorCount });
      console.error(`apply rejected: ${e.message}; the current snapshot is unchanged`);
      return 1;
    }
    if (e instanceof NoSnapshotError || e instanceof WriterBusyError) {
      console.error(`apply: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

export async function ingest(argv: string[]): Promise<number> {
  const args = parseArgs(argv, []);
  const spool = args.positional[0];
  if (!spool || args.positional.length > 1) throw new UsageError('ingest takes one spool directory');
  const config = loadConfig();
  // The follower below the servers on the same cores (a nice-10 task gets about a tenth of a busy core's share).
  if (config.ingestNice > 0) lowerPriority(config.ingestNice);
  const { runIngest } = await import('../snapshots/write/ingest.js');
  const stop = new AbortController();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => stop.abort());
  console.error(`ingest: following ${spool}/incoming for ${config.dataDir}; rename a complete batch directory into it`);
  await runIngest(spool, {
    ...writerOptions(config),
    threads: config.batchThreads,
    compactIdleMs: config.ingestCompactIdleMs,
    compactBytes: config.ingestCompactBytes,
    tidyRows: config.ingestTidyRows,
    tidyShare: config.ingestTidyShare,
    tidyUnitRows: config.ingestTidyUnitRows,
    tidyCpu: config.ingestTidyCpu,
    coalesceMaxMs: config.ingestCoalesceMaxMs,
    signal: stop.signal,
    log: (level, message, fields) => console.log(JSON.stringify({ time: new Date().toISOString(), level, message, ...fields })),
  });
  return 0;
}
