import { describe, expect, it } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { createPacer, type PacerOptions } from '../../src/pacer/index.js';
import { createManualClock } from '../../src/testing/index.js';
import { harness } from './support.js';

/** Options with one field replaced, bypassing the types as a JS caller would. */
function withField(field: string, value: unknown): PacerOptions {
  return { limits: perSecond(1), [field]: value } as unknown as PacerOptions;
}

describe('createPacer options', () => {
  it('accepts the defaults and a manual clock', () => {
    expect(() => createPacer({ limits: perSecond(1) })).not.toThrow();
    expect(() => createPacer({ limits: perSecond(1), clock: createManualClock() })).not.toThrow();
    expect(() =>
      createPacer({
        limits: [perSecond(1), { limit: 100, windowMs: 60_000 }],
        mode: 'reject',
        maxQueue: 0,
        maxWaitMs: 0,
        concurrency: 1,
        maxKeys: 10,
      }),
    ).not.toThrow();
  });

  it.each([
    ['mode', 'fast', TypeError, /`mode`.*'queue' or 'reject'.*`'fast'` \(string\)/],
    ['maxQueue', -1, RangeError, /`maxQueue`.*integer >= 0.*`-1`/],
    ['maxQueue', 1.5, RangeError, /`maxQueue`.*`1.5`/],
    ['maxQueue', '10', TypeError, /`maxQueue`.*`'10'` \(string\)/],
    ['maxWaitMs', -5, RangeError, /`maxWaitMs`.*>= 0.*`-5`/],
    ['maxWaitMs', Number.NaN, RangeError, /`maxWaitMs`.*`NaN`/],
    ['concurrency', 0, RangeError, /`concurrency`.*positive integer.*`0`/],
    ['concurrency', null, TypeError, /`concurrency`.*`null`/],
    ['maxKeys', 0, RangeError, /`maxKeys`.*`0`/],
    ['clock', Date.now, TypeError, /`clock`.*`now\(\)`, `setTimeout\(\)` and `clearTimeout\(\)`/],
    ['clock', { now: () => 0 }, TypeError, /`clock`/],
  ])('rejects %s = %s with a %o naming it', (field, value, type, message) => {
    expect(() => createPacer(withField(field, value))).toThrow(type);
    expect(() => createPacer(withField(field, value))).toThrow(message);
  });

  it('names `limits` in policy errors', () => {
    expect(() => createPacer({ limits: { limit: 0, windowMs: 1_000 } })).toThrow(
      /`limits.limit` to be a positive integer, got `0`/,
    );
    expect(() => createPacer({ limits: [perSecond(1), { limit: 1, windowMs: -1 }] })).toThrow(
      /`limits\[1\].windowMs`/,
    );
    expect(() => createPacer({ limits: [] })).toThrow(/`limits` to hold at least one policy/);
    expect(() => createPacer({} as PacerOptions)).toThrow(/`limits`/);
    expect(() => createPacer(undefined as unknown as PacerOptions)).toThrow(TypeError);
  });

  it('touches no global at construction', () => {
    const clock = createManualClock();
    const pacer = createPacer({ limits: perSecond(1), clock });
    expect(clock.pendingTimers).toBe(0);
    expect(pacer.now()).toBe(0);
  });
});

describe('schedule options', () => {
  const { pacer } = harness({ limits: perSecond(5) });
  const bad = (options: unknown) => () => pacer.schedule(() => 1, options as never);

  it.each([
    [{ key: 1 }, TypeError, /`key` to be a string, got `1` \(number\)/],
    [{ cost: 0 }, RangeError, /`cost` to be a positive integer or amounts per unit .*, got `0`/],
    [{ cost: 'x' }, TypeError, /`cost` to be a positive integer or amounts per unit .*, got `'x'`/],
    [{ cost: 1.5 }, RangeError, /`cost`.*`1.5`/],
    [{ priority: Number.POSITIVE_INFINITY }, RangeError, /`priority` to be a finite number/],
    [{ priority: '1' }, TypeError, /`priority`/],
    [{ signal: {} }, TypeError, /`signal` to be an AbortSignal/],
    [{ front: 1 }, TypeError, /`front` to be a boolean/],
    ['key', TypeError, /schedule options/],
    [{ key: null }, TypeError, /`key` to be a string, got `null`/],
  ])('throws synchronously for %o', (options, type, message) => {
    expect(bad(options)).toThrow(type);
    expect(bad(options)).toThrow(message);
  });

  it('throws synchronously for a task that is not a function', () => {
    expect(() => pacer.schedule('fetch' as never)).toThrow(/task to be a function/);
  });

  it('accepts every field as undefined, as a pass-through caller sends them', async () => {
    await expect(
      pacer.schedule(() => 'ok', {
        key: undefined,
        cost: undefined,
        priority: undefined,
        signal: undefined,
        front: undefined,
      }),
    ).resolves.toBe('ok');
  });

  it('checks the arguments of the server-feedback methods', () => {
    expect(() => pacer.blockUntil('api', Number.NaN)).toThrow(/`until`/);
    expect(() => pacer.observe('api', { kind: 'quota', remaining: -1 })).toThrow(/`remaining`/);
    expect(() => pacer.tryAcquire('api', 0)).toThrow(/`cost`/);
    expect(() => pacer.inspect(5 as never)).toThrow(/`key`/);
  });
});
