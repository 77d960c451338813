// `explorer load` and `explorer load-series`: validate sources and make them the current snapshot.
import { join } from 'node:path';
import { readdir, stat } from 'node:fs/promises';
import { loadConfig, type Config } from '../config.js';
import { parseArgs, UsageError } from './args.js';
import { writerOptions } from './writer-options.js';
import { isTty, progress } from './progress.js';
import { loadSnapshot, SourceInvalidError } from '../snapshots/write/load.js';
import { WriterBusyError } from '../snapshots/writer-lock.js';

/**
 * Loads one source and says what it loaded (`what` names it: "snapshot", "day-03"); on a rejected source,
 * prints the loader's problems and returns the error instead of throwing it.
 */
async function loadOne(config: Config, dir: string, what: string, label?: string): Promise<SourceInvalidError | WriterBusyError | null> {
  try {
    const { manifest, seconds, compactionError } = await loadSnapshot(dir, {
      ...writerOptions(config), keepFull: config.snapshotKeepFull,
      onProgress: (m) => progress(label ? `${label}: ${m}` : m), ...(label === undefined ? {} : { label }),
    });
    if (isTty) process.stderr.write('\r\x1b[K');
    if (compactionError) console.error(`warning: older snapshots could not be compacted (${compactionError}); they stay whole until the next load`);
    const c = manifest.counts;
    console.log(`loaded ${what} ${manifest.id}: ${c.organizations} organizations, ${c.workspaces} workspaces, ${c.workspace_providers} provider rows, ${c.workspace_modules} module rows, ${c.workspace_resources ?? 0} resource rows in ${seconds.toFixed(1)} s`);
    return null;
  } catch (e) {
    if (isTty) process.stderr.write('\r\x1b[K');
    if (e instanceof WriterBusyError) return e;
    if (!(e instanceof SourceInvalidError)) throw e;
    for (const line of e.errors) console.error(line);
    if (e.errorCount > e.errors.length) console.error(`… and ${e.errorCount - e.errors.length} more`);
    return e;
  }
}

export async function load(argv: string[]): Promise<number> {
  const args = parseArgs(argv, ['label']);
  const dir = args.positional[0];
  if (!dir || args.positional.length > 1) throw new UsageError('load takes one directory');
  const rejected = await loadOne(loadConfig(), dir, 'snapshot', args.options.get('label'));
  if (rejected) console.error(`load rejected: ${rejected.message}; the current snapshot is unchanged`);
  return rejected ? 1 : 0;
}

export async function loadSeries(argv: string[]): Promise<number> {
  const args = parseArgs(argv, []);
  const dir = args.positional[0];
  if (!dir || args.positional.length > 1) throw new UsageError('load-series takes one directory');
  const entries = await readdir(dir).catch(() => null);
  if (entries === null) { console.error(`load-series: ${dir} is not a directory`); return 1; }
  // Plain code-unit order, never the locale's: day-01 … day-09, day-10 …
  const days: string[] = [];
  for (const name of entries.filter((n) => n.startsWith('day-')).sort()) {
    if ((await stat(join(dir, name))).isDirectory()) days.push(name);
  }
  if (days.length === 0) { console.error(`load-series: no day-* directories in ${dir}`); return 1; }
  const config = loadConfig();
  if (days.length > config.snapshotKeep) console.error(`warning: SNAPSHOT_KEEP is ${config.snapshotKeep}: only the newest ${config.snapshotKeep} of these ${days.length} days will be kept`);
  for (const [i, label] of days.entries()) {
    const rejected = await loadOne(config, join(dir, label), `${label} as snapshot`, label);
    if (!rejected) continue;
    const kept = i === 0 ? 'the current snapshot is unchanged' : `${days.slice(0, i).join(', ')} loaded, ${days[i - 1]} is current`;
    console.error(`load-series stopped at ${label}: ${rejected.message}; ${kept}; ${days.length - i - 1} later days not loaded`);
    return 1;
  }
  return 0;
}
