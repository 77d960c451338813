import { createHash } from 'node:crypto';
// The running server's view of the snapshots: which one is current, who is using which, and switching
// to a new one (polled, so that every instance on a shared DATA_DIR follows by itself). A request takes
// a lease on the current snapshot and keeps reading that one even if another becomes current meanwhile.
import { promises as fs, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../log.js';
import { Pins } from './pins.js';
import { acquireWriterLock } from '../writer-lock.js';
import { type CompileTarget, type StoredMerge } from '../../query/compile.js';
import { indexTable, POSITION_COLUMN, workspaceColumn } from '../../catalog/catalog.js';
import { hiddenPositions, layeredRows, lowestFile, mergedViewRows, organizationLayers, positionedViewRows, standingRuns, storedMerge } from '../delta-layout.js';
import {
  type AccessData, type AppliedBatch, type Retention, snapshotsDir, listSnapshotIds, pruneSnapshots, readAccess, readCurrentId, readManifest, retainedIds, snapshotPath, type Manifest,
} from '../snapshot-dir.js';

import type { Attachment } from '../../../workers/protocol.js';
import { ident, sqlLiteral } from '../../duckdb/sql.js';

export interface Snapshot {
  id: string;
  /** The snapshot's DuckDB file, when it has one; its views are then tables of that database. */
  attachment: Attachment | null;
  /** A batch snapshot's delta files (delta-layout.ts), read beside `attachment`. */
  deltas: Attachment[];
  manifest: Manifest;
  access: AccessData;
  organizations: ReadonlySet<string>;
  /**
   * What the compiler needs to know of a view of this snapshot for `organization`: where its rows are (the
   * DuckDB file's table, else the Parquet file; paths are ours, never a client's), how many the organization
   * and the table have, and which serving columns and stored order the DuckDB file has.
   */
  target(view: string, organization: string): CompileTarget;
  /**
   * Where the rows of `view` of the organizations `reached` (names the snapshot holds) are, read together
   * across organizations (docs/access.md): each organization's rows as `target` finds them.
   */
  across(view: string, reached: readonly string[]): CompileTarget;
  /** The manifest's stat when the snapshot was opened: another one means the snapshot was compacted since. */
  manifestStamp: string;
  /** The links this Snapshot reads (pins.ts); unpinned when the registry lets it go. */
  pinned: readonly string[];
}

/** The databases a worker attaches to read `snapshots` (none for a snapshot served from Parquet). */
export const attachments = (...snapshots: Snapshot[]): Attachment[] =>
  snapshots.flatMap((s) => [...(s.attachment ? [s.attachment] : []), ...s.deltas]);

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

/** The stat of a snapshot's manifest, which changes when the manifest is replaced (compaction). */
const manifestStamp = async (dataDir: string, id: string): Promise<string> => {
  const st = await fs.stat(join(snapshotPath(dataDir, id), 'manifest.json'));
  return `${st.ino}:${st.mtimeMs}:${st.size}`;
};

/** A short name of a manifest's stamp, for cursors (compile.ts CompileTarget.layout): they need not show a file's inode. */
const layoutOf = (stamp: string) => createHash('sha256').update(stamp).digest('base64url').slice(0, 12);

/** The snapshot's files changed while it was being opened: open it again from its new manifest. */
class ChangedWhileOpening extends Error {}

/** How often a snapshot is opened again when its files change under the opening (compaction, removal). */
const OPEN_ATTEMPTS = 5;

/**
 * Opens a snapshot for reading. With `pins`, every file it reads is pinned first (pins.ts): the Snapshot
 * then reads its own links, which stay readable whatever the loader does to the snapshot's directory,
 * until the registry unpins them. A file the manifest names that is gone by the time it is pinned means the manifest was
 * replaced meanwhile (a compaction): the manifest is read again.
 */
export async function openSnapshot(dataDir: string, id: string, pins?: Pins): Promise<Snapshot> {
  for (let attempt = 1; ; attempt++) {
    const opening: Opening = { pinned: [] };
    try {
      return await openOnce(dataDir, id, pins, opening);
    } catch (e) {
      await Promise.all(opening.pinned.map((p) => pins!.unpin(p)));
      // A file missing because the manifest that named it was replaced meanwhile: open the new form. One
      // missing under a manifest that stands is damage, and so is a snapshot gone whole (retention).
      const now = await manifestStamp(dataDir, id).catch(() => null);
      const moved = e instanceof ChangedWhileOpening || ((e as NodeJS.ErrnoException).code === 'ENOENT' && now !== null && now !== opening.stamp);
      if (!moved || attempt >= OPEN_ATTEMPTS) throw e;
    }
  }
}

interface Opening {
  /** The manifest's stamp as this attempt read it. */
  stamp?: string;
  /** The links made so far, removed when the attempt fails. */
  pinned: string[];
}

async function openOnce(dataDir: string, id: string, pins: Pins | undefined, opening: Opening): Promise<Snapshot> {
  const stamp = opening.stamp = await manifestStamp(dataDir, id);
  const [manifest, access] = await Promise.all([readManifest(dataDir, id), readAccess(dataDir, id)]);
  const dir = snapshotPath(dataDir, id);
  const { pinned } = opening;
  const checkSize = async (name: string, path: string) => {
    const expected = manifest.sizes?.[name];
    const actual = (await fs.stat(path)).size;
    if (expected !== undefined && actual !== expected) throw new Error(`${name} is ${actual} bytes, not ${expected}`);
  };
  const pin = async (name: string) => {
    const path = pins ? await pins.pin(join(dir, name)) : join(dir, name);
    if (pins) pinned.push(path);
    await checkSize(name, path);
    return path;
  };
  // A snapshot with a file missing or cut short is damaged, even a file this server does not read (the
  // Parquet files beside a DuckDB file): it is not served. The files it reads are checked as they are pinned.
  if (manifest.database) {
    for (const name of Object.keys(manifest.sizes ?? {})) if (name !== manifest.database) await checkSize(name, join(dir, name));
  }
  // Only what the server reads: the DuckDB file when there is one (its Parquet files are the source of
  // the build, kept for portability), else each view's Parquet file.
  const paths = new Map<string, string>();
  let attachment: Attachment | null = null;
  if (manifest.database) {
    const path = await pin(manifest.database);
    await checkDuckdb(path);
    // Snapshot ids are [0-9a-zA-Z-] by construction; the alias is an identifier we make, never a client's.
    // It names the file too: a compacted snapshot's file is another database than the one it replaced.
    // Never the link's name: the alias is in the SQL, and an answer's ETag must not depend on the server.
    // A batch snapshot's file is its base's (a link): one alias, so that a worker attaches it once for all of them.
    attachment = { alias: `snapshot_${manifest.base ?? id}_${manifest.database}`.replace(/[^0-9A-Za-z]/g, '_'), path };
  } else {
    for (const [view, file] of Object.entries(manifest.files)) {
      const path = await pin(file);
      await checkParquet(path);
      paths.set(view, `read_parquet(${sqlLiteral(path)})`);
    }
  }
  // A batch snapshot's layers over its base (delta-layout.ts): the whole layer and the older delta are
  // shared with the snapshots after the one that wrote each (its alias names that one), the newer delta is
  // this snapshot's own.
  const deltas: Attachment[] = [];
  const layer = async (name: string | undefined, owner: string | undefined) => {
    if (!name || !attachment) return null;
    const path = await pin(name);
    await checkDuckdb(path);
    const a = { alias: `snapshot_${owner ?? id}_${name}`.replace(/[^0-9A-Za-z]/g, '_'), path };
    deltas.push(a);
    return a;
  };
  const whole = await layer(manifest.whole, manifest.wholeId);
  const overlays = new Map<string, Attachment>();
  for (const o of manifest.overlays ?? []) {
    const a = await layer(o.file, o.id);
    if (a) for (const org of Object.keys(o.organizations)) overlays.set(org, a);
  }
  const major = await layer(manifest.major, manifest.majorId);
  const minor = await layer(manifest.delta, id);
  const layers: Layers = {
    base: attachment?.alias ?? '', whole, overlays, major, minor,
    wholeHolds: new Set(manifest.wholeOrganizations ?? []), runHolds: standingRuns(manifest),
    majorHolds: new Set(manifest.majorOrganizations ?? []), minorHolds: new Set(manifest.deltaOrganizations ?? []),
  };
  const layered = (organization: string) => layers.overlays.has(organization) || layers.wholeHolds.has(organization)
    || layers.runHolds.has(organization) || layers.majorHolds.has(organization) || layers.minorHolds.has(organization);
  const organizations = new Set(access.organizations);
  // Read as it was when the files were pinned: a manifest replaced meanwhile may name other files.
  if ((await manifestStamp(dataDir, id)) !== stamp) throw new ChangedWhileOpening(`the manifest of ${id} changed while it was opened`);
  const snapshot: Snapshot = {
    id,
    attachment,
    deltas,
    manifest,
    manifestStamp: stamp,
    pinned: [...pinned],
    access,
    organizations,
    across(view, reached) {
      const base = snapshot.target(view, '');
      return acrossTarget(view, reached, { base, layers, manifest, layout: layoutOf(stamp), layered, every: organizations });
    },
    target(view, organization) {
      const parquet = paths.get(view);
      if (!parquet && !attachment) throw new Error(`snapshot ${id} has no file for view ${view}`);
      const csvLines = attachment ? manifest.csvLines?.[view] : undefined;
      const rows = manifest.organizationRows?.[view];
      // A table of the snapshot's DuckDB file, as the workers attach it.
      const inFile = (name: string) => `"${attachment!.alias}".${ident(name)}`;
      const table = attachment ? inFile(view) : parquet!;
      if (layered(organization)) {
        return deltaTarget(view, organization, layers, manifest, layoutOf(stamp));
      }
      return {
        relation: table,
        ...(attachment ? (manifest.positions?.includes(view) ? { rowid: ident(POSITION_COLUMN), rowidIndexed: true } : { rowid: 'rowid' }) : {}),
        ...(attachment ? { layout: layoutOf(stamp) } : {}),
        organization,
        // An organization the snapshot does not hold has no rows: key 0 is no organization's (keys start at 1).
        organizationKey: manifest.organizationKeys ? (manifest.organizationKeys[organization] ?? 0) : undefined,
        // Snapshots from before the manifest recorded them have no counts: the plan then does not rely on one.
        organizationRows: rows ? (rows[organization] ?? 0) : undefined,
        rowJson: attachment !== null && manifest.rowJson === true,
        listMembers: manifest.listMembers === true,
        csvLines,
        // The DuckDB files that store CSV lines store each organization's rows in the default order too.
        defaultOrderStored: csvLines !== undefined,
        ...(attachment && manifest.organizationKeys && manifest.indexes?.[view]
          ? { indexes: manifest.indexes[view]!.map((column) => ({ column, relation: inFile(indexTable(view, column)) })) }
          : {}),
      };
    },
  };
  return snapshot;
}

/**
 * Where an organization whose rows a layer over the base holds reads them (delta-layout.ts). One that an
 * overlay or the whole layer holds whole (its overlay first) and no delta does reads that file as the base is
 * read: stored order, position index, index tables. A view grouped across workspaces holds the organization whole in the newest layer that holds it,
 * stored as the base stores it: every plan of the base's but the position index. A view with rows per
 * workspace merges the standing rows of the layers that hold the organization (the whole layer instead of
 * the base where it holds it whole, and over its lowest layer where it holds a run of it): pages find rows by their position column, and sort what they read; a large
 * organization's page then fetches its rows by position from the layers' tables as they are.
 */
function deltaTarget(view: string, organization: string, layers: Layers, manifest: Manifest, layout: string): CompileTarget {
  const rows = manifest.organizationRows?.[view]?.[organization] ?? 0;
  const common = { organization, layout, organizationKey: manifest.organizationKeys?.[organization] ?? 0, organizationRows: rows, rowJson: true, listMembers: manifest.listMembers === true };
  const { stack, whole } = stackOf(organization, layers);
  const csvLines = manifest.csvLines?.[view];
  if (whole !== null && stack.length === 1) {
    const table = (name: string) => `${whole}.${ident(name)}`;
    return {
      ...common, relation: table(view), csvLines, defaultOrderStored: csvLines !== undefined,
      rowid: ident(POSITION_COLUMN), ...(manifest.positions?.includes(view) ? { rowidIndexed: true } : {}),
      ...(manifest.indexes?.[view] ? { indexes: manifest.indexes[view]!.map((column) => ({ column, relation: table(indexTable(view, column)) })) } : {}),
    };
  }
  if (!workspaceColumn(view)) {
    return { ...common, relation: `${stack[stack.length - 1]!}.${ident(view)}`, rowid: 'rowid', csvLines, defaultOrderStored: csvLines !== undefined };
  }
  // A layer that does not hold the organization has none of its rows and replaces none of its workspaces.
  const positions = positionsOf(manifest, layers, organization);
  const standingRows = (columns?: readonly string[]) => (positions
    ? positionedViewRows(stack, view, common.organizationKey, `"${positions.alias}"`, columns) : mergedViewRows(stack, view, common.organizationKey, columns));
  return {
    ...common, rowid: ident(POSITION_COLUMN),
    relation: standingRows(),
    fetchRelation: layeredRows(stack, view),
    narrowed: (columns) => ({ relation: standingRows(columns), fetchRelation: layeredRows(stack, view, columns), upper: storedMerge(stack, view, common.organizationKey, columns).upper }),
    // The lowest layer (the base, or the file holding the organization whole) stores its rows in the default order.
    ...(csvLines !== undefined ? {
      storedMerge: {
        ...storedMerge(stack, view, common.organizationKey), ...hiddenOf(manifest, organization, view),
        ...(positions ? { hidden: hiddenPositions(`"${positions.alias}"`, view, common.organizationKey) } : {}),
      },
    } : {}),
  };
}

/**
 * What the manifest says of the rows the deltas replace in the organization's lowest layer (delta-layout.ts
 * HiddenRows), where that layer is still the one they were found in.
 */
function hiddenOf(manifest: Manifest, organization: string, view: string): Pick<StoredMerge, 'hiddenRows' | 'hiddenRanges'> {
  const h = manifest.hidden?.[organization];
  if (!h || h.lowest !== lowestFile(manifest, organization) || h.rows[view] === undefined) return {};
  return { hiddenRows: h.rows[view], ...(h.ranges?.[view] ? { hiddenRanges: h.ranges[view] } : {}) };
}

/**
 * The delta file that lists the positions of the organization's rows its lowest layer has replaced
 * (delta-layout.ts hiddenTable), where the manifest says one does and that layer is still the one they were found in.
 */
function positionsOf(manifest: Manifest, layers: Layers, organization: string): Attachment | null {
  const h = manifest.hidden?.[organization];
  if (!h?.positionsIn || h.lowest !== lowestFile(manifest, organization)) return null;
  return h.positionsIn === 'major' ? layers.major : h.positionsIn === 'whole' ? layers.whole : layers.minor;
}

/** The layers an organization reads (delta-layout.ts organizationLayers), as the workers' SQL names them. */
const stackOf = (organization: string, layers: Layers) => {
  const quoted = (a: Attachment | null) => (a === null ? null : `"${a.alias}"`);
  return organizationLayers(organization, {
    ...layers, base: `"${layers.base}"`, whole: quoted(layers.whole), major: quoted(layers.major), minor: quoted(layers.minor),
    overlayOf: (o) => quoted(layers.overlays.get(o) ?? null),
  });
};

interface AcrossParts {
  /** The target of an organization no layer holds: the base's table and how it is stored. */
  base: CompileTarget;
  layers: Layers;
  manifest: Manifest;
  layout: string;
  layered: (organization: string) => boolean;
  /** Every organization the snapshot holds. */
  every: ReadonlySet<string>;
}

const ASCII_FOLD = (name: string) => name.replace(/[A-Z]+/g, (m) => m.toLowerCase());

/**
 * Whether organization keys follow the order in which organization names sort (interface §4: folded, then
 * exactly): the loader numbers them in name order, so a snapshot of lower-case names keeps every
 * organization's rows in the order a read across organizations gives by default. Keys a batch gives new
 * organizations come after the others, whatever their names.
 */
function keysInNameOrder(keys: Readonly<Record<string, number>>, names: Iterable<string>): boolean {
  const sorted = [...names].sort((a, b) => {
    const fa = ASCII_FOLD(a), fb = ASCII_FOLD(b);
    return fa < fb ? -1 : fa > fb ? 1 : a < b ? -1 : a > b ? 1 : 0;
  });
  return sorted.every((name, i) => i === 0 || (keys[name] ?? 0) > (keys[sorted[i - 1]!] ?? 0));
}

/**
 * The rows of `view` of the organizations `reached`, across organizations: each organization's rows where
 * `target` finds them, gathered so that a statement reads a few relations, not one per organization. The
 * organizations no layer holds read the base; those a layer holds are grouped by the layers they read
 * (deltaTarget's choice), and a group merges its layers matching each replaced workspace to its own
 * organization (delta-layout.ts OrganizationKey 'each'), as a read of that organization alone does. Keys and
 * names are the manifest's, written out as constants; the organizations a client reaches are a subset of
 * the snapshot's, never its text.
 */
function acrossTarget(view: string, reached: readonly string[], parts: AcrossParts): CompileTarget {
  const { base, layers, manifest } = parts;
  const keys = manifest.organizationKeys;
  const rowsOf = manifest.organizationRows?.[view];
  const organizationRows = rowsOf ? reached.reduce((n, o) => n + (rowsOf[o] ?? 0), 0) : undefined;
  const common = { organization: '', listMembers: base.listMembers, ...(organizationRows === undefined ? {} : { organizationRows }) };
  const everyOne = reached.length === parts.every.size;
  if (!keys) {
    // A snapshot from before organization keys: one Parquet file or table, filtered by name.
    return { ...common, relation: base.relation, organizationFilter: reached.length === 0 ? 'false' : `"_org" IN (${reached.map(sqlLiteral).join(', ')})` };
  }
  const keyList = (names: readonly string[]) => names.map((n) => Math.trunc(keys[n] ?? 0)).join(', ');
  const inKeys = (names: readonly string[]) => (names.length === 0 ? 'false' : `"_org_key" IN (${keyList(names)})`);
  const held = [...parts.every].filter(parts.layered);
  if (held.length === 0 && !layers.whole && layers.overlays.size === 0 && !layers.major && !layers.minor) {
    // The base alone: every key is an organization's the snapshot holds, and each organization's rows lie in
    // key order, in the view's default order, as a read across organizations orders them by default where the
    // keys follow the names' order.
    const ordered = base.defaultOrderStored === true && keysInNameOrder(keys, parts.every);
    return {
      ...common,
      relation: base.relation,
      organizationFilter: everyOne ? 'true' : inKeys(reached),
      ...(base.rowid ? { rowid: base.rowid } : {}),
      ...(base.rowidIndexed ? { rowidIndexed: true } : {}),
      ...(ordered ? { defaultOrderStored: true, layout: parts.layout } : {}),
    };
  }
  // Each reached organization by the layers it reads; the base's branch keeps only organizations no layer holds.
  const groups = new Map<string, { relation: string; names: string[] }>();
  const plain: string[] = [];
  for (const organization of reached) {
    if (!parts.layered(organization)) {
      plain.push(organization);
      continue;
    }
    const relation = layeredRelation(view, organization, layers);
    let group = groups.get(relation);
    if (!group) groups.set(relation, (group = { relation, names: [] }));
    group.names.push(organization);
  }
  const branches = [
    ...(plain.length > 0 ? [`SELECT * FROM ${base.relation} WHERE ${inKeys(plain)}`] : []),
    ...[...groups.values()].map((g) => `SELECT * FROM ${g.relation} WHERE ${inKeys(g.names)}`),
  ];
  if (branches.length === 0) return { ...common, relation: base.relation, organizationFilter: 'false' };
  return { ...common, relation: `(${branches.join('\n  UNION ALL ')})`, organizationFilter: 'true' };
}

/** The relation deltaTarget reads an organization a layer holds from, with every organization's rows in it. */
function layeredRelation(view: string, organization: string, layers: Layers): string {
  const { stack } = stackOf(organization, layers);
  if (stack.length === 1 || !workspaceColumn(view)) return `${stack[stack.length - 1]!}.${ident(view)}`;
  return mergedViewRows(stack, view, 'each');
}

interface Layers {
  base: string;
  whole: Attachment | null;
  /** The overlay each organization an overlay holds reads. */
  overlays: ReadonlyMap<string, Attachment>;
  major: Attachment | null;
  minor: Attachment | null;
  wholeHolds: ReadonlySet<string>;
  runHolds: ReadonlySet<string>;
  majorHolds: ReadonlySet<string>;
  minorHolds: ReadonlySet<string>;
}

export class SnapshotRegistry {
  private state: SnapshotState = { status: 'none' };
  /** Leases per snapshot id: retention removes none of these. */
  private readonly leases = new Map<string, number>();
  /**
   * Who holds each Snapshot this registry opened: the registry while it serves it (current, or opened for
   * history) and each lease on it. Its pins go at the first poll that finds it held by nobody, not at once:
   * a request may have it in hand between choosing it and leasing it.
   */
  private readonly holds = new Map<Snapshot, number>();
  /** Snapshots held by nobody, and the poll that found them so. */
  private readonly unheld = new Map<Snapshot, number>();
  private polls = 0;
  /** The retained snapshots' ids, oldest first (docs/history.md §1), as of the last poll. */
  private retained: string[] = [];
  /** Retained snapshots opened for history requests, each opened once per form (a compaction is another). */
  private readonly opened = new Map<string, Promise<Snapshot | null>>();
  private pins: Pins | undefined;
  private timer: NodeJS.Timeout | undefined;
  private watcher: FSWatcher | undefined;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly dataDir: string,
    private readonly pollMs: number,
    private readonly logger: Logger,
    private readonly retention: Retention,
  ) {}

  async start(): Promise<void> {
    this.pins = await Pins.create(this.dataDir);
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.pollMs);
    this.timer.unref();
    // A new CURRENT is noticed at once where the file system says so (inotify on a local disk): a change
    // batch is meant to show within a second, less than a poll. Polling stays for file systems that do not.
    try {
      this.watcher = watch(snapshotsDir(this.dataDir), (_event, name) => { if (name === 'CURRENT') void this.refresh(); });
      this.watcher.on('error', () => { this.watcher?.close(); this.watcher = undefined; });
      this.watcher.unref();
    } catch { /* polling alone: the directory appears with the first load */ }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.watcher?.close();
  }

  /** Called with the batches each newly current snapshot applied beyond the one before it (metrics). */
  onBatches?: (batches: AppliedBatch[], snapshot: Manifest) => void;

  /** Stops polling and removes this server's links; once nothing reads the snapshots any more (shutdown). */
  async close(): Promise<void> {
    this.stop();
    await this.checking;
    await this.pins?.close();
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

  /**
   * A lease on a snapshot: retention removes none of its files, and the files it was opened with stay
   * readable (pinned) until the lease is released, even when a compaction or a removal replaces them.
   */
  lease(snapshot: Snapshot): Lease {
    this.leases.set(snapshot.id, (this.leases.get(snapshot.id) ?? 0) + 1);
    this.hold(snapshot);
    let released = false;
    return {
      snapshot,
      release: () => {
        if (released) return;
        released = true;
        const n = (this.leases.get(snapshot.id) ?? 1) - 1;
        if (n > 0) this.leases.set(snapshot.id, n);
        else this.leases.delete(snapshot.id);
        this.letGo(snapshot);
      },
    };
  }

  private hold(snapshot: Snapshot): void {
    this.holds.set(snapshot, (this.holds.get(snapshot) ?? 0) + 1);
    this.unheld.delete(snapshot);
  }

  private letGo(snapshot: Snapshot): void {
    const n = (this.holds.get(snapshot) ?? 1) - 1;
    this.holds.set(snapshot, n);
    if (n <= 0) this.unheld.set(snapshot, this.polls);
  }

  /** Unpins the snapshots nobody has held since an earlier poll than this one. */
  private async unpinUnheld(): Promise<void> {
    for (const [snapshot, since] of [...this.unheld]) {
      if (since >= this.polls) continue;
      this.unheld.delete(snapshot);
      this.holds.delete(snapshot);
      await Promise.all(snapshot.pinned.map((p) => this.pins!.unpin(p)))
        .catch((e: Error) => this.logger.log('warn', 'a snapshot link cannot be removed', { snapshot: snapshot.id, error: e.message }));
    }
  }

  private open(id: string): Promise<Snapshot | null> {
    if (this.state.status === 'ready' && this.state.snapshot.id === id) return Promise.resolve(this.state.snapshot);
    let opening = this.opened.get(id);
    if (!opening) {
      opening = openSnapshot(this.dataDir, id, this.pins).then((s) => {
        this.hold(s);
        return s;
      }, (e: Error) => {
        this.logger.log('error', 'a retained snapshot cannot be opened', { snapshot: id, error: e.message });
        this.opened.delete(id); // tried again at the next request
        return null;
      });
      this.opened.set(id, opening);
    }
    return opening;
  }

  /** Forgets an opened snapshot: the next request opens it again; a request reading it keeps its lease. */
  private forget(id: string, opening: Promise<Snapshot | null>): void {
    if (this.opened.get(id) === opening) this.opened.delete(id);
    void opening.then((s) => { if (s) this.letGo(s); });
  }

  /** Re-reads CURRENT and switches when it names another snapshot. Safe to call at any time. */
  refresh(): Promise<void> {
    this.checking ??= this.check().finally(() => { this.checking = undefined; });
    return this.checking;
  }

  private async check(): Promise<void> {
    this.polls++;
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
    this.retained = retainedIds(loaded, this.retention);
    for (const [old, opening] of [...this.opened]) {
      if (!this.retained.includes(old)) {
        this.forget(old, opening);
        continue;
      }
      // Compacted since it was opened (its manifest was replaced): opened again when next asked for.
      const snapshot = await opening;
      const stamp = await manifestStamp(this.dataDir, old).catch(() => null);
      if (snapshot && stamp !== snapshot.manifestStamp) this.forget(old, opening);
    }
    await this.unpinUnheld();
    if (ids.length > this.retained.length) {
      // Every poll, not only at a switch: a snapshot a request was reading goes once that request ends. Only
      // when no load is writing (writer-lock.ts): else that load prunes, and this server at a later poll.
      const release = await acquireWriterLock(this.dataDir, 'retention').catch(() => null);
      if (release) {
        try {
          const removed = await pruneSnapshots(this.dataDir, this.retention, new Set(this.leases.keys())).catch(() => []);
          if (removed.length > 0) this.logger.log('info', 'old snapshots removed', { removed });
        } finally {
          await release();
        }
      }
    }
  }

  private async switchTo(id: string | null): Promise<void> {
    const shown = this.state.status === 'ready' ? this.state.snapshot.id : this.state.status === 'broken' ? this.state.id : null;
    if (id === shown) {
      // The same snapshot with its layers compacted (write/whole-layer.ts): opened again from its new manifest.
      if (this.state.status !== 'ready' || id === null) return;
      const stamp = await manifestStamp(this.dataDir, id).catch(() => null);
      if (stamp === null || stamp === this.state.snapshot.manifestStamp) return;
    }
    const previous = this.state.status === 'ready' ? this.state.snapshot : null;
    if (id === null) {
      this.state = { status: 'none' };
    } else {
      try {
        const snapshot = await openSnapshot(this.dataDir, id, this.pins);
        this.hold(snapshot);
        this.state = { status: 'ready', snapshot };
        if (id === shown) this.logger.log('info', 'snapshot reopened with its layers compacted', { snapshot: id });
        else this.logger.log('info', 'snapshot switched', { snapshot: id, previous: shown });
        const before = new Set((previous?.manifest.batches ?? []).map((b) => `${b.name}\n${b.digest}`));
        const applied = (snapshot.manifest.batches ?? []).filter((b) => !before.has(`${b.name}\n${b.digest}`));
        if (previous && applied.length > 0) this.onBatches?.(applied, snapshot.manifest);
      } catch (e) {
        this.state = { status: 'broken', id, error: (e as Error).message };
        this.logger.log('error', 'the current snapshot cannot be opened', { snapshot: id, error: (e as Error).message });
      }
    }
    // The snapshot that was current stays open for history, with the registry's hold on it, unless it is
    // open there already (then that one serves and this one goes).
    if (previous) {
      if (this.opened.has(previous.id) || previous.id === id) this.letGo(previous);
      else this.opened.set(previous.id, Promise.resolve(previous));
    }
  }
}
