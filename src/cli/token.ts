// `explorer token create | list | revoke`.
import { loadConfig } from '../config.js';
import { parseArgs, UsageError } from './args.js';
import { issueToken } from '../access/tokens.js';
import { readAccess, readCurrentId } from '../snapshots/snapshot-dir.js';
import { openStateStore } from '../store/open-store.js';
import type { TokenKind } from '../store/state-store.js';

export async function token(argv: string[]): Promise<number> {
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
