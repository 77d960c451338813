// Which layers an instance kept from batch to batch attaches again (build-steps.ts attachLayers): the
// statements it would run, recorded, over real files (a layer is known by its file, not its path).
import { expect } from 'chai';
import { linkSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { attachLayers, type KeptLayers, type LayerPaths } from '../../src/snapshots/write/build-steps.js';

describe('layers kept attached from one batch to the next', () => {
  let dir: string;
  const file = (name: string) => {
    const path = join(dir, name);
    writeFileSync(path, name);
    return path;
  };
  /** The ATTACH and DETACH statements attachLayers runs for `paths`, as `alias path` or `-alias`. */
  const attaching = async (paths: LayerPaths, kept?: KeptLayers) => {
    const ran: string[] = [];
    await attachLayers(async (sql) => {
      const attach = /^ATTACH '([^']+)' AS (\w+)/.exec(sql);
      if (attach) ran.push(`${attach[2]} ${attach[1]!.slice(dir.length + 1)}`);
      const detach = /^DETACH (\w+)/.exec(sql);
      if (detach) ran.push(`-${detach[1]}`);
    }, paths, kept);
    return ran;
  };
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'explorer-kept-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('attaches every layer each time when nothing is kept', async () => {
    const paths = { base: file('base'), whole: file('whole'), overlays: [], major: file('major'), minor: file('minor') };
    expect(await attaching(paths)).to.deep.equal(['f_base base', 'f_whole whole', 'f_major major', 'f_minor minor']);
    expect(await attaching(paths)).to.deep.equal(['f_base base', 'f_whole whole', 'f_major major', 'f_minor minor']);
  });

  it('attaches again only the newer delta while the other layers are the same files, under any snapshot\'s path', async () => {
    const kept: KeptLayers = new Map();
    const first = { base: file('base'), whole: null, overlays: [{ path: file('overlay-1'), organizations: { a: 1 } }], major: file('major'), minor: file('minor-1') };
    expect(await attaching(first, kept)).to.deep.equal(['f_base base', 'f_overlay0 overlay-1', 'f_major major', 'f_minor minor-1']);
    // The next snapshot links the same files under its own directory.
    linkSync(first.base, join(dir, 'base-linked'));
    const next = { ...first, base: join(dir, 'base-linked'), minor: file('minor-2') };
    expect(await attaching(next, kept)).to.deep.equal(['f_minor minor-2']);
  });

  it('attaches a layer again when its file changed, and lets go of one the snapshot no longer has', async () => {
    const kept: KeptLayers = new Map();
    const base = file('base');
    await attaching({ base, whole: null, overlays: [{ path: file('overlay-1'), organizations: { a: 1 } }, { path: file('overlay-2'), organizations: { b: 2 } }], major: file('major'), minor: null }, kept);
    // A compaction: a whole layer, no overlays or older delta any more; then a load: another base.
    expect(await attaching({ base, whole: file('whole'), overlays: [], major: null, minor: null }, kept))
      .to.deep.equal(['f_whole whole', '-f_overlay0', '-f_overlay1', '-f_major']);
    expect(await attaching({ base: file('base-2'), whole: null, overlays: [], major: null, minor: null }, kept))
      .to.deep.equal(['-f_base', 'f_base base-2', '-f_whole']);
    expect([...kept.keys()]).to.deep.equal(['f_base']);
  });
});
