import { describe, expect, it } from 'vitest';
import { fixedWindow, gcra, slidingLog } from '../../demo/src/mock/counting.js';
import { headersOf } from '../../demo/src/mock/dialects.js';

/** The demo's mock API counts on its own (it must not be the client's twin): how it counts. */
describe('the demo server, counting', () => {
  it('sliding log: 10 in any second, the oldest out exactly one second later', () => {
    const counter = slidingLog({ rate: 10, burst: 5 });
    for (let i = 0; i < 10; i++) expect(counter.take(i).allowed).toBe(true);
    const refused = counter.take(500);
    expect(refused).toMatchObject({ allowed: false, remaining: 0, nextMs: 500 });
    expect(counter.take(999.9).allowed).toBe(false);
    expect(counter.take(1000)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('fixed window: 10 per second of the wall clock, counted afresh at each boundary', () => {
    const counter = fixedWindow({ rate: 10, burst: 5 });
    // The first ms of a wall-clock second, in performance.now() time.
    const start = Math.ceil(performance.timeOrigin / 1000) * 1000 - performance.timeOrigin + 1;
    for (let i = 0; i < 10; i++) expect(counter.take(start + 900).allowed).toBe(true);
    const refused = counter.take(start + 950);
    expect(refused.allowed).toBe(false);
    expect(refused.nextMs).toBeCloseTo(49, 6);
    // Across the boundary: another 10 at once, the boundary burst fixed windows are known for.
    for (let i = 0; i < 10; i++) expect(counter.take(start + 1000).allowed).toBe(true);
    expect(counter.take(start + 1001).allowed).toBe(false);
  });

  it('GCRA: bursts of 5, then one every 100 ms at 10 / s', () => {
    const counter = gcra({ rate: 10, burst: 5 });
    expect(counter.take(0)).toMatchObject({ allowed: true, remaining: 4 });
    for (let i = 0; i < 4; i++) expect(counter.take(0).allowed).toBe(true);
    expect(counter.take(0)).toMatchObject({ allowed: false, remaining: 0, nextMs: 100 });
    expect(counter.take(99).allowed).toBe(false);
    expect(counter.take(100)).toMatchObject({ allowed: true, remaining: 0 });
    // Idle for long enough, the whole burst is back.
    expect(counter.take(10_000)).toMatchObject({ allowed: true, remaining: 4 });
  });

  it('never runs its clock backwards for a request counted late', () => {
    const counter = slidingLog({ rate: 1, burst: 1 });
    expect(counter.take(1000).allowed).toBe(true);
    expect(counter.take(900)).toMatchObject({ allowed: false, nextMs: 1000 });
  });
});

describe('the demo server, its headers', () => {
  const allowed = { allowed: true, remaining: 3, nextMs: 0, resetMs: 400 };
  const refused = { allowed: false, remaining: 0, nextMs: 250, resetMs: 900 };
  const wallNow = 1_700_000_000_200;

  it('IETF: the policy always, the quota left and its reset, Retry-After on a 429', () => {
    expect(headersOf('ietf', allowed, 10, wallNow)).toEqual({
      'ratelimit-policy': '"api";q=10;w=1',
      ratelimit: '"api";r=3;t=1',
    });
    expect(headersOf('ietf', refused, 10, wallNow)).toEqual({
      'ratelimit-policy': '"api";q=10;w=1',
      ratelimit: '"api";r=0;t=1',
      'retry-after': '1',
    });
  });

  it('X-RateLimit-*: GitHub’s family, the reset in epoch seconds, no Retry-After', () => {
    expect(headersOf('x-ratelimit', refused, 10, wallNow)).toEqual({
      'x-ratelimit-limit': '10',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-used': '10',
      'x-ratelimit-reset': '1700000001',
      'x-ratelimit-resource': 'core',
    });
  });

  it('Retry-After only on a refusal, whole seconds and at least 1; nothing says nothing', () => {
    expect(headersOf('retry-after', allowed, 10, wallNow)).toEqual({});
    expect(headersOf('retry-after', { ...refused, nextMs: 1200 }, 10, wallNow)).toEqual({
      'retry-after': '2',
    });
    expect(headersOf('none', refused, 10, wallNow)).toEqual({});
  });
});
