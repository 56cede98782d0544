import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.mjs';
import { AIMD } from '../../src/core/adaptive-rate.js';
import type { PolicyInput } from '../../src/core/compile.js';
import { perSecond } from '../../src/core/policy.js';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { createPacer, type Pacer, RateLimitError } from '../../src/pacer/index.js';
import { createManualClock } from '../../src/testing/index.js';
import {
  type CountingServerOptions,
  servedThroughNetwork,
  settleAll,
} from '../support/counting-servers.js';
import { summarize } from '../measure/bare-servers.js';
import { fakeStore } from '../support/fake-store.js';
import { turn } from '../support/flush.js';

const ORIGIN = 'https://api.test';

/**
 * Three paced fetches sharing one fake store, `options` each, hand 300 calls (in turn) to a
 * server of 60 per second counting with `scheme` and saying `dialect` (a bare 429 unless
 * told), through `delayMs` each way.
 */
async function threeOnOneStore(
  scheme: Pick<CountingServerOptions, 'scheme' | 'burst' | 'countsRefused' | 'countsInFloats'>,
  delayMs: readonly [number, number],
  limits: PolicyInput,
  dialect: CountingServerOptions['dialect'] = 'none',
  seed = 7,
) {
  const { clock, backend, net } = servedThroughNetwork({
    ...scheme,
    limit: 60,
    windowMs: 1_000,
    dialect,
    delayMs,
    seed,
  });
  const fake = fakeStore({ now: clock.now });
  const clients = [1, 2, 3].map((seed) =>
    createPacedFetch({
      limits,
      store: fake.store,
      fetch: net.fetch,
      clock,
      // Unix resets (`X-RateLimit-Reset: 1700000001`) are read against the server's wall clock.
      wallClock: backend.wallClock,
      retry: { random: seededRandom(seed) },
    }),
  );
  const statuses = await settleAll(
    clock,
    net,
    Array.from({ length: 300 }, (_, i) =>
      (clients[i % 3] as (typeof clients)[0])(`${ORIGIN}/n/${i}`),
    ),
    600_000,
  );
  return { backend, statuses };
}

/**
 * `threeOnOneStore` through 5-60 ms of jitter for each of `seeds`: every call ends 200, and each
 * run summed up (`summarize`).
 */
async function throughJitter(
  seeds: readonly number[],
  scheme: Parameters<typeof threeOnOneStore>[0],
  limits: PolicyInput,
  dialect: CountingServerOptions['dialect'],
) {
  const runs = [];
  for (const seed of seeds) {
    const { backend, statuses } = await threeOnOneStore(scheme, [5, 60], limits, dialect, seed);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    runs.push({ seed, ...summarize(backend.hits, statuses) });
  }
  return runs;
}

// Three paced fetches (processes, tabs) share a store with the real shared-bucket arithmetic
// (the fake store; its Lua twin is property-tested against it in test/stores/redis.test.ts),
// each configured 10x too generous, against a server of 60 per second that answers a bare 429
// (nginx `limit_req`, HAProxy's stick tables). The store learns one rate for the key from the
// refusals any of them hears and paces all three by it (`SharedRate`). Before that, each pacer
// learned its own by AIMD: 13-44 refusals after the first two windows and 9.6-10.2 s where
// 4-4.7 s is ideal (three rates found apart, each only its share); and before the slow start,
// every call refused after its retries was lost: 120-243 of the 300.
describe('paced fetches sharing a store, against a server that answers a bare 429', () => {
  it.each([
    { name: 'nginx-like GCRA, burst 16', scheme: { scheme: 'gcra', burst: 16 } },
    { name: 'fixed window', scheme: { scheme: 'fixed-window' } },
    {
      name: 'HAProxy-like, refusals counted',
      scheme: { scheme: 'sliding-window', countsRefused: true },
    },
  ] as const)('lose no call ($name), paced by the rate the store learned', async ({ scheme }) => {
    const { backend, statuses } = await threeOnOneStore(scheme, [5, 60], {
      limit: 600,
      windowMs: 1_000,
    });
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    const refused = backend.hits.filter((hit) => hit.status !== 200);
    // 18 (GCRA), 88 (fixed window: a spent window refuses what each pacer's slow start had in
    // flight) and 66 refusals, 0, 10 and 0 of them after the first two windows; the last
    // admission at 5.4, 5.3 and 7.4 s.
    expect(refused.length).toBeLessThan(90);
    expect(refused.filter((hit) => hit.at > 2_000).length).toBeLessThan(15);
    expect(Math.max(...backend.hits.map((hit) => hit.at))).toBeLessThan(8_000);
  });
});

// The same three, configured to the server's published limit: a store counts at the send and
// never hears the answers, so `perSecond(60)` with a store is spaced (a GCRA without a burst),
// not a token bucket, which let its first burst and its refill through, twice the limit in the
// first window (real HAProxy and nginx, three processes on one Redis store: 17-32 and 13-23
// refusals in 300 calls; `npm run bench:servers:store`). No network delay here: through jitter,
// below.
describe('paced fetches sharing a store, configured to the published limit', () => {
  it.each([
    {
      name: 'HAProxy-like, refusals counted',
      scheme: { scheme: 'sliding-window', countsRefused: true },
    },
    { name: 'sliding log', scheme: { scheme: 'sliding-log' } },
    { name: 'fixed window', scheme: { scheme: 'fixed-window' } },
  ] as const)('earn no refusal ($name)', async ({ scheme }) => {
    const { backend, statuses } = await threeOnOneStore(scheme, [0, 0], perSecond(60));
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(backend.refusals()).toBe(0);
    // Spaced at the published rate: 300 calls in about 5 s (4 s bursting every window).
    const admitted = backend.hits.map((hit) => hit.at);
    expect(Math.max(...admitted)).toBeLessThan(5_500);
  });
});

// The same three through 5-60 ms of jitter each way, against servers that count every arrival
// and say nothing but a bare 429: spaced one permit every `windowMs / limit` at the send, the
// sends arrive up to 55 ms closer together than they went, and a sliding log (refusals counted,
// as rolling-rate-limiter's) refused 3-5 of 300 calls in three seeds, a sliding-window counter
// one. The store spreads such a policy over a window half the longest round trip its clients
// told longer (`spreadAt` in stores/bucket-state.ts; each pacer tells the store the longest of
// its recent answers, `StoreCall.roundTripMs`).
describe('paced fetches sharing a store, configured to the published limit, through jitter', () => {
  it.each([
    {
      name: 'sliding log, refusals counted',
      scheme: { scheme: 'sliding-log', countsRefused: true },
    },
    {
      name: 'HAProxy-like, refusals counted',
      scheme: { scheme: 'sliding-window', countsRefused: true },
    },
    { name: 'fixed window', scheme: { scheme: 'fixed-window' } },
  ] as const)(
    'earn no refusal ($name)',
    async ({ scheme }) => {
      for (const seed of [1, 2, 3, 4]) {
        const { backend, statuses } = await threeOnOneStore(
          scheme,
          [5, 60],
          perSecond(60),
          'none',
          seed,
        );
        expect(statuses.filter((status) => status !== 200)).toEqual([]);
        expect({ seed, refusals: backend.refusals() }).toEqual({ seed, refusals: 0 });
        // Half a round trip wider per window: the last of 300 calls admitted at 5.4 s.
        const admitted = backend.hits.map((hit) => hit.at);
        expect(Math.max(...admitted)).toBeLessThan(6_000);
      }
    },
    60_000,
  );
});

// A store that learns no rate of its own from bare refusals (`pacesRefusals` unset: a store of
// yours): each pacer learns one, and it gates the pacer's asks.
describe("a pacer's rate learned by AIMD, with a store that learns none", () => {
  async function learnedOn(mode: 'queue' | 'reject') {
    const clock = createManualClock();
    const fake = fakeStore({ now: clock.now, pacesRefusals: false });
    const pacer = createPacer({ limits: perSecond(100), clock, store: fake.store, mode });
    for (let i = 0; i < AIMD.STRIKES; i++) pacer.observe('k', { kind: 'refusal' });
    expect(pacer.inspect('k').learned?.source).toBe('rate');
    return { clock, fake, pacer };
  }

  it('holds the asks of the key to it: the store is asked after its pause, one task at a time', async () => {
    const { clock, fake, pacer } = await learnedOn('queue');
    const started: number[] = [];
    const tasks = [0, 1].map(() => pacer.schedule(() => started.push(clock.now()), { key: 'k' }));
    await turn();
    // The rate is half the key's own (50/s) and pauses one permit after the refusal.
    expect(started).toEqual([]);
    expect(fake.grants).toHaveLength(0);
    await clock.advanceAsync(20);
    await turn();
    expect(started).toEqual([20]);
    // The second waits for the first's answer (the probe), or a second without one.
    await clock.advanceAsync(AIMD.PROBE_WAIT_MS);
    await Promise.all(tasks);
    expect(started).toHaveLength(2);
    expect(started[1]).toBeGreaterThanOrEqual(20 + AIMD.PROBE_WAIT_MS);
    pacer.dispose();
  });

  it('rejects what it denies in reject mode, without asking the store', async () => {
    const { fake, pacer } = await learnedOn('reject');
    await expect(pacer.schedule(() => 1, { key: 'k' })).rejects.toBeInstanceOf(RateLimitError);
    expect(fake.grants).toHaveLength(0);
    pacer.dispose();
  });
});

describe("a store-backed pacer's slow start", () => {
  it('gives its place back when the store denies the task it let through', async () => {
    const clock = createManualClock();
    const fake = fakeStore({ now: clock.now });
    const [starting, other] = [0, 1].map(() =>
      createPacer({ limits: perSecond(1), clock, store: fake.store }),
    ) as [Pacer, Pacer];
    // The other pacer takes the store's one permit of this second.
    await other.schedule(() => 'first', { key: 'k' });
    starting.observe('k', { kind: 'start' });
    const started: number[] = [];
    const task = starting.schedule(() => started.push(clock.now()), { key: 'k' });
    await turn();
    // Its slow start let it through (one in flight), the store denied it for 1 s.
    expect(started).toEqual([]);
    expect(fake.grants).toHaveLength(1);
    // Had the denied ask kept its place, the slow start would stay full and nothing would go.
    await clock.advanceAsync(1_000);
    await turn();
    expect(started).toEqual([1_000]);
    await task;
    starting.dispose();
    other.dispose();
  });

  it("takes its place only when the store grants: a denied request that went alone past the server's count holds nothing", async () => {
    const clock = createManualClock();
    const fake = fakeStore({ now: clock.now });
    const [starting, other] = [0, 1].map(() =>
      createPacer({ limits: { limit: 3, windowMs: 300 }, clock, store: fake.store }),
    ) as [Pacer, Pacer];
    starting.observe('k', { kind: 'start' });
    starting.observe('k', { kind: 'answered' }); // two in flight now
    let answer = () => {};
    const first = starting.schedule(() => new Promise<void>((done) => (answer = done)), {
      key: 'k',
    });
    await turn();
    // The server's count leaves nothing past the one in flight (other clients spend it too):
    // the next request waits for it, then goes alone to ask the server again. The store, told
    // the count too, has 1 left: the other pacer takes it.
    starting.observe('k', { kind: 'quota', remaining: 1 });
    await other.schedule(() => 'other', { key: 'k' });
    const started: number[] = [];
    const second = starting.schedule(() => started.push(clock.now()), { key: 'k' });
    await clock.advanceAsync(10);
    answer();
    await first;
    await turn();
    // It went alone, and the store (spent at 0) denied it until 100. Had the denied ask
    // counted as gone alone, it would wait a second (SLOW_START.WAIT_MS) for the answer of a
    // request never sent.
    expect(started).toEqual([]);
    await clock.advanceAsync(90);
    await turn();
    expect(started).toEqual([100]);
    await second;
    starting.dispose();
    other.dispose();
  });
});

// The same three, configured to the published limit, against servers that count aloud
// (@fastify/rate-limit's `x-ratelimit-*`, whole seconds to go) through a steady network. Each
// pacer starts slow, and only the one that opened the server's window is told `limit - 1`:
// before, the other two stayed in their slow start, held to the server's count that the rest
// spent, and their asks of the store were paced a second time by the key's own policy, out of
// step with the store's grants (each denied ask spent a permit of it). The last calls of the
// two ended at 5.8-6.8 s, where a fair share ends at 5.1 s.
describe('paced fetches sharing a store, configured to the published limit, told the counts', () => {
  it.each(['fixed-window', 'sliding-log', 'sliding-window'] as const)(
    'share the rate and earn no refusal (%s)',
    async (scheme) => {
      const { backend, statuses } = await threeOnOneStore(
        { scheme },
        [20, 30],
        perSecond(60),
        'x-ratelimit-delta',
      );
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(backend.refusals()).toBe(0);
      const admitted = backend.hits.map((hit) => hit.at);
      expect(Math.max(...admitted)).toBeLessThan(5_500);
    },
  );
});

// The same three, told the published limit, against a sliding-window counter that counts
// refusals (HAProxy's), stating its count with fractional Unix resets, on loopback: paced at the
// limit, a count of 0 comes at each window's end, with the counter's reset a second on. The key's
// own policy counts that limit (no window of it is learned), and read as other clients' requests,
// each such count blocked every client until the reset: every other second idle, 0.57x of the
// rate after two windows. The key's own spacing agrees with it (`agreesAtZero` in
// stores/bucket-state.ts): 0.97-0.98x.
describe('paced fetches sharing a store, configured to the published limit, told a count of 0', () => {
  it('are not blocked by it at their own pace', async () => {
    for (const delayMs of [
      [0, 0],
      [1, 3],
    ] as const) {
      const { backend, statuses } = await threeOnOneStore(
        { scheme: 'sliding-window', countsRefused: true },
        delayMs,
        perSecond(60),
        'x-ratelimit-fractional',
      );
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      const { refusals, throughput } = summarize(backend.hits, statuses);
      expect({ delayMs, refusals }).toEqual({ delayMs, refusals: 0 });
      expect(throughput).toBeGreaterThan(0.9);
    }
  });
});

// A GCRA of 60 per second named by its burst (redis-gcra, throttled, redis-cell:
// `X-RateLimit-Limit: 16`, a reset in whole seconds when the bucket is full again) reads as a
// window of its burst per second: the store learned 16 per second and spaced all three by it
// for good; redis-gcra's float counts never say 4 of 5, so no window is learned there, and the
// rate its first whole-second `Retry-After` taught (about 5 per second) held them. Its clients'
// counts show the bucket, and steer it (stores/shared-counts.ts): the last call admitted at
// 5.9 s and 7.4 s, where it was at 19.3 s and 20.2 s (4.7-4.9 s is ideal).
describe('paced fetches sharing a store, 10x generous, against a GCRA named by its burst', () => {
  it.each([
    { name: 'burst 16', scheme: { scheme: 'gcra', burst: 16 } },
    {
      name: "burst 5, in redis-gcra's floats",
      scheme: { scheme: 'gcra', burst: 5, countsInFloats: true },
    },
  ] as const)('find the bucket in its counts ($name)', async ({ scheme }) => {
    const { backend, statuses } = await threeOnOneStore(
      scheme,
      [5, 60],
      { limit: 600, windowMs: 1_000 },
      'x-ratelimit-delta',
    );
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    const refused = backend.hits.filter((hit) => hit.status !== 200);
    const last = Math.max(...backend.hits.map((hit) => hit.at));
    // 0 and 1 refusals, none after the first two windows.
    expect(refused.filter((hit) => hit.at > 2_000)).toEqual([]);
    expect(last).toBeLessThan(9_000);
  });
});

// The same GCRAs, three paced fetches told the rate and the burst the server names as its limit:
// the store learned the window of 15 (or 5) per second its resets seemed to say, and a rate the
// first whole-second `Retry-After` taught (redis-gcra's floats admit 4 of a full 5 at once at
// times): the last call at 19.8-20.5 s and 66 s, where 4.75-4.9 s is ideal (5.8 s and 8.9 s once
// the store found the bucket in the counts, above). The key's own GCRA of that burst counts the
// server's bucket (`namesOwnBurst` in stores/bucket-state.ts).
describe('paced fetches sharing a store, told the burst the server names', () => {
  it.each([
    { name: 'burst 16, direct', scheme: { scheme: 'gcra', burst: 16 }, delayMs: [0, 0] },
    { name: 'burst 16, jitter', scheme: { scheme: 'gcra', burst: 16 }, delayMs: [5, 60] },
    {
      name: "burst 5 in redis-gcra's floats, direct",
      scheme: { scheme: 'gcra', burst: 5, countsInFloats: true },
      delayMs: [0, 0],
    },
  ] as const)('keep to it ($name)', async ({ scheme, delayMs }) => {
    const { backend, statuses } = await threeOnOneStore(
      scheme,
      delayMs,
      perSecond(60, { burst: scheme.burst }),
      'x-ratelimit-delta',
    );
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    const last = Math.max(...backend.hits.map((hit) => hit.at));
    // 4.8 s and 4.8 s with no refusal; 6.8 s with 2 (each a whole-second block).
    expect(backend.refusals()).toBeLessThanOrEqual(scheme.burst === 5 ? 2 : 0);
    expect(last).toBeLessThan(scheme.burst === 5 ? 7_500 : 5_000);
  });
});

// The same GCRA with a burst of 6, its resets in whole Unix seconds (throttled's), and three
// paced fetches told the published 60 per second and no burst, through 5-60 ms of jitter: a
// reset opens a window (a count of 5, a second to go) only when a request arrives just after a
// second begins, at any time. Until one did, the clients ran at 55 per second; then at the 6 per
// second of the window inferred, until their counts found the bucket and sped it back up, 1.5 s
// later: 0.58-0.61x of the rate after two windows in these seeds. Admitted at more than twice the
// window's rate, the store finds the bucket at once (`foundByAdmissions` in
// stores/shared-counts.ts): 0.82-0.84x.
describe('paced fetches sharing a store, configured to the published limit, against a GCRA named by its burst', () => {
  it('keep their rate through a window of the burst inferred late', async () => {
    const gcra6 = { scheme: 'gcra', burst: 6 } as const;
    const runs = await throughJitter([2, 3, 4], gcra6, perSecond(60), 'x-ratelimit');
    for (const { seed, refusals, throughput } of runs) {
      expect({ seed, refusals }).toEqual({ seed, refusals: 0 });
      expect(throughput).toBeGreaterThan(0.78);
    }
  }, 60_000);
});

// Three paced fetches sharing a store, 10x generous, against a GCRA of 60 per second with a
// burst of 16 saying Traefik's exact `X-Retry-In` on each refusal, through 5-60 ms of jitter: the
// store learns one rate from what its clients were admitted before each refusal. A sample cut by
// the echoes of the one before it (requests sent before it began), or spanning little more than
// a round trip, taught a rate far too slow, which held them until its ceiling's raise a minute
// later: 0.21-0.89x of its rate after two windows in these seeds, 0.90-0.97x now, with 30-36
// refusals in the first two windows (20-30 before) and none after (`sampleFrom` and
// `SAMPLE_TRIPS` in stores/shared-rate.ts).
describe('paced fetches sharing a store, 10x generous, against a GCRA saying exact waits', () => {
  it('learn its rate from samples of their own, long enough to say it', async () => {
    const gcra16 = { scheme: 'gcra', burst: 16 } as const;
    const generous = { limit: 600, windowMs: 1_000 };
    const runs = await throughJitter([5, 6, 7, 8], gcra16, generous, 'traefik');
    for (const { seed, late, throughput } of runs) {
      expect({ seed, late }).toEqual({ seed, late: 0 });
      expect(throughput).toBeGreaterThan(0.85);
    }
  }, 60_000);
});

// An app with little to send for a while (10 s at 10 a second, a sixth of the server's rate),
// then 300 calls at once, three paced fetches on one store, 10x generous, against a GCRA of 60
// per second named by its burst of 16, through 5-60 ms of jitter each way. Every count of the
// quiet part says the bucket is full: grown at each, the store's rate reached the key's own,
// and the burst went at it (29 refusals, each a whole-second block). It grows only while its
// clients pace into it (`busyAt` in stores/bucket-state.ts).
describe('paced fetches sharing a store, after a quiet while, against a GCRA named by its burst', () => {
  it('keep the rate they proved, not one the quiet counts would allow', async () => {
    const { clock, backend, net } = servedThroughNetwork({
      scheme: 'gcra',
      burst: 16,
      limit: 60,
      windowMs: 1_000,
      dialect: 'x-ratelimit-delta',
      delayMs: [5, 60],
      seed: 7,
    });
    const fake = fakeStore({ now: clock.now });
    const clients = [1, 2, 3].map((seed) =>
      createPacedFetch({
        limits: { limit: 600, windowMs: 1_000 },
        store: fake.store,
        fetch: net.fetch,
        clock,
        retry: { random: seededRandom(seed) },
      }),
    );
    const call = (i: number, path: string) =>
      (clients[i % 3] as (typeof clients)[0])(`${ORIGIN}/${path}/${i}`);
    const quiet: Promise<Response>[] = [];
    for (let i = 0; i < 100; i++) {
      quiet.push(call(i, 'quiet'));
      await clock.advanceAsync(100);
    }
    const burstAt = clock.now();
    const statuses = await settleAll(
      clock,
      net,
      [...quiet, ...Array.from({ length: 300 }, (_, i) => call(i, 'n'))],
      600_000,
    );
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    const burst = backend.hits.filter((hit) => hit.at >= burstAt);
    // None refused; the last of the 300 at 5.8 s (4.7 s is ideal).
    expect(backend.refusals()).toBe(0);
    expect(Math.max(...burst.map((hit) => hit.at)) - burstAt).toBeLessThan(6_500);
  });
});

// A sliding-window counter (Upstash's `slidingWindow`, two fixed windows weighted) stating its
// policy in IETF headers, `RateLimit: "sliding-window";r=0;t=1` once full: its reset is when
// its window ends, while its room grows back at the rate. Three paced fetches on one store, 10x
// generous, on loopback: the store spaced its clients at the stated rate, their requests filled
// the counter to 0 as they should, and each count of 0 blocked them all (and each pacer on its
// own) until the reset, a second: 300 calls in 2.25x the ideal time, 0.57x of the rate after two
// windows. The store's count agrees with such a count (it has no permit to give), so it blocks
// nothing now: 1.27x, the first window's burst and then the rate.
describe('paced fetches sharing a store, against a counter stating its policy', () => {
  it('are not blocked by a count of 0 their own spacing reached', async () => {
    const { backend, statuses } = await threeOnOneStore(
      { scheme: 'sliding-window', countsRefused: true },
      [0, 0],
      perSecond(600),
      'ietf',
    );
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(backend.refusals()).toBe(0);
    // 60 at once, then 60 per second: 4 s at best.
    const last = Math.max(...backend.hits.map((hit) => hit.at));
    expect(last).toBeLessThan(4_000 * 1.35);
  });
});
