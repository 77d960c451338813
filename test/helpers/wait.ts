/** Polls `check` until it holds; fails the test after `timeoutMs`. */
export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} not reached within ${timeoutMs} ms`);
}
