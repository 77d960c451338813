// Saved views in Redis: a hash per view, a sorted set of an organization's views by creation, a hash of
// names to ids (uniqueness); create, update and delete are each one script.
import { NameTakenError, type SavedQuery, type SavedView, type SavedViewStore } from '../state-store.js';
import { pairs, type RedisCore } from './core.js';

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

// The view's notification configurations (KEYS[4]) go with it.
const DELETE_VIEW = `
local view = redis.call('HGETALL', KEYS[1])
if #view == 0 then return nil end
local name = redis.call('HGET', KEYS[1], 'name')
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('HGET', KEYS[3], name) == ARGV[1] then redis.call('HDEL', KEYS[3], name) end
redis.call('DEL', KEYS[4])
return view`;

const toView = (organization: string, h: Record<string, string>): SavedView => ({
  id: h.id!,
  organization,
  name: h.name!,
  queryType: h.queryType!,
  query: JSON.parse(h.query!) as SavedQuery,
  createdAt: h.createdAt!,
  updatedAt: h.updatedAt!,
});

export class RedisSavedViews implements SavedViewStore {
  constructor(private readonly core: RedisCore) {}

  async listViews(organization: string): Promise<SavedView[]> {
    const { redis, k } = this.core;
    return this.core.call(async () => {
      const ids = await redis.zrange(k.views(organization), '0', '-1');
      const pipeline = redis.pipeline();
      for (const id of ids) pipeline.hgetall(k.view(organization, id));
      const results = (await pipeline.exec()) ?? [];
      return results.map(([, h]) => h as Record<string, string>).filter((h) => h.id).map((h) => toView(organization, h));
    });
  }

  async listViewOrganizations(): Promise<string[]> {
    return this.core.call(async () => (await this.core.redis.smembers(this.core.k.orgs())).sort());
  }

  async getView(organization: string, id: string): Promise<SavedView | undefined> {
    const h = await this.core.call(() => this.core.redis.hgetall(this.core.k.view(organization, id)));
    return h.id ? toView(organization, h) : undefined;
  }

  async createView(view: SavedView): Promise<SavedView> {
    const { k, options } = this.core;
    const o = view.organization;
    // Checked here: the script cannot undo its first writes if ZADD then rejects the score.
    if (!Number.isFinite(Date.parse(view.createdAt))) throw new Error(`createdAt is not a timestamp: ${view.createdAt}`);
    // On a cluster the set of organizations is in another slot: added to first, on its own (an organization
    // listed whose create then failed has no views, which its listing shows).
    if (options.clustered) await this.core.call(() => this.core.redis.sadd(k.orgs(), o));
    const keys = [k.view(o, view.id), k.views(o), k.names(o), ...(options.clustered ? [] : [k.orgs()])];
    const result = await this.core.call(() => this.core.write<string>(CREATE_VIEW, keys,
      [view.id, view.name, view.queryType, JSON.stringify(view.query), view.createdAt, view.updatedAt, String(Date.parse(view.createdAt)), o]));
    if (result === 'NAME_TAKEN') throw new NameTakenError(view.name);
    if (result === 'ID_TAKEN') throw new Error(`a saved view with id ${view.id} already exists`);
    return structuredClone(view);
  }

  async updateView(organization: string, id: string, change: { name: string; query: SavedQuery; updatedAt: string }): Promise<SavedView | undefined> {
    const { k } = this.core;
    const result = await this.core.call(() => this.core.write<string | string[]>(UPDATE_VIEW, [k.view(organization, id), k.views(organization), k.names(organization)],
      [id, change.name, JSON.stringify(change.query), change.updatedAt]));
    if (result === 'MISSING') return undefined;
    if (result === 'NAME_TAKEN') throw new NameTakenError(change.name);
    // The script returns the view as this update left it; a read afterwards could see a later update.
    return toView(organization, pairs(result as string[]));
  }

  async deleteView(organization: string, id: string): Promise<SavedView | undefined> {
    const { k } = this.core;
    const flat = await this.core.call(() => this.core.write<string[] | null>(DELETE_VIEW,
      [k.view(organization, id), k.views(organization), k.names(organization), k.configurations(organization, id)], [id]));
    return flat ? toView(organization, pairs(flat)) : undefined;
  }
}
