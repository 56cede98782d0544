import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  arrivalSafe,
  createPacer,
  createRateLimiter,
  perMinute,
  perSecond,
} from '../../src/index.js';
import { ArrivalSafe } from '../../src/core/algorithms/arrival-safe.js';
import { createPacerLimiter } from '../../src/core/pacer-limiter.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { createManualClock } from '../../src/testing/index.js';

const SAFE = { algorithm: arrivalSafe } as const;

function setup(limit: number, burst?: number) {
  const clock = createManualClock();
  const policy = perSecond(limit, burst === undefined ? SAFE : { ...SAFE, burst });
  return { clock, limiter: createRateLimiter({ limits: policy, clock }) };
}

describe("the 'arrival-safe' algorithm", () => {
  it('sends the first window at once, then one per windowMs / limit, a window and 1 ms after the answers', () => {
    const { clock, limiter } = setup(4);
    for (let i = 0; i < 4; i++) expect(limiter.tryAcquire('api').allowed).toBe(true);
    clock.set(20); // the four answers arrive
    limiter.settle('api', 4);
    // The log holds them until 20 + 1000 + 1; the spacing credit refilled long before.
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, retryAfterMs: 1001 });
    clock.set(1021);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    limiter.settle('api');
    // The next one is spaced, not a second burst: a sliding-window counter would refuse it.
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, retryAfterMs: 250 });
    clock.set(1271);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
  });

  it("lets the first window's unspent credit lapse when that window ends", () => {
    // 2 of 5 in the first window, 5 more a window later: a sliding-window counter still weighs
    // the first 2 then (2 * 0.6 + 4 >= 5 at 1400), so the 3 unspent may not go at once.
    const { clock, limiter } = setup(5);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    limiter.settle('api', 2); // answered at 0
    clock.set(1_002);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, retryAfterMs: 200 });
    // Within the first window, its credit is the first window's: the rest at once at the first
    // answer (a key's first request waits for it), and after a short pause.
    const fresh = setup(5);
    fresh.limiter.tryAcquire('api');
    fresh.clock.set(176);
    fresh.limiter.settle('api', 1);
    for (let i = 0; i < 2; i++) expect(fresh.limiter.tryAcquire('api').allowed).toBe(true);
    fresh.clock.set(176 + 80); // 3 taken x 80 ms x 2 < a window
    for (let i = 0; i < 2; i++) expect(fresh.limiter.tryAcquire('api').allowed).toBe(true);
  });

  it('lets the first window’s credit lapse after a pause, when what went before could still weigh in the server’s next window', () => {
    // 2 of 5 at 0, answered; 3 more at once at 999 might arrive after a sliding-window
    // counter's window turned, next to the 2 it still weighs; the permits freed when the 2 are
    // a window old would then be refused (2 x 0.6 + 4 >= 5 at 1400). A pause of 2 x 999 ms >=
    // half a window: spaced from there.
    const { clock, limiter } = setup(5);
    limiter.tryAcquire('api');
    limiter.tryAcquire('api');
    limiter.settle('api', 2);
    clock.set(999);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, retryAfterMs: 200 });
  });

  it('counts a permit in flight until its answer: the wait behind it is a window at least', () => {
    const { clock, limiter } = setup(2);
    limiter.tryAcquire('api');
    limiter.tryAcquire('api');
    clock.set(5_000); // no answer yet, however long it takes
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, retryAfterMs: 1000 });
    limiter.settle('api'); // one answer at 5000: its permit counts until 6001
    clock.set(6_000);
    expect(limiter.tryAcquire('api').allowed).toBe(false);
    clock.set(6_001);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
  });

  it('tells what a policy replacing it starts with: over no window, only the permits in flight', () => {
    // A bucket found by its counts replaces the key's learned window at the answer of a request
    // (`countsShowBucket`): that request, answered just now, is in flight no more. Counted as
    // open, it held one permit of the bucket's room for good (redis-gcra-like, 5 at 60 per
    // second, 1-3 ms away: 0.73-0.75x of its rate after two windows).
    const state = new ArrivalSafe(resolvePolicy({ limit: 10, windowMs: 1_000, ...SAFE }));
    for (let i = 0; i < 3; i++) state.tryAcquire(0, 1);
    state.settle(20, 2);
    expect(state.inUse(20, 0)).toBe(1);
    expect(state.inUse(20, 500)).toBe(3);
    expect(state.inUse(600, 500)).toBe(1);
  });

  it('is fresh again after two quiet windows, and a burst lets that many through at any time', () => {
    const { clock, limiter } = setup(4);
    for (let i = 0; i < 4; i++) limiter.tryAcquire('api');
    limiter.settle('api', 4);
    clock.set(1_999);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    limiter.settle('api');
    expect(limiter.tryAcquire('api').allowed).toBe(false);
    clock.set(1_999 + 2_000);
    expect(limiter.evictIdle()).toBe(1);
    for (let i = 0; i < 4; i++) expect(limiter.tryAcquire('api').allowed).toBe(true);

    const bursty = setup(4, 2);
    // With a burst, a fresh state sends that many at once (a GCRA server admits no more).
    const taken = Array.from({ length: 4 }, () => bursty.limiter.tryAcquire('api').allowed);
    expect(taken).toEqual([true, true, false, false]);
    bursty.limiter.settle('api', 4);
    bursty.clock.set(1_001);
    expect(bursty.limiter.tryAcquire('api').allowed).toBe(true);
    expect(bursty.limiter.tryAcquire('api').allowed).toBe(true);
    expect(bursty.limiter.tryAcquire('api').allowed).toBe(false);
  });

  it('with a burst, counts the answers as a GCRA server counts arrivals that came late', () => {
    // 10 per second with a burst of 3: a GCRA admits no span of time holding more than
    // span / 100 ms + 3 arrivals. Three go at once; the first is answered at 80, so it may have
    // arrived at 80, and the two still open may arrive at any time after: a fourth sent at 100
    // (when the spacing credit of one interval has refilled) could meet all three within 20 ms.
    const { clock, limiter } = setup(10, 3);
    for (let i = 0; i < 3; i++) expect(limiter.tryAcquire('api').allowed).toBe(true);
    clock.set(50);
    // Behind answers still to come: the next answer frees it, an interval at the earliest.
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, retryAfterMs: 100 });
    clock.set(80);
    limiter.settle('api');
    clock.set(100);
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, retryAfterMs: 80 });
    clock.set(179);
    expect(limiter.tryAcquire('api').allowed).toBe(false);
    clock.set(180);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
  });

  it('takes a burst of at most its limit, and ignores answers of permits it never gave', () => {
    expect(() => perSecond(4, { algorithm: arrivalSafe, burst: 5 })).toThrow(
      /`burst`.*at most `limit` \(4\).*`5`/,
    );
    const { limiter } = setup(2);
    limiter.settle('api', 3);
    limiter.settle('nobody');
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    limiter.settle('api', 5);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    expect(limiter.tryAcquire('api').allowed).toBe(false);
  });

  it('in a pacer, counts a task from its start to its end, and a permit taken by hand at once', async () => {
    const clock = createManualClock();
    const pacer = createPacer({ limits: perSecond(1, SAFE), clock });
    let finish: () => void = () => {};
    const first = pacer.schedule(() => new Promise<void>((resolve) => (finish = resolve)));
    const second = pacer.schedule(() => 'second');
    await clock.advanceAsync(3_000);
    expect(pacer.inspect('default').queued).toBe(1); // the first task has not ended
    finish();
    await first;
    await clock.advanceAsync(1_000);
    expect(pacer.inspect('default').queued).toBe(1);
    await clock.advanceAsync(1);
    await expect(second).resolves.toBe('second');
    clock.set(10_000);
    expect(pacer.tryAcquire('default').allowed).toBe(true);
    clock.set(11_001);
    expect(pacer.tryAcquire('default').allowed).toBe(true);
  });

  it('never lets more than `limit` arrive in any window, whatever each request takes on the way', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 50, max: 2_000 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 400 })), {
          minLength: 1,
          maxLength: 60,
        }),
        (limit, windowMs, trips) => {
          const clock = createManualClock();
          const limiter = createRateLimiter({
            limits: { limit, windowMs, ...SAFE },
            clock,
          });
          // Each request goes at the first ms the limiter allows, arrives after its own delay
          // and is answered after another; the answers settle in time order.
          const answers: number[] = [];
          const arrivals: number[] = [];
          for (const [there, back] of trips) {
            for (;;) {
              const due = answers.filter((at) => at <= clock.now()).length;
              for (let i = 0; i < due; i++) limiter.settle('api');
              answers.splice(0, due);
              const decision = limiter.tryAcquire('api');
              if (decision.allowed) break;
              const next = Math.min(clock.now() + decision.retryAfterMs, answers[0] ?? Infinity);
              clock.set(Math.max(next, clock.now() + 1));
            }
            arrivals.push(clock.now() + there);
            answers.push(clock.now() + there + back);
            answers.sort((a, b) => a - b);
          }
          arrivals.sort((a, b) => a - b);
          for (let i = limit; i < arrivals.length; i++) {
            // A sliding log counting arrivals: the one `limit` places back is a window older.
            expect(
              (arrivals[i] as number) - (arrivals[i - limit] as number),
            ).toBeGreaterThanOrEqual(windowMs);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("the server's count as room", () => {
  /**
   * 4 per second: two at 0 and two at 100, answered at 100, 900, 950 and 950, so the log is
   * full until 1101; the fifth goes then and is answered at 1150, where the server may tell
   * its count. Without a count the next permit waits for the log, until 900 + 1001.
   */
  function fullLog() {
    const clock = createManualClock();
    // A pacer's limiter, which hears the server (`feedback`).
    const limiter = createPacerLimiter({ limits: perSecond(4, SAFE), clock });
    limiter.tryAcquire('api');
    limiter.tryAcquire('api');
    clock.set(100);
    limiter.settle('api');
    limiter.tryAcquire('api');
    limiter.tryAcquire('api');
    clock.set(900);
    limiter.settle('api');
    clock.set(950);
    limiter.settle('api', 2);
    clock.set(1_101);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    clock.set(1_150);
    limiter.settle('api');
    return { clock, limiter };
  }

  it('takes what the count leaves after every permit that may arrive after it, at the spacing, without waiting for answers', () => {
    const { clock, limiter } = fullLog();
    expect(limiter.peek('api')).toMatchObject({ allowed: false, retryAfterMs: 751 });
    // The fifth request, sent at 1101, was the server's first of a new window: 3 left. It is
    // itself answered since it was sent, so 2 are room.
    limiter.feedback.observe('api', { kind: 'quota', remaining: 3, limit: 4, sentAt: 1_101 });
    // The room waits for the spacing only (one permit per 250 ms from the last take).
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, retryAfterMs: 201 });
    // The level is the spacing's credit (49 ms of 4 per second), not the room: the pacer reads
    // it for the moment within the last ms its permit exists (a room in the level put that
    // moment in the past, and every timer woke up to 1 ms late: 0.97x of a real fixed window's
    // rate, where 0.99x without the room).
    expect(limiter.level('api')).toBeCloseTo(0.196, 6);
    clock.set(1_351);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    clock.set(1_601);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    // The room is spent: the log again, where the two in flight count too, until the answers
    // at 950 are a window and 1 ms old.
    clock.set(1_851);
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, retryAfterMs: 100 });
  });

  it('is none for a count of another limit, or for permits in flight', () => {
    const other = fullLog();
    other.limiter.feedback.observe('api', {
      kind: 'quota',
      remaining: 30,
      limit: 40,
      sentAt: 1_101,
    });
    expect(other.limiter.peek('api')).toMatchObject({ allowed: false, retryAfterMs: 751 });

    // Two more taken on the room, one answered and one in flight when a later count says 3:
    // both may arrive after it (and the request counted), so no room is left.
    const busy = fullLog();
    busy.limiter.feedback.observe('api', { kind: 'quota', remaining: 3, limit: 4, sentAt: 1_101 });
    busy.clock.set(1_351);
    busy.limiter.tryAcquire('api');
    busy.clock.set(1_601);
    busy.limiter.tryAcquire('api');
    busy.clock.set(1_620);
    busy.limiter.settle('api');
    busy.limiter.feedback.observe('api', { kind: 'quota', remaining: 3, limit: 4, sentAt: 1_101 });
    busy.clock.set(1_851);
    expect(busy.limiter.peek('api')).toMatchObject({ allowed: false });
  });
});

describe("the server's count of the key's own limit in its first window", () => {
  it('caps the credit the first window sends at once to the room the count leaves', () => {
    // Told 60 per second against a GCRA of that rate with a burst of 16, which states its count
    // of the 60: its first answer says 15 left. The first window's credit of 59 went at once
    // before, and 40-44 were refused.
    const clock = createManualClock();
    const limiter = createPacerLimiter({ limits: perSecond(60, SAFE), clock });
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    clock.set(50);
    limiter.settle('api');
    const count = { kind: 'quota', resetMs: 1_000, limit: 60, sentAt: 0 } as const;
    limiter.feedback.observe('api', { ...count, remaining: 15 });
    let sent = 0;
    while (limiter.tryAcquire('api').allowed) sent++;
    expect(sent).toBe(15);
    // Then one per interval (1000 / 60 ms), the spacing's.
    expect(limiter.peek('api')).toMatchObject({ allowed: false, retryAfterMs: 17 });
    // A count of a window with room for the rest caps nothing.
    const roomy = createPacerLimiter({ limits: perSecond(60, SAFE), clock: createManualClock() });
    roomy.tryAcquire('api');
    roomy.settle('api');
    roomy.feedback.observe('api', { ...count, remaining: 59 });
    let all = 0;
    while (roomy.tryAcquire('api').allowed) all++;
    expect(all).toBe(59);
  });
});

describe("the server's counts of another limit", () => {
  const ownLimit = () => new ArrivalSafe(resolvePolicy({ limit: 600, windowMs: 1_000, ...SAFE }));
  /** What the key's log of 600 per second leaves at `now`, the permits in flight taken. */
  const logRoom = (state: ArrivalSafe, now: number) => 600 - state.inUse(now, 1_000);
  /** A permit taken at `sentAt`, answered at `answeredAt` with the server's count `remaining`. */
  function sendCounted(state: ArrivalSafe, sentAt: number, answeredAt: number, remaining: number) {
    expect(state.tryAcquire(sentAt, 1).allowed).toBe(true);
    state.settle(answeredAt, 1);
    state.lowerRemaining(answeredAt, remaining, sentAt);
  }

  it("stand in the log until a count of a request sent after them replaces them: a bucket's come back up", () => {
    // A GCRA naming its burst of 5, whose full bucket reads 3 (redis-gcra), each request sent
    // 167 ms after the last and answered 3 ms later. Each count is the server's newer state.
    // Left to stand a window each, they filled the log within four sends and held the key until
    // the first was a window old (a bucket of 5 at 60 per second, 1-3 ms away: 0.84x of its
    // rate after two windows, 1.00x now).
    const state = ownLimit();
    const rooms: number[] = [];
    for (let i = 0; i < 5; i++) {
      sendCounted(state, i * 167, i * 167 + 3, 3);
      rooms.push(logRoom(state, i * 167 + 3));
    }
    expect(rooms).toEqual([3, 3, 3, 3, 3]);
  });

  it.each([
    ['several policies', [perSecond(600, SAFE), perMinute(6_000, SAFE)]],
    ['limits per unit', { requests: perSecond(600, SAFE), tokens: perSecond(60_000, SAFE) }],
  ] as const)('give way to newer ones through %s', (_, limits) => {
    const clock = createManualClock();
    const limiter = createPacerLimiter({ limits, clock });
    for (let i = 0; i < 6; i++) {
      const sentAt = i * 167;
      clock.set(sentAt);
      expect(limiter.tryAcquire('api').allowed).toBe(true);
      clock.set(sentAt + 3);
      limiter.settle('api');
      limiter.feedback.observe('api', { kind: 'quota', remaining: 3, sentAt });
    }
  });

  it('keep an older count, and a newer one counts the permits taken since', () => {
    const state = ownLimit();
    state.tryAcquire(0, 1);
    state.tryAcquire(0, 1);
    state.settle(3, 1);
    state.lowerRemaining(3, 4, 0); // the one in flight may have arrived: 595 in use
    expect(logRoom(state, 3)).toBe(4);
    // The other one, sent before that count was heard, says 5 (it arrived first): no news.
    state.settle(4, 1);
    state.lowerRemaining(4, 5, 0);
    expect(logRoom(state, 4)).toBe(4);
    // One sent after it says 4 as well: the server's newer state. Added to the older count's
    // stand-ins, it would leave 3.
    sendCounted(state, 10, 13, 4);
    expect(logRoom(state, 13)).toBe(4);
  });

  it('keep the stand-ins of a count heard the instant a permit was taken before it', () => {
    const tied = ownLimit();
    tied.tryAcquire(0, 1);
    tied.tryAcquire(3, 1); // taken at 3, then the first one's count heard at 3
    tied.settle(3, 1);
    tied.lowerRemaining(3, 2, 0);
    // The second one's count: it may have been sent before the first one's was heard.
    tied.settle(6, 1);
    tied.lowerRemaining(6, 4, 3);
    expect(logRoom(tied, 6)).toBe(2);
    // Sent the instant a count was heard, after it: the newer state.
    const after = ownLimit();
    sendCounted(after, 0, 3, 2);
    sendCounted(after, 3, 6, 4);
    expect(logRoom(after, 6)).toBe(4);
  });

  it("put an older count's with the newer one's: a newer count takes all of them back", () => {
    const state = ownLimit();
    state.tryAcquire(0, 1);
    state.tryAcquire(1, 1);
    state.settle(5, 1);
    state.lowerRemaining(5, 3, 1); // the second one's count came first
    state.settle(8, 1);
    state.lowerRemaining(8, 1, 0); // the first one's: older, and lower
    expect(logRoom(state, 8)).toBe(1);
    // Only the older count's stand-ins were taken back before: the newer one's stood a window.
    sendCounted(state, 10, 13, 4);
    expect(logRoom(state, 13)).toBe(4);
  });

  it('stand until the reset the count came with, when it is sooner than a window', () => {
    // A count of 0 whose permits are back at 100 (a bucket full again, a window's end).
    const state = ownLimit();
    expect(state.tryAcquire(0, 1).allowed).toBe(true);
    state.settle(3, 1);
    state.lowerRemaining(3, 0, 0, 100);
    expect(state.tryAcquire(3, 1)).toMatchObject({ allowed: false, retryAfterMs: 97 });
    expect(logRoom(state, 99)).toBe(0);
    expect(logRoom(state, 100)).toBe(599);
    expect(state.tryAcquire(100, 1).allowed).toBe(true);
    // Without one, they stand a window.
    const unbounded = ownLimit();
    sendCounted(unbounded, 0, 3, 0);
    expect(unbounded.tryAcquire(3, 1)).toMatchObject({ allowed: false, retryAfterMs: 1001 });
    expect(logRoom(unbounded, 100)).toBe(0);
  });

  it('keep what a count of no known request lowered; withdrawn, the last count is gone', () => {
    const state = ownLimit();
    state.tryAcquire(0, 1);
    state.settle(3, 1);
    state.lowerRemaining(3, 2); // no send time: what a replaced policy had in use, say
    sendCounted(state, 10, 13, 4);
    expect(logRoom(state, 13)).toBe(1);
    // A learned policy models the counts from here (a bucket found by them): taken back.
    const counted = ownLimit();
    sendCounted(counted, 0, 3, 0);
    expect(logRoom(counted, 3)).toBe(0);
    counted.withdrawCounts();
    expect(logRoom(counted, 3)).toBe(599);
  });
});

describe('a bucket learned as one (`countAsBucket`)', () => {
  /** A bucket of 6 found by its resets (`adopt`), its refill learned as 6 per `windowMs`. */
  function bucket(windowMs: number) {
    const state = new ArrivalSafe(resolvePolicy({ limit: 6, windowMs, burst: 6, ...SAFE }));
    state.countAsBucket();
    return state;
  }

  it('counts the GCRA of its answers, not a log of its limit per window', () => {
    const state = bucket(120);
    for (let i = 0; i < 6; i++) expect(state.tryAcquire(0, 1).allowed).toBe(true);
    state.settle(60, 6);
    // One more may arrive 20 ms after the one before from 80 on; a log would hold all six until
    // they are a window old, at 180.
    expect(state.tryAcquire(79, 1).allowed).toBe(false);
    expect(state.tryAcquire(80, 1).allowed).toBe(true);
  });

  it('takes its count for its credit, lower or higher', () => {
    // What the state it replaced had in use leaves 2: its credit, not the burst.
    const replaced = bucket(120);
    replaced.lowerRemaining(0, 2);
    expect([1, 2, 3].map(() => replaced.tryAcquire(0, 1).allowed)).toEqual([true, true, false]);
    // Learned too slow (6 per 600 ms), and drained: one permit at 200. Its count, answered at
    // 210, says 5 of 6: 4 beside it at once, where its own refill had 1.
    const slow = bucket(600);
    for (let i = 0; i < 6; i++) slow.tryAcquire(0, 1);
    slow.settle(60, 6);
    expect(slow.tryAcquire(200, 1).allowed).toBe(true);
    slow.settle(210, 1);
    slow.heardRoom(210, 5, 6, 200);
    expect([1, 2, 3, 4, 5].map(() => slow.tryAcquire(210, 1).allowed)).toEqual([
      true,
      true,
      true,
      true,
      false,
    ]);
  });
});

describe('a late pacer catches up', () => {
  it('in a page whose timers wake once a second, sends a window per second, not one request', async () => {
    const manual = createManualClock();
    // A hidden page: every timer fires at the next whole second (Chromium aligns them so).
    const aligned = {
      now: manual.now,
      setTimeout: (fn: () => void, ms: number) => {
        const at = manual.now() + ms;
        return manual.setTimeout(fn, Math.ceil(at / 1000) * 1000 - manual.now());
      },
      clearTimeout: manual.clearTimeout,
    };
    const pacer = createPacer({ limits: perSecond(20, SAFE), clock: aligned });
    const starts: number[] = [];
    const tasks = Array.from({ length: 100 }, () =>
      pacer.schedule(() => {
        starts.push(manual.now());
      }),
    );
    await manual.advanceAsync(10_000);
    await Promise.all(tasks);
    // 20 at once, then each wake catches up on the time it slept: never more than 20 in a
    // window (the log), and done in 8 s instead of 80.
    expect(starts.filter((at) => at === 0)).toHaveLength(20);
    for (let i = 20; i < starts.length; i++) {
      expect((starts[i] as number) - (starts[i - 20] as number)).toBeGreaterThanOrEqual(1000);
    }
    // A window and 1 ms after the first answers falls on the wake at 2 s: a window every other
    // wake, 10 a second; without catching up it would be one request a second.
    expect(starts.at(-1)).toBeLessThanOrEqual(8_000);
  });

  it('gets no credit for the time it waited on busy slots', async () => {
    const clock = createManualClock();
    const pacer = createPacer({ limits: perSecond(10, SAFE), clock, concurrency: 1 });
    const firstWindow = Array.from({ length: 10 }, () => pacer.schedule(() => 'burst'));
    let release: () => void = () => {};
    const slow = pacer.schedule(() => new Promise<void>((resolve) => (release = resolve)));
    const starts: number[] = [];
    const rest = Array.from({ length: 5 }, () =>
      pacer.schedule(() => void starts.push(clock.now())),
    );
    await Promise.all(firstWindow);
    await clock.advanceAsync(5_000); // the slow task holds the one slot meanwhile
    release();
    await slow;
    await clock.advanceAsync(3_000);
    await Promise.all(rest);
    // Freed at 5000: no burst for the time they waited on the slot, each 100 ms after the last.
    expect(starts[0]).toBe(5_000);
    for (let i = 1; i < starts.length; i++) {
      expect((starts[i] as number) - (starts[i - 1] as number)).toBeGreaterThanOrEqual(100);
    }
  });
});

// A GCRA of 60 per second with a bucket 15 deep that names its burst as its limit, as
// throttled and redis-cell do (`X-RateLimit-Limit: 15`), and says when it is full again in
// whole seconds, told to the key as `perSecond(60, { burst: 15 })`.
describe("the server's count of the key's own burst", () => {
  function burstSpent() {
    const clock = createManualClock();
    const limiter = createPacerLimiter({
      limits: perSecond(60, { ...SAFE, burst: 15 }),
      clock,
    });
    for (let i = 0; i < 15; i++) expect(limiter.tryAcquire('api').allowed).toBe(true);
    clock.set(5);
    // Answered in the order they arrived, each counted the bucket one lower.
    for (let left = 14; left >= 0; left--) {
      limiter.settle('api');
      limiter.feedback.observe('api', {
        kind: 'quota',
        remaining: left,
        resetMs: 1_000,
        limit: 15,
        sentAt: 0,
      });
    }
    return { clock, limiter };
  }

  it('is a count of the bucket: a count of 0 holds the key one interval, not until it is full', () => {
    const { clock, limiter } = burstSpent();
    // The burst may all have arrived at 5, when it was answered: the next permit one interval
    // after that (the key's own GCRA of the answers, `answeredTat`).
    expect(limiter.peek('api')).toMatchObject({ allowed: false, retryAfterMs: 17 });
    clock.set(22);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    expect(limiter.tryAcquire('api').allowed).toBe(false);
  });

  it('makes the key count as that GCRA alone: more than its limit in a window, as the bucket refills', () => {
    const { clock, limiter } = burstSpent();
    // One each time the GCRA of the answers lets one go, answered 1 ms later: the first second
    // holds the burst and a second's refill, 15 + 59, where the log of 60 per second stopped
    // at 60 until a second after the first answers.
    let sent = 15;
    for (let at = 6; at < 1_000; at++) {
      clock.set(at);
      if (!limiter.tryAcquire('api').allowed) continue;
      sent++;
      clock.set(at + 1);
      limiter.settle('api');
    }
    expect(sent).toBe(74);
  });

  it('is no such count for a key without a burst, whatever limit the server names', () => {
    // Its spacing is one permit: a count naming a limit of 1 is of no burst it was told.
    const clock = createManualClock();
    const limiter = createPacerLimiter({ limits: perSecond(2, SAFE), clock });
    for (let i = 0; i < 2; i++) expect(limiter.tryAcquire('api').allowed).toBe(true);
    clock.set(10);
    limiter.settle('api', 2);
    limiter.feedback.observe('api', { kind: 'quota', remaining: 1, limit: 1, sentAt: 0 });
    // The log of 2 per window still holds both answers until a window and 1 ms after them.
    clock.set(600);
    expect(limiter.tryAcquire('api').allowed).toBe(false);
    clock.set(1_011);
    expect(limiter.tryAcquire('api').allowed).toBe(true);
  });

  it("caps the key's credit to it when another client spent the bucket, not lower", () => {
    const clock = createManualClock();
    const limiter = createPacerLimiter({
      limits: perSecond(60, { ...SAFE, burst: 15 }),
      clock,
    });
    expect(limiter.tryAcquire('api').allowed).toBe(true);
    clock.set(30);
    limiter.settle('api');
    // 14 left by the key's own count; the server counted 2 at the request's arrival (sent at
    // 0), and refilled at most 30 ms of 60 per second since: 3.8 now.
    limiter.feedback.observe('api', { kind: 'quota', remaining: 2, limit: 15, sentAt: 0 });
    for (let i = 0; i < 3; i++) expect(limiter.tryAcquire('api').allowed).toBe(true);
    expect(limiter.tryAcquire('api')).toMatchObject({ allowed: false, retryAfterMs: 4 });
  });
});
