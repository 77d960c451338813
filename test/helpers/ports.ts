// Free loopback ports, for the servers the tests and the bench start.
import { createServer } from 'node:net';

/** A port free on 127.0.0.1 now (the kernel's choice). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** The first of `count` consecutive ports free on 127.0.0.1 now (make cluster numbers its processes' ports from one). */
export async function freePorts(count: number): Promise<number> {
  const free = (port: number) => new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    let ok = true;
    for (let p = base; p < base + count && ok; p++) ok = await free(p);
    if (ok) return base;
  }
}
