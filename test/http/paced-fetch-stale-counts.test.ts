import { expect, it } from 'vitest';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { createManualClock } from '../../src/testing/index.js';
import { network, settleAll } from '../support/counting-servers.js';
import {
  DIALECTS,
  type Dialect,
  dialectServer,
  EPOCH,
  ORIGIN,
} from '../support/dialect-servers.js';
import { server } from '../support/msw.js';

const CALLS = 200;
const HUBSPOT = DIALECTS.find((d) => d.name === 'HubSpot (Interval-Milliseconds)') as Dialect;

/**
 * `CALLS` calls told HubSpot's published limit (20 per 2 s here, a rolling window whose headers
 * state it without a reset), through 5-60 ms of jitter each way: the time the last one ended,
 * and the refusals.
 */
async function run(seed: number, readRateLimitHeaders: boolean) {
  const clock = createManualClock();
  const mock = dialectServer(HUBSPOT);
  server.use(mock.handler);
  const net = network({ clock, delayMs: [5, 60], seed });
  const pacedFetch = createPacedFetch({
    limits: { limit: 20, windowMs: 2_000 },
    readRateLimitHeaders,
    fetch: net.fetch,
    clock,
    wallClock: () => EPOCH + clock.now(),
  });
  const calls = Array.from({ length: CALLS }, (_, i) => pacedFetch(`${ORIGIN}/items/${i}`));
  const statuses = await settleAll(clock, net, calls, 120_000);
  return { statuses, makespan: clock.now(), refusals: mock.refusals() };
}

// Each count is its request's round trip old: the server counted at the arrival, and the
// client's log has let go since of permits answered a window before, which the count may still
// hold. Taken for another client's, they stood in the log a whole window: 0.92x of the rate the
// same client reached with the headers unread (0.96x), for every seed.
it("reads a stated policy's counts as a round trip old: as fast as with the headers unread", async () => {
  for (const seed of [1, 2, 3]) {
    const unread = await run(seed, false);
    const read = await run(seed, true);
    for (const result of [unread, read]) {
      expect(result.statuses.every((status) => status === 200)).toBe(true);
      expect(result.refusals).toBe(0);
    }
    expect(read.makespan / unread.makespan).toBeLessThan(1.01);
  }
}, 30_000);
