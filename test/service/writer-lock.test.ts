// One writer per DATA_DIR (docs/decisions.md, "Snapshots"): a load waits for another writer, gives up
// naming it, and takes over the lock of a writer that died.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync, mkdirSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { readCurrentId, readManifest, snapshotsDir } from '../../src/snapshots/snapshot-dir.js';
import { acquireWriterLock, UNNAMED_LOCK_MS, WriterBusyError, writerLockPath } from '../../src/snapshots/writer-lock.js';
import { writeSmallSource } from '../fixtures/small-source.js';
import { cli } from '../helpers/cli.js';

describe('one writer per data directory', function () {
  this.timeout(60_000);
  let dataDir: string;
  let source: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'explorer-writer-'));
    source = writeSmallSource(join(dataDir, 'source'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('makes a load wait for the writer that holds the lock, then go on', async () => {
    const release = await acquireWriterLock(dataDir, 'a test');
    let waitedFor: unknown;
    const loading = loadSnapshot(source, { dataDir, writerLock: { waitMs: 30_000, onWait: (holder) => { waitedFor = holder; } } });
    // However long the load takes to reach the lock on a busy machine: it says whom it waits for once it does.
    for (const end = Date.now() + 20_000; waitedFor === undefined && Date.now() < end;) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    expect(await readCurrentId(dataDir), 'nothing current while the lock is held').to.equal(null);
    expect(waitedFor).to.deep.include({ what: 'a test', pid: process.pid, host: hostname() });
    const releasedAt = Date.now();
    await release();
    const { manifest } = await loading;
    expect(await readCurrentId(dataDir)).to.equal(manifest.id);
    expect(Date.parse(manifest.createdAt), 'stamped once it held the lock').to.be.at.least(releasedAt);
    expect(existsSync(writerLockPath(dataDir)), 'released').to.equal(false);
  });

  it('gives up after its wait, naming the holder, and changes nothing', async () => {
    const release = await acquireWriterLock(dataDir, 'another load');
    try {
      let error: unknown;
      await loadSnapshot(source, { dataDir, writerLock: { waitMs: 300 } }).catch((e) => { error = e; });
      expect(error).to.be.instanceOf(WriterBusyError);
      expect((error as Error).message).to.contain('another load').and.to.contain(`pid ${process.pid}`);
      expect(await readCurrentId(dataDir)).to.equal(null);
    } finally {
      await release();
    }
  });

  it('lands two loads started together, one after the other, and leaves no lock', async () => {
    const [a, b] = await Promise.all([loadSnapshot(source, { dataDir }), loadSnapshot(source, { dataDir })]);
    const [first, second] = [a.manifest, b.manifest].sort((x, y) => (x.id < y.id ? -1 : 1));
    expect(await readCurrentId(dataDir)).to.equal(second!.id);
    expect((await readManifest(dataDir, first!.id)).id).to.equal(first!.id);
    expect(existsSync(writerLockPath(dataDir))).to.equal(false);
  });

  it('takes over the lock of a writer on this host that died, never one of another host', async () => {
    const dead = Number(execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }));
    mkdirSync(snapshotsDir(dataDir), { recursive: true });
    writeFileSync(writerLockPath(dataDir), JSON.stringify({ host: hostname(), pid: dead, what: 'load', since: new Date(0).toISOString() }));
    const { manifest } = await loadSnapshot(source, { dataDir, writerLock: { waitMs: 0 } });
    expect(await readCurrentId(dataDir)).to.equal(manifest.id);
    expect(existsSync(writerLockPath(dataDir))).to.equal(false);

    writeFileSync(writerLockPath(dataDir), JSON.stringify({ host: `${hostname()}-elsewhere`, pid: dead, what: 'load', since: new Date(0).toISOString() }));
    let error: unknown;
    await loadSnapshot(source, { dataDir, writerLock: { waitMs: 200 } }).catch((e) => { error = e; });
    expect(error).to.be.instanceOf(WriterBusyError);
    expect((error as Error).message).to.contain(`${hostname()}-elsewhere`);
  });

  it('takes over a lock that names no holder once it is older than a writer takes to write one, and leaves nothing beside it', async () => {
    // What a writer killed between creating the lock and writing it used to leave: an empty lock, which no
    // writer could judge and every one waited for.
    mkdirSync(snapshotsDir(dataDir), { recursive: true });
    writeFileSync(writerLockPath(dataDir), '');
    let error: unknown;
    await acquireWriterLock(dataDir, 'a test', { waitMs: 200 }).catch((e) => { error = e; });
    expect(error, 'a fresh one is waited for').to.be.instanceOf(WriterBusyError);
    const old = (Date.now() - UNNAMED_LOCK_MS - 1_000) / 1000;
    utimesSync(writerLockPath(dataDir), old, old);
    const release = await acquireWriterLock(dataDir, 'a test', { waitMs: 0 });
    expect(JSON.parse(readFileSync(writerLockPath(dataDir), 'utf8'))).to.deep.include({ pid: process.pid, what: 'a test' });
    // The lock is written whole under another name and linked into place: that name is gone once it is.
    expect(readdirSync(snapshotsDir(dataDir))).to.deep.equal(['WRITER']);
    await release();
    expect(readdirSync(snapshotsDir(dataDir))).to.deep.equal([]);
  });

  it('makes `explorer load` wait as long as WRITER_WAIT_MS, then exit 1 naming the holder', async () => {
    const release = await acquireWriterLock(dataDir, 'a test');
    process.env.WRITER_WAIT_MS = '300';
    try {
      const { code, stderr } = await cli(['load', source], dataDir);
      expect(code).to.equal(1);
      expect(stderr).to.contain(`waiting for a test (pid ${process.pid} on ${hostname()})`);
      expect(stderr).to.match(/load rejected: the data directory is being written by a test .*; the current snapshot is unchanged/);
      expect(await readCurrentId(dataDir)).to.equal(null);
    } finally {
      delete process.env.WRITER_WAIT_MS;
      await release();
    }
  });
});
