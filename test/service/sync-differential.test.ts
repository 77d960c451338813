// The round trip over random sources and random change sequences: an upstream (another instance of this
// service) loaded with a generated source and changed batch by batch with `apply`, each change followed by a
// sync of every organization. After each sync every route of the organizations answers on the mirror as on
// the upstream: each view as JSON and CSV, summaries, a saved view, and /changes between the mirror's two
// latest sync snapshots as the upstream's /changes between its own two.
import { expect } from 'chai';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { catalogFor } from '../../src/catalog/catalog.js';
import { loadConfig } from '../../src/config.js';
import { silentLogger } from '../../src/log.js';
import { seededRandom } from '../../src/sample/random.js';
import { writeSampleChanges } from '../../src/sample/sample-changes.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { readCurrentId } from '../../src/snapshots/snapshot-dir.js';
import { applyBatch } from '../../src/snapshots/write/apply.js';
import { comparableAnswer } from '../helpers/compare-routes.js';
import { clientQuery } from '../helpers/harness.js';
import { mirrorable, runSync, sameAnswers, SERVER_ENV, startUpstream, type Upstream } from '../helpers/sync-upstream.js';

describe('explorer sync: differential over random sources and change sequences', function () {
  this.timeout(600_000);
  const servers: RunningServer[] = [];
  const dirs: string[] = [];
  after(async () => {
    await Promise.all(servers.map((s) => s.shutdown()));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  // One seed by default, which draws three organizations (three syncs taking turns at the writer lock);
  // SYNC_DIFF_SEEDS=301,302 runs others as well (301 draws two).
  const seeds = (process.env.SYNC_DIFF_SEEDS ?? '302').split(',').map(Number);
  for (const seed of seeds) {
    it(`seed ${seed}: every route alike after each sync, /changes between syncs as between the upstream's applies`, async () => {
      const rnd = seededRandom(seed);
      const dir = mkdtempSync(join(tmpdir(), `explorer-sync-diff-${seed}-`));
      dirs.push(dir);
      const up: Upstream = await startUpstream(dir, { organizations: 2 + Math.floor(rnd() * 2), workspaces: 60 + Math.floor(rnd() * 100), seed });
      servers.push(up.server);
      const orgs = up.organizations;
      const down = join(dir, 'down');
      // Each organization by its own token, so one run each; side by side, their writes taking turns at the
      // writer lock as any two writers do.
      const syncAll = async () => {
        const runs = await Promise.all(orgs.map((org) => runSync(['--from', up.server.url, '--organization', org], down, { EXPLORER_SYNC_TOKEN: up.tokens.get(org)! })));
        for (const r of runs) expect(r.code, r.stderr).to.equal(0);
      };
      await syncAll();

      // A saved view per organization, made upstream before the state store is copied: the mirror holds it too.
      const saved = new Map<string, string>();
      for (const org of orgs) {
        const res = await fetch(`${up.server.url}/api/v2/organizations/${org}/explorer/views`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${up.tokens.get(org)}`, 'Content-Type': 'application/vnd.api+json' },
          body: JSON.stringify({ data: { type: 'explorer-saved-queries', attributes: { name: 'drifted', 'query-type': 'workspaces',
            query: { filter: [{ field: 'drifted', operator: 'is', value: ['true'] }], sort: ['-workspace_name'] } } } }),
        });
        expect(res.status).to.equal(201);
        saved.set(org, ((await res.json()) as { data: { id: string } }).data.id);
      }
      cpSync(join(up.dataDir, 'state'), join(down, 'state'), { recursive: true });
      const mirror = await startServer(loadConfig({ ...SERVER_ENV, DATA_DIR: down }), silentLogger);
      servers.push(mirror);
      const compare = async () => {
        await sameAnswers(up.server, mirror, orgs, up.tokens);
        for (const org of orgs) {
          const path = `/api/v2/organizations/${org}/explorer/views/${saved.get(org)}/results`;
          const [x, y] = await Promise.all([comparableAnswer(up.server, path, up.tokens.get(org)), comparableAnswer(mirror, path, up.tokens.get(org))]);
          expect(x.status, path).to.equal(200);
          expect(y, path).to.deep.equal(x);
        }
      };
      await compare();

      // A random sequence of change batches, each applied upstream and then synced.
      const steps = await writeSampleChanges(up.source, join(dir, 'changes'), { batches: 3, workspaces: 5 + Math.floor(rnd() * 25), seed });
      let compared = 0;
      for (const step of steps) {
        const batch = join(dir, 'changes', step.name);
        mirrorable(batch);
        const [upFrom, downFrom] = [await readCurrentId(up.dataDir), await readCurrentId(down)];
        await applyBatch(batch, { dataDir: up.dataDir, memoryLimit: '1GB' });
        await syncAll();
        const [upTo, downTo] = [await readCurrentId(up.dataDir), await readCurrentId(down)];
        expect(downTo, `${step.name}: a sync snapshot`).to.not.equal(downFrom);
        await compare();
        for (const org of orgs) {
          for (const view of catalogFor().views) {
            const base = `/api/v2/organizations/${org}/explorer/changes`;
            const query = (from: string, to: string) => clientQuery({ type: view.name, from, to, 'page[size]': '100' });
            for (const [u, d] of [[`${base}${query(upFrom!, upTo!)}`, `${base}${query(downFrom!, downTo!)}`],
              [`${base}/export/csv${query(upFrom!, upTo!)}`, `${base}/export/csv${query(downFrom!, downTo!)}`]] as const) {
              const [x, y] = await Promise.all([comparableAnswer(up.server, u, up.tokens.get(org)), comparableAnswer(mirror, d, up.tokens.get(org))]);
              expect(x.status, u).to.equal(200);
              expect(y, `${step.name}: ${d}`).to.deep.equal(x);
              compared++;
            }
          }
        }
      }
      expect(compared).to.equal(steps.length * orgs.length * catalogFor().views.length * 2);
    });
  }
});
