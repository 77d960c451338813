// A saved view's notification configurations (docs/notifications.md, "Configurations"): list, create, show,
// update and delete, shaped like the platform's own notification-configuration API.
import type { Router } from '@koa/router';
import type { ParameterizedContext } from 'koa';
import type { Config } from '../../config.js';
import { ApiError, notFound } from '../../errors.js';
import { randomBase62 } from '../../ids.js';
import { configurationResource, deliveryResponseResource, parseConfigurationBody } from '../../notifications/configuration-body.js';
import { deliver } from '../../notifications/deliver.js';
import { renderBody, verificationFacts } from '../../notifications/payload.js';
import {
  StoreUnavailableError, TooManyConfigurationsError,
  type NotificationConfiguration, type SavedView, type StateStore,
} from '../../store/state-store.js';
import { VERSION } from '../../version.js';
import { readJsonBody } from '../body.js';
import { sendJson, sendJsonTagged } from '../jsonapi.js';
import type { RequestState } from '../state.js';

type Ctx = ParameterizedContext<RequestState> & { params: Record<string, string> };

export interface NotificationConfigurationDeps {
  config: Config;
  store: StateStore;
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
