// The `explorer` command as a user runs it: a child process on the built CLI, with DATA_DIR set.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

/** Runs `explorer <args>` (with `env` besides DATA_DIR); resolves with its exit code and output whether it succeeded or not. */
export async function cli(args: string[], dataDir: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: { ...process.env, DATA_DIR: dataDir, ...env } });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}
