// The notifier's own /metrics (docs/notifications.md, "Metrics"), Prometheus text on NOTIFY_METRICS_PORT under
// the server's bearer rule (METRICS_TOKEN, or METRICS_PUBLIC=1): notifications sent, failed for good, tried
// again and pending by destination type, the age of the oldest pending one, pairs checked and skipped.
import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Registry } from 'prom-client';
import type { PendingNotification } from '../store/state-store.js';

export class NotifierMetrics {
  readonly registry = new Registry();
  readonly sent = new Counter({ name: 'explorer_notifications_sent_total', help: 'Notifications a receiver accepted (2xx).', labelNames: ['destination_type'], registers: [this.registry] });
  readonly failed = new Counter({ name: 'explorer_notifications_failed_total', help: 'Notifications that failed for good after their last try.', labelNames: ['destination_type'], registers: [this.registry] });
  readonly retried = new Counter({ name: 'explorer_notifications_retried_total', help: 'Tries that failed and will be made again.', labelNames: ['destination_type'], registers: [this.registry] });
  readonly pairsChecked = new Counter({ name: 'explorer_notification_pairs_checked_total', help: 'Snapshot pairs checked against the configurations.', registers: [this.registry] });
  readonly pairsSkipped = new Counter({ name: 'explorer_notification_pairs_skipped_total', help: 'Snapshot pairs skipped (the older snapshot left retention, or could not be read).', registers: [this.registry] });

  /** `outbox` is read at each scrape: the pending notifications then, and the oldest's age. */
  constructor(outbox: () => Promise<PendingNotification[]>) {
    let reading: Promise<PendingNotification[]> | undefined;
    // Both gauges from one read of the outbox per scrape.
    const read = () => (reading ??= outbox().finally(() => { setImmediate(() => { reading = undefined; }); }));
    new Gauge({
      name: 'explorer_notifications_pending', help: 'Notifications recorded and not yet sent for good.', labelNames: ['destination_type'], registers: [this.registry],
      async collect() {
        this.reset();
        for (const n of await read()) this.inc({ destination_type: n.destinationType });
      },
    });
    new Gauge({
      name: 'explorer_notifications_oldest_pending_seconds', help: 'Age of the oldest notification not yet sent for good (0 with none).', registers: [this.registry],
      async collect() {
        const all = await read();
        this.set(all.length === 0 ? 0 : Math.max(0, (Date.now() - Math.min(...all.map((n) => Date.parse(n.createdAt)))) / 1000));
      },
    });
  }
}

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * Serves the registry on host:port (0: off). Resolves to the server, or to null when the port cannot be
 * bound (said through `log`: the notifier goes on without it).
 */
export async function serveNotifierMetrics(metrics: NotifierMetrics, opts: { host: string; port: number; token: string | null; public: boolean;
  log: (message: string, fields: Record<string, unknown>) => void }): Promise<{ server: Server; port: number } | null> {
  if (opts.port === 0 || (!opts.public && !opts.token)) return null;
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') { res.writeHead(404).end(); return; }
    if (opts.token) {
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!bearer || !same(bearer, opts.token)) { res.writeHead(401, { 'WWW-Authenticate': 'Bearer' }).end(); return; }
    }
    void metrics.registry.metrics().then((text) => {
      res.writeHead(200, { 'Content-Type': metrics.registry.contentType, 'Cache-Control': 'no-store' });
      res.end(text);
    });
  });
  try {
    await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(opts.port, opts.host, resolve); });
  } catch (e) {
    opts.log('the metrics port cannot be bound; going on without /metrics', { host: opts.host, port: opts.port, error: (e as Error).message });
    return null;
  }
  return { server, port: (server.address() as AddressInfo).port };
}
