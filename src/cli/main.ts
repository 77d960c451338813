#!/usr/bin/env node
// The `explorer` command: sample, sample-changes, load, load-series, apply, ingest, sync, token, serve. Every command honours DATA_DIR (default ./data).
// Only argument parsing, the usage text and the exit handling load at start; each command's module (and with it
// DuckDB, the server, the store, the sample generator) is imported when that command runs, so no command pays
// start-up time for the others' modules.
import { UsageError } from './args.js';
import { setAllocatorFor } from '../duckdb/allocator.js';

const USAGE = `usage: explorer <command>
  sample <dir> [--organizations N] [--workspaces N] [--seed S]   write a synthetic snapshot source
         [--gzip]                                                as <file>.ndjson.gz
         [--days N]                                              or N of them, a day apart: <dir>/day-01 … day-N
  sample-changes <source> <out> [--batches N] [--workspaces K] [--seed S]
                                                                 write N change batches of K workspaces each, derived from a source
  load <dir> [--label L]                                         validate a source and make it the current snapshot
  load-series <dir>                                              load <dir>/day-* oldest first, each labelled with its name
  apply <batch-dir> [--label L]                                  apply a change batch to the current snapshot
  ingest <spool-dir>                                             apply the batches renamed into <spool-dir>/incoming, until stopped
  sync --from <url> --organization <name>[,<name>…]              mirror organizations from a live Explorer API
       [--every <15m|30s|2h>] [--label L] [--insecure-http]      (the token: EXPLORER_SYNC_TOKEN or TF_TOKEN_<host>)
  token create --organization O [--team T | --user U] | --auditor  [--description D]
       [--expires-in <90s|30m|12h|90d> | --expires-at <RFC 3339>]  (TOKEN_MAX_TTL: the longest allowed, and the default)
  token list                                                     list tokens: kind, reach, created, expires (no secrets)
  token revoke <id>
  serve                                                          run the HTTP server
  notify                                                         send saved views' notifications, until stopped
  migrate-state --to-redis                                       copy the embedded tokens and saved views into REDIS_URL (or REDIS_CLUSTER)
Environment: DATA_DIR (default ./data); docs/configuration.md lists the rest.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Before any command's module loads DuckDB: jemalloc reads its setting at its first allocation.
  setAllocatorFor(command);
  switch (command) {
    case 'sample': await (await import('./sample.js')).sample(rest); return 0;
    case 'sample-changes': return (await import('./sample-changes.js')).sampleChanges(rest);
    case 'load': return (await import('./load.js')).load(rest);
    case 'load-series': return (await import('./load.js')).loadSeries(rest);
    case 'apply': return (await import('./apply.js')).apply(rest);
    case 'ingest': return (await import('./apply.js')).ingest(rest);
    case 'sync': return (await import('./sync.js')).sync(rest);
    case 'token': return (await import('./token.js')).token(rest);
    case 'serve': await (await import('./serve.js')).serve(rest); return -1;
    case 'notify': return (await import('./notify.js')).notify(rest);
    case 'migrate-state': return (await import('./migrate-state.js')).migrate(rest);
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
