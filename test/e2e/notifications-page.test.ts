// The Notifications panel of the explorer page, end to end: Debian's chromium driven by playwright-core against
// a real server and a real receiver on loopback. Opening a saved view shows its panel; a notification created
// there is what the API holds, and so is an edit; Verify reaches the receiver, signed, and the panel shows
// the delivery. A notification's link opens the saved view as it is saved now, with its panel.
import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, watchProblems } from '../helpers/browser.js';
import { viewPageUrl } from '../../src/notifications/payload.js';
import { ORG } from '../fixtures/small-source.js';
import { json, startHarness, type Harness } from '../helpers/harness.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';


describe('the Notifications panel of the explorer page', function () {
  this.timeout(90_000);
  let h: Harness;
  let browser: Browser;
  let page: Page;
  let receiver: Receiver;
  let view: string;
  const problems: string[] = [];

  before(async () => {
    [h, browser, receiver] = await Promise.all([
      startHarness({ env: { NOTIFY_ALLOW_HOSTS: '127.0.0.1' } }), launchChromium(), startReceiver(() => ({ status: 204 })),
    ]);
    const made = await h.request(`/api/v2/organizations/${ORG}/explorer/views`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ data: { name: 'drifted', query_type: 'workspaces', query: { filter: [{ drifted: { is: ['true'] } }] } } }),
    });
    view = (await json(made)).data.id;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    watchProblems(page, problems);
  });
  after(async () => {
    await browser?.close();
    await receiver?.close();
    await h?.close();
  });
  afterEach(() => { expect(problems, 'errors and CSP violations in the page').to.deep.equal([]); });
  const until = async (test: () => boolean, what: string) => {
    for (const end = Date.now() + 10_000; !test();) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it('creates a notification for the open saved view, verifies it, and shows the delivery', async () => {
    await page.goto(`${h.url}/explorer#org=${ORG}&type=workspaces`);
    await page.waitForSelector('html[data-ready=true]');
    await page.fill('#token', h.tokens.org);
    await page.click('#run');
    await page.waitForSelector(`#saved-list li[data-id="${view}"]`);
    expect(await page.isHidden('#notifications'), 'no panel before a view is open').to.equal(true);
    await page.click(`#saved-list li[data-id="${view}"] .open-button`);
    await page.waitForSelector('#notifications:not([hidden]) #notify-form');
    expect(await page.textContent('#notify-empty')).to.match(/No notifications yet/);
    // The threshold's measures are the view's number fields.
    const measures = await page.$$eval('#notify-measure option', (os) => os.map((o) => o.getAttribute('value')));
    expect(measures).to.include('count').and.include('sum:resource_count');

    await page.fill('#notify-name', 'drift alerts');
    await page.fill('#notify-url', `${receiver.url}/hook`);
    await page.fill('#notify-token', 'page secret');
    await page.check('input[name=notify-trigger][value="explorer:rows-added"]');
    await page.click('#notify-create');
    await page.waitForSelector('#notify-list li');
    const listed = await (await h.request(`/api/v2/organizations/${ORG}/explorer/views/${view}/notification-configurations`)).json() as { data: any[] };
    expect(listed.data).to.have.length(1);
    expect(listed.data[0].attributes).to.include({ name: 'drift alerts', url: `${receiver.url}/hook`, 'destination-type': 'generic', enabled: true });
    expect(listed.data[0].attributes.triggers).to.deep.equal(['explorer:rows-added']);
    expect(await page.textContent('#notify-list li .badge.delivery-none')).to.equal('not sent yet');

    await page.click('#notify-list li .notify-verify');
    await page.waitForSelector('#notify-list li .badge.delivery-ok');
    expect(await page.textContent('#notify-list li .badge.delivery-ok')).to.equal('delivered (204)');
    expect(receiver.received).to.have.length(1);
    const [got] = receiver.received;
    expect(got!.headers['x-explorer-notification-signature']).to.equal(createHmac('sha512', 'page secret').update(got!.body).digest('hex'));
    expect(JSON.parse(got!.body).notifications[0].trigger).to.equal('verification');

    // Edit: the form holds the configuration; the name and a threshold changed, the token kept.
    await page.click('#notify-list li .notify-edit');
    expect(await page.inputValue('#notify-name')).to.equal('drift alerts');
    expect(await page.inputValue('#notify-url')).to.equal(`${receiver.url}/hook`);
    expect(await page.isChecked('input[name=notify-trigger][value="explorer:rows-added"]')).to.equal(true);
    await page.fill('#notify-name', 'drift and size');
    await page.check('input[name=notify-trigger][value="explorer:threshold"]');
    await page.selectOption('#notify-measure', 'sum:resource_count');
    await page.selectOption('#notify-direction', 'above');
    await page.fill('#notify-value', '4500');
    await page.click('#notify-create');
    await page.waitForSelector('#notify-list li .saved-name:text("drift and size")');
    const edited = (await (await h.request(`/api/v2/organizations/${ORG}/explorer/views/${view}/notification-configurations`)).json() as { data: any[] }).data[0].attributes;
    expect(edited.name).to.equal('drift and size');
    expect(edited.triggers).to.deep.equal(['explorer:rows-added', 'explorer:threshold']);
    expect(edited.threshold).to.deep.equal({ measure: 'sum:resource_count', above: 4500 });
    await page.click('#notify-list li .notify-verify');
    await until(() => receiver.received.length === 2, 'the second verification');
    expect(receiver.received[1]!.headers['x-explorer-notification-signature'], 'the token kept').to.equal(createHmac('sha512', 'page secret').update(receiver.received[1]!.body).digest('hex'));

    await page.click('#notify-list li .notify-disable');
    await page.waitForSelector('#notify-list li.disabled .notify-enable');
    await page.click('#notify-list li .notify-delete');
    await page.waitForSelector('#notify-empty:not([hidden])');
  });

  it('opens the saved view a notification links to, as edited since, with its name and notifications panel', async () => {
    const path = `/api/v2/organizations/${ORG}/explorer/views/${view}`;
    const saved = (await json(await h.request(path))).data;
    const link = viewPageUrl(h.url, { id: view, organization: ORG } as Parameters<typeof viewPageUrl>[1]);
    expect(link).to.equal(`${h.url}/explorer#org=${ORG}&view=${view}`);
    // Edited after the notification was made: the link opens what is saved now.
    const edited = await h.request(path, { method: 'PATCH', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ data: { name: 'not drifted', query: { filter: [{ drifted: { is: ['false'] } }], sort: ['-workspace_name'] } } }) });
    expect(edited.status).to.equal(200);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addInitScript(`sessionStorage.setItem('explorer.token', ${JSON.stringify(h.tokens.org)})`);
    const fresh = await context.newPage();
    fresh.on('pageerror', (e) => problems.push(e.message));
    try {
      await fresh.goto(link);
      await fresh.waitForSelector('#notifications:not([hidden]) #notify-form');
      await fresh.waitForSelector(`#saved-list li.current[data-id="${view}"]`);
      expect(await fresh.textContent('#status')).to.contain('Saved view “not drifted”');
      expect(await fresh.textContent('#notifications-heading')).to.equal('Notifications');
      // The query shown is the edited one, and the address names the view while it is shown as saved.
      const hash = decodeURIComponent(new URL(fresh.url()).hash);
      expect(hash).to.contain(`view=${view}`).and.to.contain('[drifted][is][0]=false').and.to.contain('sort=-workspace_name');
      expect(saved.attributes.name).to.equal('drifted');
      // An edit on the page: the address holds the query alone.
      await fresh.click('th button[data-field=workspace_terraform_version]');
      await until(() => !decodeURIComponent(fresh.url()).includes(`view=${view}`), 'an address without the view once the query differs');
    } finally {
      await context.close();
    }
  });
});
