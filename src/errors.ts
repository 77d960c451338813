// Every failure a client can cause or see is an ApiError; the error middleware renders it as JSON:API
// (interface §7). Anything else that escapes is a bug and is logged as one.

export interface ErrorSource {
  parameter?: string;
  pointer?: string;
  header?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly source?: ErrorSource,
    readonly headers: Record<string, string> = {},
    /** What went wrong on our side, for the server's log only: never sent to the client. */
    readonly internalCause?: string,
  ) {
    super(detail);
    this.name = 'ApiError';
  }
}

export const badParameter = (parameter: string, detail: string) =>
  new ApiError(400, 'invalid query parameter', detail, { parameter });

/** One body for unknown organization, no access and unknown saved view, so existence never leaks (§7). */
export const notFound = () =>
  new ApiError(404, 'not found', 'The organization or resource does not exist, or you are not authorized to access it.');

export const unauthorized = (detail = 'A valid API token is required: send "Authorization: Bearer <token>".') =>
  new ApiError(401, 'unauthorized', detail, undefined, { 'WWW-Authenticate': 'Bearer realm="explorer"' });

export const forbidden = (detail: string) => new ApiError(403, 'forbidden', detail);

export const noSnapshot = () =>
  new ApiError(503, 'service unavailable', 'No snapshot is loaded yet; load one with `explorer load <dir>` and retry.', undefined, { 'Retry-After': '5' });

/** `cause` (the worker's own message) goes to the request's log line, so that a 503 says why. */
export const snapshotUnavailable = (cause: string) =>
  new ApiError(503, 'service unavailable', 'The snapshot\'s data cannot be read right now; retry shortly.', undefined, { 'Retry-After': '5' }, cause);

export const queryTimeout = (seconds: number) =>
  new ApiError(504, 'query timed out', `The query ran longer than ${seconds} seconds and was stopped. Try a simpler query with fewer filters.`);
