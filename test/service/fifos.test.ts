// The export FIFOs: made in batches, held by one export at a time, given back for reuse, removed when a
// writer may still hold one. Real FIFOs in a real directory.
import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Fifos, isHeldFifo } from '../../src/pool/fifos.js';

describe('export FIFOs', () => {
  let dir: string;
  beforeEach(() => { dir = join(mkdtempSync(join(tmpdir(), 'explorer-fifos-')), 'fifos'); });
  afterEach(() => rmSync(join(dir, '..'), { recursive: true, force: true }));

  const names = () => readdirSync(dir);

  it('holds each for one export, reuses what is given back, and grows in batches as large as all made', async () => {
    const fifos = new Fifos(dir);
    const held = await Promise.all(Array.from({ length: 33 }, (_, i) => fifos.take(`task-${i}`)));
    expect(new Set(held).size).to.equal(33);
    for (const path of held) expect(statSync(path).isFIFO(), path).to.equal(true);
    // 16 made first, then 16 more for the 17th, then 32 for the 33rd.
    expect(names()).to.have.length(64);
    expect(names().filter(isHeldFifo).sort()).to.deep.equal(Array.from({ length: 33 }, (_, i) => `task-${i}.csv`).sort());
    await Promise.all(held.map((p) => fifos.give(p)));
    expect(names().filter(isHeldFifo)).to.deep.equal([]);
    // Given back, they serve the next exports without another mkfifo.
    const again = await Promise.all(Array.from({ length: 64 }, (_, i) => fifos.take(`next-${i}`)));
    expect(names()).to.have.length(64);
    for (const path of again) expect(statSync(path).isFIFO(), path).to.equal(true);
  });

  it('removes one a writer may still hold instead of reusing it', async () => {
    const fifos = new Fifos(dir);
    const path = await fifos.take('task');
    await fifos.discard(path);
    expect(names()).to.have.length(15);
    expect(names().filter(isHeldFifo)).to.deep.equal([]);
  });
});
