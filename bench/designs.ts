// make bench-designs: the measurements that choose how a steady stream of change batches is stored
// (docs/performance.md, "Steady stream: the measurements that choose the layout"), in this process on the
// bench snapshot's base ($BENCH_DIR, loaded first if absent), one DuckDB thread, the workers' settings and
// the compiler's own plans:
//
// M1  a small organization's pages read from an overlay that holds it whole (its rows copied in stored
//     order, read as the base is read) against the base, and against today's layers for an organization
//     touched once (a delta holding 10 of its workspaces, merged by a key anti join): p50 and p95
// M2  CPU to rewrite the largest organization whole (its workspaces and resources in stored order, with the
//     position index and the value indexes), and a quarter of it
// M3  grouped rows (providers): rebuilding the organization's groups against aggregating a 10-workspace
//     change's own rows, for the largest organization and a small one; the rows of the groups it touches
// M4  hiding the largest organization's replaced rows: a key anti join against a position list, with 1k, 10k
//     and 25k of its workspaces replaced, on its A page and its default resources page
// M5  the sizes of the organizations the stream of `make bench-stream` touches, and of every organization
// M6  the largest organization's grouped rows (tf_versions, providers, modules) as a batch writes them: the
//     serving columns its rows carry (the folded copies, the row JSON and the CSV line, each of which holds
//     the group's list of workspace names again) derived from the rows without them, and those rows written
//     to a file of their own with and without the serving columns (checkpointed): what storing the list in
//     each form costs a batch that touches the organization, beside M3's rebuild of the groups themselves
// S7  the layout as built: 10 batches of the small stream's shape (10 workspaces of its 50 organizations)
//     applied by `applyBatch` to two linked copies, one with organizations of up to 20,000 rows written whole
//     into overlays, one with every organization layered, and one layered with a tidying unit of organizations
//     up to 20,000 rows after each batch (tidy.ts, INGEST_TIDY_ROWS): CPU per batch and per unit, and the pages of the
//     organizations they touched ÷ the same organizations' on the base (p50 of each page, median ratio)
// M7  the least a small organization written whole costs: ten of M1's organizations written into a file of their
//     own as a batch's overlay writes them, and copied as stored (unsorted) with the base's compression, every
//     column uncompressed, without the serving columns (row JSON, CSV line) and as their positions alone: CPU a row
// M8  the largest organization's provider groups with their workspaces as membership rows (group, workspace
//     name): a change of 733 of its workspaces written that way (a copy of the file changed in place) against
//     the groups rebuilt with their lists and serving columns as a batch writes them today; and its default
//     providers page with the lists composed from the memberships against read from the stored rows
// P1  what planning costs a page: DuckDB binds, optimizes and plans a prepared statement that has parameters
//     and reads a table again at every execution, and keeps the plan of one without. Each page's statements as
//     the compiler writes them (values bound) against the same statements with the values written in as
//     constants (a measurement only: a server never does that), for small organizations no batch touched, for
//     ten a layered copy's 10 small batches touched, and the largest organization's A page: p50 of each, and
//     the median ratio; and the touched organizations' B page with its values read from a one-row temporary
//     table written (bound) before each run, a statement without parameters whose plan DuckDB keeps
//
// Environment: BENCH_DIR (default $DATA_DIR/bench), DESIGN_ROUNDS (blocks of 20 runs per plan, default 8),
// DESIGN_SCENARIOS (default M1,M2,M3,M4,M5,M6,M7,M8,S7,P1).
import type { DuckDBConnection, DuckDBPreparedStatement } from '@duckdb/node-api';
import { copyFileSync, rmSync, mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { compileQuery, type CompileTarget } from '../src/query/compile.js';
import { parseQueryParameters } from '../src/query/parse-query.js';
import { decodeQueryString } from '../src/query/query-string.js';
import { attachments, openSnapshot } from '../src/snapshots/read/current-snapshot.js';
import { applyBatch } from '../src/snapshots/write/apply.js';
import { tidyUnit } from '../src/snapshots/write/tidy.js';
import { readCurrentId } from '../src/snapshots/snapshot-dir.js';
import type { Manifest } from '../src/snapshots/snapshot-dir.js';
import { writeSampleChanges } from '../src/sample/sample-changes.js';
import { layeredRows, mergedViewRows, DELTA_POSITION_BASE, TIDY_UNIT_ROWS } from '../src/snapshots/delta-layout.js';
import { CSV_LINE_COLUMN, POSITION_COLUMN, ROW_JSON_COLUMN, SERVING_COLUMNS, workspaceColumn } from '../src/catalog/catalog.js';
import { createViewTable, STORAGE_VERSION } from '../src/snapshots/write/build-steps.js';
import { viewStatements } from '../src/snapshots/write/view-files.js';
import { writeWholeViews } from '../src/snapshots/write/whole-views.js';
import { openServingInstance } from '../src/duckdb/open-instance.js';
import { pageRows } from '../workers/page-json.js';
import { A_QUERY, benchSnapshot, linkedCopy, percentile, ROOT, writeResults, type BenchRow } from './lib.js';
import { ident, sqlLiteral } from '../src/duckdb/sql.js';

const BENCH_DIR = resolve(process.env.BENCH_DIR ?? join(process.env.DATA_DIR ?? join(ROOT, 'data'), 'bench'));
const WORK = join(BENCH_DIR, 'designs');
const ROUNDS = Number(process.env.DESIGN_ROUNDS ?? 8);
const BLOCK = 20;
const SCENARIOS = new Set((process.env.DESIGN_SCENARIOS ?? 'M1,M2,M3,M4,M5,M6,M7,M8,S7,P1').split(','));
const log = (m: string) => console.error(`[bench-designs] ${m}`);
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const rows: BenchRow[] = [];
const report = (scenario: string, what: string, measured: string) => { rows.push({ scenario, what, measured, target: '', pass: null }); log(`${scenario} ${what}: ${measured}`); };

/** CPU seconds of this process (every thread, DuckDB's included) and wall seconds of `f`. */
async function cost(f: () => Promise<unknown>): Promise<{ cpu: number; wall: number }> {
  const cpu = process.cpuUsage();
  const t = performance.now();
  await f();
  const used = process.cpuUsage(cpu);
  return { cpu: (used.user + used.system) / 1e6, wall: (performance.now() - t) / 1000 };
}

/** Rows as text to compare answers by (bigints and byte strings written out). */
const asText = (v: unknown) => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? String(x) : x instanceof Uint8Array ? Buffer.from(x).toString() : x));

/** Each run warmed up 5 times, then run in alternating blocks of BLOCK, ROUNDS times: each one's times, in ms. */
async function alternate<K extends string>(runs: Record<K, () => Promise<unknown>>): Promise<Record<K, number[]>> {
  const names = Object.keys(runs) as K[];
  const times = Object.fromEntries(names.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (const k of names) for (let i = 0; i < 5; i++) await runs[k]();
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of names) {
      for (let i = 0; i < BLOCK; i++) {
        const t = performance.now();
        await runs[k]();
        times[k].push(performance.now() - t);
      }
    }
  }
  return times;
}

/** Each plan prepared once and run in alternating blocks, as bench/run.ts's G does: p50 and p95 per plan, in ms. */
async function timePlans(c: DuckDBConnection, query: string, targets: Record<string, CompileTarget>): Promise<Record<string, { p50: number; p95: number; rows: string }>> {
  const { query: q } = parseQueryParameters('terraform', decodeQueryString(query.slice(1)));
  const runs: Record<string, () => Promise<void>> = {};
  const answers: Record<string, string> = {};
  const closers: (() => void)[] = [];
  for (const [name, target] of Object.entries(targets)) {
    const compiled = compileQuery(q, target);
    const count = compiled.knownTotal === undefined && !compiled.pageCountsTotal ? await c.prepare(compiled.count.sql) : null;
    const page = await c.prepare(compiled.page.sql);
    count?.bind(compiled.count.params as never);
    page.bind(compiled.page.params as never);
    runs[name] = async () => {
      if (count) (await count.runAndReadAll()).getRows();
      answers[name] = asText(await pageRows(await page.run(), compiled.valueIndexes !== undefined));
    };
    closers.push(() => { count?.destroySync(); page.destroySync(); });
  }
  const times = await alternate(runs);
  for (const close of closers) close();
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, { p50: percentile(v, 0.5), p95: percentile(v, 0.95), rows: answers[k]! }]));
}

/** `sql` with each `?` replaced by its value written as a constant (P1 only: the values are the compiler's, from a fixed query). */
function withConstants(sql: string, params: readonly unknown[]): string {
  let i = 0;
  const constant = (v: unknown) => {
    if (typeof v === 'string') return sqlLiteral(v);
    if (typeof v === 'number' || typeof v === 'bigint') return String(v);
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    if (v === null) return 'NULL';
    throw new Error(`P1: a parameter of type ${typeof v} is not written as a constant`);
  };
  // The compiler's SQL holds no '?' but its parameters (identifiers come from the catalog, values are bound).
  const out = sql.replace(/\?/g, () => constant(params[i++]));
  if (i !== params.length) throw new Error(`P1: ${params.length} parameters, ${i} placeholders`);
  return out;
}

/**
 * A page's statement with its values read from a one-row temporary table written before each run (by a bound
 * UPDATE): the statement itself has no parameters, so DuckDB keeps its plan. p50 of the write and the run
 * together, and of the statement as compiled, in ms; the same rows checked.
 */
async function valuesInTable(c: DuckDBConnection, query: string, target: CompileTarget): Promise<{ bound: number; table: number; write: number }> {
  const { query: q } = parseQueryParameters('terraform', decodeQueryString(query.slice(1)));
  const { page, valueIndexes } = compileQuery(q, target);
  const type = (v: unknown) => (typeof v === 'string' ? 'VARCHAR' : typeof v === 'number' || typeof v === 'bigint' ? 'BIGINT' : null);
  if ((page.params as unknown[]).some((v) => type(v) === null)) throw new Error('P1: a parameter that is neither text nor a number');
  // The organization's key is ours (the manifest's), so it is written in as a constant, which the scans prune
  // row groups by; every other value is read from the table.
  const parts = page.sql.split('?');
  const params: unknown[] = [];
  let sql = parts[0]!;
  for (let n = 1; n < parts.length; n++) {
    const value = (page.params as unknown[])[n - 1];
    const key = sql.endsWith('CAST(') && parts[n]!.startsWith(' AS INTEGER)') && Number(value) === target.organizationKey;
    sql += (key ? String(target.organizationKey) : `(SELECT v${params.length} FROM p1_values)`) + parts[n];
    if (!key) params.push(value);
  }
  await c.run(`CREATE OR REPLACE TEMP TABLE p1_values (${params.map((v, n) => `v${n} ${type(v)}`).join(', ')})`);
  await c.run(`INSERT INTO p1_values VALUES (${params.map(() => 'NULL').join(', ')})`);
  const fromTable = await c.prepare(sql);
  const write = await c.prepare(`UPDATE p1_values SET ${params.map((_, n) => `v${n} = ?`).join(', ')}`);
  const bound = await c.prepare(page.sql);
  bound.bind(page.params as never);
  const read = async (p: DuckDBPreparedStatement) => asText(await pageRows(await p.run(), valueIndexes !== undefined));
  const runs = {
    bound: () => read(bound),
    table: async () => { write.bind(params as never); await write.run(); return read(fromTable); },
    write: async () => { write.bind(params as never); await write.run(); return ''; },
  };
  if (await runs.bound() !== await runs.table()) throw new Error(`P1: ${query} answered differently with its values read from a table`);
  const times = await alternate(runs);
  for (const p of [fromTable, write, bound]) p.destroySync();
  await c.run('DROP TABLE p1_values');
  return { bound: percentile(times.bound, 0.5), table: percentile(times.table, 0.5), write: percentile(times.write, 0.5) };
}

/** A page's statements run as compiled and with their values as constants, in alternating blocks: p50 of each, in ms; the same rows checked. */
async function boundAgainstConstants(c: DuckDBConnection, query: string, target: CompileTarget): Promise<{ bound: number; constants: number }> {
  const { query: q } = parseQueryParameters('terraform', decodeQueryString(query.slice(1)));
  const compiled = compileQuery(q, target);
  const statements = [compiled.page, ...(compiled.knownTotal === undefined && !compiled.pageCountsTotal ? [compiled.count] : [])];
  const prepared = { bound: [] as DuckDBPreparedStatement[], constants: [] as DuckDBPreparedStatement[] };
  for (const s of statements) {
    const b = await c.prepare(s.sql);
    b.bind(s.params as never);
    prepared.bound.push(b);
    prepared.constants.push(await c.prepare(withConstants(s.sql, s.params)));
  }
  const answers: Record<string, string> = {};
  // Read as a worker reads them (timePlans): the page's rows from DuckDB's chunks, the count's as values.
  const run = async (kind: 'bound' | 'constants') => {
    const [page, ...counts] = prepared[kind];
    const out: unknown[] = [await pageRows(await page!.run(), compiled.valueIndexes !== undefined)];
    for (const p of counts) out.push((await p.runAndReadAll()).getRows());
    answers[kind] = asText(out);
  };
  const times = await alternate({ bound: () => run('bound'), constants: () => run('constants') });
  for (const p of [...prepared.bound, ...prepared.constants]) p.destroySync();
  if (answers.bound !== answers.constants) throw new Error(`P1: ${query} answered differently with its values as constants`);
  return { bound: percentile(times.bound, 0.5), constants: percentile(times.constants, 0.5) };
}

async function main(): Promise<void> {
  const { baseId, orgs } = await benchSnapshot(BENCH_DIR, log);
  const snapshot = await openSnapshot(BENCH_DIR, baseId);
  const { manifest } = snapshot;
  const keys = manifest.organizationKeys!;
  const resourceRows = manifest.organizationRows!.resources!;
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const db = await openServingInstance({ threads: '1' });
  const c = await db.connect();
  const base = `"${snapshot.attachment!.alias}"`;
  await c.run(`ATTACH '${snapshot.attachment!.path}' AS ${base} (READ_ONLY)`);
  const all = async (sql: string) => (await c.runAndReadAll(sql)).getRows();

  // M5: the stream's organizations as bench/stream.ts picks them.
  const small = orgs.filter((o) => o.workspaces <= 500);
  const streamed = small.slice(0, 50);
  const largeBatch = [orgs[0]!, ...small.slice(100, 199)];
  const sizes = (list: typeof orgs) => {
    const ws = list.map((o) => o.workspaces).sort((a, b) => a - b);
    const rs = list.map((o) => resourceRows[o.name] ?? 0).sort((a, b) => a - b);
    const q = (v: number[], p: number) => v[Math.min(v.length - 1, Math.floor(p * v.length))]!;
    return `${list.length} organizations: workspaces p50 ${q(ws, 0.5)}, p90 ${q(ws, 0.9)}, max ${ws[ws.length - 1]}; resource rows p50 ${q(rs, 0.5)}, p90 ${q(rs, 0.9)}, max ${rs[rs.length - 1]}`;
  };
  if (SCENARIOS.has('M5')) {
    report('M5', 'the small batches\' organizations', sizes(streamed));
    report('M5', 'the large batches\' organizations (the largest among them)', sizes(largeBatch));
    report('M5', 'every organization of the bench snapshot', sizes(orgs));
    const under = (n: number) => orgs.filter((o) => (resourceRows[o.name] ?? 0) + o.workspaces <= n).length;
    report('M5', 'organizations of at most R workspace and resource rows', [20_000, 50_000, 100_000].map((r) => `R=${r.toLocaleString('en')}: ${under(r)}`).join(', '));
  }

  const largest = orgs[0]!;
  const k = keys[largest.name]!;
  const statements = new Map(viewStatements().map((v) => [v.view, v]));
  if (SCENARIOS.has('M1')) {
    // M1: ten of the small batches' organizations, copied whole into an overlay in stored order; and a delta as a
    // batch of 10 of each one's workspaces leaves it today (their rows at delta positions, the workspaces replaced).
    const picked = streamed.slice(0, 10);
    const pickedKeys = picked.map((o) => keys[o.name]!).join(', ');
    await c.run(`ATTACH '${join(WORK, 'overlay.duckdb')}' AS overlay (STORAGE_VERSION '${STORAGE_VERSION}')`);
    await c.run(`ATTACH '${join(WORK, 'delta.duckdb')}' AS delta (STORAGE_VERSION '${STORAGE_VERSION}')`);
    await c.run(`CREATE TABLE delta.replaced_workspaces AS SELECT _org_key, _org AS organization, _id AS id FROM (
        SELECT _org_key, _org, _id, row_number() OVER (PARTITION BY _org_key ORDER BY _id) AS n FROM ${base}.workspaces WHERE _org_key IN (${pickedKeys})) WHERE n <= 10 ORDER BY ALL`);
    for (const view of ['workspaces', 'resources']) {
      const column = workspaceColumn(view)!;
      await c.run(`CREATE TABLE overlay.${view} AS SELECT * FROM ${base}.${view} WHERE _org_key IN (${pickedKeys}) ORDER BY rowid`);
      await c.run(`CREATE TABLE delta.${view} AS SELECT * REPLACE (${DELTA_POSITION_BASE} + row_number() OVER (ORDER BY rowid) - 1 AS _pos)
        FROM ${base}.${view} WHERE _org_key IN (${pickedKeys}) AND ${ident(column)} IN (SELECT id FROM delta.replaced_workspaces) ORDER BY rowid`);
    }
    // Read as the workers read every layer: attached read-only.
    for (const layer of ['overlay', 'delta']) {
      await c.run(`DETACH ${layer}`);
      await c.run(`ATTACH '${join(WORK, `${layer}.duckdb`)}' AS ${layer} (READ_ONLY)`);
    }
    const ratios: Record<string, { whole: number[]; layered: number[]; wholeP95: number[]; layeredP95: number[] }> = {};
    const pages = { B: `?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bdoes_not_contain%5D%5B0%5D=~1`, 'workspaces default': '?type=workspaces', 'resources default': '?type=resources' };
    for (const org of picked) {
      for (const [label, query] of Object.entries(pages)) {
        const view = query.includes('resources') ? 'resources' : 'workspaces';
        const onBase = snapshot.target(view, org.name);
        const common = { organization: org.name, organizationKey: keys[org.name]!, organizationRows: onBase.organizationRows, rowJson: true, listMembers: onBase.listMembers, layout: 'designs' };
        const targets: Record<string, CompileTarget> = {
          base: onBase,
          whole: { ...common, relation: `overlay.${view}`, rowid: 'rowid', csvLines: onBase.csvLines, defaultOrderStored: onBase.defaultOrderStored },
          layered: { ...common, relation: mergedViewRows([base, 'delta'], view, keys[org.name]), rowid: ident(POSITION_COLUMN), fetchRelation: layeredRows([base, 'delta'], view) },
        };
        const t = await timePlans(c, query, targets);
        if (t.whole!.rows !== t.base!.rows) throw new Error(`M1: ${org.name}'s ${label} page read from the overlay differs from the base's`);
        const r = (ratios[label] ??= { whole: [], layered: [], wholeP95: [], layeredP95: [] });
        r.whole.push(t.whole!.p50 / t.base!.p50);
        r.layered.push(t.layered!.p50 / t.base!.p50);
        r.wholeP95.push(t.whole!.p95 / t.base!.p95);
        r.layeredP95.push(t.layered!.p95 / t.base!.p95);
        if (org === picked[0]) log(`M1 ${org.name} ${label}: base ${round(t.base!.p50)} ms, whole ${round(t.whole!.p50)} ms, layered ${round(t.layered!.p50)} ms (p50)`);
      }
    }
    for (const [label, r] of Object.entries(ratios)) {
      report('M1', `${label} page of 10 small organizations, ÷ the same on the base (median of their ratios)`,
        `held whole in an overlay: p50 ${round(percentile(r.whole, 0.5))}×, p95 ${round(percentile(r.wholeP95, 0.5))}×; today's layers after one 10-workspace batch: p50 ${round(percentile(r.layered, 0.5))}×, p95 ${round(percentile(r.layeredP95, 0.5))}×`);
    }
  }

  if (SCENARIOS.has('S7')) {
    const batches = join(WORK, 's7-batches');
    await writeSampleChanges(join(BENCH_DIR, 'source'), batches, { batches: 10, workspaces: 10, seed: 71, organizations: new Set(streamed.map((o) => o.name)) });
    const pages = { B: `?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bdoes_not_contain%5D%5B0%5D=~1`, 'workspaces default': '?type=workspaces', 'resources default': '?type=resources' };
    for (const [label, wholeRows, tidied] of [['written whole', 20_000, false], ['layered', 0, false], ['layered, a tidying unit after each batch', 0, true]] as const) {
      const dir = join(WORK, `s7-${wholeRows}${tidied ? '-tidied' : ''}`);
      linkedCopy(BENCH_DIR, dir, baseId);
      const cpu: number[] = [];
      const tidyCpu: number[] = [];
      let last: Manifest | undefined;
      for (const name of readdirSync(batches).filter((n) => n.startsWith('batch-')).sort()) {
        const spent = await cost(async () => { last = (await applyBatch(join(batches, name), { dataDir: dir, wholeRows })).manifest; });
        cpu.push(spent.cpu);
        // As the follower tidies with INGEST_TIDY_ROWS=20000 (ingest.ts): one unit, on one thread, after the batch.
        if (tidied) tidyCpu.push((await cost(() => tidyUnit(dir, { maxRows: 20_000, unitRows: TIDY_UNIT_ROWS }))).cpu);
      }
      report('S7', `${label}: CPU of a 10-workspace batch (10 batches, in-process applyBatch, 2 threads)`, `p50 ${round(percentile(cpu, 0.5))} s, max ${round(Math.max(...cpu))} s`);
      if (tidied) report('S7', `${label}: CPU of the tidying unit after each batch (1 thread)`, `p50 ${round(percentile(tidyCpu, 0.5))} s, max ${round(Math.max(...tidyCpu))} s`);
      const after = await openSnapshot(dir, (await readCurrentId(dir)) ?? last!.id);
      for (const a of attachments(after)) if (a.alias !== snapshot.attachment!.alias) await c.run(`ATTACH '${a.path}' AS "${a.alias}" (READ_ONLY)`);
      const touched = [...new Set(streamed.map((o) => o.name).filter((o) => after.manifest.organizationRows?.workspaces?.[o] !== manifest.organizationRows?.workspaces?.[o]
        || (after.manifest.overlays ?? []).some((ov) => ov.organizations[o] !== undefined) || (after.manifest.deltaOrganizations ?? []).includes(o)))].slice(0, 10);
      const ratios: Record<string, number[]> = {};
      for (const org of touched) {
        for (const [page, query] of Object.entries(pages)) {
          const view = query.includes('resources') ? 'resources' : 'workspaces';
          const t = await timePlans(c, query, { base: snapshot.target(view, org), after: after.target(view, org) });
          (ratios[page] ??= []).push(t.after!.p50 / t.base!.p50);
        }
      }
      for (const [page, r] of Object.entries(ratios)) {
        report('S7', `${label}: ${page} page of ${touched.length} touched small organizations ÷ the same on the base`, `median ratio of p50s ${round(percentile(r, 0.5))}×, max ${round(Math.max(...r))}×`);
      }
      for (const a of attachments(after)) if (a.alias !== snapshot.attachment!.alias) await c.run(`DETACH "${a.alias}"`);
    }
  }

  if (SCENARIOS.has('M2')) {
    // M2: the largest organization rewritten whole, as a compaction or a copy-on-write of it would write it.
    for (const [label, share] of [['whole', 1], ['a quarter', 0.25]] as const) {
      const file = join(WORK, `rewrite-${share}.duckdb`);
      await c.run(`ATTACH '${file}' AS rewrite (STORAGE_VERSION '${STORAGE_VERSION}')`);
      const spent = await cost(async () => {
        for (const view of ['workspaces', 'resources']) {
          const n = Number((await all(`SELECT count(*) FROM ${base}.${view} WHERE _org_key = ${k}`))[0]![0]);
          await c.run(`CREATE TABLE rewrite.${view} AS SELECT * FROM ${base}.${view} WHERE _org_key = ${k} ORDER BY rowid LIMIT ${Math.ceil(n * share)}`);
          await c.run(`CREATE INDEX ${view}_pos ON rewrite.${view} (${ident(POSITION_COLUMN)})`);
          for (const index of statements.get(view)!.indexes) await c.run(`CREATE TABLE rewrite.${ident(index.table)} AS ${index.select(`rewrite.${view}`, undefined, ident(POSITION_COLUMN))}`);
        }
        await c.run('CHECKPOINT rewrite');
      });
      await c.run('DETACH rewrite');
      report('M2', `the largest organization (${largest.workspaces.toLocaleString('en')} workspaces, ${resourceRows[largest.name]!.toLocaleString('en')} resource rows) rewritten, ${label}, one thread`,
        `${round(spent.cpu, 1)} CPU-s, ${round(spent.wall, 1)} s`);
    }
  }

  if (SCENARIOS.has('M3')) {
    // M3: the providers view's groups of an organization, rebuilt against a 10-workspace change's own rows.
    const groups = (org: string, only: string) => `SELECT u.name, u.source, u.version, u.registry_type, bool_or(u.curated), count(DISTINCT w.id), list(DISTINCT w.name ORDER BY w.name)
      FROM ${base}.source_providers u JOIN ${base}.source_workspaces w ON w.id = u.workspace_id
      WHERE u.organization = '${org.replace(/'/g, "''")}' AND w.organization = '${org.replace(/'/g, "''")}' ${only} GROUP BY ALL`;
    for (const org of [largest, streamed[0]!]) {
      const ten = (await all(`SELECT id FROM ${base}.source_workspaces WHERE organization = '${org.name.replace(/'/g, "''")}' ORDER BY id LIMIT 10`)).map(([id]) => `'${String(id).replace(/'/g, "''")}'`).join(', ');
      const whole = await cost(() => all(groups(org.name, '')));
      const change = await cost(() => all(groups(org.name, `AND u.workspace_id IN (${ten})`)));
      const touched = await all(`SELECT count(*), sum(workspace_count) FROM ${base}.providers WHERE _org_key = ${keys[org.name]} AND (name, version) IN (
        SELECT name, version FROM ${base}.source_providers WHERE organization = '${org.name.replace(/'/g, "''")}' AND workspace_id IN (${ten}))`);
      report('M3', `providers groups of ${org.name} (${org.workspaces.toLocaleString('en')} workspaces)`,
        `rebuilt ${round(whole.cpu * 1000, 1)} CPU-ms; a 10-workspace change's own rows ${round(change.cpu * 1000, 1)} CPU-ms; it touches ${touched[0]![0]} groups naming ${touched[0]![1]} workspaces between them`);
    }
  }

  if (SCENARIOS.has('M6')) {
    // M6: each grouped view's rows of the largest organization, without their serving columns (as `sorted` leaves
    // them), given those columns by `derive`, and written out narrow and wide; the better of two rounds of each.
    const file = join(WORK, 'm6.duckdb');
    for (const view of ['tf_versions', 'providers', 'modules']) {
      const vs = statements.get(view)!;
      await c.run(`CREATE OR REPLACE TEMP TABLE m6_narrow AS SELECT * EXCLUDE (${vs.derived.map(ident).join(', ')}) FROM ${base}.${ident(view)} WHERE _org_key = ${k} ORDER BY ${ident(POSITION_COLUMN)}`);
      const best = { derive: Infinity, narrow: Infinity, wide: Infinity };
      for (let r = 0; r < 2; r++) {
        rmSync(file, { force: true });
        await c.run(`ATTACH '${file}' AS m6`);
        best.derive = Math.min(best.derive, (await cost(() => c.run(`CREATE OR REPLACE TEMP TABLE m6_wide AS ${vs.derive('m6_narrow', 0)}`))).cpu);
        best.narrow = Math.min(best.narrow, (await cost(() => c.run('CREATE TABLE m6.narrow AS SELECT * FROM m6_narrow; CHECKPOINT m6'))).cpu);
        best.wide = Math.min(best.wide, (await cost(() => c.run('CREATE TABLE m6.wide AS SELECT * FROM m6_wide; CHECKPOINT m6'))).cpu);
        await c.run('DETACH m6');
      }
      const [[groups, names, listChars]] = await all(`SELECT count(*), sum(workspace_count), sum(length(${ident(ROW_JSON_COLUMN)})) FROM ${base}.${ident(view)} WHERE _org_key = ${k}`) as [[bigint, bigint, bigint]];
      report('M6', `${view} rows of ${largest.name}: ${groups} groups naming ${names} workspaces, ${Math.round(Number(listChars) / 1e6)} MB of row JSON`,
        `serving columns derived ${round(best.derive * 1000)} CPU-ms; written narrow ${round(best.narrow * 1000)}, wide ${round(best.wide * 1000)} CPU-ms: the serving columns ${round((best.derive + best.wide - best.narrow) * 1000)} CPU-ms`);
      await c.run('DROP TABLE m6_narrow; DROP TABLE IF EXISTS m6_wide');
    }
    rmSync(file, { force: true });
  }

  if (SCENARIOS.has('M7')) {
    // M7: ten of the small batches' organizations (M1's) written whole into a file of their own, as a batch's
    // overlay writes them (writeWholeViews: every view, sorted and numbered, its indexes) and as the least DuckDB
    // can do: their workspaces and resources copied as stored, unsorted, into tables declared as the base's (the
    // serving columns uncompressed, DuckDB's choice for the rest), the same with every column uncompressed, without
    // the serving columns, and their positions alone. Each checkpointed; the best of three rounds taken in turn.
    const picked = streamed.slice(0, 10);
    const pickedKeys = picked.map((o) => keys[o.name]!);
    const file = join(WORK, 'm7.duckdb');
    await c.run(`ATTACH '${snapshot.attachment!.path}' AS f_base (READ_ONLY)`);
    const each = (view: string, columns: string) => `(${pickedKeys.map((key) => `SELECT ${columns} FROM ${base}.${view} WHERE _org_key = ${key}`).join(' UNION ALL ')})`;
    // Into tables declared as the base's (the serving columns uncompressed), or made by CREATE TABLE AS for a subset.
    const copies = (columns: string) => async () => {
      for (const view of ['workspaces', 'resources']) {
        if (columns !== '*') await c.run(`CREATE TABLE m7.${view} AS SELECT * FROM ${each(view, columns)}`);
        else {
          await createViewTable(c, `m7.${view}`, `SELECT * FROM ${base}.${view} LIMIT 0`);
          await c.run(`INSERT INTO m7.${view} SELECT * FROM ${each(view, columns)}`);
        }
      }
    };
    const forms: Record<string, () => Promise<unknown>> = {
      'as an overlay writes them (every view)': () => writeWholeViews({ db: c, run: (sql) => c.run(sql), all, out: 'm7', rows: (view) => each(ident(view), '*'), first: 0, positions: 2 ** 27, layout: manifest }),
      'copied as stored, the base\'s compression': copies('*'),
      'copied as stored, uncompressed': async () => { await c.run("SET force_compression = 'uncompressed'"); try { await copies('*')(); } finally { await c.run('RESET force_compression'); } },
      'copied without the serving columns, DuckDB\'s compression': copies(`* EXCLUDE (${SERVING_COLUMNS.filter((s) => s !== POSITION_COLUMN).map(ident).join(', ')})`),
      'their positions alone': copies(`_org_key, ${ident(POSITION_COLUMN)}`),
    };
    const best: Record<string, number> = Object.fromEntries(Object.keys(forms).map((f) => [f, Infinity]));
    for (let r = 0; r < 3; r++) {
      for (const [form, write] of Object.entries(forms)) {
        rmSync(file, { force: true });
        await c.run(`ATTACH '${file}' AS m7 (STORAGE_VERSION '${STORAGE_VERSION}')`);
        best[form] = Math.min(best[form]!, (await cost(async () => { await write(); await c.run('CHECKPOINT m7'); })).cpu);
        await c.run('DETACH m7');
      }
    }
    rmSync(file, { force: true });
    await c.run('DETACH f_base');
    const sizes = await Promise.all(['workspaces', 'resources'].map(async (view) => (await all(`SELECT count(*), sum(strlen(${ident(ROW_JSON_COLUMN)}) + strlen(${ident(CSV_LINE_COLUMN)})) FROM ${each(view, '*')}`))[0]!.map(Number)));
    const rowCount = sizes.reduce((a, [n]) => a + n!, 0);
    report('M7', `${picked.length} small organizations' rows: ${sizes.map(([n], i) => `${n!.toLocaleString('en')} ${i === 0 ? 'workspace' : 'resource'} rows`).join(', ')}, ${round(sizes.reduce((a, [, b]) => a + b!, 0) / 1e6, 1)} MB of row JSON and CSV lines`, '');
    for (const [form, cpu] of Object.entries(best)) report('M7', `written whole, ${form}`, `${round(cpu, 3)} CPU-s, ${round((cpu / rowCount) * 1e6, 1)} µs a workspace or resource row`);
  }

  if (SCENARIOS.has('M8')) {
    // M8: the largest organization's provider groups with their workspaces kept as membership rows (group,
    // workspace name) instead of a list in each group's row: what a change of 733 of its workspaces (its share of
    // the stream's 1,000-workspace batch) costs to write that way against rebuilding the groups with their lists
    // and serving columns as a batch does today, and what its default providers page costs with the lists composed
    // from the memberships against read from the stored rows.
    const org = sqlLiteral(largest.name);
    const vs = statements.get('providers')!;
    const listForms = ['workspaces', 'workspaces__m', ...vs.derived].filter((col, i, a) => a.indexOf(col) === i && col !== POSITION_COLUMN);
    const file = join(WORK, 'm8.duckdb');
    const copy = join(WORK, 'm8-copy.duckdb');
    rmSync(file, { force: true });
    await c.run(`ATTACH '${file}' AS m8 (STORAGE_VERSION '${STORAGE_VERSION}')`);
    // Each group's memberships, named by the group's position in the base (its row there), in the order a list gives them.
    const membersOf = (workspaces: string) => `SELECT DISTINCT p.${ident(POSITION_COLUMN)} AS grp, w.name AS workspace_name
      FROM ${base}.source_providers u JOIN ${base}.source_workspaces w ON w.id = u.workspace_id
      JOIN ${base}.providers p ON p._org_key = ${k} AND p.name = u.name AND p.source IS NOT DISTINCT FROM u.source
        AND p.version IS NOT DISTINCT FROM u.version AND p.registry_type IS NOT DISTINCT FROM u.registry_type
      WHERE u.organization = ${org} AND w.organization = ${org}${workspaces}`;
    await c.run(`CREATE TABLE m8.members AS ${membersOf('')} ORDER BY grp, workspace_name`);
    await c.run(`CREATE TABLE m8.groups AS SELECT * EXCLUDE (${listForms.map(ident).join(', ')}) FROM ${base}.providers WHERE _org_key = ${k} ORDER BY ${ident(POSITION_COLUMN)}`);
    const [[wrong]] = await all(`SELECT count(*) FROM m8.groups g LEFT JOIN (SELECT grp, count(*) AS n FROM m8.members GROUP BY grp) m ON m.grp = g.${ident(POSITION_COLUMN)} WHERE m.n IS DISTINCT FROM g.workspace_count`) as [[bigint]];
    if (Number(wrong) !== 0) throw new Error(`M8: ${wrong} groups' memberships do not count their workspaces`);
    const [[members, groupCount]] = await all('SELECT (SELECT count(*) FROM m8.members), (SELECT count(*) FROM m8.groups)') as [[bigint, bigint]];
    await c.run('DETACH m8');
    // The change: 733 of its workspaces (a large batch's share of it), their memberships written again.
    await c.run(`CREATE OR REPLACE TEMP TABLE m8_changed AS SELECT id, name FROM ${base}.source_workspaces WHERE organization = ${org} ORDER BY hash(id) LIMIT 733`);
    const changedTest = ' AND w.id IN (SELECT id FROM m8_changed)';
    const groups = `SELECT u.name, u.source, u.version, u.registry_type, bool_or(u.curated) AS curated, count(*) AS workspace_count, list_sort(list(w.name)) AS members
      FROM ${base}.source_providers u JOIN ${base}.source_workspaces w ON w.id = u.workspace_id WHERE u.organization = ${org} AND w.organization = ${org} GROUP BY ALL`;
    const best = { today: Infinity, memberships: Infinity, found: Infinity };
    for (let r = 0; r < 3; r++) {
      // Today: the groups rebuilt with their lists, given their serving columns, and written.
      rmSync(copy, { force: true });
      await c.run(`ATTACH '${copy}' AS m8w (STORAGE_VERSION '${STORAGE_VERSION}')`);
      await c.run(`CREATE OR REPLACE TEMP TABLE m8_narrow AS SELECT * EXCLUDE (${vs.derived.map(ident).join(', ')}) FROM ${base}.providers WHERE _org_key = ${k} ORDER BY ${ident(POSITION_COLUMN)}`);
      best.today = Math.min(best.today, (await cost(async () => {
        await c.run(`CREATE OR REPLACE TEMP TABLE m8_rebuilt AS ${groups}`);
        await c.run(`CREATE OR REPLACE TEMP TABLE m8_wide AS ${vs.derive('m8_narrow', 0)}`);
        await c.run('CREATE TABLE m8w.providers AS SELECT * FROM m8_wide; CHECKPOINT m8w');
      })).cpu);
      await c.run('DETACH m8w');
      // Memberships: a copy of the file changed in place, as a delta is: the changed workspaces' memberships out
      // and in again, the groups they touch counted again.
      copyFileSync(file, copy);
      await c.run(`ATTACH '${copy}' AS m8w`);
      // The changed workspaces' memberships, found through the base's source rows (a batch could carry them).
      best.found = Math.min(best.found, (await cost(() => c.run(`CREATE OR REPLACE TEMP TABLE m8_new AS ${membersOf(changedTest)}`))).cpu);
      best.memberships = Math.min(best.memberships, (await cost(async () => {
        await c.run('DELETE FROM m8w.members WHERE workspace_name IN (SELECT name FROM m8_changed)');
        await c.run('INSERT INTO m8w.members SELECT * FROM m8_new ORDER BY ALL');
        await c.run(`UPDATE m8w.groups g SET workspace_count = m.n FROM (SELECT grp, count(*) AS n FROM m8w.members WHERE grp IN (SELECT grp FROM m8_new) GROUP BY grp) m
          WHERE g.${ident(POSITION_COLUMN)} = m.grp`);
        await c.run('CHECKPOINT m8w');
      })).cpu);
      await c.run('DETACH m8w');
    }
    report('M8', `${largest.name}'s provider groups (${groupCount} groups, ${Number(members).toLocaleString('en')} memberships): a change of 733 of its workspaces written`,
      `today (groups rebuilt with their lists, serving columns, written) ${round(best.today, 3)} CPU-s; as memberships (a copy changed in place) ${round(best.memberships, 3)} CPU-s, and ${round(best.found, 3)} CPU-s to find the changed workspaces' memberships through the base`);
    // Its default providers page: the stored rows' JSON against the page's groups with their lists composed.
    await c.run(`ATTACH '${file}' AS m8 (READ_ONLY)`);
    const { query: q } = parseQueryParameters('terraform', decodeQueryString('type=providers'));
    const compiled = compileQuery(q, snapshot.target('providers', largest.name));
    const stored = await c.prepare(compiled.page.sql);
    stored.bind(compiled.page.params as never);
    const composed = await c.prepare(`WITH page AS (SELECT * FROM m8.groups WHERE _org_key = $1 LIMIT $2)
      SELECT p.name, p.version, (SELECT string_agg(m.workspace_name, ', ' ORDER BY m.workspace_name) FROM m8.members m WHERE m.grp = p.${ident(POSITION_COLUMN)}) AS workspaces FROM page p`);
    composed.bind([k, q.page.size] as never);
    const check = (await (await c.prepare(`SELECT name, version, workspaces FROM ${base}.providers WHERE _org_key = ${k} LIMIT ${q.page.size}`)).runAndReadAll()).getRows();
    if (asText((await composed.runAndReadAll()).getRows()) !== asText(check)) throw new Error('M8: the composed lists differ from the stored ones');
    const times = await alternate({ stored: async () => pageRows(await stored.run(), false), composed: async () => (await composed.runAndReadAll()).getRows() });
    stored.destroySync();
    composed.destroySync();
    await c.run('DETACH m8');
    report('M8', `${largest.name}'s default providers page (${q.page.size} groups), p50 and p95 ms`,
      `stored lists ${round(percentile(times.stored, 0.5))} / ${round(percentile(times.stored, 0.95))}; composed from the memberships ${round(percentile(times.composed, 0.5))} / ${round(percentile(times.composed, 0.95))}`);
    rmSync(file, { force: true });
    rmSync(copy, { force: true });
  }

  if (SCENARIOS.has('M4')) {
    // M4: the largest organization with 1k, 10k and 25k of its workspaces replaced: a key anti join (today's)
    // against a list of the replaced rows' positions.
    for (const n of [1_000, 10_000, 25_000]) {
      await c.run(`ATTACH '${join(WORK, `tomb-${n}.duckdb`)}' AS tomb (STORAGE_VERSION '${STORAGE_VERSION}')`);
      await c.run(`CREATE TABLE tomb.replaced_workspaces AS SELECT _org_key, _org AS organization, _id AS id FROM ${base}.workspaces WHERE _org_key = ${k} AND hash(_id) % ${Math.round(largest.workspaces / n)} = 0 ORDER BY ALL`);
      const replaced = Number((await all('SELECT count(*) FROM tomb.replaced_workspaces'))[0]![0]);
      for (const view of ['workspaces', 'resources']) {
        const column = workspaceColumn(view)!;
        await c.run(`CREATE TABLE tomb.${view}_hidden AS SELECT ${ident(POSITION_COLUMN)} AS pos FROM ${base}.${view} WHERE _org_key = ${k} AND ${ident(column)} IN (SELECT id FROM tomb.replaced_workspaces) ORDER BY 1`);
        await c.run(`CREATE TABLE tomb.${view} AS SELECT * FROM ${base}.${view} WHERE false`);
      }
      await c.run('DETACH tomb');
      await c.run(`ATTACH '${join(WORK, `tomb-${n}.duckdb`)}' AS tomb (READ_ONLY)`);
      for (const [label, query] of [['A', A_QUERY], ['resources default', '?type=resources']] as const) {
        const view = label === 'A' ? 'workspaces' : 'resources';
        const onBase = snapshot.target(view, largest.name);
        const common = { organization: largest.name, organizationKey: k, organizationRows: onBase.organizationRows, rowJson: true, listMembers: onBase.listMembers, layout: 'designs' };
        const hidden = `(SELECT * FROM ${base}.${ident(view)} b WHERE b._org_key = ${k} AND b.${ident(POSITION_COLUMN)} NOT IN (SELECT pos FROM tomb.${view}_hidden))`;
        const t = await timePlans(c, query, {
          base: onBase,
          anti: { ...common, relation: mergedViewRows([base, 'tomb'], view, k), rowid: ident(POSITION_COLUMN), fetchRelation: layeredRows([base, 'tomb'], view) },
          positions: { ...common, relation: hidden, rowid: ident(POSITION_COLUMN), fetchRelation: `${base}.${ident(view)}` },
          // The same rows, with the plans of a relation stored in the view's default order: a position filter
          // keeps the base's order, which a key anti join's hash does not promise.
          ordered: { ...common, relation: hidden, rowid: ident(POSITION_COLUMN), fetchRelation: `${base}.${ident(view)}`, rowidIndexed: onBase.rowidIndexed, csvLines: onBase.csvLines, defaultOrderStored: true },
        });
        if (t.ordered!.rows !== t.positions!.rows) throw new Error(`M4: the page read in stored order differs from the sorted one (${label}, ${n})`);
        report('M4', `largest organization's ${label} page, ${replaced.toLocaleString('en')} workspaces replaced (p50, p95 ms)`,
          `base ${round(t.base!.p50)} / ${round(t.base!.p95)}; key anti join ${round(t.anti!.p50)} / ${round(t.anti!.p95)}; position list ${round(t.positions!.p50)} / ${round(t.positions!.p95)}; position list in stored order ${round(t.ordered!.p50)} / ${round(t.ordered!.p95)}`);
      }
      await c.run('DETACH tomb');
    }
  }

  if (SCENARIOS.has('P1')) {
    // P1: each page's statements as served against the same with constants, on the base and after 10 small batches.
    const batches = join(WORK, 'p1-batches');
    await writeSampleChanges(join(BENCH_DIR, 'source'), batches, { batches: 10, workspaces: 10, seed: 71, organizations: new Set(streamed.map((o) => o.name)) });
    const dir = join(WORK, 'p1');
    linkedCopy(BENCH_DIR, dir, baseId);
    for (const name of readdirSync(batches).filter((n) => n.startsWith('batch-')).sort()) await applyBatch(join(batches, name), { dataDir: dir });
    const after = await openSnapshot(dir, (await readCurrentId(dir))!);
    for (const a of attachments(after)) if (a.alias !== snapshot.attachment!.alias) await c.run(`ATTACH '${a.path}' AS "${a.alias}" (READ_ONLY)`);
    const held = new Set([...after.manifest.deltaOrganizations ?? [], ...after.manifest.majorOrganizations ?? []]);
    const groups = {
      untouched: small.slice(300, 310).map((o) => o.name).filter((o) => !held.has(o)),
      touched: streamed.map((o) => o.name).filter((o) => held.has(o)).slice(0, 10),
    };
    const pages = { B: `?type=workspaces&filter%5B0%5D%5Bworkspace_name%5D%5Bdoes_not_contain%5D%5B0%5D=~1`, 'workspaces default': '?type=workspaces', 'resources default': '?type=resources' };
    for (const [group, names] of Object.entries(groups)) {
      for (const [page, query] of Object.entries(pages)) {
        const view = query.includes('resources') ? 'resources' : 'workspaces';
        const measured = [];
        for (const org of names) measured.push(await boundAgainstConstants(c, query, after.target(view, org)));
        report('P1', `${page} page of ${names.length} ${group} small organizations, bound ÷ constants (p50 ms)`,
          `${round(percentile(measured.map((m) => m.bound), 0.5), 3)} ÷ ${round(percentile(measured.map((m) => m.constants), 0.5), 3)}: median ratio ${round(percentile(measured.map((m) => m.bound / m.constants), 0.5))}×`);
      }
    }
    const inTable = [];
    for (const org of groups.touched) inTable.push(await valuesInTable(c, pages.B, after.target('workspaces', org)));
    report('P1', `B page of ${groups.touched.length} touched small organizations, its values read from a temporary table written before each run (p50 ms)`,
      `bound ${round(percentile(inTable.map((m) => m.bound), 0.5), 3)}; from the table, the write included ${round(percentile(inTable.map((m) => m.table), 0.5), 3)}, the write alone ${round(percentile(inTable.map((m) => m.write), 0.5), 3)}`);
    const a = await boundAgainstConstants(c, A_QUERY, after.target('workspaces', largest.name));
    report('P1', 'the largest organization\'s A page after the batches, bound ÷ constants (p50 ms)', `${round(a.bound, 3)} ÷ ${round(a.constants, 3)}: ${round(a.bound / a.constants)}×`);
    for (const x of attachments(after)) if (x.alias !== snapshot.attachment!.alias) await c.run(`DETACH "${x.alias}"`);
  }

  c.closeSync();
  db.closeSync();
  rmSync(WORK, { recursive: true, force: true });
  writeResults('designs', rows);
}

main().catch((e) => { console.error(e); process.exitCode = 1; });
