import { describe, expect, it } from 'vitest';
import { AdaptiveRate, AIMD } from '../../src/core/adaptive-rate.js';

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

  it('cuts a provisional ceiling refused within HOLD_MS to what was admitted, at once', () => {
    const rate = new AdaptiveRate(0.014, 0, { admitted: 14, spanMs: 1_000 });
    let now = sendAdmitted(rate, 0, 2_350);
    rate.refused(now, now);
    const provisional = rate.ratePerMs;
    // The probe and the requests after it admitted, then refused again (a large burst took
    // much of the growth: the server's rate is below the provisional one).
    now = sendAdmitted(rate, now + 1, now + 300);
    expect(rate.refused(now, now)).toBe(true);
    expect(rate.ratePerMs).toBeLessThan(provisional * 0.95);
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
