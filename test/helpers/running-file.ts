// Names the test file a mocha worker process was running when it died. Mocha runs files in worker processes
// and reports a file's tests only once it ends, so a process killed by a signal (SIGABRT from native code)
// leaves just "Workerpool Worker terminated Unexpectedly" and no name. Each worker records the file it is
// running in a directory named for the main mocha process; the main process's teardown reports what is left.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Context } from 'mocha';

const directoryOf = (mochaPid: number) => join(tmpdir(), `explorer-mocha-running-${mochaPid}`);
const entry = () => join(directoryOf(process.ppid), String(process.pid));

export const mochaHooks = {
  beforeAll(this: Context) {
    const file = this.test?.parent?.suites[0]?.file ?? this.test?.parent?.file ?? 'unknown';
    mkdirSync(directoryOf(process.ppid), { recursive: true });
    writeFileSync(entry(), relative(process.cwd(), file));
  },
  afterAll() {
    rmSync(entry(), { force: true });
  },
};

export function mochaGlobalTeardown(): void {
  const dir = directoryOf(process.pid);
  let left: string[] = [];
  try {
    left = readdirSync(dir);
  } catch {
    return; // no worker process ran a file (a serial run records nothing here)
  }
  for (const pid of left) {
    console.error(`mocha worker process ${pid} ended while running ${readFileSync(join(dir, pid), 'utf8')}`);
  }
  rmSync(dir, { recursive: true, force: true });
}
