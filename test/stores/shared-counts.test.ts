import { describe, expect, it } from 'vitest';
import { AIMD } from '../../src/core/adaptive-rate.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { gcra } from '../../src/index.js';
import {
  decide,
  learn,
  normalize,
  observe,
  type SharedLearned,
} from '../../src/stores/bucket-state.js';
import type { SharedAdmissions } from '../../src/stores/shared-rate.js';
import {
  COUNTED_SHARED,
  heardCount,
  refusedCount,
  showsBucket,
} from '../../src/stores/shared-counts.js';

/** A window of 5 per second inferred from a reset, learned at 0. */
function inferredWindow(): SharedLearned {
  return { limit: 5, windowMs: 1_000, of: 0, stamp: 0, debt: 0, inferred: true };
}

/**
 * Full counts of 4 (of 5), each answered 30 ms after its send, every `gapMs` from `from`; each
 * request taken when it was due, as a key that paces into the bucket takes them (`busyAt`).
 */
function fullCounts(learned: SharedLearned, from: number, count: number, gapMs: number): number {
  let now = from;
  for (let i = 0; i < count; i++) {
    now += gapMs;
    learned.busyAt = now - 30;
    heardCount(learned, now, 4, now - 30, 1);
  }
  return now;
}

describe('showsBucket', () => {
  it('finds a bucket in three counts of limit - 1 within the window, or five of limit - 2', () => {
    const high = {};
    expect(showsBucket(high, 5, 100, 4, 70, 1_000)).toBe(false);
    expect(showsBucket(high, 5, 300, 4, 270, 1_000)).toBe(false);
    expect(showsBucket(high, 5, 500, 4, 470, 1_000)).toBe(true);
    // Kept no more once found.
    expect(high).toEqual({});
    // redis-gcra's floats say 3 of a full 5: five of them.
    const floats = {};
    const found = [100, 250, 400, 550, 700].map((at) =>
      showsBucket(floats, 5, at, 3, at - 30, 1_000),
    );
    expect(found).toEqual([false, false, false, false, true]);
  });

  it('finds none in what a window of the limit says, or in counts of less than limit - 2', () => {
    // A fixed window of 5 per second paced at its rate: 4, 3, 2, 1, 0 each second.
    const windows = {};
    const seen: boolean[] = [];
    for (let second = 0; second < 4; second++) {
      for (let i = 0; i < 5; i++) {
        const at = second * 1_000 + i * 200 + 30;
        seen.push(showsBucket(windows, 5, at, 4 - i, at - 30, 1_000));
      }
    }
    expect(seen.every((found) => !found)).toBe(true);
    // Counts of 2 of 5 are not kept at all.
    const low = {};
    for (let at = 10; at < 100; at += 10) showsBucket(low, 5, at, 2, at - 5, 1_000);
    expect(low).toEqual({});
    // Nor below a limit of 3.
    expect(showsBucket({}, 2, 10, 1, 5, 1_000)).toBe(false);
  });

  it('keeps at most five counts, O(1) whatever the server says', () => {
    const kept: { highs?: number[] } = {};
    for (let at = 0; at < 100_000; at += 1_000) showsBucket(kept, 5, at, 4, at - 1, 1);
    expect(kept.highs).toHaveLength(2 * COUNTED_SHARED.KEPT);
  });
});

describe('heardCount', () => {
  it('looks for a bucket only in a window that was inferred, not one the server stated', () => {
    const stated = { ...inferredWindow() };
    delete stated.inferred;
    fullCounts(stated, 0, 10, 100);
    expect(stated.countedAt).toBeUndefined();
    expect(stated.windowMs).toBe(1_000);
    const inferred = inferredWindow();
    fullCounts(inferred, 0, 3, 100);
    expect(inferred.countedAt).toBe(300);
  });

  it('doubles a found bucket per bucket of full counts, then grows it by a tenth', () => {
    const learned = inferredWindow();
    const at = fullCounts(learned, 0, 3, 100);
    // Sent before it was found: grows it still (only a cut waits for counts sent after it).
    const grown = fullCounts(learned, at, 5, 50);
    expect(1_000 / learned.windowMs).toBeCloseTo((1 + COUNTED_SHARED.FAST / 5) ** 5, 9);
    // A count of 2 (of 5) cuts it: the fast growth is over.
    heardCount(learned, grown + 10, 2, grown, 1);
    const window = learned.windowMs;
    fullCounts(learned, grown + 10, 5, 50);
    expect(window / learned.windowMs).toBeCloseTo((1 + COUNTED_SHARED.GROW / 5) ** 5, 9);
  });

  it('ends the fast growth at a count that is neither full nor low (a deeper bucket)', () => {
    const learned = { ...inferredWindow(), limit: 16 };
    for (const at of [100, 200, 300]) heardCount(learned, at, 15, at - 30, 1);
    expect(learned.countedAt).toBe(300);
    heardCount(learned, 400, 10, 370, 1);
    expect(learned.cuts).toBe(1);
    const window = learned.windowMs;
    learned.busyAt = 470;
    heardCount(learned, 500, 15, 470, 1);
    expect(window / learned.windowMs).toBeCloseTo(1 + COUNTED_SHARED.GROW / 16, 9);
  });

  it('grows only while its clients pace into it, not for an app that sends less', () => {
    const learned = inferredWindow();
    const at = fullCounts(learned, 0, 3, 100);
    const window = learned.windowMs;
    // The last take on time was before this request's send, by more than a spacing.
    learned.busyAt = at;
    heardCount(learned, at + 500, 4, at + 470, 1);
    expect(learned.windowMs).toBe(window);
    learned.busyAt = at + 470;
    heardCount(learned, at + 600, 4, at + 570, 1);
    expect(learned.windowMs).toBeLessThan(window);
  });

  it('cuts at half the bucket or less, halving the first time, and not again for an echo', () => {
    const learned = inferredWindow();
    const at = fullCounts(learned, 0, 3, 100);
    const window = learned.windowMs;
    heardCount(learned, at + 50, 2, at + 20, 1);
    expect(learned.windowMs).toBe(2 * window);
    expect(learned.countedAt).toBe(at + 50);
    // Sent before that cut: an echo of the same excess.
    heardCount(learned, at + 60, 0, at + 40, 1);
    expect(learned.windowMs).toBe(2 * window);
    // Sent after it: by a tenth.
    heardCount(learned, at + 100, 1, at + 70, 1);
    expect(learned.windowMs).toBeCloseTo((2 * window) / COUNTED_SHARED.CUT, 9);
  });

  it('cuts once per drain: a count no lower than the last cut keeps it, until a full count or two windows', () => {
    const learned = inferredWindow();
    const at = fullCounts(learned, 0, 3, 100);
    const window = learned.windowMs;
    heardCount(learned, at + 50, 2, at + 20, 1);
    expect(learned.windowMs).toBe(2 * window);
    // Sent after the cut, as low as the count that cut it: the bucket refilling, no new drain.
    heardCount(learned, at + 100, 2, at + 70, 1);
    heardCount(learned, at + 150, 2, at + 120, 1);
    expect(learned.windowMs).toBe(2 * window);
    // Lower: it drains still.
    heardCount(learned, at + 200, 1, at + 170, 1);
    expect(learned.windowMs).toBeCloseTo((2 * window) / COUNTED_SHARED.CUT, 9);
    // Full again (not grown: no take on time), then as low as before, twice: a new drain.
    delete learned.busyAt;
    heardCount(learned, at + 250, 4, at + 220, 1);
    const cut = learned.windowMs;
    heardCount(learned, at + 300, 2, at + 270, 1);
    expect(learned.windowMs).toBe(cut);
    heardCount(learned, at + 350, 2, at + 320, 1);
    expect(learned.windowMs).toBeCloseTo(cut / COUNTED_SHARED.CUT, 9);
    // As low still, sent two of its windows after that cut: it did not refill.
    const again = learned.windowMs;
    const late = at + 350 + COUNTED_SHARED.DRAIN_WINDOWS * again;
    heardCount(learned, late, 2, late - 30, 1);
    expect(learned.windowMs).toBe(again);
    heardCount(learned, late + 40, 2, late + 10, 1);
    expect(learned.windowMs).toBeCloseTo(again / COUNTED_SHARED.CUT, 9);
    // Read back from storage as it was.
    const limits = [resolvePolicy({ limit: 600, windowMs: 1_000, algorithm: gcra })];
    const state = { ...normalize(undefined, limits, 0), learned: [learned] };
    expect(normalize(structuredClone(state), limits, late + 40).learned).toEqual([learned]);
  });

  it('past its first cut, cuts only at two low counts in a row: one is the jitter', () => {
    const learned = inferredWindow();
    const at = fullCounts(learned, 0, 3, 100);
    heardCount(learned, at + 50, 2, at + 20, 1);
    expect(learned.cuts).toBe(1);
    const window = learned.windowMs;
    // Full, then low, full, low: each alone.
    delete learned.busyAt;
    for (const [i, remaining] of [4, 2, 4, 1, 4, 0, 4].entries()) {
      heardCount(learned, at + 100 + 50 * i, remaining, at + 70 + 50 * i, 1);
    }
    expect(learned.windowMs).toBe(window);
    // Two in a row.
    heardCount(learned, at + 450, 2, at + 420, 1);
    expect(learned.windowMs).toBe(window);
    heardCount(learned, at + 500, 2, at + 470, 1);
    expect(learned.windowMs).toBeCloseTo(window / COUNTED_SHARED.CUT, 9);
  });

  it('never passes the key own rate, nor falls below the floor', () => {
    const learned = inferredWindow();
    const at = fullCounts(learned, 0, 3, 100);
    // Own rate: 10 per second.
    for (let i = 1; i <= 100; i++) {
      learned.busyAt = at + i - 1;
      heardCount(learned, at + i, 4, at + i - 1, 10 / 1_000);
    }
    expect(learned.windowMs).toBe(500);
    let now = at + 200;
    delete learned.busyAt;
    for (let i = 0; i < 200; i++) {
      // Each drain (a full count between, two low counts in a row) cuts once.
      now += 10;
      heardCount(learned, now, 4, now - 5, 1);
      heardCount(learned, now + 2, 0, now - 3, 1);
      heardCount(learned, now + 4, 0, now - 1, 1);
    }
    expect(learned.windowMs).toBe(5 * AIMD.FLOOR_MS);
  });

  it('is halved by a refusal of a request sent after the last cut, once', () => {
    const learned = inferredWindow();
    refusedCount(learned, 50, 20);
    expect(learned.windowMs).toBe(1_000);
    const at = fullCounts(learned, 0, 3, 100);
    refusedCount(learned, at + 40, at + 10);
    refusedCount(learned, at + 45, at + 15);
    expect(learned.windowMs).toBe(2_000);
  });
});

describe('a store whose clients hear the counts of a bucket', () => {
  const limits = [resolvePolicy({ limit: 600, windowMs: 1_000, algorithm: gcra })];

  it('keeps a bucket it found against the window its resets infer again', () => {
    const state = normalize(undefined, limits, 0);
    learn(state, 0, 5, 1_000, 0, true);
    let at = 0;
    for (let i = 0; i < 10; i++) {
      // Each taken when it is due (the key paces into the window), answered 30 ms later.
      const learned = state.learned?.[0] as SharedLearned;
      at = Math.max(at + 50, learned.stamp + learned.debt);
      expect(decide(state, limits, at, [1], false)[0]?.allowed).toBe(true);
      observe(state, limits, at + 30, { kind: 'quota', remaining: 4, limit: 5, sentAt: -30 });
    }
    const learned = state.learned?.[0] as SharedLearned;
    expect(learned.countedAt).toBeDefined();
    expect(learned.windowMs).toBeLessThan(500);
    observe(state, limits, at + 100, {
      kind: 'policy',
      limit: 5,
      windowMs: 1_000,
      remaining: 4,
      inferred: true,
      sentAt: -30,
    });
    expect(state.learned?.[0]?.windowMs).toBeLessThan(500);
    // And read back from storage as it was.
    expect(normalize(structuredClone(state), limits, at + 100).learned).toEqual(state.learned);
  });

  it('finds a bucket past the rate a whole-second wait taught, and drops the rate', () => {
    const state = normalize(undefined, limits, 0);
    // Five granted at once, then refused with `Retry-After: 1`.
    for (let i = 0; i < 5; i++) {
      observe(state, limits, 0, { kind: 'quota', remaining: 4 - i, sentAt: 0 });
    }
    const grant = { kind: 'answered' } as const;
    observe(state, limits, 0, grant);
    state.admissions = { count: 5, at: 0, sample: 5, since: 0, from: 0 };
    observe(state, limits, 10, { kind: 'refusal', retryAfterMs: 1_000, sentAt: -5 });
    expect(state.rate).toBeDefined();
    // redis-gcra's float counts of a full bucket of 5: 3, every 150 ms.
    for (let at = 1_100; at <= 1_700; at += 150) {
      observe(state, limits, at, { kind: 'quota', remaining: 3, limit: 5, sentAt: -30 });
    }
    expect(state.rate).toBeUndefined();
    expect(state.learned?.[0]).toMatchObject({ limit: 5, inferred: true });
    expect(state.learned?.[0]?.countedAt).toBeDefined();
    // A refusal now halves the bucket, and teaches no rate.
    const window = state.learned?.[0]?.windowMs as number;
    observe(state, limits, 1_900, { kind: 'refusal', retryAfterMs: 1_000, sentAt: -20 });
    expect(state.rate).toBeUndefined();
    expect(state.learned?.[0]?.windowMs).toBe(2 * window);
  });

  it('finds a window inferred while its clients were admitted at twice its rate to be a bucket, paced from that rate', () => {
    // Told the published 60 per second (spaced), granted at it for a second.
    const told = [resolvePolicy({ limit: 60, windowMs: 1_000, algorithm: gcra, burst: 1 })];
    const state = normalize(undefined, told, 0);
    let at = 0;
    for (let i = 0; i < 60; i++, at += 17) {
      expect(decide(state, told, at, [1], false)[0]?.allowed).toBe(true);
    }
    // Granted less refused, over about the last second: 58 per second.
    const opened = { kind: 'policy', remaining: 5, windowMs: 1_000, inferred: true } as const;
    observe(state, told, at, { ...opened, limit: 6, sentAt: -30 });
    const found = state.learned?.[0] as SharedLearned;
    const admissions = state.admissions as SharedAdmissions;
    expect(found.countedAt).toBe(at);
    expect(6_000 / found.windowMs).toBeGreaterThan(55);
    expect(6_000 / found.windowMs).toBeLessThan(60);
    // Its full counts steer it from there.
    const before = found.windowMs;
    found.busyAt = at + 40;
    observe(state, told, at + 60, { kind: 'quota', remaining: 5, limit: 6, sentAt: -20 });
    expect(found.windowMs).toBeLessThan(before);
    // Stated, a window is believed; inferred at less than twice the rate admitted, it is one.
    const stated = normalize(undefined, told, 0);
    stated.admissions = structuredClone(admissions);
    observe(stated, told, at, { ...opened, limit: 6, inferred: undefined, sentAt: -30 });
    expect(stated.learned?.[0]).toMatchObject({ limit: 6, windowMs: 1_000 });
    expect(stated.learned?.[0]?.countedAt).toBeUndefined();
    const window = normalize(undefined, told, 0);
    window.admissions = structuredClone(admissions);
    observe(window, told, at, { ...opened, limit: 40, sentAt: -30 });
    expect(window.learned?.[0]).toMatchObject({ limit: 40, windowMs: 1_000 });
    expect(window.learned?.[0]?.countedAt).toBeUndefined();
    // Never paced past the key's own rate: a burst granted at once reads faster than it.
    const burst = normalize(undefined, told, 0);
    burst.admissions = { count: 200, at: 0, sample: 200, since: 0, from: -5_000 };
    observe(burst, told, 0, { ...opened, limit: 6, sentAt: -30 });
    expect(burst.learned?.[0]?.windowMs).toBe(100);
  });

  it("leaves an inferred window of the key's own limit to its own policy, not a longer one", () => {
    const told = [resolvePolicy({ limit: 60, windowMs: 1_000, algorithm: gcra, burst: 1 })];
    const opened = { kind: 'policy', limit: 60, remaining: 59, sentAt: -30 } as const;
    const own = normalize(undefined, told, 0);
    observe(own, told, 0, { ...opened, windowMs: 1_000, inferred: true });
    observe(own, told, 10, { ...opened, windowMs: 1_100, inferred: true }); // within a tenth
    observe(own, told, 20, { ...opened, windowMs: 900, inferred: true });
    expect(own.learned).toBeUndefined();
    const longer = normalize(undefined, told, 0);
    observe(longer, told, 0, { ...opened, windowMs: 1_150, inferred: true });
    expect(longer.learned?.[0]).toMatchObject({ limit: 60, windowMs: 1_150 });
    // Stated, it is learned (a late client keeps a credit of it), and so is another limit.
    const stated = normalize(undefined, told, 0);
    observe(stated, told, 0, { ...opened, windowMs: 1_000 });
    expect(stated.learned?.[0]).toMatchObject({ limit: 60, windowMs: 1_000 });
    const other = normalize(undefined, told, 0);
    observe(other, told, 0, { ...opened, limit: 50, windowMs: 1_000, inferred: true });
    expect(other.learned?.[0]).toMatchObject({ limit: 50 });
  });

  it("leaves a window of the key's own burst to its own GCRA, and drops a rate a count of it finds", () => {
    const told = [resolvePolicy({ limit: 60, windowMs: 1_000, algorithm: gcra, burst: 5 })];
    const state = normalize(undefined, told, 0);
    const opened = { kind: 'policy', limit: 5, windowMs: 1_000, remaining: 4 } as const;
    observe(state, told, 0, { ...opened, inferred: true, sentAt: -30 });
    expect(state.learned).toBeUndefined();
    // One the server states is learned still, and so is an inferred window of another limit.
    observe(state, told, 10, { ...opened, sentAt: -30 });
    expect(state.learned?.[0]?.limit).toBe(5);
    const other = normalize(undefined, told, 0);
    observe(other, told, 0, { ...opened, limit: 6, inferred: true, sentAt: -30 });
    expect(other.learned?.[0]?.limit).toBe(6);
    // A key told no burst (spaced: a capacity of 1) learns a window of 1 named.
    const spaced = [resolvePolicy({ limit: 60, windowMs: 1_000, algorithm: gcra, burst: 1 })];
    const alone = normalize(undefined, spaced, 0);
    observe(alone, spaced, 0, { ...opened, limit: 1, remaining: 0, inferred: true });
    expect(alone.learned?.[0]?.limit).toBe(1);
    // A rate a refusal taught goes at a count of the burst.
    const rated = normalize(undefined, told, 0);
    rated.admissions = { count: 5, at: 0, sample: 5, since: 0, from: 0 };
    observe(rated, told, 10, { kind: 'refusal', retryAfterMs: 1_000, sentAt: -5 });
    expect(rated.rate).toBeDefined();
    observe(rated, told, 1_050, { kind: 'quota', remaining: 3, limit: 5, sentAt: -20 });
    expect(rated.rate).toBeUndefined();
  });
});
