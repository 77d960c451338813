// What a directory takes on disk, for the bounds the stream's test and benches hold the data directory to.
// Counted from the blocks the files occupy (FIEMAP, read by e2fsprogs' filefrag), each block once: a file
// linked by several snapshots, or a delta cloned from the one before on a filesystem that shares blocks
// (XFS, btrfs), costs the disk what it does not share. `du` counts a clone's shared blocks once per file.
import { execFileSync } from 'node:child_process';
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Every regular file under `path`, one path per inode, depth first in name order. */
export function filesUnder(path: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  const walk = (p: string) => {
    let st;
    try { st = lstatSync(p); } catch { return; } // gone meanwhile: a writer renaming its temporary files
    if (st.isDirectory()) {
      let names: string[] = [];
      try { names = readdirSync(p).sort(); } catch { /* gone meanwhile */ }
      for (const n of names) walk(join(p, n));
    } else if (st.isFile() && !seen.has(`${st.dev}:${st.ino}`)) {
      seen.add(`${st.dev}:${st.ino}`);
      out.push(p);
    }
  };
  walk(path);
  return out;
}

interface Extents { blockSize: number; ranges: Array<[number, number]>; unplaced: number }

/** The physical block ranges of each file (filefrag -v); null for a file it could not map. */
function extentsOf(files: string[]): Map<string, Extents | null> {
  const out = new Map<string, Extents | null>(files.map((f) => [f, null]));
  for (let i = 0; i < files.length; i += 200) {
    const chunk = files.slice(i, i + 200);
    let text: string;
    try {
      text = execFileSync('filefrag', ['-v', ...chunk], { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
    } catch (e) {
      // filefrag exits non-zero when a file it was given is gone; what it printed of the others stands.
      text = String((e as { stdout?: Buffer }).stdout ?? '');
    }
    let current: Extents | null = null;
    let name = '';
    for (const line of text.split('\n')) {
      const head = /^File size of (.*) is \d+ \(\d+ blocks? of (\d+) bytes\)/.exec(line);
      if (head) { name = head[1]!; current = { blockSize: Number(head[2]), ranges: [], unplaced: 0 }; continue; }
      const ext = /^\s*\d+:\s+\d+\.\.\s*\d+:\s+(\d+)\.\.\s*(\d+):\s+(\d+):.*?(\S*)$/.exec(line);
      if (ext && current) {
        // An extent not yet placed (delayed allocation) has no address to share: counted as its length.
        if (/unknown_loc|delalloc/.test(line)) current.unplaced += Number(ext[3]);
        else current.ranges.push([Number(ext[1]), Number(ext[2]) + 1]);
        continue;
      }
      if (current && line.startsWith(`${name}: `) && / extents? found$/.test(line) && out.has(name)) { out.set(name, current); current = null; }
    }
  }
  return out;
}

/**
 * The bytes each of `files` adds on disk, in order: its blocks that no file before it in the list holds. A file
 * filefrag cannot map (a filesystem without FIEMAP, or gone meanwhile) counts its allocated blocks.
 */
export function newBytesOf(files: string[]): number[] {
  const extents = extentsOf(files);
  // Every range with the rank of its file, swept in address order: each stretch of blocks goes to the
  // lowest-ranked file that holds it.
  const events: Array<[number, number, number]> = []; // [address, +1 start / -1 end, rank]
  const bytes = files.map(() => 0);
  let blockSize = 4096;
  files.forEach((f, rank) => {
    const e = extents.get(f);
    if (!e) {
      try { bytes[rank] = lstatSync(f).blocks * 512; } catch { /* gone meanwhile */ }
      return;
    }
    blockSize = e.blockSize;
    bytes[rank] = e.unplaced * e.blockSize;
    for (const [from, to] of e.ranges) events.push([from, 1, rank], [to, -1, rank]);
  });
  events.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const active = new Map<number, number>();
  let at = 0;
  for (const [address, kind, rank] of events) {
    if (active.size > 0 && address > at) {
      const owner = Math.min(...active.keys());
      bytes[owner]! += (address - at) * blockSize;
    }
    at = address;
    const n = (active.get(rank) ?? 0) + kind;
    if (n === 0) active.delete(rank);
    else active.set(rank, n);
  }
  return bytes;
}

/** KB the files under `path` take on disk, each block once however many files hold it. */
export function diskKb(path: string): number {
  return Math.round(newBytesOf(filesUnder(path)).reduce((a, b) => a + b, 0) / 1024);
}
