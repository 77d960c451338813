// A tidying unit (tidy.ts) in a process of its own, started by the follower (ingest.ts) for each unit, at the
// lowest CPU priority. The follower's batches and the unit then share whatever CPU the pages leave, and the
// kernel's scheduler gives the batches the larger part whenever both want it (nice 10 against 19: about seven
// to one), so a unit of the largest organization, minutes of CPU beside busy pages, slows the batches little
// rather than taking half of the follower's time. A process of its own is also what lets the unit be charged
// its own CPU (its process's), where in the follower's it could not be told from the batches'.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { lowerPriority } from './priority.js';
import { tidyUnit, type TidyOptions, type TidyResult } from './tidy.js';

/** The priority a unit runs at: the lowest, below the follower's batches whatever INGEST_NICE is. */
export const TIDY_NICE = 19;

/** What the follower asks of a unit: tidyUnit's options that are data, for the data directory `dataDir`. */
export interface UnitJob extends Pick<TidyOptions, 'maxRows' | 'replacedShare' | 'unitRows' | 'reads' | 'memoryLimit' | 'threads' | 'maxOverlays'> {
  dataDir: string;
  /** How long the unit waits for the writer lock (LockOptions.waitMs). */
  waitMs?: number;
}

/** What the unit came to, with the CPU-seconds its process spent and the priority it ran at. */
export interface UnitOutcome {
  result: TidyResult | null;
  cpuSeconds: number;
  nice: number;
}

type Message = { done: UnitOutcome } | { error: string; cpuSeconds: number };

/**
 * Runs `job` in a child process at TIDY_NICE and resolves with its outcome; rejects when the unit failed (the
 * snapshot then answers as before: tidy.ts). `signal` stops the unit (its statement in flight interrupted).
 * A process that ended without telling what it spent is charged its wall time, which is at least its CPU on
 * the one thread it runs.
 */
export function tidyInProcess(job: UnitJob, signal?: AbortSignal): Promise<UnitOutcome> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = fork(fileURLToPath(import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let message: Message | undefined;
    const stop = () => child.kill('SIGTERM');
    signal?.addEventListener('abort', stop);
    child.on('message', (m: Message) => { message = m; });
    child.once('spawn', () => child.send(job));
    child.once('exit', (code, killed) => {
      signal?.removeEventListener('abort', stop);
      if (message && 'done' in message) resolve(message.done);
      else {
        const spent = message?.cpuSeconds ?? (performance.now() - started) / 1000;
        reject(Object.assign(new Error(message && 'error' in message ? message.error : `the tidying process ended (${killed ?? `exit code ${code}`})`), { cpuSeconds: spent }));
      }
    });
    child.once('error', (e) => { signal?.removeEventListener('abort', stop); reject(e); });
  });
}

/** The CPU-seconds a failed unit's process spent, or null when it is not known. */
export const spentBy = (e: unknown): number | null => (typeof (e as { cpuSeconds?: unknown })?.cpuSeconds === 'number' ? (e as { cpuSeconds: number }).cpuSeconds : null);

/** The child's side: one unit, its outcome sent back, then exit. A SIGTERM, or the follower gone, interrupts the unit, which leaves nothing behind. */
async function runChild(job: UnitJob): Promise<void> {
  const nice = lowerPriority(TIDY_NICE);
  const stop = new AbortController();
  process.once('SIGTERM', () => stop.abort());
  // The follower gone (killed, say): the unit stops rather than finishing for nobody beside the next follower's.
  process.once('disconnect', () => stop.abort());
  const cpu = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1e6; };
  let reply: Message;
  try {
    const result = await tidyUnit(job.dataDir, {
      maxRows: job.maxRows, replacedShare: job.replacedShare, unitRows: job.unitRows, reads: job.reads, memoryLimit: job.memoryLimit,
      threads: job.threads ?? 1, maxOverlays: job.maxOverlays, signal: stop.signal, writerLock: { waitMs: job.waitMs },
    });
    reply = { done: { result, cpuSeconds: cpu(), nice } };
  } catch (e) {
    reply = { error: (e as Error).message, cpuSeconds: cpu() };
  }
  process.send!(reply, () => process.disconnect());
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.send) {
  process.once('message', (job: UnitJob) => { void runChild(job); });
}
