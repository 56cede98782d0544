import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/testing/index.js';
import { type CountingScheme, countingServer } from '../support/counting-servers.js';
import { server } from '../support/msw.js';

// The mock servers that other tests and test/measure pace against must count the way the
// implementations they stand for do; these pin each scheme at 2 per 1000 ms.

async function statusesAt(scheme: CountingScheme, arrivals: readonly number[]) {
  const clock = createManualClock();
  const backend = countingServer({ clock, scheme, limit: 2, windowMs: 1000, dialect: 'ietf' });
  server.use(backend.handler);
  const statuses: number[] = [];
  for (const at of arrivals) {
    const response = await fetch('https://api.test/x', { headers: { 'x-arrived-at': String(at) } });
    statuses.push(response.status);
  }
  return statuses;
}

describe('counting servers', () => {
  it('sliding log: a permit leaves exactly one window after its arrival', async () => {
    expect(await statusesAt('sliding-log', [0, 0, 0, 999, 1000, 1000])).toEqual([
      200, 200, 429, 429, 200, 200,
    ]);
  });

  it('fixed window: opens at the first hit after the last ended, and counts refused hits', async () => {
    expect(await statusesAt('fixed-window', [0, 0, 0, 999, 1000, 1001, 1001])).toEqual([
      200, 200, 429, 429, 200, 200, 429,
    ]);
  });

  it("sliding window: the previous window's count weighs in by the share still covered", async () => {
    // At 1000 the estimate is 2 (refused); at 1500 it is 2 * 0.5 = 1 (admitted), then 2.
    expect(await statusesAt('sliding-window', [0, 0, 1000, 1500, 1500])).toEqual([
      200, 200, 429, 200, 429,
    ]);
  });

  it('gcra: a burst of `limit`, then one per emission interval', async () => {
    expect(await statusesAt('gcra', [0, 0, 0, 499, 500, 500])).toEqual([
      200, 200, 429, 429, 200, 429,
    ]);
  });

  it('tells the client what the dialect says: IETF draft-8 fields and Retry-After', async () => {
    const clock = createManualClock();
    const backend = countingServer({
      clock,
      scheme: 'sliding-log',
      limit: 1,
      windowMs: 2000,
      dialect: 'ietf',
    });
    server.use(backend.handler);
    const first = await fetch('https://api.test/a', { headers: { 'x-arrived-at': '0' } });
    expect(first.headers.get('ratelimit')).toBe('"sliding-log";r=0;t=2');
    expect(first.headers.get('ratelimit-policy')).toBe('"sliding-log";q=1;w=2');
    const second = await fetch('https://api.test/a', { headers: { 'x-arrived-at': '500' } });
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('2');
  });
});
