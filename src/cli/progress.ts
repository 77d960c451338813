/** A one-line progress report on stderr, rewritten in place, only when stderr is a terminal. */
export const isTty = process.stderr.isTTY;

export function progress(message: string): void {
  if (isTty) process.stderr.write(`\r\x1b[K${message}`);
}
