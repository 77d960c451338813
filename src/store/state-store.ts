// The contract of the durable state the service keeps besides snapshots: API tokens and saved views.
// The embedded journal store implements it now; a Redis store must be a drop-in, so every
// method is async and every uniqueness rule is enforced by the store itself, atomically.

export type TokenKind = 'organization' | 'team' | 'user';

export interface TokenRecord {
  /** Public identifier, `at-` + 16 base-62 characters; the first part of the bearer token. */
  id: string;
  kind: TokenKind;
  /** The organization of an organization or team token; for a user token, as given at creation (informative). */
  organization: string | null;
  team: string | null;
  user: string | null;
  /** Hex SHA-256 of the token's secret part; the secret itself is never stored. */
  secretHash: string;
  createdAt: string;
  description: string | null;
}

export interface SavedQueryFilter {
  field: string;
  operator: string;
  value: string[];
}

export interface SavedQuery {
  type: string;
  filter: SavedQueryFilter[];
  fields?: string[];
  sort?: string[];
}

export interface SavedView {
  /** `sq-` + 16 base-62 characters. */
  id: string;
  organization: string;
  name: string;
  queryType: string;
  query: SavedQuery;
  createdAt: string;
  updatedAt: string;
}

export class NameTakenError extends Error {
  constructor(readonly viewName: string) {
    super(`a saved view named ${JSON.stringify(viewName)} already exists in this organization`);
    this.name = 'NameTakenError';
  }
}

/** The store cannot be reached or is unusable right now; callers answer 503. */
export class StoreUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreUnavailableError';
  }
}

/** The store's persisted data is damaged; raised at open, never papered over. */
export class StoreCorruptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreCorruptError';
  }
}

export interface TokenStore {
  putToken(token: TokenRecord): Promise<void>;
  getToken(id: string): Promise<TokenRecord | undefined>;
  listTokens(): Promise<TokenRecord[]>;
  /** Returns false when no such token exists. */
  revokeToken(id: string): Promise<boolean>;
}

export interface SavedViewStore {
  /** The organization's views ordered by createdAt, then id. */
  listViews(organization: string): Promise<SavedView[]>;
  /** Organizations that have (or had) saved views, sorted; for migrations and audits. */
  listViewOrganizations(): Promise<string[]>;
  getView(organization: string, id: string): Promise<SavedView | undefined>;
  /** Throws NameTakenError when the organization already has a view of that name (exact comparison). */
  createView(view: SavedView): Promise<SavedView>;
  /** Replaces name, query and updatedAt; undefined when absent; NameTakenError on a clash with another view. */
  updateView(organization: string, id: string, change: { name: string; query: SavedQuery; updatedAt: string }): Promise<SavedView | undefined>;
  /** Returns the deleted view, or undefined when absent. */
  deleteView(organization: string, id: string): Promise<SavedView | undefined>;
}

export interface StateStore extends TokenStore, SavedViewStore {
  close(): Promise<void>;
}
