// History (docs/history.md): the retained snapshots, what changed between two of them, and trends. The same
// parsing, compiler pieces, pool, deadline, cancellation, admission, ETags and metrics as a query's.
import type { Router } from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { VIEW_NAMES } from '../../catalog/catalog.js';
import { runRows } from '../../pool/run-page.js';
import { changesColumns, compileChanges, compileTrend } from '../../query/compile-history.js';
import { pageLinks, pageNavigation, pagination } from '../../query/links.js';
import { cursorRows, nextCursor } from '../../query/cursor.js';
import { EXPORT_FORMATS, queryTerms, type ExportFormat } from '../../query/compile.js';
import { badParameter } from '../../errors.js';
import { queryScope, resumed, resumeWalk, type Walk } from '../cursor-walk.js';
import { parseQueryParameters } from '../../query/parse-query.js';
import type { Query } from '../../query/query.js';
import { decodeQueryString } from '../../query/query-string.js';
import { chooseChangePair, datetimeParameter } from '../../query/snapshot-choice.js';
import { validatePage } from '../../query/validate.js';
import { parseSums } from '../../query/summary.js';
import { attachments, type Snapshot } from '../../snapshots/read/current-snapshot.js';
import { rowAttributes } from '../../../workers/page-json.js';
import { entityTag } from '../etag.js';
import { sendJsonTagged } from '../jsonapi.js';
import type { RequestState } from '../state.js';
import { hold, loadedAt, organizationHistory, readAsOf, type RetainedSnapshot } from '../time-travel.js';
import { answerJson, baseUrl, streamDownload, withoutPaging, type ExplorerDeps } from '../answer.js';

type Ctx = ParameterizedContext<RequestState>;

/** A history route's query and the parameters its links repeat. */
export interface HistoryQuery {
  query: Query;
  carried: [string, string][];
}

/** The parameters that pick the snapshots of a change set, as received: links carry them. */
const CHANGE_PARAMETERS = ['from', 'to', 'from_as_of', 'to_as_of'];

/** The query of `/explorer/...` history routes: the same parameters as a query's. */
function queryOf(deps: ExplorerDeps, params: Map<string, string>): HistoryQuery {
  return parseQueryParameters(deps.config.engine, params);
}

async function changePair(ctx: Ctx, deps: ExplorerDeps, params: ReadonlyMap<string, string>) {
  const retained = await organizationHistory(ctx, deps.snapshots);
  const current = retained.find((s) => s.id === ctx.state.lease!.snapshot.id)!;
  const { from, to } = chooseChangePair(params, retained, current);
  // `to` is the later of the two: the changes are as fresh as it is.
  return { from: hold(ctx, deps.snapshots, from.snapshot), to: readAsOf(ctx, hold(ctx, deps.snapshots, to.snapshot)) };
}

/**
 * The walk of a cursor page of changes (docs/data-out.md), and the pair it reads: the cursor's, which
 * `from` / `to` (links carry them) may name again but not otherwise.
 */
async function changesWalk(ctx: Ctx, deps: ExplorerDeps, query: Query, params: ReadonlyMap<string, string>) {
  const received = query.page.cursor;
  if (received === undefined) return { pair: await changePair(ctx, deps, params), walk: undefined };
  const resumed = await resumeWalk(ctx, deps.snapshots, received, ['changes', ...queryScope(query)], queryTerms(query));
  const named = CHANGE_PARAMETERS.some((p) => params.has(p));
  const pinned = resumed.snapshots;
  const pair = pinned && !named ? { from: pinned[0]!, to: readAsOf(ctx, pinned[1] ?? pinned[0]!) } : await changePair(ctx, deps, params);
  if (pinned && (pair.from.id !== pinned[0]!.id || pair.to.id !== pinned[1]?.id)) {
    throw badParameter('page[after]', `page[after] reads the changes from ${pinned[0]!.id} to ${pinned[1]?.id}, and the request names another pair: a walk keeps the snapshots it began on.`);
  }
  return { pair, walk: { received, scope: resumed.scope, after: resumed.after, snapshots: [pair.from.id, pair.to.id] } satisfies Walk };
}

/** docs/history.md §4: one page of the change set, as JSON. */
async function answerChanges(ctx: Ctx, deps: ExplorerDeps, { query, carried }: HistoryQuery, params: ReadonlyMap<string, string>): Promise<void> {
  const organization = ctx.state.organization!;
  const { pair: { from, to }, walk } = await changesWalk(ctx, deps, query, params);
  query = resumed(query, walk);
  ctx.set('X-Explorer-Snapshot', to.id);
  const compiled = compileChanges(query, from.target(query.view.name, organization), to.target(query.view.name, organization));
  const links = [...carried, ...CHANGE_PARAMETERS.filter((p) => params.has(p)).map((p): [string, string] => [p, params.get(p)!])];
  const base = baseUrl(ctx, deps.config.publicUrl);
  const etag = entityTag(['changes', from.id, to.id, organization, compiled.page, query.fields.map((f) => f.attribute), base, links, walk?.received ?? null]);
  await answerJson(ctx, deps, etag, async () => {
    const metered: NonNullable<RequestState['query']> = ctx.state.query = { view: query.view.name, kind: 'changes' };
    const started = performance.now();
    const [rows] = await runRows(deps.pool, {
      organization,
      attach: attachments(from, to),
      statements: [compiled.page],
      deadline: Date.now() + deps.config.queryTimeoutMs,
      timeoutMs: deps.config.queryTimeoutMs,
    }, ctx.res);
    metered.seconds = (performance.now() - started) / 1000;
    const [added, removed, changed] = (rows![0]!.slice(0, 3) as bigint[]).map(Number) as [number, number, number];
    const found = rows!.filter((r) => r[3] !== null).map((r) => r.slice(3));
    // A cursor page reads one row more than it shows. Each row's sort term values come after its own.
    const { rows: pageRows, more } = walk ? cursorRows(found, query.page.size) : { rows: found, more: false };
    const attributes = query.fields.map((f) => f.attribute);
    const side = (json: unknown) => (json === null ? 'null' : rowAttributes(json as string, attributes, compiled.valueIndexes));
    const items = pageRows!.map(([id, change, names, before, after]) =>
      `{"id":${JSON.stringify(id)},"type":"explorer-changes","attributes":{"change":${JSON.stringify(change)},`
      + `"changed-fields":${JSON.stringify(names === '' ? [] : (names as string).split(', '))},"before":${side(before)},"after":${side(after)}}}`);
    const total = added + removed + changed;
    const next = walk && more ? nextCursor(walk, pageRows.at(-1)!, 5) : null;
    const { links: pageLinksOf, pagination: meta } = pageNavigation(base, links, query.page, total, walk && { received: walk.received, next });
    const body = Buffer.from(`{"data":[${items.join(',')}],"links":${JSON.stringify(pageLinksOf)},`
      + `"meta":${JSON.stringify({ pagination: meta, from: from.id, to: to.id, counts: { added, removed, changed } })}}`);
    metered.bytes = body.length;
    return { body, rows: items.length };
  });
}

/** docs/history.md §4: every listed change as CSV, Parquet or NDJSON. */
async function answerChangesExport(ctx: Ctx, deps: ExplorerDeps, { query }: HistoryQuery, params: ReadonlyMap<string, string>, format: ExportFormat): Promise<void> {
  const organization = ctx.state.organization!;
  const { from, to } = await changePair(ctx, deps, params);
  ctx.set('X-Explorer-Snapshot', to.id);
  const compiled = compileChanges(query, from.target(query.view.name, organization), to.target(query.view.name, organization), format);
  const columns = changesColumns(query.fields);
  await streamDownload(ctx, deps, {
    format,
    etag: entityTag(['changes-export', format, from.id, to.id, organization, compiled.export, columns]),
    metered: { view: query.view.name, kind: 'changes-export' },
    attach: attachments(from, to),
    query: compiled.export,
    lines: false,
    columns,
    name: `${query.view.name}-changes`,
  });
}

/** docs/history.md §5: one point per retained snapshot that includes the organization, oldest first. */
async function answerTrend(ctx: Ctx, deps: ExplorerDeps, { query }: HistoryQuery, params: ReadonlyMap<string, string>): Promise<void> {
  const organization = ctx.state.organization!;
  const sums = parseSums(query.view, params.get('sum'));
  const since = params.has('since') ? datetimeParameter('since', params.get('since')!) : undefined;
  const points = (await organizationHistory(ctx, deps.snapshots)).filter((s) => since === undefined || Date.parse(s.loadedAt) >= since);
  for (const point of points) hold(ctx, deps.snapshots, point.snapshot);
  // As fresh as the newest point; with none (all before `since`), as the current snapshot that has none.
  readAsOf(ctx, points.at(-1)?.snapshot ?? ctx.state.lease!.snapshot);
  const targets = points.map((p) => p.snapshot.target(query.view.name, organization));
  const statement = compileTrend(query, targets, sums);
  const etag = entityTag(['trend', points.map((p) => p.id), organization, statement, sums.map((f) => f.name)]);
  await answerJson(ctx, deps, etag, async () => {
    let values: unknown[][];
    // Unfiltered counts are in each snapshot's manifest: no query at all.
    const known = query.conditions.length === 0 && sums.length === 0 && targets.every((t) => t.organizationRows !== undefined);
    if (known || points.length === 0) {
      values = targets.map((t, i) => [i, t.organizationRows ?? 0]);
    } else {
      const metered: NonNullable<RequestState['query']> = ctx.state.query = { view: query.view.name, kind: 'trend' };
      const started = performance.now();
      [values] = await runRows(deps.pool, {
        organization,
        attach: attachments(...points.map((p) => p.snapshot)),
        statements: [statement],
        deadline: Date.now() + deps.config.queryTimeoutMs,
        timeoutMs: deps.config.queryTimeoutMs,
      }, ctx.res) as [unknown[][]];
      metered.seconds = (performance.now() - started) / 1000;
    }
    const data = values.map(([i, count, ...totals]) => {
      const point = points[Number(i)]!;
      const sumJson = sums.length === 0 ? ''
        : `,"sums":{${sums.map((f, k) => `${JSON.stringify(f.name)}:${totals[k] === null ? 'null' : String(totals[k])}`).join(',')}}`;
      return `{"id":${JSON.stringify(point.id)},"type":"explorer-trend-points","attributes":{"loaded-at":${JSON.stringify(loadedAt(point.snapshot))},`
        + `"label":${JSON.stringify(point.snapshot.manifest.label ?? null)},"count":${Number(count)}${sumJson}}}`;
    });
    return { body: Buffer.from(`{"data":[${data.join(',')}]}`), rows: data.length };
  });
}

/** docs/history.md §2: one snapshot as the listing shows it. */
function snapshotResource(retained: RetainedSnapshot, organization: string, current: Snapshot) {
  const { snapshot } = retained;
  const rows = snapshot.manifest.organizationRows ?? {};
  return {
    id: snapshot.id,
    type: 'explorer-snapshots',
    attributes: {
      'loaded-at': loadedAt(snapshot),
      label: snapshot.manifest.label ?? null,
      current: snapshot.id === current.id,
      counts: Object.fromEntries(VIEW_NAMES.map((view) => [view, rows[view]?.[organization] ?? 0])),
    },
  };
}

/**
 * Registers changes, their exports and trend under `prefix`: `/explorer` with the query in the query string, or
 * a saved view's path with its stored query (`pageQuery` keeps this request's paging, `exportQuery` none).
 */
export function historyRoutes(
  router: Router<RequestState>, deps: ExplorerDeps, prefix: string,
  pageQuery: (ctx: Ctx) => Promise<Query>, exportQuery: (ctx: Ctx) => Promise<Query>,
): void {
  router.get(`${prefix}/changes`, async (ctx) => {
    await answerChanges(ctx, deps, { query: await pageQuery(ctx), carried: [] }, decodeQueryString(ctx.querystring));
  });
  for (const format of EXPORT_FORMATS) {
    router.get(`${prefix}/changes/export/${format}`, async (ctx) => {
      await answerChangesExport(ctx, deps, { query: await exportQuery(ctx), carried: [] }, decodeQueryString(ctx.querystring), format);
    });
  }
  router.get(`${prefix}/trend`, async (ctx) => {
    await answerTrend(ctx, deps, { query: await exportQuery(ctx), carried: [] }, decodeQueryString(ctx.querystring));
  });
}

export function explorerHistoryRoutes(router: Router<RequestState>, deps: ExplorerDeps): void {
  router.get('/explorer/snapshots', async (ctx) => {
    const page = validatePage(deps.config.engine, decodeQueryString(ctx.querystring));
    const retained = (await organizationHistory(ctx, deps.snapshots)).reverse();
    readAsOf(ctx, retained[0]!.snapshot); // the newest listed, the current one, whichever page is shown
    const meta = pagination(page.number, page.size, retained.length);
    const slice = retained.slice((page.number - 1) * page.size, page.number * page.size);
    ctx.state.rows = slice.length;
    const current = ctx.state.lease!.snapshot;
    sendJsonTagged(ctx, {
      data: slice.map((s) => snapshotResource(s, ctx.state.organization!, current)),
      links: pageLinks(baseUrl(ctx, deps.config.publicUrl), [], meta),
      meta: { pagination: meta },
    });
  });
  router.get('/explorer/changes', async (ctx) => {
    const params = decodeQueryString(ctx.querystring);
    await answerChanges(ctx, deps, queryOf(deps, params), params);
  });
  for (const format of EXPORT_FORMATS) {
    router.get(`/explorer/changes/export/${format}`, async (ctx) => {
      const params = withoutPaging(decodeQueryString(ctx.querystring));
      await answerChangesExport(ctx, deps, queryOf(deps, params), params, format);
    });
  }
  router.get('/explorer/trend', async (ctx) => {
    const params = withoutPaging(decodeQueryString(ctx.querystring));
    await answerTrend(ctx, deps, queryOf(deps, params), params);
  });
}
