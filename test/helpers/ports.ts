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

const free = (port: number) => new Promise<boolean>((resolve) => {
  const s = createServer();
  s.once('error', () => resolve(false));
  s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
});

/** Redis Cluster's bus port is its port + this. */
const BUS_OFFSET = 10_000;

/** A port free on 127.0.0.1 whose Redis Cluster bus port is free too (see freePorts). */
export const freeClusterPort = () => freePorts(1, { bus: true });

/**
 * The first of `count` consecutive ports free on 127.0.0.1 now (make cluster numbers its processes' ports
 * from one). With `bus`, for Redis Cluster nodes, each port's bus port (the port + 10000) is free too: a
 * port from the system's ephemeral range may have its bus port taken, or past 65535, and the node then never starts.
 */
export async function freePorts(count: number, opts: { bus?: boolean } = {}): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    let ok = true;
    for (let p = base; p < base + count && ok; p++) ok = await free(p) && (!opts.bus || await free(p + BUS_OFFSET));
    if (ok) return base;
  }
}
