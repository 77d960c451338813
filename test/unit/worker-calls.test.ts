// A query worker's count of DuckDB calls in flight: its last task to end waits on it before the worker goes
// idle, so it must see a call until that call settles, rejected ones included.
import { expect } from 'chai';
import { inFlight, settled, tracked } from '../../workers/calls.js';

const later = <T>(ms: number, value: T, fail = false) =>
  new Promise<T>((resolve, reject) => setTimeout(() => (fail ? reject(new Error(String(value))) : resolve(value)), ms));

describe('a query worker\'s DuckDB calls in flight', () => {
  it('counts a call until it settles and hands back its value', async () => {
    const before = inFlight();
    const call = tracked(later(20, 'rows'));
    expect(inFlight()).to.equal(before + 1);
    expect(await call).to.equal('rows');
    expect(inFlight()).to.equal(before);
  });

  it('settles only once every call has, a rejected one too, and leaves the rejection to its caller', async () => {
    const order: string[] = [];
    const slow = tracked(later(60, 'slow'));
    const failing = tracked(later(20, 'interrupted', true));
    const caught = failing.catch((e: Error) => { order.push(`caught ${e.message}`); });
    await settled().then(() => order.push('settled'));
    await caught;
    await slow;
    expect(order).to.deep.equal(['caught interrupted', 'settled']);
    expect(inFlight()).to.equal(0);
  });

  it('settles at once with nothing in flight', async () => {
    let done = false;
    const waiting = settled().then(() => { done = true; });
    await Promise.resolve();
    await waiting;
    expect(done).to.equal(true);
    expect(inFlight()).to.equal(0);
  });
});
