// The embedded StateStore: one journal under DATA_DIR/state (journal/core.ts) holding the four concerns of
// the state store, each in a file of its own under journal/: tokens, saved views, notification
// configurations and the notifier's state. This file only opens them together.
import type { StateStore } from './state-store.js';
import { Journal, type JournalOptions } from './journal/core.js';
import { JournalTokens } from './journal/tokens.js';
import { JournalSavedViews } from './journal/saved-views.js';
import { JournalNotificationConfigurations } from './journal/notification-configurations.js';
import { JournalNotifier } from './journal/notifier.js';

export type JournalStoreOptions = JournalOptions;

export async function openJournalStore(dir: string, options: JournalStoreOptions = {}): Promise<JournalStore> {
  const store = new JournalStore(new Journal(dir, options));
  await store.journal.open();
  return store;
}

export class JournalStore implements StateStore {
  // Registered in this order, which is also the order a compacted journal holds their records in.
  private readonly tokens: JournalTokens;
  private readonly views: JournalSavedViews;
  private readonly configurations: JournalNotificationConfigurations;
  private readonly notifier: JournalNotifier;

  constructor(readonly journal: Journal) {
    this.tokens = journal.add(new JournalTokens(journal));
    this.views = journal.add(new JournalSavedViews(journal));
    this.configurations = journal.add(new JournalNotificationConfigurations(journal, this.views));
    this.notifier = journal.add(new JournalNotifier(journal));
  }

  putToken: StateStore['putToken'] = (...a) => this.tokens.putToken(...a);
  getToken: StateStore['getToken'] = (...a) => this.tokens.getToken(...a);
  listTokens: StateStore['listTokens'] = () => this.tokens.listTokens();
  revokeToken: StateStore['revokeToken'] = (...a) => this.tokens.revokeToken(...a);

  listViews: StateStore['listViews'] = (...a) => this.views.listViews(...a);
  listViewOrganizations: StateStore['listViewOrganizations'] = () => this.views.listViewOrganizations();
  getView: StateStore['getView'] = (...a) => this.views.getView(...a);
  createView: StateStore['createView'] = (...a) => this.views.createView(...a);
  updateView: StateStore['updateView'] = (...a) => this.views.updateView(...a);
  deleteView: StateStore['deleteView'] = (...a) => this.views.deleteView(...a);

  listNotificationConfigurations: StateStore['listNotificationConfigurations'] = (...a) => this.configurations.listNotificationConfigurations(...a);
  getNotificationConfiguration: StateStore['getNotificationConfiguration'] = (...a) => this.configurations.getNotificationConfiguration(...a);
  createNotificationConfiguration: StateStore['createNotificationConfiguration'] = (...a) => this.configurations.createNotificationConfiguration(...a);
  updateNotificationConfiguration: StateStore['updateNotificationConfiguration'] = (...a) => this.configurations.updateNotificationConfiguration(...a);
  deleteNotificationConfiguration: StateStore['deleteNotificationConfiguration'] = (...a) => this.configurations.deleteNotificationConfiguration(...a);

  notifierCursor: StateStore['notifierCursor'] = () => this.notifier.notifierCursor();
  recordChecked: StateStore['recordChecked'] = (...a) => this.notifier.recordChecked(...a);
  queueNotifications: StateStore['queueNotifications'] = (...a) => this.notifier.queueNotifications(...a);
  pendingNotifications: StateStore['pendingNotifications'] = () => this.notifier.pendingNotifications();
  recordAttempt: StateStore['recordAttempt'] = (...a) => this.notifier.recordAttempt(...a);
  recordResponse: StateStore['recordResponse'] = (...a) => this.notifier.recordResponse(...a);
  deliveryResponses: StateStore['deliveryResponses'] = (...a) => this.notifier.deliveryResponses(...a);
  takeNotifierLease: StateStore['takeNotifierLease'] = (...a) => this.notifier.takeNotifierLease(...a);
  releaseNotifierLease: StateStore['releaseNotifierLease'] = (...a) => this.notifier.releaseNotifierLease(...a);

  close(): Promise<void> { return this.journal.close(); }
}
