// Loading snapshots: bad sources are rejected whole with file:line reasons and leave the current snapshot
// serving; a new snapshot reaches a running server by itself, without failed or mixed responses.
import { expect } from 'chai';
import { promises as fs, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { writeSmallSource, workspaces } from '../fixtures/small-source.js';
import { startHarness, json, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { cli } from '../helpers/cli.js';
import { DuckDBInstance } from '@duckdb/node-api';
import { readCurrentId, snapshotPath } from '../../src/snapshots/snapshot-dir.js';
import { DATABASE_FILE } from '../../src/snapshots/write/load.js';
import { CSV_LINE_COLUMN, ROW_JSON_COLUMN, VIEW_NAMES } from '../../src/catalog/catalog.js';



const ndjson = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

describe('loading snapshots', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.close(); });

  const names = async () => (await json(await h.explorer('?type=workspaces&fields=workspace_name&page%5Bsize%5D=100'))).data.map((r: any) => r.attributes['workspace-name']).sort();

  it('rejects an invalid source with file:line reasons, exits non-zero and keeps the current snapshot serving', async () => {
    const before = await fs.readFile(join(h.dataDir, 'snapshots', 'CURRENT'), 'utf8');
    const dir = join(h.dataDir, 'bad-source');
    const ws = workspaces.map((w) => ({ ...w }));
    writeSmallSource(dir, {
      'workspaces.ndjson': [
        JSON.stringify(ws[0]),
        JSON.stringify({ ...ws[1], id: 'workspace-2' }),
        '{"id": "ws-x", broken json',
        JSON.stringify({ ...ws[2], created_at: '2023-02-30T00:00:00Z' }),
        JSON.stringify({ ...ws[3], project_id: 'prj-glx' }),
        JSON.stringify({ ...ws[4], name: ws[0]!.name }),
        JSON.stringify({ ...ws[5], checks: { passed: -1 } }),
      ].join('\n') + '\n',
      'workspace_providers.ndjson': ndjson([{ workspace_id: 'ws-nope', name: 'aws', source: 's', version: '1' }]),
    });
    const { code, stderr } = await cli(['load', dir], h.dataDir);
    expect(code).to.equal(1);
    const lines = stderr.trim().split("\n");
    expect(lines).to.include.members([
      'workspaces.ndjson:2: id "workspace-2" is not a workspace id (ws-<1–64 letters or digits>)',
      'workspaces.ndjson:3: not valid JSON',
      'workspaces.ndjson:4: created_at "2023-02-30T00:00:00Z" is not a real date and time',
      'workspaces.ndjson:5: project_id prj-glx is not a project of organization acme-corp',
      'workspaces.ndjson:6: organization acme-corp already has a workspace named "payments-api"',
      'workspaces.ndjson:7: checks.passed must be a whole number ≥ 0',
      'workspace_providers.ndjson:1: workspace_id ws-nope does not exist',
      // ws-aaa2 was renamed above, so its module row really has no workspace; invalid ws-bbb1 still counts as existing
      'workspace_modules.ndjson:3: workspace_id ws-aaa2 does not exist',
    ]);
    expect(lines[lines.length - 1]).to.match(/load rejected: the source has 8 problems; the current snapshot is unchanged/);
    expect(await fs.readFile(join(h.dataDir, 'snapshots', 'CURRENT'), 'utf8')).to.equal(before);
    expect(readdirSync(join(h.dataDir, 'snapshots')).filter((n) => n.startsWith('.tmp-'))).to.deep.equal([]);
    expect((await h.explorer('?type=workspaces')).status).to.equal(200);
  });

  it('requires organizations.ndjson and reports a missing directory', async () => {
    const dir = join(h.dataDir, 'no-orgs');
    writeSmallSource(dir);
    await fs.unlink(join(dir, 'organizations.ndjson'));
    const missing = await cli(['load', dir], h.dataDir);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.include('organizations.ndjson: the file is required');
    const nowhere = await cli(['load', join(h.dataDir, 'nowhere')], h.dataDir);
    expect(nowhere.code).to.equal(1);
    expect(nowhere.stderr).to.include('not a directory');
  });

  it('switches a running server to a new snapshot within seconds, with no failed or mixed responses', async () => {
    const oldId = (await h.explorer('?type=workspaces')).headers.get('x-explorer-snapshot');
    const dir = join(h.dataDir, 'renamed');
    const renamed = workspaces.map((w) => (w.organization === 'acme-corp' ? { ...w, name: `v2-${w.name as string}` } : w));
    writeSmallSource(dir, { 'workspaces.ndjson': ndjson(renamed) });
    let stop = false;
    const seen: { snapshot: string | null; names: string[] }[] = [];
    const hammer = (async () => {
      while (!stop) {
        const res = await h.explorer('?type=workspaces&fields=workspace_name&page%5Bsize%5D=100');
        expect(res.status).to.equal(200);
        const body = await json(res);
        seen.push({ snapshot: res.headers.get('x-explorer-snapshot'), names: body.data.map((r: any) => r.attributes['workspace-name']) });
      }
    })();
    const { code, stdout } = await cli(['load', dir], h.dataDir);
    expect(code, stdout).to.equal(0);
    expect(stdout).to.match(/^loaded snapshot \S+: 3 organizations, 6 workspaces, 9 provider rows, 4 module rows, 10 resource rows in [\d.]+ s\n$/);
    await waitFor(async () => (await names()).every((n: string) => n.startsWith('v2-')), 5000);
    stop = true;
    await hammer;
    const newId = (await h.explorer('?type=workspaces')).headers.get('x-explorer-snapshot');
    expect(newId).to.not.equal(oldId);
    for (const s of seen) {
      // Every response is wholly of the snapshot it names.
      expect(s.names.every((n) => n.startsWith('v2-'))).to.equal(s.snapshot === newId);
      expect(s.names.some((n) => n.startsWith('v2-'))).to.equal(s.snapshot === newId);
    }
  });

  it('reads gzip-compressed source files', async () => {
    const dir = join(h.dataDir, 'gz');
    writeSmallSource(dir);
    const text = await fs.readFile(join(dir, 'workspaces.ndjson'));
    await fs.unlink(join(dir, 'workspaces.ndjson'));
    writeFileSync(join(dir, 'workspaces.ndjson.gz'), gzipSync(text));
    const { manifest } = await loadSnapshot(dir, { dataDir: join(h.dataDir, 'gz-data') });
    expect(manifest.counts.workspaces).to.equal(6);
    expect(manifest.rows.workspaces).to.equal(6);
  });

  it('keeps the newest `keep` snapshots, removes older ones, and stamps ids in load order', async () => {
    const dataDir = join(h.dataDir, 'prune-data');
    const dir = join(h.dataDir, 'prune-source');
    writeSmallSource(dir);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await loadSnapshot(dir, { dataDir, keep: 3, label: `load ${i}` })).manifest.id);
    expect([...ids].sort()).to.deep.equal(ids);
    const left = readdirSync(join(dataDir, 'snapshots')).filter((n) => !n.startsWith('.') && n !== 'CURRENT').sort();
    expect(left).to.deep.equal(ids.slice(2));
    expect((await fs.readFile(join(dataDir, 'snapshots', 'CURRENT'), 'utf8')).trim()).to.equal(ids[4]);
  });
});

describe('the explorer command', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => { h = await startHarness(); });
  after(async () => { await h.close(); });

  it('creates a token as the last line of stdout, lists tokens without secrets, and revokes them', async () => {
    const created = await cli(['token', 'create', '--organization', 'acme-corp', '--team', 'readers'], h.dataDir);
    expect(created.code).to.equal(0);
    const token = created.stdout.trim().split('\n').pop()!;
    expect(token).to.match(/^at-[A-Za-z0-9]{16}\.[A-Za-z0-9]{40}$/);
    expect((await h.explorer('?type=workspaces', token)).status).to.equal(200);
    const id = token.split('.')[0]!;
    const list = await cli(['token', 'list'], h.dataDir);
    expect(list.stdout).to.include(`${id}\tteam\tacme-corp\treaders`);
    expect(list.stdout).to.not.include(token.split('.')[1]!);
    const stored = await fs.readFile(join(h.dataDir, 'state', 'journal.ndjson'), 'utf8');
    expect(stored).to.not.include(token.split('.')[1]!);
    const revoked = await cli(['token', 'revoke', id], h.dataDir);
    expect(revoked.code).to.equal(0);
    expect((await h.explorer('?type=workspaces', token)).status).to.equal(401);
    expect((await cli(['token', 'revoke', id], h.dataDir)).code).to.equal(1);
  });

  it('creates user tokens that reach every organization where the user has a qualifying team', async () => {
    const created = await cli(['token', 'create', '--organization', 'globex', '--user', 'alice'], h.dataDir);
    const token = created.stdout.trim().split('\n').pop()!;
    expect((await h.explorer('?type=workspaces', token)).status).to.equal(200);
  });

  it('refuses bad usage with exit code 2', async () => {
    expect((await cli(['token', 'create'], h.dataDir)).code).to.equal(2);
    expect((await cli(['token', 'create', '--organization', 'a', '--team', 't', '--user', 'u'], h.dataDir)).code).to.equal(2);
    expect((await cli(['sample'], h.dataDir)).code).to.equal(2);
    expect((await cli(['frobnicate'], h.dataDir)).code).to.equal(2);
    expect((await cli(['load', 'x', '--force', 'y'], h.dataDir)).code).to.equal(2);
  });

  it('writes a sample that loads', async () => {
    const dir = join(h.dataDir, 'cli-sample');
    const sample = await cli(['sample', dir, '--organizations', '5', '--workspaces', '300', '--seed', '9'], h.dataDir);
    expect(sample.code, sample.stderr).to.equal(0);
    const loaded = await cli(['load', dir], h.dataDir);
    expect(loaded.code, loaded.stderr).to.equal(0);
    expect(loaded.stdout).to.match(/5 organizations, 300 workspaces/);
  });

  it('stores every view\'s row JSON uncompressed (pages read a few rows) and its CSV lines with zstd (exports read runs)', async () => {
    const file = join(snapshotPath(h.dataDir, (await readCurrentId(h.dataDir))!), DATABASE_FILE);
    const db = await DuckDBInstance.create(file, { access_mode: 'READ_ONLY' });
    const c = await db.connect();
    try {
      for (const view of VIEW_NAMES) {
        const stored = (await c.runAndReadAll(
          `SELECT column_name, string_agg(DISTINCT compression, ',' ORDER BY compression) FROM pragma_storage_info('${view}')
           WHERE segment_type <> 'VALIDITY' AND column_name IN ('${ROW_JSON_COLUMN}', '${CSV_LINE_COLUMN}') GROUP BY 1 ORDER BY 1`,
        )).getRows();
        expect(stored, view).to.deep.equal([[CSV_LINE_COLUMN, 'ZSTD'], [ROW_JSON_COLUMN, 'Uncompressed']]);
      }
    } finally {
      c.closeSync();
      db.closeSync();
    }
  });
});
