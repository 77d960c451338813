// One contract suite for StateStore (src/store/state-store.ts), run unchanged against every implementation:
// the embedded journal (a fresh directory per test) and Redis (one test Redis for the file, a fresh key
// prefix per test). Tests use only the StateStore interface; nothing here knows how a store keeps its data.
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { openJournalStore } from '../../src/store/journal-store.js';
import { redisStateStore } from '../../src/store/redis-store.js';
import {
  DELIVERY_RESPONSES_KEPT, MAX_CONFIGURATIONS_PER_VIEW, NameTakenError, TooManyConfigurationsError,
  type DeliveryResponse, type NotificationConfiguration, type PendingNotification, type SavedQuery, type SavedView, type StateStore, type TokenRecord,
} from '../../src/store/state-store.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { sharedTestCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';

export interface OpenedStore {
  store: StateStore;
  /** Closes the current store and opens a new one on the same persisted data. */
  reopen?: () => Promise<StateStore>;
  /** Closes whatever store is open and removes its data. */
  cleanup(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------
// Fixtures

const T0 = Date.UTC(2024, 0, 1);
/** An ISO timestamp `s` seconds after 2024-01-01T00:00:00.000Z (negative: before). */
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

/** A syntactically valid id: prefix + 16 base-62 characters (the tail is left-padded with zeros). */
const vid = (tail: string | number) => `sq-${String(tail).padStart(16, '0')}`;
const tid = (tail: string | number) => `at-${String(tail).padStart(16, '0')}`;

function token(tail: string | number, extra: Partial<TokenRecord> = {}): TokenRecord {
  return {
    id: tid(tail), kind: 'organization', organization: 'acme', team: null, user: null,
    secretHash: `${String(tail).padStart(2, '0')}`.repeat(32).slice(0, 64), createdAt: at(0), description: null, ...extra,
  };
}

function query(tag: string, extra: Partial<SavedQuery> = {}): SavedQuery {
  return { type: 'workspaces', filter: [{ field: 'name', operator: 'contains', value: [tag] }], ...extra };
}

function view(tail: string | number, name: string, extra: Partial<SavedView> = {}): SavedView {
  return {
    id: vid(tail), organization: 'acme', name, queryType: 'workspaces', query: query(name),
    createdAt: at(0), updatedAt: at(0), ...extra,
  };
}

/** Resolves when `p` rejects with NameTakenError for `name`; fails the test otherwise. */
async function expectNameTaken(p: Promise<unknown>, name: string): Promise<void> {
  let outcome: unknown;
  try {
    outcome = await p;
  } catch (err) {
    expect(err, `rejection for ${JSON.stringify(name)}`).to.be.instanceOf(NameTakenError);
    expect((err as NameTakenError).viewName).to.equal(name);
    return;
  }
  expect.fail(`expected NameTakenError for ${JSON.stringify(name)}, got fulfilled with ${JSON.stringify(outcome)}`);
}

async function settle<T>(promises: Promise<T>[]): Promise<{ ok: T[]; failed: unknown[] }> {
  const results = await Promise.allSettled(promises);
  return {
    ok: results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : [])),
    failed: results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : [])),
  };
}

const byId = <T extends { id: string }>(xs: T[]) => [...xs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

// ---------------------------------------------------------------------------------------------------------
// The contract

export function contract(name: string, open: () => Promise<OpenedStore>): void {
  describe(`StateStore contract: ${name}`, () => {
    let h: OpenedStore | undefined;
    let store: StateStore;
    beforeEach(async () => {
      h = await open();
      store = h.store;
    });
    afterEach(async () => {
      await h?.cleanup();
      h = undefined;
    });

    describe('tokens', () => {
      it('round-trips every field of every kind of token through putToken and getToken', async () => {
        const tokens: TokenRecord[] = [
          token(1, { kind: 'organization', organization: 'acme', team: null, user: null, description: null, createdAt: at(1) }),
          token('Ab9', { kind: 'team', organization: 'acme', team: 'owners', user: null, secretHash: 'f'.repeat(64), description: 'CI token, "prod" — é', createdAt: '2023-06-30T12:34:56.789Z' }),
          token('zZ', { kind: 'user', organization: null, team: null, user: 'alice@example.com', secretHash: '0123456789abcdef'.repeat(4), description: 'laptop', createdAt: at(3) }),
          token(4, { kind: 'user', organization: 'beta', team: null, user: 'bob', description: null, createdAt: at(3) }),
          token(5, { kind: 'auditor', organization: null, team: null, user: null, description: 'audit', createdAt: at(4), expiresAt: '2027-01-31T12:00:00.000Z' }),
        ];
        for (const t of tokens) await store.putToken(t);
        for (const t of tokens) expect(await store.getToken(t.id), t.id).to.deep.equal(t);
      });

      it('answers undefined for an unknown token id', async () => {
        expect(await store.getToken(tid(1))).to.equal(undefined);
        await store.putToken(token(1));
        expect(await store.getToken(tid(2))).to.equal(undefined);
        expect(await store.getToken(tid(1).toUpperCase())).to.equal(undefined);
      });

      it('lists every token exactly once, and a re-put replaces the token instead of adding one', async () => {
        expect(await store.listTokens()).to.deep.equal([]);
        const tokens = [
          token(5, { createdAt: at(5) }), token(1, { createdAt: at(9) }), token(3, { createdAt: at(1) }),
          token(2, { createdAt: at(1), kind: 'team', team: 'devs' }), token(4, { createdAt: at(-100), kind: 'user', organization: null, user: 'u' }),
        ];
        for (const t of tokens) await store.putToken(t);
        const replaced = { ...tokens[2]!, description: 'replaced', secretHash: 'e'.repeat(64) };
        await store.putToken(replaced);
        const listed = await store.listTokens();
        expect(listed).to.have.length(5);
        expect(new Set(listed.map((t) => t.id)).size).to.equal(5);
        expect(byId(listed)).to.deep.equal(byId([tokens[0]!, tokens[1]!, replaced, tokens[3]!, tokens[4]!]));
      });

      it('revokeToken answers true once, then false; the revoked token is gone and the others stay', async () => {
        const a = token(1), b = token(2, { createdAt: at(2) });
        await store.putToken(a);
        await store.putToken(b);
        expect(await store.revokeToken(a.id)).to.equal(true);
        expect(await store.revokeToken(a.id)).to.equal(false);
        expect(await store.revokeToken(tid(99))).to.equal(false);
        expect(await store.getToken(a.id)).to.equal(undefined);
        expect(await store.listTokens()).to.deep.equal([b]);
        expect(await store.getToken(b.id)).to.deep.equal(b);
        // A revoked id can be put again (a re-issued record), and then it is there once.
        await store.putToken(a);
        expect(byId(await store.listTokens())).to.deep.equal([a, b]);
      });
    });

    describe('saved views', () => {
      it('round-trips every field, including a query with filters, fields and sort', async () => {
        const v: SavedView = {
          id: vid('Xy7'), organization: 'org-acme', name: 'Prod workspaces — é "quoted", comma',
          queryType: 'workspaces',
          query: {
            type: 'workspaces',
            filter: [
              { field: 'name', operator: 'contains', value: ['prod', 'a,b', 'é', '"q"', ''] },
              { field: 'terraform-version', operator: 'gte', value: ['1.5.0'] },
              { field: 'tags', operator: 'is-empty', value: [] },
            ],
            fields: ['name', 'terraform-version', 'tags'],
            sort: ['-name', 'terraform-version'],
          },
          createdAt: '2023-05-06T07:08:09.010Z', updatedAt: '2024-02-03T04:05:06.070Z',
        };
        const created = await store.createView(v);
        expect(created).to.deep.equal(v);
        expect(await store.getView(v.organization, v.id)).to.deep.equal(v);
        expect(await store.listViews(v.organization)).to.deep.equal([v]);
      });

      it('round-trips a minimal query (no fields, no sort, no filters) without adding keys', async () => {
        const v = view(1, 'minimal', { queryType: 'modules', query: { type: 'modules', filter: [] } });
        expect(await store.createView(v)).to.deep.equal(v);
        const got = await store.getView('acme', v.id);
        expect(got).to.deep.equal(v);
        expect(Object.keys(got!.query).sort()).to.deep.equal(['filter', 'type']);
        expect(got!.query.filter).to.be.an('array').that.is.empty;
      });

      it('answers undefined for an unknown id and for another organization\'s view', async () => {
        const v = view(1, 'mine');
        await store.createView(v);
        expect(await store.getView('acme', vid(2))).to.equal(undefined);
        expect(await store.getView('other', v.id)).to.equal(undefined);
        expect(await store.getView('acm', v.id)).to.equal(undefined);
        expect(await store.getView('ACME', v.id)).to.equal(undefined);
        expect(await store.listViews('other')).to.deep.equal([]);
        expect(await store.getView('acme', v.id)).to.deep.equal(v);
      });

      it('lists an organization\'s views ordered by createdAt, then id, and only that organization\'s', async () => {
        // Created out of order; ties on createdAt broken by id (code-unit order: digits < upper < lower);
        // updatedAt runs the other way so that it cannot be what orders them.
        const specs: Array<[string, number]> = [
          ['b', 5], ['1', 10], ['9', 1], ['a', 5], ['2', -86_400], ['Z', 1], ['B', 5],
        ];
        for (const [tail, s] of specs) await store.createView(view(tail, `v-${tail}`, { createdAt: at(s), updatedAt: at(1000 - s) }));
        await store.createView(view('0', 'other org', { organization: 'other', createdAt: at(3) }));
        const expectedOrder = ['2', '9', 'Z', 'B', 'a', 'b', '1'].map(vid);
        const listed = await store.listViews('acme');
        expect(listed.map((v) => v.id)).to.deep.equal(expectedOrder);
        expect(listed[0]).to.deep.equal(view('2', 'v-2', { createdAt: at(-86_400), updatedAt: at(1000 + 86_400) }));
        // An update (new updatedAt, new name) does not move a view.
        await store.updateView('acme', vid('2'), { name: 'renamed', query: query('x'), updatedAt: at(5000) });
        expect((await store.listViews('acme')).map((v) => v.id)).to.deep.equal(expectedOrder);
        expect((await store.listViews('other')).map((v) => v.id)).to.deep.equal([vid('0')]);
        expect(await store.listViews('nobody')).to.deep.equal([]);
      });

      it('lists the organizations that have views, sorted and without duplicates', async () => {
        expect(await store.listViewOrganizations()).to.deep.equal([]);
        let n = 0;
        for (const org of ['zeta', 'acme', 'Beta', 'acme', 'm-1', 'zeta', 'acme-corp']) {
          await store.createView(view(++n, `view ${n}`, { organization: org }));
        }
        expect(await store.listViewOrganizations()).to.deep.equal(['Beta', 'acme', 'acme-corp', 'm-1', 'zeta']);
      });

      it('refuses a second view with an existing name in the same organization (exact, case-sensitive comparison)', async () => {
        const first = view(1, 'Report');
        await store.createView(first);
        await expectNameTaken(store.createView(view(2, 'Report', { createdAt: at(1) })), 'Report');
        expect(await store.listViews('acme')).to.deep.equal([first]);
        expect(await store.getView('acme', vid(2))).to.equal(undefined);
        // Names that differ in case, whitespace or normalization are different names.
        const others = [view(3, 'report'), view(4, 'REPORT'), view(5, 'Report '), view(6, ' Report')];
        for (const v of others) expect(await store.createView(v)).to.deep.equal(v);
        const cafeNfc = view(7, 'caf\u00e9'), cafeNfd = view(8, 'cafe\u0301');
        expect(await store.createView(cafeNfc)).to.deep.equal(cafeNfc);
        expect(await store.createView(cafeNfd)).to.deep.equal(cafeNfd);
        await expectNameTaken(store.createView(view(9, 'report')), 'report');
        await expectNameTaken(store.createView(view(10, 'caf\u00e9')), 'caf\u00e9');
        expect((await store.listViews('acme')).map((v) => v.name).sort())
          .to.deep.equal(['Report', 'report', 'REPORT', 'Report ', ' Report', 'caf\u00e9', 'cafe\u0301'].sort());
      });

      it('allows the same name in another organization', async () => {
        const a = view(1, 'Shared'), b = view(2, 'Shared', { organization: 'beta' });
        expect(await store.createView(a)).to.deep.equal(a);
        expect(await store.createView(b)).to.deep.equal(b);
        expect(await store.listViews('acme')).to.deep.equal([a]);
        expect(await store.listViews('beta')).to.deep.equal([b]);
        await expectNameTaken(store.createView(view(3, 'Shared', { organization: 'beta' })), 'Shared');
      });

      it('updateView replaces name, query and updatedAt and keeps id, organization, queryType and createdAt', async () => {
        const v = view(1, 'before', { queryType: 'modules', query: { type: 'modules', filter: [] }, createdAt: at(10), updatedAt: at(11) });
        await store.createView(v);
        const change = {
          name: 'after',
          query: { type: 'modules', filter: [{ field: 'source', operator: 'is', value: ['a', 'b'] }], fields: ['name'], sort: ['-name'] },
          updatedAt: at(99),
        };
        const expected: SavedView = { ...v, name: 'after', query: change.query, updatedAt: at(99) };
        expect(await store.updateView('acme', v.id, change)).to.deep.equal(expected);
        expect(await store.getView('acme', v.id)).to.deep.equal(expected);
        expect(await store.listViews('acme')).to.deep.equal([expected]);
        // A query without fields/sort replaces one that had them (no merge).
        const plain = { name: 'after', query: query('q'), updatedAt: at(100) };
        const expected2: SavedView = { ...v, name: 'after', query: query('q'), updatedAt: at(100) };
        expect(await store.updateView('acme', v.id, plain)).to.deep.equal(expected2);
        expect(await store.getView('acme', v.id)).to.deep.equal(expected2);
      });

      it('updateView to the view\'s own current name succeeds', async () => {
        const v = view(1, 'same');
        await store.createView(v);
        const expected = { ...v, query: query('new'), updatedAt: at(5) };
        expect(await store.updateView('acme', v.id, { name: 'same', query: query('new'), updatedAt: at(5) })).to.deep.equal(expected);
        expect(await store.getView('acme', v.id)).to.deep.equal(expected);
        await expectNameTaken(store.createView(view(2, 'same')), 'same');
      });

      it('updateView to another view\'s name throws NameTakenError and changes neither view', async () => {
        const a = view(1, 'alpha'), b = view(2, 'beta', { createdAt: at(1) });
        await store.createView(a);
        await store.createView(b);
        await expectNameTaken(store.updateView('acme', b.id, { name: 'alpha', query: query('changed'), updatedAt: at(9) }), 'alpha');
        expect(await store.getView('acme', a.id)).to.deep.equal(a);
        expect(await store.getView('acme', b.id)).to.deep.equal(b);
        // beta still holds its name; alpha still holds its own.
        await expectNameTaken(store.createView(view(3, 'beta')), 'beta');
        await expectNameTaken(store.createView(view(4, 'alpha')), 'alpha');
        // A name only taken in another organization does not clash.
        await store.createView(view(5, 'gamma', { organization: 'other' }));
        const renamed = await store.updateView('acme', b.id, { name: 'gamma', query: query('g'), updatedAt: at(10) });
        expect(renamed).to.deep.equal({ ...b, name: 'gamma', query: query('g'), updatedAt: at(10) });
      });

      it('a rename frees the old name for reuse and takes the new one', async () => {
        const v = view(1, 'one');
        await store.createView(v);
        await store.updateView('acme', v.id, { name: 'two', query: v.query, updatedAt: at(1) });
        const reuse = view(2, 'one', { createdAt: at(2) });
        expect(await store.createView(reuse)).to.deep.equal(reuse);
        await expectNameTaken(store.createView(view(3, 'two')), 'two');
        // and renaming back onto the reused name is refused
        await expectNameTaken(store.updateView('acme', v.id, { name: 'one', query: v.query, updatedAt: at(3) }), 'one');
        expect((await store.listViews('acme')).map((x) => [x.id, x.name])).to.deep.equal([[vid(1), 'two'], [vid(2), 'one']]);
      });

      it('updateView and deleteView of a missing id (or another organization\'s id) answer undefined and change nothing', async () => {
        const v = view(1, 'kept');
        await store.createView(v);
        const change = { name: 'x', query: query('x'), updatedAt: at(1) };
        expect(await store.updateView('acme', vid(2), change)).to.equal(undefined);
        expect(await store.deleteView('acme', vid(2))).to.equal(undefined);
        expect(await store.updateView('other', v.id, change)).to.equal(undefined);
        expect(await store.deleteView('other', v.id)).to.equal(undefined);
        expect(await store.listViews('acme')).to.deep.equal([v]);
        expect(await store.listViews('other')).to.deep.equal([]);
        expect(await store.getView('other', v.id)).to.equal(undefined);
        // the failed update did not take its name
        const x = view(3, 'x', { createdAt: at(1) });
        expect(await store.createView(x)).to.deep.equal(x);
      });

      it('deleteView returns the deleted view as last stored, removes it and frees its name', async () => {
        const a = view(1, 'doomed'), b = view(2, 'survivor', { createdAt: at(1) });
        await store.createView(a);
        await store.createView(b);
        const updated = { ...a, name: 'doomed!', query: query('last', { sort: ['name'] }), updatedAt: at(7) };
        await store.updateView('acme', a.id, { name: updated.name, query: updated.query, updatedAt: updated.updatedAt });
        expect(await store.deleteView('acme', a.id)).to.deep.equal(updated);
        expect(await store.getView('acme', a.id)).to.equal(undefined);
        expect(await store.listViews('acme')).to.deep.equal([b]);
        expect(await store.deleteView('acme', a.id)).to.equal(undefined);
        expect(await store.updateView('acme', a.id, { name: 'z', query: query('z'), updatedAt: at(8) })).to.equal(undefined);
        const again = view(3, 'doomed!', { createdAt: at(2) });
        expect(await store.createView(again)).to.deep.equal(again);
        expect(await store.listViews('acme')).to.deep.equal([b, again]);
      });

      it('hands out copies: mutating arguments or returned objects does not change what is stored', async () => {
        const original = view(1, 'orig', { query: query('orig', { fields: ['name'], sort: ['name'] }) });
        const input = structuredClone(original);
        const created = await store.createView(input);
        input.name = 'mutated input';
        input.query.filter[0]!.value.push('mutated');
        input.query.fields!.push('mutated');
        created.name = 'mutated created';
        created.query.filter.push({ field: 'f', operator: 'o', value: [] });
        created.query.sort!.length = 0;
        const got = (await store.getView('acme', original.id))!;
        expect(got).to.deep.equal(original);
        got.name = 'mutated got';
        got.query.filter[0]!.value[0] = 'mutated';
        const listed = await store.listViews('acme');
        listed[0]!.updatedAt = at(1234);
        listed[0]!.query.fields!.push('mutated');
        listed.push(view(9, 'pushed'));
        expect(await store.listViews('acme')).to.deep.equal([original]);

        const change = { name: 'changed', query: query('changed', { fields: ['a'] }), updatedAt: at(5) };
        const expected: SavedView = { ...original, ...structuredClone(change) };
        const updated = (await store.updateView('acme', original.id, change))!;
        change.query.filter[0]!.value.push('mutated');
        change.query.fields!.push('mutated');
        change.name = 'mutated change';
        updated.query.filter.length = 0;
        updated.name = 'mutated updated';
        expect(await store.getView('acme', original.id)).to.deep.equal(expected);
        // the old name was freed and the new one is held, whatever happened to the objects
        await expectNameTaken(store.createView(view(2, 'changed')), 'changed');

        const deleted = (await store.deleteView('acme', original.id))!;
        expect(deleted).to.deep.equal(expected);
        deleted.id = vid(3);
        expect(await store.getView('acme', original.id)).to.equal(undefined);
        expect(await store.getView('acme', vid(3))).to.equal(undefined);

        const t = token(1, { description: 'orig' });
        const tInput = structuredClone(t);
        await store.putToken(tInput);
        tInput.description = 'mutated input';
        tInput.kind = 'user';
        const tGot = (await store.getToken(t.id))!;
        tGot.secretHash = 'mutated';
        const tListed = await store.listTokens();
        tListed[0]!.team = 'mutated';
        tListed.push(token(2));
        expect(await store.getToken(t.id)).to.deep.equal(t);
        expect(await store.listTokens()).to.deep.equal([t]);
      });
    });

    describe('notification configurations', () => {
      const nc = (tail: string | number, viewId: string, extra: Partial<NotificationConfiguration> = {}): NotificationConfiguration => ({
        id: `nc-${String(tail).padStart(16, '0')}`, organization: 'acme', viewId, name: `alerts ${tail}`, enabled: true,
        destinationType: 'generic', url: 'https://hooks.example.com/x', token: 'k', triggers: ['explorer:threshold'],
        threshold: { measure: 'sum:resource_count', above: 4500 }, createdAt: at(Number(String(tail).replace(/\D/g, '')) || 0), updatedAt: at(0), ...extra,
      });

      it('creates, lists in creation order, updates whole and deletes a view\'s configurations, apart from other views\'', async () => {
        const [a, b] = [view(1, 'one'), view(2, 'two')];
        await store.createView(a);
        await store.createView(b);
        const made = [nc(3, a.id), nc(1, a.id, { token: null, destinationType: 'slack', triggers: ['explorer:rows-added', 'explorer:rows-removed'], threshold: null }), nc(2, b.id)];
        for (const c of made) expect(await store.createNotificationConfiguration(c)).to.deep.equal(c);
        expect(await store.listNotificationConfigurations('acme', a.id)).to.deep.equal([made[1], made[0]]);
        expect(await store.listNotificationConfigurations('acme', b.id)).to.deep.equal([made[2]]);
        expect(await store.listNotificationConfigurations('other', a.id)).to.deep.equal([]);
        expect(await store.getNotificationConfiguration('acme', b.id, made[0]!.id)).to.equal(undefined);
        const changed = { ...made[0]!, enabled: false, threshold: { measure: 'count', below: 10 }, updatedAt: at(9) };
        expect(await store.updateNotificationConfiguration(changed)).to.deep.equal(changed);
        expect(await store.getNotificationConfiguration('acme', a.id, changed.id)).to.deep.equal(changed);
        expect(await store.updateNotificationConfiguration({ ...changed, viewId: b.id })).to.equal(undefined);
        expect(await store.deleteNotificationConfiguration('acme', a.id, changed.id)).to.deep.equal(changed);
        expect(await store.deleteNotificationConfiguration('acme', a.id, changed.id)).to.equal(undefined);
        expect(await store.listNotificationConfigurations('acme', a.id)).to.deep.equal([made[1]]);
        if (h!.reopen) {
          store = await h!.reopen();
          expect(await store.listNotificationConfigurations('acme', a.id)).to.deep.equal([made[1]]);
          expect(await store.getNotificationConfiguration('acme', b.id, made[2]!.id)).to.deep.equal(made[2]);
        }
      });

      it('refuses a configuration under a view that does not exist, and deletes a view\'s configurations with it', async () => {
        const a = view(1, 'one');
        expect(await store.createNotificationConfiguration(nc(1, a.id))).to.equal(undefined);
        await store.createView(a);
        await store.createNotificationConfiguration(nc(1, a.id));
        await store.deleteView('acme', a.id);
        expect(await store.listNotificationConfigurations('acme', a.id)).to.deep.equal([]);
        await store.createView(a);
        expect(await store.listNotificationConfigurations('acme', a.id), 'a view made again with the same id starts empty').to.deep.equal([]);
      });

      it(`holds at most ${MAX_CONFIGURATIONS_PER_VIEW} per view, even when creates race`, async () => {
        const a = view(1, 'one');
        await store.createView(a);
        const { ok, failed } = await settle(Array.from({ length: MAX_CONFIGURATIONS_PER_VIEW + 5 }, (_, i) => store.createNotificationConfiguration(nc(i + 1, a.id))));
        expect(ok).to.have.length(MAX_CONFIGURATIONS_PER_VIEW);
        expect(failed).to.have.length(5);
        for (const e of failed) expect(e).to.be.instanceOf(TooManyConfigurationsError);
        expect(await store.listNotificationConfigurations('acme', a.id)).to.have.length(MAX_CONFIGURATIONS_PER_VIEW);
      });
    });

    describe('notifier state', () => {
      const ref = { organization: 'acme', viewId: vid(1), configurationId: 'nc-0000000000000001' };
      const pending = (n: number, extra: Partial<PendingNotification> = {}): PendingNotification => ({
        id: `nd-${String(n).padStart(16, '0')}`, ...ref, destinationType: 'generic', from: n === 1 ? null : `s${n - 1}`, to: `s${n}`, facts: { n, text: 'é "q"' },
        createdAt: at(n), attempts: 0, nextAttemptAt: at(n), ...extra,
      });
      const response = (attempt: number, code: number | null): DeliveryResponse => ({
        url: 'https://hooks.example.com/x', code, body: code === null ? '' : `answer ${attempt}`, headers: code === null ? {} : { 'content-type': 'text/plain' },
        sentAt: at(100 + attempt), successful: code !== null && code < 300, attempt,
      });

      it('records a checked snapshot with its notifications in one step, in order, and keeps them until done', async () => {
        expect(await store.notifierCursor()).to.equal(null);
        expect(await store.pendingNotifications()).to.deep.equal([]);
        await store.recordChecked('s1', [pending(1), pending(2)]);
        await store.recordChecked('s2', []);
        await store.recordChecked('s3', [pending(3)]);
        await store.queueNotifications([pending(4, { from: null })]);
        expect(await store.notifierCursor(), 'a queued notification leaves the cursor').to.equal('s3');
        await store.recordAttempt(pending(4).id, response(9, 204), null);
        expect((await store.pendingNotifications()).map((p) => p.id)).to.deep.equal([pending(1).id, pending(2).id, pending(3).id]);
        await store.recordAttempt(pending(1).id, response(1, 503), at(200));
        expect((await store.pendingNotifications())[0]).to.deep.equal({ ...pending(1), attempts: 1, nextAttemptAt: at(200) });
        await store.recordAttempt(pending(1).id, response(2, 204), null);
        await store.recordAttempt(pending(1).id, response(3, 204), null); // done already: nothing kept
        expect((await store.pendingNotifications()).map((p) => p.id)).to.deep.equal([pending(2).id, pending(3).id]);
        expect(await store.deliveryResponses(ref)).to.deep.equal([response(2, 204), response(1, 503), response(9, 204)]);
        if (h!.reopen) {
          store = await h!.reopen();
          expect(await store.notifierCursor()).to.equal('s3');
          expect((await store.pendingNotifications()).map((p) => p.id)).to.deep.equal([pending(2).id, pending(3).id]);
          expect(await store.deliveryResponses(ref)).to.deep.equal([response(2, 204), response(1, 503), response(9, 204)]);
        }
      });

      it(`keeps a configuration's last ${DELIVERY_RESPONSES_KEPT} responses, newest first, verifications among them`, async () => {
        for (let i = 1; i <= DELIVERY_RESPONSES_KEPT + 3; i++) await store.recordResponse(ref, response(i, i % 2 === 0 ? 200 : null));
        const kept = await store.deliveryResponses(ref);
        expect(kept.map((r) => r.attempt)).to.deep.equal(Array.from({ length: DELIVERY_RESPONSES_KEPT }, (_, i) => DELIVERY_RESPONSES_KEPT + 3 - i));
        expect(await store.deliveryResponses({ ...ref, configurationId: 'nc-0000000000000002' })).to.deep.equal([]);
      });

      it('gives the lease to one holder at a time, renews it for that holder, and frees it on release or expiry', async () => {
        expect(await store.takeNotifierLease('a', 60_000)).to.equal(true);
        expect(await store.takeNotifierLease('b', 60_000)).to.equal(false);
        expect(await store.takeNotifierLease('a', 60_000)).to.equal(true);
        await store.releaseNotifierLease('b'); // not b's: nothing happens
        expect(await store.takeNotifierLease('b', 60_000)).to.equal(false);
        await store.releaseNotifierLease('a');
        expect(await store.takeNotifierLease('b', 50)).to.equal(true);
        await new Promise((r) => setTimeout(r, 120));
        expect(await store.takeNotifierLease('a', 60_000), 'b\'s lease expired').to.equal(true);
        const { ok } = await settle(['c', 'd', 'e'].map((holder) => store.takeNotifierLease(holder, 60_000)));
        expect(ok.filter(Boolean), 'a still holds it').to.have.length(0);
      });
    });

    describe('concurrency', () => {
      it('50 concurrent createView with one name: exactly one succeeds, 49 get NameTakenError', async () => {
        const views = Array.from({ length: 50 }, (_, i) => view(i + 1, 'contested', { query: query(`q${i}`), createdAt: at(i) }));
        const { ok, failed } = await settle(views.map((v) => store.createView(v)));
        expect(ok).to.have.length(1);
        expect(failed).to.have.length(49);
        for (const err of failed) {
          expect(err).to.be.instanceOf(NameTakenError);
          expect((err as NameTakenError).viewName).to.equal('contested');
        }
        const winner = ok[0]!;
        expect(views.filter((v) => isDeepStrictEqual(v, winner))).to.have.length(1);
        expect(await store.listViews('acme')).to.deep.equal([winner]);
        expect(await store.getView('acme', winner.id)).to.deep.equal(winner);
        for (const v of views) if (v.id !== winner.id) expect(await store.getView('acme', v.id)).to.equal(undefined);
      });

      it('30 concurrent creates with distinct names: all succeed and all are listed', async () => {
        const views = Array.from({ length: 30 }, (_, i) => view(i + 1, `distinct ${i}`, { createdAt: at(30 - i) }));
        const created = await Promise.all(views.map((v) => store.createView(v)));
        expect(created).to.deep.equal(views);
        const listed = await store.listViews('acme');
        expect(listed).to.have.length(30);
        expect(listed).to.deep.equal([...views].reverse()); // createdAt runs backwards with i
        for (const v of views) await expectNameTaken(store.createView(view(`x${v.id.slice(-4)}`, v.name)), v.name);
      });

      it('50 concurrent updates: the stored view is exactly one of them, whole, and only its name is held', async () => {
        const base = view(1, 'start', { createdAt: at(0) });
        await store.createView(base);
        const changes = Array.from({ length: 50 }, (_, i) => ({
          name: `name-${i}`,
          query: query(`value-${i}`, { fields: [`field-${i}`], sort: [`-sort-${i}`] }),
          updatedAt: at(100 + i),
        }));
        const { ok, failed } = await settle(changes.map((c) => store.updateView('acme', base.id, c)));
        expect(failed, String(failed[0])).to.have.length(0);
        expect(ok).to.have.length(50);
        const final = await store.getView('acme', base.id);
        const candidates = changes.map((c): SavedView => ({ ...base, ...c }));
        const matches = candidates.filter((c) => isDeepStrictEqual(c, final));
        expect(matches, `final view ${JSON.stringify(final)} is not one whole update`).to.have.length(1);
        expect(final).to.deep.equal(matches[0]);
        expect(await store.listViews('acme')).to.deep.equal([final]);
        // The final name is held; every other name the view passed through (and its first) is free again.
        await expectNameTaken(store.createView(view(2, final!.name)), final!.name);
        const freed = ['start', ...changes.map((c) => c.name)].filter((n) => n !== final!.name);
        const reused = await settle(freed.map((n, i) => store.createView(view(100 + i, n, { createdAt: at(1) }))));
        expect(reused.failed.map(String)).to.deep.equal([]);
        expect(reused.ok).to.have.length(50);
      });

      it('50 concurrent updates: each call returns the view exactly as its own update left it', async () => {
        const base = view(1, 'start');
        await store.createView(base);
        const changes = Array.from({ length: 50 }, (_, i) => ({ name: `name-${i}`, query: query(`value-${i}`), updatedAt: at(100 + i) }));
        const results = await Promise.all(changes.map((c) => store.updateView('acme', base.id, c)));
        const wrong = results
          .map((r, i) => ({ call: i, returnedName: r?.name, ownName: changes[i]!.name, same: isDeepStrictEqual(r, { ...base, ...changes[i]! }) }))
          .filter((x) => !x.same);
        const sample = wrong.slice(0, 3).map((x) => `call ${x.call} set ${x.ownName} but returned ${x.returnedName}`).join('; ');
        expect(wrong.length, `${wrong.length} of 50 updates returned a view other than their own (${sample})`).to.equal(0);
      });

      it('concurrent renames of two views to one name: exactly one succeeds, the other keeps its name', async () => {
        for (let round = 0; round < 10; round++) {
          const a = view(`a${round}`, `a-${round}`, { createdAt: at(round) });
          const b = view(`b${round}`, `b-${round}`, { createdAt: at(round) });
          await store.createView(a);
          await store.createView(b);
          const target = `target-${round}`;
          const changeA = { name: target, query: query('from a'), updatedAt: at(1000 + round) };
          const changeB = { name: target, query: query('from b'), updatedAt: at(2000 + round) };
          const results = await Promise.allSettled([
            store.updateView('acme', a.id, changeA), store.updateView('acme', b.id, changeB),
          ]);
          const won = results.map((r) => r.status === 'fulfilled');
          expect(won.filter(Boolean), `round ${round}`).to.have.length(1);
          const loserResult = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
          expect(loserResult.reason).to.be.instanceOf(NameTakenError);
          expect((loserResult.reason as NameTakenError).viewName).to.equal(target);
          const [winner, winnerChange, loser] = won[0] ? [a, changeA, b] : [b, changeB, a];
          expect(await store.getView('acme', winner.id)).to.deep.equal({ ...winner, ...winnerChange });
          expect(await store.getView('acme', loser.id)).to.deep.equal(loser);
          const named = (await store.listViews('acme')).filter((v) => v.name === target);
          expect(named.map((v) => v.id)).to.deep.equal([winner.id]);
          // the winner's old name is free, the loser's is still held
          await store.createView(view(`w${round}`, winner.name, { createdAt: at(round) }));
          await expectNameTaken(store.createView(view(`l${round}`, loser.name)), loser.name);
        }
      });

      it('a concurrent create and rename to one name: exactly one succeeds', async () => {
        for (let round = 0; round < 10; round++) {
          const existing = view(`e${round}`, `existing-${round}`, { createdAt: at(round) });
          await store.createView(existing);
          const target = `target-${round}`;
          const fresh = view(`n${round}`, target, { createdAt: at(round) });
          const [created, renamed] = await Promise.allSettled([
            store.createView(fresh),
            store.updateView('acme', existing.id, { name: target, query: existing.query, updatedAt: at(50) }),
          ]);
          expect([created.status, renamed.status].filter((s) => s === 'fulfilled'), `round ${round}`).to.have.length(1);
          const failure = (created.status === 'rejected' ? created : renamed) as PromiseRejectedResult;
          expect(failure.reason).to.be.instanceOf(NameTakenError);
          const named = (await store.listViews('acme')).filter((v) => v.name === target);
          expect(named).to.have.length(1);
          expect(named[0]!.id).to.equal(created.status === 'fulfilled' ? fresh.id : existing.id);
        }
      });
    });

    describe('persistence', () => {
      it('keeps everything acknowledged across a reopen', async () => {
        expect(h!.reopen, 'every store under contract can be reopened').to.be.a('function');
        const tokens = [token(1, { createdAt: at(1) }), token(2, { kind: 'team', team: 'ops', createdAt: at(2), description: 'ops' }),
          token(3, { kind: 'user', organization: null, user: 'carol', createdAt: at(3) })];
        for (const t of tokens) await store.putToken(t);
        expect(await store.revokeToken(tokens[1]!.id)).to.equal(true);
        const t3 = { ...tokens[2]!, description: 'replaced' };
        await store.putToken(t3);

        const v1 = view(1, 'one', { createdAt: at(1), query: query('one', { fields: ['name'], sort: ['-name'] }) });
        const v2 = view(2, 'two', { createdAt: at(2) });
        const v3 = view(3, 'three', { createdAt: at(3) });
        const v4 = view(4, 'one', { organization: 'beta', createdAt: at(0) });
        for (const v of [v1, v2, v3, v4]) await store.createView(v);
        const v2b: SavedView = { ...v2, name: 'deux', query: query('deux', { sort: ['name'] }), updatedAt: at(20) };
        await store.updateView('acme', v2.id, { name: v2b.name, query: v2b.query, updatedAt: v2b.updatedAt });
        await store.deleteView('acme', v3.id);
        const burst = Array.from({ length: 20 }, (_, i) => view(`b${i}`, `burst ${i}`, { createdAt: at(100 + (i % 4)) }));
        await Promise.all(burst.map((v) => store.createView(v)));
        const expectAcme = [v1, v2b, ...burst.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1))];

        const s2 = await h!.reopen!();
        expect(byId(await s2.listTokens())).to.deep.equal([tokens[0]!, t3]);
        expect(await s2.getToken(tokens[1]!.id)).to.equal(undefined);
        expect(await s2.getToken(t3.id)).to.deep.equal(t3);
        expect(await s2.listViews('acme')).to.deep.equal(expectAcme);
        expect(await s2.listViews('beta')).to.deep.equal([v4]);
        expect(await s2.listViewOrganizations()).to.deep.equal(['acme', 'beta']);
        expect(await s2.getView('acme', v3.id)).to.equal(undefined);
        expect(await s2.getView('acme', v2.id)).to.deep.equal(v2b);
        // uniqueness survives: held names are refused, freed names are free
        await expectNameTaken(s2.createView(view(10, 'deux')), 'deux');
        await expectNameTaken(s2.createView(view(11, 'burst 7')), 'burst 7');
        await expectNameTaken(s2.createView(view(12, 'one', { organization: 'beta' })), 'one');
        const v5 = view(5, 'two', { createdAt: at(500) });
        const v6 = view(6, 'three', { createdAt: at(600) });
        await s2.createView(v5);
        await s2.createView(v6);
        expect(await s2.revokeToken(tokens[0]!.id)).to.equal(true);

        // writes made after a reopen persist as well
        const s3 = await h!.reopen!();
        expect(await s3.listTokens()).to.deep.equal([t3]);
        expect(await s3.listViews('acme')).to.deep.equal([...expectAcme, v5, v6]);
        await expectNameTaken(s3.createView(view(13, 'three')), 'three');
      });
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// The implementations

describe('StateStore implementations', function () {
  this.timeout(30_000);
  let redis: TestRedis | undefined;
  let seq = 0;

  let cluster: TestRedisCluster | undefined;

  before(async () => {
    redis = await startTestRedis();
    cluster = await sharedTestCluster();
  });
  after(async () => {
    await redis?.close();
  });

  contract('journal', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'explorer-contract-'));
    let store = await openJournalStore(dir);
    return {
      store,
      async reopen() {
        await store.close();
        store = await openJournalStore(dir);
        return store;
      },
      async cleanup() {
        await store.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  });

  contract('redis', async () => {
    const r = redis!;
    const prefix = `${r.prefix}${++seq}:`;
    let client = new Redis(r.url, { lazyConnect: false });
    let store = redisStateStore(client, prefix);
    return {
      store,
      async reopen() {
        await store.close();
        await client.quit();
        client = new Redis(r.url);
        store = redisStateStore(client, prefix);
        return store;
      },
      async cleanup() {
        await store.close();
        // Remove this test's keys (matters when REDIS_URL points at a shared server).
        const keys: string[] = [];
        let cursor = '0';
        do {
          const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          keys.push(...batch);
          cursor = next;
        } while (cursor !== '0');
        if (keys.length > 0) await client.del(...keys);
        client.disconnect();
      },
    };
  });

  // A Redis Cluster of three primaries and three replicas: keys with hash tags, every write waiting for a replica.
  contract('redis cluster', async () => {
    const c = cluster!;
    const prefix = `${c.prefix}${++seq}:`;
    const options = { clustered: true, waitReplicas: 1, waitMs: 5000 };
    let client = c.connect();
    let store = redisStateStore(client, prefix, options);
    return {
      store,
      async reopen() {
        await store.close();
        client.disconnect();
        client = c.connect();
        store = redisStateStore(client, prefix, options);
        return store;
      },
      async cleanup() {
        await store.close();
        // Every primary's keys of this test.
        for (const node of client.nodes('master')) {
          let cursor = '0';
          do {
            const [next, batch] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
            for (const key of batch) await client.del(key);
            cursor = next;
          } while (cursor !== '0');
        }
        client.disconnect();
      },
    };
  });
});
