// What decides when the follower tidies and what (docs/changes.md §5, "Tidying"), without a database: the CPU
// budget, the graded delay of a lone batch, the order of the organizations in debt, and the servers' read
// scores the order starts from.
import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decayed, OrganizationReads, READS_DIR, READS_HALF_LIFE_MS, READS_STALE_MS, readScores } from '../../src/metrics/organization-reads.js';
import type { Manifest } from '../../src/snapshots/snapshot-dir.js';
import { CpuBudget } from '../../src/snapshots/write/cpu-budget.js';
import { coalesceDelayMs } from '../../src/snapshots/write/ingest.js';
import { tidyCandidates } from '../../src/snapshots/write/tidy.js';

describe('tidying: the CPU budget', () => {
  it('earns its share of a core while time passes, up to the burst, and nothing before', () => {
    const b = new CpuBudget(0.1, 10, 0);
    expect(b.available(0)).to.equal(0);
    expect(b.available(5_000)).to.be.closeTo(0.5, 1e-9);
    expect(b.available(1_000_000)).to.equal(10);
  });

  it('lets a unit overdraw it, then waits until the debt is earned back', () => {
    const b = new CpuBudget(0.25, 10, 0);
    expect(b.waitMs(4_000)).to.equal(0); // 1 CPU-second earned
    b.spend(3, 4_000); // the unit cost 3
    expect(b.available(4_000)).to.be.closeTo(-2, 1e-9);
    expect(b.waitMs(4_000)).to.equal(8_001);
    expect(b.available(12_000)).to.be.closeTo(0, 1e-9);
    expect(b.available(12_004)).to.be.greaterThan(0);
  });

  it('spends at most its share over a long run, however much work there is', () => {
    const b = new CpuBudget(0.1, 10, 0);
    let spent = 0;
    // A unit of 2.5 CPU-s whenever allowed, checked every second for an hour.
    for (let t = 0; t <= 3_600_000; t += 1000) if (b.available(t) > 0) { b.spend(2.5, t); spent += 2.5; }
    expect(spent).to.be.at.most(0.1 * 3600 + 10 + 2.5);
    expect(spent).to.be.at.least(0.1 * 3600 - 2.5);
  });

  it('never earns with no share of a core', () => {
    const b = new CpuBudget(0, 10, 0);
    expect(b.available(10_000_000)).to.equal(0);
    expect(b.waitMs(10_000_000)).to.equal(Infinity);
    expect(() => new CpuBudget(-1, 1, 0)).to.throw();
  });
});

describe('tidying: the graded delay of a lone batch', () => {
  it('is none up to the organizations it lets be in debt, then grows with the excess to its bound', () => {
    expect(coalesceDelayMs(0, 100, 5000)).to.equal(0);
    expect(coalesceDelayMs(100, 100, 5000)).to.equal(0);
    expect(coalesceDelayMs(120, 100, 5000)).to.equal(1000);
    expect(coalesceDelayMs(150, 100, 5000)).to.equal(2500);
    expect(coalesceDelayMs(200, 100, 5000)).to.equal(5000);
    expect(coalesceDelayMs(10_000, 100, 5000)).to.equal(5000);
    expect(coalesceDelayMs(10_000, 100, 0)).to.equal(0);
  });
});

describe('tidying: which organizations a unit takes', () => {
  const m = (major: string[], minor: string[], rows: Record<string, number>): Manifest => ({
    id: 's', createdAt: '2026-11-28T00:00:00.000Z', source: 'x', counts: {}, files: {}, rows: {},
    organizationRows: { workspaces: rows, resources: {} },
    organizationKeys: Object.fromEntries(Object.keys(rows).map((o, i) => [o, i + 1])),
    major: 'major.duckdb', majorOrganizations: major, delta: 'delta.duckdb', deltaOrganizations: minor,
  });

  it('takes the most-read first, then those read through both deltas, then the smallest', () => {
    const manifest = m(['both', 'old'], ['both', 'small', 'read', 'big'], { both: 50, old: 40, small: 10, read: 300, big: 200, huge: 5 });
    expect(tidyCandidates(manifest, 1000).map((c) => c.name)).to.deep.equal(['both', 'small', 'old', 'big', 'read']);
    expect(tidyCandidates(manifest, 1000, { read: 3, big: 0.5 }).map((c) => c.name)).to.deep.equal(['read', 'big', 'both', 'small', 'old']);
    expect(tidyCandidates(manifest, 1000).find((c) => c.name === 'both')!.deltas).to.equal(2);
  });

  it('leaves out organizations too large to write whole, and those no delta holds', () => {
    const manifest = m(['old'], ['small', 'big'], { old: 40, small: 10, big: 2000, huge: 5 });
    expect(tidyCandidates(manifest, 1000, { big: 100, huge: 100 }).map((c) => c.name)).to.deep.equal(['small', 'old']);
  });

  it('takes an organization of any size once the deltas replace its share of workspaces, as found in its lowest layer', () => {
    const manifest: Manifest = {
      ...m(['old'], ['small', 'big', 'bigger', 'moved'], { old: 40, small: 10, big: 2000, bigger: 3000, moved: 2000 }),
      database: 'snapshot.duckdb',
      hidden: {
        big: { lowest: 'snapshot.duckdb', rows: { workspaces: 200 }, ranges: null },
        bigger: { lowest: 'snapshot.duckdb', rows: { workspaces: 299 }, ranges: null },
        // Found in a layer that is no longer its lowest: not known.
        moved: { lowest: 'whole-3.duckdb', rows: { workspaces: 1500 }, ranges: null },
      },
    };
    expect(tidyCandidates(manifest, 1000).map((c) => c.name)).to.deep.equal(['small', 'old']);
    expect(tidyCandidates(manifest, 1000, {}, 0.1, 1000).map((c) => c.name)).to.deep.equal(['small', 'old', 'big']);
    expect(tidyCandidates(manifest, 1000, { bigger: 1 }, 0.099, 1000).map((c) => c.name)).to.deep.equal(['bigger', 'small', 'old', 'big']);
    expect(tidyCandidates(manifest, 0, {}, 0.1, 1000).map((c) => c.name)).to.deep.equal(['big']);
    // Only above the size the share applies from.
    expect(tidyCandidates(manifest, 0, {}, 0.1, 2000).map((c) => c.name)).to.deep.equal([]);
  });
});

describe('tidying: the servers\' reads of each organization', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'explorer-reads-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('halves a score every half-life and drops what is left of nothing', () => {
    expect(decayed({ a: 8, b: 0.012 }, 0)).to.deep.equal({ a: 8, b: 0.012 });
    const later = decayed({ a: 8, b: 0.012 }, 2 * READS_HALF_LIFE_MS);
    expect(later.a).to.be.closeTo(2, 1e-9);
    expect(later).to.not.have.property('b');
  });

  it('sums every server\'s file, each decayed from when it was written, and ignores stale and broken ones', async () => {
    const t = Date.UTC(2026, 10, 28, 12);
    const one = new OrganizationReads(dir, 'one');
    const two = new OrganizationReads(dir, 'two');
    for (let i = 0; i < 6; i++) one.record('acme');
    one.record('globex');
    await one.flush(t);
    for (let i = 0; i < 4; i++) two.record('acme');
    await two.flush(t - READS_HALF_LIFE_MS);
    writeFileSync(join(dir, READS_DIR, 'broken.json'), '{"at": ');
    writeFileSync(join(dir, READS_DIR, 'gone.json'), JSON.stringify({ at: t - READS_STALE_MS - 1, scores: { initech: 100 } }));
    utimesSync(join(dir, READS_DIR, 'gone.json'), new Date(), new Date());
    const scores = await readScores(dir, t);
    expect(scores.acme).to.be.closeTo(6 + 2, 1e-9);
    expect(scores.globex).to.be.closeTo(1, 1e-9);
    expect(scores).to.not.have.property('initech');
    expect(existsSync(join(dir, READS_DIR, 'gone.json')), 'a stale file removed').to.equal(false);
    expect(existsSync(join(dir, READS_DIR, 'broken.json')), 'a file being written left alone').to.equal(true);
  });

  it('carries a server\'s earlier reads, decayed, into its next file', async () => {
    const t = Date.UTC(2026, 10, 28, 12);
    const reads = new OrganizationReads(dir, 'one');
    for (let i = 0; i < 4; i++) reads.record('acme');
    await reads.flush(t);
    reads.record('acme');
    await reads.flush(t + READS_HALF_LIFE_MS);
    expect((await readScores(dir, t + READS_HALF_LIFE_MS)).acme).to.be.closeTo(4 / 2 + 1, 1e-9);
  });

  it('reads nothing from a data directory no server has written to', async () => {
    expect(await readScores(join(dir, 'nowhere'))).to.deep.equal({});
  });
});
