// `explorer notify` as an operator runs it, against a real receiver on loopback: a batch that makes a workspace
// drift reaches a view of drifted workspaces as one signed notification; a 503 is tried again with the same
// delivery id; a redirect is a failure, not followed; a slow receiver delays no other; a batch of another
// organization sends nothing; a second notifier waits for the first's lease.
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { openStateStore } from '../../src/store/open-store.js';
import type { NotificationConfiguration, SavedView, StateStore } from '../../src/store/state-store.js';
import { ORG, OTHER_ORG, workspaces, writeSmallSource } from '../fixtures/small-source.js';
import { freePort } from '../helpers/ports.js';
import { startTestRedis } from '../helpers/redis.js';
import { sharedTestCluster } from '../helpers/redis-cluster.js';
import { startReceiver, type Answer, type Receiver } from '../helpers/receiver.js';
import { within } from '../helpers/wait.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ndjson = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
const byId = (id: string) => workspaces.find((w) => w.id === id)!;

/** `explorer notify` as a child process (receivers on loopback allowed, quick retries, no metrics port), its JSON lines gathered. */
function startNotifier(children: ChildProcess[], env: Record<string, string>) {
  const child = spawn(process.execPath, [CLI, 'notify'], {
    env: { ...process.env, NOTIFY_ALLOW_HOSTS: '127.0.0.1', NOTIFY_BACKOFF_MS: '100', NOTIFY_METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr!.resume();
  return { child, lines: () => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, any>) };
}

describe('explorer notify', function () {
  // Bounds, not timings: the kill -9 test's rounds (a batch applied and a sender started each) once took
  // over two minutes on a machine the rest of the suite kept busy.
  this.timeout(300_000);
  let dir: string;
  let store: StateStore;
  let receiver: Receiver;
  let batches = 0;
  const children: ChildProcess[] = [];

  const view = (id: string, organization: string): SavedView => ({
    id, organization, name: 'drifted', queryType: 'workspaces', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z',
    query: { type: 'workspaces', filter: [{ field: 'drifted', operator: 'is', value: ['true'] }], sort: ['workspace_name'] },
  });
  const configuration = (id: string, v: SavedView, path: string, extra: Partial<NotificationConfiguration> = {}): NotificationConfiguration => ({
    id, organization: v.organization, viewId: v.id, name: path, enabled: true, destinationType: 'generic', url: `${receiver.url}${path}`,
    token: null, triggers: ['explorer:rows-added', 'explorer:rows-removed', 'explorer:rows-changed'], threshold: null,
    createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', ...extra,
  });
  const notifier = (env: Record<string, string> = {}) =>
    startNotifier(children, { DATA_DIR: dir, NOTIFY_MAX_ATTEMPTS: '2', PUBLIC_URL: 'https://explorer.example.com', ...env });
  const until = async (test: () => boolean, what: string, ms = 30_000) => {
    for (const end = Date.now() + ms; !test();) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await sleep(50);
    }
  };
  /** A batch of the workspaces given, applied as `apply` does. */
  const apply = async (rows: object[]) => {
    const batch = join(dir, `batch-${++batches}`);
    mkdirSync(batch);
    writeFileSync(join(batch, 'workspaces.ndjson'), ndjson(rows));
    await applyBatch(batch, { dataDir: dir, memoryLimit: '512MB' });
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-notify-'));
    writeSmallSource(join(dir, 'source'));
    await loadSnapshot(join(dir, 'source'), { dataDir: dir, memoryLimit: '512MB' });
    store = await openStateStore(loadConfig({ DATA_DIR: dir }));
    // /slow answers after 4 s; /flaky 503 first; /moved redirects; /other is another organization's.
    receiver = await startReceiver((r, n): Answer => {
      if (r.path === '/slow') return { status: 200, delayMs: 4000 };
      if (r.path === '/flaky') return n === 1 ? { status: 503, body: 'busy', headers: { 'Retry-After': '1' } } : { status: 200, body: 'ok' };
      if (r.path === '/moved') return { status: 302, headers: { Location: `${receiver.url}/elsewhere` } };
      return { status: 204 };
    });
    const acme = view('sq-000000000000000A', ORG);
    const globex = view('sq-000000000000000G', OTHER_ORG);
    await store.createView(acme);
    await store.createView(globex);
    await store.createNotificationConfiguration(configuration('nc-00000000000flaky', acme, '/flaky', { token: 'shared secret' }));
    await store.createNotificationConfiguration(configuration('nc-00000000000moved', acme, '/moved'));
    await store.createNotificationConfiguration(configuration('nc-000000000000slow', acme, '/slow'));
    await store.createNotificationConfiguration(configuration('nc-00000000000other', globex, '/other'));
    await store.createNotificationConfiguration(configuration('nc-0000000000000off', acme, '/off', { enabled: false }));
  });
  after(async () => {
    for (const c of children) c.kill('SIGKILL');
    await receiver?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends a signed notification of the rows a batch moved into and out of the view, tries a 503 again with the same delivery id, and keeps a slow receiver from delaying the others', async () => {
    const metricsPort = await freePort();
    const first = notifier({ NOTIFY_METRICS_PORT: String(metricsPort), METRICS_PUBLIC: '1' });
    await until(() => first.lines().some((l) => l.message === 'notifications start from the current snapshot'), 'the notifier to start');
    const second = notifier();
    await until(() => second.lines().some((l) => l.message === 'another notifier sends; waiting'), 'the second notifier to wait');

    await apply([{ ...byId('ws-aaa2'), drift: { drifted: true, resources_drifted: 1, resources_undrifted: 11 } }]);
    await until(() => receiver.received.filter((r) => r.path === '/flaky').length === 2, 'the flaky receiver\'s second try');
    const [tried, retried] = receiver.received.filter((r) => r.path === '/flaky');
    expect(retried!.headers['x-explorer-delivery']).to.match(/^nd-[0-9A-Za-z]{16}$/).and.equal(tried!.headers['x-explorer-delivery']);
    expect(retried!.body).to.equal(tried!.body);
    expect(retried!.headers['user-agent']).to.match(/^explorer-notifier\/\d+\.\d+\.\d+/);
    expect(retried!.headers['content-type']).to.equal('application/json');
    expect(retried!.headers['x-explorer-notification-signature']).to.equal(createHmac('sha512', 'shared secret').update(retried!.body).digest('hex'));
    const body = JSON.parse(retried!.body);
    expect(body).to.include({ payload_version: 1, notification_configuration_id: 'nc-00000000000flaky', organization_name: ORG, view_id: 'sq-000000000000000A', view_name: 'drifted' });
    expect(body.notifications).to.have.length(1);
    expect(body.notifications[0]).to.deep.include({ trigger: 'explorer:rows-added', counts: { added: 1, removed: 0, changed: 0 } });
    expect(body.notifications[0].rows).to.deep.equal([{ id: 'ws-aaa2', change: 'added', workspace_name: 'Payments-worker' }]);
    expect(body.notifications[0].changes_url).to.equal(`https://explorer.example.com/api/v2/organizations/${ORG}/explorer/views/sq-000000000000000A/changes?from=${body.from_snapshot}&to=${body.to_snapshot}`);
    expect(body.view_url).to.equal('https://explorer.example.com/explorer#org=acme-corp&view=sq-000000000000000A');
    // The slow receiver's answer (4 s) had not come when the flaky one's second try (100 ms after the first) did.
    const slow = receiver.received.find((r) => r.path === '/slow')!;
    expect(retried!.at - slow.at).to.be.below(4000);
    expect(receiver.received.filter((r) => r.path === '/other' || r.path === '/off'), 'another organization, a disabled configuration').to.deep.equal([]);
    expect(second.lines().some((l) => l.message === 'notification sent'), 'the waiting notifier sent nothing').to.equal(false);

    // A redirect is a failure and is not followed: tried NOTIFY_MAX_ATTEMPTS (2) times, then failed for good.
    await until(() => first.lines().some((l) => l.message === 'notification failed for good' && l.configuration === 'nc-00000000000moved'), 'the redirect to fail');
    expect(receiver.received.filter((r) => r.path === '/moved')).to.have.length(2);
    expect(receiver.received.filter((r) => r.path === '/elsewhere')).to.deep.equal([]);
    const moved = await store.deliveryResponses({ organization: ORG, viewId: 'sq-000000000000000A', configurationId: 'nc-00000000000moved' });
    expect(moved.map((r) => [r.code, r.successful, r.attempt])).to.deep.equal([[302, false, 2], [302, false, 1]]);
    const flaky = await store.deliveryResponses({ organization: ORG, viewId: 'sq-000000000000000A', configurationId: 'nc-00000000000flaky' });
    expect(flaky.map((r) => [r.code, r.successful, r.attempt, r.body])).to.deep.equal([[200, true, 2, 'ok'], [503, false, 1, 'busy']]);
    expect(flaky[1]!.headers).to.deep.equal({ 'content-type': 'text/plain', 'retry-after': '1' });

    // A batch of another organization only: its configuration hears of it, acme's do not.
    const heard = receiver.received.length;
    await apply([{ ...byId('ws-bbb1'), drift: { drifted: true, resources_drifted: 1, resources_undrifted: 0 } }]);
    await until(() => receiver.received.some((r) => r.path === '/other'), 'the other organization\'s notification');
    await sleep(500);
    expect(receiver.received.slice(heard).map((r) => r.path)).to.deep.equal(['/other']);
    await until(() => (first.lines().filter((l) => l.message === 'notification sent' && l.configuration === 'nc-000000000000slow')).length === 1, 'the slow receiver\'s answer');
    // Its own /metrics: sent, failed for good, tried again, pending, pairs checked.
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    expect(value('explorer_notifications_sent_total{destination_type="generic"}'), text).to.equal(3);
    expect(value('explorer_notifications_failed_total{destination_type="generic"}')).to.equal(1);
    expect(value('explorer_notifications_retried_total{destination_type="generic"}')).to.equal(2);
    expect(value('explorer_notification_pairs_checked_total')).to.equal(2);
    expect(value('explorer_notifications_oldest_pending_seconds')).to.equal(0);
    expect(text).to.not.include('shared secret');
    first.child.kill('SIGTERM');
    second.child.kill('SIGTERM');
    const codes = await Promise.all([first.child, second.child].map((c) => new Promise<number | null>((r) => (c.exitCode !== null ? r(c.exitCode) : c.once('exit', r)))));
    expect(codes).to.deep.equal([0, 0]);
  });

  it('loses no notification through kill -9 of the sender at many moments: each arrives, in order, repeated at most once with the same id', async () => {
    // Only the flaky configuration from here: the others are disabled.
    for (const id of ['nc-00000000000moved', 'nc-000000000000slow', 'nc-00000000000other']) {
      const c = (await store.getNotificationConfiguration(id === 'nc-00000000000other' ? OTHER_ORG : ORG, id === 'nc-00000000000other' ? 'sq-000000000000000G' : 'sq-000000000000000A', id))!;
      await store.updateNotificationConfiguration({ ...c, enabled: false });
    }
    const before = receiver.received.length;
    const kills: number[] = [];
    let flips = 0;
    // Short, so that each round's sender takes over soon after the last one's kill; long enough that a sender
    // starved of CPU on a busy machine keeps it through a send (a repeat beyond the kills' would be the lease's).
    const lease = { NOTIFY_LEASE_MS: '1500' };
    // Each round: a batch flips ws-aaa2's drift (a notification for each), a sender starts, and once it holds
    // the lease it is killed after a growing delay: from before it checked the pair to well into sending, and
    // on while none has sent yet (however long checking and sending take on this machine).
    for (let delay = 0; delay <= 900 || (receiver.received.length === before && delay <= 9000); delay += 225) {
      await apply([{ ...byId('ws-aaa2'), drift: { drifted: flips++ % 2 === 0 ? false : true, resources_drifted: flips, resources_undrifted: 11 } }]);
      const n = notifier(lease);
      await until(() => n.lines().some((l) => l.message === 'sending notifications'), 'the sender to hold the lease');
      await sleep(delay);
      n.child.kill('SIGKILL');
      await new Promise((r) => (n.child.exitCode !== null || n.child.signalCode !== null ? r(null) : n.child.once('exit', r)));
      kills.push(delay);
    }
    // The killed senders sent some of them: the kills landed while they worked.
    expect(receiver.received.slice(before).length, 'sent before the last sender started').to.be.above(0);
    // One more sender, left to finish: every notification arrives.
    const last = notifier(lease);
    const expected = flips;
    const firsts = () => {
      const seen = new Map<string, { at: number; to: string; count: number }>();
      for (const r of receiver.received.slice(before).filter((x) => x.path === '/flaky')) {
        const id = r.headers['x-explorer-delivery'] as string;
        const prior = seen.get(id);
        if (prior) prior.count++;
        else seen.set(id, { at: r.at, to: JSON.parse(r.body).to_snapshot, count: 1 });
      }
      return seen;
    };
    await until(() => firsts().size >= expected, 'every notification', 60_000);
    last.child.kill('SIGTERM');
    await new Promise((r) => (last.child.exitCode !== null ? r(null) : last.child.once('exit', r)));
    expect(await store.pendingNotifications(), 'the outbox empty').to.deep.equal([]);
    const seen = firsts();
    expect(seen.size, `deliveries after ${kills.length} kills`).to.equal(expected);
    for (const [id, v] of seen) expect(v.count, `${id}: at most one repeat`).to.be.at.most(2);
    const order = [...seen.values()].sort((a, b) => a.at - b.at).map((v) => v.to);
    expect(order, 'in snapshot order').to.deep.equal([...order].sort());
  });
});

// The same durability with the state in Redis and in a Redis Cluster: the outbox, the tries and the lease are
// the store's, so kill -9 of the sender at any moment loses nothing there either, and a standby takes over.
for (const backend of ['redis', 'redis cluster'] as const) {
  describe(`explorer notify with its state in ${backend === 'redis' ? 'Redis' : 'a Redis Cluster'}`, function () {
    this.timeout(180_000);
    let dir: string;
    let store: StateStore;
    let receiver: Receiver;
    let env: Record<string, string>;
    let closeRedis: () => Promise<void>;
    const children: ChildProcess[] = [];
    const spawnNotifier = () => startNotifier(children, { ...env, DATA_DIR: dir, NOTIFY_LEASE_MS: '1500' });
    const exited = (c: ChildProcess) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r)));

    before(async () => {
      if (backend === 'redis') {
        const redis = await startTestRedis();
        env = { REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix };
        closeRedis = () => redis.close();
      } else {
        const cluster = await sharedTestCluster();
        env = cluster.env;
        closeRedis = () => cluster.close();
      }
      dir = mkdtempSync(join(tmpdir(), 'explorer-notify-redis-'));
      writeSmallSource(join(dir, 'source'));
      await loadSnapshot(join(dir, 'source'), { dataDir: dir, memoryLimit: '512MB' });
      store = await openStateStore(loadConfig({ DATA_DIR: dir, ...env }));
      receiver = await startReceiver(() => ({ status: 204 }));
      const view: SavedView = {
        id: 'sq-000000000000000R', organization: ORG, name: 'drifted', queryType: 'workspaces', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z',
        query: { type: 'workspaces', filter: [{ field: 'drifted', operator: 'is', value: ['true'] }] },
      };
      await store.createView(view);
      await store.createNotificationConfiguration({
        id: 'nc-000000000000000R', organization: ORG, viewId: view.id, name: 'r', enabled: true, destinationType: 'generic', url: `${receiver.url}/r`,
        token: null, triggers: ['explorer:rows-added', 'explorer:rows-removed'], threshold: null, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z',
      });
    });
    after(async () => {
      for (const c of children) c.kill('SIGKILL');
      await receiver?.close();
      await store?.close();
      await closeRedis?.();
      rmSync(dir, { recursive: true, force: true });
    });

    it('loses nothing through kill -9 at many moments, repeats at most once, keeps the order, and a standby takes over', async () => {
      const first = spawnNotifier();
      for (const end = Date.now() + 30_000; !first.lines().some((l) => l.message === 'notifications start from the current snapshot');) {
        if (Date.now() > end) throw new Error('the notifier did not start');
        await sleep(50);
      }
      first.child.kill('SIGKILL');
      await within(10_000, 'the first notifier exiting on SIGKILL', exited(first.child));
      let flips = 0;
      // Each round: a batch, a sender started and, once it has asked for the lease (the last one killed may
      // still hold it), killed after a growing delay: from before it took the lease to well into sending.
      for (let delay = 0; delay <= 900; delay += 300) {
        const batch = join(dir, `batch-${flips}`);
        mkdirSync(batch);
        writeFileSync(join(batch, 'workspaces.ndjson'), ndjson([{ ...byId('ws-aaa2'), drift: { drifted: flips++ % 2 === 0, resources_drifted: flips, resources_undrifted: 11 } }]));
        await within(60_000, `batch ${flips} applied`, applyBatch(batch, { dataDir: dir, memoryLimit: '512MB' }));
        const n = spawnNotifier();
        for (const end = Date.now() + 30_000; !n.lines().some((l) => l.message === 'sending notifications' || l.message === 'another notifier sends; waiting');) {
          if (Date.now() > end) throw new Error('the notifier did not ask for the lease');
          await sleep(20);
        }
        await sleep(delay);
        n.child.kill('SIGKILL');
        await within(10_000, `notifier ${flips} exiting on SIGKILL`, exited(n.child));
      }
      // Two at once: one sends, the other waits; the one sending is killed, and the standby finishes.
      const a = spawnNotifier();
      const b = spawnNotifier();
      const holder = async () => {
        for (const end = Date.now() + 30_000; ;) {
          const sending = [a, b].find((x) => x.lines().some((l) => l.message === 'sending notifications'));
          if (sending) return sending;
          if (Date.now() > end) throw new Error('neither took the lease');
          await sleep(20);
        }
      };
      const active = await holder();
      const standby = active === a ? b : a;
      active.child.kill('SIGKILL');
      await within(10_000, 'the active notifier exiting on SIGKILL', exited(active.child));
      // One more batch after the kill: only the standby is left to tell of it.
      const last = join(dir, `batch-${flips}`);
      mkdirSync(last);
      writeFileSync(join(last, 'workspaces.ndjson'), ndjson([{ ...byId('ws-aaa2'), drift: { drifted: flips++ % 2 === 0, resources_drifted: flips, resources_undrifted: 11 } }]));
      await within(60_000, 'the last batch applied', applyBatch(last, { dataDir: dir, memoryLimit: '512MB' }));
      const deliveries = () => {
        const seen = new Map<string, { at: number; to: string; count: number }>();
        for (const r of receiver.received) {
          const id = r.headers['x-explorer-delivery'] as string;
          const prior = seen.get(id);
          if (prior) prior.count++;
          else seen.set(id, { at: r.at, to: JSON.parse(r.body).to_snapshot, count: 1 });
        }
        return seen;
      };
      for (const end = Date.now() + 60_000; deliveries().size < flips;) {
        if (Date.now() > end) throw new Error(`${deliveries().size} of ${flips} notifications arrived`);
        await sleep(50);
      }
      expect(standby.lines().some((l) => l.message === 'sending notifications'), 'the standby took over').to.equal(true);
      standby.child.kill('SIGTERM');
      // A stop that hangs says what it waits for (explorer notify logs it after 10 s): shown with the failure.
      const code = await within(30_000, 'the standby exiting on SIGTERM', exited(standby.child)).catch((e: Error) => {
        throw new Error(`${e.message}; its last lines: ${standby.lines().slice(-4).map((l) => JSON.stringify(l)).join('\n')}`);
      });
      expect(code, 'the standby exits with 0 once stopped in order').to.equal(0);
      expect(await within(10_000, 'the pending notifications read', store.pendingNotifications())).to.deep.equal([]);
      const seen = deliveries();
      expect(seen.size).to.equal(flips);
      for (const [id, v] of seen) expect(v.count, `${id}: at most one repeat`).to.be.at.most(2);
      const order = [...seen.values()].sort((x, y) => x.at - y.at).map((v) => v.to);
      expect(order).to.deep.equal([...order].sort());
    });
  });
}
