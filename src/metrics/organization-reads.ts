// Which organizations the servers read most, for the follower's tidying (write/tidy.ts), which writes the
// most-read organizations the deltas hold whole first: a touched organization's page costs more than an
// untouched one's only until it is tidied, and the pages that matter are the ones asked for.
//
// Each server counts the organization requests it authorizes and, every READS_FLUSH_MS, writes its scores to
// its own file under <DATA_DIR>/reads/ (a new file renamed over the old: a reader sees one whole). A score is a
// count of reads decayed by half every READS_HALF_LIFE_MS, so it follows what is read now, not what was read
// once. The follower sums the files' scores, each decayed to the time it reads them; a file not written for
// READS_STALE_MS belongs to a server that is gone and counts for nothing. No Redis: the servers and the
// follower share the data directory already, and a few KB every ten seconds is nothing to it.
import { promises as fs } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';

export const READS_DIR = 'reads';
export const READS_FLUSH_MS = 10_000;
export const READS_HALF_LIFE_MS = 10 * 60_000;
export const READS_STALE_MS = 60 * 60_000;
/** Scores below this are dropped from a file: an organization read once an hour ago is not worth carrying. */
const FLOOR = 0.01;

/** `scores` decayed over `elapsedMs`. */
export function decayed(scores: Readonly<Record<string, number>>, elapsedMs: number): Record<string, number> {
  const factor = 0.5 ** (Math.max(0, elapsedMs) / READS_HALF_LIFE_MS);
  const out: Record<string, number> = {};
  for (const [org, s] of Object.entries(scores)) if (s * factor >= FLOOR) out[org] = s * factor;
  return out;
}

interface ReadsFile { at: number; scores: Record<string, number> }

/** One server's reads of each organization, written to its own file under <dataDir>/reads/. */
export class OrganizationReads {
  private pending = new Map<string, number>();
  private scores: Record<string, number> = {};
  private at = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private readonly path: string;

  // Host, pid and a random part: two servers of one process (tests, a restart with the same pid) never share a file.
  constructor(private readonly dataDir: string, name = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`, private readonly onError: (e: Error) => void = () => undefined) {
    this.path = join(dataDir, READS_DIR, `${name.replace(/[^\w.-]/g, '_')}.json`);
  }

  record(organization: string): void {
    this.pending.set(organization, (this.pending.get(organization) ?? 0) + 1);
  }

  start(flushMs = READS_FLUSH_MS): void {
    this.timer = setInterval(() => { this.flush().catch((e: Error) => this.onError(e)); }, flushMs);
    this.timer.unref();
  }

  /** Decays the scores to `now`, adds the reads since the last flush and writes the file. */
  async flush(now = Date.now()): Promise<void> {
    const scores = decayed(this.scores, now - this.at);
    for (const [org, n] of this.pending) scores[org] = (scores[org] ?? 0) + n;
    this.pending.clear();
    this.scores = scores;
    this.at = now;
    const body: ReadsFile = { at: now, scores };
    await fs.mkdir(join(this.dataDir, READS_DIR), { recursive: true });
    const tmp = `${this.path}.tmp`;
    await fs.writeFile(tmp, JSON.stringify(body));
    await fs.rename(tmp, this.path);
  }

  /** Stops the timer and writes what is pending. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch((e: Error) => this.onError(e));
  }
}

/**
 * Every server's scores summed, each file's decayed to `now`; unreadable files count for nothing, and stale ones
 * (a server gone, or restarted under another name) are removed.
 */
export async function readScores(dataDir: string, now = Date.now()): Promise<Record<string, number>> {
  const dir = join(dataDir, READS_DIR);
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  const total: Record<string, number> = {};
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    let file: ReadsFile;
    try {
      file = JSON.parse(await fs.readFile(join(dir, name), 'utf8')) as ReadsFile;
    } catch {
      continue; // removed meanwhile, or not ours
    }
    if (typeof file?.at !== 'number' || typeof file.scores !== 'object' || file.scores === null) continue;
    if (now - file.at > READS_STALE_MS) {
      await fs.rm(join(dir, name), { force: true }).catch(() => undefined);
      continue;
    }
    for (const [org, s] of Object.entries(decayed(file.scores, now - file.at))) if (Number.isFinite(s)) total[org] = (total[org] ?? 0) + s;
  }
  return total;
}
