// What a directory takes on disk, for the bounds the stream's test and benches hold the data directory to.
import { execFileSync } from 'node:child_process';

/**
 * KB `path` takes on disk (`du -sk`: a file with several links counted once). du exits 1 when a file it listed
 * is gone before it reads it (a writer renaming its temporary files meanwhile) and still prints the total of
 * the rest, which is the figure.
 */
export function diskKb(path: string): number {
  let out: string;
  try {
    out = execFileSync('du', ['-sk', path]).toString();
  } catch (e) {
    out = String((e as { stdout?: Buffer }).stdout ?? '');
  }
  const kb = Number(out.split('\t')[0]);
  if (out.trim() === '' || !Number.isFinite(kb)) throw new Error(`du -sk ${path} printed no total`);
  return kb;
}
