// docs/configuration.md lists every variable the code reads, and nothing else: src/config.ts is the one
// place that reads the environment, so its names are read off its text (`env.NAME`, and the names given to
// its parsers), and every other file of src/ and workers/ must not read process.env at all.
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, loadSyncSettings, syncCredentials } from '../../src/config.js';

const ROOT = resolve(fileURLToPath(import.meta.url), '../../../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Variables DuckDB or the engine's CLI define, which we set or follow rather than read through config.ts. */
const NOT_OURS = new Set(['DUCKDB_JE_MALLOC_CONF', 'HOME']);

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(ROOT, path)).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('configuration', () => {
  const config = read('src/config.ts');
  const page = read('docs/configuration.md');
  const read_ = new Set([
    ...[...config.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!),
    ...[...config.matchAll(/\b(?:int|decimal|share)\(env, '([A-Z][A-Z0-9_]+)'/g)].map((m) => m[1]!),
  ]);
  const listed = new Set([...page.matchAll(/^\| `([A-Z][A-Za-z0-9_<>]+)` \|/gm)].map((m) => m[1]!));

  it('lists every variable src/config.ts reads', () => {
    expect(read_.size).to.be.above(40);
    const missing = [...read_].filter((v) => !listed.has(v) && !NOT_OURS.has(v));
    expect(missing, 'read in src/config.ts, not in docs/configuration.md').to.deep.equal([]);
  });

  it('lists only variables something reads', () => {
    // TF_TOKEN_<host> is read by its prefix (syncCredentials).
    const unread = [...listed].filter((v) => !read_.has(v) && !NOT_OURS.has(v) && v !== 'TF_TOKEN_<host>');
    expect(unread, 'in docs/configuration.md, read nowhere').to.deep.equal([]);
    expect(config).to.match(/TF_TOKEN_/);
  });

  it('is the only file of src/ and workers/ that reads the environment', () => {
    const readers = [...sourceFiles('src'), ...sourceFiles('workers')]
      .filter((f) => f !== join('src', 'config.ts') && f !== join('src', 'duckdb', 'allocator.ts'))
      .filter((f) => /process\.env/.test(read(f)));
    expect(readers).to.deep.equal([]);
  });

  it('refuses a value a setting cannot take, naming the variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).to.throw(/PORT/);
    // A batch needs a thread to build on.
    expect(() => loadConfig({ BATCH_THREADS: '0' })).to.throw(/BATCH_THREADS/);
    expect(loadConfig({}).batchThreads).to.equal(1);
    expect(loadConfig({ BATCH_THREADS: '2' }).batchThreads).to.equal(2);
    // A share is 0 to 1.
    expect(() => loadConfig({ INGEST_TIDY_SHARE: '1.5' })).to.throw(/INGEST_TIDY_SHARE/);
    expect(() => loadConfig({ INGEST_TIDY_SHARE: '-0.1' })).to.throw(/INGEST_TIDY_SHARE/);
    expect(loadConfig({}).ingestTidyShare).to.equal(0);
    expect(loadConfig({ INGEST_TIDY_SHARE: '0.05' }).ingestTidyShare).to.equal(0.05);
    expect(() => loadSyncSettings({ SYNC_CONCURRENCY: '0' })).to.throw(/SYNC_CONCURRENCY/);
    expect(() => loadSyncSettings({ SYNC_MEMORY_LIMIT: 'plenty' })).to.throw(/SYNC_MEMORY_LIMIT/);
    expect(loadSyncSettings({})).to.deep.equal({ concurrency: 2, backoffMs: 500, idleTimeoutMs: 60_000, memoryLimit: '300MB' });
    expect(syncCredentials({ TF_TOKEN_app_terraform_io: 't', OTHER: 'x', TF_CLI_CONFIG_DIR: '/c' }))
      .to.deep.equal({ syncToken: null, hostTokens: { TF_TOKEN_app_terraform_io: 't' }, cliConfigDir: '/c' });
  });
});
