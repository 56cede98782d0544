import { describe, expect, it } from 'vitest';
import { MAX_DELAY_MS } from '../../src/core/signal.js';
import { perSecond } from '../../src/index.js';
import { createPacerLimiter } from '../../src/core/pacer-limiter.js';
import { createManualClock } from '../../src/testing/index.js';

function setup() {
  const clock = createManualClock();
  const limiter = createPacerLimiter({ limits: perSecond(10), clock });
  return { clock, limiter };
}

describe('a server signal that claims too much', () => {
  it('costs bounded memory per key whatever limit a policy claims (q=1e7 with nothing left)', () => {
    const { limiter } = setup();
    const before = process.memoryUsage().arrayBuffers;
    limiter.feedback.observe('k', {
      kind: 'policy',
      limit: 10_000_000,
      windowMs: 1000,
      remaining: 0,
    });
    // An exact log would hold one float per missing permit: 80 MB here.
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(1_000_000);
    expect(limiter.policyOf('k').learned).toEqual({
      limit: 10_000_000,
      windowMs: 1000,
      source: 'server',
    });
    // Its count still holds: nothing left in this window.
    expect(limiter.tryAcquire('k')).toMatchObject({ allowed: false });
  });

  it('keeps deciding after a limit beyond any array (q=999999999999999)', () => {
    const { clock, limiter } = setup();
    limiter.feedback.observe('k', { kind: 'policy', limit: 999_999_999_999_999, windowMs: 1000 });
    for (let i = 0; i < 10; i++) expect(limiter.tryAcquire('k').allowed).toBe(true);
    expect(limiter.tryAcquire('k')).toMatchObject({ allowed: false, reason: 'rate' });
    clock.advance(1000);
    expect(limiter.tryAcquire('k').allowed).toBe(true);
  });

  it('blocks a key no longer than MAX_DELAY_MS (w=999999999999, Retry-After of years)', () => {
    const { limiter } = setup();
    limiter.feedback.observe('a', { kind: 'quota', remaining: 0, resetMs: 999_999_999_999_000 });
    limiter.feedback.observe('b', { kind: 'refusal', retryAfterMs: 999_999_999_999_000 });
    limiter.feedback.observe('c', { kind: 'policy', limit: 5, windowMs: 999_999_999_999 });
    expect(limiter.feedback.blockedUntil('a')).toBe(MAX_DELAY_MS);
    expect(limiter.feedback.blockedUntil('b')).toBe(MAX_DELAY_MS);
    expect(limiter.policyOf('c').learned?.windowMs).toBe(MAX_DELAY_MS);
  });
});

describe('a refusal signal', () => {
  it('blocks the key for its Retry-After', () => {
    const { clock, limiter } = setup();
    limiter.feedback.observe('k', { kind: 'refusal', retryAfterMs: 1500 });
    expect(limiter.tryAcquire('k')).toMatchObject({ allowed: false, reason: 'blocked' });
    clock.set(1500);
    expect(limiter.tryAcquire('k').allowed).toBe(true);
  });

  it('of 0 ms, negative or NaN blocks nothing', () => {
    const { limiter } = setup();
    limiter.feedback.observe('a', { kind: 'refusal', retryAfterMs: 0 });
    limiter.feedback.observe('b', { kind: 'refusal', retryAfterMs: -5 });
    limiter.feedback.observe('c', { kind: 'refusal', retryAfterMs: Number.NaN });
    for (const key of ['a', 'b', 'c']) expect(limiter.feedback.blockedUntil(key)).toBeUndefined();
  });
});

describe('a malformed signal', () => {
  it('throws a TypeError naming what was expected', () => {
    const { limiter } = setup();
    expect(() => limiter.feedback.observe('k', { remaining: 1 } as never)).toThrow(
      /Expected a server signal such as `\{ kind: 'quota', remaining \}`/,
    );
    expect(() => limiter.feedback.observe('k', { kind: 'later' } as never)).toThrow(TypeError);
  });

  it('throws a RangeError for a count that is no count', () => {
    const { limiter } = setup();
    expect(() => limiter.feedback.observe('k', { kind: 'quota', remaining: 1.5 })).toThrow(
      /`remaining`/,
    );
    expect(() =>
      limiter.feedback.observe('k', { kind: 'policy', limit: 5, windowMs: 1000, remaining: -1 }),
    ).toThrow(RangeError);
  });
});
