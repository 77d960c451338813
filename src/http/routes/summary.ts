// Summaries (docs/summaries.md): a query's rows counted and summed by group, one page as JSON or every group
// as CSV, Parquet or NDJSON. The same parsing, compiler pieces, pool, deadline, cancellation, admission, ETags, response cache
// and metrics as a query's.
import type { Router } from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { badParameter } from '../../errors.js';
import { runRows } from '../../pool/run-page.js';
import { compileSummary, summaryColumns, summaryGroupId, summaryTerms } from '../../query/compile-summary.js';
import { cursorRows, nextCursor } from '../../query/cursor.js';
import { namesSnapshot, queryScope, resumed, snapshotWalk } from '../cursor-walk.js';
import { EXPORT_FORMATS, type CompileTarget, type ExportFormat } from '../../query/compile.js';
import { pageNavigation } from '../../query/links.js';
import { parseQueryParameters } from '../../query/parse-query.js';
import type { Query } from '../../query/query.js';
import { decodeQueryString } from '../../query/query-string.js';
import { parseSummary, summaryCarried, SUMMARY_PARAMETERS, type Summary } from '../../query/summary.js';
import { attachments, type Snapshot } from '../../snapshots/read/current-snapshot.js';
import { entityTag } from '../etag.js';
import type { RequestState } from '../state.js';
import { readAsOf, travel } from '../time-travel.js';
import { answerJson, baseUrl, streamDownload, withoutPaging, type ExplorerDeps } from '../answer.js';
import { admissionKey, readTarget, scopeName } from '../reach.js';

type Ctx = ParameterizedContext<RequestState>;

/** The summary's rows and groups in this request's snapshot; a list group needs the elements stored. */
function summaryTarget(ctx: Ctx, summary: Summary): { snapshot: Snapshot; target: CompileTarget } {
  const snapshot = readAsOf(ctx, ctx.state.lease!.snapshot);
  const target = readTarget(ctx, snapshot, summary.query.view.name);
  const list = summary.groups.find((g) => g.field.list);
  if (list && !target.listMembers) {
    throw badParameter('group_by', `Snapshot ${snapshot.id} was loaded before list elements were stored, so it cannot be grouped by ${list.field.name}; `
      + 'group by another field, choose a later snapshot, or load the source again.');
  }
  return { snapshot, target };
}

const jsonOf = (value: unknown) => (typeof value === 'bigint' ? value.toString() : JSON.stringify(value));

/** One page of groups as JSON; `carried` are the parameters its links repeat. */
async function answerSummary(ctx: Ctx, deps: ExplorerDeps, summary: Summary, carried: [string, string][]): Promise<void> {
  const organization = scopeName(ctx);
  const terms = summaryTerms(summary);
  const scope = ['summary', ...queryScope(summary.query), summary.groups.map((g) => g.spelling), summary.sums.map((f) => f.name), summary.sort];
  const walk = await snapshotWalk(ctx, deps.snapshots, summary.query.page.cursor, namesSnapshot(carried), scope, terms);
  summary = { ...summary, query: resumed(summary.query, walk) };
  const { snapshot, target } = summaryTarget(ctx, summary);
  const { query, groups, sums } = summary;
  const compiled = compileSummary(summary, target);
  const base = baseUrl(ctx, deps.config.publicUrl);
  const etag = entityTag(['summary', snapshot.id, organization, compiled.page, base, carried, walk?.received ?? null]);
  await answerJson(ctx, deps, etag, async () => {
    const metered: NonNullable<RequestState['query']> = ctx.state.query = { view: query.view.name, kind: 'summary' };
    const started = performance.now();
    const run = async (statement: typeof compiled.page) => (await runRows(deps.pool, {
      organization: admissionKey(ctx),
      attach: attachments(snapshot),
      statements: [statement],
      deadline: Date.now() + deps.config.queryTimeoutMs,
      timeoutMs: deps.config.queryTimeoutMs,
    }, ctx.res))[0]!;
    let rows = await run(compiled.page);
    // The totals ride on the page's rows; a page past the end (the first page has rows unless nothing
    // matched) asks for them apart.
    const first = walk ? walk.after.length === 0 : query.page.number === 1;
    const totals = rows.length > 0 ? rows[0]! : !first ? (await run(compiled.totals))[0]! : [0, 0];
    // A cursor page reads one row more than it shows: whether another follows.
    const shown = walk ? cursorRows(rows, query.page.size) : { rows, more: false };
    rows = shown.rows;
    metered.seconds = (performance.now() - started) / 1000;
    const [groupCount, matched] = totals.slice(0, 2).map(Number) as [number, number];
    const items = rows.map((r) => {
      const id = summaryGroupId(summary, r.slice(2, 2 + groups.length) as string[]);
      const values = r.slice(2 + groups.length);
      const attributes = groups.map((g, i) => `${JSON.stringify(g.field.attribute)}:${jsonOf(values[i])}`);
      attributes.push(`"count":${jsonOf(values[groups.length])}`);
      if (sums.length > 0) {
        const summed = values.slice(groups.length + 1, groups.length + 1 + sums.length);
        attributes.push(`"sums":{${sums.map((f, j) => `${JSON.stringify(f.name)}:${summed[j] === null ? 'null' : String(summed[j])}`).join(',')}}`);
      }
      return `{"id":${JSON.stringify(id)},"type":"explorer-summary-groups","attributes":{${attributes.join(',')}}}`;
    });
    // Each row's sort term values follow its groups' CSV and JSON values, its count and its sums.
    const keysAt = 2 + 2 * groups.length + 1 + sums.length;
    const next = walk && shown.more ? nextCursor(walk, rows.at(-1)!, keysAt) : null;
    const { links, pagination: meta } = pageNavigation(base, carried, query.page, groupCount, walk && { received: walk.received, next });
    const body = Buffer.from(`{"data":[${items.join(',')}],"links":${JSON.stringify(links)},`
      + `"meta":${JSON.stringify({ pagination: meta, rows: matched, groups: groupCount })}}`);
    metered.bytes = body.length;
    return { body, rows: items.length };
  });
}

/** Every group as CSV, Parquet or NDJSON. */
async function answerSummaryExport(ctx: Ctx, deps: ExplorerDeps, summary: Summary, format: ExportFormat): Promise<void> {
  const organization = scopeName(ctx);
  const { snapshot, target } = summaryTarget(ctx, summary);
  const compiled = compileSummary(summary, target, format);
  const columns = summaryColumns(summary);
  await streamDownload(ctx, deps, {
    format,
    etag: entityTag(['summary-export', format, snapshot.id, organization, compiled.export, columns]),
    metered: { view: summary.query.view.name, kind: 'summary-export' },
    attach: attachments(snapshot),
    query: compiled.export,
    lines: false,
    columns,
    name: `${summary.query.view.name}-summary`,
  });
}

/** A query's parameters without a summary's own, whose `sort` means something else. */
function queryParameters(params: ReadonlyMap<string, string>): Map<string, string> {
  const rest = new Map(params);
  for (const p of [...SUMMARY_PARAMETERS, 'fields']) rest.delete(p);
  for (const key of rest.keys()) if (key.startsWith('fields[')) rest.delete(key);
  return rest;
}

/** `across`: the cross-organization summaries (docs/access.md), which can group by `organization_name`. */
export function explorerSummaryRoutes(router: Router<RequestState>, deps: ExplorerDeps, across = false): void {
  router.get('/explorer/summary', async (ctx) => {
    const params = decodeQueryString(ctx.querystring);
    const { query, carried } = parseQueryParameters(deps.config.engine, queryParameters(params), across);
    const summary = parseSummary(deps.config.engine, query, params);
    await answerSummary(ctx, deps, summary, [...carried, ...summaryCarried(params), ...await travel(ctx, deps.snapshots, params)]);
  });
  for (const format of EXPORT_FORMATS) {
    router.get(`/explorer/summary/export/${format}`, async (ctx) => {
      const params = withoutPaging(decodeQueryString(ctx.querystring));
      const { query } = parseQueryParameters(deps.config.engine, queryParameters(params), across);
      const summary = parseSummary(deps.config.engine, query, params);
      await travel(ctx, deps.snapshots, params);
      await answerSummaryExport(ctx, deps, summary, format);
    });
  }
}

/**
 * A saved view's summaries under `prefix`: the saved query's filters (`savedQuery` gives them, with this
 * request's paging or none), grouped as this request asks.
 */
export function savedSummaryRoutes(router: Router<RequestState>, deps: ExplorerDeps, prefix: string, savedQuery: (ctx: Ctx, paging: boolean) => Promise<Query>): void {
  router.get(`${prefix}/summary`, async (ctx) => {
    const params = decodeQueryString(ctx.querystring);
    const summary = parseSummary(deps.config.engine, await savedQuery(ctx, true), params);
    await answerSummary(ctx, deps, summary, [...summaryCarried(params), ...await travel(ctx, deps.snapshots, params)]);
  });
  for (const format of EXPORT_FORMATS) {
    router.get(`${prefix}/summary/export/${format}`, async (ctx) => {
      const params = withoutPaging(decodeQueryString(ctx.querystring));
      const summary = parseSummary(deps.config.engine, await savedQuery(ctx, false), params);
      await travel(ctx, deps.snapshots, params);
      await answerSummaryExport(ctx, deps, summary, format);
    });
  }
}
