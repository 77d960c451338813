// API tokens in the journal: `put-token` and `del-token` records.
import { byCreation, type TokenRecord, type TokenStore } from '../state-store.js';
import { isObj, isStr, type Journal, type JournalPart, type JournalRecord } from './core.js';

type TokenRecordLine = { v: 1; kind: 'put-token'; token: TokenRecord } | { v: 1; kind: 'del-token'; id: string };

export class JournalTokens implements JournalPart, TokenStore {
  private tokens = new Map<string, TokenRecord>();

  constructor(private readonly journal: Journal) {}

  invalidity(rec: Record<string, unknown>): string | undefined | null {
    switch (rec.kind) {
      case 'put-token': return isObj(rec.token) && isStr(rec.token.id) ? undefined : 'put-token without token.id';
      case 'del-token': return isStr(rec.id) ? undefined : 'del-token without id';
      default: return null;
    }
  }

  apply(record: JournalRecord): void {
    const rec = record as TokenRecordLine;
    if (rec.kind === 'put-token') this.tokens.set(rec.token.id, rec.token);
    else if (rec.kind === 'del-token') this.tokens.delete(rec.id);
  }

  reset(): void { this.tokens = new Map(); }
  live(): number { return this.tokens.size; }
  records(): JournalRecord[] {
    return [...this.tokens.values()].sort(byCreation).map((token): TokenRecordLine => ({ v: 1, kind: 'put-token', token }));
  }

  async putToken(token: TokenRecord): Promise<void> {
    await this.journal.mutate(() => this.journal.append({ v: 1, kind: 'put-token', token } satisfies TokenRecordLine));
  }

  async getToken(id: string): Promise<TokenRecord | undefined> {
    await this.journal.refresh();
    const token = this.tokens.get(id);
    return token && structuredClone(token);
  }

  async listTokens(): Promise<TokenRecord[]> {
    await this.journal.refresh();
    return [...this.tokens.values()].sort(byCreation).map((t) => structuredClone(t));
  }

  async revokeToken(id: string): Promise<boolean> {
    return this.journal.mutate(async () => {
      if (!this.tokens.has(id)) return false;
      await this.journal.append({ v: 1, kind: 'del-token', id } satisfies TokenRecordLine);
      return true;
    });
  }
}
