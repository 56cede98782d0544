import { expect, it } from 'vitest';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { perSecond, slidingWindow } from '../../src/index.js';
import { servedThroughNetwork, settleAll } from '../support/counting-servers.js';

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
  const statuses = await settleAll(
    clock,
    net,
    Array.from({ length: 200 }, (_, i) => pacedFetch(`https://api.test/n/${i}`)),
    120_000,
  );
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

// Another client spent the server's window (rate-limiter-flexible's fixed window and headers,
// 60 per second) when a paced fetch 10x too generous starts: its first two requests are refused
// until the window turns, and the answer that opens the next one tells the server's policy. Its
// own arrival-safe count then spaced one request per 1.7 ms, which read as 599 of 600 in use
// filled the learned 60 per second: a window more of nothing (6.98 s for 300 calls where 6 do;
// real rate-limiter-flexible after another client, `npm run bench:servers`: 1.51x the ideal).
it('starts the policy it learns after a spent window with what it sent, not a window of its spacing', async () => {
  const { clock, backend, net } = servedThroughNetwork({
    scheme: 'fixed-window',
    limit: 60,
    windowMs: 1_000,
    dialect: 'rate-limiter-flexible',
    delayMs: [0.3, 0.6],
    seed: 3,
  });
  for (let i = 0; i < 60; i++) {
    await fetch('https://api.test/spent', { headers: { 'x-arrived-at': '0' } });
  }
  clock.advance(50);
  const pacedFetch = createPacedFetch({
    limits: perSecond(600),
    fetch: net.fetch,
    clock,
    wallClock: backend.wallClock,
  });
  const statuses = await settleAll(
    clock,
    net,
    Array.from({ length: 300 }, (_, i) => pacedFetch(`https://api.test/n/${i}`)),
    60_000,
  );
  expect(statuses.every((status) => status === 200)).toBe(true);
  const ours = backend.hits.filter((hit) => hit.at >= 50);
  const admitted = ours.filter((hit) => hit.status === 200).map((hit) => hit.at);
  // The window turns at 1000: the first admitted then, the next within a spacing of it.
  expect(admitted[0]).toBeGreaterThan(1_000);
  expect((admitted[1] as number) - (admitted[0] as number)).toBeLessThan(20);
  // 60 at once from 1000 (the learned policy's first window), then spaced at 60 per second from
  // the next window: 240 more take 4 s.
  expect(Math.max(...admitted)).toBeLessThan(6_100);
});
