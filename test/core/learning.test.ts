import { describe, expect, it } from 'vitest';
import { AIMD } from '../../src/core/learning.js';
import type { ServerSignal } from '../../src/core/signal.js';
import { SLOW_START } from '../../src/core/slow-start.js';
import {
  arrivalSafe,
  gcra,
  type Policy,
  type PolicyInput,
  perSecond,
  slidingLog,
} from '../../src/index.js';
import { createPacerLimiter, type PacerLimiter } from '../../src/core/pacer-limiter.js';
import { createManualClock } from '../../src/testing/index.js';
import { schemeCounter } from '../support/counting-servers.js';

function setup(policy: PolicyInput, maxKeys?: number) {
  const clock = createManualClock();
  const limiter = createPacerLimiter({
    limits: policy,
    clock,
    ...(maxKeys === undefined ? {} : { maxKeys }),
  });
  return { clock, limiter };
}

/** Takes permits of `key` until denied; how many it got. */
function drain(limiter: PacerLimiter, key: string): number {
  let taken = 0;
  while (limiter.tryAcquire(key).allowed) taken++;
  return taken;
}

describe('observe adopting the policy the server advertises', () => {
  it('adds the server policy as a sliding log on top of the own one, the tighter deciding', () => {
    const { clock, limiter } = setup(perSecond(1000));
    limiter.feedback.observe('api', { kind: 'policy', remaining: 20, limit: 20, windowMs: 1000 });
    expect(limiter.policyOf('api')).toEqual({
      capacity: 20,
      limit: 20,
      ratePerMs: 0.02,
      learned: { limit: 20, windowMs: 1000, source: 'server' },
    });
    expect(drain(limiter, 'api')).toBe(20);
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, retryAfterMs: 1000 });
    clock.set(999);
    expect(limiter.tryAcquire('api').allowed).toBe(false);
    clock.set(1000);
    expect(drain(limiter, 'api')).toBe(20);
  });

  it('never raises credit: a key learns with the permits it has in use', () => {
    const { limiter } = setup(perSecond(1000));
    for (let i = 0; i < 300; i++) limiter.tryAcquire('api');
    // 300 requests are out; the first answer says 19 are left (it counted only itself).
    limiter.feedback.observe('api', { kind: 'policy', remaining: 19, limit: 20, windowMs: 1000 });
    expect(limiter.level('api')).toBe(0);
    expect(limiter.tryAcquire('api').allowed).toBe(false);

    const tight = setup(perSecond(10));
    for (let i = 0; i < 7; i++) tight.limiter.tryAcquire('api');
    tight.limiter.feedback.observe('api', {
      kind: 'policy',
      remaining: 100,
      limit: 100,
      windowMs: 60_000,
    });
    // Its own policy still decides: 3 left, not 93.
    expect(drain(tight.limiter, 'api')).toBe(3);
  });

  it('counts in use what its arrival-safe policy took within the window, not what its spacing holds back', () => {
    // A paced fetch's own policy (10x too generous): its first requests were refused (another
    // client spent the server's window), and when the window turned, the answer of the next
    // one told the server's policy. Its own spacing lets one go per 1.7 ms by then, which read
    // as 599 of 600 in use carried a whole window of the learned 60 into it.
    const { clock, limiter } = setup(perSecond(600, { algorithm: arrivalSafe }));
    clock.set(50);
    limiter.tryAcquire('api');
    clock.set(51);
    limiter.settle('api');
    limiter.tryAcquire('api');
    clock.set(52);
    limiter.settle('api');
    // The pause after an answer ends the first window's credit: one request per 1.7 ms.
    clock.set(1_001);
    expect(limiter.level('api')).toBe(1);
    limiter.tryAcquire('api');
    clock.set(1_002);
    limiter.settle('api');
    limiter.feedback.observe('api', { kind: 'policy', remaining: 59, limit: 60, windowMs: 1000 });
    // The three it sent within the window are in use, and the learned policy's first window
    // lets the rest go, at the key's own spacing (not a window later).
    clock.set(1_003);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    expect(limiter.policyOf('api').learned).toMatchObject({ limit: 60, windowMs: 1000 });
  });

  it('keeps its count while the server says the same policy, and replaces a changed one', () => {
    const { clock, limiter } = setup(perSecond(1000));
    const policy = { limit: 5, windowMs: 1000 };
    limiter.feedback.observe('api', { kind: 'policy', remaining: 5, ...policy });
    expect(drain(limiter, 'api')).toBe(5);
    // Stale answers (sent before the others) do not hand the window back.
    limiter.feedback.observe('api', { kind: 'policy', remaining: 4, ...policy });
    expect(limiter.tryAcquire('api').allowed).toBe(false);
    // The server now says 10 per second: the 5 in use still count.
    clock.set(500);
    limiter.feedback.observe('api', { kind: 'policy', remaining: 5, limit: 10, windowMs: 1000 });
    expect(limiter.policyOf('api').learned).toEqual({
      limit: 10,
      windowMs: 1000,
      source: 'server',
    });
    expect(drain(limiter, 'api')).toBe(5);
    clock.set(1500);
    expect(drain(limiter, 'api')).toBe(10);
  });

  it('keeps its own window when the server infers one for the same limit, and ends a slow start', () => {
    const { limiter } = setup(perSecond(10));
    limiter.feedback.observe('api', { kind: 'start' });
    expect(limiter.policyOf('api').learned).toMatchObject({ source: 'start' });
    // A sliding server's reset (up to two windows) read as the window of 10: not its own 1 s.
    limiter.feedback.observe('api', { kind: 'policy', limit: 10, windowMs: 1978, inferred: true });
    expect(limiter.policyOf('api').learned).toBeUndefined();
    // Stated, or of another limit, it is learned.
    limiter.feedback.observe('api', { kind: 'policy', limit: 10, windowMs: 1978 });
    expect(limiter.policyOf('api').learned).toMatchObject({ limit: 10, windowMs: 1978 });
  });

  it('keeps its count while an inferred window wobbles within a tenth (a reset read through jitter)', () => {
    const { clock, limiter } = setup(perSecond(1000));
    limiter.feedback.observe('api', { kind: 'policy', remaining: 5, limit: 5, windowMs: 980 });
    expect(drain(limiter, 'api')).toBe(5);
    // koa-ratelimit's fixed window read at each answer: 957-992 ms through 5-60 ms of jitter.
    // Re-adopting would stamp the 5 in use at 600, and hold the key until 1557.
    clock.set(600);
    limiter.feedback.observe('api', { kind: 'policy', remaining: 0, limit: 5, windowMs: 957 });
    expect(limiter.policyOf('api').learned).toEqual({ limit: 5, windowMs: 980, source: 'server' });
    clock.set(980);
    expect(drain(limiter, 'api')).toBe(5);
    // Beyond a tenth it is another policy.
    limiter.feedback.observe('api', { kind: 'policy', remaining: 5, limit: 5, windowMs: 2000 });
    expect(limiter.policyOf('api').learned).toMatchObject({ windowMs: 2000 });
  });

  it('ends the block on `remaining: 0` one window after the answer that opened the window', () => {
    const { clock, limiter } = setup(perSecond(1000));
    const policy = { limit: 20, windowMs: 1000 };
    limiter.tryAcquire('api');
    clock.set(5);
    limiter.feedback.observe('api', { kind: 'policy', remaining: 19, resetMs: 1000, ...policy });
    for (let i = 0; i < 19; i++) limiter.tryAcquire('api');
    clock.set(30);
    // The reset is in whole seconds: "1 s" from 30 ms would hold the key until 1030.
    limiter.feedback.observe('api', { kind: 'policy', remaining: 0, resetMs: 1000, ...policy });
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, retryAfterMs: 975 });
    clock.set(1005);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
  });

  it('trusts a reset sooner than the window (a fixed window) instead of counting a whole window', () => {
    const { clock, limiter } = setup(perSecond(100));
    limiter.tryAcquire('api');
    limiter.feedback.observe('api', {
      kind: 'policy',
      remaining: 0,
      resetMs: 5000,
      limit: 3,
      windowMs: 60_000,
    });
    expect(limiter.tryAcquire('api')).toMatchObject({ reason: 'blocked', retryAfterMs: 5000 });
    clock.set(5000);
    expect(drain(limiter, 'api')).toBe(2);
  });

  it("lowers nothing for a count of the key's own arrival-safe limit reset within its window, whatever the float error", () => {
    // At 999.9 ms, (999.9 + 1000) - 999.9 is 1000.0000000000001: a whole-second reset read as a
    // hair longer than the 1 s window, and the count lowered the key's log for a whole window.
    const { clock, limiter } = setup({ limit: 20, windowMs: 1000, algorithm: arrivalSafe });
    clock.set(999.9);
    limiter.tryAcquire('api');
    limiter.feedback.observe('api', {
      kind: 'quota',
      remaining: 5,
      resetMs: 1000,
      limit: 20,
      sentAt: 999.9,
    });
    // The first window's credit goes no further than the count's 5 (see `ArrivalSafe.heardRoom`),
    // but the log is not lowered: the spacing's next permit comes 50 ms on, not a window on.
    expect(drain(limiter, 'api')).toBe(5);
    clock.set(1_049.9);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
  });

  it("lowers nothing for a count of 0 whose rounded reset was read as 0, within the key's window at the latest", () => {
    // A whole-second `1` with nothing left, read as its earliest (0), comes without `resetMs`:
    // `resetAtMostMs` says it resets within a second. Without it, the 0 filled the key's log
    // for a whole window (a sliding-window counter through jitter: 0.88x of its rate).
    const { clock, limiter } = setup({ limit: 20, windowMs: 1000, algorithm: arrivalSafe });
    const count = { kind: 'quota', remaining: 0, limit: 20, sentAt: 0 } as const;
    for (const key of ['bounded', 'unbounded']) {
      for (let i = 0; i < 5; i++) limiter.tryAcquire(key);
    }
    // The first window's credit goes no further than the spacing's (the count leaves no room),
    // but the log is not lowered: one more now, and one per 50 ms.
    limiter.feedback.observe('bounded', { ...count, resetAtMostMs: 1000 });
    expect(drain(limiter, 'bounded')).toBe(1);
    // Without the bound, a count with no reset lowers the log: nothing more this window.
    limiter.feedback.observe('unbounded', count);
    expect(drain(limiter, 'unbounded')).toBe(0);
    clock.set(50);
    expect(drain(limiter, 'bounded')).toBe(1);
    expect(drain(limiter, 'unbounded')).toBe(0);
  });

  it('adopts nothing from a limit without its window, nor from a malformed policy', () => {
    const { limiter } = setup(perSecond(100));
    // A limit without its window, as a careless caller might send it.
    limiter.feedback.observe('a', {
      kind: 'policy',
      remaining: 50,
      limit: 60,
    } as unknown as ServerSignal);
    limiter.feedback.observe('b', { kind: 'policy', remaining: 0, limit: 0, windowMs: 1000 });
    limiter.feedback.observe('c', { kind: 'policy', remaining: 1, limit: 2, windowMs: Number.NaN });
    for (const key of ['a', 'b', 'c']) expect(limiter.policyOf(key).learned).toBeUndefined();
  });

  it('drops the learned policy with the key at rest, or on learn(key, undefined) and reset', () => {
    const { clock, limiter } = setup(perSecond(10));
    limiter.feedback.observe('a', { kind: 'policy', remaining: 3, limit: 3, windowMs: 1000 });
    limiter.tryAcquire('a');
    expect(limiter.evictIdle()).toBe(0);
    clock.set(1000);
    expect(limiter.evictIdle()).toBe(1);
    expect(limiter.policyOf('a').learned).toBeUndefined();
    expect(drain(limiter, 'a')).toBe(10);

    limiter.feedback.observe('b', { kind: 'probe', limit: 1, windowMs: 1000 });
    expect(limiter.policyOf('b').learned?.source).toBe('client');
    limiter.feedback.observe('b', { kind: 'answered' });
    expect(limiter.policyOf('b').learned).toBeUndefined();
    limiter.feedback.observe('c', { kind: 'probe', limit: 1, windowMs: 1000 });
    limiter.reset('c');
    expect(limiter.policyOf('c').learned).toBeUndefined();
  });

  it('counts a learned policy against maxKeys: no room, nothing learned', () => {
    const { limiter } = setup(perSecond(10), 1);
    limiter.tryAcquire('busy');
    limiter.feedback.observe('new', { kind: 'policy', remaining: 5, limit: 5, windowMs: 1000 });
    limiter.feedback.observe('new', { kind: 'probe', limit: 1, windowMs: 1000 });
    expect(limiter.size).toBe(1);
    expect(limiter.policyOf('new').learned).toBeUndefined();
    // The busy key itself learns without taking a second slot.
    limiter.feedback.observe('busy', { kind: 'policy', remaining: 5, limit: 5, windowMs: 1000 });
    expect(limiter.size).toBe(1);
    expect(limiter.policyOf('busy').learned?.limit).toBe(5);
  });

  it('charges a request bigger than the learned window all of it instead of waiting forever', () => {
    const { clock, limiter } = setup(perSecond(100));
    limiter.feedback.observe('a', { kind: 'probe', limit: 5, windowMs: 1000 });
    expect(limiter.tryAcquire('a', 50).allowed).toBe(true);
    expect(limiter.tryAcquire('a').allowed).toBe(false);
    clock.set(1000);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
  });
});

describe('a window inferred from a reset that turns out to be a bucket refill', () => {
  /** A key of 1,000/s whose first answer says 19 of 20 left, reset in `resetMs`: an inferred window. */
  function opened(resetMs: number) {
    const setupped = setup(perSecond(1000));
    const { limiter } = setupped;
    const policy = { kind: 'policy', limit: 20, remaining: 19, inferred: true } as const;
    limiter.feedback.observe('api', { ...policy, windowMs: resetMs, resetMs });
    expect(limiter.policyOf('api').learned).toEqual({
      limit: 20,
      windowMs: resetMs,
      source: 'server',
    });
    return { ...setupped, policy };
  }

  it("is learned again as a bucket once the counts fall while the reset moves out (a GCRA's)", () => {
    // A GCRA of 20 per second: its reset is when it is full again, one 50 ms interval per
    // request used, so the first answer's reset reads as a window of 20 per 50 ms.
    const { limiter, policy } = opened(50);
    for (let used = 2; used <= 4; used++) {
      limiter.feedback.observe('api', {
        kind: 'quota',
        limit: 20,
        remaining: 20 - used,
        resetMs: used * 50,
      });
      expect(limiter.policyOf('api').learned?.windowMs).toBe(50);
    }
    // The reset moved 200 ms out while the count fell: no window of 50 ms does that.
    limiter.feedback.observe('api', { kind: 'quota', limit: 20, remaining: 15, resetMs: 250 });
    expect(limiter.policyOf('api').learned).toEqual({
      limit: 20,
      windowMs: 1000,
      source: 'server',
    });
    // An answer that looks like a window's first again does not make it one.
    limiter.feedback.observe('api', { ...policy, windowMs: 45, resetMs: 45 });
    expect(limiter.policyOf('api').learned?.windowMs).toBe(1000);
  });

  it("stays a window while its reset moves less than a window and a half (fastify's whole seconds to go)", () => {
    const { clock, limiter } = opened(1000);
    for (let used = 2; used <= 10; used++) {
      clock.set(used * 100);
      // `x-ratelimit-reset: 1` all window long: read as 1 s from each answer.
      limiter.feedback.observe('api', {
        kind: 'quota',
        limit: 20,
        remaining: 20 - used,
        resetMs: 1000,
      });
    }
    expect(limiter.policyOf('api').learned).toEqual({
      limit: 20,
      windowMs: 1000,
      source: 'server',
    });
  });
});

describe("a slow start and the server's count", () => {
  /** A slow start grown to `window` requests in flight, with nothing out. */
  function started(window: number) {
    const setupped = setup(perSecond(1000));
    const { limiter } = setupped;
    limiter.feedback.observe('api', { kind: 'start' });
    for (let i = 1; i < window; i++) limiter.feedback.observe('api', { kind: 'answered' });
    expect(limiter.policyOf('api').learned).toMatchObject({ limit: window, source: 'start' });
    return setupped;
  }

  it('grows by one per answer up to LIMITED_FROM in flight, then by half of that per window of answers', () => {
    const { limiter } = started(SLOW_START.LIMITED_FROM);
    const windowAfter = (answers: number) => {
      for (let i = 0; i < answers; i++) limiter.feedback.observe('api', { kind: 'answered' });
      return limiter.policyOf('api').learned?.limit;
    };
    // 16 answers (a round trip of 16 in flight) add at most 8, not 16; the next 24 about 8
    // again (doubling: 32, then 56).
    expect(windowAfter(16)).toBe(22);
    expect(windowAfter(24)).toBe(30);
    // All 300 answers of a server of 60 that answers at once leave it near 100, not 316: what
    // it has out when the first refusal comes back is about a third of a window past the limit.
    const { limiter: other } = started(1);
    for (let i = 0; i < 60; i++) other.feedback.observe('api', { kind: 'answered' });
    expect(other.policyOf('api').learned?.limit).toBeLessThan(40);
  });

  it('never has more out than the last count allows, then asks alone until a count is heard', () => {
    const { clock, limiter } = started(16);
    // Two out when the server says 5 are left: they may arrive after the answer it counted.
    limiter.tryAcquire('api');
    limiter.tryAcquire('api');
    limiter.feedback.observe('api', { kind: 'quota', remaining: 5, limit: 60 });
    expect(drain(limiter, 'api')).toBe(3);
    expect(limiter.peek('api')).toMatchObject({ allowed: false, reason: 'in-flight' });
    for (let i = 0; i < 5; i++) limiter.settle('api');
    // Spent, with nothing out: one goes alone to ask again, and the next waits for its answer.
    expect(drain(limiter, 'api')).toBe(1);
    limiter.settle('api');
    expect(limiter.peek('api')).toMatchObject({ allowed: false, reason: 'in-flight' });
    // Its answer, heard with nothing out, says the window reset: the window is free again
    // (once the key's own bucket, lowered to the server's count too, has refilled).
    limiter.feedback.observe('api', { kind: 'quota', remaining: 59, limit: 60 });
    clock.advance(100);
    expect(drain(limiter, 'api')).toBe(16);
  });

  it('is not raised by a count heard late while requests are out (answers come out of order)', () => {
    const { limiter } = started(16);
    limiter.tryAcquire('api');
    limiter.tryAcquire('api');
    limiter.feedback.observe('api', { kind: 'quota', remaining: 6 });
    limiter.feedback.observe('api', { kind: 'quota', remaining: 9 });
    expect(drain(limiter, 'api')).toBe(4);
  });

  it('lets one more go alone after WAIT_MS when the lone request never answered', () => {
    const { clock, limiter } = started(4);
    limiter.feedback.observe('api', { kind: 'quota', remaining: 0 });
    clock.advance(100);
    expect(drain(limiter, 'api')).toBe(1);
    limiter.settle('api'); // a network error: no answer is read
    expect(limiter.peek('api').allowed).toBe(false);
    clock.advance(1_000);
    expect(drain(limiter, 'api')).toBe(1);
  });
});

describe('refused with a wait: the rate the sample before it teaches', () => {
  /** Generous, and counting its permits in use for a minute (learning never hands out credit). */
  const OWN: PolicyInput = { limit: 1000, windowMs: 60_000, algorithm: slidingLog };

  /** A slow-starting key whose server named `limit`, with `admitted` answers over 0..`spanMs`. */
  function sampled(admitted: number, spanMs: number, limit: number, taken = 0) {
    const { clock, limiter } = setup(OWN);
    limiter.feedback.observe('api', { kind: 'start' });
    for (let i = 0; i < taken; i++) limiter.tryAcquire('api');
    limiter.feedback.observe('api', { kind: 'quota', remaining: limit - 1, limit });
    for (let i = 0; i < admitted; i++) {
      limiter.feedback.observe('api', { kind: 'answered', sentAt: (i * spanMs) / admitted });
    }
    clock.set(spanMs);
    return { clock, limiter };
  }

  it('learns a sample of several windows as the limit the server named per window', () => {
    const { limiter } = sampled(20, 1_900, 10);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 100, sentAt: 1_900 });
    expect(limiter.policyOf('api').learned).toEqual({ limit: 10, windowMs: 1000, source: 'rate' });
  });

  it('starts the rate when the wait ends once the sample spent the named limit (the window reset)', () => {
    const { clock, limiter } = sampled(10, 900, 10, 10);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 100, sentAt: 900 });
    clock.set(1_000);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
  });

  it("lets a slow start's allowance rise with the count of the request sent last: the server's window reset, though answers of the old one come late", () => {
    const { clock, limiter } = setup(perSecond(1000));
    limiter.feedback.observe('api', { kind: 'start' });
    // Grown to 30 in flight, by answers that named no count.
    while ((limiter.policyOf('api').learned?.limit ?? 0) < 30) {
      limiter.tryAcquire('api');
      limiter.settle('api');
      limiter.feedback.observe('api', { kind: 'answered', sentAt: clock.now() });
    }
    // Ten in flight, sent 100-109 ms, across the end of the server's window of 20.
    const sent: number[] = [];
    for (let i = 0; i < 10; i++) {
      clock.set(100 + i);
      expect(limiter.tryAcquire('api').allowed).toBe(true);
      sent.push(clock.now());
    }
    const answer = (sentAt: number, remaining: number) => {
      limiter.settle('api');
      limiter.feedback.observe('api', { kind: 'quota', remaining, sentAt });
    };
    clock.set(150);
    answer(sent[5] as number, 2); // the old window's last: 9 in flight may take those 2
    expect(limiter.peek('api').allowed).toBe(false);
    answer(sent[8] as number, 19); // sent later, counted in the new window: 19 left, 8 in flight
    answer(sent[1] as number, 5); // an answer of the old window, read late, is no newer word...
    answer(sent[9] as number, 18); // ...and the next of the new window says so
    // 18 left, the 6 in flight may take 6 of them: 12, once its own bucket (which the count of
    // 2 lowered) refilled. (Counts that only lowered held it at 0 until an answer came with
    // nothing in flight.)
    clock.set(180);
    expect(drain(limiter, 'api')).toBe(12);
    // Without a send time (a count of unknown age), a count only lowers.
    limiter.settle('api');
    limiter.feedback.observe('api', { kind: 'quota', remaining: 19 });
    expect(drain(limiter, 'api')).toBe(0);
  });

  it('keeps counting the permits in use after a wait that may be for one permit (a bucket)', () => {
    // Nothing named: the wait is the server's for its next permit, not a fresh window.
    const { clock, limiter } = setup(OWN);
    limiter.feedback.observe('api', { kind: 'start' });
    for (let i = 0; i < 10; i++) {
      limiter.tryAcquire('api');
      limiter.feedback.observe('api', { kind: 'answered', sentAt: i * 90 });
    }
    clock.set(900);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 100, sentAt: 900 });
    expect(limiter.policyOf('api').learned).toMatchObject({ limit: 10, source: 'rate' });
    clock.set(1_000);
    expect(limiter.tryAcquire('api').allowed).toBe(false);
  });

  /** A fresh key slow-started: `admitted` answers of requests sent `every` ms apart from `from`. */
  function burst(admitted: number, every: number, from = 0, own: PolicyInput = OWN) {
    const { clock, limiter } = setup(own);
    limiter.feedback.observe('api', { kind: 'start' });
    for (let i = 0; i < admitted; i++) {
      limiter.feedback.observe('api', { kind: 'answered', sentAt: from + i * every });
    }
    return { clock, limiter };
  }

  it('reads a whole-second wait as a window of whole seconds, not as the middle of that second', () => {
    // A slow start's burst, 20 sent in 190 ms; the 21st, sent at 220, refused at 250 with
    // `Retry-After: 1`: the window ends up to a second early of 1250, at 1000 or later.
    const { clock, limiter } = burst(20, 10);
    clock.set(250);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 1_000, sentAt: 220 });
    // The middle of the second read 20 per 750 ms: a third too fast.
    expect(limiter.policyOf('api').learned).toEqual({ limit: 20, windowMs: 1_000, source: 'rate' });
  });

  it('reads a refusal a few ms before its window ends as that window, not one and a half', () => {
    // A key paced a little too fast: 20 admitted over 893 ms, the 21st sent at 1940, refused at
    // 1960 with `Retry-After: 1` (the window had a few ms to go; the server rounds up).
    const { clock, limiter } = burst(20, 47, 1_000);
    clock.set(1_960);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 1_000, sentAt: 1_940 });
    // The middle of the second read 20 per 1460 ms: 0.68x.
    expect(limiter.policyOf('api').learned).toEqual({ limit: 20, windowMs: 1_000, source: 'rate' });
    // A window of 2 s on the same sample: Retry-After 2 s reads 2 s (1 s is not a whole
    // number of seconds past 940 + 2000 - 1000 - 20).
    const two = burst(20, 47, 1_000);
    two.clock.set(1_960);
    two.limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 2_000, sentAt: 1_940 });
    expect(two.limiter.policyOf('api').learned?.windowMs).toBe(2_000);
  });

  it('counts in its sample the requests admitted after the refusal: they were on their way', () => {
    // 15 of a burst of 20 answered before the refusal; 5 more (sent before it) after.
    const { clock, limiter } = burst(15, 10);
    clock.set(250);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 1_000, sentAt: 220 });
    expect(limiter.policyOf('api').learned).toEqual({ limit: 15, windowMs: 1_000, source: 'rate' });
    for (let i = 15; i < 20; i++) {
      limiter.feedback.observe('api', { kind: 'answered', sentAt: i * 10 });
    }
    const learned = limiter.policyOf('api').learned;
    expect(((learned?.limit ?? 0) / (learned?.windowMs ?? 1)) * 1_000).toBeCloseTo(20, 6);
    // An answer of a request sent after the refusal is the next sample's, not this one's.
    limiter.feedback.observe('api', { kind: 'answered', sentAt: 1_300 });
    expect(limiter.policyOf('api').learned).toEqual(learned);
  });

  /** Taught 20 per second by a burst and `Retry-After: 1`, then 3 s at the rate, all admitted. */
  function keptThreeSeconds(onStore: boolean) {
    const own: PolicyInput = { limit: 10_000, windowMs: 1_000, algorithm: slidingLog };
    const { clock, limiter } = burst(20, 10, 0, own);
    // A pacer hears every answer of the key (its permits settle); one on a store that learns no
    // rate for its clients (`sharesRates` false), only its own.
    limiter.answered = !onStore;
    clock.set(250);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 1_000, sentAt: 220 });
    const learned = limiter.policyOf('api').learned;
    for (let t = 1_250; t < 4_250; t += 10) {
      clock.set(t);
      if (!limiter.tryAcquire('api').allowed) continue;
      if (!onStore) limiter.settle('api');
      limiter.feedback.observe('api', { kind: 'answered', sentAt: t });
    }
    return { learned, after: limiter.policyOf('api').learned };
  }

  it('does not grow past its whole-second reading: no faster rate is a whole number of seconds', () => {
    const { learned, after } = keptThreeSeconds(false);
    expect(learned).toEqual({ limit: 20, windowMs: 1_000, source: 'rate' });
    expect(after).toEqual(learned);
  });

  it('grows toward an exact wait read by send times: the round trip is no part of the server window', () => {
    // 20 admitted, sent from 0; the 21st, sent at 150, refused at 250 after a 100 ms round trip,
    // to wait 770 ms more. Read until the refusal's answer, 20 per 1,020 ms, the rate it starts
    // at; by send times 20 per 920 ms, what it may grow to (within HEADROOM).
    const own: PolicyInput = { limit: 10_000, windowMs: 1_000, algorithm: slidingLog };
    const { clock, limiter } = burst(20, 7, 0, own);
    clock.set(250);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 770, sentAt: 150 });
    const learned = limiter.policyOf('api').learned;
    expect(learned?.limit).toBe(20);
    expect(learned?.windowMs).toBeCloseTo(1_020, 6);
    for (let t = 1_020; t < 5_020; t += 10) {
      clock.set(t);
      if (!limiter.tryAcquire('api').allowed) continue;
      limiter.settle('api');
      limiter.feedback.observe('api', { kind: 'answered', sentAt: t });
    }
    const grown = limiter.policyOf('api').learned;
    const perSecond = ((grown?.limit ?? 0) / (grown?.windowMs ?? 1)) * 1_000;
    // Read until the answer, the ceiling was 19.6 per second and HEADROOM of it below the rate.
    expect(perSecond).toBeGreaterThan(20);
    expect(perSecond).toBeLessThanOrEqual((20_000 / 920) * AIMD.HEADROOM + 1e-9);
  });

  it('grows past it on a store: its sample was its share, and the others may be done', () => {
    const { learned, after } = keptThreeSeconds(true);
    expect(learned).toEqual({ limit: 20, windowMs: 1_000, source: 'rate' });
    expect(after?.limit).toBe(20);
    expect(after?.windowMs).toBeLessThan(1_000 / 1.1);
  });

  /** A key taught 10 per 1 s at 500 ms by a refusal with a wait (10 admitted over 500 ms). */
  function taughtTenPerSecond() {
    const { clock, limiter } = setup(OWN);
    limiter.feedback.observe('api', { kind: 'start' });
    for (let i = 0; i < 10; i++)
      limiter.feedback.observe('api', { kind: 'answered', sentAt: i * 50 });
    clock.set(500);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 500, sentAt: 500 });
    return { clock, limiter, taught: limiter.policyOf('api').learned };
  }

  /** A key taught 10 per 1 s, then refused again at 1,500 ms. */
  function taughtThenRefused(admittedBetween: number, retryAfterMs: number) {
    const { clock, limiter, taught } = taughtTenPerSecond();
    for (let i = 0; i < admittedBetween; i++) {
      limiter.feedback.observe('api', { kind: 'answered', sentAt: 1_000 + i * 100 });
    }
    clock.set(1_500);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs, sentAt: 1_400 });
    return { taught, learned: limiter.policyOf('api').learned };
  }

  it('cuts a taught rate refused again with a one-permit wait before a sample was admitted', () => {
    // A bucket's wait for its next permit (Azure's retry-after-ms): the rate is too fast.
    const { taught, learned } = taughtThenRefused(2, 40);
    expect(taught).toEqual({ limit: 10, windowMs: 1_000, source: 'rate' });
    // 0.7 of the rate, counted over a second: 7 permits (see `paceAt` in refusals.ts).
    expect(learned).toMatchObject({ limit: 7, source: 'rate' });
    expect(learned?.windowMs).toBeCloseTo(1_000, 6);
  });

  /**
   * A key taught 10 per second, cut to 7 per second at 1,250 ms, then admitted `later` more
   * (sent after that cut, the last at 1,400) and refused again at 1,500 with a wait of
   * `retryAfterMs`.
   */
  function cutThenRefused(later: readonly number[], retryAfterMs = 50) {
    // The run of refusals starts with the one that taught the rate.
    const { clock, limiter } = taughtTenPerSecond();
    for (const sentAt of [1_000, 1_100])
      limiter.feedback.observe('api', { kind: 'answered', sentAt });
    clock.set(1_250);
    // Two admitted between: cut to 0.7, counted over a second (7 permits).
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 40, sentAt: 1_200 });
    expect(limiter.policyOf('api').learned).toMatchObject({ limit: 7, source: 'rate' });
    for (const sentAt of later) limiter.feedback.observe('api', { kind: 'answered', sentAt });
    clock.set(1_500);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs, sentAt: 1_450 });
    return limiter.policyOf('api').learned;
  }

  it('cuts no lower than what the server admitted while it kept refusing (a busy bucket admits its rate)', () => {
    // Three admitted since the run began, sent from 1,000, over 550 ms to this wait's end: 5.45
    // per second. Not 0.7 of 7 per second (4.9), but what the server served.
    const learned = cutThenRefused([1_400]);
    expect(learned).toMatchObject({ limit: 6, source: 'rate' });
    expect(learned?.windowMs).toBeCloseTo(6 / (3 / 550), 6);
  });

  it('changes nothing for a refusal while the server admitted at least the rate refused', () => {
    // The answer of a request sent before the cut is no sample's (an echo's time), yet the
    // server admitted it: five since the run began over 550 ms, 9.1 per second, faster than the
    // 7 refused. The server is busy with a debt from before, not refusing this rate.
    const learned = cutThenRefused([1_150, 1_300, 1_400]);
    expect(learned).toMatchObject({ limit: 7, source: 'rate' });
    expect(learned?.windowMs).toBeCloseTo(1_000, 6);
  });

  it('learns from the run of refusals when it admitted more, and faster, than the sample since the last one', () => {
    // After the cut, three admitted, sent from 1,300, over 500 ms to this wait's end: 6 per
    // second. The run since the refusal that taught the rate admitted five, sent from 1,000,
    // over 800 ms: 6.25 per second, the larger sample. Counted over a second: 7 per 1,120 ms.
    const learned = cutThenRefused([1_300, 1_350, 1_400], 300);
    expect(learned).toMatchObject({ limit: 7, source: 'rate' });
    expect(learned?.windowMs).toBeCloseTo(1_120, 6);
  });

  it('keeps a taught rate refused with nothing admitted since, or with a wait of a window', () => {
    // Nothing admitted: the server has not freed up (another client), the rate says nothing.
    expect(taughtThenRefused(0, 40).learned).toEqual({
      limit: 10,
      windowMs: 1_000,
      source: 'rate',
    });
    // A wait of a window or more holds the key long enough by itself.
    expect(taughtThenRefused(2, 1_000).learned).toEqual({
      limit: 10,
      windowMs: 1_000,
      source: 'rate',
    });
  });
});

// A pacer on a store hears only its own answers (`answered` false): the store counts the key's
// policy for every client, and only the client that opened the server's window is told
// `limit - 1` (the answer an inferred window, and so a confirmation, comes from).
describe("a pacer on a store and a count that names the key's own limit", () => {
  /** A key of 60 per second in a slow start, the limiter told whether it hears every answer. */
  function onStore(answered: boolean) {
    const { clock, limiter } = setup(perSecond(60));
    limiter.answered = answered;
    limiter.feedback.observe('api', { kind: 'start' });
    return { clock, limiter };
  }

  it('ends the slow start, where a pacer that hears every answer waits for the answer that opened a window', () => {
    const shared = onStore(false).limiter;
    // Another client's requests spent most of the server's window: 37 left of 60.
    shared.feedback.observe('api', { kind: 'quota', remaining: 37, limit: 60, sentAt: 0 });
    expect(shared.policyOf('api').learned).toBeUndefined();
    const alone = onStore(true).limiter;
    alone.feedback.observe('api', { kind: 'quota', remaining: 37, limit: 60, sentAt: 0 });
    expect(alone.policyOf('api').learned).toMatchObject({ source: 'start' });
    // Its own request opened the server's window (59 left): that confirms it, whether or not its
    // reset was fine enough to infer the window from (whole Unix seconds are not).
    alone.feedback.observe('api', { kind: 'quota', remaining: 59, limit: 60, sentAt: 0 });
    expect(alone.policyOf('api').learned).toBeUndefined();
    // A count naming another limit confirms nothing.
    const other = onStore(false).limiter;
    other.feedback.observe('api', { kind: 'quota', remaining: 37, limit: 100, sentAt: 0 });
    expect(other.policyOf('api').learned).toMatchObject({ source: 'start' });
  });

  it('learns no rate from its own admissions when refused with a wait: only the block', () => {
    const { clock, limiter } = onStore(false);
    limiter.feedback.observe('api', { kind: 'quota', remaining: 59, limit: 60, sentAt: 0 });
    // Its share of the server: 20 admitted over 1 s, while two others sent 40.
    for (let i = 0; i < 20; i++) {
      limiter.feedback.observe('api', { kind: 'answered', sentAt: i * 50 });
    }
    clock.set(1_000);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 1_000, sentAt: 990 });
    // Taught by them, the rate was 20 per 1.5 s: a third of what the store lets it send.
    expect(limiter.policyOf('api').learned).toBeUndefined();
    expect(limiter.feedback.blockedUntil('api')).toBe(2_000);
  });
});

describe('refused: AIMD for a server that says nothing of its policy', () => {
  const strike = (limiter: PacerLimiter, key: string) => {
    for (let i = 0; i < AIMD.STRIKES; i++) limiter.feedback.observe(key, { kind: 'refusal' });
  };
  /** A key of 1,000/s that saw 60 admitted at once, then a wall of refusals at 10 ms. */
  const afterWallOf60 = () => {
    const { clock, limiter } = setup(perSecond(1000));
    limiter.feedback.observe('a', { kind: 'start' });
    for (let i = 0; i < 60; i++) limiter.feedback.observe('a', { kind: 'answered', sentAt: 0 });
    clock.set(10);
    strike(limiter, 'a');
    return { clock, limiter };
  };
  /**
   * After the wall of 60, probes refused until the server's window ends at 1 s, then one
   * admitted: the spent window's sample sets the ceiling at its answer.
   */
  const spentWindowOf60 = () => {
    const key = afterWallOf60();
    const { clock, limiter } = key;
    while (clock.now() < 1_000) {
      clock.advance(limiter.peek('a').retryAfterMs);
      limiter.tryAcquire('a');
      limiter.feedback.observe('a', { kind: 'refusal', sentAt: clock.now() });
      clock.advance(1);
    }
    clock.advance(limiter.peek('a').retryAfterMs);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    limiter.feedback.observe('a', { kind: 'answered', sentAt: clock.now() });
    return key;
  };
  /** Takes every permit of `a` until `until`, each admitted and answered at once. */
  const sendAdmitted = (
    { clock, limiter }: ReturnType<typeof setup>,
    until: number,
    each: () => void = () => {},
  ) => {
    while (clock.now() < until) {
      const decision = limiter.tryAcquire('a');
      if (!decision.allowed) {
        clock.advance(decision.retryAfterMs);
        continue;
      }
      limiter.feedback.observe('a', { kind: 'answered', sentAt: clock.now() });
      each();
    }
  };

  it('shrugs off a lone refusal or two among admissions (jitter), and learns a rate at the third in a second', () => {
    const { clock, limiter } = setup(perSecond(100));
    limiter.feedback.observe('a', { kind: 'refusal' });
    limiter.feedback.observe('a', { kind: 'refusal' });
    expect(limiter.policyOf('a').learned).toBeUndefined();
    clock.set(500);
    limiter.feedback.observe('a', { kind: 'answered', sentAt: 490 });
    clock.set(AIMD.STRIKE_MS + 1);
    limiter.feedback.observe('a', { kind: 'refusal' });
    expect(limiter.policyOf('a').learned).toBeUndefined();
    strike(limiter, 'a');
    // The first rate is the sample's when slower than half the key's own: one admitted over
    // `SEED_MS`.
    expect(limiter.policyOf('a').learned).toMatchObject({ limit: 1, source: 'rate' });
    expect(limiter.policyOf('a').ratePerMs).toBeCloseTo(1 / AIMD.SEED_MS, 9);
  });

  it('learns a rate at the third refusal in a row however slowly they come, with nothing admitted between', () => {
    // A server of one per 5 s refused a call's three sends over 1.8 s: no jitter does that.
    const { clock, limiter } = setup(perSecond(100));
    limiter.feedback.observe('a', { kind: 'refusal' });
    clock.set(2_000);
    limiter.feedback.observe('a', { kind: 'refusal' });
    expect(limiter.policyOf('a').learned).toBeUndefined();
    clock.set(5_000);
    limiter.feedback.observe('a', { kind: 'refusal' });
    expect(limiter.policyOf('a').learned).toEqual({ limit: 1, windowMs: 20, source: 'rate' });
  });

  it('learns no rate for a server that never admitted the key: its refusals are not a pace to find', () => {
    const { clock, limiter } = setup(perSecond(100));
    limiter.feedback.observe('a', { kind: 'start' });
    strike(limiter, 'a');
    // The slow start heard every answer of the key since its first call: none was admitted.
    expect(limiter.policyOf('a').learned?.source).toBe('start');
    // Once one is, three refusals in a second teach a rate again.
    clock.set(2_000);
    limiter.feedback.observe('a', { kind: 'answered', sentAt: 1_990 });
    strike(limiter, 'a');
    expect(limiter.policyOf('a').learned?.source).toBe('rate');
  });

  it('drops the rate at a refusal once the server admitted nothing of the key for ADMITTED_MS', () => {
    const { clock, limiter } = setup(perSecond(100));
    // A configured key is heard from its first refusal on: what came before may have been admitted.
    strike(limiter, 'a');
    expect(limiter.policyOf('a').learned?.source).toBe('rate');
    clock.set(AIMD.ADMITTED_MS - 1_000);
    limiter.feedback.observe('a', { kind: 'answered', sentAt: clock.now() - 10 });
    clock.set(2 * AIMD.ADMITTED_MS - 1_000);
    limiter.feedback.observe('a', { kind: 'refusal', sentAt: clock.now() - 10 });
    expect(limiter.policyOf('a').learned?.source).toBe('rate');
    clock.set(2 * AIMD.ADMITTED_MS);
    limiter.feedback.observe('a', { kind: 'refusal', sentAt: clock.now() - 10 });
    expect(limiter.policyOf('a').learned).toBeUndefined();
    // Nor learned again while the server admits nothing: the key is back on its own policy.
    clock.set(2 * AIMD.ADMITTED_MS + 100);
    strike(limiter, 'a');
    expect(limiter.policyOf('a').learned).toBeUndefined();
    expect(limiter.policyOf('a').ratePerMs).toBeCloseTo(0.1, 9);
  });

  it('starts at the rate the server admitted, over at least SEED_MS, when that is slower than half its own', () => {
    const { clock, limiter } = setup(perSecond(1000));
    limiter.feedback.observe('a', { kind: 'start' });
    // A slow start's burst: 30 admitted in 300 ms, then refusals.
    for (let i = 0; i < 30; i++)
      limiter.feedback.observe('a', { kind: 'answered', sentAt: i * 10 });
    clock.set(300);
    strike(limiter, 'a');
    // 30 per second (not per 300 ms, nor half of 1,000 per second).
    expect(limiter.policyOf('a').learned?.windowMs).toBeCloseTo(1000 / 30, 5);
    // A longer sample is its own rate: 30 over 3 s, 10 per second.
    const other = setup(perSecond(1000));
    other.limiter.feedback.observe('b', { kind: 'start' });
    for (let i = 0; i < 30; i++)
      other.limiter.feedback.observe('b', { kind: 'answered', sentAt: i * 100 });
    other.clock.set(3_000);
    strike(other.limiter, 'b');
    expect(other.limiter.policyOf('b').learned?.windowMs).toBeCloseTo(100, 5);
  });

  it('starts at the rate the server admitted when it admitted only one or two, not at half a ceiling no API reaches', () => {
    // Zero configuration's own policy (a million per second): half of it paused 2 us after a
    // refusal, and a server of 2 per 250 ms refused one call's 20 sends within 22 ms.
    const { clock, limiter } = setup({ limit: 1_000_000, windowMs: 1_000 });
    limiter.feedback.observe('a', { kind: 'start' });
    limiter.feedback.observe('a', { kind: 'answered', sentAt: 0 });
    limiter.feedback.observe('a', { kind: 'answered', sentAt: 0 });
    strike(limiter, 'a');
    // 2 over SEED_MS: 2 per second, which grows while the server admits it.
    expect(limiter.policyOf('a').learned).toEqual({ limit: 1, windowMs: 500, source: 'rate' });
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: false, retryAfterMs: 500 });
    clock.set(500);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
  });

  it('after a refusal, pauses one permit, then sends one probe alone until its answer', () => {
    const { clock, limiter } = setup(perSecond(100));
    strike(limiter, 'a');
    // Refusals of requests sent before the cut are echoes: nothing changes.
    limiter.feedback.observe('a', { kind: 'refusal', sentAt: 0 });
    expect(limiter.policyOf('a').learned?.windowMs).toBe(20);
    expect(limiter.tryAcquire('a')).toMatchObject({ allowed: false, retryAfterMs: 20 });
    clock.set(20);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    // The probe is out: nothing more goes until it is answered, whatever the rate refilled.
    clock.set(60);
    const held = limiter.tryAcquire('a');
    expect(held.allowed).toBe(false);
    expect(held.retryAfterMs).toBeGreaterThan(900);
    limiter.feedback.observe('a', { kind: 'answered', sentAt: 20 });
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    // A probe whose answer never comes holds the key PROBE_WAIT_MS at most.
    const other = setup(perSecond(100));
    strike(other.limiter, 'b');
    other.clock.set(20);
    expect(other.limiter.tryAcquire('b').allowed).toBe(true);
    other.clock.set(20 + AIMD.PROBE_WAIT_MS - 1);
    expect(other.limiter.tryAcquire('b').allowed).toBe(false);
    other.clock.set(20 + AIMD.PROBE_WAIT_MS);
    expect(other.limiter.tryAcquire('b').allowed).toBe(true);
  });

  it('a refused probe (a window still spent) pauses PAUSE_GROWTH times longer, up to MAX_PAUSE_MS, and keeps the rate', () => {
    const { clock, limiter } = setup(perSecond(100));
    strike(limiter, 'a');
    const gaps: number[] = [];
    let last = 0;
    for (let i = 0; i < 30; i++) {
      clock.advance(limiter.peek('a').retryAfterMs);
      expect(limiter.tryAcquire('a').allowed).toBe(true);
      gaps.push(clock.now() - last);
      const sentAt = clock.now();
      clock.advance(5);
      limiter.feedback.observe('a', { kind: 'refusal', sentAt });
      // A slow answer to a request sent before the wall: the server admits the key (past
      // ADMITTED_MS without one the rate would be dropped), yet the streak of probes goes on.
      limiter.feedback.observe('a', { kind: 'answered', sentAt: 0 });
      last = clock.now();
    }
    // From each refusal to the next probe: one permit (20 ms), then PAUSE_GROWTH times more each.
    expect(gaps[0]).toBe(20);
    expect(gaps[1]).toBeCloseTo(20 * AIMD.PAUSE_GROWTH, 0);
    expect(gaps[2]).toBeCloseTo(20 * AIMD.PAUSE_GROWTH ** 2, 0);
    expect(Math.max(...gaps)).toBe(AIMD.MAX_PAUSE_MS);
    expect(gaps.at(-1)).toBe(AIMD.MAX_PAUSE_MS);
    // The rate was not cut: nothing the server admitted says it was too fast.
    expect(limiter.policyOf('a').learned?.windowMs).toBe(20);
    // An admitted probe ends the streak: the next refusal pauses one permit again.
    clock.advance(limiter.peek('a').retryAfterMs);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    limiter.feedback.observe('a', { kind: 'answered', sentAt: clock.now() });
    clock.advance(AIMD.HOLD_MS);
  });

  it('a refusal after an admitted probe cuts to what the server admitted (its ceiling), once per HOLD_MS', () => {
    // Configured to 1,000/s, taught 50/s by a sample; the server admits 40/s.
    const { clock, limiter } = setup(perSecond(1000));
    limiter.feedback.observe('a', { kind: 'start' }); // as a paced fetch does: the sample counts from here
    for (let i = 0; i < 50; i++)
      limiter.feedback.observe('a', { kind: 'answered', sentAt: i * 20 });
    clock.set(1_000);
    strike(limiter, 'a');
    expect(limiter.policyOf('a').ratePerMs).toBeCloseTo(0.05, 9);
    // Every permit admitted and answered at once for 3 s, but only 40/s of them (the rest of
    // the time the key sends nothing), then a refusal.
    let admitted = 0;
    while (clock.now() < 4_000) {
      clock.advance(Math.max(25, limiter.peek('a').retryAfterMs));
      if (!limiter.tryAcquire('a').allowed) continue;
      admitted++;
      limiter.feedback.observe('a', { kind: 'answered', sentAt: clock.now() });
    }
    const grown = limiter.policyOf('a').ratePerMs;
    const sentAt = clock.now();
    expect(limiter.tryAcquire('a').allowed).toBe(false); // paced at 40/s here, not at its rate
    clock.advance(1);
    limiter.feedback.observe('a', { kind: 'refusal', sentAt });
    const cut = limiter.policyOf('a').ratePerMs;
    expect(admitted).toBeGreaterThan(110);
    // The ceiling is the rate heard (about 40/s), the rate HEADROOM of it.
    expect(cut * 1000).toBeGreaterThan(0.95 * 36);
    expect(cut * 1000).toBeLessThan(0.95 * 41);
    // Sent slower than its rate (40/s, paced by the caller), it did not grow meanwhile.
    expect(grown).toBeLessThan(0.055);
    // A refusal of a request sent within HOLD_MS of the cut pauses, but cuts nothing more.
    clock.advance(limiter.peek('a').retryAfterMs);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    limiter.feedback.observe('a', { kind: 'answered', sentAt: clock.now() });
    clock.advance(limiter.peek('a').retryAfterMs);
    const again = clock.now();
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    clock.advance(1);
    limiter.feedback.observe('a', { kind: 'refusal', sentAt: again });
    expect(limiter.policyOf('a').ratePerMs).toBeCloseTo(cut, 6);
  });

  it('grows back toward HEADROOM of its own rate (refused there), never faster than doubling, and is dropped once RAISE_MS lifted that ceiling past it', () => {
    const { clock, limiter } = setup(perSecond(100));
    strike(limiter, 'a');
    const rateAt = (ms: number) => {
      while (clock.now() < ms) {
        const decision = limiter.tryAcquire('a');
        if (decision.allowed)
          limiter.feedback.observe('a', { kind: 'answered', sentAt: clock.now() });
        else clock.advance(decision.retryAfterMs);
      }
      return (limiter.policyOf('a').learned?.windowMs ?? 0) > 0
        ? 1000 / (limiter.policyOf('a').learned?.windowMs as number)
        : undefined;
    };
    // From 50/s: doubling would reach 100/s in one DOUBLE_MS; it stops at 95/s.
    expect(rateAt(AIMD.DOUBLE_MS / 2)).toBeLessThanOrEqual(50 * Math.SQRT2 + 0.5);
    const soon = rateAt(3_000) as number;
    expect(soon).toBeGreaterThan(90);
    expect(soon).toBeLessThanOrEqual(100 * AIMD.HEADROOM);
    expect(rateAt(AIMD.RAISE_MS - 100)).toBeCloseTo(100 * AIMD.HEADROOM, 0);
    // RAISE_MS without a refusal: the ceiling rises by a tenth, past its own rate: dropped.
    expect(rateAt(AIMD.RAISE_MS + 2_000)).toBeUndefined();
    // Dropped at its own rate: bursts of its own policy again.
    clock.advance(1000);
    expect(drain(limiter, 'a')).toBe(100);
  });

  it('hands the key back to its own policy with nothing saved: no burst of what its own bucket refilled while the learned rate held it', () => {
    const { clock, limiter } = setup(perSecond(100));
    strike(limiter, 'a');
    let taken = 0;
    while (limiter.policyOf('a').learned !== undefined && clock.now() < 3 * AIMD.RAISE_MS) {
      const decision = limiter.tryAcquire('a');
      if (decision.allowed) {
        taken++;
        limiter.feedback.observe('a', { kind: 'answered', sentAt: clock.now() });
      } else clock.advance(decision.retryAfterMs);
    }
    expect(limiter.policyOf('a').learned).toBeUndefined();
    // Not vacuous: the learned rate held the key (at 50-95/s) while its bucket of 100 refilled.
    expect(taken).toBeGreaterThan(500);
    // At its own rate from an empty bucket: one permit per 10 ms, as the server just saw.
    expect(drain(limiter, 'a')).toBeLessThanOrEqual(1);
    clock.advance(100);
    expect(drain(limiter, 'a')).toBeLessThanOrEqual(11);
  });

  it('admitted only after refused probes (a window that was spent), keeps below its sample, raises that ceiling by RAISE after RAISE_MS, and by more each DOUBLE_MS after while nothing refuses', () => {
    // 60 admitted at once, then refusals: 60 per second (at least SEED_MS of sample).
    const key = spentWindowOf60();
    const { clock, limiter } = key;
    const start = clock.now();
    const rates: { at: number; perSecond: number }[] = [];
    sendAdmitted(key, start + AIMD.RAISE_MS + 4 * AIMD.DOUBLE_MS, () =>
      rates.push({ at: clock.now() - start, perSecond: limiter.policyOf('a').ratePerMs * 1000 }),
    );
    const fastest = (before: number) =>
      Math.max(...rates.filter(({ at }) => at < before).map(({ perSecond }) => perSecond));
    // Not looking for more than the sample said, until RAISE_MS passed...
    expect(fastest(AIMD.RAISE_MS - 10)).toBeLessThanOrEqual(60 * AIMD.HEADROOM + 1e-9);
    expect(Math.min(...rates.map(({ perSecond }) => perSecond))).toBeGreaterThan(50);
    // ...then a tenth more, for DOUBLE_MS...
    const raised = 60 * AIMD.RAISE * AIMD.HEADROOM;
    expect(fastest(AIMD.RAISE_MS + AIMD.DOUBLE_MS - 10)).toBeGreaterThan(60 * AIMD.HEADROOM + 3);
    expect(fastest(AIMD.RAISE_MS + AIMD.DOUBLE_MS - 10)).toBeLessThanOrEqual(raised + 1e-9);
    // ...then, nothing refused, RAISE squared more, cubed the next DOUBLE_MS: the ceiling
    // runs ahead, and the rate follows, never faster than doubling.
    expect(fastest(AIMD.RAISE_MS + 2 * AIMD.DOUBLE_MS)).toBeGreaterThan(raised * 1.1);
    expect(fastest(AIMD.RAISE_MS + 4 * AIMD.DOUBLE_MS)).toBeGreaterThan(
      raised * AIMD.RAISE ** 2 * AIMD.RAISE ** 3 * 0.9,
    );
  });

  it('holds a spent window’s sample for HOLD_MS: a refusal of a request sent right after the admitted probe (the server still counts the burst) cuts nothing', () => {
    // A sliding log of 60 per second after a burst of 60: each entry frees one permit a
    // window after it, so the permit after the admitted probe is refused (measure:bare, seed 9:
    // the cut read the probes' quiet second as the ceiling, 34 per second, for RAISE_MS).
    const { clock, limiter } = spentWindowOf60();
    const sampled = limiter.policyOf('a').ratePerMs * 1000;
    expect(sampled).toBeCloseTo(60 * AIMD.HEADROOM, 6);
    clock.advance(limiter.peek('a').retryAfterMs);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    const sentAt = clock.now();
    clock.advance(30);
    limiter.feedback.observe('a', { kind: 'refusal', sentAt });
    expect(limiter.policyOf('a').ratePerMs * 1000).toBeCloseTo(sampled, 6);
  });

  it('does not cut a policy the server advertised, and an advertised one replaces a rate', () => {
    const { limiter } = setup(perSecond(100));
    limiter.feedback.observe('a', { kind: 'policy', remaining: 10, limit: 10, windowMs: 1000 });
    strike(limiter, 'a');
    expect(limiter.policyOf('a').learned?.source).toBe('server');
    strike(limiter, 'b');
    limiter.feedback.observe('b', { kind: 'policy', remaining: 10, limit: 10, windowMs: 1000 });
    expect(limiter.policyOf('b').learned).toEqual({
      limit: 10,
      windowMs: 1000,
      source: 'server',
    });
  });

  it('takes one refused probe for jitter, not for a spent window: the sample is no ceiling then', () => {
    const key = afterWallOf60();
    const { clock, limiter } = key;
    // One probe refused (it met requests sent before the wall at the server), the next admitted.
    clock.advance(limiter.peek('a').retryAfterMs);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    limiter.feedback.observe('a', { kind: 'refusal', sentAt: clock.now() });
    clock.advance(1);
    clock.advance(limiter.peek('a').retryAfterMs);
    expect(limiter.tryAcquire('a').allowed).toBe(true);
    limiter.feedback.observe('a', { kind: 'answered', sentAt: clock.now() });
    sendAdmitted(key, clock.now() + 1_500);
    // It looks for more than the sample's 60/s (doubling: about 170/s after 1.5 s).
    expect(limiter.policyOf('a').ratePerMs * 1000).toBeGreaterThan(120);
  });

  it('takes the key over from the backoff the strikes before it earned, not from a wait the server stated', () => {
    const { limiter } = setup(perSecond(100));
    limiter.feedback.blockUntil('a', 900); // a paced fetch's backoff after the first two refusals
    strike(limiter, 'a');
    expect(limiter.feedback.blockedUntil('a')).toBeUndefined();
    limiter.feedback.observe('b', { kind: 'refusal', retryAfterMs: 900 });
    strike(limiter, 'b');
    expect(limiter.feedback.blockedUntil('b')).toBe(900);
  });

  it.each([
    { scheme: 'gcra', burst: 10, countsRefused: false },
    { scheme: 'sliding-window', burst: undefined, countsRefused: true },
    { scheme: 'fixed-window', burst: undefined, countsRefused: false },
    { scheme: 'sliding-log', burst: undefined, countsRefused: false },
  ] as const)(
    'finds the rate of a $scheme server that says nothing: 0.9x of it after two windows, few refusals after five',
    ({ scheme, burst, countsRefused }) => {
      // 40 per second; the client is configured to 400 and floods first.
      const server = schemeCounter({
        scheme,
        limit: 40,
        windowMs: 1_000,
        countsRefused,
        ...(burst === undefined ? {} : { burst }),
      });
      const { clock, limiter } = setup(perSecond(400));
      limiter.feedback.observe('a', { kind: 'start' }); // a paced fetch's key starts slow
      const admittedAt: number[] = [];
      const refusedAt: number[] = [];
      while (clock.now() < 20_000) {
        const decision = limiter.tryAcquire('a');
        if (!decision.allowed) {
          clock.advance(decision.retryAfterMs);
          continue;
        }
        const sentAt = clock.now();
        // Answered 2 ms after the send (the next permit is not due before), its permit settled
        // first, as a pacer does at the end of its task.
        limiter.settle('a');
        if (server(sentAt).admitted) {
          admittedAt.push(sentAt);
          limiter.feedback.observe('a', { kind: 'answered', sentAt });
        } else {
          refusedAt.push(sentAt);
          limiter.feedback.observe('a', { kind: 'refusal', sentAt });
        }
        clock.advance(2);
      }
      const after = admittedAt.filter((at) => at >= 2_000).length;
      expect(after / 18).toBeGreaterThan(0.9 * 40);
      // After five windows, refusals only where the ceiling rises (RAISE_MS apart), a few each.
      const late = refusedAt.filter((at) => at >= 5_000);
      expect(late.length).toBeLessThanOrEqual(3 * Math.ceil(15_000 / AIMD.RAISE_MS));
      // Refusals are counted ones: the first wall is cut short, later windows cost a handful.
      expect(refusedAt.length).toBeLessThan(60);
    },
  );
});

describe('keys that learn nothing', () => {
  it('decide exactly as before: the same decisions as a limiter that never heard of learning', () => {
    const policy: Policy = { limit: 5, windowMs: 1000, algorithm: gcra };
    const a = setup(policy);
    const b = setup(policy);
    a.limiter.feedback.observe('other', { kind: 'policy', remaining: 1, limit: 1, windowMs: 1000 });
    for (let t = 0; t < 3000; t += 37) {
      a.clock.set(t);
      b.clock.set(t);
      expect(a.limiter.tryAcquire('k')).toEqual(b.limiter.tryAcquire('k'));
    }
  });
});

describe('a window inferred from a reset that opens three times within itself', () => {
  /**
   * A key of 1,000/s that sends one request at each of `sends` and hears, 20 ms later, 5 of 6
   * left with a reset of a whole second (the answer that opens a window of 6 per second).
   */
  function opening(sends: readonly number[], answered = true) {
    const setupped = setup(perSecond(1000));
    const { clock, limiter } = setupped;
    // A pacer's, which hears every answer (a store's clients keep the window).
    limiter.answered = answered;
    for (const sentAt of sends) {
      clock.set(sentAt);
      expect(limiter.tryAcquire('api').allowed).toBe(true);
      clock.set(sentAt + 20);
      limiter.feedback.observe('api', {
        kind: 'policy',
        limit: 6,
        windowMs: 1000,
        remaining: 5,
        resetMs: 1000,
        inferred: true,
        sentAt,
      });
      limiter.settle('api');
    }
    return setupped;
  }

  it('stays a window while each opens a window after the last (a fixed window, paced)', () => {
    const { limiter } = opening([0, 990, 1990, 2990]);
    expect(limiter.policyOf('api').learned).toEqual({ limit: 6, windowMs: 1000, source: 'server' });
  });

  it("stays a window for a store's client, which does not hear every answer", () => {
    const { limiter } = opening([0, 200, 400], false);
    expect(limiter.policyOf('api').learned).toEqual({ limit: 6, windowMs: 1000, source: 'server' });
  });

  it('is a bucket that deep, paced by its counts, once three open within one window', () => {
    const { clock, limiter } = opening([0, 200, 400]);
    // Full again at each, so a permit refilled at least over the 420 ms from the first send to
    // the last answer: a window of 6 permits is at most 6 x 420 ms; paced at a tenth faster, as
    // the last was sent right after the one before and found it full.
    expect(limiter.policyOf('api').learned).toEqual({
      limit: 6,
      windowMs: 2520 / 1.1,
      source: 'server',
    });
    // The last count is room: 5 left, less the request in flight when it came.
    expect(drain(limiter, 'api')).toBe(4);
    // Counts, not the whole-second reset, from here: a count of 0 blocks nothing (a window's
    // would block until its reset), and 3 left with nothing in flight is room for 3.
    clock.set(500);
    limiter.feedback.observe('api', {
      kind: 'quota',
      limit: 6,
      remaining: 0,
      resetMs: 1000,
      sentAt: 480,
    });
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, reason: 'rate' });
    limiter.settle('api', 4);
    clock.set(600);
    limiter.feedback.observe('api', {
      kind: 'quota',
      limit: 6,
      remaining: 3,
      resetMs: 1000,
      sentAt: 590,
    });
    expect(drain(limiter, 'api')).toBe(3);
  });
});

describe("a key that starts slow and a bucket's counts", () => {
  /** A key of 1,000/s (or `own`) starting slow, told `counts` of 15 at sends 60 ms apart. */
  function counted(counts: readonly number[], own = perSecond(1000)) {
    const setupped = setup(own);
    const { clock, limiter } = setupped;
    limiter.answered = true;
    limiter.feedback.observe('api', { kind: 'start' });
    counts.forEach((remaining, i) => {
      clock.set(i * 60);
      expect(limiter.tryAcquire('api').allowed).toBe(true);
      clock.set(i * 60 + 30);
      limiter.feedback.observe('api', {
        kind: 'quota',
        limit: 15,
        remaining,
        resetMs: 1000,
        sentAt: i * 60,
      });
      limiter.settle('api');
    });
    return setupped;
  }

  it('is paced by them once five within a second left all but two (redis-gcra at 60/s)', () => {
    // redis-gcra's float arithmetic says 13 of a full bucket of 15: never `limit - 1`, so no
    // window is inferred, and the slow start held the key (0.31x of its rate, for good).
    const { limiter } = counted([13, 13, 13, 13]);
    expect(limiter.policyOf('api').learned?.source).toBe('start');
    const { limiter: found } = counted([13, 13, 13, 13, 13]);
    expect(found.policyOf('api').learned).toMatchObject({ limit: 15, source: 'server' });
  });

  it('is not a window whose counts fall (a fixed window of 15 opened by the first)', () => {
    const { limiter } = counted([14, 13, 12, 11, 10, 9, 8]);
    expect(limiter.policyOf('api').learned?.source).toBe('start');
  });

  it("keeps the key's own policy when it names the same limit", () => {
    const { limiter } = counted([13, 13, 13, 13, 13], perSecond(15));
    expect(limiter.policyOf('api').learned?.source).not.toBe('server');
  });
});

describe("a rate a refusal taught and a bucket's counts", () => {
  it('is paced by them once five within its window left all but two', () => {
    const { clock, limiter } = setup(perSecond(1000));
    limiter.answered = true;
    limiter.feedback.observe('api', { kind: 'start' });
    // A slow start spends a bucket of 15 (redis-gcra's counts, 13 when full) in 20 ms, and
    // its next request is refused with a whole-second `Retry-After`.
    const answer = (sentAt: number, remaining: number) => {
      clock.set(sentAt + 2);
      limiter.feedback.observe('api', { kind: 'quota', limit: 15, remaining, sentAt });
      limiter.feedback.observe('api', { kind: 'answered', sentAt });
      limiter.settle('api');
    };
    for (let i = 0; i < 15; i++) {
      clock.set(i);
      limiter.tryAcquire('api');
      answer(i, Math.max(0, 13 - i));
    }
    clock.set(20);
    limiter.tryAcquire('api');
    clock.set(22);
    limiter.feedback.observe('api', { kind: 'refusal', retryAfterMs: 1000, sentAt: 20 });
    limiter.settle('api');
    expect(limiter.policyOf('api').learned).toMatchObject({ limit: 15, source: 'rate' });
    // Paced by that rate after the block, the bucket is full again at each.
    for (let i = 0; i < 5; i++) {
      const sentAt = 1022 + i * 70;
      clock.set(sentAt);
      expect(limiter.tryAcquire('api').allowed).toBe(true);
      answer(sentAt, 13);
    }
    expect(limiter.policyOf('api').learned).toMatchObject({ limit: 15, source: 'server' });
  });
});
