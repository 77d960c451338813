// interface §9, as a client sees it, the same in memory, in Redis with one instance, and in Redis with two:
// a burst after an idle window lets exactly RATE_LIMIT_MAX through; X-RateLimit-Reset names the moment the
// window closes to within 50 ms; a client that waits it after a 429 (as the Go client does) gets through,
// and a burst sent then gets exactly RATE_LIMIT_MAX again; Retry-After is the reset rounded up; every
// token of one user shares the user's count, while a team's and an organization's tokens count apart.
import { expect } from 'chai';
import { issueToken } from '../../src/access/tokens.js';
import { silentLogger } from '../../src/log.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { openStateStore } from '../../src/store/open-store.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { REDIS_BACKENDS, type RedisBackend, type StartedBackend } from '../helpers/redis-backends.js';

const MAX = 10;
const WINDOW_MS = 1500;
const route = (org: string) => `/api/v2/organizations/${org}/explorer?type=tf_versions&page%5Bsize%5D=1`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer { status: number; sent: number; received: number; reset: number; remaining: number; retryAfter: string | null }

function setup(title: string, redis: RedisBackend | null, instances: 1 | 2) {
  describe(`rate limit: ${title}`, function () {
    this.timeout(60_000);
    let testRedis: StartedBackend | undefined;
    let h: Harness;
    let second: RunningServer | undefined;
    let urls: string[];

    before(async () => {
      if (redis) testRedis = await redis.start();
      h = await startHarness({
        env: {
          RATE_LIMIT_MAX: String(MAX), RATE_LIMIT_WINDOW_MS: String(WINDOW_MS),
          ...(testRedis ? testRedis.env : {}),
        },
      });
      if (instances === 2) second = await startServer(h.config, silentLogger);
      urls = second ? [h.url, second.url] : [h.url];
    });
    after(async () => {
      await second?.shutdown();
      await h?.close();
      await testRedis?.close();
    });

    /** A request of `token` on the routes of `org` (the token's own, or one it may read). */
    async function send(token: string, i: number, org = 'acme-corp'): Promise<Answer> {
      const sent = performance.now();
      const res = await fetch(`${urls[i % urls.length]}${route(org)}`, { headers: { Authorization: `Bearer ${token}` } });
      await res.arrayBuffer();
      return {
        status: res.status, sent, received: performance.now(),
        reset: Number(res.headers.get('x-ratelimit-reset')), remaining: Number(res.headers.get('x-ratelimit-remaining')),
        retryAfter: res.headers.get('retry-after'),
      };
    }
    /** `n` requests at once, spread over the instances; `tokens` are used in turn. */
    const burst = (tokens: string[], n: number, org = 'acme-corp') => Promise.all(Array.from({ length: n }, (_, i) => send(tokens[i % tokens.length]!, i, org)));
    const passed = (answers: Answer[]) => answers.filter((a) => a.status === 200).length;

    it(`a burst of 25 from an idle context: exactly ${MAX} pass, and every reset names the window's end`, async () => {
      const answers = await burst([h.tokens.owners], 25);
      const statuses = JSON.stringify(answers.map((a) => a.status));
      expect(passed(answers), statuses).to.equal(MAX);
      expect(answers.filter((a) => a.status === 429), statuses).to.have.length(25 - MAX);
      // The window opened while the burst's first request was on its way: its end lies in this interval.
      // Each reset was computed between the request's sending and its answer's arrival, so the window's end
      // lies between sent + reset and received + reset: no allowance for how late the answer is read (on a
      // busy machine that is more than any fixed one), 2 ms for millisecond rounding.
      const opened = { earliest: Math.min(...answers.map((a) => a.sent)), latest: Math.min(...answers.map((a) => a.received)) };
      for (const a of answers) {
        expect(a.received + a.reset * 1000, `reset ${a.reset} s`).to.be.at.least(opened.earliest + WINDOW_MS - 2);
        if (a.status === 429) expect(a.sent + a.reset * 1000, `reset ${a.reset} s`).to.be.at.most(opened.latest + WINDOW_MS + 2);
        expect(a.reset).to.be.within(0, WINDOW_MS / 1000);
      }
      for (const a of answers.filter((x) => x.status === 429)) {
        expect(a.remaining).to.equal(0);
        expect(a.retryAfter).to.equal(String(Math.max(1, Math.ceil(a.reset))));
      }
      expect(answers.filter((a) => a.status === 200).map((a) => a.remaining).sort((x, y) => x - y))
        .to.deep.equal(Array.from({ length: MAX }, (_, i) => i));
    });

    it(`a client that waits the reset after a 429 gets through, and its burst then lets exactly ${MAX} through`, async () => {
      // carol, a user of globex: a context the other tests of this setup leave idle, so that none waits for
      // another's window to close.
      const first = await burst([h.tokens.carol], MAX + 3, 'globex');
      const refused = first.filter((a) => a.status === 429);
      expect(refused).to.have.length(3);
      const probe = refused[refused.length - 1]!;
      // The Go client's way: sleep for exactly the reset the 429 named, not a moment more.
      await sleep(Math.max(0, probe.received + probe.reset * 1000 - performance.now()));
      const again = await burst([h.tokens.carol], 25, 'globex');
      expect(passed(again), again.map((a) => a.status).join(',')).to.equal(MAX);
      // And one request waiting the reset alone passes too, in the window after that.
      const last = again[again.length - 1]!;
      await sleep(Math.max(0, last.received + last.reset * 1000 - performance.now()));
      expect((await send(h.tokens.carol, 0, 'globex')).status).to.equal(200);
    });

    it('every token of one user shares the user\'s count; a team token and the organization token count on their own', async () => {
      const store = await openStateStore(h.config);
      let second: string;
      try {
        second = (await issueToken(store, { kind: 'user', organization: null, team: null, user: 'alice' })).token;
      } finally {
        await store.close();
      }
      const mixed = await burst([h.tokens.alice, second], 20);
      expect(passed(mixed)).to.equal(MAX);
      // readers is alice's team; its token is a context of its own, and so is the organization's.
      for (const token of [h.tokens.readers, h.tokens.org]) {
        const own = await burst([token], MAX);
        expect(passed(own)).to.equal(MAX);
      }
    });
  });
}

describe('rate limit contract (interface §9)', () => {
  setup('in memory, one instance', null, 1);
  for (const backend of REDIS_BACKENDS) {
    setup(`in ${backend.name}, one instance`, backend, 1);
    setup(`in ${backend.name}, two instances`, backend, 2);
  }
});
