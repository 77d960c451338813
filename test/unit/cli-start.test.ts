// The CLI's start-up loads only what the command it runs uses: `help` and a usage error load none of the
// server's, the store's or DuckDB's modules, and `load` loads the loader. Start-up time is part of every
// command's time, so a heavy static import in src/cli/main.ts slows them all. No clock is read here: the
// child runs with a module hook that writes down every module URL it resolves, and the test reads the list.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const LOADER = new URL('../../src/snapshots/write/load.js', import.meta.url).href;
const HEAVY = ['@duckdb/node-api', 'koa', '@koa/router', 'ioredis', 'piscina', 'prom-client'];

// Runs in the hooks' own thread (Node 20); `resolve` sees every import of an ES module, static or dynamic.
const HOOKS = `import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(log, resolved.url + '\\n');
  return resolved;
}
`;
const REGISTER = `import { register } from 'node:module';
register('./hooks.mjs', import.meta.url, { data: { log: process.env.CLI_START_LOG } });
`;

/** Whether one of the resolved URLs is the package `name` (its entry or any file of it). */
const hasPackage = (urls: string[], name: string) => urls.some((u) => u.includes(`/node_modules/${name}/`));

describe('CLI start-up', () => {
  let dir: string;
  let run = 0;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cli-start-'));
    await writeFile(join(dir, 'hooks.mjs'), HOOKS);
    await writeFile(join(dir, 'register.mjs'), REGISTER);
    await mkdir(join(dir, 'node-only'));
    await symlink(process.execPath, join(dir, 'node-only', 'node'));
    await symlink('/usr/bin/dirname', join(dir, 'node-only', 'dirname'));
  });
  after(async () => { await rm(dir, { recursive: true, force: true }); });

  /** Runs `explorer <args>` under the hook; its exit code, output and the URLs it resolved. */
  async function traced(args: string[]): Promise<{ code: number; stdout: string; stderr: string; urls: string[] }> {
    const log = join(dir, `resolved-${++run}.txt`);
    await writeFile(log, '');
    const env = { ...process.env, DATA_DIR: join(dir, 'data'), CLI_START_LOG: log };
    const result = await new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
      execFile(process.execPath, ['--import', pathToFileURL(join(dir, 'register.mjs')).href, CLI, ...args], { env }, (error, stdout, stderr) => {
        done({ code: error ? (error as { code: number }).code : 0, stdout, stderr });
      });
    });
    const urls = (await readFile(log, 'utf8')).split('\n').filter(Boolean);
    return { ...result, urls };
  }

  it('help loads none of the heavy modules', async () => {
    const r = await traced(['help']);
    expect(r.code).to.equal(0);
    expect(r.stdout).to.match(/^usage: explorer <command>/);
    expect(r.urls.some((u) => u.endsWith('/src/cli/main.js')), 'the hook sees the CLI itself').to.equal(true);
    for (const name of HEAVY) expect(hasPackage(r.urls, name), name).to.equal(false);
    expect(r.urls, 'the loader').not.to.include(LOADER);
  });

  it('an unknown command loads none of the heavy modules', async () => {
    const r = await traced(['no-such-command']);
    expect(r.code).to.equal(2);
    expect(r.stderr).to.match(/^explorer: unknown command no-such-command\nusage: explorer <command>/);
    for (const name of HEAVY) expect(hasPackage(r.urls, name), name).to.equal(false);
    expect(r.urls, 'the loader').not.to.include(LOADER);
  });

  it('load loads the loader and DuckDB, not the server', async () => {
    const r = await traced(['load', join(dir, 'no-such-source')]);
    expect(r.code).to.equal(1);
    expect(r.urls, 'the loader').to.include(LOADER);
    expect(hasPackage(r.urls, '@duckdb/node-api'), '@duckdb/node-api').to.equal(true);
    for (const name of ['koa', '@koa/router', 'ioredis']) expect(hasPackage(r.urls, name), name).to.equal(false);
  });

  it('bin/explorer runs the CLI with node alone, no npm on the PATH', async () => {
    const bin = new URL('../../../bin/explorer', import.meta.url).pathname;
    // The PATH is one directory holding node and dirname alone: a call to npm would fail.
    const r = await new Promise<{ code: number; stdout: string }>((done) => {
      execFile(bin, ['help'], { env: { ...process.env, PATH: join(dir, 'node-only') } }, (error, stdout) => done({ code: error ? (error as { code: number }).code : 0, stdout }));
    });
    expect(r.code).to.equal(0);
    expect(r.stdout).to.match(/^usage: explorer <command>/);
  });

  it('token list on a single node loads neither the Redis client nor DuckDB', async () => {
    const r = await traced(['token', 'list']);
    expect(r.code, r.stderr).to.equal(0);
    for (const name of HEAVY) expect(hasPackage(r.urls, name), name).to.equal(false);
  });
});
