// make bench-disk: what the data directory holds as the steady stream's batches arrive (S8, docs/changes.md §6).
// The stream's batches (bench/stream-batches.ts) are applied one at a time by `explorer apply` to a linked copy
// of the bench snapshot, with the retention the stream's server has (SNAPSHOT_KEEP 30), and after every fifth
// batch and every large one the bytes under snapshots/ are split by kind of file, each file counted once
// however many snapshots link it and each block once however many clone it: the base, the newer deltas (delta.duckdb) and the older ones (major.duckdb)
// that retained snapshots keep copies of. Nothing serves meanwhile and batches are not coalesced, so a
// snapshot is made for every batch: more snapshots than the stream's follower makes in the same time.
// Environment: BENCH_DIR (default $DATA_DIR/bench), DISK_BATCHES (60).
import { execFileSync } from 'node:child_process';
import { readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { filesUnder, newBytesOf } from '../test/helpers/disk.js';
import { benchSnapshot, CLI, linkedCopy, ROOT } from './lib.js';
import { streamBatches } from './stream-batches.js';

const DATA_DIR = process.env.DATA_DIR ?? join(ROOT, 'data');
const BENCH_DIR = process.env.BENCH_DIR ?? join(DATA_DIR, 'bench');
const WORK = join(BENCH_DIR, 'disk');
const BATCHES = Number(process.env.DISK_BATCHES ?? 60);
const log = (m: string) => console.error(`[bench-disk] ${m}`);
const gb = (bytes: number) => Math.round(bytes / 2 ** 30 * 1000) / 1000;

interface Split { batches: number; snapshots: number; bytes: number; total_gb: number; ratio: number; kinds: Record<string, { files: number; gb: number }> }

/**
 * The bytes on disk under snapshots/ by kind of file (a numbered name's number put aside), each block once
 * however many snapshots link or clone the file that holds it, charged to the oldest snapshot's file that holds
 * it (test/helpers/disk.ts).
 */
function split(batches: number, before?: number): Split {
  const kinds: Record<string, { files: number; bytes: number }> = {};
  const root = join(WORK, 'snapshots');
  const ids = readdirSync(root).filter((id) => statSync(join(root, id)).isDirectory()).sort();
  // Snapshot ids sort by age; a file linked by several is listed once, under the oldest.
  const files = filesUnder(root);
  const added = newBytesOf(files);
  files.forEach((file, i) => {
    const kind = (kinds[basename(file).replace(/-\d+\./, '-N.')] ??= { files: 0, bytes: 0 });
    kind.files++;
    kind.bytes += added[i]!;
  });
  const total = Object.values(kinds).reduce((a, k) => a + k.bytes, 0);
  return {
    batches, snapshots: ids.length, bytes: total, total_gb: gb(total), ratio: before ? Math.round(total / before * 1000) / 1000 : 1,
    kinds: Object.fromEntries(Object.entries(kinds).sort().map(([k, v]) => [k, { files: v.files, gb: gb(v.bytes) }])),
  };
}

async function main(): Promise<void> {
  const { baseId, orgs } = await benchSnapshot(BENCH_DIR, log);
  const { order } = await streamBatches(BENCH_DIR, orgs, BATCHES, log);
  linkedCopy(BENCH_DIR, WORK, baseId);
  const first = split(0);
  const before = first.bytes;
  const splits = [first];
  const env = { ...process.env, DATA_DIR: WORK, SNAPSHOT_KEEP: '30', SNAPSHOT_KEEP_DAYS: '0' };
  try {
    for (const [i, batch] of order.entries()) {
      execFileSync(process.execPath, [CLI, 'apply', batch.dir], { env, stdio: 'ignore' });
      if ((i + 1) % 5 !== 0 && batch.size !== 'large') continue;
      const s = split(i + 1, before);
      splits.push(s);
      log(`${s.batches} batches (${batch.size} last): ${s.snapshots} snapshots, ${s.total_gb} GB, ×${s.ratio}; ${Object.entries(s.kinds).filter(([, k]) => k.gb >= 0.01).map(([n, k]) => `${n} ${k.files} × ${k.gb} GB`).join(', ')}`);
    }
  } finally {
    rmSync(WORK, { recursive: true, force: true });
  }
  const names = [...new Set(splits.flatMap((s) => Object.keys(s.kinds)))].filter((n) => splits.some((s) => (s.kinds[n]?.gb ?? 0) >= 0.01));
  console.log(`| batches | snapshots | GB | × before | ${names.join(' | ')} |`);
  console.log(`|---|---|---|---|${names.map(() => '---|').join('')}`);
  for (const s of splits) console.log(`| ${s.batches} | ${s.snapshots} | ${s.total_gb} | ${s.ratio} | ${names.map((n) => (s.kinds[n] ? `${s.kinds[n]!.files} × ${s.kinds[n]!.gb}` : '')).join(' | ')} |`);
  const file = join(ROOT, 'bench', 'results', `disk-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ batches: BATCHES, splits }, null, 2));
  console.log(`\nwritten ${file}`);
}

await main();
