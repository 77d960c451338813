// Free loopback ports, for the servers the tests and the bench start.
import { readFileSync } from 'node:fs';
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

/** The first port of the kernel's ephemeral range (Linux's default: 32768). */
function ephemeralLow(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * The first of `count` consecutive ports free on 127.0.0.1 now (make cluster numbers its processes' ports
 * from one). With `bus`, for Redis Cluster nodes, each port's bus port (the port + 10000) is free too. Every
 * port lies below the kernel's ephemeral range, where a port found free stays free until a listener takes it;
 * in that range an outgoing connection may take it first. (A shared cluster whose node on 39756, bus 49756, both
 * in the range, never answered failed six of the suite's hooks once.)
 */
export async function freePorts(count: number, opts: { bus?: boolean } = {}): Promise<number> {
  const lowest = 10_000;
  const above = Math.min(ephemeralLow(), 65_536) - count - (opts.bus ? BUS_OFFSET : 0) - lowest;
  for (;;) {
    // A host whose ephemeral range starts too low to leave room below it: anywhere, as before.
    const base = above > 1_000 ? lowest + Math.floor(Math.random() * above) : 20_000 + Math.floor(Math.random() * 30_000);
    let ok = true;
    for (let p = base; p < base + count && ok; p++) ok = await free(p) && (!opts.bus || await free(p + BUS_OFFSET));
    if (ok) return base;
  }
}
