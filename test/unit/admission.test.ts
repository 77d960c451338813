// The admission queue alone: slots, the export cap, the share of one organization, and bounded waiting.
import { expect } from 'chai';
import { Admission, PoolOverloadedError, WithdrawnError, type Release } from '../../src/pool/admission.js';

const settled = async <T>(p: Promise<T>) => {
  let state: 'pending' | 'admitted' | Error = 'pending';
  p.then(() => { state = 'admitted'; }, (e: Error) => { state = e; });
  await new Promise((r) => setImmediate(r));
  return state;
};

describe('admission', () => {
  it('admits up to the number of slots at once, then queues', async () => {
    const a = new Admission({ slots: 2, exportSlots: 1, maxQueued: 10, maxWaitMs: 10_000 });
    const r1 = await a.admit('1', 'acme', 'page');
    await a.admit('2', 'acme', 'page');
    const third = a.admit('3', 'acme', 'page');
    expect(await settled(third)).to.equal('pending');
    expect(a.waiting).to.equal(1);
    r1();
    expect(await settled(third)).to.equal('admitted');
    expect(a.active).to.equal(2);
  });

  it('caps exports but lets pages pass them', async () => {
    const a = new Admission({ slots: 3, exportSlots: 1, maxQueued: 10, maxWaitMs: 10_000 });
    const e1 = await a.admit('e1', 'acme', 'export');
    const e2 = a.admit('e2', 'acme', 'export');
    const p1 = a.admit('p1', 'acme', 'page');
    expect(await settled(e2)).to.equal('pending');
    expect(await settled(p1)).to.equal('admitted');
    e1();
    expect(await settled(e2)).to.equal('admitted');
  });

  /** Admits every queued id in `ids`, releasing the longest-running query each step; returns the order admitted. */
  async function drain(a: Admission, running: Release[], ids: Array<[string, string]>, steps: number): Promise<string[]> {
    const order: string[] = [];
    const all = ids.map(([id, key]) => a.admit(id, key, 'page').then((r) => { order.push(id); running.push(r); }));
    for (let i = 0; i < steps; i++) {
      running.shift()!();
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(all);
    return order;
  }

  it('never lets one organization hold every slot: another waits for at most one query', async () => {
    const a = new Admission({ slots: 3, exportSlots: 1, maxQueued: 100, maxWaitMs: 10_000 });
    const running = [await a.admit('b1', 'big', 'page'), await a.admit('b2', 'big', 'page'), await a.admit('b3', 'big', 'page')];
    const burst = Array.from({ length: 5 }, (_, i): [string, string] => [`big${i}`, 'big']);
    const order = await drain(a, running, [...burst, ['small0', 'small'], ['small1', 'small']], 7);
    expect(order[0]).to.equal('small0');
    expect(order).to.have.length(7);
  });

  it('serves the oldest request otherwise, so a busy organization is not starved by many others', async () => {
    const a = new Admission({ slots: 2, exportSlots: 1, maxQueued: 100, maxWaitMs: 10_000 });
    const running = [await a.admit('a', 'a', 'page'), await a.admit('b', 'b', 'page')];
    const order = await drain(a, running, [['big0', 'big'], ['big1', 'big'], ['big2', 'big'], ['s1', 's1'], ['s2', 's2'], ['s3', 's3']], 6);
    // Strict turns between organizations gave big one slot in four: big0, s1, s2, s3, big1, big2.
    expect(order).to.deep.equal(['big0', 's1', 'big1', 's2', 'big2', 's3']);
  });

  it('lets one organization alone use every slot', async () => {
    const a = new Admission({ slots: 3, exportSlots: 1, maxQueued: 100, maxWaitMs: 10_000 });
    const running = [await a.admit('1', 'big', 'page'), await a.admit('2', 'big', 'page')];
    expect(await settled(a.admit('3', 'big', 'page'))).to.equal('admitted');
    expect(a.active).to.equal(3);
    running.forEach((r) => r());
  });

  it('lets an export wait up to maxExportWaitMs, past the wait of a page', async () => {
    const a = new Admission({ slots: 1, exportSlots: 1, maxQueued: 10, maxWaitMs: 20, maxExportWaitMs: 10_000 });
    const running = await a.admit('1', 'acme', 'page');
    const page = a.admit('2', 'acme', 'page').then(() => 'admitted', (e: Error) => e);
    const exported = a.admit('3', 'acme', 'export');
    expect(await page).to.be.instanceOf(PoolOverloadedError);
    running();
    expect(await settled(exported)).to.equal('admitted');
  });

  it('refuses at once when the queue is full, with a Retry-After of at least one second', async () => {
    const a = new Admission({ slots: 1, exportSlots: 1, maxQueued: 1, maxWaitMs: 10_000 });
    await a.admit('1', 'acme', 'page');
    void a.admit('2', 'acme', 'page').catch(() => {});
    const refused = await settled(a.admit('3', 'other', 'page'));
    expect(refused).to.be.instanceOf(PoolOverloadedError);
    expect((refused as unknown as PoolOverloadedError).retryAfterSeconds).to.be.at.least(1);
    a.refuseAll(new Error('done'));
  });

  it('refuses a request that waited longer than maxWaitMs', async () => {
    const a = new Admission({ slots: 1, exportSlots: 1, maxQueued: 10, maxWaitMs: 30 });
    await a.admit('1', 'acme', 'page');
    const started = Date.now();
    const error = await a.admit('2', 'acme', 'page').then(() => null, (e: Error) => e);
    expect(error).to.be.instanceOf(PoolOverloadedError);
    expect(Date.now() - started).to.be.within(25, 1000);
    expect(a.waiting).to.equal(0);
  });

  it('withdraws a waiting request, which then never takes a slot', async () => {
    const a = new Admission({ slots: 1, exportSlots: 1, maxQueued: 10, maxWaitMs: 10_000 });
    const r1 = await a.admit('1', 'acme', 'page');
    const second = a.admit('2', 'acme', 'page');
    const third = a.admit('3', 'acme', 'page');
    expect(a.withdraw('2', 'timeout')).to.equal(true);
    expect(a.withdraw('2', 'timeout')).to.equal(false);
    const error = await second.then(() => null, (e: Error) => e);
    expect(error).to.be.instanceOf(WithdrawnError).and.to.have.property('reason', 'timeout');
    r1();
    r1(); // a second release of the same slot changes nothing
    expect(await settled(third)).to.equal('admitted');
    expect(a.active).to.equal(1);
  });
});
