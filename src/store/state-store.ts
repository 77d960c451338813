// The contract of the durable state the service keeps besides snapshots: API tokens, saved views and their
// notification configurations.
// The embedded journal store implements it now; a Redis store must be a drop-in, so every
// method is async and every uniqueness rule is enforced by the store itself, atomically.

/** `auditor`: reads every organization, writes nothing (docs/decisions.md, Tokens). */
export type TokenKind = 'organization' | 'team' | 'user' | 'auditor';

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
  /** When it stops being accepted (ISO 8601, UTC); absent: never (unless TOKEN_MAX_TTL says otherwise). */
  expiresAt?: string | null;
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

export type DestinationType = 'generic' | 'slack' | 'microsoft-teams';
export const DESTINATION_TYPES: readonly DestinationType[] = ['generic', 'slack', 'microsoft-teams'];
export type NotificationTrigger = 'explorer:rows-added' | 'explorer:rows-removed' | 'explorer:rows-changed' | 'explorer:threshold';
export const NOTIFICATION_TRIGGERS: readonly NotificationTrigger[] = ['explorer:rows-added', 'explorer:rows-removed', 'explorer:rows-changed', 'explorer:threshold'];

/** `count` or `sum:<number field>`, crossing `above` or `below` (one of the two). */
export interface NotificationThreshold {
  measure: string;
  above?: number;
  below?: number;
}

export interface NotificationConfiguration {
  /** `nc-` + 16 base-62 characters. */
  id: string;
  organization: string;
  /** The saved view it belongs to; deleting the view deletes it. */
  viewId: string;
  name: string;
  enabled: boolean;
  destinationType: DestinationType;
  url: string;
  /** The HMAC key of a generic destination; never answered. */
  token: string | null;
  triggers: NotificationTrigger[];
  threshold: NotificationThreshold | null;
  createdAt: string;
  updatedAt: string;
}

/** A saved view holds at most this many notification configurations. */
export const MAX_CONFIGURATIONS_PER_VIEW = 20;

export class TooManyConfigurationsError extends Error {
  constructor() {
    super(`a saved view holds at most ${MAX_CONFIGURATIONS_PER_VIEW} notification configurations`);
    this.name = 'TooManyConfigurationsError';
  }
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
  /** Returns the deleted view, or undefined when absent; its notification configurations go with it. */
  deleteView(organization: string, id: string): Promise<SavedView | undefined>;
}

export interface NotificationConfigurationStore {
  /** The view's configurations ordered by createdAt, then id. */
  listNotificationConfigurations(organization: string, viewId: string): Promise<NotificationConfiguration[]>;
  getNotificationConfiguration(organization: string, viewId: string, id: string): Promise<NotificationConfiguration | undefined>;
  /** Undefined when the view is gone; throws TooManyConfigurationsError when it holds MAX_CONFIGURATIONS_PER_VIEW already. */
  createNotificationConfiguration(configuration: NotificationConfiguration): Promise<NotificationConfiguration | undefined>;
  /** Replaces the configuration whole; undefined when it (or its view) is gone. */
  updateNotificationConfiguration(configuration: NotificationConfiguration): Promise<NotificationConfiguration | undefined>;
  /** Returns the deleted configuration, or undefined when absent. */
  deleteNotificationConfiguration(organization: string, viewId: string, id: string): Promise<NotificationConfiguration | undefined>;
}

/** A notification recorded before it is sent: its delivery id stays the same on every try. */
export interface PendingNotification {
  /** The delivery id (`X-Explorer-Delivery`): `nd-` + 16 base-62 characters. */
  id: string;
  organization: string;
  viewId: string;
  configurationId: string;
  /** The configuration's destination type when it was recorded (for the metrics' labels). */
  destinationType: DestinationType;
  /** The snapshot pair it reports (from null: the configuration's first check). */
  from: string | null;
  to: string;
  /** The facts it reports, rendered for its destination type when sent. */
  facts: unknown;
  createdAt: string;
  /** Tries so far, and when the next is due. */
  attempts: number;
  nextAttemptAt: string;
}

/** One try of a notification or a verification, as `delivery-responses` shows it. */
export interface DeliveryResponse {
  url: string;
  /** The receiver's status; null when none came (refused, timed out, not allowed). */
  code: number | null;
  /** The first 1,024 bytes of its body. */
  body: string;
  /** Its content-type and retry-after, when present. */
  headers: Record<string, string>;
  sentAt: string;
  successful: boolean;
  attempt: number;
}

/** A configuration a delivery response belongs to. */
export interface ConfigurationRef { organization: string; viewId: string; configurationId: string }

/** Delivery responses kept per configuration, newest first. */
export const DELIVERY_RESPONSES_KEPT = 10;

/**
 * The notifier's durable state: which snapshot it checked last, the notifications recorded and not yet sent
 * for good, the last delivery responses of each configuration, and the lease of the one sender.
 */
export interface NotifierStore {
  /** The last snapshot whose pair was checked; null before the first. */
  notifierCursor(): Promise<string | null>;
  /** In one step: `snapshot` checked, and the notifications it made recorded (an outbox). */
  recordChecked(snapshot: string, notifications: PendingNotification[]): Promise<void>;
  /** Notifications that belong to no snapshot pair (a threshold that holds when its configuration is enabled). */
  queueNotifications(notifications: PendingNotification[]): Promise<void>;
  /** Every notification not yet sent for good, in the order they were recorded. */
  pendingNotifications(): Promise<PendingNotification[]>;
  /**
   * A try of pending notification `id`: its response kept, and the notification either due again at
   * `nextAttemptAt` or, with null, done (sent, or failed for good).
   */
  recordAttempt(id: string, response: DeliveryResponse, nextAttemptAt: string | null): Promise<void>;
  /** A response that belongs to no pending notification (a verification). */
  recordResponse(ref: ConfigurationRef, response: DeliveryResponse): Promise<void>;
  /** The configuration's last DELIVERY_RESPONSES_KEPT responses, newest first. */
  deliveryResponses(ref: ConfigurationRef): Promise<DeliveryResponse[]>;
  /** Takes or renews the sender's lease for `ttlMs`; false while another holder's lease runs. */
  takeNotifierLease(holder: string, ttlMs: number): Promise<boolean>;
  releaseNotifierLease(holder: string): Promise<void>;
}

export interface StateStore extends TokenStore, SavedViewStore, NotificationConfigurationStore, NotifierStore {
  close(): Promise<void>;
}

/** The order every list of the store answers in (the contract's "by createdAt, then id"), whatever the backend. */
export const byCreation = (a: { createdAt: string; id: string }, b: { createdAt: string; id: string }) =>
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

/** A backend's four parts, one per concern (journal/ and redis/ each have a file for each). */
export interface StoreParts {
  tokens: TokenStore;
  views: SavedViewStore;
  configurations: NotificationConfigurationStore;
  notifier: NotifierStore;
}

/** Each part's methods by name: what `storeOf` puts together. */
const METHODS = {
  tokens: ['putToken', 'getToken', 'listTokens', 'revokeToken'],
  views: ['listViews', 'listViewOrganizations', 'getView', 'createView', 'updateView', 'deleteView'],
  configurations: ['listNotificationConfigurations', 'getNotificationConfiguration', 'createNotificationConfiguration',
    'updateNotificationConfiguration', 'deleteNotificationConfiguration'],
  notifier: ['notifierCursor', 'recordChecked', 'queueNotifications', 'pendingNotifications', 'recordAttempt', 'recordResponse',
    'deliveryResponses', 'takeNotifierLease', 'releaseNotifierLease'],
} as const satisfies { [K in keyof StoreParts]: readonly (keyof StoreParts[K])[] };

// Fails to compile when a method of the contract is in no part's list.
type Unlisted = Exclude<keyof StateStore, (typeof METHODS)[keyof typeof METHODS][number] | 'close'>;
const everyMethodListed: [Unlisted] extends [never] ? true : never = true;
void everyMethodListed;

/** A StateStore made of a backend's parts: each method is its part's. */
export function storeOf(parts: StoreParts, close: () => Promise<void>): StateStore {
  const store: Record<string, unknown> = { close };
  for (const concern of Object.keys(METHODS) as (keyof StoreParts)[]) {
    const part = parts[concern] as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const name of METHODS[concern]) store[name] = part[name]!.bind(part);
  }
  return store as unknown as StateStore;
}
