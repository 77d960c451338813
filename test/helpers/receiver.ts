// A notification receiver on loopback: a real HTTP server that records every request (path, headers, body,
// when it came) and answers each as `answer(request, n)` says (n counts that path's requests from 1).
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received { path: string; headers: IncomingHttpHeaders; body: string; at: number }
export interface Answer { status: number; headers?: Record<string, string>; body?: string; delayMs?: number }

export interface Receiver { url: string; received: Received[]; close(): Promise<void> }

export async function startReceiver(answer: (r: Received, n: number) => Answer = () => ({ status: 204 })): Promise<Receiver> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      const a = answer(r, received.filter((x) => x.path === r.path).length);
      setTimeout(() => {
        res.writeHead(a.status, { 'Content-Type': 'text/plain', ...a.headers });
        res.end(a.body ?? '');
      }, a.delayMs ?? 0);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
