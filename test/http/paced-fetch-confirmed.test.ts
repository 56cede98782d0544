import { expect, it } from 'vitest';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { slidingWindow } from '../../src/index.js';
import { driveNetwork, servedThroughNetwork, trackCalls } from '../support/counting-servers.js';

// A client configured with a sliding-window counter of the server's own limit (20 per second)
// against a fixed window that opens at the first request and says `x-ratelimit-reset` in whole
// seconds to go, as @fastify/rate-limit does, through 5-60 ms of jitter each way: its first
// answer confirms its limit (the window it infers is its own), and the counter, counted at the
// send, is refused at the edge of a window with `Retry-After: 1`. Read as a rate, that refusal
// taught 19 per 1.5 s for good (real fastify, with a sliding log counted at the send then: 0.58x
// of the rate after it, `npm run bench:servers`). A named `slidingLog` counts at arrival in a
// paced fetch now, and is not refused here.
it('learns its own policy counted arrival-safe when refused at the edge of a window the server confirmed, not the refusal sample', async () => {
  const { clock, backend, net } = servedThroughNetwork({
    scheme: 'fixed-window',
    limit: 20,
    windowMs: 1_000,
    dialect: 'x-ratelimit-delta',
    delayMs: [5, 60],
    seed: 3,
  });
  const pacedFetch = createPacedFetch({
    limits: { limit: 20, windowMs: 1_000, algorithm: slidingWindow },
    fetch: net.fetch,
    clock,
  });
  const { statuses, done, all } = trackCalls(
    Array.from({ length: 200 }, (_, i) => pacedFetch(`https://api.test/n/${i}`)),
  );
  await driveNetwork(clock, net, done, 120_000);
  await all;
  expect(statuses.every((status) => status === 200)).toBe(true);
  // Not vacuous: the counter was refused at a window's edge.
  expect(backend.refusals()).toBeGreaterThanOrEqual(1);
  expect(backend.refusals()).toBeLessThanOrEqual(2);
  expect(pacedFetch.pacer.inspect('https://api.test').learned).toMatchObject({
    limit: 20,
    windowMs: 1_000,
    source: 'server',
  });
  // 200 calls at 20 per second: about 10 s, and a second of block after the refusal.
  const admitted = backend.hits.filter((hit) => hit.status === 200).map((hit) => hit.at);
  expect(Math.max(...admitted)).toBeLessThan(12_500);
});
