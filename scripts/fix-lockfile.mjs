// Run after `npm install` changes package-lock.json: npm leaves out the DuckDB bindings of platforms the
// registry here does not serve, and `npm ci` then refuses the lock as out of sync. The entries added carry
// only os/cpu/libc, so npm ci skips them on every other platform without fetching anything.
import { readFileSync, writeFileSync } from 'node:fs';

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const parent = lock.packages['node_modules/@duckdb/node-bindings'];
for (const name of Object.keys(parent?.optionalDependencies ?? {})) {
  const key = `node_modules/${name}`;
  if (lock.packages[key]) continue;
  const m = /node-bindings-(darwin|linux|win32)-(x64|arm64)(-musl)?$/.exec(name);
  if (!m) throw new Error(`unexpected platform package ${name}`);
  const entry = { version: parent.optionalDependencies[name], cpu: [m[2]], license: 'MIT', optional: true, os: [m[1]] };
  if (m[1] === 'linux') entry.libc = [m[3] ? 'musl' : 'glibc'];
  lock.packages[key] = entry;
  console.log(`added ${key}`);
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)));
writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
