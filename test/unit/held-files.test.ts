// What a server holds of the snapshot files across batch snapshots: one link per file however many snapshots
// read it (pins.ts), and a worker that keeps attached the file its pages keep using (workers/engine.ts),
// so that a new batch snapshot every few seconds does not detach the base every page of an untouched
// organization reads.
import { expect } from 'chai';
import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openInstance } from '../../src/duckdb/open-instance.js';
import { Pins } from '../../src/snapshots/read/pins.js';
import { Engine } from '../../workers/engine.js';

describe('files held across batch snapshots', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'explorer-held-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('pins one file once, however many snapshots pin it, until the last lets it go', async () => {
    const pins = await Pins.create(dir);
    const file = join(dir, 'snapshot.duckdb');
    writeFileSync(file, 'base');
    const first = await pins.pin(file);
    const second = await pins.pin(file);
    expect(second).to.equal(first);
    await pins.unpin(first);
    expect(existsSync(first), 'still pinned by the second snapshot').to.equal(true);
    await pins.unpin(second);
    expect(existsSync(first), 'let go by both').to.equal(false);
    await pins.close();
  });

  it('pins a file replaced under the same name as another file', async () => {
    const pins = await Pins.create(dir);
    const file = join(dir, 'manifest-named.duckdb');
    writeFileSync(file, 'old');
    const old = await pins.pin(file);
    writeFileSync(join(dir, 'next'), 'new');
    renameSync(join(dir, 'next'), file);
    const replaced = await pins.pin(file);
    expect(replaced).to.not.equal(old);
    await pins.unpin(old);
    expect(existsSync(old)).to.equal(false);
    expect(existsSync(replaced)).to.equal(true);
    await pins.close();
  });

  it('keeps attached the file every task reads while newer files come and go', async () => {
    const paths: string[] = [];
    for (let i = 0; i < 6; i++) {
      const path = join(dir, `layer-${i}.duckdb`);
      const instance = await openInstance(path);
      const c = await instance.connect();
      await c.run(`CREATE TABLE t AS SELECT ${i} AS n`);
      c.closeSync();
      instance.closeSync();
      paths.push(path);
    }
    const engine = new Engine({ threads: '1', memory_limit: '256MB' }, 2);
    const attached = async () => {
      const c = await (await engine.database()).connect();
      const names = (await c.runAndReadAll(`SELECT database_name FROM duckdb_databases() WHERE database_name LIKE 'layer%' ORDER BY 1`)).getRows().map(([n]) => n as string);
      c.closeSync();
      return names;
    };
    const base = { alias: 'layer0', path: paths[0]! };
    // After each batch, a task of a touched organization attaches the new snapshot's layer, and the next task
    // reads the base alone, as a page of an untouched organization does.
    engine.done(await engine.attach(base));
    for (let i = 1; i < 6; i++) {
      engine.done(await engine.attach({ alias: `layer${i}`, path: paths[i]! }));
      const names = await attached();
      expect(names, `after layer ${i}`).to.include('layer0');
      expect(names.length).to.be.at.most(2);
      engine.done(await engine.attach(base));
    }
    expect(await attached()).to.deep.equal(['layer0', 'layer5']);
    (await engine.database()).closeSync();
  });
});
