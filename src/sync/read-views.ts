// Reading an organization's views from the upstream, each whole by its CSV export, streamed to a file: the
// upstream's rate limit obeyed (a bounded number of requests at once, 429s waited out), failures retried
// with backoff, and a transfer that ends short never taken for a whole one (docs/sync.md).
import { createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { pipeline } from 'node:stream/promises';
import type { Upstream } from './upstream-endpoint.js';

/** The views a source is rebuilt from (tf_versions is derived from workspaces). */
export const SYNCED_VIEWS = ['workspaces', 'providers', 'modules', 'resources'] as const;
export type SyncedView = (typeof SYNCED_VIEWS)[number];

/** The upstream refused the organization (401, 403, 404): it fails with that status alone, its body unread. */
export class UpstreamRefusedError extends Error {
  constructor(readonly status: number, what: string) { super(`the upstream answered ${status} for ${what}`); }
}

/** The upstream has no such view (a 400 naming `type`, or a 404 while other views answered). */
export class ViewMissingError extends Error {}

export interface ReadOptions {
  upstream: Upstream;
  token: string;
  /** Requests at once against the upstream, shared by every read of a run. */
  limiter: Limiter;
  /** Tries of one request after a 5xx or a broken transfer (429s are waited out and not counted). */
  retries?: number;
  /** The first backoff, doubled at each try. */
  backoffMs?: number;
  /** Stops every wait and request (SIGTERM). */
  signal?: AbortSignal;
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

/** A failure worth another try: a 5xx, a connection that failed, a body cut off. */
class Retryable extends Error {}

/**
 * Writes `view` of `organization`, its CSV export whole, to `file`. Returns the bytes written. The file
 * appears only once the transfer ended as the upstream said it would: chunked to its last chunk, or at its
 * Content-Length.
 */
export async function readViewCsv(organization: string, view: SyncedView, file: string, opts: ReadOptions): Promise<number> {
  const url = `${opts.upstream.base}/api/v2/organizations/${encodeURIComponent(organization)}/explorer/export/csv?type=${view}`;
  const retries = opts.retries ?? 5;
  let backoff = opts.backoffMs ?? 500;
  for (let attempt = 0; ; ) {
    try {
      return await opts.limiter.run(() => fetchOnce(url, organization, view, file, opts));
    } catch (e) {
      if (e instanceof RateLimited) { await sleep(e.waitMs, undefined, opts.signal ? { signal: opts.signal } : {}); continue; }
      if (!(e instanceof Retryable) || ++attempt > retries) throw e instanceof Retryable ? new Error(`${view} of ${organization}: ${e.message} (after ${retries + 1} tries)`) : e;
      await sleep(backoff, undefined, opts.signal ? { signal: opts.signal } : {});
      backoff *= 2;
    }
  }
}

class RateLimited extends Error { constructor(readonly waitMs: number) { super('429'); } }

async function fetchOnce(url: string, organization: string, view: SyncedView, file: string, opts: ReadOptions): Promise<number> {
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { Authorization: `Bearer ${opts.token}`, Accept: 'text/csv' },
      // Each hop of a redirect would be a new address to judge, and the token would travel with it.
      redirect: 'manual',
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  } catch (e) {
    if (opts.signal?.aborted) throw e;
    throw new Retryable(`the request failed (${(e as Error).cause ? String(((e as Error).cause as Error).message ?? (e as Error).cause) : (e as Error).message})`);
  }
  if (res.status === 429) { await res.body?.cancel(); throw new RateLimited(retryAfterMs(res.headers)); }
  if (res.status >= 500) { await res.body?.cancel(); throw new Retryable(`the upstream answered ${res.status}`); }
  if (res.status === 401 || res.status === 403 || res.status === 404) {
    await res.body?.cancel();
    if (res.status === 404 && view === 'resources') throw new ViewMissingError(`the upstream has no ${view} view`);
    throw new UpstreamRefusedError(res.status, organization);
  }
  if (res.status === 400 && view === 'resources') { await res.body?.cancel(); throw new ViewMissingError(`the upstream has no ${view} view`); }
  if (res.status !== 200 || !res.body) { await res.body?.cancel(); throw new Error(`${view} of ${organization}: the upstream answered ${res.status}`); }
  const partial = `${file}.partial`;
  try {
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), createWriteStream(partial));
  } catch (e) {
    await rm(partial, { force: true });
    if (opts.signal?.aborted) throw e;
    throw new Retryable(`the transfer broke off (${(e as Error).message})`);
  }
  const { size } = await stat(partial);
  const length = res.headers.get('content-length');
  if (length !== null && Number(length) !== size) {
    await rm(partial, { force: true });
    throw new Retryable(`the transfer ended at ${size} of ${length} bytes`);
  }
  await rename(partial, file);
  return size;
}
