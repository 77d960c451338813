// The steady stream's batches on the bench snapshot (docs/changes.md §6), written once under $BENCH_DIR/batches:
// nine of each ten touch 10 workspaces of 50 small organizations, the tenth 1,000 workspaces of 100
// organizations, the largest among them. Three groups of small organizations that never overlap: the small
// batches', 50 that no batch touches, and the large batches' (with the largest organization).
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeSampleChanges } from '../src/sample/sample-changes.js';
import type { Org } from './lib.js';

export interface StreamBatch { dir: string; size: 'small' | 'large'; name: string }

export interface StreamBatches {
  largest: string;
  /** The small organizations the small batches touch, and 50 that no batch touches. */
  streamed: string[];
  untouched: string[];
  /** The order of arrival: every tenth batch a large one. */
  order: StreamBatch[];
}

export async function streamBatches(benchDir: string, orgs: readonly Org[], total: number, log: (m: string) => void): Promise<StreamBatches> {
  const small = orgs.filter((o) => o.workspaces <= 500);
  const streamed = small.slice(0, 50).map((o) => o.name);
  const untouched = small.slice(50, 100).map((o) => o.name);
  const largeOrgs = new Set([orgs[0]!.name, ...small.slice(100, 199).map((o) => o.name)]);
  const largeCount = Math.floor(total / 10);
  const smallCount = total - largeCount;
  const batches = join(benchDir, 'batches', `stream-${total}`);
  if (!existsSync(join(batches, '.complete'))) {
    log(`writing ${total} stream batches from the bench source`);
    rmSync(batches, { recursive: true, force: true });
    await writeSampleChanges(join(benchDir, 'source'), join(batches, 'small'), { batches: smallCount, workspaces: 10, seed: 31, organizations: new Set(streamed) });
    await writeSampleChanges(join(benchDir, 'source'), join(batches, 'large'), { batches: largeCount, workspaces: 1000, seed: 32, organizations: largeOrgs });
    writeFileSync(join(batches, '.complete'), '');
  }
  const order: StreamBatch[] = [];
  for (let i = 0, s = 0, l = 0; i < total; i++) {
    const large = i % 10 === 9;
    const n = String(large ? ++l : ++s).padStart(4, '0');
    order.push({ dir: join(batches, large ? 'large' : 'small', `batch-${n}`), size: large ? 'large' : 'small', name: `${String(i + 1).padStart(4, '0')}-${large ? 'large' : 'small'}-${n}` });
  }
  return { largest: orgs[0]!.name, streamed, untouched, order };
}
