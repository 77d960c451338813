// `explorer notify`: the one sender (docs/notifications.md). While it holds the lease in the state store it
// checks each snapshot pair once, in the order the snapshots became current, records the notifications a
// pair makes in the same step as the pair (an outbox), and sends them: each configuration's in order, one at
// a time, every configuration on its own so that a slow receiver delays only its own; failures retried with
// backoff up to NOTIFY_MAX_ATTEMPTS, the delivery id the same on every try.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { LookupFunction } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { openInstance } from '../duckdb/open-instance.js';
import { randomBase62 } from '../ids.js';
import { openSnapshot } from '../snapshots/read/current-snapshot.js';
import { listSnapshotIds, readCurrentId, readManifest } from '../snapshots/snapshot-dir.js';
import type { NotificationConfiguration, PendingNotification, SavedView, StateStore } from '../store/state-store.js';
import { attachSnapshots, checkView } from './check-pair.js';
import { deliver } from './deliver.js';
import type { DestinationPolicy } from './destination.js';
import type { NotifierMetrics } from './notifier-metrics.js';
import { notificationFacts, renderBody, type NotificationFacts } from './payload.js';

export interface NotifierOptions {
  dataDir: string;
  engine: string;
  store: StateStore;
  /** Links in the payloads are built on it (PUBLIC_URL, or the server's own address). */
  publicUrl: string;
  policy: DestinationPolicy;
  timeoutMs: number;
  maxAttempts: number;
  userAgent: string;
  signal: AbortSignal;
  log: (level: 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown>) => void;
  /** How often CURRENT and the outbox are looked at. */
  pollMs?: number;
  /** How long the lease lasts without renewal: a dead sender's successor takes over after it. */
  leaseMs?: number;
  /** The first retry's wait; each later one doubles it, up to ten minutes, with jitter. */
  backoffMs?: number;
  /** Resolves receivers' names (tests give their own). */
  lookup?: LookupFunction;
  metrics?: NotifierMetrics;
}

const MAX_BACKOFF_MS = 10 * 60_000;

/** The wait before try `attempt` + 1: 1 s, 2 s, 4 s … capped, ±20 % so that retries do not march in step. */
export const backoff = (attempt: number, firstMs: number) => Math.min(MAX_BACKOFF_MS, firstMs * 2 ** (attempt - 1)) * (0.8 + Math.random() * 0.4);

export async function runNotifier(opts: NotifierOptions): Promise<void> {
  const holder = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const leaseMs = opts.leaseMs ?? 15_000;
  const pollMs = opts.pollMs ?? 500;
  let leased = false;
  let said = false;
  // When the last renewal that held was asked for: the lease runs from about then.
  let renewedAt = 0;
  // The lease, renewed at a third of its length, also while a long check runs (a load's pair takes tens of
  // seconds): a holder that stops renewing loses it to the next, and one that lost it stops between pairs.
  const renew = async () => {
    const asked = performance.now();
    const held = await opts.store.takeNotifierLease(holder, leaseMs).catch((e: Error) => {
      opts.log('warn', 'the lease could not be taken or renewed', { error: e.message });
      return false;
    });
    if (held !== leased || !said) opts.log('info', held ? 'sending notifications' : 'another notifier sends; waiting', { holder });
    said = true;
    leased = held;
    if (held) renewedAt = asked;
  };
  // A holder that has not renewed for half the lease (a process starved of CPU, a slow store) starts nothing
  // more until it has: the lease may end meanwhile, and the next holder would send the same notifications.
  const holds = () => leased && performance.now() - renewedAt < leaseMs / 2;
  let renewing: Promise<void> | undefined;
  const renewNow = () => (renewing ??= renew().finally(() => { renewing = undefined; }));
  const renewal = setInterval(() => { void renewNow(); }, leaseMs / 3);
  // The configurations with a send in flight: one at a time each, all of them side by side.
  const sending = new Map<string, Promise<void>>();
  try {
    while (!opts.signal.aborted) {
      // A waiting notifier asks at every turn (a second at most), so that it takes over soon after the lease ends.
      if (!leased || !said) await renewNow();
      if (holds()) {
        try {
          await checkNewSnapshots(opts, holds);
          await startDue(opts, sending, holds);
        } catch (e) {
          opts.log('warn', 'notifications not checked or sent this time', { error: (e as Error).message });
        }
      }
      await sleep(leased ? pollMs : Math.min(leaseMs / 3, 1000), undefined, { signal: opts.signal }).catch(() => undefined);
    }
  } finally {
    clearInterval(renewal);
    await renewing;
    await Promise.all(sending.values());
    if (leased) await opts.store.releaseNotifierLease(holder).catch(() => undefined);
  }
}

/** The snapshots that became current since the last one checked, each pair checked and recorded with its notifications. */
async function checkNewSnapshots(opts: NotifierOptions, leased: () => boolean): Promise<void> {
  const current = await readCurrentId(opts.dataDir);
  if (current === null) return;
  const cursor = await opts.store.notifierCursor();
  if (cursor === null) {
    // The first start: the snapshot current now is where checking begins (its history was never notified).
    await opts.store.recordChecked(current, []);
    opts.log('info', 'notifications start from the current snapshot', { snapshot: current });
    return;
  }
  if (cursor >= current) return;
  const retained = (await listSnapshotIds(opts.dataDir)).filter((id) => id > cursor && id <= current);
  let previous: string = cursor;
  for (const id of retained) {
    if (opts.signal.aborted || !leased()) return;
    const started = performance.now();
    const checked = await checkOnePair(opts, previous, id).then((made) => {
      opts.metrics?.pairsChecked.inc();
      return made;
    }, (e: Error) => {
      // The older one left retention (or cannot be read): the pair is skipped, said, and checking goes on.
      opts.log('warn', 'snapshot pair skipped', { from: previous, to: id, error: e.message });
      opts.metrics?.pairsSkipped.inc();
      return null;
    });
    // A lease lost meanwhile: another sender checks this pair; recording it here would send it twice.
    if (!leased()) return;
    await opts.store.recordChecked(id, checked?.notifications ?? []);
    if (checked) {
      opts.log('info', 'snapshot pair checked', { from: previous, to: id, organizations: checked.organizations, configurations: checked.configurations,
        notifications: checked.notifications.length, seconds: Math.round(performance.now() - started) / 1000 });
    }
    previous = id;
  }
}

/** Every enabled configuration of the organizations `to` changed, checked between `from` and `to`. */
async function checkOnePair(opts: NotifierOptions, fromId: string, toId: string): Promise<{ organizations: number; configurations: number; notifications: PendingNotification[] }> {
  const manifest = await readManifest(opts.dataDir, toId);
  const [from, to] = await Promise.all([openSnapshot(opts.dataDir, fromId), openSnapshot(opts.dataDir, toId)]);
  const organizations = manifest.changedOrganizations ?? [...new Set([...from.organizations, ...to.organizations])].sort();
  const checks: { view: SavedView; configurations: NotificationConfiguration[] }[] = [];
  for (const organization of organizations) {
    for (const view of await opts.store.listViews(organization)) {
      const configurations = (await opts.store.listNotificationConfigurations(organization, view.id)).filter((c) => c.enabled);
      if (configurations.length > 0) checks.push({ view, configurations });
    }
  }
  const checked = { organizations: organizations.length, configurations: checks.reduce((a, c) => a + c.configurations.length, 0) };
  if (checks.length === 0) return { ...checked, notifications: [] };
  const instance = await openInstance(':memory:', { threads: '1', memory_limit: '512MB' });
  const db = await instance.connect();
  try {
    await attachSnapshots(db, new Set(), from, to);
    const made: PendingNotification[] = [];
    const now = new Date().toISOString();
    // One query (two when rows are listed) per saved view, whatever the number of its configurations.
    for (const { view, configurations } of checks) {
      const fired = await checkView(db, opts.engine, from, to, view, configurations);
      configurations.forEach((configuration, i) => {
        if (fired[i]!.length === 0) return;
        made.push({
          id: `nd-${randomBase62(16)}`, organization: view.organization, viewId: view.id, configurationId: configuration.id,
          destinationType: configuration.destinationType, from: from.id, to: to.id,
          facts: notificationFacts({ publicUrl: opts.publicUrl, view, configuration, from: from.id, to: to.id, toLoadedAt: to.manifest.createdAt, fired: fired[i]! }),
          createdAt: now, attempts: 0, nextAttemptAt: now,
        });
      });
    }
    return { ...checked, notifications: made };
  } finally {
    db.closeSync();
    instance.closeSync();
  }
}

/** Starts the due notification of each configuration that has none in flight: its oldest pending one, while `holds`. */
async function startDue(opts: NotifierOptions, sending: Map<string, Promise<void>>, holds: () => boolean): Promise<void> {
  const pending = await opts.store.pendingNotifications();
  const first = new Map<string, PendingNotification>();
  for (const n of pending) {
    const key = `${n.organization}\n${n.viewId}\n${n.configurationId}`;
    if (!first.has(key)) first.set(key, n);
  }
  const now = Date.now();
  for (const [key, n] of first) {
    if (sending.has(key) || Date.parse(n.nextAttemptAt) > now || opts.signal.aborted || !holds()) continue;
    const task = sendOne(opts, n, holds).catch((e: Error) => opts.log('warn', 'a notification could not be recorded as tried', { delivery: n.id, error: e.message }))
      .finally(() => sending.delete(key));
    sending.set(key, task);
  }
}

/**
 * One try of a pending notification, recorded: done when it succeeded or failed for good, else due again later.
 * Not tried when the lease is no longer certainly held by the time the configuration is read: it stays pending.
 */
async function sendOne(opts: NotifierOptions, n: PendingNotification, holds: () => boolean): Promise<void> {
  const configuration = await opts.store.getNotificationConfiguration(n.organization, n.viewId, n.configurationId);
  if (!holds()) return;
  const attempt = n.attempts + 1;
  if (!configuration) {
    // Deleted since: nothing is sent, and the notification is done.
    await opts.store.recordAttempt(n.id, { url: '', code: null, body: 'the configuration was deleted', headers: {}, sentAt: new Date().toISOString(), successful: false, attempt }, null);
    return;
  }
  const response = await deliver({
    url: configuration.url, body: renderBody(configuration.destinationType, n.facts as NotificationFacts), deliveryId: n.id,
    token: configuration.destinationType === 'generic' ? configuration.token : null, attempt, userAgent: opts.userAgent,
    timeoutMs: opts.timeoutMs, policy: opts.policy, ...(opts.lookup ? { lookup: opts.lookup } : {}),
  });
  const done = response.successful || attempt >= opts.maxAttempts;
  const next = done ? null : new Date(Date.now() + backoff(attempt, opts.backoffMs ?? 1000)).toISOString();
  await opts.store.recordAttempt(n.id, response, next);
  const label = { destination_type: configuration.destinationType };
  if (response.successful) opts.metrics?.sent.inc(label);
  else if (done) opts.metrics?.failed.inc(label);
  else opts.metrics?.retried.inc(label);
  // Never the receiver's body or headers, nor the token: the delivery, its status and what comes next.
  if (response.successful) opts.log('info', 'notification sent', { delivery: n.id, configuration: n.configurationId, attempt, code: response.code });
  else if (done) opts.log('warn', 'notification failed for good', { delivery: n.id, configuration: n.configurationId, attempt, code: response.code });
  else opts.log('info', 'notification to be tried again', { delivery: n.id, configuration: n.configurationId, attempt, code: response.code, next });
}
