// The audit log: one JSON line per request that must be accounted for (every request of an auditor token),
// appended whole. Each line is one write to a file opened for appending, so lines from concurrent requests
// never interleave and a process killed mid-request leaves whole lines only; writes are chained, so lines
// come in the order requests completed. A log that cannot be written makes the requests that need it
// answer 503 (http/middleware/audit.ts), never an unlogged answer.
import { promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';

export interface AuditLog {
  /** Why the log cannot be written, or null while it can. */
  readonly broken: string | null;
  /** Appends one line; resolves once it is written (a failure marks the log broken). */
  append(entry: Record<string, unknown>): Promise<void>;
  close(): Promise<void>;
}

/** Opens `target` for appending (`-`: standard output). Never throws: a log that cannot be opened is broken. */
export async function openAuditLog(target: string): Promise<AuditLog> {
  let broken: string | null = null;
  let handle: FileHandle | null = null;
  if (target !== '-') {
    try {
      await fs.mkdir(dirname(target), { recursive: true });
      handle = await fs.open(target, 'a', 0o600);
    } catch (e) {
      broken = `${target}: ${(e as Error).message}`;
    }
  }
  let chain: Promise<void> = Promise.resolve();
  const write = async (line: Buffer) => {
    if (target === '-') {
      await new Promise<void>((resolve, reject) => process.stdout.write(line, (e) => (e ? reject(e) : resolve())));
      return;
    }
    const { bytesWritten } = await handle!.write(line);
    if (bytesWritten !== line.length) throw new Error(`${target}: wrote ${bytesWritten} of ${line.length} bytes`);
  };
  return {
    get broken() { return broken; },
    append(entry) {
      const line = Buffer.from(`${JSON.stringify(entry)}\n`);
      chain = chain.then(async () => {
        if (broken !== null) throw new Error(broken);
        try { await write(line); } catch (e) { broken = (e as Error).message; throw e; }
      });
      return chain;
    },
    async close() {
      await chain.catch(() => undefined);
      await handle?.close();
    },
  };
}
