import { describe, expect, it } from 'vitest';
import { AIMD } from '../../src/core/adaptive-rate.js';
import { ArrivalSafe } from '../../src/core/algorithms/arrival-safe.js';
import { SlidingLog } from '../../src/core/algorithms/sliding-log.js';
import { resolvePolicy } from '../../src/core/policy.js';
import { SampledRate } from '../../src/core/sampled-rate.js';
import { arrivalSafe, slidingLog } from '../../src/index.js';

// The growth of a rate a refusal with a wait taught (learning.ts `refused`): AIMD on the result.
// Rates are permits per ms: 0.02 is 20 a second.

/** Answers `n` requests spread evenly over [from, from + spanMs), each answered 30 ms later. */
function answerSpread(
  rate: SampledRate,
  from: number,
  spanMs: number,
  n: number,
  ratePerMs: number,
  capPerMs = Number.POSITIVE_INFINITY,
): number | undefined {
  let grown: number | undefined;
  for (let i = 0; i < n; i++) {
    const sentAt = from + (i * spanMs) / n;
    grown = rate.answered(sentAt + 30, sentAt, ratePerMs, capPerMs) ?? grown;
  }
  return grown;
}

/** The first answer of a request sent after the period: the period is judged. */
function closePeriod(rate: SampledRate, at: number, ratePerMs: number, capPerMs = Infinity) {
  return rate.answered(at + 30, at, ratePerMs, capPerMs);
}

describe('SampledRate', () => {
  it('grows by more each second the server admitted the rate whole, up to HEADROOM of the ceiling', () => {
    const rate = new SampledRate(0);
    // Refused with a sample whose fastest reading is 20 a second: the ceiling.
    expect(rate.refused(0, 1_000, undefined, 0.02)).toBeUndefined();
    let perMs = 0.013;
    const steps: number[] = [];
    for (let second = 1; second <= 8; second++) {
      answerSpread(rate, second * 1_000, 1_000, Math.ceil(perMs * 1_000), perMs);
      const grown = closePeriod(rate, (second + 1) * 1_000, perMs);
      if (grown !== undefined) {
        steps.push(grown / perMs);
        perMs = grown;
      }
    }
    // 1.05, then 1.05 ** 2, ... until the ceiling's headroom stops it.
    expect(steps[0]).toBeCloseTo(1.05, 5);
    expect(steps[1]).toBeCloseTo(1.05 ** 2, 5);
    expect(perMs).toBeCloseTo(0.02 * AIMD.HEADROOM, 6);
  });

  it('raises its ceiling after RAISE_MS kept at it, and by more each second after', () => {
    // A ceiling of 1 a second (a long wait's sample: a hundred per 100 s), the rate at it.
    const rate = new SampledRate(0);
    rate.refused(0, 1_000, undefined, 0.001);
    let perMs = 0.001 * AIMD.HEADROOM;
    const rates: number[] = [];
    for (let second = 1; second <= 85; second++) {
      answerSpread(rate, second * 1_000, 1_000, Math.ceil(perMs * 1_000), perMs);
      perMs = closePeriod(rate, (second + 1) * 1_000, perMs) ?? perMs;
      rates.push(perMs * 1_000);
    }
    // Held at the ceiling's headroom for a minute; then growing by more each period: 25 s on,
    // past ten times the rate (a tenth more a minute took 24 minutes to get there).
    expect(rates[55]).toBeCloseTo(0.95, 6);
    expect(rates[84] as number).toBeGreaterThan(10 * 0.95);
  });

  it('scales a ceiling its sample set (late admissions), not one a refused rate set', () => {
    /** What a kept second at 18 a second grows to, after the ceiling was scaled by 1.5. */
    const grownAfterScale = (refusedPerMs: number | undefined) => {
      const rate = new SampledRate(0);
      rate.refused(0, 1_000, refusedPerMs, 0.02);
      rate.scale(1.5);
      answerSpread(rate, 1_000, 1_000, 18, 0.018);
      return closePeriod(rate, 2_000, 0.018);
    };
    // The sample's ceiling, 20 a second, is now 30: a kept second grows by 5%.
    expect(grownAfterScale(undefined)).toBeCloseTo(0.018 * 1.05, 9);
    // A rate refused at 19.5 a second set it: still 19.5, and 0.95 of it is as far as it goes.
    expect(grownAfterScale(0.0195)).toBeCloseTo(0.0195 * AIMD.HEADROOM, 9);
  });

  it('does not grow past the key own rate', () => {
    const rate = new SampledRate(0);
    rate.refused(0, 1_000, undefined, 0.05);
    answerSpread(rate, 1_000, 1_000, 20, 0.02, 0.021);
    expect(closePeriod(rate, 2_000, 0.02, 0.021)).toBe(0.021);
  });

  it('does not grow while the key sends slower than its rate', () => {
    const rate = new SampledRate(0);
    rate.refused(0, 1_000, undefined, 0.05);
    // 15 of a rate of 20 a second: the callers had no more, which says nothing of a faster one.
    answerSpread(rate, 1_000, 1_000, 15, 0.02);
    expect(closePeriod(rate, 2_000, 0.02)).toBeUndefined();
  });

  it('does not grow while the server counts its window full', () => {
    const rate = new SampledRate(0);
    rate.refused(0, 1_000, undefined, 0.05);
    answerSpread(rate, 1_000, 1_000, 20, 0.02);
    rate.spent();
    expect(closePeriod(rate, 2_000, 0.02)).toBeUndefined();
    // The next period, with room, grows.
    answerSpread(rate, 2_000, 1_000, 20, 0.02);
    expect(closePeriod(rate, 3_000, 0.02)).toBeCloseTo(0.021, 6);
  });

  it('goes back to the last rate kept when a growth is refused, and makes that the ceiling', () => {
    const rate = new SampledRate(0);
    rate.refused(0, 1_000, undefined, 0.05);
    answerSpread(rate, 1_000, 1_000, 20, 0.02);
    const grown = closePeriod(rate, 2_000, 0.02) as number;
    expect(grown).toBeCloseTo(0.021, 6);
    // Refused at the grown rate; its sample (averaged over both rates) reads slower than 0.02.
    expect(rate.refused(2_500, 3_500, grown, 0.018)).toBe(0.02);
    // Back at 0.02, the ceiling is the refused rate: HEADROOM of it is below 0.02, no growth.
    answerSpread(rate, 3_500, 1_000, 20, 0.02);
    expect(closePeriod(rate, 4_500, 0.02)).toBeUndefined();
  });

  it('goes to KEPT of a rate kept and refused since, not to the slower sample', () => {
    const rate = new SampledRate(0);
    rate.refused(0, 1_000, undefined, 0.02);
    // Kept at 0.019 (at HEADROOM of its ceiling, so no growth), then refused at it.
    answerSpread(rate, 1_000, 1_000, 19, 0.019);
    expect(closePeriod(rate, 2_000, 0.019)).toBeUndefined();
    expect(rate.refused(2_500, 3_500, 0.019, 0.013)).toBeCloseTo(0.019 * 0.9, 9);
    // Refused again with no period kept in between: nothing to go back to.
    expect(rate.refused(3_600, 4_600, 0.0171, 0.012)).toBeUndefined();
  });
});

describe('retimed counters keep their permits', () => {
  it('a sliding log counts the same entries over the new window', () => {
    const log = new SlidingLog(resolvePolicy({ limit: 5, windowMs: 1_000, algorithm: slidingLog }));
    for (const at of [0, 100, 200]) log.tryAcquire(at, 1);
    const shorter = log.retimed(500);
    expect(shorter.policy.windowMs).toBe(500);
    expect(shorter.level(300)).toBe(2);
    // The entry at 0 left the 500 ms window at 500; the old log still counts it.
    expect(shorter.level(550)).toBe(3);
    expect(log.level(550)).toBe(2);
  });

  it('an arrival-safe counter keeps what is in flight and what was answered', () => {
    const policy = resolvePolicy({
      limit: 2,
      windowMs: 1_000,
      algorithm: arrivalSafe,
      burst: 1,
    });
    const counter = new ArrivalSafe(policy);
    expect(counter.tryAcquire(0, 1).allowed).toBe(true);
    expect(counter.tryAcquire(500, 1).allowed).toBe(true);
    counter.settle(600, 1);
    const shorter = counter.retimed(800);
    // One answered at 600 (counted until 1401 with the 1 ms margin), one still in flight.
    expect(shorter.tryAcquire(1_000, 1).allowed).toBe(false);
    shorter.settle(1_050, 1);
    expect(shorter.tryAcquire(1_402, 1).allowed).toBe(true);
  });
});
