// "All organizations" on the explorer page, end to end: Debian's chromium driven by playwright-core against a
// real server holding the small fixture. A token that reaches several organizations (an auditor's) is offered
// "All organizations" in the organization picker; choosing it shows every organization's rows, with
// organization_name as the table's first column, exactly as GET /api/v2/explorer answers; the history tabs,
// which are each organization's, are not offered. A token that reaches one organization is not offered it.
import { expect } from 'chai';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, watchProblems } from '../helpers/browser.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';
import { cli } from '../helpers/cli.js';

const SHOTS = fileURLToPath(new URL('../../../docs/screenshots/', import.meta.url));
const ALL = 'All organizations';

describe('"All organizations" on the explorer page', function () {
  this.timeout(90_000);
  let h: Harness;
  let browser: Browser;
  let page: Page;
  let auditor: string;
  const problems: string[] = [];

  before(async () => {
    [h, browser] = await Promise.all([startHarness(), launchChromium()]);
    auditor = (await cli(['token', 'create', '--auditor', '--description', 'page'], h.dataDir)).stdout.trim().split('\n').pop()!;
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    watchProblems(page, problems);
  });
  after(async () => {
    await browser?.close();
    await h?.close();
  });
  afterEach(() => { expect(problems, 'errors and CSP violations in the page').to.deep.equal([]); });

  const settled = async () => { await page.waitForSelector('#results:not([aria-busy])', { state: 'attached' }); };
  const choices = async () => (await page.evaluate(`[...document.querySelectorAll('#org-choices option')].map((o) => o.value)`)) as string[];
  const headers = async () => (await page.evaluate(`[...document.querySelectorAll('#results-table thead th')].map((th) => th.querySelector('button').dataset.field)`)) as string[];
  const column = async (i: number) => (await page.evaluate(`[...document.querySelectorAll('#results-table tbody tr')].map((tr) => tr.cells[${i}].textContent)`)) as string[];
  const api = async (path: string) => {
    const res = await h.request(path, { token: auditor });
    const body = await json(res);
    expect(res.status, JSON.stringify(body).slice(0, 300)).to.equal(200);
    return body;
  };

  it('offers "All organizations" to a token that reaches several, and shows their rows with organization_name first', async () => {
    await page.goto(`${h.url}/explorer`);
    await page.waitForSelector('html[data-ready=true]');
    await page.fill('#token', auditor);
    await page.focus('#org');
    await page.waitForSelector('#org-choices option', { state: 'attached' });
    const organizations = (await api('/api/v2/explorer/summary?type=workspaces&group_by=organization_name&sort=organization_name')).data.map((g: any) => g.attributes['organization-name']);
    expect(await choices()).to.deep.equal([ALL, ...organizations]);
    expect(await page.locator('#org-hint').innerText()).to.contain(ALL);

    await page.fill('#org', ALL);
    await page.dispatchEvent('#org', 'change');
    await page.click('#run');
    await settled();
    const body = await api('/api/v2/explorer?type=workspaces&page%5Bsize%5D=20');
    expect(body.data.length).to.be.greaterThan(1);
    expect(new Set(body.data.map((r: any) => r.attributes['organization-name'])).size, 'rows of several organizations').to.be.greaterThan(1);
    expect((await headers())[0]).to.equal('organization_name');
    expect(await column(0)).to.deep.equal(body.data.map((r: any) => r.attributes['organization-name']));
    const name = (await headers()).indexOf('workspace_name');
    expect(await column(name)).to.deep.equal(body.data.map((r: any) => r.attributes['workspace-name']));
    expect(await page.locator('#results-caption').innerText()).to.contain('workspaces of all organizations');
    // Snapshots, changes and trends are each organization's: not offered here.
    expect(await page.isHidden('#tab-changes')).to.equal(true);
    expect(await page.isHidden('#tab-charts')).to.equal(true);
    expect(await page.isDisabled('#snapshot')).to.equal(true);
    mkdirSync(SHOTS, { recursive: true });
    const png = await page.screenshot({ fullPage: true });
    if (process.env.UPDATE_SCREENSHOTS === '1' || !existsSync(`${SHOTS}all-organizations.png`)) writeFileSync(`${SHOTS}all-organizations.png`, png);
  });

  it('puts organization_name first in a view without a field of its own, sorted as the API sorts it', async () => {
    await page.selectOption('#view', 'providers');
    await settled();
    expect((await headers())[0]).to.equal('organization_name');
    // Sorted by organization_name ascending by default: a click turns it round.
    expect(await page.getAttribute('#results-table thead th:first-child', 'aria-sort')).to.equal('ascending');
    await page.click('#results-table thead button[data-field="organization_name"]');
    await settled();
    expect(await page.getAttribute('#results-table thead th:first-child', 'aria-sort')).to.equal('descending');
    const body = await api('/api/v2/explorer?type=providers&sort=-organization_name&page%5Bsize%5D=20');
    expect(body.data[0].attributes['organization-name']).to.equal('globex');
    expect(await column(0)).to.deep.equal(body.data.map((r: any) => r.attributes['organization-name']));
    expect(await page.locator('#saved-empty').innerText()).to.contain('one organization');
  });

  it('offers a token of one organization no "All organizations"', async () => {
    const other = await browser.newPage();
    try {
      await other.goto(`${h.url}/explorer`);
      await other.waitForSelector('html[data-ready=true]');
      await other.fill('#token', h.tokens.org);
      await other.focus('#org');
      await other.waitForSelector('#org-choices option', { state: 'attached' });
      expect(await other.evaluate(`[...document.querySelectorAll('#org-choices option')].map((o) => o.value)`)).to.deep.equal(['acme-corp']);
      expect(await other.isHidden('#org-hint')).to.equal(true);
    } finally {
      await other.close();
    }
  });
});
