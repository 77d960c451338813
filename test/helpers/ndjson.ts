// A source or batch directory's NDJSON files as the tests read and write them: one record a line, a missing
// file being no records (as the batch format has it).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type Row = Record<string, any>;

/** The records of `<dir>/<file>.ndjson`; none when the file is missing. */
export function readRows(dir: string, file: string): Row[] {
  const path = join(dir, `${file}.ndjson`);
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Row) : [];
}

/** Writes `rows` to `<dir>/<file>.ndjson`; no file for no rows. */
export function writeRows(dir: string, file: string, rows: Row[]): void {
  if (rows.length > 0) writeFileSync(join(dir, `${file}.ndjson`), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
}
