import { describe, expect, it } from 'vitest';
import { createPacedFetch, type PacedFetchOptions } from '../../src/http/paced-fetch.js';
import { servedThroughNetwork, settleAll } from '../support/counting-servers.js';

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
      const { clock, backend, net } = servedThroughNetwork({
        scheme: 'gcra',
        limit: 20,
        windowMs: 1_000,
        dialect: 'x-ratelimit-fractional',
        delayMs: [5, 60],
        seed,
      });
      const pacedFetch = createPacedFetch({
        ...(options as Partial<PacedFetchOptions>),
        fetch: net.fetch,
        clock,
        wallClock: backend.wallClock,
      });
      const statuses = await settleAll(
        clock,
        net,
        Array.from({ length: 200 }, (_, i) => pacedFetch(`https://api.test/n/${i}`)),
        600_000,
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
