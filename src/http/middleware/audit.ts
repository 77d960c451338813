// Every request of a token the audit log must account for (an auditor's), and every request across
// organizations whatever its token, gets its line once its response
// is done (the status and rows or bytes it ended with); while the log cannot be written, such a request
// answers 503 and is not served. The path is logged with its query string; never a header, so never a secret.
import type { Middleware } from 'koa';
import type { AuditLog } from '../../audit/audit-log.js';
import { ApiError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { audited } from '../../access/policy.js';
import type { RequestState } from '../state.js';

/** `everyRequest`: the cross-organization routes, whose every request is logged, a token's or not (401). */
export const auditRequests = (log: AuditLog, logger: Logger, everyRequest = false): Middleware<RequestState> => async (ctx, next) => {
  const token = ctx.state.token;
  if (!everyRequest && !(token && audited(token))) return next();
  if (log.broken !== null) {
    throw new ApiError(503, 'service unavailable', 'The audit log cannot be written, and this token\'s requests are served only when logged; retry later.',
      undefined, { 'Retry-After': '30' }, `audit log: ${log.broken}`);
  }
  const organization = (ctx as unknown as { params?: Record<string, string> }).params?.organization_name ?? null;
  ctx.res.once('close', () => {
    const s = ctx.state;
    log.append({
      time: new Date().toISOString(),
      token_id: token?.id ?? null,
      token_kind: token?.kind ?? null,
      method: ctx.method,
      path: ctx.originalUrl,
      // Across organizations: how many the answer read (none until the handler chose them).
      organizations: everyRequest ? s.reached ?? 0 : organization,
      status: ctx.status,
      ...(s.query?.kind.endsWith('export') ? { bytes: s.query.bytes ?? null } : { rows: s.rows ?? null }),
    }).catch((e) => logger.log('error', 'audit log not written', { error: (e as Error).message, request_id: s.requestId }));
  });
  await next();
};
