import { describe, expect, it } from 'vitest';
import { createRateLimiter, perSecond } from '../../src/index.js';
import { createManualClock } from '../../src/testing/index.js';

describe('token bucket, 5 per second, capacity 5', () => {
  it('follows the reference trace for alice and bob', () => {
    const clock = createManualClock();
    const limiter = createRateLimiter({ limits: perSecond(5), clock });

    const burst = Array.from({ length: 5 }, () => limiter.tryAcquire('alice'));
    expect(burst.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 4],
      [true, 3],
      [true, 2],
      [true, 1],
      [true, 0],
    ]);
    expect(limiter.tryAcquire('alice')).toMatchObject({
      allowed: false,
      retryAfterMs: 200,
      reason: 'rate',
    });

    clock.set(100);
    expect(limiter.tryAcquire('alice')).toMatchObject({ allowed: false, retryAfterMs: 100 });

    clock.set(300);
    expect(limiter.tryAcquire('alice')).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.tryAcquire('alice')).toMatchObject({ allowed: false, retryAfterMs: 100 });
    expect(limiter.tryAcquire('bob')).toMatchObject({ allowed: true, remaining: 4 });

    clock.set(1300);
    expect(limiter.tryAcquire('alice')).toMatchObject({ allowed: true, remaining: 4 });
    expect(limiter.evictIdle()).toBe(1);
    expect(limiter.size).toBe(1);
    expect(limiter.peek('bob')).toMatchObject({ allowed: true, remaining: 4 });

    clock.set(1500);
    expect(limiter.evictIdle()).toBe(1);
    expect(limiter.size).toBe(0);
  });
});
