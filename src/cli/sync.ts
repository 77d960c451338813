// `explorer sync --from <url> --organization <names> [--every <duration>] [--label L] [--insecure-http]`:
// mirrors organizations from a live Explorer API (docs/sync.md). Exit 0 when every organization synced,
// 1 naming each that failed, 2 for an error of use, before any request.
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig, loadSyncSettings, syncCredentials } from '../config.js';
import { Limiter, UpstreamRefusedError } from '../sync/read-views.js';
import { syncOrganization, type SyncReport } from '../sync/sync-organization.js';
import { findToken, parseUpstream, SyncUsageError } from '../sync/upstream-endpoint.js';
import { parseArgs, UsageError } from './args.js';
import { writerOptions } from './writer-options.js';

const ORGANIZATION = /^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$/;

/** `15m`, `30s`, `2h` in milliseconds. */
export function parseEvery(text: string): number {
  const m = /^(\d+)(s|m|h)$/.exec(text);
  if (!m || Number(m[1]) === 0) throw new UsageError(`--every must be a whole number of s, m or h (e.g. 15m), not ${JSON.stringify(text)}`);
  return Number(m[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as 's' | 'm' | 'h'];
}

export async function sync(argv: string[]): Promise<number> {
  const args = parseArgs(argv, ['from', 'organization', 'every', 'label'], ['insecure-http']);
  if (args.positional.length > 0) throw new UsageError(`sync takes no arguments but options (not ${args.positional[0]})`);
  const from = args.options.get('from');
  const names = (args.options.get('organization') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (!from) throw new UsageError('sync needs --from <url>');
  if (names.length === 0) throw new UsageError('sync needs --organization <name>[,<name>…]');
  for (const n of names) if (!ORGANIZATION.test(n)) throw new UsageError(`--organization: ${JSON.stringify(n)} is not an organization name`);
  const every = args.options.has('every') ? parseEvery(args.options.get('every')!) : null;
  const label = args.options.get('label');
  if (label !== undefined && ([...label].length < 1 || [...label].length > 255)) throw new UsageError('--label must be 1 to 255 characters');
  let upstream;
  let credential;
  try {
    upstream = parseUpstream(from, args.options.has('insecure-http'));
    credential = findToken(upstream.host, syncCredentials());
  } catch (e) {
    if (e instanceof SyncUsageError) throw new UsageError(e.message);
    throw e;
  }
  if (!credential) {
    throw new UsageError(`no token for ${upstream.host}: set EXPLORER_SYNC_TOKEN, or TF_TOKEN_… or credentials.tfrc.json as the engine's CLI reads them (docs/sync.md)`);
  }
  const config = loadConfig();
  let settings;
  try {
    settings = loadSyncSettings();
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const { concurrency, backoffMs, idleTimeoutMs: idleMs, memoryLimit } = settings;
  const stop = new AbortController();
  const onSignal = () => stop.abort(new Error('stopped'));
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  const once = async (): Promise<number> => {
    const failed: string[] = [];
    const limiter = new Limiter(concurrency);
    for (const organization of names) {
      if (stop.signal.aborted) break;
      try {
        const report = await syncOrganization(organization, {
          upstream: upstream!, token: credential!.token, limiter, writer: writerOptions(config), memoryLimit, signal: stop.signal, backoffMs, idleMs,
          ...(label === undefined ? {} : { label }), log: (line) => console.error(line),
        });
        console.log(describe(report));
      } catch (e) {
        if (stop.signal.aborted) break;
        const why = e instanceof UpstreamRefusedError ? `the upstream answered ${e.status}` : (e as Error).message;
        // The token is never in a message of ours; an error of a library could carry the request's headers.
        failed.push(`${organization}: ${why.split(credential!.token).join('[token]')}`);
      }
    }
    for (const f of failed) console.error(`sync failed for ${f}; it keeps what it had`);
    return failed.length > 0 ? 1 : 0;
  };
  try {
    if (every === null) return await once();
    // One run, then the next `every` after the previous one started, never two at once.
    for (;;) {
      const started = Date.now();
      await once();
      if (stop.signal.aborted) return 0;
      const wait = Math.max(0, started + every - Date.now());
      // Node's own abortable wait: SIGTERM ends it at once.
      await sleep(wait, undefined, { signal: stop.signal }).catch(() => undefined);
      if (stop.signal.aborted) return 0;
    }
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}

function describe(r: SyncReport): string {
  return `${r.organization}: read ${r.workspaces} workspaces${r.resources === null ? ' (no resources view)' : `, ${r.resources} resources`} (${(r.bytes / 1e6).toFixed(1)} MB); `
    + `upserted ${r.upserted}, deleted ${r.deleted} workspaces; ${r.snapshot ? `snapshot ${r.snapshot}` : 'unchanged'}; `
    + `read ${r.seconds.read} s, rebuild ${r.seconds.rebuild} s, apply ${r.seconds.apply} s`;
}
