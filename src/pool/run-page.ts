// Runs a page query with the request's deadline and cancels it when the client goes away. The worker
// enforces the deadline itself; the timer here also answers a request whose task is still queued.
import type { ServerResponse } from 'node:http';
import type { Attachment, PageDocument, PageResult, PageTask, RowsResult, Statement } from '../../workers/protocol.js';
import { ApiError, queryTimeout, snapshotUnavailable } from '../errors.js';
import { PoolOverloadedError, type QueryPool } from './query-pool.js';

export interface PageRun {
  /** Whose turn it is in the admission queue. */
  organization: string;
  attach: Attachment[];
  count: Statement;
  knownTotal?: number;
  page: Statement;
  pageCountsTotal: boolean;
  valueIndexes?: number[];
  cursorKeys?: PageTask['cursorKeys'];
  offset: number;
  rowType: string;
  attributes: string[];
  document: PageDocument;
  deadline: number;
  timeoutMs: number;
}

export const clientClosed = () => new ApiError(499, 'client closed request', 'The client disconnected before the answer was ready.');
export const overloaded = (retryAfterSeconds: number) =>
  new ApiError(503, 'service busy', `Too many queries are waiting; retry in ${retryAfterSeconds} s.`, undefined, { 'Retry-After': String(retryAfterSeconds) });

/**
 * Whether the client of `res` has already gone. Its close event may have fired before anyone listened
 * (while the request was still being set up), so listening alone would miss it.
 */
export const clientGone = (res: ServerResponse) => res.destroyed || res.socket?.destroyed === true;

export async function runPage(pool: QueryPool, run: PageRun, res: ServerResponse): Promise<Extract<PageResult, { ok: true }>> {
  const { timeoutMs: _t, organization, ...task } = run;
  return runAdmitted(pool, run, res, (id) => pool.runPage(id, organization, task));
}

export interface RowsRun {
  organization: string;
  attach: Attachment[];
  statements: Statement[];
  deadline: number;
  timeoutMs: number;
}

/** Runs statements on one worker connection, with the same deadline, cancellation and admission as a page. */
export async function runRows(pool: QueryPool, run: RowsRun, res: ServerResponse): Promise<unknown[][][]> {
  const { timeoutMs: _t, organization, ...task } = run;
  return (await runAdmitted(pool, run, res, (id) => pool.runRows(id, organization, task))).results;
}

type Settled = PageResult | RowsResult;

async function runAdmitted<R extends Settled>(
  pool: QueryPool, run: { deadline: number; timeoutMs: number }, res: ServerResponse, submit: (id: string) => Promise<R>,
): Promise<Extract<R, { ok: true }>> {
  if (clientGone(res)) throw clientClosed();
  const id = pool.newTaskId();
  let timer: NodeJS.Timeout | undefined;
  let onClose: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      pool.cancel(id, 'timeout');
      reject(queryTimeout(run.timeoutMs / 1000));
    }, Math.max(0, run.deadline - Date.now()));
    onClose = () => {
      if (res.writableFinished) return;
      pool.cancel(id, 'cancelled');
      reject(clientClosed());
    };
    res.once('close', onClose);
    if (clientGone(res)) onClose();
  });
  try {
    const result = await Promise.race([submit(id), stopped]);
    if (result.ok) return result as Extract<R, { ok: true }>;
    if (result.code === 'timeout') throw queryTimeout(run.timeoutMs / 1000);
    if (result.code === 'cancelled') throw clientClosed();
    if (result.code === 'unavailable') throw snapshotUnavailable(result.message);
    throw new Error(`query failed in DuckDB: ${result.message}`);
  } catch (e) {
    if (e instanceof PoolOverloadedError) throw overloaded(e.retryAfterSeconds);
    throw e;
  } finally {
    clearTimeout(timer);
    if (onClose) res.off('close', onClose);
  }
}
