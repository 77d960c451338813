// Calls to the explorer API with the user's token. Every failure becomes an ApiProblem carrying what the
// page needs to explain it: the JSON:API error (status, title, detail, source parameter or pointer) and,
// for 429 and 503, how long to wait (Retry-After, else X-RateLimit-Reset).

export interface Problem {
  status: number;
  title: string;
  detail: string;
  parameter?: string;
  pointer?: string;
  /** Seconds to wait before retrying, when the response says. */
  retryAfter?: number;
  requestId?: string;
}

export class ApiProblem extends Error {
  constructor(readonly problem: Problem) {
    super(`${problem.status} ${problem.title}: ${problem.detail}`);
    this.name = 'ApiProblem';
  }
}

export const JSONAPI = 'application/vnd.api+json';

/** Seconds from Retry-After (seconds or an HTTP date), else from X-RateLimit-Reset (seconds, fractional). */
export function retryAfterOf(headers: Headers, now = Date.now()): number | undefined {
  const retry = headers.get('Retry-After');
  if (retry !== null && retry.trim() !== '') {
    if (/^\d+$/.test(retry.trim())) return Number(retry.trim());
    const at = Date.parse(retry);
    if (!Number.isNaN(at)) return Math.max(0, Math.ceil((at - now) / 1000));
  }
  const reset = headers.get('X-RateLimit-Reset');
  if (reset !== null && reset.trim() !== '' && Number.isFinite(Number(reset))) return Math.max(1, Math.ceil(Number(reset)));
  return undefined;
}

async function problemOf(res: Response): Promise<Problem> {
  const problem: Problem = { status: res.status, title: res.statusText || 'error', detail: '' };
  const requestId = res.headers.get('X-Request-Id');
  if (requestId) problem.requestId = requestId;
  const retry = retryAfterOf(res.headers);
  if (retry !== undefined) problem.retryAfter = retry;
  try {
    const body = (await res.json()) as { errors?: { title?: string; detail?: string; source?: { parameter?: string; pointer?: string } }[] };
    const e = body.errors?.[0];
    if (e) {
      if (e.title) problem.title = e.title;
      if (e.detail) problem.detail = e.detail;
      if (e.source?.parameter !== undefined) problem.parameter = e.source.parameter;
      if (e.source?.pointer !== undefined) problem.pointer = e.source.pointer;
    }
  } catch {
    // not JSON: keep the status line
  }
  return problem;
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  body?: unknown;
  signal?: AbortSignal;
}

export class Api {
  /** `base` is the API root (…/api/v2/); paths are relative to it. */
  constructor(readonly base: URL, private readonly token: () => string) {}

  url(path: string): URL {
    return new URL(path, this.base);
  }

  async request(path: string, opts: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token()}`, Accept: JSONAPI };
    const init: RequestInit = { method: opts.method ?? 'GET', headers, cache: 'no-store', credentials: 'omit' };
    if (opts.body !== undefined) {
      headers['Content-Type'] = JSONAPI;
      init.body = JSON.stringify(opts.body);
    }
    if (opts.signal) init.signal = opts.signal;
    const res = await fetch(this.url(path), init);
    if (!res.ok) throw new ApiProblem(await problemOf(res));
    return res;
  }

  async json<T>(path: string, opts: RequestOptions = {}): Promise<{ body: T; response: Response }> {
    const response = await this.request(path, opts);
    return { body: (await response.json()) as T, response };
  }
}

/** What the organization picker offers when the token reaches several organizations: the cross-organization routes. */
export const ALL_ORGANIZATIONS = 'All organizations';

/** The API path an organization's routes start with; across organizations, the API's root (`explorer`, `explorer/summary`). */
export const organizationPath = (organization: string) =>
  (organization === ALL_ORGANIZATIONS ? '' : `organizations/${encodeURIComponent(organization)}/`);

/** The file name of a Content-Disposition header (`filename="…"`), if any. */
export function filenameOf(disposition: string | null): string | null {
  const m = disposition ? /filename="([^"]+)"/.exec(disposition) : null;
  return m ? m[1]! : null;
}
