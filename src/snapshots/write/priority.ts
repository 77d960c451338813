// A writer's CPU priority (nice), lowered so that the servers on the same cores keep their pages' pace: the
// follower's (INGEST_NICE), and below it a tidying unit's (tidy-process.ts).
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * Lowers this process's priority to `nice` (never raises it) and returns the priority it then has. On Linux a
 * priority is a thread's, and new threads (DuckDB's, libuv's) take their creator's: every thread of the
 * process now is set, before DuckDB starts any.
 */
export function lowerPriority(nice: number): number {
  let tids: number[] = [];
  try { tids = readdirSync('/proc/self/task').map(Number); } catch { /* not Linux: the process's priority */ }
  for (const tid of tids.length > 0 ? tids : [0]) {
    try {
      if (getPriority(tid) < nice) setPriority(tid, nice);
    } catch { /* a thread gone meanwhile, or no permission to change it */ }
  }
  return getPriority();
}
