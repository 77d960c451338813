// interface §9: who may use the explorer of which organization. Teams and memberships come from the
// current snapshot, so a permission change arrives with the next snapshot.
import type { Snapshot } from '../snapshots/read/current-snapshot.js';
import type { TokenRecord } from '../store/state-store.js';

export function mayExplore(token: TokenRecord, organization: string, snapshot: Pick<Snapshot, 'organizations' | 'access'>): boolean {
  if (!snapshot.organizations.has(organization)) return false;
  const access = snapshot.access;
  switch (token.kind) {
    case 'organization':
      return token.organization === organization;
    case 'team':
      return token.organization === organization && token.team !== null && (access.qualifyingTeams[organization] ?? []).includes(token.team);
    case 'user':
      return token.user !== null && (access.userOrganizations[token.user] ?? []).includes(organization);
    case 'auditor':
      return true;
  }
}

/**
 * The organizations of `snapshot` a token reaches across organizations (docs/access.md): an auditor's every
 * one, a user's each it may explore, an organization's or team's its own where it may explore it. In
 * name order (the order of the snapshot's access list).
 */
export function reach(token: TokenRecord, snapshot: Pick<Snapshot, 'organizations' | 'access'>): string[] {
  if (token.kind === 'auditor') return [...snapshot.organizations];
  const candidates = token.kind === 'user' ? (token.user === null ? [] : snapshot.access.userOrganizations[token.user] ?? [])
    : token.organization === null ? [] : [token.organization];
  return [...new Set(candidates)].filter((o) => mayExplore(token, o, snapshot));
}

/** A token that may only read: an auditor's writes are refused (403) wherever it may read. */
export const readOnly = (token: TokenRecord): boolean => token.kind === 'auditor';

/** A token whose every request the audit log accounts for: an auditor's (and any token's across organizations: audit.ts). */
export const audited = (token: TokenRecord): boolean => token.kind === 'auditor';

/** The rate-limit context of a token (interface §9): per user, per team or per organization token; an auditor token's its own. */
export function rateLimitContext(token: TokenRecord): string {
  switch (token.kind) {
    case 'organization': return `org:${token.organization}`;
    case 'team': return `team:${token.organization}/${token.team}`;
    case 'user': return `user:${token.user}`;
    case 'auditor': return `auditor:${token.id}`;
  }
}
