import { describe, expect, it } from 'vitest';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import {
  COUNTING_DIALECTS,
  COUNTING_SCHEMES,
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
