// `explorer sample-changes`: change batches derived from a snapshot source, for trying batches and the bench.
import { parseArgs, UsageError, wholeNumber } from './args.js';
import { writeSampleChanges } from '../sample/sample-changes.js';

export async function sampleChanges(argv: string[]): Promise<number> {
  const args = parseArgs(argv, ['batches', 'workspaces', 'seed']);
  const [source, out] = args.positional;
  if (!source || !out || args.positional.length > 2) throw new UsageError('sample-changes takes a source directory and an output directory');
  const batches = wholeNumber(args, 'batches', 10);
  const workspaces = wholeNumber(args, 'workspaces', 10);
  for (const [name, n] of [['batches', batches], ['workspaces', workspaces]] as const) if (n < 1) throw new UsageError(`--${name} must be at least 1`);
  const started = performance.now();
  const written = await writeSampleChanges(source, out, {
    batches, workspaces, seed: wholeNumber(args, 'seed', 1),
    onBatch: (b) => console.log(`wrote ${b.dir}: ${Object.entries(b.changes).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(', ') || 'no change'}`),
  });
  console.log(`${written.length} batches in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return 0;
}
