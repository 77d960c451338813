// The notifier's state in the journal: what it checked last and its outbox (`notify-checked`), each try
// (`notify-attempt`), responses to no pending notification (`notify-response`) and the sender's lease
// (`notify-lease`). A deleted configuration (`del-nc`) takes its responses.
import {
  DELIVERY_RESPONSES_KEPT, type ConfigurationRef, type DeliveryResponse, type NotifierStore, type PendingNotification,
} from '../state-store.js';
import { isObj, isStr, type Journal, type JournalPart, type JournalRecord } from './core.js';
import type { ConfigurationRecordLine } from './notification-configurations.js';

type NotifierRecordLine =
  | { v: 1; kind: 'notify-checked'; snapshot: string | null; notifications: PendingNotification[] }
  | { v: 1; kind: 'notify-attempt'; id: string; response: DeliveryResponse; next: string | null }
  | { v: 1; kind: 'notify-response'; ref: ConfigurationRef; response: DeliveryResponse }
  | { v: 1; kind: 'notify-lease'; holder: string | null; until: number };

const refKey = (ref: ConfigurationRef) => `${ref.organization}\n${ref.viewId}\n${ref.configurationId}`;
const refOf = (key: string): ConfigurationRef => {
  const [organization, viewId, configurationId] = key.split('\n') as [string, string, string];
  return { organization, viewId, configurationId };
};

export class JournalNotifier implements JournalPart, NotifierStore {
  private cursor: string | null = null;
  private pending = new Map<string, PendingNotification>();
  private responses = new Map<string, DeliveryResponse[]>();
  private lease: { holder: string | null; until: number } = { holder: null, until: 0 };

  constructor(private readonly journal: Journal) {}

  invalidity(rec: Record<string, unknown>): string | undefined | null {
    switch (rec.kind) {
      case 'notify-checked': return (isStr(rec.snapshot) || rec.snapshot === null) && Array.isArray(rec.notifications) ? undefined : 'notify-checked without snapshot or notifications';
      case 'notify-attempt': return isStr(rec.id) && isObj(rec.response) ? undefined : 'notify-attempt without id or response';
      case 'notify-response': return isObj(rec.ref) && isObj(rec.response) ? undefined : 'notify-response without ref or response';
      case 'notify-lease': return typeof rec.until === 'number' ? undefined : 'notify-lease without until';
      default: return null;
    }
  }

  apply(record: JournalRecord): void {
    const rec = record as NotifierRecordLine | ConfigurationRecordLine;
    switch (rec.kind) {
      case 'notify-checked':
        if (rec.snapshot !== null) this.cursor = rec.snapshot;
        for (const n of rec.notifications) this.pending.set(n.id, n);
        break;
      case 'notify-attempt': {
        const n = this.pending.get(rec.id);
        if (!n) break;
        this.keepResponse({ organization: n.organization, viewId: n.viewId, configurationId: n.configurationId }, rec.response);
        if (rec.next === null) this.pending.delete(rec.id);
        else this.pending.set(rec.id, { ...n, attempts: rec.response.attempt, nextAttemptAt: rec.next });
        break;
      }
      case 'notify-response': this.keepResponse(rec.ref, rec.response); break;
      case 'notify-lease': this.lease = { holder: rec.holder, until: rec.until }; break;
      case 'del-nc': this.responses.delete(refKey({ organization: rec.organization, viewId: rec.viewId, configurationId: rec.id })); break;
    }
  }

  reset(): void {
    this.cursor = null;
    this.pending = new Map();
    this.responses = new Map();
    this.lease = { holder: null, until: 0 };
  }

  /** The cursor with the outbox and the lease count as two records whether or not they are written. */
  live(): number {
    let responses = 0;
    for (const list of this.responses.values()) responses += list.length;
    return 2 + responses;
  }

  records(): JournalRecord[] {
    return [
      // Oldest response first, so that replaying them leaves the newest on top.
      ...[...this.responses.entries()].flatMap(([key, list]) => [...list].reverse().map((response): NotifierRecordLine => ({ v: 1, kind: 'notify-response', ref: refOf(key), response }))),
      ...(this.cursor === null ? [] : [{ v: 1, kind: 'notify-checked', snapshot: this.cursor, notifications: [...this.pending.values()] } satisfies NotifierRecordLine]),
      ...(this.lease.holder === null ? [] : [{ v: 1, kind: 'notify-lease', holder: this.lease.holder, until: this.lease.until } satisfies NotifierRecordLine]),
    ];
  }

  private keepResponse(ref: ConfigurationRef, response: DeliveryResponse): void {
    const key = refKey(ref);
    this.responses.set(key, [response, ...(this.responses.get(key) ?? [])].slice(0, DELIVERY_RESPONSES_KEPT));
  }

  async notifierCursor(): Promise<string | null> {
    await this.journal.refresh();
    return this.cursor;
  }

  async recordChecked(snapshot: string, notifications: PendingNotification[]): Promise<void> {
    await this.journal.mutate(() => this.journal.append({ v: 1, kind: 'notify-checked', snapshot, notifications } satisfies NotifierRecordLine));
  }

  async queueNotifications(notifications: PendingNotification[]): Promise<void> {
    await this.journal.mutate(() => this.journal.append({ v: 1, kind: 'notify-checked', snapshot: null, notifications } satisfies NotifierRecordLine));
  }

  async pendingNotifications(): Promise<PendingNotification[]> {
    await this.journal.refresh();
    return [...this.pending.values()].map((n) => structuredClone(n));
  }

  async recordAttempt(id: string, response: DeliveryResponse, next: string | null): Promise<void> {
    await this.journal.mutate(async () => {
      if (this.pending.has(id)) await this.journal.append({ v: 1, kind: 'notify-attempt', id, response, next } satisfies NotifierRecordLine);
    });
  }

  async recordResponse(ref: ConfigurationRef, response: DeliveryResponse): Promise<void> {
    await this.journal.mutate(() => this.journal.append({ v: 1, kind: 'notify-response', ref, response } satisfies NotifierRecordLine));
  }

  async deliveryResponses(ref: ConfigurationRef): Promise<DeliveryResponse[]> {
    await this.journal.refresh();
    return structuredClone(this.responses.get(refKey(ref)) ?? []);
  }

  async takeNotifierLease(holder: string, ttlMs: number): Promise<boolean> {
    return this.journal.mutate(async () => {
      const now = Date.now();
      if (this.lease.holder !== null && this.lease.holder !== holder && this.lease.until > now) return false;
      await this.journal.append({ v: 1, kind: 'notify-lease', holder, until: now + ttlMs } satisfies NotifierRecordLine);
      return true;
    });
  }

  async releaseNotifierLease(holder: string): Promise<void> {
    await this.journal.mutate(async () => {
      if (this.lease.holder === holder) await this.journal.append({ v: 1, kind: 'notify-lease', holder: null, until: 0 } satisfies NotifierRecordLine);
    });
  }
}
