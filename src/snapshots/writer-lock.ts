// One writer changes a DATA_DIR's snapshots at a time: a load's switch, pruning and compaction never
// interleave with another load's, nor with a server's pruning. The lock is a file (DATA_DIR/snapshots/WRITER) naming
// its holder, which appears whole or not at all (acquireWriterLock). A holder that died on this host is noticed
// by its pid and its lock taken over; another host's is
// never judged from here (a DATA_DIR shared over the network): remove its lock by hand once it is gone.
import { promises as fs } from 'node:fs';
import { hostname } from 'node:os';
import { basename, join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { snapshotsDir } from './snapshot-dir.js';

export interface Holder {
  host: string;
  pid: number;
  /** What holds it: `load`, `compaction`, … */
  what: string;
  /** When it took the lock, ISO 8601. */
  since: string;
}

export class WriterBusyError extends Error {
  constructor(readonly holder: Holder | null) {
    super(holder
      ? `the data directory is being written by ${holder.what} (pid ${holder.pid} on ${holder.host}, since ${holder.since}); try again when it has finished`
      : 'the data directory is being written by another process; try again when it has finished');
    this.name = 'WriterBusyError';
  }
}

/** How long a writer waits for another before it gives up, unless told otherwise (WRITER_WAIT_MS). */
export const DEFAULT_WRITER_WAIT_MS = 600_000;

export const writerLockPath = (dataDir: string) => join(snapshotsDir(dataDir), 'WRITER');

/** Whether process `pid` runs on this host (one we may not signal runs too). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readHolder(path: string): Promise<Holder | null> {
  try {
    return JSON.parse(await fs.readFile(path, 'utf8')) as Holder;
  } catch {
    return null; // gone meanwhile, or being written: judged again at the next try
  }
}

export interface LockOptions {
  /** How long to wait for another writer before giving up (WriterBusyError); 0 tries once. */
  waitMs?: number;
  /** Told once when the lock is held by another, with who holds it. */
  onWait?: (holder: Holder | null) => void;
}

/**
 * A lock that names no holder (empty or cut short) older than this is taken over: no writer of this code
 * leaves one (the lock appears whole or not at all), but one written in place by an older version and cut
 * by a kill between the file's creation and its content would otherwise keep every writer waiting.
 */
export const UNNAMED_LOCK_MS = 30_000;

/** This host, in the names of the files a writer of it writes beside the lock. */
const HOST_TAG = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);

/** Takes the writer lock, waiting for another writer at most `waitMs`; returns its release. */
export async function acquireWriterLock(dataDir: string, what: string, opts: LockOptions = {}): Promise<() => Promise<void>> {
  const path = writerLockPath(dataDir);
  await fs.mkdir(snapshotsDir(dataDir), { recursive: true });
  await removeDeadDrafts(dataDir);
  const me: Holder = { host: hostname(), pid: process.pid, what, since: new Date().toISOString() };
  const deadline = Date.now() + (opts.waitMs ?? 0);
  let told = false;
  // The lock is written whole under a name of this writer's own, then linked into place, which fails if a
  // lock is there: it appears with its holder named or not at all. Created in place and then written, a kill
  // between the two left an empty lock that named no one, and every writer after it waited its whole wait.
  const draft = `${path}.${HOST_TAG}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await fs.writeFile(draft, JSON.stringify(me));
  try {
    for (;;) {
      try {
        await fs.link(draft, path);
        let released = false;
        return async () => {
          if (released) return;
          released = true;
          await fs.rm(path, { force: true });
        };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      const holder = await readHolder(path);
      const dead = holder ? holder.host === me.host && !processAlive(holder.pid)
        : Date.now() - ((await fs.stat(path).catch(() => null))?.mtimeMs ?? Date.now()) > UNNAMED_LOCK_MS;
      if (dead) {
        // Its holder died (kill -9, a crash): take it over. Renamed away first, so that of two writers that
        // both found it stale only one removes it; the other finds the new holder's lock and waits.
        const stale = `${path}.stale-${randomBytes(4).toString('hex')}`;
        if (await fs.rename(path, stale).then(() => true, () => false)) {
          const moved = await readHolder(stale);
          if (holder ? moved?.pid === holder.pid && moved.since === holder.since : moved === null) await fs.rm(stale, { force: true });
          else {
            // Not the lock it judged (taken over and retaken meanwhile): put it back unless yet another exists.
            await fs.link(stale, path).catch(() => {});
            await fs.rm(stale, { force: true });
          }
        }
        continue;
      }
      if (Date.now() >= deadline) throw new WriterBusyError(holder);
      if (!told) {
        told = true;
        opts.onWait?.(holder);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await fs.rm(draft, { force: true });
  }
}

/** The drafts of writers of this host that died before they removed them (a kill while taking the lock). */
async function removeDeadDrafts(dataDir: string): Promise<void> {
  const prefix = `${basename(writerLockPath(dataDir))}.${HOST_TAG}.`;
  for (const name of await fs.readdir(snapshotsDir(dataDir)).catch(() => [] as string[])) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(name.slice(prefix.length).split('.')[0]);
    if (Number.isInteger(pid) && pid > 0 && !processAlive(pid)) await fs.rm(join(snapshotsDir(dataDir), name), { force: true });
  }
}

/** Runs `body` holding the writer lock. */
export async function withWriterLock<T>(dataDir: string, what: string, opts: LockOptions, body: () => Promise<T>): Promise<T> {
  const release = await acquireWriterLock(dataDir, what, opts);
  try {
    return await body();
  } finally {
    await release();
  }
}
