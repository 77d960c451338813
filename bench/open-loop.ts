// A load sent on schedule (an open loop): the i-th request of a kind is due at start + i ÷ its rate and is
// sent then, whether or not the ones before it have answered, and its latency counts from when it was due.
// A closed loop (autocannon) waits for each answer before its next request, so a server that falls behind
// slows the load instead of showing its queue in the latencies; users who are sized for do not wait for each
// other. Requests go over a keep-alive agent; past its sockets they queue in the client, still timed from
// when they were due.
import { request } from 'node:http';
import { keptAgent } from '../test/helpers/kept-agent.js';

export interface OpenLoopKind {
  name: string;
  /** Requests a second. */
  rate: number;
  /** The next request of this kind: its path and headers. */
  next: () => { path: string; headers: Record<string, string> };
}

/**
 * One answer: its kind, milliseconds from when it was due to its last byte, and its status (0: no answer, then
 * `error` says what the client saw instead: the socket error's code, or its message).
 */
export interface OpenLoopAnswer { kind: string; due: number; ms: number; status: number; error?: string }

/**
 * Sends each kind at its rate for `seconds` against `base` (http://host:port), calling `onAnswer` for each
 * answer as it comes; resolves once every request sent has answered or failed (`timeoutMs` each).
 */
export async function openLoop(base: string, kinds: readonly OpenLoopKind[], seconds: number,
  onAnswer: (a: OpenLoopAnswer) => void, timeoutMs = 60_000): Promise<void> {
  const agent = keptAgent(512);
  const url = new URL(base);
  const start = performance.now();
  const end = start + seconds * 1000;
  const sent = kinds.map(() => 0);
  const pending = new Set<Promise<void>>();
  const send = (kind: OpenLoopKind, due: number) => {
    const { path, headers } = kind.next();
    const done = new Promise<void>((resolve) => {
      let finished = false;
      const finish = (status: number, e?: Error) => {
        if (finished) return;
        finished = true;
        onAnswer({ kind: kind.name, due, ms: performance.now() - due, status, ...(e ? { error: (e as NodeJS.ErrnoException).code ?? e.message } : {}) });
        resolve();
      };
      const req = request({ host: url.hostname, port: url.port, path, headers, agent }, (res) => {
        res.resume();
        res.on('end', () => finish(res.statusCode ?? 0));
        res.on('error', (e) => finish(0, e));
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error('timed out')));
      req.on('error', (e) => finish(0, e));
      req.end();
    });
    pending.add(done);
    void done.then(() => pending.delete(done));
  };
  // A tick every few milliseconds sends whatever has come due since the last one, each timed from its own due time.
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      kinds.forEach((kind, k) => {
        for (let due = start + (sent[k]! * 1000) / kind.rate; due <= now && due < end; due = start + (sent[k]! * 1000) / kind.rate) {
          sent[k]!++;
          send(kind, due);
        }
      });
      if (now >= end) { clearInterval(timer); resolve(); }
    };
    const timer = setInterval(tick, 2);
  });
  while (pending.size > 0) await Promise.all([...pending]);
  agent.destroy();
}
