// The running server's view of the snapshots: which one is current, who is using which, and switching
// to a new one (polled, so that every instance on a shared DATA_DIR follows by itself). A request takes
// a lease on the current snapshot and keeps reading that one even if another becomes current meanwhile.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log.js';
import type { AccessData } from './source-validator.js';
import { ident, type CompileTarget } from '../query/compile.js';
import { indexTable, POSITION_COLUMN } from '../catalog/catalog.js';
import {
  listSnapshotIds, pruneSnapshots, readAccess, readCurrentId, readManifest, retainedIds, snapshotPath, type Manifest,
} from './snapshot-dir.js';

import type { Attachment } from '../../workers/protocol.js';

export interface Snapshot {
  id: string;
  /** The snapshot's DuckDB file, when it has one; its views are then tables of that database. */
  attachment: Attachment | null;
  manifest: Manifest;
  access: AccessData;
  organizations: ReadonlySet<string>;
  /**
   * What the compiler needs to know of a view of this snapshot for `organization`: where its rows are (the
   * DuckDB file's table, else the Parquet file; paths are ours, never a client's), how many the organization
   * and the table have, and which serving columns and stored order the DuckDB file has.
   */
  target(view: string, organization: string): CompileTarget;
}

/** The databases a worker attaches to read `snapshots` (none for a snapshot served from Parquet). */
export const attachments = (...snapshots: Snapshot[]): Attachment[] =>
  snapshots.flatMap((s) => (s.attachment ? [s.attachment] : []));

export interface Lease {
  snapshot: Snapshot;
  release(): void;
}

export type SnapshotState =
  | { status: 'none' }
  | { status: 'ready'; snapshot: Snapshot }
  | { status: 'broken'; id: string; error: string };

async function checkDuckdb(path: string): Promise<void> {
  const handle = await fs.open(path, 'r');
  try {
    const magic = Buffer.alloc(4);
    await handle.read(magic, 0, 4, 8);
    if (magic.toString() !== 'DUCK') throw new Error(`${path} is not a DuckDB database file`);
  } finally {
    await handle.close();
  }
}

async function checkParquet(path: string): Promise<void> {
  const handle = await fs.open(path, 'r');
  try {
    const { size } = await handle.stat();
    const head = Buffer.alloc(4), tail = Buffer.alloc(4);
    await handle.read(head, 0, 4, 0);
    await handle.read(tail, 0, 4, Math.max(0, size - 4));
    if (size < 12 || head.toString() !== 'PAR1' || tail.toString() !== 'PAR1') throw new Error(`${path} is not a complete Parquet file`);
  } finally {
    await handle.close();
  }
}

export async function openSnapshot(dataDir: string, id: string): Promise<Snapshot> {
  const [manifest, access] = await Promise.all([readManifest(dataDir, id), readAccess(dataDir, id)]);
  const dir = snapshotPath(dataDir, id);
  for (const [name, size] of Object.entries(manifest.sizes ?? {})) {
    const actual = (await fs.stat(join(dir, name)).catch(() => null))?.size;
    if (actual !== size) throw new Error(`${name} is ${actual === undefined ? 'missing' : `${actual} bytes, not ${size}`}`);
  }
  const paths = new Map<string, string>();
  for (const [view, file] of Object.entries(manifest.files)) {
    const path = join(dir, file);
    await checkParquet(path);
    paths.set(view, `read_parquet('${path.replace(/'/g, "''")}')`);
  }
  let attachment: Attachment | null = null;
  if (manifest.database) {
    const path = join(dir, manifest.database);
    await checkDuckdb(path);
    // Snapshot ids are [0-9a-zA-Z-] by construction; the alias is an identifier we make, never a client's.
    // It names the file too: a compacted snapshot's file is another database than the one it replaced.
    attachment = { alias: `snapshot_${id}_${manifest.database}`.replace(/[^0-9A-Za-z]/g, '_'), path };
  }
  return {
    id,
    attachment,
    manifest,
    access,
    organizations: new Set(access.organizations),
    target(view, organization) {
      const parquet = paths.get(view);
      if (!parquet && !attachment) throw new Error(`snapshot ${id} has no file for view ${view}`);
      const csvLines = attachment ? manifest.csvLines?.[view] : undefined;
      const rows = manifest.organizationRows?.[view];
      // A table of the snapshot's DuckDB file, as the workers attach it.
      const inFile = (name: string) => `"${attachment!.alias}".${ident(name)}`;
      const table = attachment ? inFile(view) : parquet!;
      return {
        relation: table,
        ...(attachment ? (manifest.positions?.includes(view) ? { rowid: ident(POSITION_COLUMN), rowidIndexed: true } : { rowid: 'rowid' }) : {}),
        organization,
        // An organization the snapshot does not hold has no rows: key 0 is no organization's (keys start at 1).
        organizationKey: manifest.organizationKeys ? (manifest.organizationKeys[organization] ?? 0) : undefined,
        // Snapshots from before the manifest recorded them have no counts: the plan then does not rely on one.
        organizationRows: rows ? (rows[organization] ?? 0) : undefined,
        rowJson: attachment !== null && manifest.rowJson === true,
        csvLines,
        // The DuckDB files that store CSV lines store each organization's rows in the default order too.
        defaultOrderStored: csvLines !== undefined,
        ...(attachment && manifest.organizationKeys && manifest.indexes?.[view]
          ? { indexes: manifest.indexes[view]!.map((column) => ({ column, relation: inFile(indexTable(view, column)) })) }
          : {}),
      };
    },
  };
}

export class SnapshotRegistry {
  private state: SnapshotState = { status: 'none' };
  private readonly leases = new Map<string, number>();
  /** The retained snapshots' ids, oldest first (docs/history.md §1), as of the last poll. */
  private retained: string[] = [];
  /** Retained snapshots opened for history requests: immutable, so opened once. */
  private readonly opened = new Map<string, Promise<Snapshot | null>>();
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly dataDir: string,
    private readonly pollMs: number,
    private readonly logger: Logger,
    private readonly keep: number,
  ) {}

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  get current(): SnapshotState {
    return this.state;
  }

  /** How many snapshots are retained as history, as of the last poll. */
  get retainedCount(): number {
    return this.retained.length;
  }

  /** A lease on the current snapshot, or null when none is usable. Release it when the request ends. */
  acquire(): Lease | null {
    if (this.state.status !== 'ready') return null;
    return this.lease(this.state.snapshot);
  }

  /**
   * The retained snapshots that can be opened, oldest first. One that cannot (damaged, or removed since the
   * last poll) is left out and logged: history answers from the others.
   */
  async history(): Promise<Snapshot[]> {
    const ids = this.retained;
    const all = await Promise.all(ids.map((id) => this.open(id)));
    return all.filter((s): s is Snapshot => s !== null);
  }

  /** A lease on a retained snapshot, so that retention does not remove it while the request reads it. */
  lease(snapshot: Snapshot): Lease {
    this.leases.set(snapshot.id, (this.leases.get(snapshot.id) ?? 0) + 1);
    let released = false;
    return {
      snapshot,
      release: () => {
        if (released) return;
        released = true;
        const n = (this.leases.get(snapshot.id) ?? 1) - 1;
        if (n > 0) this.leases.set(snapshot.id, n);
        else this.leases.delete(snapshot.id);
      },
    };
  }

  private open(id: string): Promise<Snapshot | null> {
    if (this.state.status === 'ready' && this.state.snapshot.id === id) return Promise.resolve(this.state.snapshot);
    let opening = this.opened.get(id);
    if (!opening) {
      opening = openSnapshot(this.dataDir, id).catch((e: Error) => {
        this.logger.log('error', 'a retained snapshot cannot be opened', { snapshot: id, error: e.message });
        this.opened.delete(id); // tried again at the next request
        return null;
      });
      this.opened.set(id, opening);
    }
    return opening;
  }

  /** Re-reads CURRENT and switches when it names another snapshot. Safe to call at any time. */
  refresh(): Promise<void> {
    this.checking ??= this.check().finally(() => { this.checking = undefined; });
    return this.checking;
  }

  private async check(): Promise<void> {
    let id: string | null;
    let ids: string[];
    try {
      [id, ids] = await Promise.all([readCurrentId(this.dataDir), listSnapshotIds(this.dataDir)]);
    } catch (e) {
      this.logger.log('error', 'cannot read the current snapshot pointer', { error: (e as Error).message });
      return;
    }
    await this.switchTo(id);
    // A directory newer than CURRENT is a load between its rename and its switch: not history yet.
    const loaded = id === null ? [] : ids.filter((s) => s <= id!);
    this.retained = retainedIds(loaded, this.keep);
    for (const [old, opening] of this.opened) {
      if (!this.retained.includes(old)) this.opened.delete(old);
      // Compacted since it was opened (its manifest names another file now): opened again when next asked for.
      const path = (await opening)?.attachment?.path;
      if (path && !(await fs.stat(path).catch(() => null))) this.opened.delete(old);
    }
    if (ids.length > this.keep) {
      // Every poll, not only at a switch: a snapshot a request was reading goes once that request ends.
      const removed = await pruneSnapshots(this.dataDir, this.keep, new Set(this.leases.keys())).catch(() => []);
      if (removed.length > 0) this.logger.log('info', 'old snapshots removed', { removed });
    }
  }

  private async switchTo(id: string | null): Promise<void> {
    const shown = this.state.status === 'ready' ? this.state.snapshot.id : this.state.status === 'broken' ? this.state.id : null;
    if (id === shown) return;
    if (id === null) {
      this.state = { status: 'none' };
      return;
    }
    try {
      const snapshot = await openSnapshot(this.dataDir, id);
      this.state = { status: 'ready', snapshot };
      this.logger.log('info', 'snapshot switched', { snapshot: id, previous: shown });
    } catch (e) {
      this.state = { status: 'broken', id, error: (e as Error).message };
      this.logger.log('error', 'the current snapshot cannot be opened', { snapshot: id, error: (e as Error).message });
    }
  }
}
