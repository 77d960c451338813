// What every part of the Redis state store shares: the connection, the key names, and how a read and a
// write are made (a write is one Lua script, acknowledged once the replicas asked for have it).
import type { Cluster, Redis } from 'ioredis';
import { NameTakenError, StoreUnavailableError, TooManyConfigurationsError } from '../state-store.js';

export interface RedisStoreOptions {
  /** Keys with hash tags, for a Redis Cluster. */
  clustered?: boolean;
  /** Replicas a write waits for (WAIT) before it is acknowledged, and for how long. */
  waitReplicas?: number;
  waitMs?: number;
  onClose?: () => Promise<void>;
}

/** The key names (redis-store.ts lists them with their types). */
export interface RedisKeys {
  token: (id: string) => string; tokens: () => string;
  view: (org: string, id: string) => string; views: (org: string) => string; names: (org: string) => string; orgs: () => string;
  configurations: (org: string, viewId: string) => string;
  notifier: (part: string) => string;
}

export function pairs(flat: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
}

export class RedisCore {
  // ioredis types one Redis and a cluster apart; the commands used here are the same on both.
  readonly redis: Redis;
  readonly k: RedisKeys;

  constructor(redis: Redis | Cluster, prefix: string, readonly options: RedisStoreOptions) {
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

  /** Runs `op`; a failure of Redis itself becomes StoreUnavailableError (503), the store's own errors pass. */
  async call<T>(op: () => Promise<T>): Promise<T> {
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
  async write<T>(script: string, keys: string[], args: (string | number)[]): Promise<T> {
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
}
