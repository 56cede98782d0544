import { describe, expect, it } from 'vitest';
import { createPacedFetch, type PacedFetchOptions } from '../../src/http/paced-fetch.js';
import { perSecond } from '../../src/index.js';
import {
  type CountingDialect,
  servedThroughNetwork,
  settleAll,
} from '../support/counting-servers.js';

/**
 * `calls` calls at once of a paced fetch (`options`) to a simulated GCRA of `server.limit` per
 * second through 5-60 ms of jitter each way.
 */
async function callGcra(
  server: {
    limit: number;
    dialect: CountingDialect;
    seed: number;
    burst?: number;
    delayMs?: readonly [number, number];
    countsInFloats?: boolean;
  },
  options: Partial<PacedFetchOptions>,
  calls: number,
) {
  const { clock, backend, net } = servedThroughNetwork({
    scheme: 'gcra',
    windowMs: 1_000,
    delayMs: [5, 60],
    ...server,
  });
  const pacedFetch = createPacedFetch({
    ...options,
    fetch: net.fetch,
    clock,
    wallClock: backend.wallClock,
  });
  const statuses = await settleAll(
    clock,
    net,
    Array.from({ length: calls }, (_, i) => pacedFetch(`https://api.test/n/${i}`)),
    600_000,
  );
  return { backend, pacedFetch, statuses };
}

// A GCRA of 20 per second (redis-cell, throttled) that answers `X-RateLimit-Limit`,
// `-Remaining` and a fractional Unix `X-RateLimit-Reset` (koa-ratelimit's form): its reset is
// when the bucket is full again, 50 ms after one request, which the first answer made a window
// of 20 per 50 ms (minus the network delay). 200 calls at once through 5-60 ms of jitter.
describe('a bucket whose reset reads as a window', () => {
  const zero = {};
  const generous = { limits: { limit: 200, windowMs: 1_000 } };
  it.each([
    // Before: 124 and 43 refusals, every second a window's worth.
    { name: 'zero configuration', options: zero, seed: 7 },
    { name: '10x generous', options: generous, seed: 7 },
    ...[1, 2, 3, 4, 5, 6, 8, 9].flatMap((seed) => [
      { name: 'zero configuration', options: zero, seed },
      { name: '10x generous', options: generous, seed },
    ]),
  ])(
    'is learned as a bucket from the next answers ($name, seed $seed)',
    async ({ options, seed }) => {
      const { backend, pacedFetch, statuses } = await callGcra(
        { limit: 20, dialect: 'x-ratelimit-fractional', seed },
        options as Partial<PacedFetchOptions>,
        200,
      );
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      // Refusals only while the first two windows teach the bucket, then none.
      const late = backend.hits.filter((hit) => hit.status !== 200 && hit.at > 2_000);
      expect(late).toEqual([]);
      expect(backend.refusals()).toBeLessThanOrEqual(5);
      // Learned from the send, the bucket's window is never shorter than the server's, and
      // within a tenth of it (from each count's bound).
      const learned = pacedFetch.pacer.inspect('https://api.test').learned;
      expect(learned).toMatchObject({ limit: 20, source: 'server' });
      expect(learned?.windowMs).toBeGreaterThanOrEqual(1_000);
      expect(learned?.windowMs).toBeLessThan(1_100);
      // No slower for it: 200 at 20 per second after the first 20, 9 s at best.
      const last = Math.max(...backend.hits.map((hit) => hit.at));
      expect(last).toBeLessThan(9_000 * 1.15);
    },
  );
});

// A GCRA of 60 per second that names its burst as its limit, as redis-cell ("the total limit
// of the key (max_burst + 1)") and throttled (`RateLimitResult.Limit`) do, and says when it is
// full again in whole seconds: `X-RateLimit-Reset: 1` (throttled's delta, rounded up) or a Unix
// second. The first answer, 5 of 6 left with a reset of 1 s, reads as a window of 6 per second:
// a tenth of the rate, before a bucket was told apart by its counts. 300 calls at once through
// 5-60 ms of jitter, 10x generous.
describe('a bucket named by its burst, with whole-second resets', () => {
  it.each([
    { burst: 6, dialect: 'x-ratelimit-delta', seed: 1 },
    { burst: 6, dialect: 'x-ratelimit-delta', seed: 2 },
    { burst: 6, dialect: 'x-ratelimit', seed: 3 },
    { burst: 16, dialect: 'x-ratelimit-delta', seed: 4 },
    { burst: 16, dialect: 'x-ratelimit', seed: 5 },
  ] as const)(
    'is paced by its counts (burst $burst, $dialect, seed $seed)',
    async ({ burst, dialect, seed }) => {
      const { backend, pacedFetch, statuses } = await callGcra(
        { limit: 60, burst, dialect, seed },
        { limits: { limit: 600, windowMs: 1_000 } },
        300,
      );
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(backend.refusals()).toBe(0);
      // A bucket of the burst, its refill about the server's (never learned as 6 per second).
      const learned = pacedFetch.pacer.inspect('https://api.test').learned;
      expect(learned).toMatchObject({ limit: burst, source: 'server' });
      expect((1_000 * burst) / (learned?.windowMs ?? Number.POSITIVE_INFINITY)).toBeGreaterThan(30);
      // 300 at 60 per second after the first burst: 4.9 s at best (5.7-7.5 s in these seeds:
      // a slow start first, and a block of a second in some); 49 s as a window of 6.
      const last = Math.max(...backend.hits.map((hit) => hit.at));
      expect(last).toBeLessThan(((300 - burst) / 60) * 1_000 * 1.6);
    },
  );
});

/**
 * No call failed, refusals came in the first two windows only (a slow start's burst), and after
 * them the server admitted more than `leastPerSecond`; returns what it admitted per second.
 */
function expectKeptAfterTwoWindows(
  backend: Awaited<ReturnType<typeof callGcra>>['backend'],
  statuses: readonly number[],
  leastPerSecond: number,
) {
  expect(statuses.filter((status) => status !== 200)).toEqual([]);
  expect(backend.hits.filter((hit) => hit.status !== 200 && hit.at > 2_000)).toEqual([]);
  const admitted = backend.hits.filter((hit) => hit.status === 200).map((hit) => hit.at);
  const last = Math.max(...admitted);
  const after = admitted.filter((at) => at > 2_000).length;
  const perSecond = after / ((last - 2_000) / 1_000);
  expect(perSecond).toBeGreaterThan(leastPerSecond);
  return perSecond;
}

// redis-gcra's Lua (the real-server bench's `gcra-burst5`): a bucket of 5 at 60 per second whose
// float counts say 3 of a full bucket and let 4 through at once at times. A slow start's burst
// is refused with `Retry-After: 1` (ceil of 17 ms), which teaches 4 per second; its counts then
// never fell within the rate's own window, 4 per second, and the key kept that rate for good
// (0.07x of the server's straight to it). Through 5-60 ms of jitter its bucket is shallower
// than the round trip: growing the rate while the requests in flight held it back ran away
// (0.55-0.60x, a refusal now and then past it). And 1-3 ms away (a LAN), a 10x generous slow
// start's count of 0 filled its own 600 per second for a second each time: 5 per second for
// good (300 calls in 59 s).
describe('a shallow bucket that counts in floats', () => {
  const generous = { limits: perSecond(600) };
  it.each([
    { name: 'zero configuration', options: {}, delayMs: [0, 0], seed: 1, rate: 0.85 },
    { name: '10x generous', options: generous, delayMs: [0, 0], seed: 2, rate: 0.85 },
    { name: 'zero configuration', options: {}, delayMs: [5, 60], seed: 3, rate: 0.7 },
    { name: '10x generous', options: generous, delayMs: [5, 60], seed: 4, rate: 0.7 },
    // 0.73-0.75x before its answers were read as below (seeds 1-3), 0.84x before the stand-ins
    // of its counts gave way to newer ones.
    { name: '10x generous', options: generous, delayMs: [1, 3], seed: 1, rate: 0.95 },
    { name: '10x generous', options: generous, delayMs: [1, 3], seed: 2, rate: 0.95 },
    { name: '10x generous', options: generous, delayMs: [1, 3], seed: 3, rate: 0.95 },
    { name: 'zero configuration', options: {}, delayMs: [1, 3], seed: 5, rate: 0.8 },
  ] as const)(
    'is paced by its counts ($name, $delayMs.1 ms, seed $seed)',
    async ({ options, delayMs, seed, rate }) => {
      const { backend, statuses } = await callGcra(
        { limit: 60, burst: 5, dialect: 'x-ratelimit-delta', seed, delayMs, countsInFloats: true },
        options as Partial<PacedFetchOptions>,
        300,
      );
      expectKeptAfterTwoWindows(backend, statuses, 60 * rate);
    },
  );
});

// The same bucket through 5-60 ms of jitter each way, where it is shallower than the round trip:
// the key keeps no more in flight than the bucket it names (5), and grows its rate once per
// round trip while the counts say full. Held to the highest count and one in flight (4: its
// floats say 3 of a full 5), it waited for answers where it could send, and over
// these sixteen runs kept 0.839x of the rate on average after two windows (0.864x now).
describe('a shallow bucket that counts in floats, through jitter', () => {
  it('is paced at 0.85x of its rate on average over seeds 1-8, generous or unconfigured', async () => {
    const rates: number[] = [];
    for (let seed = 1; seed <= 8; seed++) {
      for (const options of [{}, { limits: perSecond(600) }]) {
        const { backend, statuses } = await callGcra(
          { limit: 60, burst: 5, dialect: 'x-ratelimit-delta', seed, countsInFloats: true },
          options,
          300,
        );
        rates.push(expectKeptAfterTwoWindows(backend, statuses, 60 * 0.75) / 60);
      }
    }
    expect(rates.reduce((sum, rate) => sum + rate, 0) / rates.length).toBeGreaterThan(0.85);
  }, 60_000);
});

// The same bucket counting in whole permits (nginx-like, saying `X-RateLimit-*` with a delta reset
// in whole seconds), 1-3 ms away. Its counts find it a bucket at once; the key then drains it in
// bursts and waits for its next permit. Before, that wait was three permits' time, not one: each
// answer of a burst but the last was counted as if it might arrive after the last (their counts
// were higher: they came first), and its refill was proven only from counts that spanned a full
// bucket, not from the one that drained it: 0.63-0.76x of its rate after two windows, seeds 1-3.
describe('a shallow bucket drained in bursts', () => {
  it.each([
    { name: '10x generous', options: { limits: perSecond(600) }, seed: 1 },
    { name: 'zero configuration', options: {}, seed: 2 },
    { name: '10x generous', options: { limits: perSecond(600) }, seed: 3 },
  ] as const)(
    'learns its refill within two windows ($name, seed $seed)',
    async ({ options, seed }) => {
      const { backend, statuses } = await callGcra(
        { limit: 60, burst: 5, dialect: 'x-ratelimit-delta', seed, delayMs: [1, 3] },
        options as Partial<PacedFetchOptions>,
        300,
      );
      expectKeptAfterTwoWindows(backend, statuses, 60 * 0.95);
    },
  );
});

// A GCRA of 60 per second, burst 5, saying `X-RateLimit-*` with fractional Unix resets (koa-
// ratelimit's form): its resets find it a bucket (a count of 4 of 6 and then 5 before the reset
// passed). Counted as a log of 6 per its learned window, each permit held from its send until a
// window after its answer: 0.41-0.46x of its rate through 5-60 ms of jitter here, 0.84-0.92x
// 1-3 ms away. And a key that paced it slower than it refills never learned more: its counts
// said a full bucket, which bounds no refill. Now a GCRA of the answers, its counts its credit.
describe('a shallow bucket found by its fractional resets', () => {
  it.each([
    { delayMs: [1, 3], seed: 1, rate: 0.93 },
    { delayMs: [1, 3], seed: 2, rate: 0.93 },
    { delayMs: [1, 3], seed: 3, rate: 0.93 },
    { delayMs: [5, 60], seed: 1, rate: 0.7 },
    { delayMs: [5, 60], seed: 5, rate: 0.7 },
  ] as const)(
    'is paced as a bucket ($delayMs.1 ms, seed $seed)',
    async ({ delayMs, seed, rate }) => {
      const { backend, statuses } = await callGcra(
        { limit: 60, burst: 5, dialect: 'x-ratelimit-fractional', seed, delayMs },
        { limits: perSecond(600) },
        300,
      );
      expectKeptAfterTwoWindows(backend, statuses, 60 * rate);
    },
  );
});

// The same GCRA told to the client as it publishes itself: `perSecond(60, { burst })`. Each
// count names the burst, not the key's own limit of 60: lowered into the key's count of 60 per
// second, each count of 0 held it a second (1.18-1.38x the ideal here; against the real
// redis-gcra straight to the server, 0.29x of its rate at burst 15, no finish at burst 5).
describe('a bucket named by its burst, to a client told its rate and burst', () => {
  it.each([
    { burst: 15, dialect: 'x-ratelimit-delta', delayMs: [0, 0], seed: 1, within: 1.05 },
    { burst: 5, dialect: 'x-ratelimit-delta', delayMs: [0, 0], seed: 1, within: 1.05 },
    { burst: 15, dialect: 'x-ratelimit-delta', delayMs: [5, 60], seed: 2, within: 1.05 },
    { burst: 5, dialect: 'x-ratelimit', delayMs: [5, 60], seed: 3, within: 1.25 },
  ] as const)(
    'keeps to its rate (burst $burst, $dialect, $delayMs.1 ms, seed $seed)',
    async ({ burst, dialect, delayMs, seed, within }) => {
      const { backend, statuses } = await callGcra(
        { limit: 60, burst, dialect, seed, delayMs },
        { limits: perSecond(60, { burst }) },
        300,
      );
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(backend.refusals()).toBe(0);
      // The burst at once, then 60 per second: 4.75 s and 4.92 s at best (1.00x of it on
      // loopback; through the jitter 1.02-1.03x for a burst of 15, 1.13-1.18x for a burst of 5,
      // shallower than the round trip, over seeds 1-5: a permit counts until its answer).
      const last = Math.max(...backend.hits.map((hit) => hit.at));
      expect(last).toBeLessThan(((300 - burst) / 60) * 1_000 * within);
    },
  );
});

// A GCRA of 60 per second and a burst of 6 that names the burst and says exactly when it is full
// again: a fractional Unix `X-RateLimit-Reset` (koa-ratelimit's form), or rate-limiter-flexible's
// whole-second one with its `Retry-After` in fractional seconds on every answer. The first answer
// (5 of 6 left, full again in 17 ms) reads as a window of 6 per 17 ms; each later count of the
// same burst moves the reset 17 ms later, which no window does. Six counts move it 83 ms: within
// the 100 ms allowed for the network's delay, so the window stood, and each count of 0 (a limit
// of 6, not the key's own) filled the key's own 600 per second: a second per burst of 6, 300
// calls in 49 s (10.0x the ideal). The slack is each answer's own round trip now (0 on
// loopback), and a count of the limit the key learned fills only that.
describe('a shallow bucket with exact resets', () => {
  it.each([
    { dialect: 'x-ratelimit-fractional', name: '10x generous', seed: 1 },
    { dialect: 'x-ratelimit-fractional', name: 'zero configuration', seed: 2 },
    { dialect: 'rate-limiter-flexible', name: '10x generous', seed: 3 },
    { dialect: 'rate-limiter-flexible', name: 'zero configuration', seed: 4 },
  ] as const)(
    'is learned as a bucket from its resets ($dialect, $name, seed $seed)',
    async ({ dialect, name, seed }) => {
      const { backend, pacedFetch, statuses } = await callGcra(
        { limit: 60, burst: 6, dialect, seed, delayMs: [0, 0] },
        name === '10x generous' ? { limits: perSecond(600) } : {},
        300,
      );
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(backend.refusals()).toBe(0);
      const learned = pacedFetch.pacer.inspect('https://api.test').learned;
      expect(learned).toMatchObject({ limit: 6, source: 'server' });
      // The burst at once, then 60 per second: 4.9 s at best (1.02-1.05x in these seeds, 1.16-1.20x
      // with zero configuration, which starts slow).
      const last = Math.max(...backend.hits.map((hit) => hit.at));
      expect(last).toBeLessThan(((300 - 6) / 60) * 1_000 * 1.3);
    },
  );
});

// The same through 5-60 ms of jitter, with nginx's burst of 15 (16 at once): the bucket is found
// by the resets of its first counts. A count of 0 of it still filled the key's own 600 per second
// for a whole second after, where the bucket's own count knows when its next permit frees:
// 0.92-0.94x of the rate after two windows, 1.29-1.31x the ideal time (0-9 refusals in seeds
// 1-3); 0.94-0.96x and 1.15-1.23x now, none refused.
//
// And the shallow bucket of 6 above, saying rate-limiter-flexible's `Retry-After: 0.083` (when it
// is full again, counted from the request's arrival). Each count bounds the bucket's refill from
// above (`refillBound` in core/learning.ts); read from the send, a delay's bound was long by the
// round trip, and the key was held to 28 per second; and the stand-ins of counts that came out of
// order stood a window in the key's own log, which held the key 700 ms at a time (seeds 1-3:
// 1.30-2.33x the ideal time; 1.04-1.08x now).
describe('a bucket with exact resets, through jitter', () => {
  const seeds = (dialect: CountingDialect, burst: number, within: number) =>
    [1, 2, 3].map((seed) => ({ dialect, burst, within, seed }));
  const cases = [
    ...seeds('x-ratelimit-fractional', 16, 1.25),
    ...seeds('rate-limiter-flexible', 6, 1.2),
  ];
  it.each(cases)(
    'goes by its own count ($dialect, a burst of $burst, seed $seed)',
    async ({ dialect, burst, within, seed }) => {
      const { backend, statuses } = await callGcra(
        { limit: 60, burst, dialect, seed },
        { limits: perSecond(600) },
        300,
      );
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(backend.refusals()).toBe(0);
      const last = Math.max(...backend.hits.map((hit) => hit.at));
      expect(last).toBeLessThan(((300 - burst) / 60) * 1_000 * within);
    },
  );
});

// redis-gcra's bucket of 5 at 60 per second (its float counts: a full bucket reads 3) behind
// rate-limiter-flexible's headers, on loopback: each answer's `Retry-After` says when the bucket
// is full again, 17-83 ms on. A count of 1 or 0 of it, lowered into the key's own 600 per second
// (and into the rate its first refusal taught), stood there a whole window: the key sent two
// bursts of 5 a second, 300 calls in 33.6 s (6.72x the ideal). Its stand-ins now stand until the
// reset the count came with.
describe('a count of another limit with an exact reset', () => {
  it('holds the key until that reset, not a window (redis-gcra, rate-limiter-flexible headers)', async () => {
    const { backend, statuses } = await callGcra(
      {
        limit: 60,
        burst: 5,
        countsInFloats: true,
        dialect: 'rate-limiter-flexible',
        seed: 1,
        delayMs: [0, 0],
      },
      { limits: perSecond(600) },
      300,
    );
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(backend.refusals()).toBeLessThanOrEqual(5);
    const last = Math.max(...backend.hits.map((hit) => hit.at));
    expect(last).toBeLessThan(((300 - 5) / 60) * 1_000 * 1.2);
  });
});

// Told the published 60 per second (no burst), against a GCRA of that rate with a burst of 16
// that states the IETF count of its 60 (`r=15` after one request): the first window's credit went
// at once, and 40-44 of it were refused (on loopback and through 5-60 ms of jitter). The count's
// room caps it now.
describe("a count of the key's own limit in its first window", () => {
  it.each([
    { delayMs: [0, 0] as const, seed: 1 },
    { delayMs: [5, 60] as const, seed: 1 },
    { delayMs: [5, 60] as const, seed: 2 },
  ])(
    'caps the burst that window sends (delay $delayMs.1 ms, seed $seed)',
    async ({ delayMs, seed }) => {
      const { backend, statuses } = await callGcra(
        { limit: 60, burst: 16, dialect: 'ietf', seed, delayMs },
        { limits: perSecond(60) },
        300,
      );
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      expect(backend.refusals()).toBe(0);
    },
  );
});
