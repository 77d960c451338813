import type { Lease } from '../snapshots/read/current-snapshot.js';
import type { TokenRecord } from '../store/state-store.js';

/** What a request ran, for metrics: a page, an export, or history's changes (page or export) and trend. */
export type QueryKind = 'page' | 'export' | 'changes' | 'changes-export' | 'trend' | 'summary' | 'summary-export';

/** What middleware learns about a request, for handlers and the request log. */
export interface RequestState {
  requestId: string;
  token?: TokenRecord;
  /** Rate-limit context: the token's (user, team or organization) or the client address. */
  rateKey?: string;
  organization?: string;
  /** The request reads across organizations (docs/access.md): every organization its token reaches. */
  across?: boolean;
  /** Across organizations: how many organizations the answer read (the audit log's `organizations`). */
  reached?: number;
  lease?: Lease;
  /** Leases on the other retained snapshots the request reads (history); released with `lease`. */
  history?: Lease[];
  rows?: number;
  /** The query this request ran, for metrics: its view, page or export, engine time and bytes sent. */
  query?: { view: string; kind: QueryKind; seconds?: number; bytes?: number };
  route?: string;
  /** How a streamed response ended, when not plainly. */
  outcome?: string;
  /** Why the request failed on our side (ApiError.internalCause), for its log line. */
  error?: string;
}
