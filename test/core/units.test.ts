import { describe, expect, it } from 'vitest';
import {
  arrivalSafe,
  perMinute,
  perSecond,
  type RateLimiterOptions,
  slidingLog,
} from '../../src/index.js';
import { createPacerLimiter } from '../../src/core/pacer-limiter.js';
import { adjustUnits, unitsOf } from '../../src/core/unit-limits.js';
import { createManualClock } from '../../src/testing/index.js';

function setup(policy: RateLimiterOptions['limits']) {
  const clock = createManualClock();
  return { clock, limiter: createPacerLimiter({ limits: policy, clock }) };
}

/** 10 requests and 2,000 tokens per second, both token buckets (how OpenAI counts). */
const llm = { requests: perSecond(10), tokens: perSecond(2_000) };

describe('limits per unit', () => {
  it('allows a request only while every unit allows its amount', () => {
    const { limiter } = setup(llm);
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 1_500 })).toMatchObject({
      allowed: true,
    });
    // One request of ten is used, but only 500 tokens are left: 600 must wait 50 ms.
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 600 })).toMatchObject({
      allowed: false,
      reason: 'rate',
      retryAfterMs: 50,
    });
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 500 }).allowed).toBe(true);
    expect(unitsOf(limiter, 'a')).toMatchObject({
      requests: { level: 8, capacity: 10, limit: 10 },
      tokens: { level: 0, capacity: 2_000, limit: 2_000 },
    });
  });

  it('charges no unit on a denial', () => {
    const { clock, limiter } = setup(llm);
    for (let i = 0; i < 10; i++) limiter.tryAcquire('a', { requests: 1, tokens: 10 });
    // Requests are out; the tokens of the denied request must not be taken.
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 1_000 }).allowed).toBe(false);
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(1_900);
    clock.advance(100);
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 1_900 }).allowed).toBe(true);
  });

  it('counts a plain number and a unit left out in the main (first) unit', () => {
    const { limiter } = setup(llm);
    expect(limiter.tryAcquire('a', 3).allowed).toBe(true);
    expect(limiter.tryAcquire('a', { tokens: 100 }).allowed).toBe(true);
    expect(limiter.level('a')).toBe(7);
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(1_900);
    expect(limiter.policyOf('a')).toMatchObject({ capacity: 10, limit: 10 });
  });

  it('waits for the slowest unit and for a server block, whichever ends later', () => {
    const { clock, limiter } = setup(llm);
    limiter.tryAcquire('a', { requests: 1, tokens: 2_000 });
    limiter.feedback.blockUntil('a', clock.now() + 200);
    expect(limiter.peek('a', { requests: 1, tokens: 100 })).toMatchObject({
      allowed: false,
      reason: 'blocked',
      retryAfterMs: 200,
    });
    expect(limiter.peek('a', { requests: 1, tokens: 1_000 })).toMatchObject({
      allowed: false,
      reason: 'blocked',
      retryAfterMs: 500,
    });
  });

  it('throws for an amount one unit can never hold, naming the unit', () => {
    const { limiter } = setup(llm);
    expect(() => limiter.tryAcquire('a', { requests: 1, tokens: 2_001 })).toThrow(
      /A cost of 2001 tokens can never be allowed: the `tokens` limit holds at most 2000/,
    );
  });

  it('names the field and the value of a bad cost, and a unit the key does not count', () => {
    const { limiter } = setup(llm);
    expect(() => limiter.tryAcquire('a', { requests: 1, tokns: 5 })).toThrow(
      "[fetch-pacer] Unknown unit `tokns` in `cost`: the key's limits count `requests`, `tokens`",
    );
    expect(() => limiter.tryAcquire('a', { tokens: -1 })).toThrow(
      '[fetch-pacer] Expected `cost.tokens` to be an integer >= 0, got `-1` (number)',
    );
    expect(() => limiter.peek('a', { tokens: Number.NaN })).toThrow(RangeError);
    expect(() => limiter.tryAcquire('a', { tokens: 1.5 })).toThrow(/`cost.tokens`/);
    expect(limiter.size).toBe(0);
    const plain = setup(perSecond(5)).limiter;
    expect(() => plain.tryAcquire('a', { requests: 1 })).toThrow(
      /`cost` gives amounts per unit, but the limits of key 'a' count one/,
    );
  });

  it('rejects an empty unit map and a unit that is no policy, naming the field', () => {
    expect(() => setup({})).toThrow(
      '[fetch-pacer] Expected `limits` to name at least one unit, such as `{ requests: perMinute(500), tokens: perMinute(200_000) }`, got {}',
    );
    expect(() =>
      setup({ requests: perSecond(1), tokens: { inner: perSecond(1) } } as never),
    ).toThrow(/Expected `limits.tokens` to be a policy/);
    expect(() => setup({ tokens: { limit: 0, windowMs: 1000 } })).toThrow(/`limits.tokens.limit`/);
  });

  it('counts each unit under its own algorithm, several policies in one unit too', () => {
    const { clock, limiter } = setup({
      requests: [perSecond(2), perMinute(3)],
      tokens: { ...perSecond(100), algorithm: slidingLog },
    });
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 60 }).allowed).toBe(true);
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 50 })).toMatchObject({
      allowed: false,
      retryAfterMs: 1_000,
    });
    clock.advance(1_000);
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 50 }).allowed).toBe(true);
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 1 }).allowed).toBe(true);
    // The per-minute request policy binds now.
    expect(limiter.peek('a', { requests: 1 })).toMatchObject({ allowed: false });
  });

  it('drops a key at rest in every unit, and keeps one with a unit still busy', () => {
    const { clock, limiter } = setup(llm);
    limiter.tryAcquire('a', { requests: 1, tokens: 2_000 });
    clock.advance(100);
    expect(limiter.evictIdle()).toBe(0);
    clock.advance(900);
    expect(limiter.evictIdle()).toBe(1);
  });
});

describe('a unit counted until the answer', () => {
  it('charges an arrival-safe unit at the answer, so it refills only from then', () => {
    const { clock, limiter } = setup({
      requests: perSecond(10),
      tokens: { ...perSecond(1_000), algorithm: arrivalSafe },
    });
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 1_000 }).allowed).toBe(true);
    clock.advance(500);
    // In flight: nothing has come back, whatever the time.
    expect(limiter.peek('a', { tokens: 1 }).allowed).toBe(false);
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(0);
    expect(limiter.evictIdle()).toBe(0);
    limiter.settle('a', { requests: 1, tokens: 1_000 });
    expect(limiter.peek('a', { tokens: 500 }).retryAfterMs).toBe(500);
    clock.advance(1_000);
    expect(limiter.peek('a', { tokens: 1_000 }).allowed).toBe(true);
  });

  it('gives back an answered reserve at once', () => {
    const { limiter } = setup({
      requests: perSecond(10),
      tokens: { ...perSecond(1_000), algorithm: arrivalSafe },
    });
    limiter.tryAcquire('a', { requests: 1, tokens: 900 });
    limiter.settle('a', { requests: 1, tokens: 900 });
    adjustUnits(limiter, 'a', { tokens: -600 });
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(700);
  });

  it('counts what a bucket absorbed of a reserve from the answer, when it was charged', () => {
    const { clock, limiter } = setup({
      requests: perSecond(10),
      tokens: { ...perSecond(1_000), algorithm: arrivalSafe },
    });
    limiter.tryAcquire('a', { requests: 1, tokens: 900 });
    clock.advance(50);
    // Charged at the answer, into a bucket still full: that is the reserve, not an absorption.
    limiter.settle('a', { requests: 1, tokens: 900 });
    adjustUnits(limiter, 'a', { tokens: -600 }, { startedAt: 0, answeredAt: 50 });
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(700);
    // One answered at 100 and given back at 1,150: the bucket was full again by 1,050 and a
    // charge at 1,100 found it so: the 400 reserved beyond the real cost are long absorbed.
    limiter.tryAcquire('a', { requests: 1, tokens: 700 });
    clock.advance(50);
    limiter.settle('a', { requests: 1, tokens: 700 });
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(50);
    clock.advance(1_000);
    limiter.tryAcquire('a', { requests: 1, tokens: 100 });
    limiter.settle('a', { requests: 1, tokens: 100 });
    clock.advance(50);
    adjustUnits(limiter, 'a', { tokens: -400 }, { startedAt: 50, answeredAt: 100 });
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(950);
  });
});

describe('adjusting a cost after the answer', () => {
  it('gives back tokens at once, so the next request starts earlier', () => {
    const { limiter } = setup(llm);
    limiter.tryAcquire('a', { requests: 1, tokens: 1_800 });
    expect(limiter.peek('a', { requests: 1, tokens: 1_000 }).retryAfterMs).toBe(400);
    adjustUnits(limiter, 'a', { tokens: -1_300 }); // it used 500
    expect(limiter.peek('a', { requests: 1, tokens: 1_000 }).allowed).toBe(true);
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(1_500);
  });

  it("keeps no given-back credit beyond the server's later count in that unit", () => {
    const { limiter } = setup(llm);
    limiter.tryAcquire('a', { requests: 1, tokens: 1_500 });
    adjustUnits(limiter, 'a', { tokens: -1_000 }); // it used 500: 1,500 left by our count
    // The server's count already leaves out what it never charged: 1,200 is all there is.
    limiter.feedback.observe('a', { kind: 'quota', unit: 'tokens', remaining: 1_200 });
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(1_200);
    // A count above our own level takes nothing away.
    adjustUnits(limiter, 'a', { tokens: -100 });
    limiter.feedback.observe('a', { kind: 'quota', unit: 'tokens', remaining: 1_900 });
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(1_300);
  });

  it('never gives back above a unit capacity', () => {
    const { clock, limiter } = setup(llm);
    limiter.tryAcquire('a', { requests: 1, tokens: 1_000 });
    clock.advance(250); // 500 of the 1,000 have refilled already
    adjustUnits(limiter, 'a', { tokens: -1_000 });
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(2_000);
    clock.advance(1_000);
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(2_000);
    expect(limiter.tryAcquire('a', { tokens: 2_000 }).allowed).toBe(true);
    expect(limiter.peek('a', { tokens: 1 }).allowed).toBe(false);
  });

  it('gives back no more than the unit could not refill since the reserve', () => {
    // A server's bucket charged the real 200 tokens at 0, ours the reserve of 1,000: ours is
    // 800 behind, until the server's fills up (at 100 ms) and its refill is capped: at 200 ms
    // ours is at 1,400, the server's at 2,000, only 600 apart.
    const { clock, limiter } = setup(llm);
    limiter.tryAcquire('a', { requests: 1, tokens: 1_000 });
    clock.advance(200);
    limiter.tryAcquire('a', { requests: 1, tokens: 1_000 }); // the server's: 1,000 left, ours 400
    adjustUnits(limiter, 'a', { tokens: -800 }, { startedAt: 0 });
    // Only the 600 ours lacked of its capacity at the second request are owed, not 800.
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(1_000);

    // A bucket that filled up since the reserve owes nothing back.
    clock.advance(1_000);
    limiter.tryAcquire('a', { requests: 1, tokens: 1_000 }); // at 1,200 ms, full before it
    clock.advance(600); // full again by 1,700 ms
    limiter.tryAcquire('a', { requests: 1, tokens: 1_500 });
    adjustUnits(limiter, 'a', { tokens: -500 }, { startedAt: 1_200 });
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(500);
    // A reserve taken after the last time it was full is given back whole (without its times
    // too: then up to the room the unit has now).
    adjustUnits(limiter, 'a', { tokens: -300 }, { startedAt: 1_800 });
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(800);
    adjustUnits(limiter, 'a', { tokens: -300 });
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(1_100);
  });

  it('keeps the give-back of a reserve taken early in a long drain', () => {
    // 30 requests of 40 tokens, one a ms, from a full bucket of 1,000: the room before each
    // rises (39 more each time), so none hides another and the unit keeps only some of them.
    // The fourth reserved 40 and used 20: the least room since it is 156, all 20 are owed.
    const { clock, limiter } = setup({ requests: perSecond(100), tokens: perSecond(1_000) });
    for (let i = 0; i < 30; i++) {
      limiter.tryAcquire('a', { tokens: 40 });
      clock.advance(1);
    }
    const before = unitsOf(limiter, 'a')?.['tokens']?.level as number;
    adjustUnits(limiter, 'a', { tokens: -20 }, { startedAt: 3 });
    expect((unitsOf(limiter, 'a')?.['tokens']?.level as number) - before).toBe(20);
  });

  it('charges more as a debt that holds the unit until it is paid', () => {
    const { clock, limiter } = setup(llm);
    limiter.tryAcquire('a', { requests: 1, tokens: 1_500 });
    adjustUnits(limiter, 'a', { tokens: 1_000 }); // it used 2,500: 500 beyond the bucket
    expect(unitsOf(limiter, 'a')?.['tokens']?.level).toBe(0);
    expect(limiter.peek('a', { requests: 1, tokens: 100 }).retryAfterMs).toBe(300);
    clock.advance(299);
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 100 }).allowed).toBe(false);
    clock.advance(1);
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 100 }).allowed).toBe(true);
    // A request of no tokens is not held by a token debt.
    adjustUnits(limiter, 'a', { tokens: 300 });
    expect(limiter.tryAcquire('a', { requests: 1 }).allowed).toBe(true);
  });

  it('pays a debt larger than the unit holds a capacity at a time', () => {
    const { clock, limiter } = setup(llm);
    adjustUnits(limiter, 'a', { tokens: 5_000 }); // 2,000 paid now, 3,000 owed
    // Look again once the bucket is full: that pays 2,000 more, and 1,001 need 500.5 ms.
    expect(limiter.peek('a', { tokens: 1 }).retryAfterMs).toBe(1_000);
    clock.advance(1_000);
    expect(limiter.tryAcquire('a', { tokens: 1 }).retryAfterMs).toBe(501);
    clock.advance(500);
    expect(limiter.tryAcquire('a', { tokens: 1 }).allowed).toBe(false);
    clock.advance(1);
    expect(limiter.tryAcquire('a', { tokens: 1 }).allowed).toBe(true);
  });

  it('keeps a window algorithm charged until its permits leave the window', () => {
    const { clock, limiter } = setup({
      requests: perSecond(10),
      tokens: { ...perSecond(100), algorithm: slidingLog },
    });
    limiter.tryAcquire('a', { requests: 1, tokens: 100 });
    adjustUnits(limiter, 'a', { tokens: -50 });
    expect(limiter.peek('a', { tokens: 1 }).allowed).toBe(false);
    clock.advance(1_000);
    expect(limiter.peek('a', { tokens: 100 }).allowed).toBe(true);
  });

  it('names a bad delta, and ignores a give-back to a key at rest', () => {
    const { limiter } = setup(llm);
    expect(() => adjustUnits(limiter, 'a', { tokens: 0.5 })).toThrow(
      '[fetch-pacer] Expected `delta.tokens` to be an integer (negative to give back), got `0.5` (number)',
    );
    expect(() => adjustUnits(limiter, 'a', { token: 1 })).toThrow(
      /Unknown unit `token` in `delta`/,
    );
    adjustUnits(limiter, 'a', { tokens: -100 });
    expect(limiter.size).toBe(0);
    expect(() => adjustUnits(setup(perSecond(1)).limiter, 'a', { requests: 1 })).toThrow(
      /`delta` gives amounts per unit/,
    );
  });
});

describe('signals per unit', () => {
  it('learns a policy in the unit the signal names, and shows it per unit', () => {
    const { limiter } = setup({ requests: perSecond(100), tokens: perSecond(100_000) });
    limiter.feedback.observe('a', {
      kind: 'policy',
      unit: 'tokens',
      limit: 1_000,
      windowMs: 1_000,
    });
    expect(unitsOf(limiter, 'a')).toMatchObject({
      requests: { limit: 100 },
      tokens: { limit: 1_000, learned: { limit: 1_000, windowMs: 1_000, source: 'server' } },
    });
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 900 }).allowed).toBe(true);
    expect(limiter.tryAcquire('a', { requests: 1, tokens: 200 }).allowed).toBe(false);
    // The main unit learned nothing.
    expect(limiter.policyOf('a').learned).toBeUndefined();
  });

  it('lowers the count of the unit named, and of the main unit when none is', () => {
    const { limiter } = setup(llm);
    limiter.feedback.observe('a', { kind: 'quota', unit: 'tokens', remaining: 300 });
    limiter.feedback.observe('a', { kind: 'quota', remaining: 2 });
    expect(unitsOf(limiter, 'a')).toMatchObject({ requests: { level: 2 }, tokens: { level: 300 } });
  });

  it('ignores a unit the key does not count, and takes `requests` on a key of one unit', () => {
    const { limiter } = setup(perSecond(10));
    limiter.feedback.observe('a', { kind: 'quota', unit: 'tokens', remaining: 0, resetMs: 1_000 });
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    limiter.feedback.observe('a', {
      kind: 'quota',
      unit: 'requests',
      remaining: 0,
      resetMs: 1_000,
    });
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: false, reason: 'blocked' });
    expect(() =>
      limiter.feedback.observe('a', { kind: 'quota', remaining: 1, unit: 5 as never }),
    ).toThrow('[fetch-pacer] Expected `unit` to be a string, got `5` (number)');
  });
});
