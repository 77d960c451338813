// Where a sync reads from and with which token: the upstream's address checked before any request, and the
// token found as the engine's own CLI finds it (docs/sync.md). Pure but for one file read: the variables it
// looks in come from config.ts (syncCredentials).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SyncCredentials } from '../config.js';

export class SyncUsageError extends Error {}

export interface Upstream {
  /** The base address, without a trailing slash: routes are `${base}/api/v2/…`. */
  base: string;
  /** The host as credentials name it: the URL's host, with `:<port>` when the URL names one. */
  host: string;
}

/** Loopback as the sync's rules mean it: 127.0.0.0/8, ::1 and localhost. */
const isLoopback = (hostname: string) => hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);

/**
 * The upstream named by `--from`. Plain http only to loopback unless `insecureHttp`; never with credentials
 * in the URL (they would end up in logs and process listings), never another scheme, never a query or fragment.
 */
export function parseUpstream(from: string, insecureHttp = false): Upstream {
  let url: URL;
  try { url = new URL(from); } catch { throw new SyncUsageError(`--from ${JSON.stringify(from)} is not a URL`); }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new SyncUsageError(`--from must be an https:// address, not ${url.protocol}`);
  if (url.username || url.password) throw new SyncUsageError('--from must not carry credentials: give the token as docs/sync.md says');
  if (url.search || url.hash) throw new SyncUsageError('--from is the upstream\'s base address, without a query or fragment');
  // The URL parser has already turned numeric forms (2130706433, 0x7f.1) into dotted quads.
  if (url.protocol === 'http:' && !insecureHttp && !isLoopback(url.hostname)) {
    throw new SyncUsageError(`--from ${url.host}: plain http is refused except to a loopback address (give --insecure-http to allow it)`);
  }
  return { base: `${url.origin}${url.pathname.replace(/\/+$/, '')}`, host: url.host };
}

/** `TF_TOKEN_<host>` as the engine's CLI names it: `.` as `_`, `-` as `__`, and the port's `:` as `___`. */
export const tokenVariable = (host: string) => `TF_TOKEN_${host.replace(/-/g, '__').replace(/\./g, '_').replace(/:/g, '___')}`;

/** Where a token was found, for messages (never the token). */
export type TokenSource = 'EXPLORER_SYNC_TOKEN' | `TF_TOKEN_${string}` | 'credentials.tfrc.json';

/**
 * The token for `host`, first found wins: EXPLORER_SYNC_TOKEN, TF_TOKEN_<host>, then the CLI's credentials
 * file (`$TF_CLI_CONFIG_DIR` or `~/.terraform.d`, `credentials.tfrc.json`). Null when none has one.
 */
export function findToken(host: string, credentials: SyncCredentials): { token: string; source: TokenSource } | null {
  if (credentials.syncToken) return { token: credentials.syncToken, source: 'EXPLORER_SYNC_TOKEN' };
  const variable = tokenVariable(host);
  // The CLI matches the variable's name case-insensitively for the host part: so do we.
  const named = Object.keys(credentials.hostTokens).find((k) => k.toLowerCase() === variable.toLowerCase());
  if (named) return { token: credentials.hostTokens[named]!, source: variable as TokenSource };
  const file = join(credentials.cliConfigDir, 'credentials.tfrc.json');
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch { return null; }
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch { throw new SyncUsageError(`${file} is not JSON`); }
  const entry = (parsed as { credentials?: Record<string, { token?: unknown }> }).credentials?.[host];
  return typeof entry?.token === 'string' && entry.token ? { token: entry.token, source: 'credentials.tfrc.json' } : null;
}
