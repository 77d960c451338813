// A saved view's notification configurations (docs/notifications.md, "Configurations"): list, create, show,
// update and delete, shaped like the platform's own notification-configuration API.
import type { Router } from '@koa/router';
import type { ParameterizedContext } from 'koa';
import type { Config } from '../../config.js';
import { ApiError, notFound } from '../../errors.js';
import { randomBase62 } from '../../ids.js';
import { configurationResource, deliveryResponseResource, parseConfigurationBody } from '../../notifications/configuration-body.js';
import { deliver } from '../../notifications/deliver.js';
import { notificationFacts, renderBody, verificationFacts } from '../../notifications/payload.js';
import { attachments } from '../../snapshots/read/current-snapshot.js';
import {
  StoreUnavailableError, TooManyConfigurationsError,
  type NotificationConfiguration, type SavedView, type StateStore,
} from '../../store/state-store.js';
import { VERSION } from '../../version.js';
import type { QueryPool } from '../../pool/query-pool.js';
import { runRows } from '../../pool/run-page.js';
import { compileTrend } from '../../query/compile-history.js';
import { beyond } from '../../notifications/check-pair.js';
import { sourceOfStored, validateSavedQuery } from '../../saved-views/saved-query.js';
import { readJsonBody } from '../body.js';
import { sendJson, sendJsonTagged } from '../jsonapi.js';
import type { RequestState } from '../state.js';

type Ctx = ParameterizedContext<RequestState> & { params: Record<string, string> };

export interface NotificationConfigurationDeps {
  config: Config;
  store: StateStore;
  pool: QueryPool;
}

/** Store failures a client can see: a full view (422) or the store being unreachable (503). */
async function stored<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (e) {
    if (e instanceof TooManyConfigurationsError) throw new ApiError(422, 'invalid notification configuration', `${e.message}.`, { pointer: '/data' });
    if (e instanceof StoreUnavailableError) {
      throw new ApiError(503, 'service unavailable', 'Notification configurations cannot be reached right now; retry shortly.', undefined, { 'Retry-After': '5' });
    }
    throw e;
  }
}

export function notificationConfigurationRoutes(router: Router<RequestState>, deps: NotificationConfigurationDeps): void {
  const { store, config } = deps;
  const base = '/explorer/views/:view_id/notification-configurations';
  const policy = { allowHosts: config.notifyAllowHosts };

  /** The view named in the path, or the same 404 as an unknown organization. */
  async function viewOf(ctx: Ctx): Promise<SavedView> {
    const view = await stored(() => store.getView(ctx.state.organization!, ctx.params.view_id!));
    if (!view) throw notFound();
    return view;
  }
  /** The configuration as answered: its last delivery responses with it. */
  const resource = async (c: NotificationConfiguration) =>
    configurationResource(c, await stored(() => store.deliveryResponses({ organization: c.organization, viewId: c.viewId, configurationId: c.id })));

  async function configurationOf(ctx: Ctx): Promise<{ view: SavedView; configuration: NotificationConfiguration }> {
    const view = await viewOf(ctx);
    const configuration = await stored(() => store.getNotificationConfiguration(view.organization, view.id, ctx.params.nc_id!));
    if (!configuration) throw notFound();
    return { view, configuration };
  }

  /**
   * A threshold that already holds when its configuration starts watching (created enabled, or enabled,
   * or given another threshold) is notified once, from no earlier snapshot: queued for the notifier.
   */
  async function thresholdNow(c: Ctx, view: SavedView, configuration: NotificationConfiguration, before?: NotificationConfiguration): Promise<void> {
    const threshold = configuration.threshold;
    if (!configuration.enabled || !threshold || !configuration.triggers.includes('explorer:threshold')) return;
    if (before && before.enabled && JSON.stringify(before.threshold) === JSON.stringify(threshold) && before.triggers.includes('explorer:threshold')) return;
    const snapshot = c.state.lease!.snapshot;
    const query = validateSavedQuery(config.engine, view.queryType, sourceOfStored(view.query));
    const summed = threshold.measure.startsWith('sum:') ? query.view.fields.filter((f) => f.name === threshold.measure.slice(4)) : [];
    const statement = compileTrend(query, [snapshot.target(view.queryType, view.organization)], summed);
    const [[row]] = await runRows(deps.pool, { organization: view.organization, attach: attachments(snapshot), statements: [statement],
      deadline: Date.now() + config.queryTimeoutMs, timeoutMs: config.queryTimeoutMs }, c.res) as [unknown[][]];
    const value = row === undefined ? null : summed.length > 0 ? (row[2] === null ? null : Number(row[2])) : Number(row[1]);
    if (!beyond(threshold, value)) return;
    const now = new Date().toISOString();
    const facts = notificationFacts({
      publicUrl: config.publicUrl ?? `${c.protocol}://${c.host}`, view, configuration, from: null, to: snapshot.id, toLoadedAt: snapshot.manifest.createdAt,
      fired: [{ trigger: 'explorer:threshold', measure: { name: threshold.measure, before: null, after: value, threshold }, rows: [] }],
    });
    await stored(() => store.queueNotifications([{ id: `nd-${randomBase62(16)}`, organization: view.organization, viewId: view.id, configurationId: configuration.id,
      destinationType: configuration.destinationType, from: null, to: snapshot.id, facts, createdAt: now, attempts: 0, nextAttemptAt: now }]));
  }

  router.get(base, async (ctx) => {
    const c = ctx as Ctx;
    const view = await viewOf(c);
    const configurations = await stored(() => store.listNotificationConfigurations(view.organization, view.id));
    c.state.rows = configurations.length;
    sendJsonTagged(c, { data: await Promise.all(configurations.map(resource)) });
  });

  router.post(base, async (ctx) => {
    const c = ctx as Ctx;
    const view = await viewOf(c);
    const body = await readJsonBody(c);
    const configuration = await parseConfigurationBody(body, { engine: config.engine, view, policy, id: `nc-${randomBase62(16)}`, now: new Date().toISOString() });
    const created = await stored(() => store.createNotificationConfiguration(configuration));
    if (!created) throw notFound(); // the view was deleted meanwhile
    await thresholdNow(c, view, created);
    sendJson(c, 201, { data: configurationResource(created) });
  });

  router.get(`${base}/:nc_id`, async (ctx) => {
    sendJsonTagged(ctx, { data: await resource((await configurationOf(ctx as Ctx)).configuration) });
  });

  router.patch(`${base}/:nc_id`, async (ctx) => {
    const c = ctx as Ctx;
    const { view, configuration: current } = await configurationOf(c);
    const body = await readJsonBody(c);
    const changed = await parseConfigurationBody(body, { engine: config.engine, view, policy, current, id: current.id, now: new Date().toISOString() });
    const updated = await stored(() => store.updateNotificationConfiguration(changed));
    if (!updated) throw notFound(); // deleted meanwhile
    await thresholdNow(c, view, updated, current);
    sendJson(c, 200, { data: await resource(updated) });
  });

  // A test notification now, whatever the configuration's triggers; its response kept with the others.
  router.post(`${base}/:nc_id/actions/verify`, async (ctx) => {
    const c = ctx as Ctx;
    const { view, configuration } = await configurationOf(c);
    const publicUrl = config.publicUrl ?? `${c.protocol}://${c.host}`;
    const response = await deliver({
      url: configuration.url, body: renderBody(configuration.destinationType, verificationFacts(publicUrl, view, configuration)),
      deliveryId: `nd-${randomBase62(16)}`, token: configuration.destinationType === 'generic' ? configuration.token : null, attempt: 1,
      userAgent: `explorer-notifier/${VERSION}`, timeoutMs: config.notifyTimeoutMs, policy,
    });
    await stored(() => store.recordResponse({ organization: view.organization, viewId: view.id, configurationId: configuration.id }, response));
    sendJson(c, 200, { data: deliveryResponseResource(response) });
  });

  router.delete(`${base}/:nc_id`, async (ctx) => {
    const c = ctx as Ctx;
    const { view, configuration } = await configurationOf(c);
    const deleted = await stored(() => store.deleteNotificationConfiguration(view.organization, view.id, configuration.id));
    if (!deleted) throw notFound();
    sendJson(c, 200, { data: configurationResource(deleted) });
  });
}
