// A real Redis Cluster for tests: three primaries and three replicas of Debian's redis-server on loopback,
// joined by `redis-cli --cluster create`. Most suites share one cluster for the whole run
// (`sharedTestCluster`, stopped when the test process exits); a suite that kills nodes starts its own.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster } from 'ioredis';
import { freeClusterPort } from './ports.js';
import { ping } from './redis.js';

const run = promisify(execFile);

export interface ClusterNode {
  port: number;
  process: ChildProcess;
}

export interface TestRedisCluster {
  /** REDIS_CLUSTER's value: every node, host:port, comma separated. */
  nodes: string;
  /** A key prefix unique to this caller, for REDIS_PREFIX. */
  prefix: string;
  /** The environment a server or command needs to use the cluster. */
  env: Record<string, string>;
  /** A cluster client (the caller disconnects it). */
  connect(): Cluster;
  /** The port of the primary serving `key`'s slot. */
  primaryOf(key: string): Promise<number>;
  /** The port of a replica of the primary on `port`. */
  replicaOf(port: number): Promise<number>;
  /** SIGKILL of the node on `port`. */
  kill(port: number): void;
  /** SIGSTOP and SIGCONT of the node on `port`: it stops answering without its peers counting it failed (briefly). */
  pause(port: number): void;
  resume(port: number): void;
  /** Resolves once every slot is served by a live primary again. */
  healthy(timeoutMs: number): Promise<void>;
  /**
   * Starts again every node that was killed (it comes back empty and rejoins as a replica of the node that
   * took its slots), and resolves once the cluster is healthy and every primary has a replica linked.
   */
  revive(): Promise<void>;
  /** CONFIG SET on every live node. */
  configure(name: string, value: string): Promise<void>;
  close(): Promise<void>;
}

const cli = (port: number, ...args: string[]) => run('redis-cli', ['-p', String(port), ...args], { timeout: 10_000 }).then((r) => r.stdout);

export async function startTestRedisCluster(opts: { nodeTimeoutMs?: number } = {}): Promise<TestRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'explorer-redis-cluster-'));
  const ports: number[] = [];
  while (ports.length < 6) {
    const p = await freeClusterPort();
    if (!ports.includes(p)) ports.push(p);
  }
  const nodes = new Map<number, ClusterNode>();
  const start = (port: number) => {
    const home = join(dir, String(port));
    mkdirSync(home, { recursive: true });
    const child = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--dir', home, '--save', '', '--appendonly', 'no',
      '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 2000),
      '--cluster-require-full-coverage', 'no', '--daemonize', 'no', '--loglevel', 'warning',
      // A replica's first sync starts at once: by default a primary waits five seconds for more replicas
      // to share one transfer, and a primary here has only one.
      '--repl-diskless-sync-delay', '0',
    ], { stdio: 'ignore' });
    nodes.set(port, { port, process: child });
  };
  for (const port of ports) start(port);
  const stopAll = () => { for (const n of nodes.values()) if (n.process.exitCode === null) n.process.kill('SIGKILL'); };
  try {
    for (const port of ports) await ping(port);
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { timeout: 30_000 });
  } catch (e) {
    // A node that exited (its port taken, say) is named with how it ended.
    const ended = [...nodes.values()].filter((n) => n.process.exitCode !== null || n.process.signalCode !== null).map((n) => `${n.port} (${n.process.exitCode ?? n.process.signalCode})`);
    stopAll();
    rmSync(dir, { recursive: true, force: true });
    throw ended.length > 0 ? new Error(`${(e as Error).message}; nodes that exited: ${ended.join(', ')}`) : e;
  }
  const live = () => [...nodes.values()].filter((n) => n.process.exitCode === null && n.process.signalCode === null).map((n) => n.port);
  const cluster: TestRedisCluster = {
    nodes: ports.map((p) => `127.0.0.1:${p}`).join(','),
    prefix: `explorer-test-${randomUUID().slice(0, 8)}:`,
    get env() { return { REDIS_CLUSTER: this.nodes, REDIS_PREFIX: this.prefix }; },
    connect: () => new Cluster(ports.map((port) => ({ host: '127.0.0.1', port }))),
    async primaryOf(key) {
      const slot = Number((await cli(live()[0]!, 'cluster', 'keyslot', key)).trim());
      for (const line of (await cli(live()[0]!, 'cluster', 'nodes')).trim().split('\n')) {
        const [, address, flags, , , , , state, ...ranges] = line.split(' ');
        if (!flags!.split(',').includes('master') || flags!.includes('fail') || state !== 'connected') continue;
        for (const range of ranges) {
          const [from, to = from] = range.split('-').map(Number);
          if (slot >= from! && slot <= to!) return Number(address!.split('@')[0]!.split(':')[1]);
        }
      }
      throw new Error(`no live primary serves slot ${slot}`);
    },
    async replicaOf(port) {
      // From the primary's replication, not the cluster's gossip, which may not list a new replica yet.
      const m = /slave\d+:ip=[^,]+,port=(\d+),state=online/.exec(await cli(port, 'info', 'replication'));
      if (!m) throw new Error(`the primary on ${port} has no replica online`);
      return Number(m[1]);
    },
    kill(port) {
      nodes.get(port)!.process.kill('SIGKILL');
    },
    pause(port) {
      nodes.get(port)!.process.kill('SIGSTOP');
    },
    resume(port) {
      nodes.get(port)!.process.kill('SIGCONT');
    },
    async healthy(timeoutMs) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const info = await cli(live()[0]!, 'cluster', 'info').catch(() => '');
        if (/cluster_state:ok/.test(info) && /cluster_slots_ok:16384/.test(info)) return;
        if (Date.now() > until) throw new Error(`the cluster did not heal within ${timeoutMs} ms:\n${info}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async revive() {
      const dead = ports.filter((p) => !live().includes(p));
      for (const port of dead) start(port);
      for (const port of dead) await ping(port);
      await cluster.healthy(20_000);
      await replicating(20_000);
    },
    async configure(name, value) {
      for (const port of live()) {
        const answer = (await cli(port, 'config', 'set', name, value)).trim();
        if (answer !== 'OK') throw new Error(`CONFIG SET ${name} ${value} on ${port}: ${answer}`);
      }
    },
    async close() {
      stopAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  /** Every replica linked to its primary, so that a write's WAIT finds one from the start. */
  async function replicating(timeoutMs: number) {
    const until = Date.now() + timeoutMs;
    for (const port of live()) {
      for (;;) {
        const info = await cli(port, 'info', 'replication');
        if (/role:master/.test(info) ? /connected_slaves:[1-9]/.test(info) : /master_link_status:up/.test(info)) break;
        if (Date.now() > until) throw new Error(`redis ${port} not replicating:\n${info}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
  await cluster.healthy(20_000);
  await replicating(20_000);
  return cluster;
}

let shared: Promise<TestRedisCluster> | undefined;

/**
 * One cluster for every suite of the test process that only reads and writes (each caller takes its own key
 * prefix: `withPrefix`). Started at first use, killed when the process exits.
 */
export function sharedTestCluster(): Promise<TestRedisCluster> {
  if (!shared) {
    shared = startTestRedisCluster();
    shared.then((c) => process.once('exit', () => { void c.close(); }), () => undefined);
  }
  return shared.then((c) => withPrefix(c));
}

/** The same cluster under a fresh key prefix. */
export function withPrefix(c: TestRedisCluster): TestRedisCluster {
  const prefix = `explorer-test-${randomUUID().slice(0, 8)}:`;
  return { ...c, prefix, get env() { return { REDIS_CLUSTER: c.nodes, REDIS_PREFIX: prefix }; }, async close() { /* shared: stopped at exit */ } };
}
