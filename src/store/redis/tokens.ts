// API tokens in Redis: a hash per token and a set of their ids.
import { byCreation, StoreUnavailableError, type TokenRecord, type TokenStore } from '../state-store.js';
import type { RedisCore } from './core.js';

const PUT_TOKEN = `
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('SADD', KEYS[2], ARGV[1])
return 'OK'`;

const REVOKE_TOKEN = `
local n = redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return n`;

const TOKEN_FIELDS = ['id', 'kind', 'organization', 'team', 'user', 'secretHash', 'createdAt', 'description', 'expiresAt'] as const;
const toToken = (h: Record<string, string>): TokenRecord => ({
  id: h.id!,
  kind: h.kind as TokenRecord['kind'],
  organization: h.organization || null,
  team: h.team || null,
  user: h.user || null,
  secretHash: h.secretHash!,
  createdAt: h.createdAt!,
  description: h.description || null,
  // Stored only for a token that expires: one that never does reads back as it was put, without the field.
  ...(h.expiresAt ? { expiresAt: h.expiresAt } : {}),
});

export class RedisTokens implements TokenStore {
  /** Tokens last read from Redis, used only while Redis cannot be reached, so that queries keep working. */
  private readonly knownTokens = new Map<string, TokenRecord | null>();

  constructor(private readonly core: RedisCore) {}

  async putToken(token: TokenRecord): Promise<void> {
    const fields = TOKEN_FIELDS.flatMap((f) => [f, token[f] ?? '']);
    await this.core.call(() => this.core.write(PUT_TOKEN, [this.core.k.token(token.id), this.core.k.tokens()], [token.id, ...fields]));
    this.knownTokens.set(token.id, token);
  }

  async getToken(id: string): Promise<TokenRecord | undefined> {
    try {
      const h = await this.core.redis.hgetall(this.core.k.token(id));
      const token = h.id ? toToken(h) : null;
      this.knownTokens.set(id, token);
      return token ?? undefined;
    } catch (e) {
      if (this.knownTokens.has(id)) return this.knownTokens.get(id) ?? undefined;
      throw new StoreUnavailableError(`Redis: ${(e as Error).message}`);
    }
  }

  async listTokens(): Promise<TokenRecord[]> {
    return this.core.call(async () => {
      const ids = (await this.core.redis.smembers(this.core.k.tokens())).sort();
      const pipeline = this.core.redis.pipeline();
      for (const id of ids) pipeline.hgetall(this.core.k.token(id));
      const results = (await pipeline.exec()) ?? [];
      return results.map(([, h]) => h as Record<string, string>).filter((h) => h.id).map(toToken)
        .sort(byCreation);
    });
  }

  async revokeToken(id: string): Promise<boolean> {
    const n = await this.core.call(() => this.core.write<number>(REVOKE_TOKEN, [this.core.k.token(id), this.core.k.tokens()], [id]));
    this.knownTokens.set(id, null);
    return n === 1;
  }
}
