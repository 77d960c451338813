// The source rules for workspace_resources.ndjson and the new keys of the other files (docs/snapshot-source.md):
// every problem is a `file:line: reason`, a repeated address within a workspace names both lines, and a
// source with any problem is refused whole, the current snapshot left as it was.
import { expect } from 'chai';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { AddressSet } from '../../src/snapshots/write/address-set.js';
import { openInstance } from '../../src/duckdb/open-instance.js';
import { DATABASE_FILE, loadSnapshot, SourceInvalidError } from '../../src/snapshots/write/load.js';
import { snapshotPath } from '../../src/snapshots/snapshot-dir.js';
import { foldedColumns } from '../../src/snapshots/write/compact.js';
import { VIEW_NAMES } from '../../src/catalog/catalog.js';
import { validateSource } from '../../src/snapshots/write/source-validator.js';
import { resources, workspaces, writeSmallSource } from '../fixtures/small-source.js';

const ndjson = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
const R = resources[0]!;

describe('resources and the new source keys', function () {
  this.timeout(60_000);
  let root: string;
  before(() => { root = mkdtempSync(join(tmpdir(), 'resource-source-')); });
  after(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  const errorsOf = async (overrides: Record<string, string>) => {
    const dir = writeSmallSource(join(root, `s${++n}`), overrides);
    return (await validateSource(dir)).errors;
  };

  it('accepts the fixture, counting its resources, and gives the versions they name an order key', async () => {
    const dir = writeSmallSource(join(root, 'ok'));
    const v = await validateSource(dir);
    expect(v.errors).to.deep.equal([]);
    expect(v.counts.workspace_resources).to.equal(resources.length);
    // The loader collects the versions itself, while the source is validated: each resource's version
    // must have its key stored beside it, or a version sort would put it among the non-versions.
    const dataDir = join(root, 'versions');
    const { manifest } = await loadSnapshot(dir, { dataDir });
    const db = await openInstance(':memory:', { threads: '1' });
    const c = await db.connect();
    try {
      await c.run(`ATTACH '${join(snapshotPath(dataDir, manifest.id), DATABASE_FILE)}' AS s (READ_ONLY)`);
      const keyed = (await c.runAndReadAll(`SELECT DISTINCT engine_version, engine_version__vk IS NOT NULL FROM s.resources`)).getRows();
      expect(Object.fromEntries(keyed)).to.include({ '1.10.0-rc1': true, '1.9.8': true, 'v1.5.7': true });
    } finally {
      c.closeSync();
      db.closeSync();
    }
  });

  it('stores a folded copy only where folding changes a value, and the copy folds A–Z alone', async () => {
    const dataDir = join(root, 'folds');
    const { manifest } = await loadSnapshot(writeSmallSource(join(root, 'folds-source')), { dataDir });
    const db = await openInstance(':memory:', { threads: '1' });
    const c = await db.connect();
    const asciiFold = (v: string) => v.replace(/[A-Z]/g, (ch) => ch.toLowerCase());
    try {
      await c.run(`ATTACH '${join(snapshotPath(dataDir, manifest.id), DATABASE_FILE)}' AS s (READ_ONLY)`);
      let stored = 0;
      for (const view of VIEW_NAMES) {
        for (const { column, folded } of foldedColumns(view)) {
          const rows = (await c.runAndReadAll(`SELECT "${column}", "${folded}" FROM s."${view}" WHERE "${column}" IS NOT NULL`)).getRows() as [string, string | null][];
          for (const [value, copy] of rows) {
            if (copy === null) {
              expect(asciiFold(value), `${view}.${column}`).to.equal(value);
            } else {
              expect(copy, `${view}.${column}`).to.equal(asciiFold(value)).and.not.equal(value);
              stored++;
            }
          }
        }
      }
      expect(stored, 'some values change when folded').to.be.above(0);
    } finally {
      c.closeSync();
      db.closeSync();
    }
  });

  it('reports each bad resource line with its reason', async () => {
    const bad = [
      { ...R, address: undefined },
      { ...R, address: 'a'.repeat(1025) },
      { ...R, address: 'x.y', name: 'n'.repeat(256) },
      { ...R, address: 'x.z', type: '' },
      { ...R, address: 'x.w', provider: 7 },
      { ...R, address: 'x.v', run_id: 'r-1' },
      { ...R, address: 'x.u', billable: 'yes' },
      { ...R, address: 'x.t', state_updated_at: '2024-02-30T00:00:00Z' },
      { ...R, address: 'x.s', workspace_id: 'ws-nope' },
      { ...R, address: 'x.r', module: 'm'.repeat(256) },
      { ...R, address: 'x.q', state_updated_at: undefined },
    ];
    const errors = await errorsOf({ 'workspace_resources.ndjson': ndjson([R, ...bad]) + '[1]\n' });
    expect(errors).to.deep.equal([
      'workspace_resources.ndjson:2: address is required',
      'workspace_resources.ndjson:3: address is longer than 1024 characters',
      'workspace_resources.ndjson:4: name is longer than 255 characters',
      'workspace_resources.ndjson:5: type is required',
      'workspace_resources.ndjson:6: provider must be a string',
      'workspace_resources.ndjson:7: run_id "r-1" is not a run id (run-<1–64 letters or digits>)',
      'workspace_resources.ndjson:8: billable must be true or false',
      'workspace_resources.ndjson:9: state_updated_at "2024-02-30T00:00:00Z" is not a real date and time',
      'workspace_resources.ndjson:10: workspace_id ws-nope does not exist',
      'workspace_resources.ndjson:11: module is longer than 255 characters',
      'workspace_resources.ndjson:12: state_updated_at is required',
      'workspace_resources.ndjson:13: a line must hold one JSON object',
    ]);
  });

  it('counts 1024 characters, not UTF-16 units or bytes, against the address limit', async () => {
    const errors = await errorsOf({ 'workspace_resources.ndjson': ndjson([{ ...R, address: '😀'.repeat(1024) }, { ...R, address: '😀'.repeat(1025) }]) });
    expect(errors).to.deep.equal(['workspace_resources.ndjson:2: address is longer than 1024 characters']);
  });

  it('names both lines of an address repeated within a workspace, and allows the same address in another workspace', async () => {
    const rows = [
      R,
      { ...R, address: 'aws_vpc.main' },
      { ...R, workspace_id: 'ws-aaa2' }, // same address, another workspace: fine
      { ...R, address: 'AWS_INSTANCE.WEB[0]' }, // case differs: another address
      { ...R, name: 'other' }, // same workspace and address as line 1
      { ...R, address: 'aws_vpc.main', run_id: undefined }, // same as line 2
      R, // a third time
    ];
    const errors = await errorsOf({ 'workspace_resources.ndjson': ndjson(rows) });
    expect(errors).to.deep.equal([
      `workspace_resources.ndjson:5: duplicate address "${R.address}" in workspace ws-aaa1 (first on line 1)`,
      'workspace_resources.ndjson:6: duplicate address "aws_vpc.main" in workspace ws-aaa1 (first on line 2)',
      `workspace_resources.ndjson:7: duplicate address "${R.address}" in workspace ws-aaa1 (first on line 1)`,
    ]);
  });

  it('finds one repeated address among 200,000 rows of a gzip file, at the right lines', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 200_000; i++) lines.push(JSON.stringify({ ...R, workspace_id: i % 2 ? 'ws-aaa1' : 'ws-aaa3', address: `r.x${i >> 1}` }));
    lines.push(JSON.stringify({ ...R, workspace_id: 'ws-aaa3', address: 'r.x77777' }));
    const dir = writeSmallSource(join(root, 'big'));
    rmSync(join(dir, 'workspace_resources.ndjson'));
    writeFileSync(join(dir, 'workspace_resources.ndjson.gz'), gzipSync(lines.join('\n') + '\n'));
    const v = await validateSource(dir);
    expect(v.errors).to.deep.equal(['workspace_resources.ndjson.gz:200001: duplicate address "r.x77777" in workspace ws-aaa3 (first on line 155555)']);
  });

  it('checks the new keys of organizations, workspaces, providers and modules', async () => {
    const ws = workspaces.map((w) => ({ ...w }));
    const errors = await errorsOf({
      'organizations.ndjson': ndjson([{ name: 'acme-corp', id: 'org-A1' }, { name: 'globex', id: 'org-A1' }, { name: 'empty-org', id: 'acme' }]),
      'workspaces.ndjson': ndjson([
        { ...ws[0], resource_count: -1 },
        { ...ws[1], current_rum_count: 1.5 },
        { ...ws[2], source_module_id: 's'.repeat(256) },
        { ...ws[3], resource_count: '3' },
        ws[4]!, ws[5]!,
      ]),
      'workspace_providers.ndjson': ndjson([{ workspace_id: 'ws-aaa1', name: 'aws', source: 'a', version: '1', curated: 'yes' }]),
      'workspace_modules.ndjson': ndjson([{ workspace_id: 'ws-aaa1', name: 'm', source: './m', curated: 1 }]),
    });
    expect(errors).to.deep.equal([
      'organizations.ndjson:2: organization id org-A1 is used twice',
      'organizations.ndjson:3: id "acme" is not an organization id (org-<1–64 letters or digits>)',
      'workspaces.ndjson:1: resource_count must be a whole number ≥ 0',
      'workspaces.ndjson:2: current_rum_count must be a whole number ≥ 0',
      'workspaces.ndjson:3: source_module_id is longer than 255 characters',
      'workspaces.ndjson:4: resource_count must be a whole number ≥ 0',
      'workspace_providers.ndjson:1: curated must be true or false',
      'workspace_modules.ndjson:1: curated must be true or false',
    ]);
  });

  it('refuses a source with a repeated address whole: the load fails and the current snapshot stays', async () => {
    const dataDir = join(root, 'data');
    const good = await loadSnapshot(writeSmallSource(join(root, 'good')), { dataDir });
    const current = readFileSync(join(dataDir, 'snapshots', 'CURRENT'), 'utf8');
    expect(current.trim()).to.equal(good.manifest.id);
    const dir = writeSmallSource(join(root, 'dup'), { 'workspace_resources.ndjson': ndjson([R, R]) });
    const failure = await loadSnapshot(dir, { dataDir }).then(() => null, (e: unknown) => e);
    expect(failure).to.be.instanceOf(SourceInvalidError);
    expect((failure as SourceInvalidError).errors).to.deep.equal([
      `workspace_resources.ndjson:2: duplicate address "${R.address}" in workspace ws-aaa1 (first on line 1)`,
    ]);
    expect(readFileSync(join(dataDir, 'snapshots', 'CURRENT'), 'utf8')).to.equal(current);
  });

  it('reports the validation\'s problems, not the build\'s, when a line DuckDB cannot read is invalid, and leaves no partial snapshot', async () => {
    // The build reads the files while they are validated: a line that is not JSON fails both, and the
    // load must report the file and line, not DuckDB's own message.
    const dataDir = join(root, 'data-bad-json');
    const dir = writeSmallSource(join(root, 'bad-json'), { 'workspace_resources.ndjson': `${JSON.stringify(R)}\n{"workspace_id": \n` });
    const failure = await loadSnapshot(dir, { dataDir }).then(() => null, (e: unknown) => e);
    expect(failure).to.be.instanceOf(SourceInvalidError);
    expect((failure as SourceInvalidError).errors).to.deep.equal(['workspace_resources.ndjson:2: not valid JSON']);
    expect(readdirSync(join(dataDir, 'snapshots')).filter((f) => f.startsWith('.tmp-'))).to.deep.equal([]);
  });

  it('AddressSet: every repeated key is a candidate, distinct keys are not', () => {
    const set = new AddressSet();
    for (let i = 0; i < 50_000; i++) set.add(`ws-${i % 97}`, `a.b${i}`);
    set.add('ws-3', 'a.b100'); // 100 % 97 = 3: a repeat
    set.add('ws-4', 'a.b100'); // the same address in another workspace: no repeat
    const hashOf = (w: string, a: string) => set.hashOf(w, a);
    const candidates = set.candidates();
    expect(candidates.has(hashOf('ws-3', 'a.b100'))).to.equal(true);
    expect(candidates.has(hashOf('ws-4', 'a.b100'))).to.equal(false);
    expect(candidates.size).to.equal(1);
  });
});
