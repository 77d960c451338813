// Results never depend on the host's time zone or locale: the same source, loaded by the real `explorer
// load` under one zone and served by the real `explorer serve` under another, answers the same bytes as
// loading and serving under UTC. The zones have half-hour offsets and daylight saving (Lord Howe's DST
// moves the clock by only 30 minutes), so a shift of any kind shows in every datetime.
import { expect } from 'chai';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { issueToken } from '../../src/access/tokens.js';
import { writeSample } from '../../src/sample/sample.js';
import { openStateStore } from '../../src/store/open-store.js';
import { writeSmallSource } from '../fixtures/small-source.js';
import { waitFor } from '../helpers/wait.js';

const CLI = new URL('../../src/cli/main.js', import.meta.url).pathname;
const run = promisify(execFile);

interface Host { tz: string; locale: string }
interface Setup { loader: Host; server: Host }

const SETUPS: Setup[] = [
  { loader: { tz: 'UTC', locale: 'C' }, server: { tz: 'UTC', locale: 'C' } },
  { loader: { tz: 'Australia/Lord_Howe', locale: 'de_DE.UTF-8' }, server: { tz: 'America/St_Johns', locale: 'fr_CA.UTF-8' } },
  { loader: { tz: 'America/St_Johns', locale: 'en_US.UTF-8' }, server: { tz: 'Asia/Kathmandu', locale: 'ar_EG.UTF-8' } },
];

const env = (host: Host, dataDir: string) => ({
  ...process.env, TZ: host.tz, LANG: host.locale, LC_ALL: host.locale, DATA_DIR: dataDir,
});

const enc = (s: string) => encodeURIComponent(s);
const q = (params: Record<string, string>) => Object.entries(params).map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&');

/** Requests whose answers hold datetimes as values, filters, sort keys and CSV text. */
const QUERIES = [
  q({ type: 'workspaces', sort: '-current_run_applied_at', 'page[size]': '100', fields: 'workspace_name,current_run_applied_at,workspace_created_at,workspace_updated_at' }),
  q({ type: 'workspaces', 'filter[0][workspace_created_at][is_after][0]': '2023-02-01T00:00', 'filter[1][workspace_updated_at][is_before][0]': '2025-01-01', sort: 'workspace_updated_at', 'page[size]': '100' }),
  q({ type: 'workspaces', 'filter[0][workspace_created_at][is_before][0]': '2023-02-01T02:30:00+02:30', 'page[size]': '100' }),
  q({ type: 'workspaces', 'filter[0][current_run_applied_at][is_empty][0]': '', sort: '-workspace_created_at', 'page[size]': '100' }),
  q({ type: 'tf_versions' }),
  q({ type: 'providers', 'page[size]': '100' }),
  q({ type: 'modules', 'page[size]': '100' }),
];

interface Answers { pages: string[]; csv: string[]; saved: string[]; snapshot: string; filename: string }

async function serveAndAsk(setup: Setup, dataDir: string, organization: string): Promise<Answers> {
  // The token is issued in this process: only loading and serving run under the zones.
  const store = await openStateStore({ dataDir });
  const { token } = await issueToken(store, { kind: 'organization', organization });
  await store.close();
  const child: ChildProcess = spawn(process.execPath, [CLI, 'serve'], {
    env: { ...env(setup.server, dataDir), PORT: '0', POOL_WORKERS: '1', UV_THREADPOOL_SIZE: '16' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => { out += b.toString(); });
  try {
    await waitFor(() => out.includes('"listening"'), 20_000, 'listening');
    const url = JSON.parse(out.split('\n').find((l) => l.includes('"listening"'))!).url as string;
    const base = `${url}/api/v2/organizations/${organization}`;
    const get = async (path: string, init: RequestInit = {}) => {
      const res = await fetch(`${base}${path}`, { ...init, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', ...init.headers } });
      // Links are absolute: the port differs from one server to the next, nothing else may.
      const text = (await res.text()).replaceAll(url, 'http://server');
      expect(res.status, `${path}: ${text.slice(0, 200)}`).to.be.oneOf([200, 201]);
      return { res, text };
    };
    const answers: Answers = { pages: [], csv: [], saved: [], snapshot: '', filename: '' };
    for (const query of QUERIES) {
      const page = await get(`/explorer?${query}`);
      answers.pages.push(page.text);
      answers.snapshot = page.res.headers.get('x-explorer-snapshot')!;
      const csv = await get(`/explorer/export/csv?${query}`);
      answers.csv.push(csv.text);
      answers.filename = csv.res.headers.get('content-disposition')!;
    }
    const created = JSON.parse((await get('/explorer/views', {
      method: 'POST',
      body: JSON.stringify({ data: { name: 'applied lately', query_type: 'workspaces', query: {
        filter: [{ field: 'current_run_applied_at', operator: 'is_after', value: ['2022-06-30T23:59'] }],
        sort: ['-current_run_applied_at'], fields: ['workspace_name', 'current_run_applied_at'],
      } } }),
    })).text);
    const id = created.data.id as string;
    for (const path of ['results', 'csv']) answers.saved.push((await get(`/explorer/views/${id}/${path}`)).text.replaceAll(id, 'sq-id'));
    return answers;
  } finally {
    child.kill('SIGKILL');
  }
}

/** `YYYYMMDDTHHMMSS…Z` as milliseconds since the epoch. */
const stampMs = (s: string) => Date.UTC(+s.slice(0, 4), +s.slice(4, 6) - 1, +s.slice(6, 8), +s.slice(9, 11), +s.slice(11, 13), +s.slice(13, 15));

function describeSource(title: string, organization: string, write: (dir: string) => unknown) {
  describe(`${title}: loaded under one time zone and locale, served under another`, function () {
    this.timeout(180_000);
    const answers: Answers[] = [];
    const dirs: string[] = [];
    let started = 0;

    before(async () => {
      started = Date.now();
      const source = mkdtempSync(join(tmpdir(), 'explorer-tz-source-'));
      dirs.push(source);
      await write(source);
      // The setups side by side, each in its own data directory with its own loader and server.
      answers.push(...await Promise.all(SETUPS.map(async (setup) => {
        const dataDir = mkdtempSync(join(tmpdir(), 'explorer-tz-'));
        dirs.push(dataDir);
        await run(process.execPath, [CLI, 'load', source], { env: env(setup.loader, dataDir) });
        return serveAndAsk(setup, dataDir, organization);
      })));
    });
    after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

    for (let i = 1; i < SETUPS.length; i++) {
      const { loader, server } = SETUPS[i]!;
      it(`loader ${loader.tz} (${loader.locale}), server ${server.tz} (${server.locale}): every page, CSV and saved-view answer is byte-identical to UTC`, () => {
        for (let k = 0; k < answers[0]!.pages.length; k++) expect(answers[i]!.pages[k], QUERIES[k]).to.equal(answers[0]!.pages[k]);
        expect(answers[i]!.csv).to.deep.equal(answers[0]!.csv);
        expect(answers[i]!.saved).to.deep.equal(answers[0]!.saved);
      });
    }

    it('snapshot ids and CSV file names carry the UTC time of their making, whatever the host zone', () => {
      for (const a of answers) {
        const snapshot = /^(\d{8}T\d{6})\d{3}Z-[a-z0-9]+$/.exec(a.snapshot);
        expect(snapshot, a.snapshot).to.not.equal(null);
        expect(stampMs(snapshot![1]!)).to.be.within(started - 2000, Date.now() + 1000);
        const file = new RegExp(`^attachment; filename="${organization}-modules-(\\d{8}T\\d{6})Z\\.csv"$`).exec(a.filename);
        expect(file, a.filename).to.not.equal(null);
        expect(stampMs(file![1]!)).to.be.within(started - 2000, Date.now() + 1000);
      }
    });

    it('the answers are not vacuous: datetimes are present and filters select', () => {
      const first = JSON.parse(answers[0]!.pages[0]!);
      expect(first.data.length).to.be.above(0);
      expect(first.data.some((r: any) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/.test(r.attributes['current-run-applied-at'] ?? ''))).to.equal(true);
      expect(answers[0]!.csv[0]).to.match(/"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"/);
    });
  });
}

describeSource('the hand-made fixture', 'acme-corp', (dir) => writeSmallSource(dir));
describeSource('a generated sample', 'acme-corp', (dir) => writeSample(dir, { organizations: 3, workspaces: 600, seed: 11 }));

describe('the hand-made fixture under the suite\'s own zone', () => {
  it('is run under a zone with a non-whole-hour offset and daylight saving, so that every HTTP suite checks zone independence', () => {
    // make test runs mocha under America/St_Johns; a run under UTC alone would let a shifted time pass.
    const jan = new Date(Date.UTC(2024, 0, 15)).getTimezoneOffset();
    const jul = new Date(Date.UTC(2024, 6, 15)).getTimezoneOffset();
    expect(jan % 60, `TZ=${process.env.TZ}: offset ${jan} min`).to.not.equal(0);
    expect(jan).to.not.equal(jul);
  });
});
