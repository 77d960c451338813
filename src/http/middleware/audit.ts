// Every request of a token the audit log must account for (an auditor's), and every request across
// organizations whatever its token, gets its line once its response is done (the status and rows or bytes it
// ended with); while the log cannot be written, such a request answers 503 and is not served. The path is
// logged with its query string; never a header, so never a secret.
import type { Middleware, ParameterizedContext } from 'koa';
import type { AuditLog } from '../../audit/audit-log.js';
import { ApiError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { audited } from '../../access/policy.js';
import type { TokenRecord } from '../../store/state-store.js';
import type { RequestState } from '../state.js';

/** `everyRequest`: the cross-organization routes, whose every request is logged, a token's or not (401). */
export const auditRequests = (log: AuditLog, logger: Logger, everyRequest = false): Middleware<RequestState> => async (ctx, next) => {
  const token = ctx.state.token;
  if (!everyRequest && !(token && audited(token))) return next();
  const organization = (ctx as unknown as { params?: Record<string, string> }).params?.organization_name ?? null;
  let handled!: () => void;
  const done = new Promise<void>((resolve) => { handled = resolve; });
  auditOnClose(log, logger, ctx, token, () => (everyRequest ? ctx.state.reached ?? 0 : organization), done);
  try {
    await next();
  } finally {
    handled();
  }
};

/**
 * Appends `ctx`'s line once its response is done and, with `handled`, its handler too; throws the 503 first
 * while the log cannot be written. `organizations` gives the line's `organizations`: the organization of the
 * path, or across organizations how many the answer read. An export's response can close before its handler
 * has counted the bytes it sent: its line waits for the handler, else it said no bytes.
 */
export function auditOnClose(log: AuditLog, logger: Logger, ctx: ParameterizedContext<RequestState>, token: TokenRecord | undefined,
  organizations: () => string | number | null, handled: Promise<void> = Promise.resolve()): void {
  if (log.broken !== null) {
    throw new ApiError(503, 'service unavailable', 'The audit log cannot be written, and this request is served only when logged; retry later.',
      undefined, { 'Retry-After': '30' }, `audit log: ${log.broken}`);
  }
  ctx.res.once('close', () => void handled.then(() => {
    const s = ctx.state;
    return log.append({
      time: new Date().toISOString(),
      token_id: token?.id ?? null,
      token_kind: token?.kind ?? null,
      method: ctx.method,
      path: ctx.originalUrl,
      organizations: organizations(),
      status: ctx.status,
      ...(s.query?.kind.endsWith('export') ? { bytes: s.query.bytes ?? null } : { rows: s.rows ?? null }),
    }).catch((e) => logger.log('error', 'audit log not written', { error: (e as Error).message, request_id: s.requestId }));
  }));
}
