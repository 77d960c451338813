// The notifier's state in Redis, in one slot (`{notifier}`) so that a script can change it whole: the
// cursor, the outbox (pending, in the order recorded), each configuration's last responses, the lease.
import {
  DELIVERY_RESPONSES_KEPT, type ConfigurationRef, type DeliveryResponse, type NotifierStore, type PendingNotification,
} from '../state-store.js';
import type { RedisCore } from './core.js';

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

export class RedisNotifier implements NotifierStore {
  constructor(private readonly core: RedisCore) {}

  private key(part: string): string { return this.core.k.notifier(part); }

  private responsesKey(ref: ConfigurationRef): string {
    return this.key(`responses:${ref.organization}:${ref.viewId}:${ref.configurationId}`);
  }

  private checked(snapshot: string, notifications: PendingNotification[]): Promise<unknown> {
    const n = (part: string) => this.key(part);
    return this.core.call(() => this.core.write(RECORD_CHECKED, [n('cursor'), n('pending'), n('order'), n('seq')],
      [snapshot, ...notifications.flatMap((x) => [x.id, JSON.stringify(x)])]));
  }

  async notifierCursor(): Promise<string | null> {
    return this.core.call(() => this.core.redis.get(this.key('cursor')));
  }

  async recordChecked(snapshot: string, notifications: PendingNotification[]): Promise<void> {
    await this.checked(snapshot, notifications);
  }

  async queueNotifications(notifications: PendingNotification[]): Promise<void> {
    await this.checked('', notifications);
  }

  async pendingNotifications(): Promise<PendingNotification[]> {
    return this.core.call(async () => {
      const ids = await this.core.redis.zrange(this.key('order'), '0', '-1');
      if (ids.length === 0) return [];
      const held = await this.core.redis.hmget(this.key('pending'), ...ids);
      return held.filter((json): json is string => json !== null).map((json) => JSON.parse(json) as PendingNotification);
    });
  }

  async recordAttempt(id: string, response: DeliveryResponse, next: string | null): Promise<void> {
    await this.core.call(async () => {
      const json = await this.core.redis.hget(this.key('pending'), id);
      if (json === null) return;
      const pending = JSON.parse(json) as PendingNotification;
      const now = next === null ? '' : JSON.stringify({ ...pending, attempts: response.attempt, nextAttemptAt: next });
      await this.core.write(RECORD_ATTEMPT, [this.key('pending'), this.key('order'), this.responsesKey(pending)], [id, JSON.stringify(response), now, DELIVERY_RESPONSES_KEPT]);
    });
  }

  async recordResponse(ref: ConfigurationRef, response: DeliveryResponse): Promise<void> {
    await this.core.call(() => this.core.write(RECORD_RESPONSE, [this.responsesKey(ref)], [JSON.stringify(response), DELIVERY_RESPONSES_KEPT]));
  }

  async deliveryResponses(ref: ConfigurationRef): Promise<DeliveryResponse[]> {
    return this.core.call(async () => (await this.core.redis.lrange(this.responsesKey(ref), 0, DELIVERY_RESPONSES_KEPT - 1)).map((json) => JSON.parse(json) as DeliveryResponse));
  }

  async takeNotifierLease(holder: string, ttlMs: number): Promise<boolean> {
    return (await this.core.call(() => this.core.write<number>(TAKE_LEASE, [this.key('lease')], [holder, Math.max(1, Math.round(ttlMs))]))) === 1;
  }

  async releaseNotifierLease(holder: string): Promise<void> {
    await this.core.call(() => this.core.write(RELEASE_LEASE, [this.key('lease')], [holder]));
  }
}
