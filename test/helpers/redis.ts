// A real Redis for tests: REDIS_URL when the environment gives one (each caller gets its own key prefix),
// otherwise a private redis-server on a free loopback port, started for the test run and stopped after.
// `persistent` servers write an append-only file so that a restart keeps their data (outage tests).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import { freePort } from './ports.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestRedis {
  url: string;
  /** A key prefix unique to this caller, for REDIS_PREFIX. */
  prefix: string;
  /** True when this helper runs the server (so it can stop and restart it). */
  owned: boolean;
  stop(): Promise<void>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Resolves when a PING gets PONG. */
export async function ping(port: number, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = new Socket();
      socket.setTimeout(500, () => { socket.destroy(); resolve(false); });
      socket.once('error', () => resolve(false));
      socket.connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
      socket.once('data', (d) => { socket.destroy(); resolve(d.toString().startsWith('+PONG')); });
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis-server on port ${port} did not answer`);
}

export async function startTestRedis(opts: { persistent?: boolean } = {}): Promise<TestRedis> {
  const prefix = `explorer-test-${randomUUID().slice(0, 8)}:`;
  if (process.env.REDIS_URL && !opts.persistent) {
    return { url: process.env.REDIS_URL, prefix, owned: false, async stop() { throw new Error('not owned'); }, async restart() { throw new Error('not owned'); }, async close() {} };
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'explorer-redis-'));
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir,
      '--appendonly', opts.persistent ? 'yes' : 'no', '--appendfsync', 'always', '--daemonize', 'no', '--loglevel', 'warning',
    ], { stdio: 'ignore' });
    await ping(port);
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    prefix,
    owned: true,
    stop,
    restart: start,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
