import { describe, expect, it } from 'vitest';
import { resolvePolicy } from '../../src/core/policy.js';
import { createPacerLimiter } from '../../src/core/pacer-limiter.js';
import {
  createPacedFetch,
  createRateLimiter,
  createStrategy,
  fixedWindow,
  gcra,
  type Policy,
  perSecond,
  slidingLog,
  slidingWindow,
  tokenBucket,
} from '../../src/index.js';
import { createManualClock } from '../../src/testing/index.js';

/** Bad input is deliberately mistyped: callers in plain JS send exactly this. */
const bad = (value: unknown) => value as Policy;

describe('invalid policies throw at construction, naming the field and the value', () => {
  it.each<[string, unknown, ErrorConstructor, RegExp]>([
    [
      'limit 0',
      { limit: 0, windowMs: 1000 },
      RangeError,
      /`limit` to be a positive integer, got `0`/,
    ],
    ['limit -1', { limit: -1, windowMs: 1000 }, RangeError, /`limit`.*got `-1`/],
    ['1.5 permits', { limit: 1.5, windowMs: 1000 }, RangeError, /`limit`.*got `1.5`/],
    ['limit NaN', { limit: Number.NaN, windowMs: 1000 }, RangeError, /`limit`.*got `NaN`/],
    ['limit Infinity', { limit: Infinity, windowMs: 1000 }, RangeError, /`limit`.*`Infinity`/],
    ['limit as a string', { limit: '10', windowMs: 1000 }, TypeError, /`limit`.*`'10'` \(string\)/],
    ['limit missing', { windowMs: 1000 }, TypeError, /`limit`.*`undefined`/],
    ['windowMs 0', { limit: 1, windowMs: 0 }, RangeError, /`windowMs` to be a finite number > 0/],
    ['windowMs -1', { limit: 1, windowMs: -1 }, RangeError, /`windowMs`.*got `-1`/],
    ['windowMs NaN', { limit: 1, windowMs: Number.NaN }, RangeError, /`windowMs`.*`NaN`/],
    ['windowMs Infinity', { limit: 1, windowMs: Infinity }, RangeError, /`windowMs`.*Infinity/],
    ['windowMs as a string', { limit: 1, windowMs: '1s' }, TypeError, /`windowMs`.*`'1s'`/],
    [
      'an algorithm named by a string, the old form',
      { limit: 1, windowMs: 1, algorithm: 'sliding-log' },
      TypeError,
      /`algorithm` to be an algorithm value such as `slidingLog` \(import \{ slidingLog \} from 'fetch-pacer'\), got `'sliding-log'` \(string\)/,
    ],
    [
      'unknown algorithm',
      { limit: 1, windowMs: 1, algorithm: 'leaky' },
      TypeError,
      /`algorithm` to be an algorithm value such as `tokenBucket` \(import \{ tokenBucket \} from 'fetch-pacer'\), got `'leaky'` \(string\)/,
    ],
    [
      'an object that is no algorithm value',
      { limit: 1, windowMs: 1, algorithm: { name: 'token-bucket' } },
      TypeError,
      /`algorithm` to be an algorithm value .*got a value of type object/,
    ],
    [
      'algorithm null',
      { limit: 1, windowMs: 1, algorithm: null },
      TypeError,
      /`algorithm`.*`null`/,
    ],
    ['burst 0', { limit: 1, windowMs: 1, burst: 0 }, RangeError, /`burst`.*got `0`/],
    ['burst 2.5', { limit: 1, windowMs: 1, burst: 2.5 }, RangeError, /`burst`.*got `2.5`/],
    ['burst NaN', { limit: 1, windowMs: 1, burst: Number.NaN }, RangeError, /`burst`.*`NaN`/],
    ['burst as a string', { limit: 1, windowMs: 1, burst: '5' }, TypeError, /`burst`.*`'5'`/],
    [
      'burst on sliding-log',
      { limit: 5, windowMs: 1, algorithm: slidingLog, burst: 3 },
      TypeError,
      /`burst` applies only to `tokenBucket`, `gcra` and `arrivalSafe`, got `3` \(number\) with `slidingLog`/,
    ],
    [
      'burst on sliding-window',
      { limit: 5, windowMs: 1, algorithm: slidingWindow, burst: 3 },
      TypeError,
      /`burst` applies only/,
    ],
    [
      'burst on fixed-window',
      { limit: 5, windowMs: 1, algorithm: fixedWindow, burst: 3 },
      TypeError,
      /`burst` applies only/,
    ],
    ['null', null, TypeError, /`policy` to be a policy.*`null`/],
    ['a number', 10, TypeError, /`policy` to be a policy.*`10`/],
  ])('%s', (_case, policy, type, message) => {
    expect(() => resolvePolicy(bad(policy))).toThrow(type);
    expect(() => resolvePolicy(bad(policy))).toThrow(message);
    expect(() => createStrategy(bad(policy))).toThrow(type);
    expect(() => createRateLimiter({ limits: bad(policy) })).toThrow(type);
  });

  it('prefixes the field with the position of a policy in a list', () => {
    expect(() =>
      createRateLimiter({ limits: [perSecond(1), bad({ limit: 0, windowMs: 1 })] }),
    ).toThrow(/`limits\[1\]\.limit`/);
    expect(() => createRateLimiter({ limits: [] })).toThrow(/at least one policy/);
  });

  it('validates the helpers too', () => {
    expect(() => perSecond(0)).toThrow(/`limit`.*`0`/);
    expect(() => perSecond(5, { algorithm: fixedWindow, burst: 2 })).toThrow(/`burst`/);
    expect(() => perSecond(5, { algorithm: bad('gcra') as never })).toThrow(
      /`algorithm` to be an algorithm value such as `gcra` \(import \{ gcra \} from 'fetch-pacer'\)/,
    );
  });

  it('names where a string algorithm came from, in a list and in a paced fetch', () => {
    const named = bad({ limit: 1, windowMs: 1, algorithm: 'fixed-window' });
    expect(() => createRateLimiter({ limits: [perSecond(1), named] })).toThrow(
      /`limits\[1\]\.algorithm` to be an algorithm value such as `fixedWindow`/,
    );
    expect(() => createPacedFetch({ limits: named })).toThrow(
      /`limits\.algorithm` to be an algorithm value such as `fixedWindow`/,
    );
  });

  it('tells an algorithm value by its shape: a copy (another copy of the package) counts alike', () => {
    const copy = { ...slidingLog };
    expect(resolvePolicy({ limit: 2, windowMs: 1000, algorithm: copy })).toMatchObject({
      algorithm: 'sliding-log',
      counting: copy,
    });
    const state = createStrategy({ limit: 2, windowMs: 1000, algorithm: copy });
    state.tryAcquire(0, 1);
    state.tryAcquire(400, 1);
    // A sliding log: the first permit is back exactly one window after it was taken.
    expect(state.tryAcquire(600, 1)).toMatchObject({ allowed: false, retryAfterMs: 400 });
  });

  it('accepts a burst on token-bucket and gcra, and a fractional window', () => {
    expect(resolvePolicy({ limit: 3, windowMs: 0.5, burst: 10 })).toEqual({
      limit: 3,
      windowMs: 0.5,
      algorithm: 'token-bucket',
      counting: tokenBucket,
      capacity: 10,
    });
    expect(resolvePolicy({ limit: 3, windowMs: 1, algorithm: gcra, burst: 1 }).capacity).toBe(1);
  });
});

describe('invalid limiter options and calls', () => {
  it.each<[string, Record<string, unknown>, RegExp]>([
    ['maxKeys 0', { maxKeys: 0 }, /`maxKeys` to be a positive integer, got `0`/],
    ['maxKeys 1.5', { maxKeys: 1.5 }, /`maxKeys`.*`1.5`/],
    ['maxKeys NaN', { maxKeys: Number.NaN }, /`maxKeys`.*`NaN`/],
    ['clock not a clock', { clock: 5 }, /`clock` to be an object with `now\(\)`.*`5`/],
    ['clock a bare function', { clock: () => 0 }, /`clock` to be an object with `now\(\)`/],
  ])('%s', (_case, options, message) => {
    expect(() => createRateLimiter({ limits: perSecond(1), ...options })).toThrow(message);
  });

  it('rejects options that are not an object', () => {
    expect(() => createRateLimiter(undefined as never)).toThrow(/\{ limits \}/);
  });

  it.each<[string, unknown, RegExp]>([
    ['0', 0, /`cost` to be a positive integer, got `0`/],
    ['-1', -1, /`cost`.*`-1`/],
    ['1.5', 1.5, /`cost`.*`1.5`/],
    ['NaN', Number.NaN, /`cost`.*`NaN`/],
    ['a string', '2', /`cost`.*`'2'`/],
  ])('rejects a cost of %s at the call', (_case, cost, message) => {
    const limiter = createRateLimiter({ limits: perSecond(5), clock: createManualClock() });
    expect(() => limiter.tryAcquire('a', cost as number)).toThrow(message);
    expect(() => limiter.peek('a', cost as number)).toThrow(message);
    expect(limiter.size).toBe(0);
  });

  it('rejects keys that are not strings, and bad blocks and quotas', () => {
    const limiter = createPacerLimiter({ limits: perSecond(5), clock: createManualClock() });
    expect(() => limiter.tryAcquire(42 as never)).toThrow(/`key` to be a string, got `42`/);
    expect(() => limiter.feedback.blockUntil('a', Number.NaN)).toThrow(/`until`.*`NaN`/);
    expect(() => limiter.feedback.observe('a', { kind: 'quota', remaining: -1 })).toThrow(
      /`remaining`.*`-1`/,
    );
    expect(() => limiter.feedback.observe('a', { kind: 'quota', remaining: 0.5 })).toThrow(
      /`remaining`/,
    );
    expect(limiter.size).toBe(0);
  });

  it('says that a bare limiter counts one policy, not limits per unit', () => {
    const units = { requests: perSecond(5), tokens: perSecond(500) };
    expect(() => createRateLimiter({ limits: units })).toThrow(
      '[fetch-pacer] `limits` gives limits per unit: a pacer counts those (createPacer, createPacedFetch), a bare limiter one policy',
    );
    const bare = createRateLimiter({ limits: perSecond(5), clock: createManualClock() });
    expect(() => bare.tryAcquire('a', { requests: 1 } as never)).toThrow(
      /`cost` to be a positive integer/,
    );
  });
});
