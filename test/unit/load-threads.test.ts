// How many DuckDB threads a load uses when its caller names none: one for a small source, whose validation
// has the other core, two beyond ONE_THREAD_SOURCE_BYTES, a gzip file counted at ten times its size.
import { expect } from 'chai';
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadThreads, ONE_THREAD_SOURCE_BYTES } from '../../src/snapshots/write/load.js';
import { sourceFiles } from '../../src/snapshots/write/source-validator.js';

describe('a load\'s DuckDB threads by the size of its source', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'explorer-load-threads-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  // Sparse files: only their sizes are read.
  const file = (name: string, bytes: number) => { writeFileSync(join(dir, name), ''); truncateSync(join(dir, name), bytes); };

  it('loads a source up to the bound on one thread, counting every file', async () => {
    file('organizations.ndjson', 1_000);
    file('workspaces.ndjson', ONE_THREAD_SOURCE_BYTES / 2);
    file('workspace_resources.ndjson', ONE_THREAD_SOURCE_BYTES / 2 - 1_000);
    expect(await loadThreads(sourceFiles(dir))).to.equal(1);
    file('workspace_modules.ndjson', 1);
    expect(await loadThreads(sourceFiles(dir))).to.equal(2);
  });

  it('counts a gzip file at ten times its size', async () => {
    file('organizations.ndjson', 1_000);
    file('workspaces.ndjson.gz', Math.floor(ONE_THREAD_SOURCE_BYTES / 10) - 1_000);
    expect(await loadThreads(sourceFiles(dir))).to.equal(1);
    // 1,000 bytes as plain text would stay under the bound; gzip, they go over it.
    file('workspace_resources.ndjson.gz', 1_000);
    expect(await loadThreads(sourceFiles(dir))).to.equal(2);
  });
});
