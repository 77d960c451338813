import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFile, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { openJournalStore, type JournalStore } from '../../src/store/journal-store.js';
import { NameTakenError, StoreCorruptError, StoreUnavailableError, type SavedView, type TokenRecord } from '../../src/store/state-store.js';

const compiledStore = resolve(dirname(fileURLToPath(import.meta.url)), '../../src/store/journal-store.js');

function token(id: string, extra: Partial<TokenRecord> = {}): TokenRecord {
  return {
    id, kind: 'organization', organization: 'acme', team: null, user: null,
    secretHash: 'ab'.repeat(32), createdAt: '2024-01-01T00:00:00.000Z', description: null, ...extra,
  };
}

function view(id: string, name: string, extra: Partial<SavedView> = {}): SavedView {
  return {
    id, organization: 'acme', name, queryType: 'workspaces',
    query: { type: 'workspaces', filter: [{ field: 'name', operator: 'contains', value: ['prod'] }] },
    createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-01-01T00:00:00.000Z', ...extra,
  };
}

const sq = (n: number) => `sq-${String(n).padStart(16, '0')}`;

async function captureStderr<T>(fn: () => Promise<T>): Promise<{ result: T; stderr: string }> {
  const original = process.stderr.write;
  let stderr = '';
  process.stderr.write = ((chunk: string | Uint8Array) => { stderr += String(chunk); return true; }) as typeof process.stderr.write;
  try {
    return { result: await fn(), stderr };
  } finally {
    process.stderr.write = original;
  }
}

async function journalLines(dir: string): Promise<string[]> {
  return (await readFile(join(dir, 'journal.ndjson'), 'utf8')).split('\n').filter((l) => l !== '');
}

/** Starts a child node process that creates views in a loop and prints each acknowledged id. */
async function startWriter(scriptDir: string, storeDir: string, prefix: string, count: number) {
  const script = join(scriptDir, `journal-writer-${prefix}.mjs`);
  await writeFile(script, `
    import { openJournalStore } from ${JSON.stringify(pathToFileURL(compiledStore).href)};
    const [dir, prefix, count] = process.argv.slice(2);
    const store = await openJournalStore(dir);
    for (let i = 0; i < Number(count); i++) {
      const id = 'sq-' + prefix + String(i).padStart(12, '0');
      const now = new Date().toISOString();
      await store.createView({ id, organization: 'acme', name: prefix + ' view ' + i, queryType: 'workspaces',
        query: { type: 'workspaces', filter: [] }, createdAt: now, updatedAt: now });
      process.stdout.write(id + '\\n');
    }
    await store.close();
  `);
  const child = spawn(process.execPath, [script, storeDir, prefix, String(count)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return { child, exited };
}

describe('JournalStore', function () {
  let root: string;
  let dir: string;
  const open: JournalStore[] = [];
  const openStore = async (options?: Parameters<typeof openJournalStore>[1]) => {
    const store = await openJournalStore(dir, options);
    open.push(store);
    return store;
  };

  beforeEach(async () => { root = dir = await mkdtemp(join(tmpdir(), 'journal-store-')); });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
    await rm(root, { recursive: true, force: true });
  });

  it('creates the directory and round-trips tokens', async () => {
    dir = join(dir, 'nested', 'state');
    const store = await openStore();
    await store.putToken(token('at-b', { createdAt: '2024-01-02T00:00:00.000Z' }));
    await store.putToken(token('at-a', { kind: 'user', organization: null, user: 'u1', description: 'ci' }));
    expect(await store.getToken('at-a')).to.deep.equal(token('at-a', { kind: 'user', organization: null, user: 'u1', description: 'ci' }));
    expect((await store.listTokens()).map((t) => t.id)).to.deep.equal(['at-a', 'at-b']);
    expect(await store.revokeToken('at-a')).to.equal(true);
    expect(await store.revokeToken('at-a')).to.equal(false);
    expect(await store.revokeToken('at-nope')).to.equal(false);
    expect(await store.getToken('at-a')).to.equal(undefined);
    const copy = (await store.getToken('at-b'))!;
    copy.description = 'mutated';
    expect((await store.getToken('at-b'))!.description).to.equal(null);
    const lines = await journalLines(dir);
    expect(lines).to.have.length(3);
    for (const line of lines) expect(line).to.match(/^[0-9a-f]{16} \{"v":1,"kind":"(put|del)-token",/);
  });

  it('round-trips views, scoped by organization, ordered by createdAt then id, returning copies', async () => {
    const store = await openStore();
    await store.createView(view('sq-c', 'third', { createdAt: '2024-01-03T00:00:00.000Z' }));
    await store.createView(view('sq-b', 'second'));
    await store.createView(view('sq-a', 'first'));
    await store.createView(view('sq-x', 'other org', { organization: 'globex' }));
    expect((await store.listViews('acme')).map((v) => v.id)).to.deep.equal(['sq-a', 'sq-b', 'sq-c']);
    expect((await store.listViews('globex')).map((v) => v.id)).to.deep.equal(['sq-x']);
    expect(await store.listViews('nobody')).to.deep.equal([]);
    expect(await store.getView('acme', 'sq-x')).to.equal(undefined);
    expect(await store.getView('globex', 'sq-x')).to.deep.equal(view('sq-x', 'other org', { organization: 'globex' }));

    const listed = await store.listViews('acme');
    listed[0]!.name = 'mutated';
    listed[0]!.query.filter.push({ field: 'x', operator: 'eq', value: ['y'] });
    expect(await store.getView('acme', 'sq-a')).to.deep.equal(view('sq-a', 'first'));

    const change = { name: 'renamed', query: { type: 'workspaces', filter: [], sort: ['name'] }, updatedAt: '2024-02-01T00:00:00.000Z' };
    const updated = await store.updateView('acme', 'sq-a', change);
    expect(updated).to.deep.equal({ ...view('sq-a', 'first'), ...change });
    expect(await store.getView('acme', 'sq-a')).to.deep.equal(updated);
    expect(await store.updateView('acme', 'sq-missing', change)).to.equal(undefined);
    expect(await store.updateView('globex', 'sq-a', change)).to.equal(undefined);

    expect(await store.deleteView('globex', 'sq-a')).to.equal(undefined);
    expect(await store.deleteView('acme', 'sq-a')).to.deep.equal(updated);
    expect(await store.deleteView('acme', 'sq-a')).to.equal(undefined);
    expect((await store.listViews('acme')).map((v) => v.id)).to.deep.equal(['sq-b', 'sq-c']);
  });

  it('throws NameTakenError on create and update clashes within an organization only', async () => {
    const store = await openStore();
    await store.createView(view('sq-1', 'Prod'));
    await store.createView(view('sq-2', 'Staging'));
    const err = await store.createView(view('sq-3', 'Prod')).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(NameTakenError);
    expect((err as NameTakenError).viewName).to.equal('Prod');
    await store.createView(view('sq-4', 'prod')); // exact comparison
    await store.createView(view('sq-5', 'Prod', { organization: 'globex' }));
    const change = { name: 'Prod', query: view('x', 'x').query, updatedAt: '2024-03-01T00:00:00.000Z' };
    expect(await store.updateView('acme', 'sq-2', change).catch((e: unknown) => e)).to.be.instanceOf(NameTakenError);
    expect((await store.updateView('acme', 'sq-1', change))!.updatedAt).to.equal(change.updatedAt); // own name is fine
    expect((await store.getView('acme', 'sq-2'))!.name).to.equal('Staging');
    expect(await store.getView('acme', 'sq-3')).to.equal(undefined);
    await store.deleteView('acme', 'sq-1');
    await store.createView(view('sq-6', 'Prod')); // name is free again
  });

  it('lets exactly one of 50 concurrent createView calls with the same name succeed', async () => {
    const store = await openStore();
    const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => store.createView(view(sq(i), 'Same'))));
    const fulfilled = results.filter((r) => r.status === 'fulfilled');
    expect(fulfilled).to.have.length(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).to.be.instanceOf(NameTakenError);
    expect(await store.listViews('acme')).to.have.length(1);
  });

  it('loses none of 50 concurrent updates', async () => {
    const store = await openStore();
    for (let i = 0; i < 50; i++) await store.createView(view(sq(i), `view ${i}`));
    const query = view('x', 'x').query;
    await Promise.all(Array.from({ length: 50 }, (_, i) =>
      store.updateView('acme', sq(i), { name: `renamed ${i}`, query, updatedAt: '2024-05-01T00:00:00.000Z' })));
    // and 50 concurrent updates of one view apply in call order
    await Promise.all(Array.from({ length: 50 }, (_, i) =>
      store.updateView('acme', sq(0), { name: `again ${i}`, query, updatedAt: `2024-06-01T00:00:${String(i).padStart(2, '0')}.000Z` })));
    await store.close();
    const reopened = await openStore();
    const views = await reopened.listViews('acme');
    expect(views.map((v) => v.name)).to.deep.equal(['again 49', ...Array.from({ length: 49 }, (_, i) => `renamed ${i + 1}`)]);
    expect(await journalLines(dir)).to.have.length(150);
  });

  it('sees everything after reopening', async () => {
    const first = await openStore();
    await first.putToken(token('at-1'));
    await first.putToken(token('at-2'));
    await first.revokeToken('at-1');
    await first.createView(view('sq-1', 'one'));
    await first.createView(view('sq-2', 'two'));
    await first.updateView('acme', 'sq-2', { name: 'deux', query: view('x', 'x').query, updatedAt: '2024-07-01T00:00:00.000Z' });
    await first.deleteView('acme', 'sq-1');
    const before = { tokens: await first.listTokens(), views: await first.listViews('acme') };
    await first.close();
    const second = await openStore();
    expect({ tokens: await second.listTokens(), views: await second.listViews('acme') }).to.deep.equal(before);
    expect(before.tokens.map((t) => t.id)).to.deep.equal(['at-2']);
    expect(before.views.map((v) => v.name)).to.deep.equal(['deux']);
  });

  it('shows a second instance on the same directory what the first wrote, at once', async () => {
    const server = await openStore();
    const cli = await openStore();
    expect(await server.getToken('at-new')).to.equal(undefined);
    await cli.putToken(token('at-new'));
    expect(await server.getToken('at-new')).to.deep.equal(token('at-new'));
    await server.revokeToken('at-new');
    expect(await cli.getToken('at-new')).to.equal(undefined);
    expect(await cli.listTokens()).to.deep.equal([]);

    await server.createView(view('sq-1', 'shared'));
    expect(await cli.createView(view('sq-2', 'shared')).catch((e: unknown) => e)).to.be.instanceOf(NameTakenError);
    expect(await cli.deleteView('acme', 'sq-1')).to.deep.equal(view('sq-1', 'shared'));
    expect(await server.listViews('acme')).to.deep.equal([]);
    expect(await journalLines(dir)).to.have.length(4);
  });

  it('shows every read what another process wrote before it began, with reads in flight around the write', async () => {
    const server = await openStore();
    const cli = await openStore();
    await cli.putToken(token('at-busy'));
    expect(await server.getToken('at-busy')).to.deep.equal(token('at-busy')); // caught up: the next stat finds nothing new
    // A read begun before the write, whose answer has not yet reached its caller: the event loop is held by
    // a synchronous child process that revokes the token meanwhile. Reads that start after the child has
    // finished must see the revocation, whatever the earlier read saw.
    const early = server.getToken('at-busy');
    const revoke = `import { openJournalStore } from ${JSON.stringify(pathToFileURL(compiledStore).href)};
      const store = await openJournalStore(process.argv[1]); await store.revokeToken('at-busy'); await store.close();`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', revoke, dir], { stdio: 'inherit' });
    expect(child.status).to.equal(0);
    const late = Array.from({ length: 10 }, () => server.getToken('at-busy'));
    for (const seen of await Promise.all(late)) expect(seen).to.equal(undefined);
    expect((await early)?.id ?? 'revoked').to.be.oneOf(['at-busy', 'revoked']);
  });

  it('refuses to open a journal with a damaged line, naming the line and leaving the file untouched', async () => {
    const store = await openStore();
    for (let i = 0; i < 3; i++) await store.putToken(token(`at-${i}`));
    await store.close();
    const file = join(dir, 'journal.ndjson');
    const original = await readFile(file);
    const secondLine = original.indexOf('\n') + 1;

    const flipped = Buffer.from(original);
    flipped[secondLine + 40] ^= 0x01;
    await writeFile(file, flipped);
    const err = await openJournalStore(dir).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(StoreCorruptError);
    expect((err as Error).message).to.match(/^journal\.ndjson:2: checksum mismatch/);
    expect((await stat(file)).size).to.equal(original.length);
    expect(await readFile(file)).to.deep.equal(flipped);

    // A well-checksummed but meaningless record, even as the last (terminated) line, is corruption too.
    const openWithFourthLine = async (line: string) => {
      await writeFile(file, Buffer.concat([original, Buffer.from(`${line}\n`)]));
      const e = await openJournalStore(dir).then((s) => { open.push(s); return undefined; }, (e: unknown) => e);
      expect(e, line).to.be.instanceOf(StoreCorruptError);
      return (e as Error).message;
    };
    const signed = (json: string) => `${createHash('sha256').update(json).digest('hex').slice(0, 16)} ${json}`;
    expect(await openWithFourthLine(signed('{"v":1,"kind":"put-cat"}'))).to.match(/^journal\.ndjson:4: unknown record kind "put-cat"/);
    expect(await openWithFourthLine(signed('{"v":1,"kind":'))).to.match(/^journal\.ndjson:4: invalid JSON/);
    expect(await openWithFourthLine(signed('{"v":2,"kind":"del-token","id":"x"}'))).to.match(/^journal\.ndjson:4: unsupported format version 2/);
    expect(await openWithFourthLine(signed('{"v":1,"kind":"put-view","view":{"id":"sq-1"}}'))).to.match(/^journal\.ndjson:4: put-view without/);
    expect(await openWithFourthLine('no checksum here')).to.match(/^journal\.ndjson:4: malformed line/);
  });

  it('drops a torn final line with a warning, then keeps working', async () => {
    const store = await openStore();
    await store.putToken(token('at-kept'));
    await store.close();
    const file = join(dir, 'journal.ndjson');
    const json = JSON.stringify({ v: 1, kind: 'put-token', token: token('at-torn') });
    const sizeBefore = (await stat(file)).size;
    await appendFile(file, `0123456789abcdef ${json}`.slice(0, 60));

    const { result: reopened, stderr } = await captureStderr(() => openStore());
    expect(stderr).to.match(/journal\.ndjson: dropping an unterminated final line \(60 bytes after line 1\)/);
    expect(stderr.trim().split('\n')).to.have.length(1);
    expect((await stat(file)).size).to.equal(sizeBefore);
    expect((await reopened.listTokens()).map((t) => t.id)).to.deep.equal(['at-kept']);
    await reopened.putToken(token('at-after'));
    await reopened.close();
    const again = await openStore();
    expect((await again.listTokens()).map((t) => t.id)).to.deep.equal(['at-after', 'at-kept']);
    expect(await journalLines(dir)).to.have.length(2);
  });

  it('cuts off a line torn by another process before appending after it', async () => {
    const store = await openStore();
    await store.putToken(token('at-1'));
    await appendFile(join(dir, 'journal.ndjson'), '0123456789abcdef {"v":1,"kind":"put-tok');
    expect((await store.listTokens()).map((t) => t.id)).to.deep.equal(['at-1']); // reads ignore the partial tail
    const { stderr } = await captureStderr(() => store.putToken(token('at-2')));
    expect(stderr).to.contain('dropping an unterminated final line');
    await store.close();
    const reopened = await openStore();
    expect((await reopened.listTokens()).map((t) => t.id)).to.deep.equal(['at-1', 'at-2']);
  });

  it('keeps every acknowledged write of a process killed with SIGKILL', async function () {
    this.timeout(60_000);
    const { child, exited } = await startWriter(dir, join(dir, 'state'), 'k', 100_000);
    const acknowledged: string[] = [];
    let buffered = '';
    await new Promise<void>((done, fail) => {
      child.on('exit', (code) => fail(new Error(`writer exited early with ${code}`)));
      child.stdout!.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        acknowledged.push(...lines);
        if (acknowledged.length >= 100 && !child.killed) { child.kill('SIGKILL'); done(); }
      });
    });
    await exited;
    expect(acknowledged.length).to.be.at.least(100);
    const store = await captureStderr(() => openJournalStore(join(dir, 'state'), { lockStaleMs: 500 })).then((r) => r.result);
    open.push(store);
    const ids = new Set((await store.listViews('acme')).map((v) => v.id));
    for (const id of acknowledged) expect(ids.has(id), id).to.equal(true);
    // the killed writer probably held journal.lock; it must go stale and be broken, not block forever
    await captureStderr(() => store.createView(view('sq-after-kill', 'after kill')));
    expect(await store.getView('acme', 'sq-after-kill')).to.not.equal(undefined);
  });

  it('never interleaves records appended by two processes at once', async function () {
    this.timeout(60_000);
    const writers = [await startWriter(dir, join(dir, 'state'), 'a', 150), await startWriter(dir, join(dir, 'state'), 'b', 150)];
    for (const w of writers) w.child.stdout.resume();
    expect(await Promise.all(writers.map((w) => w.exited))).to.deep.equal([0, 0]);
    const store = await openJournalStore(join(dir, 'state'));
    open.push(store);
    const views = await store.listViews('acme');
    expect(views).to.have.length(300);
    expect(await journalLines(join(dir, 'state'))).to.have.length(300);
  });

  it('compacts a mostly dead journal, keeping live data, also for another instance', async () => {
    const store = await openStore({ compactAfterRecords: 100 });
    const other = await openStore({ compactAfterRecords: 100 });
    await store.putToken(token('at-live'));
    await store.putToken(token('at-dead'));
    await store.revokeToken('at-dead');
    await store.createView(view('sq-1', 'v0'));
    await store.createView(view('sq-2', 'kept'));
    const inodeBefore = (await stat(join(dir, 'journal.ndjson'))).ino;
    const query = view('x', 'x').query;
    for (let i = 1; i <= 100; i++) await store.updateView('acme', 'sq-1', { name: `v${i}`, query, updatedAt: '2024-08-01T00:00:00.000Z' });
    expect((await stat(join(dir, 'journal.ndjson'))).ino).to.not.equal(inodeBefore);
    const lines = await journalLines(dir);
    expect(lines.length).to.be.lessThan(20);
    expect((await store.listTokens()).map((t) => t.id)).to.deep.equal(['at-live']);
    expect((await store.listViews('acme')).map((v) => v.name)).to.deep.equal(['v100', 'kept']);
    // the other instance still holds the old inode: it must notice the replacement and append to the new file
    expect((await other.getView('acme', 'sq-1'))!.name).to.equal('v100');
    await other.createView(view('sq-3', 'from other'));
    expect((await store.getView('acme', 'sq-3'))!.name).to.equal('from other');
    await store.close();
    await other.close();
    const reopened = await openStore();
    expect((await reopened.listViews('acme')).map((v) => v.name)).to.deep.equal(['v100', 'kept', 'from other']);
    expect((await reopened.listTokens()).map((t) => t.id)).to.deep.equal(['at-live']);
  });

  it('waits for a held journal.lock and breaks a stale one', async () => {
    const store = await openStore({ lockStaleMs: 60_000 });
    const lock = join(dir, 'journal.lock');
    await writeFile(lock, 'someone else\n');
    let done = false;
    const pending = store.putToken(token('at-1')).then(() => { done = true; });
    await new Promise((r) => setTimeout(r, 150));
    expect(done).to.equal(false);
    expect(await store.getToken('at-1')).to.equal(undefined); // reads never wait for the lock
    await rm(lock);
    await pending;
    expect(await store.getToken('at-1')).to.not.equal(undefined);

    await writeFile(lock, 'crashed\n');
    const old = new Date(Date.now() - 120_000);
    await utimes(lock, old, old);
    const { stderr } = await captureStderr(() => store.putToken(token('at-2')));
    expect(stderr).to.contain('broke stale');
    expect((await store.listTokens()).map((t) => t.id)).to.deep.equal(['at-1', 'at-2']);
    expect(await stat(lock).then(() => 'exists', () => 'gone')).to.equal('gone');
  });

  it('rejects operations after close', async () => {
    const store = await openJournalStore(dir);
    const pending = store.putToken(token('at-1'));
    await store.close();
    await pending; // accepted before close, so it completes
    for (const op of [() => store.getToken('at-1'), () => store.listViews('acme'), () => store.putToken(token('at-2'))]) {
      expect(await op().then(() => 'resolved', (e: unknown) => e)).to.be.instanceOf(StoreUnavailableError);
    }
    await store.close(); // idempotent
    const reopened = await openStore();
    expect((await reopened.listTokens()).map((t) => t.id)).to.deep.equal(['at-1']);
  });
});
