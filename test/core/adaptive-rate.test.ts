import { describe, expect, it } from 'vitest';
import { AdaptiveRate, AIMD, SPENT_STREAK } from '../../src/core/adaptive-rate.js';

/**
 * Sends at the rate's pace from `from` to `to` (1 ms steps), every request admitted at once
 * (a server that answers in no time); returns the time it stopped.
 */
function sendAdmitted(rate: AdaptiveRate, from: number, to: number): number {
  for (let at = from; at < to; at++) {
    if (rate.fits(at, 1) && rate.tryAcquire(at, 1).allowed) rate.answered(at, at);
  }
  return to;
}

describe('AdaptiveRate, refused after growing unrefused', () => {
  it('cuts to CUT of the rate refused, not to the lagging count of what was admitted', () => {
    // Learned at 14 per second, doubling every second while admitted: about 71 per second
    // after 2.35 s, of which the decayed count of admissions reads about 0.6.
    const rate = new AdaptiveRate(0.014, 0, { admitted: 14, spanMs: 1_000 });
    const now = sendAdmitted(rate, 0, 2_350);
    const refusedAt = rate.ratePerMs;
    expect(refusedAt * 1_000).toBeGreaterThan(60);
    expect(rate.refused(now, now)).toBe(true);
    expect(rate.ratePerMs).toBeCloseTo(refusedAt * AIMD.CUT * AIMD.HEADROOM, 10);
  });

  it('cuts after a growth shorter than ADMISSIONS_MS to CUT of the rate refused too', () => {
    // Seeded by a burst of 28, doubled by the first probe admitted, grown for 600 ms to about
    // 85 per second: the count read about 45 (it began at the seed's 28), and cut to it, a key
    // held 0.72-0.75x of nginx's rate (`burst=15`) for RAISE_MS.
    const rate = new AdaptiveRate(0.028, 0, { admitted: 28, spanMs: 1_000, burst: true });
    const now = sendAdmitted(rate, 0, 600);
    const refusedAt = rate.ratePerMs;
    expect(refusedAt * 1_000).toBeGreaterThan(75);
    expect(rate.refused(now, now)).toBe(true);
    expect(rate.ratePerMs).toBeCloseTo(refusedAt * AIMD.CUT * AIMD.HEADROOM, 10);
  });

  it('cuts a provisional ceiling refused within HOLD_MS by RECUT, at once', () => {
    const rate = new AdaptiveRate(0.028, 0, { admitted: 28, spanMs: 1_000, burst: true });
    let now = sendAdmitted(rate, 0, 600);
    rate.refused(now, now);
    const provisional = rate.ratePerMs;
    // The probe and the requests after it admitted, then refused again (a large burst took
    // much of the growth: the server's rate is below the provisional one).
    now = sendAdmitted(rate, now + 1, now + 300);
    expect(rate.refused(now, now)).toBe(true);
    // Not to the count of what was admitted (it still lags the growth before the first cut:
    // 0.70-0.75x of nginx's rate for RAISE_MS).
    expect(rate.ratePerMs).toBeCloseTo(provisional * AIMD.RECUT * AIMD.HEADROOM, 10);
  });

  it('holds a measured cut for HOLD_MS: a refusal then is the echo of what came before', () => {
    // Refused twice within a second: the second cut measures (what was admitted had refusals
    // in it), and a refusal within HOLD_MS after it only pauses longer.
    const rate = new AdaptiveRate(0.014, 0, { admitted: 14, spanMs: 1_000 });
    let now = sendAdmitted(rate, 0, 2_350);
    rate.refused(now, now);
    now = sendAdmitted(rate, now + 1, now + 300);
    rate.refused(now, now);
    const measured = rate.ratePerMs;
    now = sendAdmitted(rate, now + 1, now + 300);
    expect(rate.refused(now, now)).toBe(true);
    expect(rate.ratePerMs).toBe(measured);
  });
});

describe('AdaptiveRate seeded by a burst', () => {
  // A slow start's refusals after 6 admitted at once (nginx's `burst=5`) seed 6 per second:
  // the burst read over SEED_MS, as a window's worth would be.
  const burst = () => ({ admitted: 6, spanMs: AIMD.SEED_MS, burst: true });

  /** The rate's first probe goes when it may, and is refused or admitted at once. */
  function probe(rate: AdaptiveRate, from: number, admitted: boolean): number {
    let at = from;
    while (!rate.fits(at, 1)) at++;
    expect(rate.tryAcquire(at, 1).allowed).toBe(true);
    if (admitted) rate.answered(at, at);
    else rate.refused(at, at);
    return at;
  }

  it('doubles when its first probe is admitted: the server refilled, no window was spent', () => {
    const rate = new AdaptiveRate(0.006, 0, burst());
    probe(rate, 1, true);
    expect(rate.ratePerMs).toBeCloseTo(0.012, 10);
  });

  it('doubles after one refused probe too (through jitter it can meet the burst before it)', () => {
    const rate = new AdaptiveRate(0.006, 0, burst());
    const at = probe(rate, 1, false);
    probe(rate, at + 1, true);
    expect(rate.ratePerMs).toBeCloseTo(0.012, 10);
  });

  it('does not after SPENT_STREAK refused probes: the window was spent, its sample is the rate', () => {
    const rate = new AdaptiveRate(0.006, 0, burst());
    let at = 0;
    for (let refused = 0; refused < SPENT_STREAK; refused++) at = probe(rate, at + 1, false);
    probe(rate, at + 1, true);
    expect(rate.ratePerMs).toBeLessThanOrEqual(0.006);
  });

  it('does not when the sample took SEED_MS or more, or when its own rate set it', () => {
    for (const sample of [
      { admitted: 6, spanMs: AIMD.SEED_MS },
      { ...burst(), burst: false },
    ]) {
      const rate = new AdaptiveRate(0.006, 0, sample);
      probe(rate, 1, true);
      expect(rate.ratePerMs).toBe(0.006);
    }
  });

  it('doubles no further than HEADROOM of the rate it was refused at', () => {
    const rate = new AdaptiveRate(0.006, 0, burst(), 0.01);
    probe(rate, 1, true);
    expect(rate.ratePerMs).toBeCloseTo(0.01 * AIMD.HEADROOM, 10);
  });
});
