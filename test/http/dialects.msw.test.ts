import { afterAll, describe, expect, it } from 'vitest';
import { createPacedFetch, type PacedFetchOptions } from '../../src/http/paced-fetch.js';
import { slidingLog } from '../../src/index.js';
import { createManualClock } from '../../src/testing/index.js';
import {
  DIALECTS,
  type Dialect,
  delayedNetwork,
  dialectServer,
  EPOCH,
  ORIGIN,
  runUntilSettled,
} from '../support/dialect-servers.js';
import { server } from '../support/msw.js';

const CALLS = 80;
/** One way of the network, each direction (ms): the server counts arrivals, not sends. */
const ONE_WAY_MS = 20;

/** 80 calls at once through a generous client, against `dialect`'s mock, on a manual clock. */
async function run80(dialect: Dialect, options: Omit<PacedFetchOptions, 'fetch' | 'clock'>) {
  const clock = createManualClock();
  const mock = dialectServer(dialect);
  server.use(mock.handler);
  const { fetch, net } = delayedNetwork(clock, ONE_WAY_MS, ONE_WAY_MS);
  const pacedFetch = createPacedFetch({
    ...options,
    fetch,
    clock,
    wallClock: () => EPOCH + clock.now(),
  });
  let pending = CALLS;
  const statuses: Array<number | string> = [];
  const calls = Array.from({ length: CALLS }, (_, i) =>
    pacedFetch(`${ORIGIN}/items/${i}`).then(
      (response) => {
        statuses[i] = response.status;
        pending--;
      },
      (error: Error) => {
        statuses[i] = error.name;
        pending--;
      },
    ),
  );
  await runUntilSettled(clock, net, () => pending, 600_000);
  await Promise.all(calls);
  const lost = statuses.filter((status) => typeof status !== 'number' || status >= 300).length;
  return {
    lost,
    refusals: mock.refusals(),
    refusedAt: mock.refusedAt,
    sent: net.sent.length,
    makespan: clock.now(),
  };
}

const table: Array<Record<string, string | number>> = [];
afterAll(() => {
  // `DIALECTS_REPORT=1 npx vitest run --project unit test/http/dialects.msw.test.ts`
  if (process.env['DIALECTS_REPORT'] === '1') console.table(table);
});

describe.each(DIALECTS.map((dialect) => [dialect.name, dialect] as const))(
  'against %s (mocked from its documentation)',
  (name, dialect) => {
    it('loses none of 80 calls sent at once by a generous client (perSecond(100))', async () => {
      const result = await run80(dialect, { limits: { limit: 100, windowMs: 1000 } });
      table.push({
        dialect: name,
        lost: result.lost,
        refusals: result.refusals,
        sent: result.sent,
        makespan: result.makespan,
      });
      expect(result.lost).toBe(0);
      // Every call got through once; the rest of the wire was refusals, each waited out.
      expect(result.sent - result.refusals).toBe(CALLS);
    });
  },
);

describe("Azure OpenAI's retry-after-ms of one permit (a bucket of 10 per second)", () => {
  const dialect = DIALECTS.find((d) => d.name === 'retry-after-ms (Azure OpenAI)') as Dialect;

  it('refuses only in the first two windows: a taught rate refused again is cut', async () => {
    const result = await run80(dialect, { limits: { limit: 100, windowMs: 1000 } });
    expect(result.lost).toBe(0);
    // Before: 54 refusals, 30 of them arriving after the first two seconds (every third request, for
    // good, at twice the bucket's rate: no sample between one-permit waits taught a slower one).
    expect(result.refusedAt.filter((at) => at > 2_000)).toEqual([]);
    expect(result.refusals).toBeLessThanOrEqual(20);
    // 80 calls at 10 per second after the first 10: 7 s at best.
    expect(result.makespan).toBeLessThan(7_000 * 1.1);
  });
});

describe("Traefik's X-Retry-In (a token bucket of 10 per second, a burst of 5)", () => {
  const dialect = DIALECTS.find((d) => d.name === 'Traefik (X-Retry-In)') as Dialect;

  it('learns the bucket from the exact wait, not from Retry-After rounded up to a second', async () => {
    const result = await run80(dialect, { limits: { limit: 100, windowMs: 1000 } });
    expect(result.lost).toBe(0);
    // 80 calls at 10 per second after the first 5: 7.5 s at best, and a round trip. Read as
    // `Retry-After: 1`, the one-permit waits taught the burst's 5 per second: 13.9 s.
    expect(result.makespan).toBeLessThan((7_500 + 2 * ONE_WAY_MS) * 1.05);
    // The slow start's burst is refused in the first second; after it, a refused growth now
    // and then (AIMD on the result: one refusal and a wait of one permit each).
    expect(result.refusedAt.filter((at) => at < 1_000).length).toBeGreaterThan(0);
    expect(result.refusals).toBeLessThanOrEqual(15);
  });
});

describe('a whole-second Unix X-RateLimit-Reset on a 1 s window (rate-limiter-flexible README)', () => {
  const dialect = DIALECTS.find((d) => d.name === 'X-RateLimit, Unix-second reset') as Dialect;
  // Configured to the server's published limit, with the window semantics it counts by.
  const configured = { limits: { limit: 10, windowMs: 1000, algorithm: slidingLog } };

  it('does not double the wait: as fast as with the headers ignored, and no refusal', async () => {
    const ignored = await run80(dialect, { ...configured, readRateLimitHeaders: false });
    const read = await run80(dialect, configured);
    table.push({
      dialect: 'rounding: headers ignored',
      lost: ignored.lost,
      refusals: ignored.refusals,
      sent: ignored.sent,
      makespan: ignored.makespan,
    });
    table.push({
      dialect: 'rounding: headers read',
      lost: read.lost,
      refusals: read.refusals,
      sent: read.sent,
      makespan: read.makespan,
    });
    expect(ignored.refusals).toBe(0);
    expect(read.refusals).toBe(0);
    expect(read.lost).toBe(0);
    // Ideal: 8 windows of 10, a sliding log counted at arrival (each permit until its answer,
    // then a window): a window and a round trip apart, the last answered 7 x 1,040 + 160 ms in
    // (its first window went as the slow start let it, over 120 ms). Counted at the send it was
    // 7,160 ms, and refused through jitter. Rounded-up resets made it 1.84x.
    expect(ignored.makespan).toBeLessThanOrEqual(7 * (1_000 + 2 * ONE_WAY_MS) + 160);
    expect(read.makespan / ignored.makespan).toBeLessThan(1.05);
  });
});

describe("Spring Cloud Gateway's bucket of 20, refilled 10 at each of Redis' whole seconds", () => {
  const dialect = DIALECTS.find(
    (d) => d.name === 'Spring Cloud Gateway (Replenish-Rate)',
  ) as Dialect;

  it('paces a bucket its headers describe: no refusal, at its rate', async () => {
    const result = await run80(dialect, { limits: { limit: 100, windowMs: 1000 } });
    expect(result.lost).toBe(0);
    // Unread (`X-RateLimit-Remaining` alone, a 429 with nothing else), the slow start's burst and
    // the rate its refusals taught earned 6 refusals.
    expect(result.refusals).toBe(0);
    // A bucket of 11 refilled 10 a second (as deep as one that is never ahead of the whole-second
    // refill): the last of 80 calls 6.9 s in, and a round trip. The server's best is 6 s (its 20,
    // then 10 a second), 6.2 s unread.
    expect(result.makespan).toBeLessThan((6_900 + 2 * ONE_WAY_MS) * 1.02);
  });
});

describe("Envoy's draft-03 limit with its quota policy (`10, 10;w=1`), windows of the wall clock", () => {
  const dialect = DIALECTS.find((d) => d.name === 'Envoy (draft-03 x-ratelimit)') as Dialect;

  it('learns the window the policy states: no refusal', async () => {
    const result = await run80(dialect, { limits: { limit: 100, windowMs: 1000 } });
    expect(result.lost).toBe(0);
    // Unread (the limit no number), one refusal.
    expect(result.refusals).toBe(0);
    // 8 windows of 10, each permit counted until its answer and then a window: 8 x 1,040 ms.
    expect(result.makespan).toBeLessThanOrEqual(8 * (1_000 + 2 * ONE_WAY_MS));
  });
});

describe("HubSpot's rolling window, stated in X-HubSpot-RateLimit-Interval-Milliseconds", () => {
  const dialect = DIALECTS.find((d) => d.name === 'HubSpot (Interval-Milliseconds)') as Dialect;

  it('learns the window its headers state: no refusal', async () => {
    const result = await run80(dialect, { limits: { limit: 100, windowMs: 1000 } });
    expect(result.lost).toBe(0);
    // Unread (its 429 says no wait), AIMD found the rate by its refusals: 19 of them.
    expect(result.refusals).toBe(0);
    // 4 windows of 20, each permit counted until its answer and then a window: 4 x 2,040 ms.
    expect(result.makespan).toBeLessThanOrEqual(4 * (2_000 + 2 * ONE_WAY_MS));
  });
});
