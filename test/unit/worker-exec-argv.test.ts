// The query pool's workers run with require() of ES modules off where Node has it on (query-pool.ts
// workerExecArgv), so that Piscina imports the worker's file instead of taking the require() path that has
// aborted the process on Node 20.20.
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { workerExecArgv } from '../../src/pool/query-pool.js';

const OFF = '--no-experimental-require-module';

describe('the query pool workers\' Node options', () => {
  it('are the process\'s own, with require() of ES modules off where Node knows the option, once', () => {
    const all = { has: () => true };
    const none = { has: () => false };
    expect(workerExecArgv([], all)).to.deep.equal([OFF]);
    expect(workerExecArgv(['--enable-source-maps'], all)).to.deep.equal(['--enable-source-maps', OFF]);
    expect(workerExecArgv([OFF], all)).to.deep.equal([OFF]);
    expect(workerExecArgv(['--enable-source-maps'], none)).to.deep.equal(['--enable-source-maps']);
  });

  it('make require() of an ES module fail in a worker on this Node, so that Piscina imports it', async () => {
    // A Node without the option loads ES modules by import alone: nothing to turn off, and it is not passed.
    if (!process.allowedNodeEnvironmentFlags.has(OFF)) {
      expect(workerExecArgv()).to.not.include(OFF);
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'explorer-require-esm-'));
    try {
      writeFileSync(join(dir, 'module.mjs'), 'export default function handler() { return 1; }\n');
      writeFileSync(join(dir, 'probe.cjs'), `const { parentPort } = require('node:worker_threads');
try { require(${JSON.stringify(join(dir, 'module.mjs'))}); parentPort.postMessage('required'); } catch (e) { parentPort.postMessage(e.code); }\n`);
      const outcome = await new Promise<string>((resolve, reject) => {
        const worker = new Worker(join(dir, 'probe.cjs'), { execArgv: workerExecArgv() });
        worker.once('message', (m: string) => { resolve(m); void worker.terminate(); });
        worker.once('error', reject);
      });
      expect(outcome).to.equal('ERR_REQUIRE_ESM');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
