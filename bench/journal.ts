// node dist/bench/journal.js: what the embedded journal costs the notifier (docs/notifications.md, "State"):
// a pair recorded with its notifications, one try recorded (each an fdatasync'd append under the journal's
// lock), the outbox read back, and a compaction of a journal that is mostly dead records — against 10,000
// configurations, so that the journal holds what a large deployment's does. Prints one line per figure.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openJournalStore } from '../src/store/journal-store.js';
import type { PendingNotification } from '../src/store/state-store.js';

const CONFIGURATIONS = 10_000;
const TRIES = 2_000;
const per = (ms: number, n: number) => `${(ms / n).toFixed(3)} ms each (${n.toLocaleString('en-US')} in ${(ms / 1000).toFixed(2)} s)`;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'explorer-journal-bench-'));
  try {
    const store = await openJournalStore(dir, { compactAfterRecords: 1_000_000 });
    const now = new Date().toISOString();
    let t = performance.now();
    for (let i = 0; i < CONFIGURATIONS / 10; i++) {
      const viewId = `sq-${String(i).padStart(16, '0')}`;
      await store.createView({ id: viewId, organization: `org-${i}`, name: 'v', queryType: 'workspaces', query: { type: 'workspaces', filter: [] }, createdAt: now, updatedAt: now });
      for (let k = 0; k < 10; k++) {
        await store.createNotificationConfiguration({ id: `nc-${String(i * 10 + k).padStart(16, '0')}`, organization: `org-${i}`, viewId, name: `c${k}`, enabled: true,
          destinationType: 'generic', url: 'https://hooks.example.com/x', token: 't', triggers: ['explorer:rows-added'], threshold: null, createdAt: now, updatedAt: now });
      }
    }
    console.log(`configuration created: ${per(performance.now() - t, CONFIGURATIONS + CONFIGURATIONS / 10)}`);

    // A pair that makes 1,000 notifications, recorded in one append.
    const notifications: PendingNotification[] = Array.from({ length: 1000 }, (_, i) => ({
      id: `nd-${String(i).padStart(16, '0')}`, organization: `org-${i}`, viewId: `sq-${String(i).padStart(16, '0')}`, configurationId: `nc-${String(i * 10).padStart(16, '0')}`,
      destinationType: 'generic', from: 'a', to: 'b', facts: { notifications: [{ trigger: 'explorer:rows-added', rows: Array.from({ length: 20 }, (_, r) => ({ id: `ws-${r}`, workspace_name: `name-${r}` })) }] },
      createdAt: now, attempts: 0, nextAttemptAt: now,
    }));
    t = performance.now();
    await store.recordChecked('b', notifications);
    console.log(`a pair with 1,000 notifications recorded: ${(performance.now() - t).toFixed(1)} ms`);
    t = performance.now();
    for (let i = 0; i < TRIES; i++) {
      await store.recordAttempt(notifications[i % 1000]!.id, { url: 'https://hooks.example.com/x', code: i < 1000 ? 503 : 204, body: 'x', headers: {}, sentAt: now, successful: i >= 1000, attempt: i < 1000 ? 1 : 2 },
        i < 1000 ? now : null);
    }
    console.log(`a try recorded: ${per(performance.now() - t, TRIES)}`);
    t = performance.now();
    await store.pendingNotifications();
    console.log(`the outbox read: ${(performance.now() - t).toFixed(1)} ms`);
    await store.close();

    // Compaction on the next write once most records are dead (the lease renewed 20,000 times).
    const lease = await openJournalStore(dir, { compactAfterRecords: 20_000 });
    t = performance.now();
    for (let i = 0; i < 20_000; i++) await lease.takeNotifierLease('bench', 15_000);
    const renewals = performance.now() - t;
    const size = statSync(join(dir, 'journal.ndjson')).size;
    console.log(`lease renewed: ${per(renewals, 20_000)}; journal after compaction ${(size / 1e6).toFixed(2)} MB`);
    t = performance.now();
    const reopened = await openJournalStore(dir);
    console.log(`reopened (every record read back and checked): ${(performance.now() - t).toFixed(1)} ms`);
    await reopened.close();
    await lease.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
