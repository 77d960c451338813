// The Summary tab of the explorer page, end to end: Debian's chromium driven by playwright-core against a
// real server holding the small fixture. Its table and bars must show what GET …/summary answers for the
// same query and grouping, its CSV be the API's bytes, and "Show rows" must filter the Rows tab to exactly
// the group's rows (what the API answers for the filters the group stands for).
import { expect } from 'chai';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, watchProblems } from '../helpers/browser.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';
import { ORG } from '../fixtures/small-source.js';

const SHOTS = fileURLToPath(new URL('../../../docs/screenshots/', import.meta.url));
const qs = (pairs: [string, string][]) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
const label = (v: unknown) => (v === null || v === undefined ? '(none)' : String(v));
/** A year group as the tab names it: its first instant's year. */
const year = (v: unknown) => (v === null ? '(none)' : String(v).slice(0, 4));

describe('the Summary tab of the explorer page', function () {
  this.timeout(90_000);
  let h: Harness;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  before(async () => {
    [h, browser] = await Promise.all([startHarness(), launchChromium()]);
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    page = await context.newPage();
    watchProblems(page, problems);
  });
  after(async () => {
    await browser?.close();
    await h?.close();
  });
  afterEach(() => { expect(problems, 'errors and CSP violations in the page').to.deep.equal([]); });

  const api = async (path: string) => {
    const res = await h.explorer(path);
    const body = await json(res);
    expect(res.status, `${path}: ${JSON.stringify(body)}`).to.equal(200);
    return body;
  };
  const settled = async (panel = 'results') => { await page.waitForSelector(`#${panel}:not([aria-busy])`, { state: 'attached' }); };
  const summaryRows = async () =>
    (await page.evaluate(`[...document.querySelectorAll('#summary-table tbody tr')].map((tr) => [...tr.cells].slice(0, -1).map((td) => td.textContent))`)) as string[][];
  const barLabels = async () => (await page.evaluate(`[...document.querySelectorAll('#summary-chart svg .bar-row title')].map((t) => t.textContent)`)) as string[];

  it('groups the shown query\'s rows as GET …/summary does, as a table and as bars of the count', async () => {
    await page.goto(`${h.url}/explorer#${qs([['org', ORG], ['type', 'workspaces']])}`);
    await page.waitForSelector('html[data-ready=true]');
    await page.fill('#token', h.tokens.org);
    await page.click('#run');
    await settled();
    await page.click('#tab-summary');
    await settled('panel-summary');
    expect(await page.getAttribute('#tab-summary', 'aria-selected')).to.equal('true');
    await page.selectOption('#summary-group-0', 'tags');
    await settled('panel-summary');
    await page.selectOption('#summary-group-1', 'workspace_created_at:year');
    await settled('panel-summary');
    await page.check('#summary-sum-resource_count');
    await settled('panel-summary');
    const body = await api(`/summary?${qs([['type', 'workspaces'], ['group_by', 'tags,workspace_created_at:year'], ['sum', 'resource_count'], ['page[size]', '20']])}`);
    expect(body.data.length).to.be.greaterThan(2);
    const expected = body.data.map((g: any) => [label(g.attributes.tags), year(g.attributes['workspace-created-at']), String(g.attributes.count),
      g.attributes.sums.resource_count === null ? '—' : String(g.attributes.sums.resource_count)]);
    expect(await summaryRows()).to.deep.equal(expected);
    expect(await barLabels()).to.deep.equal(body.data.map((g: any) => `${label(g.attributes.tags)} · ${year(g.attributes['workspace-created-at'])}: ${g.attributes.count}`));
    expect(await page.locator('#summary-status').innerText()).to.contain(`${body.meta.groups} groups of ${body.meta.rows} matching rows`);
    // The README's screenshot (rewritten with UPDATE_SCREENSHOTS=1).
    mkdirSync(SHOTS, { recursive: true });
    const png = await page.screenshot({ fullPage: true });
    if (process.env.UPDATE_SCREENSHOTS === '1' || !existsSync(`${SHOTS}summary.png`)) writeFileSync(`${SHOTS}summary.png`, png);
  });

  it('downloads the summary\'s CSV as the API exports it', async () => {
    const [file] = await Promise.all([page.waitForEvent('download'), page.click('#summary-csv')]);
    const res = await h.explorer(`/summary/export/csv?${qs([['type', 'workspaces'], ['group_by', 'tags,workspace_created_at:year'], ['sum', 'resource_count']])}`);
    expect(readFileSync((await file.path())!).equals(Buffer.from(await res.arrayBuffer()))).to.equal(true);
  });

  it('drills down: "Show rows" filters the Rows tab to the group\'s rows', async () => {
    await page.uncheck('#summary-sum-resource_count');
    await settled('panel-summary');
    await page.selectOption('#summary-group-1', '');
    await settled('panel-summary');
    const groups = (await api(`/summary?${qs([['type', 'workspaces'], ['group_by', 'tags'], ['page[size]', '20']])}`)).data;
    const index = groups.findIndex((g: any) => g.attributes.tags === 'env:prod');
    expect(index).to.be.at.least(0);
    await page.click(`#summary-table tbody tr:nth-child(${index + 1}) button.drill`);
    await settled();
    expect(await page.getAttribute('#tab-rows', 'aria-selected')).to.equal('true');
    const filtered = await api(`?${qs([['type', 'workspaces'], ['filter[0][tags][contains][0]', 'env:prod']])}`);
    expect(filtered.data.length).to.equal(groups[index].attributes.count);
    const ids = (await page.evaluate(`[...document.querySelectorAll('#results-table tbody tr')].length`)) as number;
    expect(ids).to.equal(filtered.data.length);
    expect(decodeURIComponent(page.url())).to.contain('filter[0][tags][contains][0]=env:prod');

    // A period and the null group: the rows of workspaces created in 2023 without a state version.
    await page.click('#tab-summary');
    await page.selectOption('#summary-group-0', 'workspace_created_at:year');
    await settled('panel-summary');
    await page.selectOption('#summary-group-1', 'state_version_terraform_version');
    await settled('panel-summary');
    const byYear = (await api(`/summary?${qs([['type', 'workspaces'], ['filter[0][tags][contains][0]', 'env:prod'], ['group_by', 'workspace_created_at:year,state_version_terraform_version'], ['page[size]', '20']])}`)).data;
    expect(await summaryRows()).to.deep.equal(byYear.map((g: any) => [year(g.attributes['workspace-created-at']), label(g.attributes['state-version-terraform-version']), String(g.attributes.count)]));
    await page.click('#summary-table tbody tr:nth-child(1) button.drill');
    await settled();
    const rows = (await page.evaluate(`[...document.querySelectorAll('#results-table tbody tr')].length`)) as number;
    expect(rows).to.equal(byYear[0].attributes.count);
  });

  it('pages the groups with the query\'s page size', async () => {
    await page.goto(`${h.url}/explorer#${qs([['org', ORG], ['type', 'workspaces'], ['page[size]', '2']])}`);
    await page.waitForSelector('html[data-ready=true]');
    await settled();
    await page.reload();
    await page.waitForSelector('html[data-ready=true]');
    await settled();
    await page.click('#tab-summary');
    await page.selectOption('#summary-group-0', 'tags');
    await settled('panel-summary');
    const pageOf = async (n: number) => (await api(`/summary?${qs([['type', 'workspaces'], ['group_by', 'tags'], ['page[number]', String(n)], ['page[size]', '2']])}`));
    const first = await pageOf(1);
    expect(first.meta.pagination['total-pages']).to.be.greaterThan(1);
    const cells = (body: any) => body.data.map((g: any) => [label(g.attributes.tags), String(g.attributes.count)]);
    expect(await summaryRows()).to.deep.equal(cells(first));
    await page.click('#summary-next');
    await settled('panel-summary');
    expect(await summaryRows()).to.deep.equal(cells(await pageOf(2)));
    expect(await page.locator('#summary-page-info').innerText()).to.equal(`Page 2 of ${first.meta.pagination['total-pages']}`);
    await page.click('#summary-first');
    await settled('panel-summary');
    expect(await summaryRows()).to.deep.equal(cells(first));
  });
});
