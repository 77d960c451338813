// A server's hold on the files it reads. The loader rewrites and removes snapshot files while servers run
// (compaction replaces an older snapshot's DuckDB file; retention removes whole snapshots), and it cannot
// see a server's requests. So a server never hands its workers a path the loader may remove: when it opens
// a snapshot it makes its own hard link to each file it will read, under DATA_DIR/readers/<its own
// directory>, and its workers attach the link. Removing the snapshot's name then frees nothing while the
// link stands; the server unlinks it once the snapshot is neither among those it serves nor leased by a
// request (current-snapshot.ts), and a worker detaches a file whose link is gone (workers/engine.ts).
// A server that dies leaves its directory behind: the next server on the same host removes it.
//
// One link per file, however many snapshots read it: every batch snapshot shares its base's file (and the whole
// layer and older delta), and a worker keeps a file attached under the path it first attached it by. With a
// link per snapshot, that path went with the snapshot that made it (retention, every SNAPSHOT_KEEP batches), and
// each worker detached the base and attached it again cold, statements and cached blocks gone, while pages of
// organizations no batch had touched waited on it.
import { promises as fs } from 'node:fs';
import { hostname } from 'node:os';
import { basename, join } from 'node:path';
import { processAlive } from '../writer-lock.js';
import { randomSuffix } from '../snapshot-dir.js';

export const readersDir = (dataDir: string) => join(dataDir, 'readers');

/** A host name as a directory name: letters, digits and dashes. */
const hostPart = () => hostname().replace(/[^0-9A-Za-z-]/g, '-') || 'host';
const OWN = /^(.+)-(\d+)-([a-z0-9]{6})$/;

/** The directories of this process's live registries (a test runs several servers in one process). */
const live = new Set<string>();

export class Pins {
  private next = 0;
  /** The link held for each file (by device and inode), and how many pins share it. */
  private readonly links = new Map<string, { path: string; count: number }>();
  /** Each link's file, by the link's path. */
  private readonly files = new Map<string, string>();

  private constructor(readonly dir: string, private readonly linking: boolean) {}

  /**
   * This process's directory of links, after removing those of dead processes on this host (a directory
   * with this process's pid and no live registry here is a previous process's that had the same pid). Where the file system has no
   * hard links, files are read where they are and `linking` is false.
   */
  static async create(dataDir: string): Promise<Pins> {
    const root = readersDir(dataDir);
    await fs.mkdir(root, { recursive: true });
    const host = hostPart();
    const own = `${host}-${process.pid}-${randomSuffix()}`;
    for (const name of await fs.readdir(root)) {
      const m = OWN.exec(name);
      if (!m || m[1] !== host) continue; // another host's: only it knows whether its server still runs
      const pid = Number(m[2]);
      const stale = pid === process.pid ? !live.has(join(root, name)) : !processAlive(pid);
      if (stale) await fs.rm(join(root, name), { recursive: true, force: true });
    }
    const dir = join(root, own);
    await fs.mkdir(dir);
    live.add(dir);
    // Probe once: a file system without hard links (some network and FUSE mounts) serves unpinned.
    const probe = join(dir, '.probe');
    await fs.writeFile(probe, '');
    const linking = await fs.link(probe, `${probe}-link`).then(() => true, () => false);
    await fs.rm(probe, { force: true });
    await fs.rm(`${probe}-link`, { force: true });
    return new Pins(dir, linking);
  }

  /**
   * A path of this process's own to `file`, which stays readable whatever happens to `file` until each pin() that
   * returned it is matched by an unpin(). The same file (by inode) pinned again gets the same path.
   * Rejects with ENOENT when `file` is gone already (the caller reads the manifest again).
   */
  async pin(file: string): Promise<string> {
    if (!this.linking) {
      await fs.access(file);
      return file;
    }
    // Linked first, then known by the link's inode: `file` may be replaced by another between a stat and a link.
    const link = join(this.dir, `${++this.next}-${basename(file)}`);
    await fs.link(file, link);
    const { dev, ino } = await fs.stat(link);
    const key = `${dev}:${ino}`;
    const held = this.links.get(key);
    if (held) {
      held.count++;
      await fs.rm(link, { force: true });
      return held.path;
    }
    this.links.set(key, { path: link, count: 1 });
    this.files.set(link, key);
    return link;
  }

  async unpin(path: string): Promise<void> {
    const key = this.files.get(path);
    const held = key === undefined ? undefined : this.links.get(key);
    if (held && --held.count > 0) return;
    if (key !== undefined) {
      this.links.delete(key);
      this.files.delete(path);
    }
    if (path.startsWith(this.dir)) await fs.rm(path, { force: true });
  }

  /** At shutdown, once the workers have stopped. */
  async close(): Promise<void> {
    live.delete(this.dir);
    await fs.rm(this.dir, { recursive: true, force: true });
  }
}
