// The embedded StateStore: one journal under DATA_DIR/state (journal/core.ts) holding the four concerns of
// the state store, each in a file of its own under journal/: tokens, saved views, notification
// configurations and the notifier's state. This file only opens them together.
import { storeOf, type StateStore } from './state-store.js';
import { Journal, type JournalOptions } from './journal/core.js';
import { JournalTokens } from './journal/tokens.js';
import { JournalSavedViews } from './journal/saved-views.js';
import { JournalNotificationConfigurations } from './journal/notification-configurations.js';
import { JournalNotifier } from './journal/notifier.js';

export type JournalStoreOptions = JournalOptions;
export type JournalStore = StateStore;

export async function openJournalStore(dir: string, options: JournalStoreOptions = {}): Promise<JournalStore> {
  const journal = new Journal(dir, options);
  // Registered in this order, which is also the order a compacted journal holds their records in.
  const tokens = journal.add(new JournalTokens(journal));
  const views = journal.add(new JournalSavedViews(journal));
  const configurations = journal.add(new JournalNotificationConfigurations(journal, views));
  const notifier = journal.add(new JournalNotifier(journal));
  await journal.open();
  return storeOf({ tokens, views, configurations, notifier }, () => journal.close());
}
