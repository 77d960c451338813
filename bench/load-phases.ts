// make bench-load-phases: where a load's time goes. Loads a source (default: the bench source) into a
// scratch data directory and prints each phase as it starts, with the wall time and the CPU of the whole
// process (validation's worker thread and DuckDB's threads included) at that moment. Not part of make test.
//
// Environment: PHASES_SOURCE (default $DATA_DIR/bench/source), PHASES_DIR (default $DATA_DIR/bench-phases,
// removed before and after).
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadSnapshot } from '../src/snapshots/write/load.js';

const DATA_DIR = resolve(process.env.DATA_DIR ?? './data');
const source = resolve(process.env.PHASES_SOURCE ?? join(DATA_DIR, 'bench', 'source'));
const dataDir = resolve(process.env.PHASES_DIR ?? join(DATA_DIR, 'bench-phases'));

const started = performance.now();
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const line = (what: string) => console.log(`${((performance.now() - started) / 1000).toFixed(1).padStart(7)} s  cpu ${cpu().toFixed(0).padStart(5)} s  ${what}`);
// A progress message names what validation and the build are each doing (' · ' between them), with counts
// and percentages that change every second: a phase is the message without them.
const seen = new Set<string>();
rmSync(dataDir, { recursive: true, force: true });
try {
  const result = await loadSnapshot(source, {
    dataDir,
    onProgress: (message) => {
      for (const part of message.split(' · ')) {
        const phase = part.replace(/: [\d,]+ lines$/, '').replace(/: (\d+ %, )?\d+ s$/, '');
        if (!seen.has(phase)) { seen.add(phase); line(phase); }
      }
    },
  });
  line(`done: ${Object.entries(result.manifest.rows).map(([view, n]) => `${view} ${n.toLocaleString('en')}`).join(', ')}`);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
