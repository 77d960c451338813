// The explorer page end to end: Debian's chromium driven by playwright-core against a real server
// with the small fixture (test/fixtures/small-source.ts). A user pastes a token, picks organization and
// view, filters, chooses fields, sorts, pages, shares the link, saves, reopens, renames and deletes saved
// views and downloads the CSV; what the page shows and saves is checked against the API itself. Errors
// (401, 400, 422, and a real 504 and 429 from a second server with a tiny deadline and rate limit) must
// say what happened and where. Screenshots of the main states go to docs/screenshots/ for the README
// (rewritten with UPDATE_SCREENSHOTS=1).
import { expect } from 'chai';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.js';
import { catalogFor } from '../../src/catalog/catalog.js';
import { OPERATORS_BY_TYPE } from '../../src/catalog/operators.js';
import { webCatalogText } from '../../src/catalog/write-web-catalog.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';
import { ORG } from '../fixtures/small-source.js';

const SHOTS = fileURLToPath(new URL('../../../docs/screenshots/', import.meta.url));
const VIEWPORT = { width: 1280, height: 800 };

/** Status of a GET with exactly these headers (fetch would add `Cache-Control: no-cache` to a conditional GET). */
const statusOf = (url: string, headers: Record<string, string>) => new Promise<number>((resolve, reject) => {
  get(url, { headers }, (res) => { res.resume(); resolve(res.statusCode!); }).on('error', reject);
});

/** The API's query string for the parameters, encoded like any client would. */
const qs = (pairs: [string, string][]) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');

// The query the user builds: workspace names containing "pay" or "net", four fields (catalog order).
const FILTER: [string, string][] = [['filter[0][workspace_name][contains][0]', 'pay'], ['filter[0][workspace_name][contains][1]', 'net']];
const FIELDS = ['checks_failed', 'drifted', 'workspace_name', 'workspace_terraform_version'];

/**
 * The columns the page's table shows for `names` of a view: the catalog's identifying fields among them
 * first, then the others in their order (the catalog's when the query names no fields).
 */
function pageOrder(view: string, names = catalogFor().view(view)!.fields.map((f) => f.name)): string[] {
  const leading = catalogFor().view(view)!.identifying.filter((n) => names.includes(n));
  return [...leading, ...names.filter((n) => !leading.includes(n))];
}
// The table's columns for FIELDS: the query, its link and the CSV keep FIELDS' own order.
const SHOWN = pageOrder('workspaces', FIELDS);

describe('the explorer page in a real browser', function () {
  this.timeout(60_000);
  let h: Harness;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    [h, browser] = await Promise.all([startHarness(), launchChromium()]);
    context = await browser.newContext({ viewport: VIEWPORT, acceptDownloads: true });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
  });
  after(async () => {
    await browser?.close();
    await h?.close();
  });
  afterEach(() => { expect(pageErrors, 'uncaught errors in the page').to.deep.equal([]); });

  /** API rows of a query as the page shows them: one text per cell, null as "—" plus hidden "empty". */
  async function apiRows(pairs: [string, string][], fields: string[]): Promise<string[][]> {
    const res = await h.explorer(`?${qs(pairs)}`);
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).to.equal(200);
    return body.data.map((row: { attributes: Record<string, unknown> }) =>
      fields.map((f) => { const v = row.attributes[f.replace(/_/g, '-')]; return v === null ? '—empty' : String(v); }));
  }
  const tableRows = async (p: Page = page) =>
    (await p.evaluate(`[...document.querySelectorAll('#results-table tbody tr')].map((tr) => [...tr.cells].map((td) => td.textContent))`)) as string[][];
  const headers = async () =>
    (await page.evaluate(`[...document.querySelectorAll('#results-table thead button')].map((b) => b.dataset.field)`)) as string[];
  const activeId = async (p: Page = page) => (await p.evaluate('document.activeElement && document.activeElement.id')) as string;
  /** Waits until the query the last action started has been answered and drawn. */
  const settled = async (p: Page = page) => { await p.waitForSelector('#results:not([aria-busy])', { state: 'attached' }); };
  const errorText = async (p: Page = page) => (await p.locator('#error').innerText()).replace(/\s+/g, ' ');
  /**
   * Screenshots for the README. Written when missing or with UPDATE_SCREENSHOTS=1 (after changing the page),
   * so that an ordinary test run leaves the committed ones alone (their status line has timings).
   */
  const shot = async (name: string, top = true) => {
    if (top) await page.evaluate('window.scrollTo(0, 0)');
    const png = await page.screenshot();
    expect([png.readUInt32BE(16), png.readUInt32BE(20)], `${name}.png size`).to.deep.equal([VIEWPORT.width, VIEWPORT.height]);
    const path = `${SHOTS}${name}.png`;
    if (process.env.UPDATE_SCREENSHOTS === '1' || !existsSync(path)) writeFileSync(path, png);
  };
  const ALL_WS = catalogFor().view('workspaces')!.fields.map((f) => f.name);
  const ALL_WS_SHOWN = pageOrder('workspaces');

  describe('serving', () => {
    it('serves the page and its files without a token, with types, caching headers and no way out of dist/web', async () => {
      const pageRes = await fetch(`${h.url}/explorer`);
      expect(pageRes.status).to.equal(200);
      expect(pageRes.headers.get('content-type')).to.equal('text/html; charset=utf-8');
      expect(pageRes.headers.get('cache-control')).to.equal('no-cache');
      expect(pageRes.headers.get('content-security-policy')).to.contain("script-src 'self'");
      const html = await pageRes.text();
      expect(html).to.contain('<script type="module" src="explorer/app.js">');
      const etag = pageRes.headers.get('etag')!;
      expect(etag).to.match(/^"[\w-]+"$/);
      expect(await statusOf(`${h.url}/explorer`, { 'If-None-Match': etag }), 'a conditional GET of an unchanged page').to.equal(304);
      expect(await statusOf(`${h.url}/explorer`, { 'If-None-Match': '"other"' })).to.equal(200);

      const slash = await fetch(`${h.url}/explorer/?x=1`, { redirect: 'manual' });
      expect(slash.status).to.equal(308);
      expect(slash.headers.get('location')).to.equal('../explorer?x=1');

      for (const [file, type] of [['app.js', 'text/javascript; charset=utf-8'], ['styles.css', 'text/css; charset=utf-8'], ['catalog.json', 'application/json; charset=utf-8']]) {
        const res = await fetch(`${h.url}/explorer/${file}`);
        expect(res.status, file).to.equal(200);
        expect(res.headers.get('content-type'), file).to.equal(type);
        expect(res.headers.get('x-content-type-options'), file).to.equal('nosniff');
      }
      // catalog.json is derived from the view catalog: exactly what the catalog renders to.
      expect(await (await fetch(`${h.url}/explorer/catalog.json`)).text()).to.equal(webCatalogText());
      expect(JSON.parse(webCatalogText(catalogFor('opentofu'))).views[0].fields.map((f: { name: string }) => f.name)).to.include('workspace_opentofu_version');

      for (const path of ['/explorer/nope.js', '/explorer/..%2Fpackage.json', '/explorer/%2e%2e%2f%2e%2e%2fpackage.json', '/explorer/.env', '/explorer/app.ts', '/explorer/..%5Cpackage.json']) {
        const res = await fetch(`${h.url}${path}`);
        const body = await res.text();
        expect(res.status, path).to.equal(404);
        expect(JSON.parse(body).errors[0].status, path).to.equal('404');
        expect(body, path).not.to.contain('"devDependencies"');
      }
      expect((await fetch(`${h.url}/explorer`, { method: 'POST' })).status).to.equal(405);
    });
  });

  describe('a user', () => {
    it('pastes a token, picks organization and view, and sees the first page of rows', async () => {
      await page.goto(`${h.url}/explorer`);
      await page.waitForSelector('html[data-ready=true]');
      expect(await activeId(), 'an empty token field has the focus').to.equal('token');
      expect(await page.locator('#view option').allTextContents()).to.deep.equal(['workspaces', 'tf_versions', 'providers', 'modules', 'resources']);
      await page.fill('#token', h.tokens.org);
      await page.fill('#org', ORG);
      await page.selectOption('#view', 'tf_versions');
      await settled();
      expect(await headers()).to.deep.equal(['version', 'unique_identifier', 'workspace_count', 'workspaces']);
      await page.selectOption('#view', 'resources');
      await settled();
      const resourceFields = ['workspace_name', 'address', 'provider_type', 'billable_rum', 'module_name', 'name', 'organization_external_id',
        'project_external_id', 'project_name', 'provider_name', 'source_id', 'source_type', 'source_updated_at', 'terraform_version',
        'workspace_external_id'];
      expect(await headers()).to.deep.equal(resourceFields);
      expect(await tableRows()).to.deep.equal(await apiRows([['type', 'resources']], resourceFields));
      await page.selectOption('#view', 'workspaces');
      await settled();
      expect(await headers()).to.deep.equal(ALL_WS_SHOWN);
      expect(ALL_WS_SHOWN[0]).to.equal('workspace_name');
      expect(await tableRows()).to.deep.equal(await apiRows([['type', 'workspaces']], ALL_WS_SHOWN));
      expect(await page.locator('#status').innerText()).to.contain('Rows 1–5 of 5');
      // The default order is workspace_name ascending, and the header says so.
      expect(await page.getAttribute('th:has(button[data-field=workspace_name])', 'aria-sort')).to.equal('ascending');
      expect(page.url()).to.contain(`#org=${ORG}&type=workspaces`);
      expect(page.url()).not.to.contain(h.tokens.org.slice(3));
      expect(await page.evaluate(`sessionStorage.getItem('explorer.token')`)).to.equal(h.tokens.org);
      expect(await page.evaluate(`JSON.stringify(localStorage)`)).not.to.contain(h.tokens.org.slice(3));
      await shot('results');
    });

    it('shows each view\'s identifying fields first, then the rest in catalog order; the field chooser keeps catalog order', async () => {
      for (const view of catalogFor().views) {
        await page.selectOption('#view', view.name);
        await settled();
        const all = view.fields.map((f) => f.name);
        const expected = pageOrder(view.name);
        expect(await headers(), view.name).to.deep.equal(expected);
        expect(expected.slice(0, view.identifying.length), view.name).to.deep.equal(view.identifying);
        expect(expected.slice(view.identifying.length), view.name).to.deep.equal(all.filter((n) => !view.identifying.includes(n)));
        expect(await tableRows(), view.name).to.deep.equal(await apiRows([['type', view.name]], expected));
        const chooser = await page.locator('#fields input[type=checkbox]').evaluateAll((bs) => bs.map((b) => (b as unknown as { value: string }).value));
        expect(chooser, `${view.name}: the field chooser`).to.deep.equal(all);
        expect(page.url(), `${view.name}: the link names no fields`).not.to.contain('fields=');
      }
      await page.selectOption('#view', 'workspaces');
      await settled();
      expect(await headers()).to.deep.equal(ALL_WS_SHOWN);
    });

    it('filters with operators that fit each field\'s type, and chooses fields', async () => {
      await page.click('#add-filter');
      expect(await activeId(), 'the new filter\'s field has the focus').to.equal('filter-0-field');
      const operators = () => page.locator('#filter-0-operator option').evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value));
      for (const [field, type] of [['checks_failed', 'number'], ['drifted', 'boolean'], ['workspace_created_at', 'datetime'], ['workspace_name', 'string']] as const) {
        await page.selectOption('#filter-0-field', field);
        expect(await operators(), field).to.deep.equal(OPERATORS_BY_TYPE[type]);
      }
      await page.selectOption('#filter-0-field', 'drifted');
      expect(await page.locator('#filter-0-value-0').evaluate((e) => (e as unknown as { tagName: string }).tagName)).to.equal('SELECT');
      await page.selectOption('#filter-0-operator', 'is_empty');
      expect(await page.locator('#filter-0-value-0').count(), 'a presence test takes no value').to.equal(0);

      await page.selectOption('#filter-0-field', 'workspace_name');
      await page.selectOption('#filter-0-operator', 'contains');
      await page.fill('#filter-0-value-0', 'pay');
      await page.click('button[aria-label="Add another value to filter 1"]');
      await page.fill('#filter-0-value-1', 'net');
      await page.click('#fields-box summary');
      await page.click('#fields-none');
      for (const f of FIELDS) await page.check(`#field-${f}`);
      expect(await page.locator('#fields-count').innerText()).to.equal(`(4 of ${ALL_WS.length})`);
      await page.press('#filter-0-value-1', 'Enter'); // Enter in the form runs the query
      await settled();
      await shot('filters');
      expect(await headers()).to.deep.equal(SHOWN);
      expect(SHOWN[0]).to.equal('workspace_name');
      expect(page.url(), 'the link keeps the query\'s own order').to.contain(`fields=${encodeURIComponent(FIELDS.join(','))}`);
      const expected = await apiRows([['type', 'workspaces'], ...FILTER, ['fields', FIELDS.join(',')]], SHOWN);
      expect(expected).to.have.length(4);
      expect(await tableRows()).to.deep.equal(expected);
    });

    it('sorts by clicking a column header, by Enter on it, and adds a key with Shift', async () => {
      const base: [string, string][] = [['type', 'workspaces'], ...FILTER, ['fields', FIELDS.join(',')]];
      const th = (f: string) => `th:has(button[data-field=${f}])`;
      await page.click(`${th('workspace_terraform_version')} button`);
      await settled();
      expect(await page.getAttribute(th('workspace_terraform_version'), 'aria-sort')).to.equal('ascending');
      expect(await page.getAttribute(th('workspace_name'), 'aria-sort')).to.equal(null);
      expect(await tableRows()).to.deep.equal(await apiRows([...base, ['sort', 'workspace_terraform_version']], SHOWN));

      await page.click(`${th('workspace_terraform_version')} button`);
      await settled();
      expect(await page.getAttribute(th('workspace_terraform_version'), 'aria-sort')).to.equal('descending');
      const descending = await apiRows([...base, ['sort', '-workspace_terraform_version']], SHOWN);
      expect(await tableRows()).to.deep.equal(descending);
      expect(descending.map((r) => r[SHOWN.indexOf('workspace_terraform_version')])).to.deep.equal(['1.10.0', '1.10.0-rc1', 'v1.5.7', '1.5.7']);

      await page.focus(`${th('checks_failed')} button`);
      await page.keyboard.press('Enter');
      await settled();
      expect(await page.getAttribute(th('checks_failed'), 'aria-sort')).to.equal('ascending');
      expect(await page.evaluate('document.activeElement.dataset.field'), 'the focus stays on the header').to.equal('checks_failed');

      await page.click(`${th('workspace_name')} button`, { modifiers: ['Shift'] });
      await settled();
      expect(await page.getAttribute(th('checks_failed'), 'aria-sort')).to.equal('ascending');
      expect(await tableRows()).to.deep.equal(await apiRows([...base, ['sort', 'checks_failed,workspace_name']], SHOWN));
      expect(page.url()).to.contain(`sort=${encodeURIComponent('checks_failed,workspace_name')}`);
    });

    it('pages through the results with the links the API returns', async () => {
      const base: [string, string][] = [['type', 'workspaces'], ...FILTER, ['fields', FIELDS.join(',')], ['sort', 'checks_failed,workspace_name']];
      await page.fill('#page-size', '3');
      await page.press('#page-size', 'Enter');
      await settled();
      expect(await page.locator('#page-info').innerText()).to.equal('Page 1 of 2');
      expect(await page.isDisabled('#page-prev')).to.equal(true);
      expect(await tableRows()).to.deep.equal(await apiRows([...base, ['page[number]', '1'], ['page[size]', '3']], SHOWN));
      await page.click('#page-next');
      await settled();
      expect(await page.locator('#page-info').innerText()).to.equal('Page 2 of 2');
      const second = await apiRows([...base, ['page[number]', '2'], ['page[size]', '3']], SHOWN);
      expect(second).to.have.length(1);
      expect(await tableRows()).to.deep.equal(second);
      expect(await page.isDisabled('#page-next')).to.equal(true);
      expect(await activeId(), 'the focus does not fall off a button that became disabled').to.equal('page-prev');
      expect(page.url()).to.contain('page%5Bnumber%5D=2').and.to.contain('page%5Bsize%5D=3');
      await page.goBack(); // the browser's history follows the pages: back to page 1 (the previous page size)
      await settled();
      expect(await page.locator('#page-info').innerText()).to.equal('Page 1 of 2');
      expect(page.url()).not.to.contain('page%5Bnumber%5D');
      await page.goForward();
      await settled();
      expect(await page.locator('#page-info').innerText()).to.equal('Page 2 of 2');
      await page.click('#page-first');
      await settled();
      expect(await page.locator('#page-info').innerText()).to.equal('Page 1 of 2');
    });

    it('shares the query as a link that holds no token', async () => {
      const link = page.url();
      expect(link).not.to.contain(h.tokens.org.slice(3));
      const other = await browser.newContext({ viewport: VIEWPORT });
      try {
        const p = await other.newPage();
        await p.goto(link);
        await p.waitForSelector('html[data-ready=true]');
        expect(await p.inputValue('#token')).to.equal('');
        expect(await activeId(p)).to.equal('token');
        expect(await p.inputValue('#org')).to.equal(ORG);
        expect(await p.inputValue('#filter-0-field')).to.equal('workspace_name');
        expect(await p.inputValue('#filter-0-operator')).to.equal('contains');
        expect([await p.inputValue('#filter-0-value-0'), await p.inputValue('#filter-0-value-1')]).to.deep.equal(['pay', 'net']);
        await p.fill('#token', h.tokens.org);
        await p.click('#run');
        await settled(p);
        expect(await tableRows(p)).to.deep.equal(await tableRows(page));
      } finally {
        await other.close();
      }
    });

    it('saves views, reopens one, renames and deletes another', async () => {
      const views = async () => (await json(await h.request(`/api/v2/organizations/${ORG}/explorer/views`))).data as { id: string; attributes: { name: string; query: unknown } }[];
      await page.fill('#save-name', 'Payments and network');
      await page.click('#save-new');
      await page.waitForSelector('#saved-list li:has-text("Payments and network")');
      const [first] = await views();
      expect(first!.attributes.name).to.equal('Payments and network');
      expect(first!.attributes.query).to.deep.equal({
        filter: [{ field: 'workspace_name', operator: 'contains', value: ['pay', 'net'] }],
        fields: FIELDS,
        sort: ['checks_failed', 'workspace_name'],
        type: 'workspaces',
      });
      await page.fill('#save-name', 'Scratch');
      await page.press('#save-name', 'Enter');
      await page.waitForSelector('#saved-list li:has-text("Scratch")');
      await shot('saved-views');

      // Somewhere else entirely, then back through the saved view.
      await page.selectOption('#view', 'providers');
      await settled();
      expect(await headers()).to.include('registry_type');
      await page.click('button[aria-label="Open “Payments and network”"]');
      // A function, not a string: the page's CSP forbids eval, which string predicates need.
      await page.waitForFunction(() => (globalThis as any).document.querySelector('#view').value === 'workspaces');
      await settled();
      expect(await page.inputValue('#filter-0-value-1')).to.equal('net');
      expect(await headers()).to.deep.equal(SHOWN);
      const rerun = await json(await h.request(`/api/v2/organizations/${ORG}/explorer/views/${first!.id}/results?page%5Bsize%5D=3`));
      expect(await tableRows()).to.deep.equal(rerun.data.map((r: { attributes: Record<string, unknown> }) =>
        SHOWN.map((f) => { const v = r.attributes[f.replace(/_/g, '-')]; return v === null ? '—empty' : String(v); })));
      expect(await page.getAttribute(`#saved-list li[data-id="${first!.id}"]`, 'aria-current')).to.equal('true');

      await page.click('button[aria-label="Rename “Scratch”"]');
      expect(await page.evaluate('document.activeElement.getAttribute("aria-label")')).to.equal('New name for “Scratch”');
      await page.keyboard.press('Control+A');
      await page.keyboard.type('Renamed scratch');
      await page.keyboard.press('Enter');
      await page.waitForSelector('#saved-list li:has-text("Renamed scratch")');
      expect((await views()).map((v) => v.attributes.name)).to.deep.equal(['Payments and network', 'Renamed scratch']);

      await page.click('button[aria-label="Delete “Renamed scratch”"]');
      await page.click('#saved-list .confirm-delete');
      await page.waitForSelector('#saved-list li:has-text("Renamed scratch")', { state: 'detached' });
      expect((await views()).map((v) => v.attributes.name)).to.deep.equal(['Payments and network']);
      expect(await page.locator('#status').innerText()).to.contain('Deleted “Renamed scratch”');
    });

    it('shows a 422 with the API\'s detail and the member it names', async () => {
      const direct = await h.request(`/api/v2/organizations/${ORG}/explorer/views`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ data: { name: 'Payments and network', query_type: 'workspaces', query: { filter: [] } } }),
      });
      const problem = (await json(direct)).errors[0];
      expect(direct.status).to.equal(422);
      await page.fill('#save-name', 'Payments and network');
      await page.click('#save-new');
      await page.waitForSelector('#error:not([hidden])');
      const text = await errorText();
      expect(text).to.contain('The saved view was not accepted');
      expect(text).to.contain(problem.detail);
      expect(text).to.contain('/data/name');
      expect(await activeId()).to.equal('save-name');
      expect(await page.getAttribute('#save-name', 'aria-invalid')).to.equal('true');
      await page.fill('#save-name', '');
    });

    it('shows a 400 naming the parameter, and puts the focus on the value to fix', async () => {
      await page.click('#add-filter');
      await page.selectOption('#filter-1-field', 'checks_failed');
      await page.selectOption('#filter-1-operator', 'gt');
      await page.fill('#filter-1-value-0', 'many');
      await page.click('#run');
      await settled();
      const parameter = 'filter[1][checks_failed][gt][0]';
      const direct = await h.explorer(`?${qs([['type', 'workspaces'], ...FILTER, [parameter, 'many']])}`);
      const problem = (await json(direct)).errors[0];
      expect(direct.status).to.equal(400);
      expect(problem.source.parameter).to.equal(parameter);
      const text = await errorText();
      expect(text).to.contain(problem.detail);
      expect(text).to.contain(parameter);
      expect(await activeId()).to.equal('filter-1-value-0');
      expect(await page.getAttribute('#filter-1-value-0', 'aria-invalid')).to.equal('true');
      await shot('error', false); // scrolled to the value in error, which has the focus
      await page.click('button[aria-label="Remove filter 2"]');
      await page.click('#run');
      await settled();
      expect(await page.isHidden('#error')).to.equal(true);
    });

    it('downloads the CSV: the very bytes the API exports for the same query', async () => {
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
      expect(download.suggestedFilename()).to.match(/^acme-corp-workspaces-\d{8}T\d{6}Z\.csv$/);
      const saved = readFileSync((await download.path())!);
      const res = await h.explorer(`/export/csv?${qs([['type', 'workspaces'], ...FILTER, ['fields', FIELDS.join(',')], ['sort', 'checks_failed,workspace_name']])}`);
      expect(res.status).to.equal(200);
      const api = Buffer.from(await res.arrayBuffer());
      expect(api.toString('utf8').split('\n')).to.have.length(6); // header, 4 rows, final newline
      expect(saved.equals(api), `downloaded:\n${saved.toString('utf8')}\nAPI:\n${api.toString('utf8')}`).to.equal(true);
      expect(await page.locator('#status').innerText()).to.contain(`Downloaded ${download.suggestedFilename()}`);
    });

    it('downloads the same query as NDJSON and as Parquet: the bytes the API exports', async () => {
      const path = (format: string) => `/export/${format}?${qs([['type', 'workspaces'], ...FILTER, ['fields', FIELDS.join(',')], ['sort', 'checks_failed,workspace_name']])}`;
      for (const format of ['ndjson', 'parquet']) {
        await page.selectOption('#download-format', format);
        const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
        expect(download.suggestedFilename()).to.match(new RegExp(`^acme-corp-workspaces-\\d{8}T\\d{6}Z\\.${format}$`));
        const saved = readFileSync((await download.path())!);
        const api = Buffer.from(await (await h.explorer(path(format))).arrayBuffer());
        expect(saved.equals(api), `${format}: ${saved.length} bytes downloaded, ${api.length} from the API`).to.equal(true);
        if (format === 'ndjson') expect(saved.toString('utf8').split('\n')).to.have.length(5); // 4 rows, final newline
        else expect([saved.subarray(0, 4).toString(), saved.subarray(-4).toString()]).to.deep.equal(['PAR1', 'PAR1']);
        expect(await page.locator('#status').innerText()).to.contain(`Downloaded ${download.suggestedFilename()}`);
      }
      await page.selectOption('#download-format', 'csv');
    });

    it('says a rejected token is invalid or expired and puts the focus on it', async () => {
      await page.fill('#token', 'at-AAAAAAAAAAAAAAAA.BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB');
      await page.click('#run');
      await settled();
      expect(await errorText()).to.contain('The token is invalid or expired');
      expect(await activeId()).to.equal('token');
      expect(await page.getAttribute('#token', 'aria-invalid')).to.equal('true');
      expect(await page.getAttribute('#error', 'role')).to.equal('alert');
      await page.fill('#token', h.tokens.org);
    });

    it('says when the organization is unknown or out of the token\'s reach, and puts the focus on it', async () => {
      await page.fill('#org', 'globex'); // exists, but this token may not see it: the same answer as unknown
      await page.click('#run');
      await settled();
      expect(await errorText()).to.contain('The organization “globex” does not exist, or this token may not see it');
      expect(await activeId()).to.equal('org');
      await page.fill('#org', ORG);
      await page.click('#run');
      await settled();
      expect(await page.isHidden('#error')).to.equal(true);
      expect(await tableRows()).to.have.length(3);
    });
  });

  describe('time-outs and rate limits, from a real server', () => {
    let slow: Harness;
    before(async () => {
      // Every query passes its 1 ms deadline (504); the second request of the token is over its limit (429).
      slow = await startHarness({ env: { QUERY_TIMEOUT_MS: '1', RATE_LIMIT_MAX: '1', RATE_LIMIT_WINDOW_MS: '60000' } });
    });
    after(async () => { await slow?.close(); });

    it('explains a time-out with advice, then a 429 with its retry time', async () => {
      const p = await context.newPage();
      try {
        await p.goto(`${slow.url}/explorer#org=${ORG}&type=workspaces`);
        await p.waitForSelector('html[data-ready=true]');
        await p.fill('#token', slow.tokens.org);
        await p.click('#run');
        await settled(p);
        const timeout = await errorText(p);
        expect(timeout).to.contain('The query timed out');
        expect(timeout).to.contain('Narrow the filters');
        expect(timeout).to.contain('fewer fields');
        expect(timeout).to.contain('fewer filters'); // the API's own detail

        await p.click('#run');
        await settled(p);
        const limited = await errorText(p);
        expect(limited).to.contain('Too many requests');
        const seconds = Number(/Retry in (\d+) s/.exec(limited)?.[1]);
        expect(seconds).to.be.within(50, 60); // Retry-After of a 60 s window
      } finally {
        await p.close();
      }
    });
  });
});
