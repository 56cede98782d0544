import { describe, expect, it } from 'vitest';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import {
  COUNTING_DIALECTS,
  COUNTING_SCHEMES,
  type CountingDialect,
  driveNetwork,
  servedThroughNetwork,
} from '../support/counting-servers.js';

// Issue 12: a paced fetch configured to the server's published limit, with the defaults, earns
// no refusal from a server that counts arrivals, whichever way it counts, through a network that
// delays every request and answer by its own random 5-60 ms (the manual clock owns the time).
const LIMIT = 10;
const CALLS = 60;
const ORIGIN = 'https://api.test';

const SCHEMES = COUNTING_SCHEMES;
const DIALECTS = COUNTING_DIALECTS;

describe('the published limit, counted arrival-safe by default', () => {
  for (const scheme of SCHEMES) {
    for (const dialect of DIALECTS) {
      it(`earns no refusal from a ${scheme} server (${dialect}) through a jittery network`, async () => {
        const { clock, backend, net } = servedThroughNetwork({
          scheme,
          limit: LIMIT,
          windowMs: 1000,
          dialect,
          delayMs: [5, 60],
          seed: 3,
        });
        const pacedFetch = createPacedFetch({
          limits: { limit: LIMIT, windowMs: 1000 },
          fetch: net.fetch,
          clock,
          wallClock: backend.wallClock,
        });
        let settled = 0;
        const calls = Array.from({ length: CALLS }, (_, i) =>
          pacedFetch(`${ORIGIN}/n/${i}`).finally(() => settled++),
        );
        await driveNetwork(clock, net, () => settled === CALLS, 60_000);
        const statuses = (await Promise.all(calls)).map((response) => response.status);
        expect(backend.refusals()).toBe(0);
        expect(statuses.every((status) => status === 200)).toBe(true);
        // The price is about a round trip per window, not a window per call: the first window
        // at once, then one per 100 ms plus the answers' delay.
        expect(Math.max(...backend.hits.map((hit) => hit.at))).toBeLessThan(8_000);
      });
    }
  }
});

describe("a sliding-window counter's headers (Upstash's slidingWindow)", () => {
  /** Admissions per second after the first two, 200 calls at once, the published limit. */
  async function rateAfterTwoSeconds(
    dialect: CountingDialect,
    readRateLimitHeaders: boolean,
  ): Promise<number> {
    const { clock, backend, net } = servedThroughNetwork({
      scheme: 'sliding-window',
      limit: 20,
      windowMs: 1000,
      dialect,
      delayMs: [5, 60],
      seed: 7,
    });
    const pacedFetch = createPacedFetch({
      limits: { limit: 20, windowMs: 1000 },
      readRateLimitHeaders,
      fetch: net.fetch,
      clock,
      wallClock: backend.wallClock,
    });
    let settled = 0;
    const calls = Array.from({ length: 200 }, (_, i) =>
      pacedFetch(`${ORIGIN}/n/${i}`).finally(() => settled++),
    );
    await driveNetwork(clock, net, () => settled === 200, 60_000);
    await Promise.all(calls);
    expect(backend.refusals()).toBe(0);
    const admitted = backend.hits.filter((hit) => hit.status === 200).map((hit) => hit.at);
    const end = Math.max(...admitted);
    return admitted.filter((at) => at > 2_000).length / ((end - 2_000) / 1_000);
  }

  // The counter weighs the previous window as if spread evenly, so its `remaining` is below the
  // client's own count of the same requests, and its reset (its window's end) is no later than
  // the client's window. Read as other clients' permits counted for a whole window, that gap
  // held the client to 17 a second (0.85x of the rate), where with the headers ignored it ran
  // at 18.4 (a whole-second `t=1` read as a count that outlasts a window, for the IETF fields;
  // any reset, for a count without a window).
  for (const dialect of ['ietf', 'x-ratelimit-fractional'] as const) {
    it(`cost no throughput (${dialect})`, async () => {
      const ignored = await rateAfterTwoSeconds(dialect, false);
      const read = await rateAfterTwoSeconds(dialect, true);
      expect(read).toBeGreaterThanOrEqual(0.98 * ignored);
    });
  }
});

describe("a generous client and a whole-second Unix reset (express-rate-limit's default headers)", () => {
  it('learns the window from the answer that opened it: no refusal, at least 0.9x of the rate', async () => {
    // `X-RateLimit-Reset` in Unix seconds, rounded up: a window of 1 s read from it is anywhere
    // in 1-2 s, and was not learned. The key waited for each reset read as its earliest, and
    // the one that came too early was refused with `Retry-After: 1` (0.85-0.88x, seeds 3 and 7;
    // against the real express-rate-limit through the proxy 0.79-0.81x, bench:servers).
    for (const seed of [3, 7]) {
      const { clock, backend, net } = servedThroughNetwork({
        scheme: 'fixed-window',
        limit: 20,
        windowMs: 1000,
        dialect: 'x-ratelimit',
        delayMs: [5, 60],
        seed,
      });
      const pacedFetch = createPacedFetch({
        limits: { limit: 200, windowMs: 1000 },
        fetch: net.fetch,
        clock,
        wallClock: backend.wallClock,
      });
      let settled = 0;
      const calls = Array.from({ length: 200 }, (_, i) =>
        pacedFetch(`${ORIGIN}/n/${i}`).finally(() => settled++),
      );
      await driveNetwork(clock, net, () => settled === 200, 60_000);
      const statuses = (await Promise.all(calls)).map((response) => response.status);
      expect(statuses.every((status) => status === 200)).toBe(true);
      expect(backend.refusals()).toBe(0);
      const admitted = backend.hits.filter((hit) => hit.status === 200).map((hit) => hit.at);
      const end = Math.max(...admitted);
      const rate = admitted.filter((at) => at > 2_000).length / ((end - 2_000) / 1_000);
      expect(rate).toBeGreaterThanOrEqual(0.9 * 20);
    }
  });

  it('learns a window of 2 s too, whichever whole second a first reading took', async () => {
    // A window of 2 s read from a request that arrived within its way there of a whole second
    // would be learned as 1 s (the shortest that fits), twice too fast, until the next window's
    // opening answer: no call lost, refusals only in the first two windows, and the server's
    // rate after them.
    for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
      const { clock, backend, net } = servedThroughNetwork({
        scheme: 'fixed-window',
        limit: 20,
        windowMs: 2000,
        dialect: 'x-ratelimit',
        delayMs: [5, 60],
        seed,
      });
      const pacedFetch = createPacedFetch({
        limits: { limit: 200, windowMs: 1000 },
        fetch: net.fetch,
        clock,
        wallClock: backend.wallClock,
      });
      let settled = 0;
      const calls = Array.from({ length: 200 }, (_, i) =>
        pacedFetch(`${ORIGIN}/n/${i}`).finally(() => settled++),
      );
      await driveNetwork(clock, net, () => settled === 200, 120_000);
      const statuses = (await Promise.all(calls)).map((response) => response.status);
      expect(statuses.every((status) => status === 200)).toBe(true);
      const refused = backend.hits.filter((hit) => hit.status !== 200).map((hit) => hit.at);
      const admitted = backend.hits.filter((hit) => hit.status === 200).map((hit) => hit.at);
      const end = Math.max(...admitted);
      const rate = admitted.filter((at) => at > 4_000).length / ((end - 4_000) / 1_000);
      // Seeds 1-8: no refusal at all, 9.56-9.72 a second.
      expect(refused.length).toBeLessThanOrEqual(20);
      expect(refused.filter((at) => at > 4_000)).toEqual([]);
      expect(rate).toBeGreaterThanOrEqual(0.9 * 10);
    }
  });
});
