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
// Each concern is a file of its own under redis/ over one core (redis/core.ts: the connection, the key
// names, reads and scripted writes); this file only puts them together.
import type { Cluster, Redis } from 'ioredis';
import { storeOf, type StateStore } from './state-store.js';
import { RedisCore, type RedisStoreOptions } from './redis/core.js';
import { RedisTokens } from './redis/tokens.js';
import { RedisSavedViews } from './redis/saved-views.js';
import { RedisNotificationConfigurations } from './redis/notification-configurations.js';
import { RedisNotifier } from './redis/notifier.js';

export type { RedisStoreOptions };

/** The state store on `redis` (one Redis or a cluster), its keys under `prefix`. */
export function redisStateStore(redis: Redis | Cluster, prefix = 'explorer:', options: RedisStoreOptions = {}): StateStore {
  const core = new RedisCore(redis, prefix, options);
  return storeOf({
    tokens: new RedisTokens(core),
    views: new RedisSavedViews(core),
    configurations: new RedisNotificationConfigurations(core),
    notifier: new RedisNotifier(core),
  }, async () => { await options.onClose?.(); });
}
