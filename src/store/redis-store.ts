// The state store on Redis, shared by every instance. Every rule that spans keys (name uniqueness, update,
// delete) is one Lua script, so it is atomic across instances — never read-then-write from here.
//
// Keys (prefix P, default "explorer:"), on one Redis:
//   P token:<id>             hash of a token record           P tokens            set of token ids
//   P view:<org>:<id>        hash of a saved view (query as JSON text, so no cjson round-trip)
//   P views:<org>            sorted set of view ids, score = created-at (ms), ties by id
//   P view-names:<org>       hash name → id (uniqueness)
//   P view-orgs              set of organizations that have had views
//   P ncs:<org>:<view id>    hash id → a notification configuration as JSON (a view's, at most 20)
//   P notifier:{notifier}:…  the notifier's state, in one slot so that a script can change it whole: cursor
//                            (a string), pending (hash id → JSON), order (sorted set of ids by seq), seq,
//                            responses:<org>:<view>:<nc> (a list, newest first), lease (holder, with a TTL)
// On a Redis Cluster a script may touch keys of one slot only, so the keys carry hash tags: the token keys
// share `{tokens}` (P token:{tokens}:<id>, P tokens:{tokens}) and an organization's view keys `{<org>}`
// (P view:{<org>}:<id>, P views:{<org>}, P view-names:{<org>}, P ncs:{<org>}:<view id>); `view-orgs` is
// added to on its own.
import type { Cluster, Redis } from 'ioredis';
import {
  DELIVERY_RESPONSES_KEPT, MAX_CONFIGURATIONS_PER_VIEW, NameTakenError, StoreUnavailableError, TooManyConfigurationsError,
  type ConfigurationRef, type DeliveryResponse, type NotificationConfiguration, type PendingNotification, type SavedQuery, type SavedView,
  type StateStore, type TokenRecord,
} from './state-store.js';

const CREATE_VIEW = `
if redis.call('HEXISTS', KEYS[3], ARGV[2]) == 1 then return 'NAME_TAKEN' end
if redis.call('EXISTS', KEYS[1]) == 1 then return 'ID_TAKEN' end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'name', ARGV[2], 'queryType', ARGV[3], 'query', ARGV[4], 'createdAt', ARGV[5], 'updatedAt', ARGV[6])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[7], ARGV[1])
if KEYS[4] then redis.call('SADD', KEYS[4], ARGV[8]) end
return 'OK'`;

const UPDATE_VIEW = `
local old = redis.call('HGET', KEYS[1], 'name')
if not old then return 'MISSING' end
if old ~= ARGV[2] then
  local holder = redis.call('HGET', KEYS[3], ARGV[2])
  if holder and holder ~= ARGV[1] then return 'NAME_TAKEN' end
  redis.call('HDEL', KEYS[3], old)
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[1])
end
redis.call('HSET', KEYS[1], 'name', ARGV[2], 'query', ARGV[3], 'updatedAt', ARGV[4])
return redis.call('HGETALL', KEYS[1])`;

const DELETE_VIEW = `
local view = redis.call('HGETALL', KEYS[1])
if #view == 0 then return nil end
local name = redis.call('HGET', KEYS[1], 'name')
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('HGET', KEYS[3], name) == ARGV[1] then redis.call('HDEL', KEYS[3], name) end
redis.call('DEL', KEYS[4])
return view`;

// A configuration only under a view that exists, and at most ARGV[3] of them.
const CREATE_NC = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 'NO_VIEW' end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 'ID_TAKEN' end
if redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[3]) then return 'TOO_MANY' end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 'OK'`;

const UPDATE_NC = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 'MISSING' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 'OK'`;

const DELETE_NC = `
local held = redis.call('HGET', KEYS[1], ARGV[1])
if not held then return nil end
redis.call('HDEL', KEYS[1], ARGV[1])
return held`;

// KEYS: cursor, pending, order, seq. ARGV: the snapshot ('' to leave the cursor), then id and JSON of each notification.
const RECORD_CHECKED = `
if ARGV[1] ~= '' then redis.call('SET', KEYS[1], ARGV[1]) end
for i = 2, #ARGV, 2 do
  local seq = redis.call('INCR', KEYS[4])
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  redis.call('ZADD', KEYS[3], seq, ARGV[i])
end
return 'OK'`;

// KEYS: pending, order, responses. ARGV: id, the response, its notification as it is now ('' when done), kept.
const RECORD_ATTEMPT = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 'MISSING' end
redis.call('LPUSH', KEYS[3], ARGV[2])
redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[4]) - 1)
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
end
return 'OK'`;

const RECORD_RESPONSE = `
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
return 'OK'`;

// The lease: taken when free, renewed by its holder.
const TAKE_LEASE = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

const RELEASE_LEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 'OK'`;

const PUT_TOKEN = `
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('SADD', KEYS[2], ARGV[1])
return 'OK'`;

const REVOKE_TOKEN = `
local n = redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return n`;

function pairs(flat: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
}

const toView = (organization: string, h: Record<string, string>): SavedView => ({
  id: h.id!,
  organization,
  name: h.name!,
  queryType: h.queryType!,
  query: JSON.parse(h.query!) as SavedQuery,
  createdAt: h.createdAt!,
  updatedAt: h.updatedAt!,
});

const TOKEN_FIELDS = ['id', 'kind', 'organization', 'team', 'user', 'secretHash', 'createdAt', 'description'] as const;
const toToken = (h: Record<string, string>): TokenRecord => ({
  id: h.id!,
  kind: h.kind as TokenRecord['kind'],
  organization: h.organization || null,
  team: h.team || null,
  user: h.user || null,
  secretHash: h.secretHash!,
  createdAt: h.createdAt!,
  description: h.description || null,
});

export interface RedisStoreOptions {
  /** Keys with hash tags, for a Redis Cluster. */
  clustered?: boolean;
  /** Replicas a write waits for (WAIT) before it is acknowledged, and for how long. */
  waitReplicas?: number;
  waitMs?: number;
  onClose?: () => Promise<void>;
}

export class RedisStateStore implements StateStore {
  /** Tokens last read from Redis, used only while Redis cannot be reached, so that queries keep working. */
  private readonly knownTokens = new Map<string, TokenRecord | null>();
  private readonly k: {
    token: (id: string) => string; tokens: () => string;
    view: (org: string, id: string) => string; views: (org: string) => string; names: (org: string) => string; orgs: () => string;
    configurations: (org: string, viewId: string) => string;
    notifier: (part: string) => string;
  };

  // ioredis types one Redis and a cluster apart; the commands used here are the same on both.
  private readonly redis: Redis;

  constructor(redis: Redis | Cluster, private readonly prefix = 'explorer:', private readonly options: RedisStoreOptions = {}) {
    this.redis = redis as Redis;
    // On a cluster, the part of a key that places it (a hash tag); on one Redis the names stay as they were.
    const tag = (slot: string) => (options.clustered ? `{${slot}}` : slot);
    const tokenSlot = options.clustered ? ':{tokens}' : '';
    this.k = {
      token: (id) => `${prefix}token${tokenSlot}:${id}`, tokens: () => `${prefix}tokens${tokenSlot}`,
      view: (org, id) => `${prefix}view:${tag(org)}:${id}`, views: (org) => `${prefix}views:${tag(org)}`, names: (org) => `${prefix}view-names:${tag(org)}`, orgs: () => `${prefix}view-orgs`,
      configurations: (org, viewId) => `${prefix}ncs:${tag(org)}:${viewId}`,
      notifier: (part) => `${prefix}notifier:{notifier}:${part}`,
    };
  }

  private async call<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (e) {
      if (e instanceof NameTakenError || e instanceof StoreUnavailableError || e instanceof TooManyConfigurationsError) throw e;
      throw new StoreUnavailableError(`Redis: ${(e as Error).message}`);
    }
  }

  /**
   * Runs a writing script and, with replicas to wait for, WAITs for them on the same connection (on a
   * cluster, the node that ran the script): the write is acknowledged only once a replica has it, so a
   * failover of its primary cannot lose it. It waits for as many as the primary has connected (ROLE, asked
   * in the script's round trip): a shard whose replica was just promoted has none until the old primary
   * returns, and its writes are then acknowledged as they are. When none confirms in time the caller gets
   * 503, and the write may still be there.
   */
  private async write<T>(script: string, keys: string[], args: (string | number)[]): Promise<T> {
    const wanted = this.options.waitReplicas ?? 0;
    if (wanted === 0) return (await this.redis.eval(script, keys.length, ...keys, ...args)) as T;
    const [[scriptError, result] = [], [roleError, role] = []] = (await this.redis.pipeline().eval(script, keys.length, ...keys, ...args).call('ROLE').exec()) ?? [];
    if (scriptError) throw scriptError;
    if (roleError) throw roleError;
    const connected = Array.isArray(role) && role[0] === 'master' && Array.isArray(role[2]) ? role[2].length : 0;
    const replicas = Math.min(wanted, connected);
    if (replicas === 0) return result as T;
    const waitMs = this.options.waitMs ?? 2000;
    // A keyed command first, so that a cluster sends the pipeline to the node holding keys[0].
    const [, [waitError, acknowledged] = []] = (await this.redis.pipeline().exists(keys[0]!).call('WAIT', replicas, waitMs).exec()) ?? [];
    if (waitError) throw waitError;
    if (Number(acknowledged) < replicas) throw new StoreUnavailableError(`Redis: the write reached ${Number(acknowledged)} of ${replicas} replicas within ${waitMs} ms`);
    return result as T;
  }

  async putToken(token: TokenRecord): Promise<void> {
    const fields = TOKEN_FIELDS.flatMap((f) => [f, token[f] ?? '']);
    await this.call(() => this.write(PUT_TOKEN, [this.k.token(token.id), this.k.tokens()], [token.id, ...fields]));
    this.knownTokens.set(token.id, token);
  }

  async getToken(id: string): Promise<TokenRecord | undefined> {
    try {
      const h = await this.redis.hgetall(this.k.token(id));
      const token = h.id ? toToken(h) : null;
      this.knownTokens.set(id, token);
      return token ?? undefined;
    } catch (e) {
      if (this.knownTokens.has(id)) return this.knownTokens.get(id) ?? undefined;
      throw new StoreUnavailableError(`Redis: ${(e as Error).message}`);
    }
  }

  async listTokens(): Promise<TokenRecord[]> {
    return this.call(async () => {
      const ids = (await this.redis.smembers(this.k.tokens())).sort();
      const pipeline = this.redis.pipeline();
      for (const id of ids) pipeline.hgetall(this.k.token(id));
      const results = (await pipeline.exec()) ?? [];
      return results.map(([, h]) => h as Record<string, string>).filter((h) => h.id).map(toToken)
        .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
    });
  }

  async revokeToken(id: string): Promise<boolean> {
    const n = await this.call(() => this.write<number>(REVOKE_TOKEN, [this.k.token(id), this.k.tokens()], [id]));
    this.knownTokens.set(id, null);
    return n === 1;
  }

  async listViews(organization: string): Promise<SavedView[]> {
    return this.call(async () => {
      const ids = await this.redis.zrange(this.k.views(organization), '0', '-1');
      const pipeline = this.redis.pipeline();
      for (const id of ids) pipeline.hgetall(this.k.view(organization, id));
      const results = (await pipeline.exec()) ?? [];
      return results.map(([, h]) => h as Record<string, string>).filter((h) => h.id).map((h) => toView(organization, h));
    });
  }

  async listViewOrganizations(): Promise<string[]> {
    return this.call(async () => (await this.redis.smembers(this.k.orgs())).sort());
  }

  async getView(organization: string, id: string): Promise<SavedView | undefined> {
    const h = await this.call(() => this.redis.hgetall(this.k.view(organization, id)));
    return h.id ? toView(organization, h) : undefined;
  }

  async createView(view: SavedView): Promise<SavedView> {
    const o = view.organization;
    // Checked here: the script cannot undo its first writes if ZADD then rejects the score.
    if (!Number.isFinite(Date.parse(view.createdAt))) throw new Error(`createdAt is not a timestamp: ${view.createdAt}`);
    // On a cluster the set of organizations is in another slot: added to first, on its own (an organization
    // listed whose create then failed has no views, which its listing shows).
    if (this.options.clustered) await this.call(() => this.redis.sadd(this.k.orgs(), o));
    const keys = [this.k.view(o, view.id), this.k.views(o), this.k.names(o), ...(this.options.clustered ? [] : [this.k.orgs()])];
    const result = await this.call(() => this.write<string>(CREATE_VIEW, keys,
      [view.id, view.name, view.queryType, JSON.stringify(view.query), view.createdAt, view.updatedAt, String(Date.parse(view.createdAt)), o]));
    if (result === 'NAME_TAKEN') throw new NameTakenError(view.name);
    if (result === 'ID_TAKEN') throw new Error(`a saved view with id ${view.id} already exists`);
    return structuredClone(view);
  }

  async updateView(organization: string, id: string, change: { name: string; query: SavedQuery; updatedAt: string }): Promise<SavedView | undefined> {
    const result = await this.call(() => this.write<string | string[]>(UPDATE_VIEW, [this.k.view(organization, id), this.k.views(organization), this.k.names(organization)],
      [id, change.name, JSON.stringify(change.query), change.updatedAt]));
    if (result === 'MISSING') return undefined;
    if (result === 'NAME_TAKEN') throw new NameTakenError(change.name);
    // The script returns the view as this update left it; a read afterwards could see a later update.
    return toView(organization, pairs(result as string[]));
  }

  async deleteView(organization: string, id: string): Promise<SavedView | undefined> {
    const flat = await this.call(() => this.write<string[] | null>(DELETE_VIEW,
      [this.k.view(organization, id), this.k.views(organization), this.k.names(organization), this.k.configurations(organization, id)], [id]));
    return flat ? toView(organization, pairs(flat)) : undefined;
  }

  async listNotificationConfigurations(organization: string, viewId: string): Promise<NotificationConfiguration[]> {
    const held = await this.call(() => this.redis.hvals(this.k.configurations(organization, viewId)));
    return held.map((json) => JSON.parse(json) as NotificationConfiguration)
      .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
  }

  async getNotificationConfiguration(organization: string, viewId: string, id: string): Promise<NotificationConfiguration | undefined> {
    const json = await this.call(() => this.redis.hget(this.k.configurations(organization, viewId), id));
    return json === null ? undefined : (JSON.parse(json) as NotificationConfiguration);
  }

  async createNotificationConfiguration(c: NotificationConfiguration): Promise<NotificationConfiguration | undefined> {
    const result = await this.call(() => this.write<string>(CREATE_NC, [this.k.view(c.organization, c.viewId), this.k.configurations(c.organization, c.viewId)],
      [c.id, JSON.stringify(c), MAX_CONFIGURATIONS_PER_VIEW]));
    if (result === 'NO_VIEW') return undefined;
    if (result === 'TOO_MANY') throw new TooManyConfigurationsError();
    if (result === 'ID_TAKEN') throw new Error(`a notification configuration with id ${c.id} already exists`);
    return structuredClone(c);
  }

  async updateNotificationConfiguration(c: NotificationConfiguration): Promise<NotificationConfiguration | undefined> {
    const result = await this.call(() => this.write<string>(UPDATE_NC, [this.k.configurations(c.organization, c.viewId)], [c.id, JSON.stringify(c)]));
    return result === 'MISSING' ? undefined : structuredClone(c);
  }

  async deleteNotificationConfiguration(organization: string, viewId: string, id: string): Promise<NotificationConfiguration | undefined> {
    const json = await this.call(() => this.write<string | null>(DELETE_NC, [this.k.configurations(organization, viewId)], [id]));
    return json ? (JSON.parse(json) as NotificationConfiguration) : undefined;
  }

  private responsesKey(ref: ConfigurationRef): string {
    return this.k.notifier(`responses:${ref.organization}:${ref.viewId}:${ref.configurationId}`);
  }

  async notifierCursor(): Promise<string | null> {
    return this.call(() => this.redis.get(this.k.notifier('cursor')));
  }

  async recordChecked(snapshot: string, notifications: PendingNotification[]): Promise<void> {
    const n = this.k.notifier;
    await this.call(() => this.write(RECORD_CHECKED, [n('cursor'), n('pending'), n('order'), n('seq')],
      [snapshot, ...notifications.flatMap((x) => [x.id, JSON.stringify(x)])]));
  }

  async queueNotifications(notifications: PendingNotification[]): Promise<void> {
    const n = this.k.notifier;
    await this.call(() => this.write(RECORD_CHECKED, [n('cursor'), n('pending'), n('order'), n('seq')],
      ['', ...notifications.flatMap((x) => [x.id, JSON.stringify(x)])]));
  }

  async pendingNotifications(): Promise<PendingNotification[]> {
    return this.call(async () => {
      const ids = await this.redis.zrange(this.k.notifier('order'), '0', '-1');
      if (ids.length === 0) return [];
      const held = await this.redis.hmget(this.k.notifier('pending'), ...ids);
      return held.filter((json): json is string => json !== null).map((json) => JSON.parse(json) as PendingNotification);
    });
  }

  async recordAttempt(id: string, response: DeliveryResponse, next: string | null): Promise<void> {
    const n = this.k.notifier;
    await this.call(async () => {
      const json = await this.redis.hget(n('pending'), id);
      if (json === null) return;
      const pending = JSON.parse(json) as PendingNotification;
      const now = next === null ? '' : JSON.stringify({ ...pending, attempts: response.attempt, nextAttemptAt: next });
      await this.write(RECORD_ATTEMPT, [n('pending'), n('order'), this.responsesKey(pending)], [id, JSON.stringify(response), now, DELIVERY_RESPONSES_KEPT]);
    });
  }

  async recordResponse(ref: ConfigurationRef, response: DeliveryResponse): Promise<void> {
    await this.call(() => this.write(RECORD_RESPONSE, [this.responsesKey(ref)], [JSON.stringify(response), DELIVERY_RESPONSES_KEPT]));
  }

  async deliveryResponses(ref: ConfigurationRef): Promise<DeliveryResponse[]> {
    return this.call(async () => (await this.redis.lrange(this.responsesKey(ref), 0, DELIVERY_RESPONSES_KEPT - 1)).map((json) => JSON.parse(json) as DeliveryResponse));
  }

  async takeNotifierLease(holder: string, ttlMs: number): Promise<boolean> {
    return (await this.call(() => this.write<number>(TAKE_LEASE, [this.k.notifier('lease')], [holder, Math.max(1, Math.round(ttlMs))]))) === 1;
  }

  async releaseNotifierLease(holder: string): Promise<void> {
    await this.call(() => this.write(RELEASE_LEASE, [this.k.notifier('lease')], [holder]));
  }

  async close(): Promise<void> {
    await this.options.onClose?.();
  }
}
