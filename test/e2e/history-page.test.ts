// History on the explorer page, end to end: Debian's chromium driven by playwright-core against a real
// server holding three days of the small fixture (test/helpers/history-days.ts). The snapshot picker, the
// changes since an older snapshot, the trend chart and the bar chart must show what the API answers for
// the same query (snapshots, ?snapshot=, /changes, /trend), and nothing on the page may trip its CSP.
// Screenshots go to docs/screenshots/ for the README (rewritten with UPDATE_SCREENSHOTS=1).
import { expect } from 'chai';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';
import { DAY1, loadDays, writeDay } from '../helpers/history-days.js';
import { ORG } from '../fixtures/small-source.js';

const SHOTS = fileURLToPath(new URL('../../../docs/screenshots/', import.meta.url));
const VIEWPORT = { width: 1280, height: 800 };

const qs = (pairs: [string, string][]) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
/** A value as a cell shows it: null as "—" plus the hidden "empty". */
const shown = (v: unknown) => (v === null || v === undefined ? '—empty' : String(v));
const kebab = (f: string) => f.replace(/_/g, '-');
/** Numbers as the page writes them (en-US grouping). */
const num = (text: string) => (text === '—empty' ? null : Number(text.replace(/,/g, '')));

// A narrow set of workspace fields, so that every changed value is on screen (and in the screenshot).
const FIELDS = ['workspace_name', 'workspace_terraform_version', 'drifted', 'resources_drifted'];

type Attrs = Record<string, unknown>;
interface ApiChange { id: string; attributes: { change: string; 'changed-fields': string[]; before: Attrs | null; after: Attrs | null } }

describe('history on the explorer page', function () {
  this.timeout(90_000);
  let h: Harness;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  /** Snapshot ids, oldest first: day 1, day 2, day 3 (current). */
  let ids: string[];
  const pageErrors: string[] = [];
  const consoleErrors: string[] = [];
  const cspViolations: string[] = [];

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    [h, browser] = await Promise.all([
      startHarness({ writeSource: (dir) => writeDay(dir, DAY1) }),
      launchChromium(),
    ]);
    ids = await loadDays(h);
    context = await browser.newContext({ viewport: VIEWPORT, acceptDownloads: true });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text());
      else if (m.type() === 'error') consoleErrors.push(m.text());
    });
  });
  after(async () => {
    await browser?.close();
    await h?.close();
  });
  afterEach(async () => {
    expect(pageErrors, 'uncaught errors in the page').to.deep.equal([]);
    expect(consoleErrors, 'console errors').to.deep.equal([]);
    expect(cspViolations, 'CSP violations').to.deep.equal([]);
    // The CSP forbids style attributes: what the page draws (charts included) must not even try. (Chromium's
    // autofill leaves an empty style="" on form controls: that one styles nothing.)
    expect(await page.evaluate('[...document.querySelectorAll("[style]:not([style=\'\']), svg [style]")].map((e) => e.outerHTML.slice(0, 200))'), 'elements with a style attribute').to.deep.equal([]);
  });

  const api = async (path: string) => {
    const res = await h.explorer(path);
    const body = await json(res);
    expect(res.status, `${path}: ${JSON.stringify(body)}`).to.equal(200);
    return body;
  };
  async function apiRows(pairs: [string, string][], fields: string[]): Promise<string[][]> {
    const body = await api(`?${qs(pairs)}`);
    return body.data.map((row: { attributes: Attrs }) => fields.map((f) => shown(row.attributes[kebab(f)])));
  }
  const tableRows = async () =>
    (await page.evaluate(`[...document.querySelectorAll('#results-table tbody tr')].map((tr) => [...tr.cells].map((td) => td.textContent))`)) as string[][];
  const activeId = async () => (await page.evaluate('document.activeElement && document.activeElement.id')) as string;
  /** The query, the picker and the open tab are drawn (the results stay busy until all three are). */
  const settled = async () => { await page.waitForSelector('#results:not([aria-busy])', { state: 'attached' }); };
  const panelSettled = async (panel: string) => { await page.waitForSelector(`#${panel}:not([aria-busy])`, { state: 'attached' }); };
  const errorText = async () => (await page.locator('#error').innerText()).replace(/\s+/g, ' ');
  const shot = async (name: string) => {
    await page.evaluate('window.scrollTo(0, 0)');
    const png = await page.screenshot();
    expect([png.readUInt32BE(16), png.readUInt32BE(20)], `${name}.png size`).to.deep.equal([VIEWPORT.width, VIEWPORT.height]);
    const path = `${SHOTS}${name}.png`;
    if (process.env.UPDATE_SCREENSHOTS === '1' || !existsSync(path)) writeFileSync(path, png);
  };
  async function download(button: string): Promise<Buffer> {
    const [file] = await Promise.all([page.waitForEvent('download'), page.click(button)]);
    return readFileSync((await file.path())!);
  }

  /** The changes table as text: id, change, each cell, and which cells are marked changed. */
  const changeRows = async () => (await page.evaluate(`[...document.querySelectorAll('#changes-table tbody tr')].map((tr) => ({
    id: tr.dataset.id, change: tr.dataset.change, cls: tr.className, kind: tr.querySelector('.change-kind').textContent,
    cells: [...tr.cells].slice(1).map((td) => td.textContent), diff: [...tr.cells].slice(1).map((td) => td.classList.contains('diff')),
  }))`)) as { id: string; change: string; cls: string; kind: string; cells: string[]; diff: boolean[] }[];
  /** What the changes table must hold for an answer of /changes with `fields`. */
  const expectedChanges = (data: ApiChange[], fields: string[]) => data.map(({ id, attributes: a }) => {
    const changed = (f: string) => a.change === 'changed' && a['changed-fields'].includes(f);
    return {
      id, change: a.change, cls: `change-${a.change}`, kind: `${{ added: '+', removed: '−', changed: '~' }[a.change]}${a.change}`,
      cells: fields.map((f) => (changed(f) ? `${shown(a.before![kebab(f)])} → ${shown(a.after![kebab(f)])}` : shown((a.after ?? a.before)![kebab(f)]))),
      diff: fields.map(changed),
    };
  });

  it('lists the retained snapshots in the picker, the current one chosen', async () => {
    await page.goto(`${h.url}/explorer#${qs([['org', ORG], ['type', 'workspaces'], ['fields', FIELDS.join(',')]])}`);
    await page.waitForSelector('html[data-ready=true]');
    expect(await page.isDisabled('#snapshot'), 'nothing to pick before a query').to.equal(true);
    await page.fill('#token', h.tokens.org);
    await page.click('#run');
    await settled();
    const listed = (await api('/snapshots')).data as { id: string; attributes: { label: string | null; current: boolean; 'loaded-at': string } }[];
    expect(listed.map((s) => s.id)).to.deep.equal([...ids].reverse());
    const options = (await page.evaluate(`[...document.querySelectorAll('#snapshot option')].map((o) => ({ value: o.value, text: o.textContent, selected: o.selected }))`)) as { value: string; text: string; selected: boolean }[];
    expect(options.map((o) => o.value)).to.deep.equal(listed.map((s) => s.id));
    expect(options.map((o) => o.selected)).to.deep.equal(listed.map((s) => s.attributes.current));
    listed.forEach((s, i) => {
      const text = options[i]!.text;
      if (s.attributes.label) expect(text).to.contain(s.attributes.label);
      expect(text).to.contain(`${s.attributes['loaded-at'].slice(0, 10)} ${s.attributes['loaded-at'].slice(11, 19)} UTC`);
      expect(text.endsWith('(current)'), text).to.equal(s.attributes.current);
    });
    expect(await page.inputValue('#snapshot')).to.equal(ids[2]);
    expect(page.url(), 'the current snapshot is no part of the link').not.to.contain('snapshot=');
    expect(await page.isHidden('#snapshot-note')).to.equal(true);
  });

  it('travels to day 1: its rows, a link that carries it, its CSV; and back to the current snapshot', async () => {
    const base: [string, string][] = [['type', 'workspaces'], ['fields', FIELDS.join(',')]];
    await page.selectOption('#snapshot', ids[0]!);
    await settled();
    const day1 = await apiRows([...base, ['snapshot', ids[0]!]], FIELDS);
    expect(day1, 'day 1 differs from today').not.to.deep.equal(await apiRows(base, FIELDS));
    expect(await tableRows()).to.deep.equal(day1);
    expect(page.url()).to.contain(`snapshot=${ids[0]}`);
    expect(await page.locator('#status').innerText()).to.contain(`snapshot ${ids[0]}`);
    expect(await page.isVisible('#snapshot-note')).to.equal(true);
    expect(await page.locator('#snapshot-note').innerText()).to.contain('An older snapshot is shown');

    const csv = await download('#download');
    const res = await h.explorer(`/export/csv?${qs([...base, ['snapshot', ids[0]!]])}`);
    expect(res.headers.get('x-explorer-snapshot')).to.equal(ids[0]);
    expect(csv.equals(Buffer.from(await res.arrayBuffer())), 'the CSV is day 1\'s').to.equal(true);

    // The link opens day 1 again (the token stays in the tab's session storage).
    await page.reload();
    await page.waitForSelector('html[data-ready=true]');
    await settled();
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#snapshot').options.length === 3);
    expect(await page.inputValue('#snapshot')).to.equal(ids[0]);
    expect(await tableRows()).to.deep.equal(day1);

    // Paging stays in day 1.
    await page.fill('#page-size', '2');
    await page.press('#page-size', 'Enter');
    await settled();
    await page.click('#page-next');
    await settled();
    expect(await tableRows()).to.deep.equal(await apiRows([...base, ['snapshot', ids[0]!], ['page[number]', '2'], ['page[size]', '2']], FIELDS));
    expect(page.url()).to.contain(`snapshot=${ids[0]}`);

    await page.selectOption('#snapshot', ids[2]!);
    await settled();
    expect(page.url()).not.to.contain('snapshot=');
    expect(await page.inputValue('#page-size')).to.equal('2');
    expect(await tableRows()).to.deep.equal(await apiRows([...base, ['page[size]', '2']], FIELDS));
    expect(await page.isHidden('#snapshot-note')).to.equal(true);
    await page.fill('#page-size', '20');
    await page.press('#page-size', 'Enter');
    await settled();
  });

  it('shows the changes since an older snapshot as /changes lists them, with counts, paging and CSV', async () => {
    await page.click('#tab-changes');
    await panelSettled('panel-changes');
    expect(await page.getAttribute('#tab-changes', 'aria-selected')).to.equal('true');
    expect(await page.isHidden('#panel-rows')).to.equal(true);
    // "Changes since" offers the snapshots older than the one shown, the one just before first.
    expect(await page.locator('#changes-from option').evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value))).to.deep.equal([ids[1], ids[0]]);
    expect(await page.inputValue('#changes-from')).to.equal(ids[1]);
    const fields = `fields=${encodeURIComponent(FIELDS.join(','))}`;
    const lastDay = await api(`/changes?type=workspaces&${fields}`);
    expect(lastDay.meta.from).to.equal(ids[1]);
    expect(await changeRows()).to.deep.equal(expectedChanges(lastDay.data, FIELDS));

    await page.selectOption('#changes-from', ids[0]!);
    await panelSettled('panel-changes');
    const body = await api(`/changes?type=workspaces&${fields}&from=${ids[0]}&to=${ids[2]}`);
    expect(new Set(body.data.map((c: ApiChange) => c.attributes.change))).to.have.keys('added', 'removed', 'changed');
    const rows = await changeRows();
    expect(rows).to.deep.equal(expectedChanges(body.data, FIELDS));
    expect(rows.flatMap((r) => r.cells.filter((_, i) => r.diff[i])).length, 'some cells show old → new').to.be.above(0);
    const { added, removed, changed } = body.meta.counts;
    expect(await page.locator('#changes-summary').innerText()).to.contain(`${added} added, ${removed} removed, ${changed} changed`);
    await shot('history-changes');

    const csv = await download('#changes-csv');
    const res = await h.explorer(`/changes/export/csv?type=workspaces&${fields}&from=${ids[0]}&to=${ids[2]}`);
    expect(csv.equals(Buffer.from(await res.arrayBuffer())), `changes CSV:\n${csv.toString('utf8')}`).to.equal(true);

    // Pages of changes follow the query's page size (set under Rows).
    await page.click('#tab-rows');
    await page.fill('#page-size', '3');
    await page.press('#page-size', 'Enter');
    await settled();
    await page.click('#tab-changes');
    await panelSettled('panel-changes');
    const page1 = await api(`/changes?type=workspaces&${fields}&from=${ids[0]}&to=${ids[2]}&page%5Bsize%5D=3`);
    expect(await changeRows()).to.deep.equal(expectedChanges(page1.data, FIELDS));
    expect(await page.locator('#changes-page-info').innerText()).to.equal('Page 1 of 2');
    await page.click('#changes-next');
    await panelSettled('panel-changes');
    const page2 = await api(`/changes?type=workspaces&${fields}&from=${ids[0]}&to=${ids[2]}&page%5Bsize%5D=3&page%5Bnumber%5D=2`);
    expect(page2.data).to.have.length(1);
    expect(await changeRows()).to.deep.equal(expectedChanges(page2.data, FIELDS));
    expect(await activeId(), 'the focus does not fall off a button that became disabled').to.equal('changes-prev');

    // Travelling to day 2 compares it with day 1, the only older one.
    await page.selectOption('#snapshot', ids[1]!);
    await settled();
    expect(await page.locator('#changes-from option').evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value))).to.deep.equal([ids[0]]);
    const day2 = await api(`/changes?type=workspaces&${fields}&from=${ids[0]}&to=${ids[1]}&page%5Bsize%5D=3`);
    expect(await changeRows()).to.deep.equal(expectedChanges(day2.data, FIELDS));
    // …and day 1 has nothing older to compare with.
    await page.selectOption('#snapshot', ids[0]!);
    await settled();
    expect(await page.isDisabled('#changes-from')).to.equal(true);
    expect(await changeRows()).to.deep.equal([]);
    expect(await page.locator('#changes-summary').innerText()).to.contain('nothing to compare with');
    await page.selectOption('#snapshot', ids[2]!);
    await settled();
    await page.click('#tab-rows');
    await page.fill('#page-size', '20');
    await page.press('#page-size', 'Enter');
    await settled();
    await page.click('#tab-changes');
    await panelSettled('panel-changes');
  });

  it('charts the trend: one point per snapshot, and a table with the counts and sums of /trend', async () => {
    // Arrows move between tabs, as in any tab list.
    await page.focus('#tab-changes');
    await page.keyboard.press('ArrowRight');
    await panelSettled('panel-charts');
    expect(await activeId()).to.equal('tab-charts');
    expect(await page.getAttribute('#tab-charts', 'aria-selected')).to.equal('true');
    expect(await page.isVisible('#trend-chart svg')).to.equal(true);

    // Drifted workspaces: their number grows on day 3.
    await page.click('#add-filter');
    await page.selectOption('#filter-0-field', 'drifted');
    expect([await page.inputValue('#filter-0-operator'), await page.inputValue('#filter-0-value-0')]).to.deep.equal(['is', 'true']);
    await page.click('#run');
    await settled();
    await page.check('#sum-resources_drifted');
    await panelSettled('panel-charts');
    await page.check('#sum-resource_count');
    await panelSettled('panel-charts');
    const body = await api(`/trend?${qs([['type', 'workspaces'], ['filter[0][drifted][is][0]', 'true'], ['sum', 'resource_count,resources_drifted']])}`);
    expect(body.data.map((p: { id: string }) => p.id)).to.deep.equal(ids);
    expect(new Set(body.data.map((p: { attributes: { count: number } }) => p.attributes.count)).size, 'the count changes').to.be.above(1);

    const table = (await page.evaluate(`[...document.querySelectorAll('#trend-table tbody tr')].map((tr) => [...tr.cells].map((td) => td.textContent))`)) as string[][];
    const head = (await page.evaluate(`[...document.querySelectorAll('#trend-table thead th')].map((th) => th.textContent)`)) as string[];
    expect(head).to.deep.equal(['snapshot', 'loaded at', 'count', 'sum of resource_count', 'sum of resources_drifted']);
    expect(table.map((r) => num(r[2]!))).to.deep.equal(body.data.map((p: any) => p.attributes.count));
    expect(table.map((r) => [num(r[3]!), num(r[4]!)])).to.deep.equal(body.data.map((p: any) => [p.attributes.sums.resource_count, p.attributes.sums.resources_drifted]));
    expect(table.map((r) => r[0])).to.deep.equal(body.data.map((p: any) => p.attributes.label ?? ''));

    const charts = (await page.evaluate(`[...document.querySelectorAll('#trend-chart svg')].map((svg) => ({
      role: svg.getAttribute('role'), label: svg.getAttribute('aria-label'), points: svg.querySelectorAll('circle.point').length,
      current: svg.querySelectorAll('circle.point.current').length,
    }))`)) as { role: string; label: string; points: number; current: number }[];
    expect(charts).to.have.length(3); // the count and two sums
    for (const c of charts) {
      expect(c.role).to.equal('img');
      expect(c.points, 'one point per snapshot').to.equal(body.data.length);
      expect(c.current, 'the shown snapshot stands out').to.equal(1);
    }
    const counts = body.data.map((p: any) => p.attributes.count);
    expect(charts[0]!.label).to.contain(`over ${ids.length} snapshots, from ${counts[0]}`).and.to.contain(`to ${counts[counts.length - 1]} (day 3)`);
    await shot('history-trend');

    // Another view is another trend.
    await page.selectOption('#view', 'tf_versions');
    await settled();
    const versions = await api('/trend?type=tf_versions');
    const counted = (await page.evaluate(`[...document.querySelectorAll('#trend-table tbody tr')].map((tr) => tr.cells[2].textContent)`)) as string[];
    expect(counted.map(num)).to.deep.equal(versions.data.map((p: any) => p.attributes.count));
    expect(await page.locator('#trend-chart svg').count()).to.equal(1); // tf_versions has no field that was summed
  });

  it('draws a bar of workspace_count for every row shown of tf_versions, providers and modules', async () => {
    for (const view of ['tf_versions', 'providers', 'modules']) {
      await page.selectOption('#view', view);
      await settled();
      const body = await api(`?type=${view}`);
      const want = body.data.map((r: { attributes: Attrs }) => r.attributes['workspace-count']);
      expect(await page.isVisible('#bars')).to.equal(true);
      expect(await page.locator('#bar-chart svg rect.bar').count(), view).to.equal(body.data.length);
      expect(await page.getAttribute('#bar-chart svg', 'role')).to.equal('img');
      expect(await page.getAttribute('#bar-chart svg', 'aria-label')).to.contain(`${body.data.length} bar`);
      const table = (await page.evaluate(`[...document.querySelectorAll('#bar-table tbody tr')].map((tr) => [...tr.cells].map((td) => td.textContent))`)) as string[][];
      expect(table.map((r) => num(r[1]!)), view).to.deep.equal(want);
      const values = (await page.evaluate(`[...document.querySelectorAll('#bar-chart .bar-value')].map((t) => t.textContent)`)) as string[];
      expect(values.map(num), view).to.deep.equal(want);
      if (view === 'tf_versions') {
        expect(table.map((r) => r[0])).to.deep.equal(body.data.map((r: { attributes: Attrs }) => r.attributes.version));
        await shot('bar-chart');
      }
    }
    // Rows of another snapshot: their own bars.
    await page.selectOption('#snapshot', ids[0]!);
    await settled();
    const day1 = await api(`?type=modules&snapshot=${ids[0]}`);
    expect(await page.locator('#bar-chart svg rect.bar').count()).to.equal(day1.data.length);
    await page.selectOption('#view', 'workspaces');
    await settled();
    expect(await page.isHidden('#bars'), 'workspaces count no workspaces').to.equal(true);
    await page.selectOption('#snapshot', ids[2]!);
    await settled();
    await page.click('#tab-rows');
  });

  it('explains a link to a snapshot that is not retained, and offers the picker to choose another', async () => {
    // As a shared link opened in this tab: the fragment changes, the page follows it.
    await page.evaluate(`location.hash = ${JSON.stringify(qs([['org', ORG], ['type', 'workspaces'], ['snapshot', '20200101T000000000Z-gone00']]))}`);
    await page.waitForSelector('#error:not([hidden])');
    await settled();
    const direct = await h.explorer('?type=workspaces&snapshot=20200101T000000000Z-gone00');
    expect(direct.status).to.equal(400);
    const problem = (await json(direct)).errors[0];
    const text = await errorText();
    expect(text).to.contain(problem.detail);
    expect(text).to.contain('Parameter: snapshot');
    expect(await activeId()).to.equal('snapshot');
    expect(await page.getAttribute('#snapshot', 'aria-invalid')).to.equal('true');
    await page.waitForSelector('#snapshot option[disabled]', { state: 'attached' });
    expect(await page.locator('#snapshot option:not([disabled])').evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value))).to.deep.equal([...ids].reverse());
    // The browser logs the 400 itself; that is the one console error this test expects.
    expect(consoleErrors.splice(0).every((m) => /status of 400/.test(m)), 'only the 400 was logged').to.equal(true);
    await page.selectOption('#snapshot', ids[1]!);
    await settled();
    expect(await page.isHidden('#error')).to.equal(true);
    expect(page.url()).to.contain(`snapshot=${ids[1]}`);
    expect(await tableRows()).to.deep.equal(await apiRows([['type', 'workspaces'], ['snapshot', ids[1]!]], (await page.evaluate(`[...document.querySelectorAll('#results-table thead button')].map((b) => b.dataset.field)`)) as string[]));
  });
});
