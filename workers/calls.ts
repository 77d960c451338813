// The DuckDB calls of this worker thread that have not settled yet. Piscina blocks an idle worker in
// Atomics.wait, where no completion of an asynchronous call is delivered, and a thread stopped while a call's
// completion is still pending takes the whole process down (docs/duckdb-in-workers.md). A task therefore
// ends only once no call it or anything else in the worker started is still running.

const pending = new Set<Promise<unknown>>();
let waiters: (() => void)[] = [];

/** `call`, counted until it settles. */
export function tracked<T>(call: Promise<T>): Promise<T> {
  pending.add(call);
  const settle = () => {
    pending.delete(call);
    if (pending.size > 0) return;
    const ready = waiters;
    waiters = [];
    for (const wake of ready) wake();
  };
  call.then(settle, settle);
  return call;
}

/** Calls started and not settled. */
export const inFlight = (): number => pending.size;

/** Settles once no tracked call is running. */
export function settled(): Promise<void> {
  if (pending.size === 0) return Promise.resolve();
  return new Promise((resolve) => waiters.push(resolve));
}
