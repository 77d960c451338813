// Streams a DuckDB `COPY … TO '<fifo>'` to an HTTP response without buffering the file.
//
// Order matters: the FIFO's read end is opened (non-blocking) before the task is submitted, so DuckDB's
// blocking open() for writing always finds a reader; and the read end is closed only after the task has
// settled, because an open() with no reader would block a libuv thread beyond any interrupt. To stop a
// COPY that is blocked on a slow client, the reader switches to draining (discarding) while the worker
// interrupts DuckDB. The response ends only when both the COPY succeeded and the FIFO reached EOF;
// otherwise it is destroyed, so the client sees a broken transfer and never a short file that looks whole.
import { execFile } from 'node:child_process';
import { constants, mkdirSync, openSync, promises as fs } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Attachment, ExportResult, FailureCode, Statement } from '../../workers/protocol.js';
import { PoolOverloadedError } from './admission.js';
import type { QueryPool } from './query-pool.js';
import { clientGone } from './run-page.js';

const run = promisify(execFile);
const COALESCE_BYTES = 1 << 20;

export type ExportEnd =
  | { kind: 'complete'; rows: number; bytes: number }
  /** Failed before any byte was sent: the caller can still answer with an error status. */
  | { kind: 'failed'; code: FailureCode; message: string }
  /** Refused before it started: too many requests are waiting for a slot. */
  | { kind: 'overloaded'; retryAfterSeconds: number }
  /** Failed or cancelled after the response started: the response was destroyed. */
  | { kind: 'aborted'; code: FailureCode; message: string; bytes: number };

export interface ExportRequest {
  pool: QueryPool;
  /** Whose turn it is in the admission queue. */
  organization: string;
  attach: Attachment[];
  query: Statement;
  /** The query reads stored, already quoted lines (compile.ts exportLines). */
  lines: boolean;
  deadline: number;
  /** The header line, without its line feed. */
  header: string;
  headers: Record<string, string>;
  res: ServerResponse;
}

export async function streamExport(r: ExportRequest): Promise<ExportEnd> {
  if (clientGone(r.res)) return { kind: 'failed', code: 'cancelled', message: 'client disconnected' };
  mkdirSync(r.pool.fifoDirectory, { recursive: true });
  const id = r.pool.newTaskId();
  const fifo = join(r.pool.fifoDirectory, `${id}.csv`);
  await run('mkfifo', ['-m', '600', fifo]);
  const reader = new Socket({ fd: openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK), readable: true, writable: false });
  reader.pause();

  return new Promise<ExportEnd>((resolve) => {
    let started = false; // response headers sent
    let bytes = 0;
    let eof = false;
    let result: ExportResult | undefined;
    let stopped: { code: FailureCode; message: string } | undefined;
    let settled = false;

    const task = r.pool.runExport(id, r.organization, { attach: r.attach, deadline: r.deadline, query: r.query, lines: r.lines, fifo });
    const timer = setTimeout(() => stop('timeout', 'deadline reached'), Math.max(0, r.deadline - Date.now()));
    const onClientGone = () => { if (!settled) stop('cancelled', 'client disconnected'); };
    r.res.once('close', onClientGone);
    const offClose = r.pool.onClose(() => stop('cancelled', 'the server is shutting down'));

    const finish = (end: ExportEnd) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      r.res.off('close', onClientGone);
      offClose();
      resolve(end);
    };

    const start = () => {
      if (started) return;
      started = true;
      r.res.writeHead(200, r.headers);
      const line = Buffer.from(`${r.header}\n`);
      bytes += line.length;
      r.res.write(line);
    };

    const maybeComplete = () => {
      if (stopped || !eof || !result) return;
      if (result.ok) {
        start();
        r.res.end();
        finish({ kind: 'complete', rows: result.rows, bytes });
      } else stop(result.code, result.message);
    };

    function stop(code: FailureCode, message: string) {
      if (stopped || settled) return;
      stopped = { code, message };
      r.pool.cancel(id, code === 'timeout' ? 'timeout' : 'cancelled');
      // Keep reading and discard, so that a COPY blocked on a full pipe wakes up and sees the interrupt.
      reader.removeAllListeners('data');
      reader.on('data', () => {});
      reader.resume();
      if (started) {
        r.res.destroy();
        finish({ kind: 'aborted', code, message, bytes });
      } else finish({ kind: 'failed', code, message });
    }

    // A pipe holds 64 KB, so the FIFO arrives in 64 KB reads. Writing each on its own framed an HTTP
    // chunk and made a system call per read; gathered up to COALESCE_BYTES (or the end of this turn of
    // the event loop, so the first byte never waits) they cost the main thread about a fifth less
    // (docs/performance.md, session 7).
    let gathered: Buffer[] = [];
    let gatheredBytes = 0;
    let flushQueued = false;
    const flush = () => {
      flushQueued = false;
      if (gatheredBytes === 0 || stopped) return;
      const out = gathered.length === 1 ? gathered[0]! : Buffer.concat(gathered, gatheredBytes);
      gathered = [];
      gatheredBytes = 0;
      if (!r.res.write(out)) reader.pause();
    };
    reader.on('data', (chunk: Buffer) => {
      start();
      bytes += chunk.length;
      gathered.push(chunk);
      gatheredBytes += chunk.length;
      if (gatheredBytes >= COALESCE_BYTES) flush();
      else if (!flushQueued) { flushQueued = true; setImmediate(flush); }
    });
    r.res.on('drain', () => { if (!stopped) reader.resume(); });
    reader.on('end', () => { flush(); eof = true; maybeComplete(); });
    reader.on('error', (e) => stop('error', `reading the export stream failed: ${e.message}`));
    reader.resume();

    // Gone while the FIFO was being made: its close event has passed, so the listener would never hear it.
    if (clientGone(r.res)) onClientGone();

    task.then(
      (res) => { result = res; if (!res.ok) stop(res.code, res.message); else maybeComplete(); },
      (e: Error) => {
        if (!started && e instanceof PoolOverloadedError) {
          stopped = { code: 'error', message: e.message };
          finish({ kind: 'overloaded', retryAfterSeconds: e.retryAfterSeconds });
        } else stop('error', e.message);
      },
    ).finally(async () => {
      // Only now is it safe to close the read end and remove the FIFO (see the note at the top). After a
      // successful COPY the writer has closed, but the reader may not have consumed its end of file yet:
      // wait for it, or the response would never end.
      if (!eof && !stopped && !reader.destroyed) {
        await new Promise<void>((done) => { reader.once('end', done); reader.once('close', done); reader.once('error', () => done()); });
      }
      reader.destroy();
      await fs.unlink(fifo).catch(() => {});
    });
  });
}
