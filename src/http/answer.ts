// How a route answers: one page of JSON (with the response cache and 304s), and a download streamed from a
// COPY. Every route that reads the explorer's views answers through these (explorer, history, summary,
// saved views), so a page or an export behaves alike wherever it is asked for.
import type { ParameterizedContext } from 'koa';
import type { Config } from '../config.js';
import { queryTimeout, snapshotUnavailable } from '../errors.js';
import { streamExport } from '../pool/export-stream.js';
import type { QueryPool } from '../pool/query-pool.js';
import { clientClosed, overloaded, runPage } from '../pool/run-page.js';
import { compileQuery, queryTerms, type ExportFormat } from '../query/compile.js';
import type { Query } from '../query/query.js';
import { attachments, type SnapshotRegistry } from '../snapshots/read/current-snapshot.js';
import type { Attachment, Statement } from '../../workers/protocol.js';
import type { RequestState } from './state.js';
import { readAsOf } from './time-travel.js';
import type { ResponseCache } from './response-cache.js';
import { JSONAPI } from './jsonapi.js';
import { entityTag, notModified, REVALIDATE } from './etag.js';
import { namesSnapshot, queryScope, resumed, snapshotWalk } from './cursor-walk.js';
import { admissionKey, downloadName, readTarget, scopeName } from './reach.js';

type Ctx = ParameterizedContext<RequestState>;

export interface ExplorerDeps {
  config: Config;
  pool: QueryPool;
  cache: ResponseCache;
  snapshots: SnapshotRegistry;
}

/** Scheme, host and path of this request, for links (interface §5). */
export function baseUrl(ctx: Ctx, publicUrl: string | null): string {
  return `${publicUrl ?? `http://${ctx.host}`}${ctx.path}`;
}

/**
 * Answers with the JSON document `produce` makes, unless the client holds it (304) or the response cache
 * does: `etag` must be derived from everything that decides the bytes, before anything runs.
 */
export async function answerJson(ctx: Ctx, deps: ExplorerDeps, etag: string, produce: () => Promise<{ body: Buffer; rows: number }>): Promise<void> {
  ctx.set('Cache-Control', REVALIDATE);
  if (notModified(ctx, etag)) return;
  ctx.set('ETag', etag);
  ctx.type = JSONAPI;
  const answer = deps.cache.get(etag) ?? await produce();
  ctx.state.rows = answer.rows;
  ctx.status = 200;
  ctx.body = answer.body;
  deps.cache.set(etag, answer);
}

/**
 * Runs `query` and answers with one page of JSON; `carried` are the parameters the links repeat. A cursor
 * page (page[after]) reads the snapshot of its walk.
 */
export async function answerPage(ctx: Ctx, deps: ExplorerDeps, query: Query, carried: [string, string][]): Promise<void> {
  const terms = queryTerms(query);
  const walk = await snapshotWalk(ctx, deps.snapshots, query.page.cursor, namesSnapshot(carried), ['rows', ...queryScope(query)], terms, true);
  query = resumed(query, walk);
  const snapshot = readAsOf(ctx, ctx.state.lease!.snapshot);
  const organization = scopeName(ctx);
  const compiled = compileQuery(query, readTarget(ctx, snapshot, query.view.name));
  const base = baseUrl(ctx, deps.config.publicUrl);
  const cursor = walk ? { scope: walk.scope, snapshots: walk.snapshots, received: walk.received, keyCount: compiled.keyCount! } : undefined;
  const etag = entityTag(['page', snapshot.id, organization, compiled.count, compiled.page, query.page, query.view.rowType, query.fields.map((f) => f.attribute), base, carried, cursor ?? null]);
  await answerJson(ctx, deps, etag, async () => {
    const metered: NonNullable<RequestState['query']> = ctx.state.query = { view: query.view.name, kind: 'page' };
    const started = performance.now();
    const result = await runPage(deps.pool, {
      organization: admissionKey(ctx),
      attach: attachments(snapshot),
      count: compiled.count,
      knownTotal: compiled.knownTotal,
      page: compiled.page,
      pageCountsTotal: compiled.pageCountsTotal,
      valueIndexes: compiled.valueIndexes,
      ...(compiled.cursorKeys ? { cursorKeys: compiled.cursorKeys } : {}),
      offset: (query.page.number - 1) * query.page.size,
      rowType: query.view.rowType,
      attributes: query.fields.map((f) => f.attribute),
      document: { number: query.page.number, size: query.page.size, base, carried, ...(cursor ? { cursor } : {}) },
      deadline: Date.now() + deps.config.queryTimeoutMs,
      timeoutMs: deps.config.queryTimeoutMs,
    }, ctx.res);
    metered.seconds = (performance.now() - started) / 1000;
    const body = Buffer.from(result.body.buffer, result.body.byteOffset, result.body.byteLength);
    metered.bytes = body.length;
    return { body, rows: result.rows };
  });
}

const stamp = (d: Date) => d.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}Z$/, 'Z');

/** How each export format is served (docs/data-out.md). */
const SERVED: Record<ExportFormat, { type: string; extension: string }> = {
  csv: { type: 'text/csv; charset=utf-8', extension: 'csv' },
  parquet: { type: 'application/vnd.apache.parquet', extension: 'parquet' },
  ndjson: { type: 'application/x-ndjson; charset=utf-8', extension: 'ndjson' },
};

/** Streams every row of `query` in `format` (interface §6; docs/data-out.md). */
export async function answerExport(ctx: Ctx, deps: ExplorerDeps, query: Query, format: ExportFormat): Promise<void> {
  const organization = scopeName(ctx);
  const snapshot = readAsOf(ctx, ctx.state.lease!.snapshot);
  const compiled = compileQuery(query, readTarget(ctx, snapshot, query.view.name), format);
  const columns = query.fields.map((f) => f.name);
  await streamDownload(ctx, deps, {
    format,
    etag: entityTag(['export', format, snapshot.id, organization, compiled.export, columns]),
    metered: { view: query.view.name, kind: 'export' },
    attach: attachments(snapshot),
    query: compiled.export,
    lines: compiled.exportLines,
    columns,
    name: query.view.name,
  });
}

export interface Download {
  format: ExportFormat;
  etag: string;
  metered: NonNullable<RequestState['query']>;
  attach: Attachment[];
  query: Statement;
  /** The statement reads stored CSV lines (compile.ts exportLines). */
  lines: boolean;
  /** The columns' names: the CSV header (the other formats name their columns in the file). */
  columns: string[];
  /** The file name's view part: `<organization>-<name>-<UTC stamp>.<extension>`. */
  name: string;
}

/** Streams a COPY to the client as a download, or answers 304 when the client holds it already. */
export async function streamDownload(ctx: Ctx, deps: ExplorerDeps, download: Download): Promise<void> {
  ctx.set('Cache-Control', REVALIDATE);
  if (notModified(ctx, download.etag)) return;
  const metered = ctx.state.query = download.metered;
  const started = performance.now();
  const served = SERVED[download.format];
  ctx.respond = false;
  const end = await streamExport({
    pool: deps.pool,
    organization: admissionKey(ctx),
    attach: download.attach,
    query: download.query,
    format: download.format,
    lines: download.lines,
    deadline: Date.now() + deps.config.queryTimeoutMs,
    header: download.format === 'csv' ? download.columns.join(',') : undefined,
    headers: {
      'Content-Type': served.type,
      'Content-Disposition': `attachment; filename="${downloadName(ctx)}-${download.name}-${stamp(new Date())}.${served.extension}"`,
      'Cache-Control': REVALIDATE,
      ETag: download.etag,
    },
    res: ctx.res,
  });
  if (end.kind === 'complete') metered.seconds = (performance.now() - started) / 1000;
  if (end.kind === 'complete' || end.kind === 'aborted') metered.bytes = end.bytes;
  if (end.kind === 'overloaded') {
    ctx.respond = true;
    throw overloaded(end.retryAfterSeconds);
  }
  if (end.kind === 'failed') {
    ctx.respond = true;
    if (end.code === 'timeout') throw queryTimeout(deps.config.queryTimeoutMs / 1000);
    if (end.code === 'cancelled') throw clientClosed();
    if (end.code === 'unavailable') throw snapshotUnavailable(end.message);
    throw new Error(`export failed in DuckDB: ${end.message}`);
  }
  ctx.status = 200;
  ctx.state.rows = end.kind === 'complete' ? end.rows : undefined;
  if (end.kind === 'aborted') ctx.state.outcome = `aborted: ${end.code}`;
}

/** interface §5: the export routes ignore paging parameters (an export is every row), even invalid ones. */
export function withoutPaging(params: Map<string, string>): Map<string, string> {
  params.delete('page[number]');
  params.delete('page[size]');
  params.delete('page[after]');
  return params;
}
