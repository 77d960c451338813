// `explorer migrate-state --to-redis`: a single node's tokens and saved views move into Redis without loss,
// and running it again changes nothing.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { issueToken } from '../../src/access/tokens.js';
import { openStateStore } from '../../src/store/open-store.js';
import type { NotificationConfiguration, SavedView } from '../../src/store/state-store.js';
import { REDIS_BACKENDS, type StartedBackend } from '../helpers/redis-backends.js';
import { loadConfig } from '../../src/config.js';

const run = promisify(execFile);
const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;

for (const backend of REDIS_BACKENDS) describe(`explorer migrate-state --to-redis, to ${backend.name}`, function () {
  this.timeout(30_000);
  let redis: StartedBackend;
  let dataDir: string;
  before(async () => {
    redis = await backend.start();
    dataDir = mkdtempSync(join(tmpdir(), 'explorer-migrate-'));
  });
  after(async () => {
    await redis.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const view = (id: string, organization: string, name: string, createdAt: string): SavedView => ({
    id, organization, name, queryType: 'workspaces', createdAt, updatedAt: createdAt,
    query: { type: 'workspaces', filter: [{ field: 'drifted', operator: 'is', value: ['true'] }], sort: ['-workspace_updated_at'] },
  });

  it('copies every token and view, then finds nothing left to copy', async () => {
    const local = await openStateStore({ dataDir });
    const tokens = [
      await issueToken(local, { kind: 'organization', organization: 'acme-corp' }),
      await issueToken(local, { kind: 'user', user: 'alice' }),
    ];
    const views = [
      view('sq-AAAAAAAAAAAAAAA1', 'acme-corp', 'drifted', '2026-01-01T00:00:00.000Z'),
      view('sq-AAAAAAAAAAAAAAA2', 'acme-corp', 'drifted 2', '2026-01-02T00:00:00.000Z'),
      view('sq-BBBBBBBBBBBBBBB1', 'globex', 'drifted', '2026-01-01T00:00:00.000Z'),
    ];
    for (const v of views) await local.createView(v);
    const configuration: NotificationConfiguration = {
      id: 'nc-AAAAAAAAAAAAAAA1', organization: 'acme-corp', viewId: views[0]!.id, name: 'drift alerts', enabled: true,
      destinationType: 'generic', url: 'https://hooks.example.com/x', token: 'secret', triggers: ['explorer:rows-added'], threshold: null,
      createdAt: '2026-01-03T00:00:00.000Z', updatedAt: '2026-01-03T00:00:00.000Z',
    };
    await local.createNotificationConfiguration(configuration);
    await local.close();

    const env = { ...process.env, DATA_DIR: dataDir, ...redis.env };
    const first = await run(process.execPath, [CLI, 'migrate-state', '--to-redis'], { env });
    expect(first.stdout.trim()).to.equal('migrated 2 tokens, 3 saved views and 1 notification configurations to Redis (0 already there, 0 conflicts)');
    const again = await run(process.execPath, [CLI, 'migrate-state', '--to-redis'], { env });
    expect(again.stdout.trim()).to.equal('migrated 2 tokens, 0 saved views and 0 notification configurations to Redis (4 already there, 0 conflicts)');

    const shared = await openStateStore(loadConfig({ DATA_DIR: dataDir, ...redis.env }));
    try {
      expect((await shared.listTokens()).map((t) => t.id).sort()).to.deep.equal(tokens.map((t) => t.record.id).sort());
      expect(await shared.getToken(tokens[0]!.record.id)).to.deep.equal(tokens[0]!.record);
      expect(await shared.listViewOrganizations()).to.deep.equal(['acme-corp', 'globex']);
      expect(await shared.listViews('acme-corp')).to.deep.equal(views.slice(0, 2));
      expect(await shared.listViews('globex')).to.deep.equal(views.slice(2));
      expect(await shared.listNotificationConfigurations('acme-corp', views[0]!.id)).to.deep.equal([configuration]);
    } finally {
      await shared.close();
    }
  });

  it('reports a name already taken in Redis as a conflict and exits 1', async () => {
    const local = await openStateStore({ dataDir });
    await local.createView(view('sq-CCCCCCCCCCCCCCC1', 'acme-corp', 'drifted 3', '2026-02-01T00:00:00.000Z'));
    await local.close();
    const shared = await openStateStore(loadConfig({ DATA_DIR: dataDir, ...redis.env }));
    await shared.createView(view('sq-DDDDDDDDDDDDDDD1', 'acme-corp', 'drifted 3', '2026-02-02T00:00:00.000Z'));
    await shared.close();
    const env = { ...process.env, DATA_DIR: dataDir, ...redis.env };
    const result = await run(process.execPath, [CLI, 'migrate-state', '--to-redis'], { env }).then(() => ({ code: 0, stderr: '' }), (e) => e as { code: number; stderr: string });
    expect(result.code).to.equal(1);
    expect(result.stderr).to.include('conflict: acme-corp/sq-CCCCCCCCCCCCCCC1: the name "drifted 3" is taken in the target');
  });
});
