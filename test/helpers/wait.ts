/** Polls `check` until it holds; fails the test after `timeoutMs`. */
export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} not reached within ${timeoutMs} ms`);
}

/** `p`, or an error naming `what` once `timeoutMs` have passed: a step that hangs then says which it was. */
export function within<T>(timeoutMs: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} not done within ${timeoutMs} ms`)), timeoutMs); });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
