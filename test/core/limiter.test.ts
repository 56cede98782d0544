import { describe, expect, it, vi } from 'vitest';
import {
  createRateLimiter,
  fixedWindow,
  gcra,
  type Policy,
  perDay,
  perSecond,
  slidingLog,
  slidingWindow,
} from '../../src/index.js';
import { createPacerLimiter } from '../../src/core/pacer-limiter.js';
import { createManualClock } from '../../src/testing/index.js';

function setup(options: Omit<Parameters<typeof createPacerLimiter>[0], 'clock'>) {
  const clock = createManualClock();
  const limiter = createPacerLimiter({ ...options, clock });
  return { clock, limiter };
}

describe('RateLimiter keys', () => {
  it('keeps one independent state per key', () => {
    const { limiter } = setup({ limits: perSecond(1) });
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    expect(limiter.tryAcquire('a').allowed).toBe(false);
    expect(limiter.tryAcquire('b').allowed).toBe(true);
    expect(limiter.size).toBe(2);
  });

  it('peeks without creating state or taking permits', () => {
    const { limiter } = setup({ limits: perSecond(2) });
    expect(limiter.peek('a')).toMatchObject({ allowed: true, remaining: 1 });
    expect(limiter.size).toBe(0);
    limiter.tryAcquire('a');
    expect(limiter.peek('a', 2)).toMatchObject({ allowed: false, retryAfterMs: 500 });
    expect(limiter.peek('a')).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('forgets one key or all of them on reset', () => {
    const { limiter } = setup({ limits: perSecond(1) });
    limiter.tryAcquire('a');
    limiter.tryAcquire('b');
    limiter.reset('a');
    expect(limiter.size).toBe(1);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    expect(limiter.tryAcquire('b').allowed).toBe(false);
    limiter.reset();
    expect(limiter.size).toBe(0);
    expect(limiter.tryAcquire('b').allowed).toBe(true);
  });

  it('throws at the call when a cost can never fit the capacity', () => {
    const { limiter } = setup({ limits: perSecond(5, { burst: 3 }) });
    expect(() => limiter.tryAcquire('a', 4)).toThrow(RangeError);
    expect(() => limiter.tryAcquire('a', 4)).toThrow(/cost of 4 can never be allowed.*3 permits/);
    expect(limiter.size).toBe(0);
    limiter.tryAcquire('a');
    expect(() => limiter.peek('a', 4)).toThrow(RangeError);
    expect(limiter.tryAcquire('a', 2).allowed).toBe(true);
  });

  it('counts a clock that steps back as zero elapsed time', () => {
    const { clock, limiter } = setup({ limits: perSecond(5) });
    clock.set(1000);
    for (let i = 0; i < 5; i++) limiter.tryAcquire('a');
    clock.set(900);
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: false, retryAfterMs: 200 });
    clock.set(1199);
    expect(limiter.tryAcquire('a').allowed).toBe(false);
    clock.set(1200);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
  });
});

describe('RateLimiter with several policies per key', () => {
  it('allows only when all allow and charges none of them otherwise', () => {
    const { clock, limiter } = setup({ limits: [perSecond(2), { limit: 3, windowMs: 10_000 }] });
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: true, remaining: 1, limit: 2 });
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: true, remaining: 0 });
    // Per second is empty: the slower policy must not be charged for this denial.
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: false, retryAfterMs: 500, limit: 2 });
    clock.set(1000);
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: true, remaining: 0, limit: 3 });
    clock.set(2000);
    // Now the 3 per 10 s policy binds: it refills one permit every 3333.3 ms.
    const denied = limiter.tryAcquire('a');
    expect(denied).toMatchObject({ allowed: false, limit: 3, reason: 'rate' });
    clock.set(2000 + denied.retryAfterMs - 1);
    expect(limiter.tryAcquire('a').allowed).toBe(false);
    clock.set(2000 + denied.retryAfterMs);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
  });

  it('checks a cost against the smallest capacity', () => {
    const { limiter } = setup({ limits: [perSecond(10), perDay(3)] });
    expect(() => limiter.tryAcquire('a', 4)).toThrow(/at most 3 permits/);
  });
});

describe('RateLimiter policy per key', () => {
  it('resolves the policy of each key once, for per-tier limits', () => {
    const free = perSecond(1);
    const pro = perSecond(100);
    const asked: string[] = [];
    const { limiter } = setup({
      limits: (key) => {
        asked.push(key);
        return key.startsWith('pro:') ? pro : free;
      },
    });
    expect(limiter.tryAcquire('free:ann').remaining).toBe(0);
    expect(limiter.tryAcquire('pro:bob').remaining).toBe(99);
    expect(limiter.tryAcquire('pro:bob').remaining).toBe(98);
    expect(asked).toEqual(['free:ann', 'pro:bob']);
  });

  it('names the key when its policy is invalid', () => {
    const { limiter } = setup({ limits: () => ({ limit: 0, windowMs: 1000 }) });
    expect(() => limiter.tryAcquire('eve')).toThrow(/`limits\('eve'\)\.limit`.*got `0`/);
  });
});

describe('RateLimiter maxKeys', () => {
  it('sweeps idle keys to make room, then denies a new key with key-limit', () => {
    const { clock, limiter } = setup({ limits: perSecond(10), maxKeys: 2 });
    limiter.tryAcquire('a');
    clock.set(50);
    limiter.tryAcquire('b');
    const denied = limiter.tryAcquire('c');
    // a is full again at 100 ms, b at 150 ms: the earliest a slot can free is in 50 ms.
    expect(denied).toMatchObject({ allowed: false, reason: 'key-limit', retryAfterMs: 50 });
    expect(limiter.size).toBe(2);
    expect(limiter.peek('c')).toMatchObject({ allowed: false, reason: 'key-limit' });
    clock.set(100);
    expect(limiter.peek('c')).toMatchObject({ allowed: true });
    expect(limiter.tryAcquire('c')).toMatchObject({ allowed: true, remaining: 9 });
    expect(limiter.size).toBe(2);
    // The busy key b survived; a (at rest) made room.
    expect(limiter.tryAcquire('b')).toMatchObject({ remaining: 8 });
  });

  it('never evicts a busy key to make room', () => {
    const { clock, limiter } = setup({ limits: perDay(1), maxKeys: 1 });
    limiter.tryAcquire('a');
    clock.set(3_600_000);
    expect(limiter.tryAcquire('b')).toMatchObject({ allowed: false, reason: 'key-limit' });
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: false, reason: 'rate' });
  });
});

describe('RateLimiter automatic sweep', () => {
  it('stays bounded by the busy keys while a million distinct keys pass through', () => {
    const { clock, limiter } = setup({ limits: perSecond(10) });
    let largest = 0;
    for (let i = 0; i < 1_000_000; i++) {
      clock.set(i); // one new key per ms, each at rest 100 ms after its request
      limiter.tryAcquire(`user-${i}`);
      if (limiter.size > largest) largest = limiter.size;
    }
    expect(largest).toBeLessThan(300);
  });
});

describe('RateLimiter server blocks', () => {
  it('denies with reason blocked until the given time, then allows', () => {
    const { clock, limiter } = setup({ limits: perSecond(5) });
    limiter.feedback.blockUntil('a', 1500.5);
    expect(limiter.tryAcquire('a')).toMatchObject({
      allowed: false,
      reason: 'blocked',
      retryAfterMs: 1501,
      remaining: 0,
    });
    expect(limiter.tryAcquire('b').allowed).toBe(true);
    expect(limiter.feedback.blockedUntil('a')).toBe(1500.5);
    clock.set(1500);
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: false, retryAfterMs: 1 });
    clock.set(1501);
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: true, remaining: 4 });
    expect(limiter.feedback.blockedUntil('a')).toBeUndefined();
  });

  it('keeps the later of two blocks and waits for the rate too', () => {
    const { clock, limiter } = setup({ limits: perSecond(1) });
    limiter.tryAcquire('a');
    limiter.feedback.blockUntil('a', 300);
    limiter.feedback.blockUntil('a', 200);
    // Blocked until 300, but the bucket itself needs 1000 ms.
    expect(limiter.tryAcquire('a')).toMatchObject({ reason: 'blocked', retryAfterMs: 1000 });
    clock.set(300);
    expect(limiter.tryAcquire('a')).toMatchObject({ reason: 'rate', retryAfterMs: 700 });
  });

  it('lowers local credit to what the server reports, never raises it', () => {
    const { limiter } = setup({ limits: perSecond(10) });
    limiter.feedback.observe('a', { kind: 'quota', remaining: 2 });
    expect(limiter.tryAcquire('a').remaining).toBe(1);
    limiter.feedback.observe('a', { kind: 'quota', remaining: 50 });
    expect(limiter.tryAcquire('a').remaining).toBe(0);
  });

  it('blocks the key for the reset time when the server has nothing left', () => {
    const { clock, limiter } = setup({ limits: perSecond(10) });
    limiter.feedback.observe('a', { kind: 'quota', remaining: 0, resetMs: 30_000 });
    expect(limiter.tryAcquire('a')).toMatchObject({ reason: 'blocked', retryAfterMs: 30_000 });
    clock.set(30_000);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
  });

  it('lifts a block on reset and drops expired blocks when sweeping', () => {
    const { clock, limiter } = setup({ limits: perSecond(1) });
    limiter.feedback.blockUntil('a', 100);
    limiter.reset('a');
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    limiter.feedback.blockUntil('b', 100);
    clock.set(100);
    limiter.evictIdle();
    expect(limiter.feedback.blockedUntil('b')).toBeUndefined();
  });
});

describe.each<[string, Policy]>([
  ['token-bucket', perSecond(4)],
  ['gcra', { limit: 4, windowMs: 1000, algorithm: gcra }],
  ['sliding-log', { limit: 4, windowMs: 1000, algorithm: slidingLog }],
  ['sliding-window', { limit: 4, windowMs: 1000, algorithm: slidingWindow }],
  ['fixed-window', { limit: 4, windowMs: 1000, algorithm: fixedWindow }],
])('%s level and observe', (_name, policy) => {
  it('reports a full level for a fresh key and lowers it as permits are taken', () => {
    const { limiter } = setup({ limits: policy });
    expect(limiter.level('a')).toBe(4);
    limiter.tryAcquire('a', 3);
    expect(limiter.level('a')).toBeCloseTo(1);
    limiter.feedback.observe('a', { kind: 'quota', remaining: 0 });
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: false, remaining: 0 });
  });
});

describe('RateLimiter clock', () => {
  it('reads the performance there is when it is made; a clock that looks it up follows fakes installed later', () => {
    // A limiter made at import, fake timers installed in a test: the documented way to follow them.
    // One an hour: the real time this test takes (a second, on a loaded machine) refills none.
    const limits = { limit: 1, windowMs: 3_600_000 };
    const following = createRateLimiter({ limits, clock: { now: () => performance.now() } });
    const made = createRateLimiter({ limits });
    vi.useFakeTimers({ toFake: ['performance'], now: 0 });
    try {
      for (const limiter of [following, made]) {
        expect(limiter.tryAcquire('a').allowed).toBe(true);
        expect(limiter.tryAcquire('a').allowed).toBe(false);
      }
      vi.advanceTimersByTime(3_600_000);
      expect(following.tryAcquire('a').allowed).toBe(true);
      // The default read the real performance: a fake hour did not pass for it.
      expect(made.tryAcquire('a').allowed).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });
});
