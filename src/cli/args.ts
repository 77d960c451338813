/** Minimal `--name value` / `--flag` parsing; unknown options are errors, so typos do not pass silently. */
export interface Parsed {
  positional: string[];
  options: Map<string, string>;
}

export class UsageError extends Error {}

/** `known` options take a value; `flags` take none and are set to 'true' when given. */
export function parseArgs(argv: string[], known: readonly string[], flags: readonly string[] = []): Parsed {
  const positional: string[] = [];
  const options = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) { positional.push(arg); continue; }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    if (flags.includes(name) && inline === undefined) { options.set(name, 'true'); continue; }
    if (!known.includes(name)) throw new UsageError(`unknown option --${name}`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    options.set(name, value);
  }
  return { positional, options };
}

export function wholeNumber(parsed: Parsed, name: string, fallback: number): number {
  const raw = parsed.options.get(name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new UsageError(`--${name} must be a whole number`);
  return Number(raw);
}
