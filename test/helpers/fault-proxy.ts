// A small HTTP proxy that injects faults in front of a real server: it never answers for the API itself, it
// only refuses, fails or cuts off what the server answers. `fault(n, path)` picks what the n-th request (from
// 1) to a path gets.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault = 'pass' | '429' | '503' | 'cut';

export interface FaultProxy { url: string; seen: Map<string, Fault[]>; close(): Promise<void> }

export async function startFaultProxy(target: string, fault: (n: number, path: string) => Fault): Promise<FaultProxy> {
  const seen = new Map<string, Fault[]>();
  const server: Server = createServer(async (req, res) => {
    const path = req.url ?? '/';
    const faults = seen.get(path) ?? [];
    const f = fault(faults.length + 1, path);
    seen.set(path, [...faults, f]);
    if (f === '429') { res.writeHead(429, { 'Retry-After': '1', 'Content-Type': 'application/vnd.api+json' }); res.end('{"errors":[{"status":"429"}]}'); return; }
    if (f === '503') { res.writeHead(503, { 'Content-Type': 'application/vnd.api+json' }); res.end('{"errors":[{"status":"503"}]}'); return; }
    const upstream = await fetch(`${target}${path}`, { headers: { authorization: req.headers.authorization ?? '' } });
    const body = Buffer.from(await upstream.arrayBuffer());
    const headers: Record<string, string> = {};
    upstream.headers.forEach((v, k) => { if (!['content-length', 'transfer-encoding', 'connection', 'keep-alive'].includes(k)) headers[k] = v; });
    res.writeHead(upstream.status, headers);
    if (f === 'cut') {
      // Half the body, chunked, then the connection closed without the last chunk.
      res.write(body.subarray(0, Math.floor(body.length / 2)), () => res.socket?.destroy());
      return;
    }
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
