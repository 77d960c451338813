// Endpoints 3–9: saved views of an organization (docs/interface.md; interface §8).
import type { Router } from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { ApiError, notFound } from '../../errors.js';
import { randomBase62 } from '../../ids.js';
import { pageLinks, pagination } from '../../query/links.js';
import { decodeQueryString } from '../../query/query-string.js';
import { validatePage } from '../../query/validate.js';
import { parseSavedViewBody } from '../../saved-views/body.js';
import { savedViewResource } from '../../saved-views/render.js';
import { sourceOfStored, validateSavedQuery } from '../../saved-views/saved-query.js';
import { NameTakenError, StoreUnavailableError, type SavedView, type SavedViewStore } from '../../store/state-store.js';
import { readJsonBody } from '../body.js';
import { sendJson, sendJsonTagged } from '../jsonapi.js';
import type { RequestState } from '../state.js';
import { answerExport, answerPage, baseUrl, withoutPaging, type ExplorerDeps } from '../answer.js';
import { EXPORT_FORMATS } from '../../query/compile.js';
import { travel } from '../time-travel.js';
import { readPageAfter } from '../../query/parse-query.js';
import type { Query } from '../../query/query.js';

type Ctx = ParameterizedContext<RequestState> & { params: Record<string, string> };

export interface SavedViewDeps extends ExplorerDeps {
  store: SavedViewStore;
}

/** Store failures a client can see: a name clash (422) or the store being unreachable (503). */
async function stored<T>(pointer: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (e) {
    if (e instanceof NameTakenError) throw new ApiError(422, 'invalid saved view', `${e.message}.`, { pointer });
    if (e instanceof StoreUnavailableError) {
      throw new ApiError(503, 'service unavailable', 'Saved views cannot be reached right now; retry shortly.', undefined, { 'Retry-After': '5' });
    }
    throw e;
  }
}

const namePointer = (body: unknown) =>
  (body as { data?: { attributes?: unknown } })?.data?.attributes !== undefined ? '/data/attributes/name' : '/data/name';

/**
 * A saved view's stored query as the routes that read it take it (its filters, fields and sort, with this
 * request's paging or none): the history and summary routes answer under the view's path with it too.
 */
export interface SavedViewQueries {
  query(ctx: ParameterizedContext<RequestState>, paging: boolean): Promise<Query>;
}

export function savedViewRoutes(router: Router<RequestState>, deps: SavedViewDeps): SavedViewQueries {
  const { store, config } = deps;

  /** The view named in the path, or the same 404 as an unknown organization (§7). */
  async function viewOf(ctx: Ctx): Promise<SavedView> {
    const view = await stored('', () => store.getView(ctx.state.organization!, ctx.params.view_id!));
    if (!view) throw notFound();
    return view;
  }

  router.get('/explorer/views', async (ctx) => {
    const c = ctx as Ctx;
    const page = validatePage(config.engine, decodeQueryString(c.querystring));
    const views = await stored('', () => store.listViews(c.state.organization!));
    const meta = pagination(page.number, page.size, views.length);
    const slice = views.slice((page.number - 1) * page.size, page.number * page.size);
    c.state.rows = slice.length;
    sendJsonTagged(c, { data: slice.map(savedViewResource), links: pageLinks(baseUrl(c, config.publicUrl), [], meta), meta: { pagination: meta } });
  });

  router.post('/explorer/views', async (ctx) => {
    const c = ctx as Ctx;
    const body = await readJsonBody(c);
    const change = parseSavedViewBody(config.engine, body);
    const now = new Date().toISOString();
    const view: SavedView = {
      id: `sq-${randomBase62(16)}`,
      organization: c.state.organization!,
      name: change.name,
      queryType: change.queryType,
      query: change.query,
      createdAt: now,
      updatedAt: now,
    };
    const created = await stored(namePointer(body), () => store.createView(view));
    sendJson(c, 201, { data: savedViewResource(created) });
  });

  router.get('/explorer/views/:view_id', async (ctx) => {
    sendJsonTagged(ctx, { data: savedViewResource(await viewOf(ctx as Ctx)) });
  });

  router.patch('/explorer/views/:view_id', async (ctx) => {
    const c = ctx as Ctx;
    const current = await viewOf(c);
    const body = await readJsonBody(c);
    const change = parseSavedViewBody(config.engine, body, current);
    const updated = await stored(namePointer(body), () =>
      store.updateView(c.state.organization!, current.id, { name: change.name, query: change.query, updatedAt: new Date().toISOString() }));
    if (!updated) throw notFound(); // deleted meanwhile
    sendJson(c, 200, { data: savedViewResource(updated) });
  });

  router.delete('/explorer/views/:view_id', async (ctx) => {
    const c = ctx as Ctx;
    await viewOf(c);
    const deleted = await stored('', () => store.deleteView(c.state.organization!, c.params.view_id!));
    if (!deleted) throw notFound();
    sendJson(c, 200, { data: savedViewResource(deleted) });
  });

  /** The stored query with this request's paging; other query parameters are ignored (interface §8). */
  function savedQuery(c: Ctx, view: SavedView, paging: boolean) {
    const params = decodeQueryString(c.querystring);
    if (!paging) withoutPaging(params);
    const page: { number?: string; size?: string } = {};
    if (params.has('page[number]')) page.number = params.get('page[number]')!;
    if (params.has('page[size]')) page.size = params.get('page[size]')!;
    const query = validateSavedQuery(config.engine, view.queryType, sourceOfStored(view.query), page);
    const cursor = readPageAfter(params);
    return cursor === undefined ? query : { ...query, page: { ...query.page, cursor } };
  }

  router.get('/explorer/views/:view_id/results', async (ctx) => {
    const c = ctx as Ctx;
    const view = await viewOf(c);
    const query = savedQuery(c, view, true);
    await answerPage(c, deps, query, await travel(c, deps.snapshots, decodeQueryString(c.querystring)));
  });

  // CSV also at the short form `/csv`; Parquet and NDJSON only beside `/export/csv`.
  const exports = [['/explorer/views/:view_id/csv', 'csv'] as const, ...EXPORT_FORMATS.map((f) => [`/explorer/views/:view_id/export/${f}`, f] as const)];
  for (const [path, format] of exports) {
    router.get(path, async (ctx) => {
      const c = ctx as Ctx;
      const view = await viewOf(c);
      const query = savedQuery(c, view, false);
      await travel(c, deps.snapshots, decodeQueryString(c.querystring));
      await answerExport(c, deps, query, format);
    });
  }

  return { query: async (ctx, paging) => savedQuery(ctx as Ctx, await viewOf(ctx as Ctx), paging) };
}
