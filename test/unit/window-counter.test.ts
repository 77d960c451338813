// The fixed window behind the rate limit, on a clock the test moves: a window opens with a context's first
// request, counts every request until it closes, and tells the exact time left; closed windows are swept.
import { expect } from 'chai';
import { MemoryWindowCounter } from '../../src/rate-limit/window-counter.js';

describe('MemoryWindowCounter', () => {
  let now = 0;
  let counter: MemoryWindowCounter;
  beforeEach(() => { now = 1000; counter = new MemoryWindowCounter(60_000, () => now); });
  afterEach(() => counter.close());

  it('opens a window with the first request and counts every request in it, with the exact time left', async () => {
    expect(await counter.hit('a', 1000)).to.deep.equal({ count: 1, resetMs: 1000 });
    now += 250.5;
    expect(await counter.hit('a', 1000)).to.deep.equal({ count: 2, resetMs: 749.5 });
    now += 749.4;
    expect((await counter.hit('a', 1000)).count).to.equal(3);
  });

  it('opens a fresh window at the very moment the last one closes, and keeps contexts apart', async () => {
    await counter.hit('a', 1000);
    await counter.hit('b', 1000);
    now += 1000;
    expect(await counter.hit('a', 1000)).to.deep.equal({ count: 1, resetMs: 1000 });
    expect((await counter.hit('b', 1000)).count).to.equal(1);
  });

  it('sweeps closed windows only', async () => {
    await counter.hit('old', 1000);
    now += 600;
    await counter.hit('new', 1000);
    now += 500;
    counter.sweep();
    expect(counter.size).to.equal(1);
    expect((await counter.hit('new', 1000)).count).to.equal(2);
  });
});
