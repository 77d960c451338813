// The embedded StateStore: one append-only, checksummed journal shared by every process that opens the
// same directory (the server and CLI commands such as `token create`). State lives in memory; each
// operation first applies whatever other processes appended, so nothing is cached across processes.

import { createHash, randomBytes } from 'node:crypto';
import { link, mkdir, open, readFile, rename, stat, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import {
  DELIVERY_RESPONSES_KEPT, MAX_CONFIGURATIONS_PER_VIEW, NameTakenError, StoreCorruptError, StoreUnavailableError, TooManyConfigurationsError,
  type ConfigurationRef, type DeliveryResponse, type NotificationConfiguration, type PendingNotification, type SavedQuery, type SavedView,
  type StateStore, type TokenRecord,
} from './state-store.js';

const FORMAT_VERSION = 1;
const JOURNAL = 'journal.ndjson';

type JournalRecord =
  | { v: 1; kind: 'put-token'; token: TokenRecord }
  | { v: 1; kind: 'del-token'; id: string }
  | { v: 1; kind: 'put-view'; view: SavedView }
  | { v: 1; kind: 'del-view'; organization: string; id: string }
  | { v: 1; kind: 'put-nc'; configuration: NotificationConfiguration }
  | { v: 1; kind: 'del-nc'; organization: string; viewId: string; id: string }
  | { v: 1; kind: 'notify-checked'; snapshot: string | null; notifications: PendingNotification[] }
  | { v: 1; kind: 'notify-attempt'; id: string; response: DeliveryResponse; next: string | null }
  | { v: 1; kind: 'notify-response'; ref: ConfigurationRef; response: DeliveryResponse }
  | { v: 1; kind: 'notify-lease'; holder: string | null; until: number };

export interface JournalStoreOptions {
  /** Compact once the journal holds more records than this and most are dead (tests lower it). */
  compactAfterRecords?: number;
  /** A journal.lock older than this is taken to belong to a crashed process and is broken. */
  lockStaleMs?: number;
}

export async function openJournalStore(dir: string, options: JournalStoreOptions = {}): Promise<JournalStore> {
  return JournalStore.open(dir, options);
}

const checksum = (json: string): string => createHash('sha256').update(json, 'utf8').digest('hex').slice(0, 16);
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));
const errno = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code;
const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isStr = (x: unknown): x is string => typeof x === 'string';
const viewKey = (organization: string, viewId: string) => `${organization}\n${viewId}`;
const refKey = (ref: ConfigurationRef) => `${ref.organization}\n${ref.viewId}\n${ref.configurationId}`;
const refOf = (key: string): ConfigurationRef => {
  const [organization, viewId, configurationId] = key.split('\n') as [string, string, string];
  return { organization, viewId, configurationId };
};
const byCreation = (a: { createdAt: string; id: string }, b: { createdAt: string; id: string }) =>
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

/** Why a journal line cannot be trusted, or undefined when it is a well-formed record. */
function invalidity(rec: unknown): string | undefined {
  if (!isObj(rec)) return 'record is not a JSON object';
  if (rec.v !== FORMAT_VERSION) return `unsupported format version ${JSON.stringify(rec.v)}`;
  switch (rec.kind) {
    case 'put-token': return isObj(rec.token) && isStr(rec.token.id) ? undefined : 'put-token without token.id';
    case 'del-token': return isStr(rec.id) ? undefined : 'del-token without id';
    case 'put-view':
      return isObj(rec.view) && isStr(rec.view.id) && isStr(rec.view.organization) && isStr(rec.view.name)
        ? undefined : 'put-view without view.id, view.organization or view.name';
    case 'del-view': return isStr(rec.id) && isStr(rec.organization) ? undefined : 'del-view without id or organization';
    case 'put-nc':
      return isObj(rec.configuration) && isStr(rec.configuration.id) && isStr(rec.configuration.organization) && isStr(rec.configuration.viewId)
        ? undefined : 'put-nc without configuration.id, configuration.organization or configuration.viewId';
    case 'del-nc': return isStr(rec.id) && isStr(rec.organization) && isStr(rec.viewId) ? undefined : 'del-nc without id, organization or viewId';
    case 'notify-checked': return (isStr(rec.snapshot) || rec.snapshot === null) && Array.isArray(rec.notifications) ? undefined : 'notify-checked without snapshot or notifications';
    case 'notify-attempt': return isStr(rec.id) && isObj(rec.response) ? undefined : 'notify-attempt without id or response';
    case 'notify-response': return isObj(rec.ref) && isObj(rec.response) ? undefined : 'notify-response without ref or response';
    case 'notify-lease': return typeof rec.until === 'number' ? undefined : 'notify-lease without until';
    default: return `unknown record kind ${JSON.stringify(rec.kind)}`;
  }
}

/** Runs tasks one at a time, in call order; a failed task does not block the next. */
class Mutex {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

export class JournalStore implements StateStore {
  private readonly file: string;
  private readonly lockFile: string;
  private readonly compactAfter: number;
  private readonly lockStaleMs: number;
  /** Orders this process's writes so they never contend with each other for journal.lock. */
  private readonly writes = new Mutex();
  /** Guards the handle, the applied offset and the maps, shared by catch-up reads and writes. */
  private readonly state = new Mutex();
  private fh: FileHandle | undefined;
  private ino = -1n;
  private applied = 0; // bytes of complete lines applied to the maps
  private lines = 0; // complete lines applied, i.e. the number of records in the journal
  private tail = 0; // bytes after the last complete line when last read
  private tokens = new Map<string, TokenRecord>();
  private views = new Map<string, Map<string, SavedView>>();
  private viewCount = 0;
  /** Notification configurations by `<organization>\n<view id>`, then id. */
  private configurations = new Map<string, Map<string, NotificationConfiguration>>();
  private configurationCount = 0;
  // The notifier's state: what it checked last, its outbox, each configuration's last responses, its lease.
  private cursor: string | null = null;
  private pending = new Map<string, PendingNotification>();
  private responses = new Map<string, DeliveryResponse[]>();
  private lease: { holder: string | null; until: number } = { holder: null, until: 0 };
  private closed = false;
  private broken: string | undefined;

  private constructor(private readonly dir: string, options: JournalStoreOptions) {
    this.file = join(dir, JOURNAL);
    this.lockFile = join(dir, 'journal.lock');
    this.compactAfter = options.compactAfterRecords ?? 10_000;
    this.lockStaleMs = options.lockStaleMs ?? 30_000;
  }

  static async open(dir: string, options: JournalStoreOptions = {}): Promise<JournalStore> {
    const store = new JournalStore(resolve(dir), options);
    await mkdir(store.dir, { recursive: true });
    try {
      await store.state.run(() => store.reload());
      await store.syncDir(); // a newly created journal must survive power loss along with its first records
      if (store.tail > 0) {
        // The tail may be another process's write in flight; only under the lock is it certainly torn.
        const release = await store.lock();
        try {
          await store.state.run(async () => { await store.catchUp(); await store.dropTornTail(); });
        } finally { await release(); }
      }
    } catch (err) {
      await store.fh?.close().catch(() => undefined);
      throw err;
    }
    return store;
  }

  async putToken(token: TokenRecord): Promise<void> {
    await this.mutate(() => this.append({ v: 1, kind: 'put-token', token }));
  }

  async getToken(id: string): Promise<TokenRecord | undefined> {
    await this.refresh();
    const token = this.tokens.get(id);
    return token && structuredClone(token);
  }

  async listTokens(): Promise<TokenRecord[]> {
    await this.refresh();
    return [...this.tokens.values()].sort(byCreation).map((t) => structuredClone(t));
  }

  async revokeToken(id: string): Promise<boolean> {
    return this.mutate(async () => {
      if (!this.tokens.has(id)) return false;
      await this.append({ v: 1, kind: 'del-token', id });
      return true;
    });
  }

  async listViews(organization: string): Promise<SavedView[]> {
    await this.refresh();
    return [...(this.views.get(organization)?.values() ?? [])].sort(byCreation).map((v) => structuredClone(v));
  }

  async listViewOrganizations(): Promise<string[]> {
    await this.refresh();
    return [...this.views.entries()].filter(([, views]) => views.size > 0).map(([org]) => org).sort();
  }

  async getView(organization: string, id: string): Promise<SavedView | undefined> {
    await this.refresh();
    const view = this.views.get(organization)?.get(id);
    return view && structuredClone(view);
  }

  async createView(view: SavedView): Promise<SavedView> {
    return this.mutate(async () => {
      const org = this.views.get(view.organization);
      // Ids are random; a repeat is a caller bug that must not silently replace another view.
      if (org?.has(view.id)) throw new Error(`saved view id ${view.id} already exists`);
      if (this.nameTaken(view.organization, view.name)) throw new NameTakenError(view.name);
      await this.append({ v: 1, kind: 'put-view', view });
      return structuredClone(this.views.get(view.organization)!.get(view.id)!);
    });
  }

  async updateView(organization: string, id: string, change: { name: string; query: SavedQuery; updatedAt: string }): Promise<SavedView | undefined> {
    return this.mutate(async () => {
      const current = this.views.get(organization)?.get(id);
      if (!current) return undefined;
      if (this.nameTaken(organization, change.name, id)) throw new NameTakenError(change.name);
      const view = { ...current, name: change.name, query: change.query, updatedAt: change.updatedAt };
      await this.append({ v: 1, kind: 'put-view', view });
      return structuredClone(this.views.get(organization)!.get(id)!);
    });
  }

  async deleteView(organization: string, id: string): Promise<SavedView | undefined> {
    return this.mutate(async () => {
      const current = this.views.get(organization)?.get(id);
      if (!current) return undefined;
      await this.append({ v: 1, kind: 'del-view', organization, id });
      return structuredClone(current);
    });
  }

  async listNotificationConfigurations(organization: string, viewId: string): Promise<NotificationConfiguration[]> {
    await this.refresh();
    return [...(this.configurations.get(viewKey(organization, viewId))?.values() ?? [])].sort(byCreation).map((c) => structuredClone(c));
  }

  async getNotificationConfiguration(organization: string, viewId: string, id: string): Promise<NotificationConfiguration | undefined> {
    await this.refresh();
    const c = this.configurations.get(viewKey(organization, viewId))?.get(id);
    return c && structuredClone(c);
  }

  async createNotificationConfiguration(configuration: NotificationConfiguration): Promise<NotificationConfiguration | undefined> {
    return this.mutate(async () => {
      if (!this.views.get(configuration.organization)?.has(configuration.viewId)) return undefined;
      const held = this.configurations.get(viewKey(configuration.organization, configuration.viewId));
      if (held?.has(configuration.id)) throw new Error(`notification configuration id ${configuration.id} already exists`);
      if ((held?.size ?? 0) >= MAX_CONFIGURATIONS_PER_VIEW) throw new TooManyConfigurationsError();
      await this.append({ v: 1, kind: 'put-nc', configuration });
      return structuredClone(configuration);
    });
  }

  async updateNotificationConfiguration(configuration: NotificationConfiguration): Promise<NotificationConfiguration | undefined> {
    return this.mutate(async () => {
      if (!this.configurations.get(viewKey(configuration.organization, configuration.viewId))?.has(configuration.id)) return undefined;
      await this.append({ v: 1, kind: 'put-nc', configuration });
      return structuredClone(configuration);
    });
  }

  async deleteNotificationConfiguration(organization: string, viewId: string, id: string): Promise<NotificationConfiguration | undefined> {
    return this.mutate(async () => {
      const current = this.configurations.get(viewKey(organization, viewId))?.get(id);
      if (!current) return undefined;
      await this.append({ v: 1, kind: 'del-nc', organization, viewId, id });
      return structuredClone(current);
    });
  }

  async notifierCursor(): Promise<string | null> {
    await this.refresh();
    return this.cursor;
  }

  async recordChecked(snapshot: string, notifications: PendingNotification[]): Promise<void> {
    await this.mutate(() => this.append({ v: 1, kind: 'notify-checked', snapshot, notifications }));
  }

  async queueNotifications(notifications: PendingNotification[]): Promise<void> {
    await this.mutate(() => this.append({ v: 1, kind: 'notify-checked', snapshot: null, notifications }));
  }

  async pendingNotifications(): Promise<PendingNotification[]> {
    await this.refresh();
    return [...this.pending.values()].map((n) => structuredClone(n));
  }

  async recordAttempt(id: string, response: DeliveryResponse, next: string | null): Promise<void> {
    await this.mutate(async () => {
      if (this.pending.has(id)) await this.append({ v: 1, kind: 'notify-attempt', id, response, next });
    });
  }

  async recordResponse(ref: ConfigurationRef, response: DeliveryResponse): Promise<void> {
    await this.mutate(() => this.append({ v: 1, kind: 'notify-response', ref, response }));
  }

  async deliveryResponses(ref: ConfigurationRef): Promise<DeliveryResponse[]> {
    await this.refresh();
    return structuredClone(this.responses.get(refKey(ref)) ?? []);
  }

  async takeNotifierLease(holder: string, ttlMs: number): Promise<boolean> {
    return this.mutate(async () => {
      const now = Date.now();
      if (this.lease.holder !== null && this.lease.holder !== holder && this.lease.until > now) return false;
      await this.append({ v: 1, kind: 'notify-lease', holder, until: now + ttlMs });
      return true;
    });
  }

  async releaseNotifierLease(holder: string): Promise<void> {
    await this.mutate(async () => {
      if (this.lease.holder === holder) await this.append({ v: 1, kind: 'notify-lease', holder: null, until: 0 });
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Writes accepted before close still complete; nothing new is accepted.
    await this.writes.run(async () => undefined);
    await this.state.run(async () => { await this.fh?.close(); this.fh = undefined; });
  }

  /** The records a compacted journal would hold. */
  private liveRecords(): number {
    let responses = 0;
    for (const list of this.responses.values()) responses += list.length;
    return this.tokens.size + this.viewCount + this.configurationCount + 2 + responses;
  }

  private nameTaken(organization: string, name: string, exceptId?: string): boolean {
    for (const v of this.views.get(organization)?.values() ?? []) if (v.name === name && v.id !== exceptId) return true;
    return false;
  }

  private usable(evenIfClosed = false): void {
    if (this.closed && !evenIfClosed) throw new StoreUnavailableError('the journal store is closed');
    if (this.broken) throw new StoreUnavailableError(this.broken);
  }

  /**
   * Makes the next read see every record any process had acknowledged when it was called. That takes a
   * stat of the journal begun after the call; callers that arrive while one is in flight share the next,
   * so that a busy server stats once per round trip, not once per request (a stat per token check cost
   * about a tenth of a cached answer's CPU).
   */
  private refresh(): Promise<void> {
    this.usable();
    if (!this.refreshing) {
      this.refreshing = this.refreshNow().finally(() => { this.refreshing = undefined; });
      return this.refreshing;
    }
    this.nextRefresh ??= this.refreshing.catch(() => undefined).then(() => {
      this.nextRefresh = undefined;
      return this.refresh();
    });
    return this.nextRefresh;
  }

  private refreshing: Promise<void> | undefined;
  private nextRefresh: Promise<void> | undefined;

  private async refreshNow(): Promise<void> {
    const st = await this.statJournal();
    if (st.ino === this.ino && Number(st.size) === this.applied) return; // the common, cheap case
    await this.state.run(() => this.catchUp());
  }

  /** The rules are checked only after catching up under journal.lock, so no other process can interleave. */
  private async mutate<T>(body: () => Promise<T>): Promise<T> {
    this.usable();
    return this.writes.run(async () => {
      const release = await this.lock();
      try {
        return await this.state.run(async () => {
          this.usable(true); // a write queued before close() still runs, unless an earlier fsync failed
          await this.catchUp();
          await this.dropTornTail(); // otherwise our line would be glued onto the torn one
          const result = await body();
          const dead = this.lines - this.liveRecords();
          if (this.lines > this.compactAfter && dead > this.lines / 2) await this.compact();
          return result;
        });
      } finally { await release(); }
    });
  }

  private statJournal() {
    return stat(this.file, { bigint: true }).catch((err: Error) => {
      throw new StoreUnavailableError(`cannot stat ${this.file}: ${err.message}`);
    });
  }

  private async catchUp(): Promise<void> {
    if (!this.fh && this.closed) throw new StoreUnavailableError('the journal store is closed');
    const st = await this.statJournal();
    // A new inode means another process compacted; a shrink means the file was rewritten under us.
    if (!this.fh || st.ino !== this.ino || Number(st.size) < this.applied) return this.reload();
    await this.readFrom(Number(st.size));
  }

  private async reload(): Promise<void> {
    await this.fh?.close().catch(() => undefined);
    this.fh = undefined;
    this.fh = await open(this.file, 'a+'); // O_APPEND: every write lands at the end, whoever else appends
    const st = await this.fh.stat({ bigint: true });
    this.ino = st.ino;
    this.applied = this.lines = this.tail = this.viewCount = this.configurationCount = 0;
    this.tokens = new Map();
    this.views = new Map();
    this.configurations = new Map();
    this.cursor = null;
    this.pending = new Map();
    this.responses = new Map();
    this.lease = { holder: null, until: 0 };
    await this.readFrom(Number(st.size));
  }

  private async readFrom(size: number): Promise<void> {
    const want = size - this.applied;
    if (want <= 0) { this.tail = 0; return; }
    const buf = Buffer.alloc(want);
    let got = 0;
    while (got < want) {
      const { bytesRead } = await this.fh!.read(buf, got, want - got, this.applied + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    let start = 0;
    for (let nl = buf.indexOf(10, 0); nl !== -1 && nl < got; nl = buf.indexOf(10, start)) {
      this.apply(this.parseLine(buf.toString('utf8', start, nl), this.lines + 1));
      this.lines += 1;
      this.applied += nl + 1 - start;
      start = nl + 1;
    }
    this.tail = got - start;
  }

  private parseLine(line: string, lineNo: number): JournalRecord {
    const corrupt = (reason: string) =>
      new StoreCorruptError(`${JOURNAL}:${lineNo}: ${reason} (in ${this.dir}; refusing to continue without it)`);
    if (!/^[0-9a-f]{16} /.test(line)) throw corrupt('malformed line, expected "<checksum> <json>"');
    const json = line.slice(17);
    if (checksum(json) !== line.slice(0, 16)) throw corrupt('checksum mismatch');
    let rec: unknown;
    try { rec = JSON.parse(json); } catch { throw corrupt('invalid JSON'); }
    const reason = invalidity(rec);
    if (reason) throw corrupt(reason);
    return rec as JournalRecord;
  }

  private apply(rec: JournalRecord): void {
    switch (rec.kind) {
      case 'put-token': this.tokens.set(rec.token.id, rec.token); break;
      case 'del-token': this.tokens.delete(rec.id); break;
      case 'put-view': {
        let org = this.views.get(rec.view.organization);
        if (!org) this.views.set(rec.view.organization, (org = new Map()));
        if (!org.has(rec.view.id)) this.viewCount += 1;
        org.set(rec.view.id, rec.view);
        break;
      }
      case 'del-view': {
        const org = this.views.get(rec.organization);
        if (org?.delete(rec.id)) this.viewCount -= 1;
        if (org?.size === 0) this.views.delete(rec.organization);
        // A view's notification configurations go with it.
        const key = viewKey(rec.organization, rec.id);
        this.configurationCount -= this.configurations.get(key)?.size ?? 0;
        this.configurations.delete(key);
        break;
      }
      case 'put-nc': {
        const key = viewKey(rec.configuration.organization, rec.configuration.viewId);
        let held = this.configurations.get(key);
        if (!held) this.configurations.set(key, (held = new Map()));
        if (!held.has(rec.configuration.id)) this.configurationCount += 1;
        held.set(rec.configuration.id, rec.configuration);
        break;
      }
      case 'del-nc': {
        const key = viewKey(rec.organization, rec.viewId);
        const held = this.configurations.get(key);
        if (held?.delete(rec.id)) this.configurationCount -= 1;
        if (held?.size === 0) this.configurations.delete(key);
        this.responses.delete(refKey({ organization: rec.organization, viewId: rec.viewId, configurationId: rec.id }));
        break;
      }
      case 'notify-checked':
        if (rec.snapshot !== null) this.cursor = rec.snapshot;
        for (const n of rec.notifications) this.pending.set(n.id, n);
        break;
      case 'notify-attempt': {
        const n = this.pending.get(rec.id);
        if (!n) break;
        this.keepResponse({ organization: n.organization, viewId: n.viewId, configurationId: n.configurationId }, rec.response);
        if (rec.next === null) this.pending.delete(rec.id);
        else this.pending.set(rec.id, { ...n, attempts: rec.response.attempt, nextAttemptAt: rec.next });
        break;
      }
      case 'notify-response': this.keepResponse(rec.ref, rec.response); break;
      case 'notify-lease': this.lease = { holder: rec.holder, until: rec.until }; break;
    }
  }

  private keepResponse(ref: ConfigurationRef, response: DeliveryResponse): void {
    const key = refKey(ref);
    this.responses.set(key, [response, ...(this.responses.get(key) ?? [])].slice(0, DELIVERY_RESPONSES_KEPT));
  }

  /** Caller holds journal.lock, so a partial last line is not a write in flight: it was torn by a crash. */
  private async dropTornTail(): Promise<void> {
    if (this.tail === 0) return;
    process.stderr.write(`journal-store: ${this.file}: dropping an unterminated final line (${this.tail} bytes after line ${this.lines}), a write torn by a crash and never acknowledged\n`);
    await this.fh!.truncate(this.applied);
    await this.fh!.datasync();
    this.tail = 0;
  }

  /** Caller holds journal.lock and has caught up, so the file ends exactly at `applied`. */
  private async append(rec: JournalRecord): Promise<void> {
    const json = JSON.stringify(rec);
    const line = Buffer.from(`${checksum(json)} ${json}\n`, 'utf8');
    try {
      const { bytesWritten } = await this.fh!.write(line, 0, line.length, null);
      if (bytesWritten !== line.length) throw new Error(`short write (${bytesWritten} of ${line.length} bytes)`);
    } catch (err) {
      await this.fh!.truncate(this.applied).catch(() => undefined); // keep the journal free of a partial line
      throw new StoreUnavailableError(`cannot append to ${this.file}: ${(err as Error).message}`);
    }
    try {
      await this.fh!.datasync();
    } catch (err) {
      // After a failed fsync the page cache may claim data the disk never got; only a reopen is trustworthy.
      this.broken = `fdatasync of ${this.file} failed (${(err as Error).message}); reopen the store`;
      throw new StoreUnavailableError(this.broken);
    }
    this.apply(JSON.parse(json) as JournalRecord); // exactly what a reload would see
    this.applied += line.length;
    this.lines += 1;
  }

  /** Caller holds journal.lock: no process can append to the old inode while we replace it. */
  private async compact(): Promise<void> {
    const tmp = `${this.file}.tmp`;
    const records: JournalRecord[] = [
      ...[...this.tokens.values()].sort(byCreation).map((token) => ({ v: 1, kind: 'put-token', token }) as const),
      ...[...this.views.values()].flatMap((org) => [...org.values()]).sort(byCreation)
        .map((view) => ({ v: 1, kind: 'put-view', view }) as const),
      ...[...this.configurations.values()].flatMap((held) => [...held.values()]).sort(byCreation)
        .map((configuration) => ({ v: 1, kind: 'put-nc', configuration }) as const),
      // Oldest response first, so that replaying them leaves the newest on top.
      ...[...this.responses.entries()].flatMap(([key, list]) => [...list].reverse().map((response) => ({ v: 1, kind: 'notify-response', ref: refOf(key), response }) as const)),
      ...(this.cursor === null ? [] : [{ v: 1 as const, kind: 'notify-checked' as const, snapshot: this.cursor, notifications: [...this.pending.values()] }]),
      ...(this.lease.holder === null ? [] : [{ v: 1 as const, kind: 'notify-lease' as const, holder: this.lease.holder, until: this.lease.until }]),
    ];
    const text = records.map((r) => { const json = JSON.stringify(r); return `${checksum(json)} ${json}\n`; }).join('');
    try {
      const out = await open(tmp, 'w');
      try { await out.writeFile(text, 'utf8'); await out.sync(); } finally { await out.close(); }
      await rename(tmp, this.file);
    } catch (err) {
      // The old journal is intact and still authoritative; compaction will be retried on a later write.
      await unlink(tmp).catch(() => undefined);
      process.stderr.write(`journal-store: compaction of ${this.file} failed: ${(err as Error).message}\n`);
      return;
    }
    await this.syncDir();
    await this.reload(); // also re-verifies what was just written
  }

  private async syncDir(): Promise<void> {
    const d = await open(this.dir, 'r');
    try { await d.sync(); } finally { await d.close(); }
  }

  /** Takes journal.lock (O_EXCL create) and returns its release. */
  private async lock(): Promise<() => Promise<void>> {
    const deadline = Date.now() + 2 * this.lockStaleMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const owner = `${process.pid}@${hostname()} ${randomBytes(8).toString('hex')}\n`;
        await writeFile(this.lockFile, owner, { flag: 'wx' });
        return async () => {
          // Remove only our own lock: if ours was broken as stale, the file now belongs to someone else.
          if ((await readFile(this.lockFile, 'utf8').catch(() => '')) === owner) await unlink(this.lockFile).catch(() => undefined);
        };
      } catch (err) {
        if (errno(err) !== 'EEXIST') throw new StoreUnavailableError(`cannot create ${this.lockFile}: ${(err as Error).message}`);
      }
      await this.breakStaleLock();
      if (Date.now() > deadline) throw new StoreUnavailableError(`timed out waiting for ${this.lockFile}`);
      await sleep(Math.min(1 + attempt, 20) * (0.5 + Math.random()));
    }
  }

  private async breakStaleLock(): Promise<void> {
    const st = await stat(this.lockFile).catch(() => undefined);
    if (!st || Date.now() - st.mtimeMs < this.lockStaleMs) return;
    // Renaming aside (rather than unlinking) lets us check that what we removed is still the stale lock
    // and not a fresh one another process created after our stat; a fresh one is put back. Only two
    // processes breaking the same stale lock at the same instant can still end up sharing it.
    const aside = `${this.lockFile}.${process.pid}.${randomBytes(4).toString('hex')}.stale`;
    try { await rename(this.lockFile, aside); } catch { return; }
    const moved = await stat(aside).catch(() => undefined);
    if (moved && Date.now() - moved.mtimeMs < this.lockStaleMs) await link(aside, this.lockFile).catch(() => undefined);
    else process.stderr.write(`journal-store: broke stale ${this.lockFile} (older than ${this.lockStaleMs} ms)\n`);
    await unlink(aside).catch(() => undefined);
  }
}
