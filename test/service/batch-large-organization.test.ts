// The pages of an organization too large to be read whole (over SMALL_ORGANIZATION_ROWS rows) after change
// batches: those find their rows by position (the row-id fetch), matched in the merged layers and fetched from
// the layers' tables. After each batch they must answer what a full load of the resulting source answers.
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueToken } from '../../src/access/tokens.js';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { SMALL_ORGANIZATION_ROWS } from '../../src/query/compile.js';
import { writeSample } from '../../src/sample/sample.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { readManifest, readCurrentId } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { loadSnapshot } from '../../src/snapshots/write/load.js';
import { openStateStore } from '../../src/store/open-store.js';
import { applyBatch as oracle } from '../helpers/batch-oracle.js';
import { clientQuery } from '../helpers/harness.js';

describe('a large organization\'s pages after change batches', function () {
  this.timeout(300_000);
  let dir: string;
  const servers: RunningServer[] = [];
  after(async () => {
    await Promise.all(servers.map((s) => s.shutdown()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answer as a full load of the resulting source, found by position through the layers', async () => {
    dir = mkdtempSync(join(tmpdir(), 'explorer-large-batches-'));
    const s0 = join(dir, 's0');
    await writeSample(s0, { organizations: 1, workspaces: 700, seed: 31 });
    const org = JSON.parse(readFileSync(join(s0, 'organizations.ndjson'), 'utf8').split('\n')[0]!).name as string;
    await writeSampleChanges(s0, join(dir, 'batches'), { batches: 4, workspaces: 40, seed: 31 });
    const viaBatches = join(dir, 'via-batches');
    const viaLoads = join(dir, 'via-loads');
    await loadSnapshot(s0, { dataDir: viaBatches, memoryLimit: '1GB', label: 'base' });
    await loadSnapshot(s0, { dataDir: viaLoads, memoryLimit: '1GB', label: 'base' });
    const rows = (await readManifest(viaBatches, (await readCurrentId(viaBatches))!)).organizationRows!.resources![org]!;
    expect(rows, 'resource rows of the organization').to.be.above(SMALL_ORGANIZATION_ROWS);

    const store = await openStateStore(loadConfig({ DATA_DIR: viaBatches }));
    const token = (await issueToken(store, { kind: 'organization', organization: org })).token;
    await store.close();
    cpSync(join(viaBatches, 'state'), join(viaLoads, 'state'), { recursive: true });
    const env = { PORT: '0', POOL_WORKERS: '1', SNAPSHOT_POLL_MS: '3600000', RATE_LIMIT_MAX: '1000000', RESPONSE_CACHE_MB: '0' };
    const a = await startServer(loadConfig({ ...env, DATA_DIR: viaBatches }), silentLogger);
    const b = await startServer(loadConfig({ ...env, DATA_DIR: viaLoads }), silentLogger);
    servers.push(a, b);

    // Pages in orders other than the stored one: the row-id fetch.
    const base = `/api/v2/organizations/${org}/explorer`;
    const paths = [
      `${base}${clientQuery({ type: 'resources', sort: '-source_updated_at', 'page[size]': '20' })}`,
      `${base}${clientQuery({ type: 'resources', sort: 'address', 'page[size]': '50', 'page[number]': '3' })}`,
      `${base}${clientQuery({ type: 'resources', 'filter[0][provider_type][contains][0]': 'a', sort: '-workspace_name,address', 'page[size]': '100' })}`,
      `${base}${clientQuery({ type: 'resources', 'filter[0][workspace_name][contains][0]': 'a', sort: 'name' })}`,
    ];
    let state = s0;
    for (let i = 1; i <= 4; i++) {
      const batch = join(dir, 'batches', `batch-000${i}`);
      const next = join(dir, `s${i}`);
      oracle(state, batch, next);
      state = next;
      // A fold threshold that folds at the third batch: the last reads a newer delta over an older one.
      await applyBatch(batch, { dataDir: viaBatches, memoryLimit: '1GB', foldWorkspaces: 60, wholeRows: 0 });
      await loadSnapshot(next, { dataDir: viaLoads, memoryLimit: '1GB' });
      await Promise.all([a.snapshots.refresh(), b.snapshots.refresh()]);
      for (const path of paths) {
        const get = async (s: RunningServer) => {
          const res = await fetch(`${s.url}${path}`, { headers: { Authorization: `Bearer ${token}` } });
          const body = await res.json() as any;
          return { status: res.status, data: body.data, total: body.meta?.pagination?.['total-count'] };
        };
        const [x, y] = await Promise.all([get(a), get(b)]);
        expect(x.status, path).to.equal(200);
        expect(x.data.length, path).to.be.above(0);
        expect(x, `batch ${i}: ${path}`).to.deep.equal(y);
      }
    }
    const last = await readManifest(viaBatches, (await readCurrentId(viaBatches))!);
    expect(last.major, 'an older delta').to.be.a('string');
    expect(last.delta, 'a newer delta').to.be.a('string');
  });
});
