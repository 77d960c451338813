// `explorer sample`: a synthetic snapshot source, or a series of them a day apart.
import { readdir } from 'node:fs/promises';
import { parseArgs, UsageError, wholeNumber } from './args.js';
import { isTty, progress } from './progress.js';
import { SAMPLE_DEFAULTS, writeSample } from '../sample/sample.js';
import { writeSampleSeries, type DaySummary } from '../sample/sample-series.js';

export async function sample(argv: string[]): Promise<void> {
  const args = parseArgs(argv, ['organizations', 'workspaces', 'seed', 'days'], ['gzip']);
  const dir = args.positional[0];
  if (!dir || args.positional.length > 1) throw new UsageError('sample takes one directory');
  const options = {
    organizations: wholeNumber(args, 'organizations', SAMPLE_DEFAULTS.organizations),
    workspaces: wholeNumber(args, 'workspaces', SAMPLE_DEFAULTS.workspaces),
    seed: wholeNumber(args, 'seed', SAMPLE_DEFAULTS.seed),
    gzip: args.options.has('gzip'),
    onProgress: (written: number, total: number) => progress(`writing workspaces: ${written.toLocaleString('en')} / ${total.toLocaleString('en')}`),
  };
  // A sample has at least one organization with at least one workspace (more organizations than workspaces are clamped).
  for (const n of ['organizations', 'workspaces'] as const) if (options[n] < 1) throw new UsageError(`--${n} must be at least 1`);
  if (args.options.has('days') && options.gzip) throw new UsageError('--gzip writes one sample, not a series of --days');
  if (args.options.has('days')) return sampleSeries(dir, options, wholeNumber(args, 'days', 1));
  const started = performance.now();
  const summary = await writeSample(dir, options);
  if (isTty) process.stderr.write('\r\x1b[K');
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`wrote ${dir}: ${JSON.stringify(summary.counts)} in ${seconds} s; largest organization ${summary.largestOrganization}`);
}

async function sampleSeries(dir: string, options: Parameters<typeof writeSample>[1], days: number): Promise<void> {
  if (days < 1) throw new UsageError('--days must be at least 1');
  const describe = (d: DaySummary) => {
    const c = d.changes;
    if (c === null) return 'the plain sample';
    const kinds = [
      [c.created, 'created'], [c.deleted, 'deleted'], [c.engineUpgrades, 'engine upgrades'], [c.providerUpgrades, 'provider upgrades'],
      [c.moduleUpgrades, 'module upgrades'], [c.driftAppeared, 'drifted'], [c.driftCleared, 'drift cleared'],
    ] as const;
    return `${c.workspaces} workspaces changed (${kinds.map(([n, what]) => `${n} ${what}`).join(', ')})`;
  };
  const written = await writeSampleSeries(dir, {
    ...options,
    days,
    onDay: (d) => {
      if (isTty) process.stderr.write('\r\x1b[K');
      console.log(`wrote ${d.dir}: ${JSON.stringify(d.counts)} in ${d.seconds.toFixed(1)} s; ${describe(d)}`);
      if (d.day < days) progress(`writing day ${d.day + 1} of ${days}`);
    },
  });
  // Left over from a longer series: load-series would load them after these days.
  const names = new Set(written.map((d) => d.name));
  const stale = (await readdir(dir)).filter((n) => n.startsWith('day-') && !names.has(n)).sort();
  if (stale.length > 0) console.error(`warning: ${dir} also holds ${stale.join(', ')}, not written now; load-series would load them too`);
}
