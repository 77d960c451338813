// GET /api/v2/explorer/openapi.json: the OpenAPI 3.1 document of every route. Built once, when the
// app is created, from the catalog of the configured engine name; served as application/json to any valid
// token (it reveals no data, but every non-operational route is authenticated), with an ETag. Not rate
// limited: it costs a token check and a write of a cached buffer.
import type { Router } from '@koa/router';
import type { Config } from '../../config.js';
import { OPENAPI_PATH, openApiDocument } from '../../openapi/document.js';
import { openApiOptions } from '../../openapi/options.js';
import type { TokenStore } from '../../store/state-store.js';
import { entityTag, notModified } from '../etag.js';
import { identify, requireToken } from '../middleware/access.js';
import type { RequestState } from '../state.js';

export function openApiRoutes(router: Router<RequestState>, deps: { config: Config; store: TokenStore }): void {
  const body = JSON.stringify(openApiDocument(openApiOptions(deps.config)));
  const etag = entityTag([body]);
  router.get(OPENAPI_PATH, identify(deps.store, deps.config.tokenMaxTtlMs), requireToken(), (ctx) => {
    if (notModified(ctx, etag)) return;
    ctx.type = 'application/json';
    ctx.body = body;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', 'no-cache');
  });
}
