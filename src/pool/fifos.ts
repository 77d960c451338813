// The FIFOs that exports stream through, made in batches and reused. Node cannot make a FIFO itself, and a
// `mkfifo` process per export forked the whole server: every page the server wrote afterwards took a
// copy-on-write fault, and on this class of machine the faults and their TLB flushes cost more than the
// export (docs/performance.md, "FIFOs made in batches"). A FIFO is only a name for a pipe that each open makes anew, so
// one can serve any number of exports, one at a time.
//
// A FIFO an export holds is named after its task (`<task id>.csv`); a spare one is `spare-<n>.fifo`. So the
// directory still shows what each export holds, and a FIFO left behind by an export is still visible.
import { execFile } from 'node:child_process';
import { mkdirSync, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * FIFOs made by the first `mkfifo`: more than the exports that run at once on a default pool. Exports that
 * wait for a slot hold theirs too, so a long queue may need more: each later batch is as large as all made
 * before, so that the forks stay few however long the queue grows.
 */
const FIRST_BATCH = 16;

export const isHeldFifo = (name: string) => name.endsWith('.csv');

export class Fifos {
  private readonly spare: string[] = [];
  /** FIFOs that exist, spare or held. */
  private count = 0;
  private names = 0;
  private making: Promise<void> | undefined;

  constructor(readonly directory: string) {}

  /** Makes the first batch now, while the process is small: the one fork costs least before the caches fill. */
  warm(): void {
    if (this.spare.length === 0) this.batch().catch(() => {});
  }

  /** A FIFO for task `id`'s export, for it alone until give() or discard(). */
  async take(id: string): Promise<string> {
    while (this.spare.length === 0) await this.batch();
    const path = join(this.directory, `${id}.csv`);
    const spare = this.spare.pop()!;
    try {
      await fs.rename(spare, path);
    } catch (e) {
      this.spare.push(spare);
      throw e;
    }
    return path;
  }

  /**
   * Back for the next export. Only once both ends are closed: the read end by the caller, the write end by
   * a COPY that has returned; the next open then makes a new pipe, with nothing of the last export in it.
   */
  async give(path: string): Promise<void> {
    const spare = this.spareName();
    try {
      await fs.rename(path, spare);
      this.spare.push(spare);
    } catch {
      await this.discard(path);
    }
  }

  /** Removed instead of reused: a writer may still hold it. */
  async discard(path: string): Promise<void> {
    this.count--;
    await fs.unlink(path).catch(() => {});
  }

  /** The batch being made, or a new one: callers that find no spare share one mkfifo. */
  private batch(): Promise<void> {
    return this.making ??= this.make().finally(() => { this.making = undefined; });
  }

  private async make(): Promise<void> {
    mkdirSync(this.directory, { recursive: true });
    const names = Array.from({ length: Math.max(FIRST_BATCH, this.count) }, () => this.spareName());
    await run('mkfifo', ['-m', '600', ...names]);
    this.count += names.length;
    this.spare.push(...names);
  }

  private spareName(): string {
    return join(this.directory, `spare-${++this.names}.fifo`);
  }
}
