// A small HTTP(S) proxy that injects faults in front of a real server: it never answers for the API itself,
// it only refuses, fails, delays, stalls or cuts off what the server answers. `fault(n, path)` picks what the
// n-th request (from 1) to a path gets.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

/**
 * `429` (Retry-After: 1), `503`, `401`, `400` (a JSON:API error naming `type`, as an upstream without that
 * view answers), `cut` (half the body, then the connection closed), `stall` (the headers, then nothing),
 * `slow` (the whole answer, a second and a half late), `gone` (a 400 naming `snapshot`, as this service answers
 * for a snapshot it no longer keeps).
 */
export type Fault = 'pass' | '429' | '503' | '401' | '400' | 'cut' | 'stall' | 'slow' | 'gone';

/** One request as the proxy saw it: when it came and when its answer was sent (ms since the epoch). */
export interface Seen { path: string; fault: Fault; started: number; ended: number | null }

export interface FaultProxy { url: string; seen: Map<string, Fault[]>; requests: Seen[]; close(): Promise<void> }

const REFUSALS: Partial<Record<Fault, { status: number; headers?: Record<string, string>; body: unknown }>> = {
  '429': { status: 429, headers: { 'Retry-After': '1' }, body: { errors: [{ status: '429', title: 'Too many requests' }] } },
  '503': { status: 503, body: { errors: [{ status: '503', title: 'Unavailable' }] } },
  '401': { status: 401, body: { errors: [{ status: '401', title: 'Unauthorized' }] } },
  '400': { status: 400, body: { errors: [{ status: '400', title: 'Invalid type', source: { parameter: 'type' } }] } },
  gone: { status: 400, body: { errors: [{ status: '400', title: 'Invalid snapshot', source: { parameter: 'snapshot' } }] } },
};

/**
 * `tls`: a key and certificate to serve HTTPS with (the test's own CA signed them). `before(n, path)`, when
 * given, is awaited before a request is passed on: a test changes the server there, between two requests.
 */
export async function startFaultProxy(target: string, fault: (n: number, path: string) => Fault, tls?: { key: string; cert: string },
  before?: (n: number, path: string) => Promise<void>): Promise<FaultProxy> {
  const seen = new Map<string, Fault[]>();
  const requests: Seen[] = [];
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '/';
    const faults = seen.get(path) ?? [];
    const f = fault(faults.length + 1, path);
    seen.set(path, [...faults, f]);
    const request: Seen = { path, fault: f, started: Date.now(), ended: null };
    requests.push(request);
    res.once('finish', () => { request.ended = Date.now(); });
    if (f === 'slow') await new Promise((r) => setTimeout(r, 1500));
    await before?.(faults.length + 1, path);
    const refusal = REFUSALS[f];
    if (refusal) {
      res.writeHead(refusal.status, { 'Content-Type': 'application/vnd.api+json', ...refusal.headers });
      res.end(JSON.stringify(refusal.body));
      return;
    }
    let upstream: Response;
    let body: Buffer;
    try {
      upstream = await fetch(`${target}${path}`, { headers: { authorization: req.headers.authorization ?? '', accept: req.headers.accept ?? '*/*' } });
      body = Buffer.from(await upstream.arrayBuffer());
    } catch {
      // An upstream gone by the time a request comes (a test that stopped its server while its client still
      // retried) is answered as a proxy answers a lost upstream, never left as a rejection that ends the process.
      res.writeHead(502, { 'Content-Type': 'application/vnd.api+json' }).end(JSON.stringify({ errors: [{ status: '502', title: 'Bad gateway' }] }));
      return;
    }
    const headers: Record<string, string> = {};
    upstream.headers.forEach((v, k) => { if (!['content-length', 'transfer-encoding', 'connection', 'keep-alive'].includes(k)) headers[k] = v; });
    res.writeHead(upstream.status, headers);
    if (f === 'stall') { res.flushHeaders(); return; }
    if (f === 'cut') {
      // Half the body, chunked, then the connection closed without the last chunk.
      res.write(body.subarray(0, Math.floor(body.length / 2)), () => res.socket?.destroy());
      return;
    }
    res.end(body);
  };
  const server: Server = tls ? createHttpsServer(tls, handle) : createHttpServer(handle);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `${tls ? 'https://localhost' : 'http://127.0.0.1'}:${(server.address() as AddressInfo).port}`,
    seen,
    requests,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
