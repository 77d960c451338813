// Endpoints 1 and 2: a paged JSON query and its full export, as CSV (docs/interface.md), Parquet or NDJSON (docs/data-out.md),
// of one organization or across organizations (docs/access.md).
import { Router } from '@koa/router';
import { EXPORT_FORMATS } from '../../query/compile.js';
import { parseQueryParameters } from '../../query/parse-query.js';
import { decodeQueryString } from '../../query/query-string.js';
import type { RequestState } from '../state.js';
import { travel } from '../time-travel.js';
import { answerExport, answerPage, withoutPaging, type ExplorerDeps } from '../answer.js';

/** `across`: the cross-organization routes (docs/access.md), whose views have `organization_name` first. */
export function explorerRoutes(router: Router<RequestState>, deps: ExplorerDeps, across = false): void {
  router.get('/explorer', async (ctx) => {
    const params = decodeQueryString(ctx.querystring);
    const { query, carried } = parseQueryParameters(deps.config.engine, params, across);
    await answerPage(ctx, deps, query, [...carried, ...await travel(ctx, deps.snapshots, params)]);
  });
  for (const format of EXPORT_FORMATS) {
    router.get(`/explorer/export/${format}`, async (ctx) => {
      const params = withoutPaging(decodeQueryString(ctx.querystring));
      const { query } = parseQueryParameters(deps.config.engine, params, across);
      await travel(ctx, deps.snapshots, params);
      await answerExport(ctx, deps, query, format);
    });
  }
}

