// A root hook plugin that writes each test file's wall time, when it ended, and its CPU (the mocha worker's
// own, and what its child processes used once they ended) as a line of JSON to SUITE_CPU_LOG. The suite's
// CPU is not the sum of its files run alone: a file whose load runs until something else finishes costs
// more on a busier machine.
// Use: `SUITE_CPU_LOG=/tmp/cpu.ndjson npx mocha --require dist/test/helpers/file-cpu.js`.
import { appendFileSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { Context } from 'mocha';

const TICKS = 100; // USER_HZ, what /proc/<pid>/stat counts in

/** CPU-seconds of this process's children that ended and were waited for: cutime and cstime. */
function childrenCpu(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(fields[13]) + Number(fields[14])) / TICKS;
}

let start: { wall: number; own: NodeJS.CpuUsage; children: number } | undefined;

export const mochaHooks = {
  beforeAll(this: Context) {
    start = { wall: Date.now(), own: process.cpuUsage(), children: childrenCpu() };
  },
  afterAll(this: Context) {
    const log = process.env.SUITE_CPU_LOG;
    if (!log || !start) return;
    const own = process.cpuUsage(start.own);
    const file = this.test?.parent?.suites[0]?.file ?? this.test?.parent?.file ?? 'unknown';
    appendFileSync(log, JSON.stringify({
      file: relative(process.cwd(), file), wall: (Date.now() - start.wall) / 1000, ended: new Date().toISOString(),
      user: own.user / 1e6, system: own.system / 1e6, children: childrenCpu() - start.children,
    }) + '\n');
  },
};
