// Notification configurations in the journal: `put-nc` and `del-nc` records, at most
// MAX_CONFIGURATIONS_PER_VIEW under a view that exists; a deleted view (`del-view`) takes its own.
import {
  byCreation, MAX_CONFIGURATIONS_PER_VIEW, TooManyConfigurationsError, type NotificationConfiguration, type NotificationConfigurationStore,
} from '../state-store.js';
import { isObj, isStr, type Journal, type JournalPart, type JournalRecord } from './core.js';
import type { JournalSavedViews, ViewRecordLine } from './saved-views.js';

export type ConfigurationRecordLine =
  | { v: 1; kind: 'put-nc'; configuration: NotificationConfiguration }
  | { v: 1; kind: 'del-nc'; organization: string; viewId: string; id: string };

const viewKey = (organization: string, viewId: string) => `${organization}\n${viewId}`;

export class JournalNotificationConfigurations implements JournalPart, NotificationConfigurationStore {
  /** By `<organization>\n<view id>`, then id. */
  private configurations = new Map<string, Map<string, NotificationConfiguration>>();
  private count = 0;

  constructor(private readonly journal: Journal, private readonly views: JournalSavedViews) {}

  invalidity(rec: Record<string, unknown>): string | undefined | null {
    switch (rec.kind) {
      case 'put-nc':
        return isObj(rec.configuration) && isStr(rec.configuration.id) && isStr(rec.configuration.organization) && isStr(rec.configuration.viewId)
          ? undefined : 'put-nc without configuration.id, configuration.organization or configuration.viewId';
      case 'del-nc': return isStr(rec.id) && isStr(rec.organization) && isStr(rec.viewId) ? undefined : 'del-nc without id, organization or viewId';
      default: return null;
    }
  }

  apply(record: JournalRecord): void {
    const rec = record as ConfigurationRecordLine | ViewRecordLine;
    switch (rec.kind) {
      case 'put-nc': {
        const key = viewKey(rec.configuration.organization, rec.configuration.viewId);
        let held = this.configurations.get(key);
        if (!held) this.configurations.set(key, (held = new Map()));
        if (!held.has(rec.configuration.id)) this.count += 1;
        held.set(rec.configuration.id, rec.configuration);
        break;
      }
      case 'del-nc': {
        const key = viewKey(rec.organization, rec.viewId);
        const held = this.configurations.get(key);
        if (held?.delete(rec.id)) this.count -= 1;
        if (held?.size === 0) this.configurations.delete(key);
        break;
      }
      case 'del-view': {
        // A view's notification configurations go with it.
        const key = viewKey(rec.organization, rec.id);
        this.count -= this.configurations.get(key)?.size ?? 0;
        this.configurations.delete(key);
        break;
      }
    }
  }

  reset(): void { this.configurations = new Map(); this.count = 0; }
  live(): number { return this.count; }
  records(): JournalRecord[] {
    return [...this.configurations.values()].flatMap((held) => [...held.values()]).sort(byCreation)
      .map((configuration): ConfigurationRecordLine => ({ v: 1, kind: 'put-nc', configuration }));
  }

  async listNotificationConfigurations(organization: string, viewId: string): Promise<NotificationConfiguration[]> {
    await this.journal.refresh();
    return [...(this.configurations.get(viewKey(organization, viewId))?.values() ?? [])].sort(byCreation).map((c) => structuredClone(c));
  }

  async getNotificationConfiguration(organization: string, viewId: string, id: string): Promise<NotificationConfiguration | undefined> {
    await this.journal.refresh();
    const c = this.configurations.get(viewKey(organization, viewId))?.get(id);
    return c && structuredClone(c);
  }

  async createNotificationConfiguration(configuration: NotificationConfiguration): Promise<NotificationConfiguration | undefined> {
    return this.journal.mutate(async () => {
      if (!this.views.has(configuration.organization, configuration.viewId)) return undefined;
      const held = this.configurations.get(viewKey(configuration.organization, configuration.viewId));
      if (held?.has(configuration.id)) throw new Error(`notification configuration id ${configuration.id} already exists`);
      if ((held?.size ?? 0) >= MAX_CONFIGURATIONS_PER_VIEW) throw new TooManyConfigurationsError();
      await this.journal.append({ v: 1, kind: 'put-nc', configuration } satisfies ConfigurationRecordLine);
      return structuredClone(configuration);
    });
  }

  async updateNotificationConfiguration(configuration: NotificationConfiguration): Promise<NotificationConfiguration | undefined> {
    return this.journal.mutate(async () => {
      if (!this.configurations.get(viewKey(configuration.organization, configuration.viewId))?.has(configuration.id)) return undefined;
      await this.journal.append({ v: 1, kind: 'put-nc', configuration } satisfies ConfigurationRecordLine);
      return structuredClone(configuration);
    });
  }

  async deleteNotificationConfiguration(organization: string, viewId: string, id: string): Promise<NotificationConfiguration | undefined> {
    return this.journal.mutate(async () => {
      const current = this.configurations.get(viewKey(organization, viewId))?.get(id);
      if (!current) return undefined;
      await this.journal.append({ v: 1, kind: 'del-nc', organization, viewId, id } satisfies ConfigurationRecordLine);
      return structuredClone(current);
    });
  }
}
