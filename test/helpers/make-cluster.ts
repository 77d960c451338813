// The cluster of `make cluster` (deploy/cluster.sh) driven from code, for its tests and the cluster bench:
// every port free on this machine, so that it runs beside anything else.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePorts } from './ports.js';

const run = promisify(execFile);
const ROOT = new URL('../../../', import.meta.url).pathname;

export interface MakeCluster {
  /** The environment deploy/cluster.sh runs with: the given one, the ports, and REDIS_CLUSTER for commands. */
  env: NodeJS.ProcessEnv;
  /** HAProxy's address. */
  proxy: string;
  /** The first instance's port; the others follow. */
  instancePort: number;
  /** The first Redis node's port; the other five follow. */
  redisPort: number;
  /** `deploy/cluster.sh start|stop`, with CLUSTER_INSTANCES when given. */
  run(command: 'start' | 'stop', instances?: number): Promise<{ stdout: string }>;
  /** The pid in `$DATA_DIR/cluster/<name>.pid`. */
  pid(name: string): number;
}

export async function makeCluster(dataDir: string, settings: Record<string, string> = {}): Promise<MakeCluster> {
  const port = await freePorts(1);
  const instancePort = await freePorts(3);
  const redisPort = await freePorts(6, { bus: true });
  const env = {
    ...process.env, ...settings, DATA_DIR: dataDir,
    CLUSTER_PORT: String(port), CLUSTER_INSTANCE_PORT: String(instancePort), CLUSTER_REDIS_PORT: String(redisPort),
    REDIS_CLUSTER: Array.from({ length: 6 }, (_, i) => `127.0.0.1:${redisPort + i}`).join(','),
  };
  return {
    env, proxy: `http://127.0.0.1:${port}`, instancePort, redisPort,
    run: (command, instances) => run('bash', [join(ROOT, 'deploy/cluster.sh'), command],
      { env: instances === undefined ? env : { ...env, CLUSTER_INSTANCES: String(instances) }, cwd: ROOT, timeout: 600_000 }),
    pid: (name) => Number(readFileSync(join(dataDir, 'cluster', `${name}.pid`), 'utf8')),
  };
}
