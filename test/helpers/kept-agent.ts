// The benches' and tests' keep-alive agent. The server closes a connection idle for 5 s and says so (`Keep-Alive:
// timeout=5`); Node's agent leaves an idle socket a second before that hint only when it has a timeout of its
// own, and without one keeps it until the server closes it, so a request sent on it at that moment fails with
// ECONNRESET, which a bench or a test would count as the server's error. The timeout given here is never reached by
// an idle socket (the hint's 4 s is shorter); on a socket in use it only emits 'timeout', which nothing
// here listens to, so a long export is not cut off.
import { Agent } from 'node:http';

export const keptAgent = (maxSockets: number): Agent => new Agent({ keepAlive: true, maxSockets, timeout: 60_000 });
