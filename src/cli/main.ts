#!/usr/bin/env node
// The `explorer` command: sample, load, load-series, token, serve. Every command honours DATA_DIR (default ./data).
import { loadConfig, type Config } from '../config.js';
import { jsonLogger } from '../log.js';
import { parseArgs, UsageError, wholeNumber } from './args.js';
import { issueToken } from '../access/tokens.js';
import { readAccess, readCurrentId } from '../snapshots/snapshot-dir.js';
import { loadSnapshot, SourceInvalidError } from '../snapshots/write/load.js';
import { SAMPLE_DEFAULTS, writeSample } from '../sample/sample.js';
import { writeSampleSeries, type DaySummary } from '../sample/sample-series.js';
import { startServer } from '../server.js';
import { openStateStore } from '../store/open-store.js';
import type { TokenKind } from '../store/state-store.js';
import { openJournalStore } from '../store/journal-store.js';
import { migrateState } from '../store/migrate.js';
import { join } from 'node:path';
import { readdir, stat } from 'node:fs/promises';

const USAGE = `usage: explorer <command>
  sample <dir> [--organizations N] [--workspaces N] [--seed S]   write a synthetic snapshot source
         [--gzip]                                                as <file>.ndjson.gz
         [--days N]                                              or N of them, a day apart: <dir>/day-01 … day-N
  load <dir> [--label L]                                         validate a source and make it the current snapshot
  load-series <dir>                                              load <dir>/day-* oldest first, each labelled with its name
  token create --organization O [--team T | --user U] [--description D]
  token list                                                     list tokens (no secrets)
  token revoke <id>
  serve                                                          run the HTTP server
  migrate-state --to-redis                                       copy the embedded tokens and saved views into REDIS_URL
Environment: DATA_DIR (default ./data); see README.md for the rest.`;

const isTty = process.stderr.isTTY;
function progress(message: string): void {
  if (isTty) process.stderr.write(`\r\x1b[K${message}`);
}

async function sample(argv: string[]): Promise<void> {
  const args = parseArgs(argv, ['organizations', 'workspaces', 'seed', 'days'], ['gzip']);
  const dir = args.positional[0];
  if (!dir || args.positional.length > 1) throw new UsageError('sample takes one directory');
  const options = {
    organizations: wholeNumber(args, 'organizations', SAMPLE_DEFAULTS.organizations),
    workspaces: wholeNumber(args, 'workspaces', SAMPLE_DEFAULTS.workspaces),
    seed: wholeNumber(args, 'seed', SAMPLE_DEFAULTS.seed),
    gzip: args.options.has('gzip'),
    onProgress: (written: number, total: number) => progress(`writing workspaces: ${written.toLocaleString('en')} / ${total.toLocaleString('en')}`),
  };
  // A sample has at least one organization with at least one workspace (more organizations than workspaces are clamped).
  for (const n of ['organizations', 'workspaces'] as const) if (options[n] < 1) throw new UsageError(`--${n} must be at least 1`);
  if (args.options.has('days') && options.gzip) throw new UsageError('--gzip writes one sample, not a series of --days');
  if (args.options.has('days')) return sampleSeries(dir, options, wholeNumber(args, 'days', 1));
  const started = performance.now();
  const summary = await writeSample(dir, options);
  if (isTty) process.stderr.write('\r\x1b[K');
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`wrote ${dir}: ${JSON.stringify(summary.counts)} in ${seconds} s; largest organization ${summary.largestOrganization}`);
}

async function sampleSeries(dir: string, options: Parameters<typeof writeSample>[1], days: number): Promise<void> {
  if (days < 1) throw new UsageError('--days must be at least 1');
  const describe = (d: DaySummary) => {
    const c = d.changes;
    if (c === null) return 'the plain sample';
    const kinds = [
      [c.created, 'created'], [c.deleted, 'deleted'], [c.engineUpgrades, 'engine upgrades'], [c.providerUpgrades, 'provider upgrades'],
      [c.moduleUpgrades, 'module upgrades'], [c.driftAppeared, 'drifted'], [c.driftCleared, 'drift cleared'],
    ] as const;
    return `${c.workspaces} workspaces changed (${kinds.map(([n, what]) => `${n} ${what}`).join(', ')})`;
  };
  const written = await writeSampleSeries(dir, {
    ...options,
    days,
    onDay: (d) => {
      if (isTty) process.stderr.write('\r\x1b[K');
      console.log(`wrote ${d.dir}: ${JSON.stringify(d.counts)} in ${d.seconds.toFixed(1)} s; ${describe(d)}`);
      if (d.day < days) progress(`writing day ${d.day + 1} of ${days}`);
    },
  });
  // Left over from a longer series: load-series would load them after these days.
  const names = new Set(written.map((d) => d.name));
  const stale = (await readdir(dir)).filter((n) => n.startsWith('day-') && !names.has(n)).sort();
  if (stale.length > 0) console.error(`warning: ${dir} also holds ${stale.join(', ')}, not written now; load-series would load them too`);
}

/**
 * Loads one source and says what it loaded (`what` names it: "snapshot", "day-03"); on a rejected source,
 * prints the loader's problems and returns the error instead of throwing it.
 */
async function loadOne(config: Config, dir: string, what: string, label?: string): Promise<SourceInvalidError | null> {
  try {
    const { manifest, seconds, compactionError } = await loadSnapshot(dir, {
      dataDir: config.dataDir, keep: config.snapshotKeep, keepFull: config.snapshotKeepFull, memoryLimit: config.loadMemoryLimit,
      onProgress: (m) => progress(label ? `${label}: ${m}` : m), ...(label === undefined ? {} : { label }),
    });
    if (isTty) process.stderr.write('\r\x1b[K');
    if (compactionError) console.error(`warning: older snapshots could not be compacted (${compactionError}); they stay whole until the next load`);
    const c = manifest.counts;
    console.log(`loaded ${what} ${manifest.id}: ${c.organizations} organizations, ${c.workspaces} workspaces, ${c.workspace_providers} provider rows, ${c.workspace_modules} module rows, ${c.workspace_resources ?? 0} resource rows in ${seconds.toFixed(1)} s`);
    return null;
  } catch (e) {
    if (isTty) process.stderr.write('\r\x1b[K');
    if (!(e instanceof SourceInvalidError)) throw e;
    for (const line of e.errors) console.error(line);
    if (e.errorCount > e.errors.length) console.error(`… and ${e.errorCount - e.errors.length} more`);
    return e;
  }
}

async function load(argv: string[]): Promise<number> {
  const args = parseArgs(argv, ['label']);
  const dir = args.positional[0];
  if (!dir || args.positional.length > 1) throw new UsageError('load takes one directory');
  const rejected = await loadOne(loadConfig(), dir, 'snapshot', args.options.get('label'));
  if (rejected) console.error(`load rejected: ${rejected.message}; the current snapshot is unchanged`);
  return rejected ? 1 : 0;
}

async function loadSeries(argv: string[]): Promise<number> {
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

async function token(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const config = loadConfig();
  const store = await openStateStore(config);
  try {
    if (sub === 'create') {
      const args = parseArgs(rest, ['organization', 'team', 'user', 'description']);
      const organization = args.options.get('organization');
      const team = args.options.get('team');
      const user = args.options.get('user');
      if (!organization && !user) throw new UsageError('token create needs --organization (and optionally --team or --user)');
      if (team && user) throw new UsageError('give --team or --user, not both');
      if (team && !organization) throw new UsageError('--team needs --organization');
      const kind: TokenKind = team ? 'team' : user ? 'user' : 'organization';
      await warnIfUnknown(config.dataDir, organization, team);
      const { record, token } = await issueToken(store, { kind, organization, team, user, description: args.options.get('description') });
      console.error(`created ${record.kind} token ${record.id}${organization ? ` for ${organization}` : ''}${team ? ` team ${team}` : ''}${user ? ` user ${user}` : ''}`);
      console.log(token);
      return 0;
    }
    if (sub === 'list') {
      parseArgs(rest, []);
      for (const t of await store.listTokens()) {
        console.log([t.id, t.kind, t.organization ?? '-', t.team ?? '-', t.user ?? '-', t.createdAt, t.description ?? ''].join('\t'));
      }
      return 0;
    }
    if (sub === 'revoke') {
      const args = parseArgs(rest, []);
      const id = args.positional[0];
      if (!id) throw new UsageError('token revoke takes a token id');
      if (await store.revokeToken(id)) { console.log(`revoked ${id}`); return 0; }
      console.error(`no token ${id}`);
      return 1;
    }
    throw new UsageError('token takes create, list or revoke');
  } finally {
    await store.close();
  }
}

async function warnIfUnknown(dataDir: string, organization?: string, team?: string): Promise<void> {
  const id = await readCurrentId(dataDir).catch(() => null);
  if (!id || !organization) return;
  const access = await readAccess(dataDir, id).catch(() => null);
  if (!access) return;
  if (!access.organizations.includes(organization)) console.error(`warning: organization ${organization} is not in the current snapshot`);
  else if (team && !(access.teams[organization] ?? []).includes(team)) console.error(`warning: team ${team} is not in organization ${organization} in the current snapshot`);
  else if (team && !(access.qualifyingTeams[organization] ?? []).includes(team)) console.error(`warning: team ${team} has no explorer access (not owners, no read_workspaces or read_projects)`);
}

async function serve(argv: string[]): Promise<void> {
  parseArgs(argv, []);
  const config = loadConfig();
  const logger = jsonLogger();
  const uv = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  const queries = config.poolWorkers * config.workerConcurrency;
  if (uv < queries + 4) logger.log('warn', 'UV_THREADPOOL_SIZE is too small for the query pool; start with `npm run explorer -- serve` or set it', { UV_THREADPOOL_SIZE: uv, concurrent_queries: queries });
  const running = await startServer(config, logger);
  const stop = (signal: string) => {
    logger.log('info', 'signal received', { signal });
    running.shutdown().then(() => process.exit(0), (e) => { logger.log('error', 'shutdown failed', { error: String(e) }); process.exit(1); });
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

async function migrate(argv: string[]): Promise<number> {
  const args = parseArgs(argv.filter((a) => a !== '--to-redis'), []);
  if (!argv.includes('--to-redis') || args.positional.length > 0) throw new UsageError('migrate-state takes --to-redis');
  const config = loadConfig();
  if (!config.redisUrl) throw new UsageError('migrate-state --to-redis needs REDIS_URL');
  const from = await openJournalStore(join(config.dataDir, 'state'));
  const to = await openStateStore(config);
  try {
    const r = await migrateState(from, to);
    for (const c of r.conflicts) console.error(`conflict: ${c}`);
    console.log(`migrated ${r.tokens} tokens and ${r.views} saved views to Redis (${r.skipped} already there, ${r.conflicts.length} conflicts)`);
    return r.conflicts.length > 0 ? 1 : 0;
  } finally {
    await from.close();
    await to.close();
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'sample': await sample(rest); return 0;
    case 'load': return load(rest);
    case 'load-series': return loadSeries(rest);
    case 'token': return token(rest);
    case 'serve': await serve(rest); return -1;
    case 'migrate-state': return migrate(rest);
    case undefined: case 'help': case '--help': console.log(USAGE); return command ? 0 : 2;
    default: throw new UsageError(`unknown command ${command}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => { if (code >= 0) process.exitCode = code; },
  (e) => {
    if (e instanceof UsageError) { console.error(`explorer: ${e.message}\n${USAGE}`); process.exitCode = 2; return; }
    console.error(`explorer: ${(e as Error).message}`);
    process.exitCode = 1;
  },
);
