// A saved view's notification configurations over HTTP: created, listed, shown, changed and deleted as the
// platform's own API shapes them; the token write-only; every refused url form, and every attribute that does
// not fit, a 422 naming it; another organization's view a 404.
import { expect } from 'chai';
import { ORG, OTHER_ORG } from '../fixtures/small-source.js';
import { openStateStore } from '../../src/store/open-store.js';
import { startHarness, type Harness } from '../helpers/harness.js';

const TYPE = 'notification-configurations';

describe('notification configurations of a saved view', function () {
  this.timeout(60_000);
  let h: Harness;
  let view: string;
  const views = `/api/v2/organizations/${ORG}/explorer/views`;
  const list = () => `${views}/${view}/notification-configurations`;
  const send = async (method: string, path: string, body?: unknown, token?: string) => {
    const res = await h.request(path, { method, ...(token ? { token } : {}), headers: { 'Content-Type': 'application/vnd.api+json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const attributes = (extra: Record<string, unknown> = {}) => ({
    name: 'drift alerts', 'destination-type': 'generic', url: 'http://127.0.0.1:9/hook', token: 's3cret',
    triggers: ['explorer:rows-added', 'explorer:threshold'], threshold: { measure: 'sum:resource_count', above: 4500 }, ...extra,
  });
  const create = (extra: Record<string, unknown> = {}) => send('POST', list(), { data: { type: TYPE, attributes: attributes(extra) } });
  const storedToken = async (id: string) => {
    const store = await openStateStore(h.config);
    try { return (await store.getNotificationConfiguration(ORG, view, id))?.token; } finally { await store.close(); }
  };

  before(async () => {
    h = await startHarness({ env: { NOTIFY_ALLOW_HOSTS: '127.0.0.1' } });
    const made = await send('POST', views, { data: { type: 'explorer-saved-queries', attributes: { name: 'drifted', 'query-type': 'workspaces', query: { filter: [{ field: 'drifted', operator: 'is', value: ['true'] }] } } } });
    expect(made.status).to.equal(201);
    view = made.body.data.id;
  });
  after(async () => { await h?.close(); });

  it('creates, lists, shows, changes and deletes a configuration; the token is never answered and a PATCH without it keeps it', async () => {
    const made = await create();
    expect(made.status, JSON.stringify(made.body)).to.equal(201);
    const nc = made.body.data;
    expect(nc.id).to.match(/^nc-[0-9A-Za-z]{16}$/);
    expect(nc.type).to.equal(TYPE);
    expect(nc.attributes).to.include({ name: 'drift alerts', enabled: true, 'destination-type': 'generic', url: 'http://127.0.0.1:9/hook', token: null });
    expect(nc.attributes.triggers).to.deep.equal(['explorer:rows-added', 'explorer:threshold']);
    expect(nc.attributes.threshold).to.deep.equal({ measure: 'sum:resource_count', above: 4500 });
    expect(nc.attributes['delivery-responses']).to.deep.equal([]);
    expect(nc.relationships).to.deep.equal({ subscribable: { data: { id: view, type: 'explorer-saved-queries' } } });
    expect(await storedToken(nc.id)).to.equal('s3cret');

    expect((await send('GET', list())).body.data.map((c: { id: string }) => c.id)).to.include(nc.id);
    expect((await send('GET', `${list()}/${nc.id}`)).body.data).to.deep.equal(nc);
    const patched = await send('PATCH', `${list()}/${nc.id}`, { data: { type: TYPE, attributes: { enabled: false, name: '  renamed  ' } } });
    expect(patched.status).to.equal(200);
    expect(patched.body.data.attributes).to.include({ enabled: false, name: 'renamed', token: null });
    expect(await storedToken(nc.id), 'kept').to.equal('s3cret');
    const slack = await send('PATCH', `${list()}/${nc.id}`, { data: { type: TYPE, attributes: { 'destination-type': 'slack' } } });
    expect(slack.status).to.equal(200);
    expect(await storedToken(nc.id), 'dropped away from generic').to.equal(null);
    const removed = await send('PATCH', `${list()}/${nc.id}`, { data: { type: TYPE, attributes: { triggers: ['explorer:rows-removed'] } } });
    expect(removed.body.data.attributes.threshold, 'a threshold goes with its trigger').to.equal(null);

    expect((await send('DELETE', `${list()}/${nc.id}`)).body.data.id).to.equal(nc.id);
    expect((await send('GET', `${list()}/${nc.id}`)).status).to.equal(404);
    expect((await send('DELETE', `${list()}/${nc.id}`)).status).to.equal(404);
  });

  it('refuses every url that leads where notifications must not go, naming url', async () => {
    for (const url of ['https://localhost/', 'https://127.0.0.2/', 'https://[::1]/', 'https://[::ffff:127.0.0.1]/', 'https://2130706433/', 'https://0x7f.1/',
      'https://0177.0.0.1/', 'http://2130706433:9/', 'https://10.1.2.3/', 'https://169.254.169.254/', 'https://[fe80::1]/', 'https://0.0.0.0/',
      'http://192.0.2.10/', 'https://192.0.2.10/', 'https://198.18.0.1/', 'https://240.0.0.1/', 'https://[2001:db8::1]/', 'https://[3fff::1]/',
      'https://user:pw@93.184.216.34/', 'ftp://93.184.216.34/', 'http://93.184.216.34/', 'not a url']) {
      const r = await create({ url });
      expect(r.status, url).to.equal(422);
      expect(r.body.errors[0].source, url).to.deep.equal({ pointer: '/data/attributes/url' });
    }
    expect((await create({ url: 'https://93.184.216.34/hook' })).status, 'a public address').to.equal(201);
  });

  it('answers a 422 naming the attribute for each that does not fit', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ token: 'x', 'destination-type': 'slack' }, 'token'],
      [{ token: 'x'.repeat(1001) }, 'token'],
      [{ threshold: null }, 'threshold'],
      [{ triggers: ['explorer:rows-added'], threshold: { measure: 'count', above: 1 } }, 'threshold'],
      [{ threshold: { measure: 'sum:workspace_name', above: 1 } }, 'threshold'],
      [{ threshold: { measure: 'median', above: 1 } }, 'threshold'],
      [{ threshold: { measure: 'count', above: 1, below: 5 } }, 'threshold'],
      [{ threshold: { measure: 'count' } }, 'threshold'],
      [{ triggers: ['explorer:run-completed'] }, 'triggers'],
      [{ triggers: [] }, 'triggers'],
      [{ triggers: ['explorer:rows-added', 'explorer:rows-added'] }, 'triggers'],
      [{ 'destination-type': 'email' }, 'destination-type'],
      [{ name: '   ' }, 'name'],
      [{ enabled: 'yes' }, 'enabled'],
      [{ 'delivery-responses': [] }, 'delivery-responses'],
      [{ url: undefined }, 'url'],
    ];
    for (const [extra, attribute] of cases) {
      const r = await create(extra);
      expect(r.status, JSON.stringify(extra)).to.equal(422);
      expect(r.body.errors[0].source, JSON.stringify(extra)).to.deep.equal({ pointer: `/data/attributes/${attribute}` });
    }
    expect((await send('POST', list(), { data: { type: 'workspaces', attributes: attributes() } })).status).to.equal(422);
  });

  it('holds 20 per view, and a view\'s configurations go with it', async () => {
    const made = await send('POST', views, { data: { type: 'explorer-saved-queries', attributes: { name: 'all', 'query-type': 'workspaces', query: { filter: [] } } } });
    const other = made.body.data.id as string;
    const path = `${views}/${other}/notification-configurations`;
    for (let i = 0; i < 20; i++) expect((await send('POST', path, { data: { type: TYPE, attributes: attributes({ name: `n${i}` }) } })).status).to.equal(201);
    const full = await send('POST', path, { data: { type: TYPE, attributes: attributes() } });
    expect(full.status).to.equal(422);
    expect(full.body.errors[0].detail).to.match(/at most 20/);
    expect((await send('GET', path)).body.data).to.have.length(20);
    expect((await send('DELETE', `${views}/${other}`)).status).to.equal(200);
    expect((await send('GET', path)).status).to.equal(404);
  });

  it('queues one notification, from no earlier snapshot, when a threshold already holds as its configuration starts watching', async () => {
    const pending = async () => {
      const store = await openStateStore(h.config);
      try { return (await store.pendingNotifications()).filter((n) => n.viewId === view); } finally { await store.close(); }
    };
    const before = (await pending()).length;
    // One drifted workspace in the fixture: a count above 0 holds, above 5 does not.
    const holds = await create({ name: 'holds', triggers: ['explorer:threshold'], threshold: { measure: 'count', above: 0 } });
    await create({ name: 'does not', triggers: ['explorer:threshold'], threshold: { measure: 'count', above: 5 } });
    await create({ name: 'disabled', enabled: false, triggers: ['explorer:threshold'], threshold: { measure: 'count', above: 0 } });
    let queued = (await pending()).slice(before);
    expect(queued.map((n) => n.configurationId)).to.deep.equal([holds.body.data.id]);
    const facts = queued[0]!.facts as any;
    expect(queued[0]!.from).to.equal(null);
    expect(facts.from_snapshot).to.equal(null);
    expect(facts.notifications).to.deep.equal([{ trigger: 'explorer:threshold', message: 'count of "drifted" went above 0: none → 1.',
      measure: { name: 'count', before: null, after: 1, threshold: 0 }, rows: [], changes_url: null }]);
    // Renamed: nothing new; disabled then enabled: once more.
    const path = `${list()}/${holds.body.data.id}`;
    await send('PATCH', path, { data: { type: TYPE, attributes: { name: 'renamed' } } });
    await send('PATCH', path, { data: { type: TYPE, attributes: { enabled: false } } });
    expect((await pending()).slice(before)).to.have.length(1);
    await send('PATCH', path, { data: { type: TYPE, attributes: { enabled: true } } });
    queued = (await pending()).slice(before);
    expect(queued.map((n) => n.configurationId)).to.deep.equal([holds.body.data.id, holds.body.data.id]);
  });

  it('answers 404 for another organization\'s view and configurations, and 401 without a token', async () => {
    const nc = (await create({ name: 'mine' })).body.data.id as string;
    const foreign = `/api/v2/organizations/${OTHER_ORG}/explorer/views/${view}/notification-configurations`;
    expect((await send('GET', foreign, undefined, h.tokens.otherOrg)).status).to.equal(404);
    expect((await send('GET', `${foreign}/${nc}`, undefined, h.tokens.otherOrg)).status).to.equal(404);
    expect((await send('GET', `${list()}/${nc}`, undefined, h.tokens.otherOrg)).status).to.equal(404);
    expect((await send('PATCH', `${foreign}/${nc}`, { data: { type: TYPE, attributes: { enabled: false } } }, h.tokens.otherOrg)).status).to.equal(404);
    expect((await send('DELETE', `${foreign}/${nc}`, undefined, h.tokens.otherOrg)).status).to.equal(404);
    expect((await send('GET', `${views}/sq-0000000000000000/notification-configurations`)).status).to.equal(404);
    const anonymous = await h.request(list(), { token: null });
    expect(anonymous.status).to.equal(401);
    expect((await send('GET', `${list()}/${nc}`)).body.data.attributes.enabled).to.equal(true);
  });
});
