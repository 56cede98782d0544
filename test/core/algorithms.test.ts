import { describe, expect, expectTypeOf, it } from 'vitest';
import { ArrivalSafe } from '../../src/core/algorithms/arrival-safe.js';
import { FixedWindow } from '../../src/core/algorithms/fixed-window.js';
import { Gcra } from '../../src/core/algorithms/gcra.js';
import { SlidingLog } from '../../src/core/algorithms/sliding-log.js';
import { SlidingWindow } from '../../src/core/algorithms/sliding-window.js';
import { TokenBucket } from '../../src/core/algorithms/token-bucket.js';
import {
  type Algorithm,
  type AlgorithmName,
  arrivalSafe,
  createRateLimiter,
  createStrategy,
  fixedWindow,
  gcra,
  type Policy,
  type PolicyOptions,
  perSecond,
  type ResolvedPolicy,
  slidingLog,
  slidingWindow,
  tokenBucket,
} from '../../src/index.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createManualClock } from '../../src/testing/index.js';

function limiterAt(policy: Policy) {
  const clock = createManualClock();
  const limiter = createRateLimiter({ limits: policy, clock });
  const at = (ms: number, cost = 1) => {
    clock.set(ms);
    return limiter.tryAcquire('k', cost);
  };
  return { clock, limiter, at };
}

describe('token-bucket', () => {
  it('refills fractional credit lazily and caps it at the burst', () => {
    const { at } = limiterAt(perSecond(10, { burst: 2 }));
    expect(at(0)).toMatchObject({ allowed: true, remaining: 1 });
    expect(at(0)).toMatchObject({ allowed: true, remaining: 0 });
    expect(at(50)).toMatchObject({ allowed: false, retryAfterMs: 50, remaining: 0 });
    expect(at(100)).toMatchObject({ allowed: true, remaining: 0, resetMs: 200 });
    // 10 s idle refills to the burst of 2, not to 100.
    expect(at(10_100)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('charges a weighted cost and tells when that cost fits', () => {
    const { at } = limiterAt(perSecond(4));
    expect(at(0, 3)).toMatchObject({ allowed: true, remaining: 1 });
    expect(at(0, 3)).toMatchObject({ allowed: false, retryAfterMs: 500, remaining: 1 });
    expect(at(499, 3)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(at(500, 3)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('rounds a retry up to the next whole ms when the rate is not a whole number of ms', () => {
    const { at } = limiterAt({ limit: 3, windowMs: 1000, burst: 1 });
    at(0);
    // One permit every 333.33 ms: 333 is too early, 334 is enough.
    expect(at(0)).toMatchObject({ allowed: false, retryAfterMs: 334 });
    expect(at(333)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(at(334)).toMatchObject({ allowed: true });
  });
});

describe('gcra', () => {
  it('admits like a token bucket of the same rate and burst', () => {
    const cell = limiterAt({ limit: 10, windowMs: 1000, burst: 2, algorithm: gcra });
    const bucket = limiterAt({ limit: 10, windowMs: 1000, burst: 2 });
    for (const [t, cost] of [
      [0, 1],
      [0, 1],
      [0, 1],
      [40, 1],
      [100, 2],
      [250, 2],
      [260, 1],
      [900, 2],
    ] as const) {
      expect(cell.at(t, cost)).toEqual(bucket.at(t, cost));
    }
  });

  it('is the token bucket itself in memory: the same class, so the same decisions', () => {
    expect(Gcra).toBe(TokenBucket);
    const state = createStrategy({ limit: 5, windowMs: 1000, algorithm: gcra });
    expect(state).toBeInstanceOf(TokenBucket);
  });

  it('reports the time until the bucket is full again as resetMs', () => {
    const { at } = limiterAt({ limit: 5, windowMs: 1000, algorithm: gcra });
    expect(at(0)).toMatchObject({ allowed: true, remaining: 4, resetMs: 200 });
    expect(at(0, 2)).toMatchObject({ allowed: true, remaining: 2, resetMs: 600 });
  });
});

describe('sliding-log', () => {
  it('counts an entry while it is younger than one window, and not at exactly one window', () => {
    const { at } = limiterAt({ limit: 2, windowMs: 1000, algorithm: slidingLog });
    expect(at(0)).toMatchObject({ allowed: true, remaining: 1 });
    expect(at(400)).toMatchObject({ allowed: true, remaining: 0 });
    expect(at(999)).toMatchObject({ allowed: false, retryAfterMs: 1, resetMs: 401 });
    expect(at(1000)).toMatchObject({ allowed: true, remaining: 0 });
    expect(at(1000)).toMatchObject({ allowed: false, retryAfterMs: 400 });
    expect(at(1400)).toMatchObject({ allowed: true });
  });

  it('waits for as many old entries to leave as a weighted cost needs', () => {
    const { at } = limiterAt({ limit: 4, windowMs: 100, algorithm: slidingLog });
    at(0);
    at(10);
    at(20);
    at(30);
    expect(at(50, 3)).toMatchObject({ allowed: false, retryAfterMs: 70 });
    expect(at(119, 3)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(at(120, 3)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('grows its ring buffer past its first slots without losing order', () => {
    const { at } = limiterAt({ limit: 50, windowMs: 1000, algorithm: slidingLog });
    for (let i = 0; i < 50; i++) expect(at(i * 10).allowed).toBe(true);
    expect(at(500)).toMatchObject({ allowed: false, retryAfterMs: 500 });
    for (let i = 0; i < 50; i++) expect(at(1000 + i * 10)).toMatchObject({ allowed: true });
    expect(at(1495)).toMatchObject({ allowed: false, retryAfterMs: 505 });
  });

  it('takes back stand-ins of one stamp, the entries after them kept in order, across the ring', () => {
    const log = new SlidingLog(resolvePolicy({ limit: 8, windowMs: 1000 }));
    for (const at of [0, 10, 20, 30, 40, 50]) expect(log.tryAcquire(at, 1).allowed).toBe(true);
    // At 1005 the entry at 0 is out: three stand-ins fill the log, in slots 6, 7 and 0 of 8.
    log.lowerRemaining(1005, 0);
    expect(log.level(1005)).toBe(0);
    expect(log.tryAcquire(1025, 1).allowed).toBe(true); // 10 and 20 are out
    // The three of the stamp 1005 taken back (a fourth asked for is not there); 1025 stays.
    expect(log.withdraw(1005, 4)).toBe(3);
    expect(log.level(1025)).toBe(4);
    expect(log.withdraw(1005, 1)).toBe(0);
    // The rest leave in order: 30, 40, 50 a window after, then 1025.
    expect(log.level(1030)).toBe(5);
    expect(log.level(1050)).toBe(7);
    expect(log.level(2024)).toBe(7);
    expect(log.level(2025)).toBe(8);
  });
});

describe('sliding-window', () => {
  it('weights the previous window by how much of it the sliding window still covers', () => {
    const { at } = limiterAt({ limit: 10, windowMs: 1000, algorithm: slidingWindow });
    for (let i = 0; i < 10; i++) at(500);
    expect(at(999)).toMatchObject({ allowed: false, retryAfterMs: 2 });
    // At 1250 the estimate is 10 * 0.75 = 7.5, floored to 7: three permits remain.
    expect(at(1250, 3)).toMatchObject({ allowed: true, remaining: 0 });
    expect(at(1250)).toMatchObject({ allowed: false });
    // Two windows later the old counts are gone.
    expect(at(3000, 10)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('finds the first ms at which the sliding estimate lets a request in', () => {
    const { at } = limiterAt({ limit: 3, windowMs: 1000, algorithm: slidingWindow });
    at(0, 3);
    // The floored estimate frees one permit as soon as the previous window starts to slide out.
    expect(at(1000)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    // Two permits need floor(3 * (1 - e / 1000)) <= 1, so e > 333.33.
    expect(at(1000, 2)).toMatchObject({ allowed: false, retryAfterMs: 334 });
    expect(at(1333, 2)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(at(1334, 2)).toMatchObject({ allowed: true, remaining: 0 });
  });
});

describe('fixed-window', () => {
  it('resets at window boundaries aligned to the ticker zero', () => {
    const { at } = limiterAt({ limit: 2, windowMs: 1000, algorithm: fixedWindow });
    expect(at(900)).toMatchObject({ allowed: true, remaining: 1, resetMs: 100 });
    expect(at(950)).toMatchObject({ allowed: true, remaining: 0 });
    expect(at(990)).toMatchObject({ allowed: false, retryAfterMs: 10, resetMs: 10 });
    expect(at(1000)).toMatchObject({ allowed: true, remaining: 1, resetMs: 1000 });
  });

  it('admits up to twice the limit across a boundary (its documented weakness)', () => {
    const { at } = limiterAt({ limit: 5, windowMs: 1000, algorithm: fixedWindow });
    const admitted = [...Array(5)].map(() => at(999)).concat([...Array(5)].map(() => at(1000)));
    expect(admitted.every((d) => d.allowed)).toBe(true);
  });
});

describe('algorithm values', () => {
  const classes: [
    AlgorithmName,
    Algorithm,
    Algorithm['burst'],
    abstract new (...args: never[]) => unknown,
  ][] = [
    ['token-bucket', tokenBucket, 'capacity', TokenBucket],
    ['gcra', gcra, 'capacity', TokenBucket],
    ['sliding-log', slidingLog, undefined, SlidingLog],
    ['sliding-window', slidingWindow, undefined, SlidingWindow],
    ['fixed-window', fixedWindow, undefined, FixedWindow],
    ['arrival-safe', arrivalSafe, 'spacing', ArrivalSafe],
  ];

  it.each(classes)(
    '%s is frozen, named, and makes its own state',
    (name, algorithm, burst, made) => {
      expect(Object.isFrozen(algorithm)).toBe(true);
      expect(algorithm.name).toBe(name);
      expect(algorithm.burst).toBe(burst);
      const policy = { limit: 4, windowMs: 1000, algorithm };
      expect(createStrategy(policy)).toBeInstanceOf(made);
      expect(perSecond(4, { algorithm })).toEqual({ limit: 4, windowMs: 1000, algorithm });
    },
  );

  it('is the default token bucket when a policy names none', () => {
    expect(createStrategy(perSecond(4))).toBeInstanceOf(TokenBucket);
  });

  it('types a policy with a value and a resolved policy with both the name and the value', () => {
    expectTypeOf<Policy['algorithm']>().toEqualTypeOf<Algorithm | undefined>();
    expectTypeOf<PolicyOptions['algorithm']>().toEqualTypeOf<Algorithm | undefined>();
    expectTypeOf<ResolvedPolicy['algorithm']>().toEqualTypeOf<AlgorithmName>();
    expectTypeOf<ResolvedPolicy['counting']>().toEqualTypeOf<Algorithm>();
    expect(() =>
      // @ts-expect-error: a string is the old form; import the value instead.
      perSecond(4, { algorithm: 'sliding-log' }),
    ).toThrow(TypeError);
  });
});
