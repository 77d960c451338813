// Streams a DuckDB `COPY … TO '<fifo>'` (CSV, Parquet or NDJSON) to an HTTP response without buffering the file.
//
// Order matters: the FIFO's read end is opened (non-blocking) before the task is submitted, so DuckDB's
// blocking open() for writing always finds a reader; and the read end is closed only after the task has
// settled, because an open() with no reader would block a libuv thread beyond any interrupt. To stop a
// COPY that is blocked on a slow client, the reader switches to draining (discarding) while the worker
// interrupts DuckDB. The response ends only when both the COPY succeeded and the FIFO reached EOF;
// otherwise it is destroyed, so the client sees a broken transfer and never a short file that looks whole.
import { constants, openSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { Socket, type OnReadOpts, type SocketConstructorOpts } from 'node:net';
import type { Attachment, ExportResult, ExportTask, FailureCode, Statement } from '../../workers/protocol.js';
import { PoolOverloadedError } from './admission.js';
import type { QueryPool } from './query-pool.js';
import { clientGone } from './run-page.js';

/** The most one read of the FIFO brings: the read buffer's size (a Linux pipe holds 64 KB). */
const READ_BYTES = 64 * 1024;
const GATHER_BYTES = 1 << 20;
const GATHER_BUFFERS = 3;

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
  format: ExportTask['format'];
  /** The query reads stored, already quoted lines (compile.ts exportLines). */
  lines: boolean;
  deadline: number;
  /** A CSV's header line, without its line feed; the other formats have none. */
  header?: string;
  headers: Record<string, string>;
  res: ServerResponse;
}

export async function streamExport(r: ExportRequest): Promise<ExportEnd> {
  if (clientGone(r.res)) return { kind: 'failed', code: 'cancelled', message: 'client disconnected' };
  const id = r.pool.newTaskId();
  const fifo = await r.pool.fifos.take(id);
  // Every read lands in one reused buffer (`onread`), so reading allocates nothing per read; see gather below.
  let onRead: (length: number, data: Uint8Array) => boolean = () => true;
  // @types/node lists `onread` for sockets that connect only; Node takes it for any socket.
  const options: SocketConstructorOpts & { onread: OnReadOpts } = {
    fd: openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK), readable: true, writable: false,
    onread: { buffer: Buffer.allocUnsafe(READ_BYTES), callback: (length, data) => onRead(length, data) },
  };
  const reader = new Socket(options);
  reader.pause();

  return new Promise<ExportEnd>((resolve) => {
    let started = false; // response headers sent
    let bytes = 0;
    let eof = false;
    let result: ExportResult | undefined;
    let stopped: { code: FailureCode; message: string } | undefined;
    let settled = false;
    /** Whether the task ended in a known state, its COPY returned or never started: only then is the FIFO reused. */
    let writerDone = true;

    const task = r.pool.runExport(id, r.organization, { attach: r.attach, deadline: r.deadline, query: r.query, format: r.format, lines: r.lines, fifo });
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
      if (r.header === undefined) return;
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
      onRead = () => true;
      reader.resume();
      if (started) {
        r.res.destroy();
        finish({ kind: 'aborted', code, message, bytes });
      } else finish({ kind: 'failed', code, message });
    }

    // A pipe holds 64 KB, so the FIFO arrives in 64 KB reads. Each is copied into one of GATHER_BUFFERS
    // buffers of GATHER_BYTES, which is written to the response when full (or at the end of this turn of
    // the event loop, so the first byte never waits) and reused once the socket has taken it. Writing each
    // read as it came cost an HTTP chunk and a system call a read; allocating a buffer a read (as a
    // socket's 'data' does) or a gathered copy cost garbage collection, about 90 ms of V8's threads per
    // 70 MB export (docs/performance.md, "Export buffers"). A full set of buffers in flight pauses the reader.
    const spare: Buffer[] = [];
    let made = 0;
    let current: Buffer | undefined;
    let filled = 0;
    let waitingForBuffer = false;
    let flushQueued = false;
    /** Makes sure the next read has a buffer to land in; without one, pauses the reader until a write returns one. */
    const haveBuffer = () => {
      current ??= spare.pop() ?? (made < GATHER_BUFFERS ? (made++, Buffer.allocUnsafe(GATHER_BYTES)) : undefined);
      if (current) return true;
      waitingForBuffer = true;
      reader.pause();
      return false;
    };
    const flush = () => {
      flushQueued = false;
      if (!current || filled === 0 || stopped) return;
      const buffer = current;
      const length = filled;
      current = undefined;
      filled = 0;
      r.res.write(buffer.subarray(0, length), () => {
        spare.push(buffer);
        if (waitingForBuffer && !stopped && haveBuffer()) {
          waitingForBuffer = false;
          reader.resume();
        }
      });
      haveBuffer();
    };
    onRead = (length, data) => {
      start();
      bytes += length;
      // The reader runs only while `current` has room for a whole read: a buffer is flushed before less
      // than a read is left, and the reader pauses while no buffer is free.
      current!.set(data.subarray(0, length), filled);
      filled += length;
      if (GATHER_BYTES - filled < READ_BYTES) flush();
      else if (!flushQueued) { flushQueued = true; setImmediate(flush); }
      return current !== undefined;
    };
    reader.on('end', () => { flush(); eof = true; maybeComplete(); });
    reader.on('error', (e) => stop('error', `reading the export stream failed: ${e.message}`));
    if (haveBuffer()) reader.resume();

    // Gone while the FIFO was being made: its close event has passed, so the listener would never hear it.
    if (clientGone(r.res)) onClientGone();

    task.then(
      (res) => { result = res; if (!res.ok) stop(res.code, res.message); else maybeComplete(); },
      (e: Error) => {
        writerDone = e instanceof PoolOverloadedError;
        if (!started && e instanceof PoolOverloadedError) {
          stopped = { code: 'error', message: e.message };
          finish({ kind: 'overloaded', retryAfterSeconds: e.retryAfterSeconds });
        } else stop('error', e.message);
      },
    ).finally(async () => {
      // Only now is it safe to close the read end and give the FIFO back (see the note at the top). After a
      // successful COPY the writer has closed, but the reader may not have consumed its end of file yet:
      // wait for it, or the response would never end.
      if (!eof && !stopped && !reader.destroyed) {
        await new Promise<void>((done) => { reader.once('end', done); reader.once('close', done); reader.once('error', () => done()); });
      }
      reader.destroy();
      await (writerDone ? r.pool.fifos.give(fifo) : r.pool.fifos.discard(fifo));
    });
  });
}
