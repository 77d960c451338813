// One DuckDB instance of a worker, the snapshot databases it has attached, and its kept connections.
// Snapshots are attached once per instance, serialized, and detached when idle and no longer among the
// `attachedMax` most recently attached (history reads up to SNAPSHOT_KEEP of them at once; pages read one).
import type { DuckDBInstance } from '@duckdb/node-api';
import { existsSync } from 'node:fs';
import { openServingInstance } from '../src/duckdb/open-instance.js';
import type { Attachment } from './protocol.js';
import { Slots } from './slots.js';
import { tracked } from './calls.js';
import { sqlLiteral } from '../src/duckdb/sql.js';

export interface Attached { ready: Promise<void>; running: number; order: number; path: string }

export class Engine {
  readonly slots = new Slots();
  private instance: Promise<DuckDBInstance> | undefined;
  private readonly attached = new Map<string, Attached>();
  /** Aliases being detached: attached again only once DuckDB has let the name go. */
  private readonly detaching = new Map<string, Promise<void>>();
  private attachOrder = 0;

  constructor(private readonly settings: Record<string, string>, private readonly attachedMax: number) {}

  /** The instance, opened on first use; a failed start is retried by the next task. */
  database(): Promise<DuckDBInstance> {
    const instance = this.instance ??= tracked(openServingInstance(this.settings));
    instance.catch(() => { if (this.instance === instance) this.instance = undefined; });
    return instance;
  }

  /**
   * The snapshot attached under `target.alias`, counted as running from here (so that no other task's
   * detachStale can detach it before this task has run): the caller calls done() with it when it ends.
   * An alias names one file's content (current-snapshot.ts), so an entry attached through another path
   * to the same file (another pin of it) serves as well.
   */
  async attach(target: Attachment): Promise<Attached> {
    const db = await this.database();
    for (let pending: Promise<void> | undefined; (pending = this.detaching.get(target.alias)); ) await pending;
    let entry = this.attached.get(target.alias);
    if (!entry) {
      const ready = (async () => {
        const setup = await tracked(db.connect());
        try {
          await tracked(setup.run(`ATTACH ${sqlLiteral(target.path)} AS "${target.alias}" (READ_ONLY)`));
        } finally {
          setup.closeSync();
        }
      })();
      entry = { ready, running: 1, order: ++this.attachOrder, path: target.path };
      this.attached.set(target.alias, entry);
      ready.catch(() => { if (this.attached.get(target.alias) === entry) this.attached.delete(target.alias); });
      // Awaited by the task that attaches, never left running on its own: the pool waits for its tasks
      // before it stops the workers, and a thread stopped during a DETACH takes the process down.
      await this.detachStale(db);
    } else {
      entry.running++;
      // Recency of use, not of the first attach: the base every batch snapshot reads was attached first, and
      // ranked by that it fell out of the newest `attachedMax` after as many batches, detached and attached
      // again cold while every page read it.
      entry.order = ++this.attachOrder;
    }
    try {
      await entry.ready;
    } catch (e) {
      entry.running--;
      throw e;
    }
    return entry;
  }

  /** The task that attached `entry` has ended. */
  done(entry: Attached): void {
    entry.running--;
  }

  private async detachStale(db: DuckDBInstance): Promise<void> {
    const newest = [...this.attached.entries()].sort((a, b) => b[1].order - a[1].order).slice(0, this.attachedMax).map(([alias]) => alias);
    for (const [alias, entry] of this.attached) {
      // Prepared statements must never outlive the database they read: a running task's are dropped when it
      // ends, and the snapshot is detached at a later attach. A file whose link the server has removed
      // (src/snapshots/read/pins.ts) goes at once: its disk space is freed only when the last handle on it closes.
      const removed = !existsSync(entry.path);
      if ((newest.includes(alias) && !removed) || entry.running > 0 || !this.slots.releasable(alias)) continue;
      this.attached.delete(alias);
      const detached = this.detach(db, alias, entry).finally(() => this.detaching.delete(alias));
      this.detaching.set(alias, detached);
      await detached;
    }
  }

  /** Never rejects: a failed detach leaves a read-only handle open until the worker ends, and nothing else depends on it. */
  private async detach(db: DuckDBInstance, alias: string, entry: Attached): Promise<void> {
    try {
      const setup = await tracked(db.connect());
      try {
        await entry.ready;
        await tracked(setup.run(`DETACH "${alias}"`));
      } finally {
        setup.closeSync();
      }
    } catch {
      // The handle stays open; a later attach of the alias finds it gone from `attached` and attaches anew.
    }
  }
}
