// `explorer token create | list | revoke`.
import { loadConfig } from '../config.js';
import { parseArgs, UsageError } from './args.js';
import { issueToken } from '../access/tokens.js';
import { expiryOf, hasExpired, parseDateTime, parseDuration } from '../access/lifetimes.js';
import { readAccess, readCurrentId } from '../snapshots/snapshot-dir.js';
import { openStateStore } from '../store/open-store.js';
import type { TokenKind } from '../store/state-store.js';

export async function token(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const config = loadConfig();
  const store = await openStateStore(config);
  try {
    if (sub === 'create') {
      const args = parseArgs(rest, ['organization', 'team', 'user', 'description', 'expires-in', 'expires-at'], ['auditor']);
      const organization = args.options.get('organization');
      const team = args.options.get('team');
      const user = args.options.get('user');
      const auditor = args.options.has('auditor');
      if (auditor && (organization || team || user)) throw new UsageError('an --auditor token reads every organization: give no --organization, --team or --user');
      if (!auditor && !organization && !user) throw new UsageError('token create needs --organization (and optionally --team or --user), or --auditor');
      if (team && user) throw new UsageError('give --team or --user, not both');
      if (team && !organization) throw new UsageError('--team needs --organization');
      const kind: TokenKind = auditor ? 'auditor' : team ? 'team' : user ? 'user' : 'organization';
      const expiresAt = expiryAsked(args.options.get('expires-in'), args.options.get('expires-at'), config.tokenMaxTtlMs);
      await warnIfUnknown(config.dataDir, organization, team);
      const { record, token } = await issueToken(store, { kind, organization, team, user, description: args.options.get('description'), expiresAt });
      console.error(`created ${record.kind} token ${record.id}${organization ? ` for ${organization}` : ''}${team ? ` team ${team}` : ''}${user ? ` user ${user}` : ''}, expires ${record.expiresAt ?? 'never'}`);
      console.log(token);
      return 0;
    }
    if (sub === 'list') {
      parseArgs(rest, []);
      // Each token's kind and reach, when it was made and when it stops (under TOKEN_MAX_TTL as now set), never a secret.
      const now = Date.now();
      for (const t of await store.listTokens()) {
        const expiry = expiryOf(t, config.tokenMaxTtlMs);
        const expires = expiry === null ? 'never' : new Date(expiry).toISOString();
        console.log([t.id, t.kind, t.organization ?? '-', t.team ?? '-', t.user ?? '-', t.createdAt, expires, hasExpired(t, config.tokenMaxTtlMs, now) ? 'expired' : 'valid', t.description ?? ''].join('\t'));
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

/**
 * The expiry `token create` was asked for (epoch ms), or TOKEN_MAX_TTL from now when none was asked and a
 * maximum is set; null: never. Anything else is a usage error, and nothing is created.
 */
function expiryAsked(expiresIn: string | undefined, expiresAt: string | undefined, maxTtlMs: number | null): number | null {
  if (expiresIn !== undefined && expiresAt !== undefined) throw new UsageError('give --expires-in or --expires-at, not both');
  const now = Date.now();
  let expiry: number | null = null;
  if (expiresIn !== undefined) {
    const ms = parseDuration(expiresIn);
    if (ms === null) throw new UsageError(`--expires-in: a whole positive number with s, m, h or d (90s, 30m, 12h, 90d), not ${JSON.stringify(expiresIn)}`);
    expiry = now + ms;
  }
  if (expiresAt !== undefined) {
    expiry = parseDateTime(expiresAt);
    if (expiry === null) throw new UsageError(`--expires-at: an RFC 3339 date-time with an offset (2027-01-31T12:00:00Z), not ${JSON.stringify(expiresAt)}`);
    if (expiry <= now) throw new UsageError(`--expires-at: ${expiresAt} is already past`);
  }
  if (maxTtlMs === null) return expiry;
  if (expiry === null) return now + maxTtlMs;
  if (expiry > now + maxTtlMs) throw new UsageError(`the expiry asked for is later than TOKEN_MAX_TTL allows (${new Date(now + maxTtlMs).toISOString()} at most)`);
  return expiry;
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
