// `explorer notify`: sends the notifications of saved views' configurations (docs/notifications.md) until
// SIGTERM or SIGINT. One runs at a time per state store: a second waits for the first's lease.
import { loadConfig } from '../config.js';
import { runNotifier } from '../notifications/notifier.js';
import { NotifierMetrics, serveNotifierMetrics } from '../notifications/notifier-metrics.js';
import { openStateStore } from '../store/open-store.js';
import { VERSION } from '../version.js';
import { parseArgs, UsageError } from './args.js';

const STILL_STOPPING_MS = 10_000;

export async function notify(argv: string[]): Promise<number> {
  const args = parseArgs(argv, []);
  if (args.positional.length > 0) throw new UsageError('notify takes no arguments');
  const config = loadConfig();
  const store = await openStateStore(config);
  const log = (level: 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown>) =>
    console.log(JSON.stringify({ time: new Date().toISOString(), level, message, ...fields }));
  const stop = new AbortController();
  // What a stop that takes long still waits for, said once, so that a shutdown that hangs tells why.
  let waitingFor = 'the sends in flight and the lease';
  const onSignal = () => {
    stop.abort();
    setTimeout(() => log('warn', 'still stopping', { waiting_for: waitingFor, resources: process.getActiveResourcesInfo() }), STILL_STOPPING_MS).unref();
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, onSignal);
  const publicUrl = config.publicUrl ?? `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
  console.error(`notify: checking the snapshots of ${config.dataDir} for saved views' notifications`);
  const metrics = new NotifierMetrics(() => store.pendingNotifications());
  const served = await serveNotifierMetrics(metrics, { host: config.host, port: config.notifyMetricsPort, token: config.metricsToken,
    public: config.metricsPublic, log: (message, fields) => log('warn', message, fields) });
  if (served) log('info', 'metrics served', { url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${served.port}/metrics` });
  try {
    await runNotifier({
      dataDir: config.dataDir, engine: config.engine, store, publicUrl, policy: { allowHosts: config.notifyAllowHosts },
      timeoutMs: config.notifyTimeoutMs, maxAttempts: config.notifyMaxAttempts, backoffMs: config.notifyBackoffMs, leaseMs: config.notifyLeaseMs, userAgent: `explorer-notifier/${VERSION}`, signal: stop.signal,
      log, metrics,
    });
  } finally {
    waitingFor = 'the state store closing';
    served?.server.close();
    await store.close();
  }
  // Stopped in order: the lease is released and the store closed. A connection's timer or an idle socket
  // (a Redis Cluster client's, say) has nothing left to do, and must not keep a stopped sender alive.
  process.exit(0);
}
