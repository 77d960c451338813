// Reading an organization's views from the upstream, each whole, streamed to a CSV file: by its CSV export,
// or page by page through the JSON route when the export fails. The upstream's rate limit is obeyed (a
// bounded number of requests at once, 429s waited out), failures are retried with backoff, and a transfer
// that ends short is never taken for a whole one (docs/sync.md).
import { createWriteStream, type WriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { catalogFor } from '../catalog/catalog.js';
import type { Upstream } from './upstream-endpoint.js';

/** The views a source is rebuilt from (tf_versions is derived from workspaces). */
export const SYNCED_VIEWS = ['workspaces', 'providers', 'modules', 'resources'] as const;
export type SyncedView = (typeof SYNCED_VIEWS)[number];

/** Rows per page when a view is read through the JSON route. */
export const PAGE_SIZE = 100;

/** The upstream refused the organization (401, 403, 404): it fails with that status alone, its body unread. */
export class UpstreamRefusedError extends Error {
  constructor(readonly status: number, what: string) { super(`the upstream answered ${status} for ${what}`); }
}

/** The upstream has no such view (a 400 naming `type`, or a 404 while other views answered). */
export class ViewMissingError extends Error {}

/** The upstream no longer keeps the snapshot a run's reads are pinned to (a 400 naming `snapshot`). */
export class PinnedSnapshotGoneError extends Error {}

/**
 * The upstream snapshot one run's reads are all made at. An upstream that is this service names the snapshot
 * that answered (`X-Explorer-Snapshot`); every later request of the run asks for that one (`snapshot=`), so
 * that a switch upstream between two views (or two pages) never mixes an older view with a newer one: that
 * would apply a change half, and the next run the other half. Undefined until the first answer; null when it
 * named none (an upstream that keeps no snapshots: each view is read as it stands).
 */
export interface Pin { snapshot?: string | null }

export interface ReadOptions {
  upstream: Upstream;
  token: string;
  /** Requests at once against the upstream, shared by every read of a run. */
  limiter: Limiter;
  /** Tries of one page after a 5xx or a broken transfer (429s are waited out and not counted). */
  retries?: number;
  /** The first backoff, doubled at each try. */
  backoffMs?: number;
  /** A request that receives nothing for this long is a failed one (the headers, or the body between chunks). */
  idleMs?: number;
  /** Stops every wait and request (SIGTERM). */
  signal?: AbortSignal;
  log?: (line: string) => void;
  /** Shared by every read of one run (above). */
  pin?: Pin;
}

/** At most `n` tasks at once, the rest in order of arrival. */
export class Limiter {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly n: number) {}
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.n) await new Promise<void>((r) => this.waiting.push(r));
    this.running++;
    try { return await task(); } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}

/** Seconds to wait after a 429: Retry-After (seconds or a date), else X-RateLimit-Reset (seconds), else 1. */
export function retryAfterMs(headers: Headers, now = Date.now()): number {
  const after = headers.get('retry-after');
  if (after !== null) {
    if (/^\d+(\.\d+)?$/.test(after.trim())) return Number(after) * 1000;
    const at = Date.parse(after);
    if (!Number.isNaN(at)) return Math.max(0, at - now);
  }
  const reset = headers.get('x-ratelimit-reset');
  if (reset !== null && /^\d+(\.\d+)?$/.test(reset.trim())) return Number(reset) * 1000;
  return 1000;
}

/** A failure worth another try: a 5xx, a connection that failed or went quiet, a body cut off. */
class Retryable extends Error {}
class RateLimited extends Error { constructor(readonly waitMs: number) { super('429'); } }
/** A request that kept failing through every try. */
class GaveUp extends Error {}

const wait = (ms: number, opts: ReadOptions) => sleep(ms, undefined, opts.signal ? { signal: opts.signal } : {});

/** `attempt` under the limiter until it succeeds: 429s waited out, Retryable failures retried `retries` times with backoff. */
async function retrying<T>(what: string, opts: ReadOptions, retries: number, attempt: () => Promise<T>): Promise<T> {
  let backoff = opts.backoffMs ?? 500;
  for (let tried = 0; ;) {
    try {
      return await opts.limiter.run(attempt);
    } catch (e) {
      if (e instanceof RateLimited) { await wait(e.waitMs, opts); continue; }
      if (!(e instanceof Retryable)) throw e;
      if (++tried > retries) throw new GaveUp(`${what}: ${e.message}${retries > 0 ? ` (after ${retries + 1} tries)` : ''}`);
      await wait(backoff, opts);
      backoff *= 2;
    }
  }
}

/**
 * Writes `view` of `organization` to `file` as its CSV export has it, and returns the bytes read. The export
 * is tried once; if it fails (a 5xx, a time-out, a broken transfer) the view is read page by page instead,
 * each page tried `retries` + 1 times.
 */
export async function readViewCsv(organization: string, view: SyncedView, file: string, opts: ReadOptions): Promise<number> {
  const what = `${view} of ${organization}`;
  try {
    return await retrying(what, opts, 0, () => exportOnce(organization, view, file, opts));
  } catch (e) {
    if (!(e instanceof GaveUp)) throw e;
    opts.log?.(`${organization}: the ${view} export failed (${e.message.slice(what.length + 2)}); reading it page by page`);
  }
  return readViewPages(organization, view, file, opts);
}

const viewUrl = (opts: ReadOptions, organization: string, path: string, query: string) =>
  `${opts.upstream.base}/api/v2/organizations/${encodeURIComponent(organization)}/explorer${path}?${query}`
  + (opts.pin?.snapshot ? `&snapshot=${encodeURIComponent(opts.pin.snapshot)}` : '');

/** The run's reads pinned to the snapshot that answered, once an answer was taken whole (the first one). */
const pinTo = (opts: ReadOptions, res: Response) => {
  if (opts.pin && opts.pin.snapshot === undefined) opts.pin.snapshot = res.headers.get('x-explorer-snapshot');
};

/** A 400 whose JSON:API error names the parameter `snapshot`: the pinned snapshot is no longer kept. */
async function namesSnapshot(res: Response): Promise<boolean> {
  try {
    const body = await res.json() as { errors?: { source?: { parameter?: string } }[] };
    return body.errors?.some((e) => e.source?.parameter === 'snapshot') ?? false;
  } catch { return false; }
}

/**
 * One request, with a watch that fails it when nothing arrives for `idleMs` (`touch` rearms it as the body
 * comes; `done` ends it). A status that is not 200 is classified and thrown; the body is never echoed.
 */
async function send(url: string, accept: string, organization: string, view: SyncedView, opts: ReadOptions) {
  const idleMs = opts.idleMs ?? 60_000;
  const quiet = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const touch = () => { clearTimeout(timer); timer = setTimeout(() => quiet.abort(), idleMs); };
  const done = () => clearTimeout(timer);
  const failure = (e: unknown, doing: string) => {
    done();
    if (opts.signal?.aborted) return e;
    if (quiet.signal.aborted) return new Retryable(`nothing came for ${idleMs / 1000} s`);
    const cause = (e as Error).cause;
    return new Retryable(`${doing} (${cause ? String((cause as Error).message ?? cause) : (e as Error).message})`);
  };
  touch();
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { Authorization: `Bearer ${opts.token}`, Accept: accept },
      // Each hop of a redirect would be a new address to judge, and the token would travel with it.
      redirect: 'manual',
      signal: opts.signal ? AbortSignal.any([opts.signal, quiet.signal]) : quiet.signal,
    });
  } catch (e) {
    throw failure(e, 'the request failed');
  }
  const refused = async (error: Error) => { done(); await res.body?.cancel().catch(() => undefined); return error; };
  if (res.status === 429) throw await refused(new RateLimited(retryAfterMs(res.headers)));
  if (res.status >= 500) throw await refused(new Retryable(`the upstream answered ${res.status}`));
  if (res.status === 400 && url.includes('&snapshot=') && await namesSnapshot(res)) {
    done();
    throw new PinnedSnapshotGoneError(`the upstream no longer keeps snapshot ${opts.pin!.snapshot}`);
  }
  if (res.status === 404 && view === 'resources') throw await refused(new ViewMissingError(`the upstream has no ${view} view`));
  if (res.status === 401 || res.status === 403 || res.status === 404) throw await refused(new UpstreamRefusedError(res.status, organization));
  if (res.status === 400 && view === 'resources') throw await refused(new ViewMissingError(`the upstream has no ${view} view`));
  if (res.status !== 200 || !res.body) throw await refused(new Error(`${view} of ${organization}: the upstream answered ${res.status}`));
  const length = res.headers.get('content-length');
  return { res, touch, done, failure, length: length === null ? null : Number(length) };
}

/** The export, streamed to `<file>.partial`, renamed once the transfer ended as the upstream said it would. */
async function exportOnce(organization: string, view: SyncedView, file: string, opts: ReadOptions): Promise<number> {
  const { res, touch, done, failure, length } = await send(viewUrl(opts, organization, '/export/csv', `type=${view}`), 'text/csv', organization, view, opts);
  const partial = `${file}.partial`;
  try {
    const rearm = new Transform({ transform(chunk, _enc, next) { touch(); next(null, chunk); } });
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), rearm, createWriteStream(partial));
  } catch (e) {
    await rm(partial, { force: true });
    throw failure(e, 'the transfer broke off');
  }
  done();
  const { size } = await stat(partial);
  if (length !== null && length !== size) {
    await rm(partial, { force: true });
    throw new Retryable(`the transfer ended at ${size} of ${length} bytes`);
  }
  await rename(partial, file);
  pinTo(opts, res);
  return size;
}

// A JSON datetime (milliseconds) as the CSV export writes it (whole seconds); only in fields named `*_at`.
const JSON_DATETIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.\d+(Z|[+-]\d{2}:\d{2})$/;
const csvCell = (name: string, value: unknown): string => {
  if (value === null || value === undefined) return '""';
  let text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (name.endsWith('_at')) text = text.replace(JSON_DATETIME, '$1$2');
  return `"${text.replaceAll('"', '""')}"`;
};

/**
 * The view page by page (`page[size]=100`, in the view's default order), written as its CSV export writes it:
 * the attributes' names in snake case as the header (our own catalog's when the view is empty), every value
 * quoted, null as empty, datetimes to the whole second.
 */
async function readViewPages(organization: string, view: SyncedView, file: string, opts: ReadOptions): Promise<number> {
  const partial = `${file}.partial`;
  const out = createWriteStream(partial);
  let header: string[] | null = null;
  let bytes = 0;
  try {
    for (let number: number | null = 1; number !== null;) {
      const page: { rows: Record<string, unknown>[]; next: number | null; bytes: number } = await retrying(`${view} of ${organization}, page ${number}`, opts, opts.retries ?? 5,
        () => pageOnce(organization, view, number!, opts));
      bytes += page.bytes;
      if (header === null && page.rows.length > 0) {
        header = Object.keys(page.rows[0]!);
        await write(out, `${header.map((k) => csvCell('', k.replaceAll('-', '_'))).join(',')}\n`);
      }
      const lines = page.rows.map((row) => `${header!.map((k) => csvCell(k.replaceAll('-', '_'), row[k])).join(',')}\n`).join('');
      if (lines) await write(out, lines);
      number = page.next;
    }
    if (header === null) await write(out, `${catalogFor().view(view)!.fields.map((f) => csvCell('', f.name)).join(',')}\n`);
    await new Promise<void>((resolve, reject) => out.end((e?: Error | null) => (e ? reject(e) : resolve())));
  } catch (e) {
    out.destroy();
    await rm(partial, { force: true });
    throw e;
  }
  await rename(partial, file);
  return bytes;
}

const write = (out: WriteStream, text: string) => new Promise<void>((resolve, reject) => {
  if (out.write(text)) resolve(); else out.once('drain', resolve).once('error', reject);
});

/** One page: its rows' attributes and the next page's number (null after the last). */
async function pageOnce(organization: string, view: SyncedView, number: number, opts: ReadOptions) {
  const query = `type=${view}&page%5Bsize%5D=${PAGE_SIZE}&page%5Bnumber%5D=${number}`;
  const { res, done, failure, length } = await send(viewUrl(opts, organization, '', query), 'application/vnd.api+json', organization, view, opts);
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    throw failure(e, 'the transfer broke off');
  }
  done();
  const bytes = Buffer.byteLength(text);
  if (length !== null && length !== bytes) throw new Retryable(`the transfer ended at ${bytes} of ${length} bytes`);
  let body: { data?: { attributes?: Record<string, unknown> }[]; meta?: { pagination?: { 'next-page'?: number | null } } };
  try {
    body = JSON.parse(text);
  } catch {
    throw new Retryable('the page is not whole JSON');
  }
  if (!Array.isArray(body.data)) throw new Error(`${view} of ${organization}, page ${number}: the upstream's page has no data`);
  pinTo(opts, res);
  const next = body.meta?.pagination?.['next-page'] ?? null;
  if (next !== null && next !== number + 1) throw new Error(`${view} of ${organization}, page ${number}: the upstream's next page is ${next}`);
  return { rows: body.data.map((row) => row.attributes ?? {}), next, bytes };
}
