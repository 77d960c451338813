// Notification configurations in Redis: a hash per saved view, id → the configuration as JSON, created only
// under a view that exists and at most MAX_CONFIGURATIONS_PER_VIEW of them (one script each).
import {
  byCreation, MAX_CONFIGURATIONS_PER_VIEW, TooManyConfigurationsError, type NotificationConfiguration, type NotificationConfigurationStore,
} from '../state-store.js';
import type { RedisCore } from './core.js';

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

export class RedisNotificationConfigurations implements NotificationConfigurationStore {
  constructor(private readonly core: RedisCore) {}

  async listNotificationConfigurations(organization: string, viewId: string): Promise<NotificationConfiguration[]> {
    const held = await this.core.call(() => this.core.redis.hvals(this.core.k.configurations(organization, viewId)));
    return held.map((json) => JSON.parse(json) as NotificationConfiguration)
      .sort(byCreation);
  }

  async getNotificationConfiguration(organization: string, viewId: string, id: string): Promise<NotificationConfiguration | undefined> {
    const json = await this.core.call(() => this.core.redis.hget(this.core.k.configurations(organization, viewId), id));
    return json === null ? undefined : (JSON.parse(json) as NotificationConfiguration);
  }

  async createNotificationConfiguration(c: NotificationConfiguration): Promise<NotificationConfiguration | undefined> {
    const { k } = this.core;
    const result = await this.core.call(() => this.core.write<string>(CREATE_NC, [k.view(c.organization, c.viewId), k.configurations(c.organization, c.viewId)],
      [c.id, JSON.stringify(c), MAX_CONFIGURATIONS_PER_VIEW]));
    if (result === 'NO_VIEW') return undefined;
    if (result === 'TOO_MANY') throw new TooManyConfigurationsError();
    if (result === 'ID_TAKEN') throw new Error(`a notification configuration with id ${c.id} already exists`);
    return structuredClone(c);
  }

  async updateNotificationConfiguration(c: NotificationConfiguration): Promise<NotificationConfiguration | undefined> {
    const result = await this.core.call(() => this.core.write<string>(UPDATE_NC, [this.core.k.configurations(c.organization, c.viewId)], [c.id, JSON.stringify(c)]));
    return result === 'MISSING' ? undefined : structuredClone(c);
  }

  async deleteNotificationConfiguration(organization: string, viewId: string, id: string): Promise<NotificationConfiguration | undefined> {
    const json = await this.core.call(() => this.core.write<string | null>(DELETE_NC, [this.core.k.configurations(organization, viewId)], [id]));
    return json ? (JSON.parse(json) as NotificationConfiguration) : undefined;
  }
}
