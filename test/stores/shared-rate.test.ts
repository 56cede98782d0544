import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { AIMD } from '../../src/core/adaptive-rate.js';
import { perSecond, resolvePolicy } from '../../src/core/policy.js';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { gcra } from '../../src/index.js';
import { createPacer } from '../../src/pacer/index.js';
import { decide, normalize, observe, peek } from '../../src/stores/bucket-state.js';
import { RatePart, rateAt, type SharedRate } from '../../src/stores/shared-rate.js';
import { createManualClock } from '../../src/testing/index.js';
import { fakeStore } from '../support/fake-store.js';
import {
  driveNetwork,
  network,
  servedThroughNetwork,
  settleAll,
  trackCalls,
} from '../support/counting-servers.js';
import { turn } from '../support/flush.js';
import { server } from '../support/msw.js';

// The rate a store learns from its clients' bare refusals (stores/shared-rate.ts), on the
// shared-bucket arithmetic every store of this package runs (its Lua twin: test/stores/redis).
const limits = Object.freeze([resolvePolicy({ ...perSecond(100), algorithm: gcra })]);
/** A bare refusal of a request sent `sentAt` ms before it (0 or less, the store contract). */
const bare = (sentAt = 0) => ({ kind: 'refusal', sentAt }) as const;

/** A key's state that was granted `count` permits, one every `everyMs` from `start`. */
function grantedState(count: number, everyMs: number, start = 0) {
  const state = normalize(undefined, limits, start);
  for (let i = 0; i < count; i++) decide(state, limits, start + i * everyMs, [1], false);
  return state;
}

/** A shared rate of `perMs` below a `ceiling`, cut at 0, owing nothing, `granted` since. */
function cutAtZero(perMs: number, ceiling: number, granted = 0): SharedRate {
  const rate = { perMs, ceiling, cutAt: 0, stamp: 0, debt: 0, streak: 0, refusedAt: 0 };
  return { ...rate, granted, probeAt: 0, sample: 0, roundTripMs: 0 };
}

describe('the rate a store learns from bare refusals', () => {
  it('starts at what was admitted over the last second, and pauses the key one permit', () => {
    // 30 granted over 300 ms, of a key whose own rate is 100/s: about 26 per second, decayed.
    const state = grantedState(30, 10);
    const now = 300;
    observe(state, limits, now, bare());
    const rate = state.rate;
    expect(rate).toBeDefined();
    const perSec = (rate?.perMs ?? 0) * 1_000;
    expect(perSec).toBeGreaterThan(20);
    expect(perSec).toBeLessThan(30);
    expect(rate?.ceiling).toBe(0);
    // Paused one permit, then one permit per 1/rate ms.
    const [denied] = decide(state, limits, now, [1], false);
    expect(denied?.allowed).toBe(false);
    expect(denied?.retryAfterMs).toBe(Math.ceil(1_000 / perSec));
  });

  it('starts at half the key’s own rate when more was admitted, or nothing was', () => {
    const none = normalize(undefined, limits, 0);
    observe(none, limits, 0, bare());
    expect((none.rate?.perMs ?? 0) * 1_000).toBeCloseTo(100 * AIMD.SEED_CUT);
  });

  it('is not cut again by the refusals of requests sent before the last one came (echoes)', () => {
    const state = grantedState(30, 10);
    observe(state, limits, 300, bare());
    const made = structuredClone(state.rate);
    // Sent 50 ms before this refusal came, at 310: before the last refusal (300).
    observe(state, limits, 310, bare(-50));
    expect(state.rate?.perMs).toBe(made?.perMs);
    expect(state.rate?.streak).toBe(0);
  });

  it('within HOLD_MS of its cut, pauses PAUSE_GROWTH times longer per refusal; after, cuts to what was admitted', () => {
    const state = grantedState(30, 10);
    observe(state, limits, 300, bare());
    // Refused again with nothing granted since (the probe): the rate holds as it is, its hold
    // from now.
    const before = rateAt(state.rate as never, 400);
    observe(state, limits, 400, bare());
    expect(state.rate?.streak).toBe(1);
    expect(rateAt(state.rate as never, 400)).toBeCloseTo(before, 12);
    expect(state.rate?.cutAt).toBe(400);
    const [held] = decide(state, limits, 400, [1], false);
    expect(held?.retryAfterMs).toBe(
      Math.ceil(AIMD.PAUSE_GROWTH / rateAt(state.rate as never, 400)),
    );
    // Granted steadily at 40 per second for a while, then refused after HOLD_MS.
    let now = 400;
    while (now < 3_000) {
      now += 25;
      delete state.rate;
      decide(state, limits, now, [1], false);
    }
    observe(state, limits, now, bare());
    const madeAgain = state.rate?.perMs ?? 0;
    expect(madeAgain * 1_000).toBeGreaterThan(35);
    expect(madeAgain * 1_000).toBeLessThan(42);
    // A permit granted (and admitted) after HOLD_MS, then a refusal of the next: the rate goes to
    // HEADROOM of what was admitted, decayed meanwhile.
    now += AIMD.HOLD_MS;
    expect(decide(state, limits, now, [1], false)[0]?.allowed).toBe(true);
    now += Math.ceil(1 / rateAt(state.rate as never, now));
    expect(decide(state, limits, now, [1], false)[0]?.allowed).toBe(true);
    observe(state, limits, now, bare());
    expect(state.rate?.cutAt).toBe(now);
    expect(state.rate?.ceiling).toBeGreaterThan(0);
    expect(state.rate?.perMs).toBeCloseTo((state.rate?.ceiling ?? 0) * AIMD.HEADROOM, 9);
    expect(state.rate?.streak).toBe(0);
  });

  it('cuts to the rate admitted over a history shorter than a few ADMISSIONS_MS, not to its decayed count', () => {
    // Granted at 40 per second for the key's first 2 s, under a rate made at 20/s at 0 (no
    // ceiling yet: it doubled to 80/s by now). The count decayed over those 2 s is 40 per second
    // times 1 - e^-2 (34.6); read as the rate, the ceiling held the key to 0.86x of its server.
    const state = grantedState(80, 25);
    state.rate = cutAtZero(0.02, 0, 80);
    observe(state, limits, 2_000, bare());
    const ceiling = (state.rate?.ceiling ?? 0) * 1_000;
    expect(ceiling).toBeGreaterThan(39);
    expect(ceiling).toBeLessThan(41);
    expect(state.rate?.perMs).toBeCloseTo((state.rate?.ceiling ?? 0) * AIMD.HEADROOM, 10);
  });

  it('after HOLD_MS, is not cut by a refused probe: the window is still spent', () => {
    // A rate cut at 0 to 50/s below a ceiling of 60; HAProxy, which counts refusals, refuses
    // every probe for a while. Each refused probe after HOLD_MS pauses longer, and cuts nothing.
    const state = grantedState(60, 10);
    state.rate = cutAtZero(0.05, 0.06);
    let now = AIMD.HOLD_MS;
    for (let streak = 1; streak <= 3; streak++) {
      expect(decide(state, limits, now, [1], false)[0]?.allowed).toBe(true);
      const before = rateAt(state.rate as never, now + 30);
      observe(state, limits, now + 30, bare(-30));
      // Held as it was, below the same ceiling, the hold counted from this refusal.
      expect(rateAt(state.rate as never, now + 30)).toBeCloseTo(before, 12);
      expect(before).toBeGreaterThanOrEqual(0.05);
      expect(state.rate?.ceiling).toBe(0.06);
      expect(state.rate?.cutAt).toBe(now + 30);
      expect(state.rate?.streak).toBe(streak);
      now += 30 + (decide(state, limits, now + 30, [1], false)[0]?.retryAfterMs ?? 0);
    }
    // HOLD_MS on, the probe admitted (no refusal of it), the permit after it refused: that cuts.
    now += AIMD.HOLD_MS;
    expect(decide(state, limits, now, [1], false)[0]?.allowed).toBe(true);
    now += 20;
    expect(decide(state, limits, now, [1], false)[0]?.allowed).toBe(true);
    observe(state, limits, now + 30, bare(-30));
    expect(state.rate?.cutAt).toBe(now + 30);
    expect(state.rate?.perMs).toBeLessThan(0.05);
  });

  it('takes what the server admitted before as its ceiling once refusals in a row say the window is spent', () => {
    // 40 granted at once: a burst into the server's first window. Made at 300 from the decayed
    // count (about 30 per second), then refused twice more within HOLD_MS.
    const state = grantedState(40, 0);
    observe(state, limits, 300, bare());
    const made = state.rate?.perMs ?? 0;
    expect(made * 1_000).toBeCloseTo(40 * Math.exp(-0.3), 5);
    observe(state, limits, 350, bare());
    expect(state.rate?.ceiling).toBe(0);
    const held = state.rate?.perMs ?? 0;
    observe(state, limits, 400, bare());
    // The sample, not decayed: 40 granted less 3 refused, over SEED_MS.
    const rate = state.rate;
    if (rate === undefined) throw new Error('no rate');
    expect(rate.ceiling * 1_000).toBeCloseTo(37, 5);
    expect(rate.perMs).toBeCloseTo(Math.min(held, rate.ceiling) * AIMD.HEADROOM, 10);
    expect(rate.cutAt).toBe(400);
    // It approaches HEADROOM of the ceiling, and does not double past it while nothing refuses.
    expect(rateAt(rate, 400 + 5 * AIMD.DOUBLE_MS) * 1_000).toBeCloseTo(37 * AIMD.HEADROOM, 1);
  });

  it('takes no sample from refusals with permits admitted between them: no spent window', () => {
    // A GCRA's burst spent through jitter: refused, admitted for a while, refused again.
    const state = grantedState(40, 0);
    observe(state, limits, 300, bare());
    let now = 300;
    for (let refusal = 1; refusal <= 2; refusal++) {
      const until = now + 200;
      let lastGrant = now;
      for (; now < until; now++) {
        if (decide(state, limits, now, [1], true)[0]?.allowed) lastGrant = now;
      }
      // The last permit granted is refused, the ones before it were admitted.
      observe(state, limits, now, bare(lastGrant - now));
      expect(state.rate?.streak).toBe(refusal);
    }
    expect(state.rate?.ceiling).toBe(0);
  });

  it('leaves the permits still in flight out of the spent window’s sample', () => {
    // As above, but permits go between the refusals: those granted after the refused one are
    // still on their way when its refusal comes, and not yet among the refused.
    const state = grantedState(40, 0);
    observe(state, limits, 300, bare());
    observe(state, limits, 350, bare());
    let granted = 0;
    let probeAt = Number.NaN;
    for (let at = 351; at <= 520; at++) {
      if (decide(state, limits, at, [1], true)[0]?.allowed) {
        if (granted === 0) probeAt = at;
        granted++;
      }
    }
    expect(granted).toBeGreaterThanOrEqual(3);
    // The first of them (the probe) is refused at 520.
    observe(state, limits, 520, bare(probeAt - 520));
    // 40 granted, then `granted` more, less 3 refused, less the `granted - 1` still in flight.
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo(38, 5);
  });

  it('lets a client that came late for its permit take one more at once, and no more', () => {
    // 50 per second (a permit every 20 ms), at its ceiling's HEADROOM and above: it stays.
    const rate = cutAtZero(0.05, 0.05);
    const part = new RatePart(rate);
    expect(part.decide(0, 1, true).allowed).toBe(true);
    expect(part.decide(20, 1, true).allowed).toBe(true);
    // 40 ms late for the next: it takes it and the one after, then waits a permit's time.
    expect(part.decide(80, 1, true).allowed).toBe(true);
    expect(part.decide(80, 1, true).allowed).toBe(true);
    const third = part.decide(80, 1, true);
    expect(third.allowed).toBe(false);
    expect(third.retryAfterMs).toBe(20);
    // A pause after a refusal is kept whole: credit counts only after it.
    rate.debt = 100;
    rate.stamp = 80;
    expect(part.decide(179, 1, true).allowed).toBe(false);
    expect(part.decide(180, 1, true).allowed).toBe(true);
    expect(part.decide(180, 1, true).allowed).toBe(false);
  });

  it('grows with time, doubling every DOUBLE_MS without a ceiling, and is dropped back at the key’s own rate', () => {
    const state = normalize(undefined, limits, 0);
    observe(state, limits, 0, bare());
    const rate = state.rate;
    if (rate === undefined) throw new Error('no rate');
    expect(rateAt(rate, AIMD.DOUBLE_MS) / rate.perMs).toBeCloseTo(2);
    // Half the key's own rate doubles back to it in one DOUBLE_MS: the next grant drops it.
    decide(state, limits, AIMD.DOUBLE_MS + 1, [1], false);
    expect(state.rate).toBeUndefined();
  });

  it('approaches HEADROOM of its ceiling, and raises the ceiling after RAISE_MS without a refusal', () => {
    const rate = cutAtZero(0.03, 0.05);
    const target = 0.05 * AIMD.HEADROOM;
    expect(rateAt(rate, AIMD.APPROACH_MS)).toBeCloseTo(target - (target - 0.03) / 2, 9);
    expect(rateAt(rate, AIMD.RAISE_MS - 1)).toBeLessThanOrEqual(target);
    expect(rateAt(rate, AIMD.RAISE_MS)).toBeCloseTo(target * AIMD.RAISE, 5);
    // Each raise not refused is followed by a larger one a DOUBLE_MS later, as the core's:
    // RAISE, RAISE ** 2, RAISE ** 3... (a ceiling cut to half the server's is back in 13 s).
    expect(rateAt(rate, AIMD.RAISE_MS + AIMD.DOUBLE_MS) / target).toBeCloseTo(AIMD.RAISE ** 3, 5);
    expect(rateAt(rate, AIMD.RAISE_MS + 3 * AIMD.DOUBLE_MS) / target).toBeCloseTo(
      AIMD.RAISE ** 10,
      5,
    );
    // Never past what a number holds: after an hour without a refusal the rate is still a
    // number (uncapped, the raises overflow and the approach gives NaN), and larger.
    const anHour = rateAt(rate, 3_600_000);
    expect(Number.isFinite(anHour)).toBe(true);
    expect(anHour).toBeGreaterThan(rateAt(rate, AIMD.RAISE_MS + 3 * AIMD.DOUBLE_MS));
  });
});

describe('the rate a store learns from refusals that say when to come back', () => {
  /** A refusal with `Retry-After`, of a request sent `sentAt` ms before it. */
  const waited = (retryAfterMs: number, sentAt = 0) =>
    ({ kind: 'refusal', retryAfterMs, sentAt }) as const;

  it('is what every client was admitted in the window, in whole seconds, paced at HEADROOM once the block ends', () => {
    // 30 granted over 300 ms, the last of them refused at 300 with `Retry-After: 1`.
    const state = grantedState(30, 10);
    observe(state, limits, 300, waited(1_000, -20));
    // 29 admitted; the window at least their send span and the wait a second early: one second.
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo(29, 9);
    expect((state.rate?.perMs ?? 0) * 1_000).toBeCloseTo(29 * AIMD.HEADROOM, 9);
    expect(state.blockedUntil).toBe(1_300);
    // Blocked until then, then a permit every 1 / 27.55 s and half the refusal's 20 ms round trip
    // more per second (and one more for coming late).
    expect(decide(state, limits, 1_299, [1], false)[0]?.allowed).toBe(false);
    const granted = decide(state, limits, 1_300, [1, 1, 1], false).map((d) => d.allowed);
    expect(granted).toEqual([true, true, false]);
    const next = decide(state, limits, 1_300, [1], false)[0];
    expect(next?.retryAfterMs).toBe(Math.ceil((1_000 * 1.01) / (29 * AIMD.HEADROOM)));
    // Not grown past it: the next refusal measures again, or a minute without one raises it.
    const rate = state.rate as SharedRate;
    expect(rateAt(rate, 300 + 60_000 - 1)).toBeCloseTo(rate.perMs, 12);
    expect(rateAt(rate, 300 + 60_000)).toBeCloseTo(rate.perMs * AIMD.RAISE, 12);
  });

  it('is spaced by half the longest round trip of its refusals more per second, echoes and all', () => {
    // The server admitted 29 in its window: paced at HEADROOM of that, a twentieth to spare,
    // the arrivals of a second's sends spread over a second and up to half a round trip more
    // each way (three processes on one Redis store against rolling-rate-limiter through 5-60 ms
    // each way: refusals after two windows in three runs of four, none in eight with this).
    const state = grantedState(30, 10);
    observe(state, limits, 300, waited(1_000, -100));
    expect(state.rate?.roundTripMs).toBe(100);
    // Echoes (sent before it came): one that took longer widens it, one that took less does not
    // narrow it.
    observe(state, limits, 330, waited(1_000, -300));
    observe(state, limits, 340, waited(1_000, -120));
    const rate = state.rate as SharedRate;
    expect(rate.roundTripMs).toBe(300);
    // Once the block ends, a permit per `1 / rate` and 15% more (the first takes a late client's
    // credit).
    expect(decide(state, limits, 1_340, [1, 1], false).map((d) => d.allowed)).toEqual([true, true]);
    const spacing = 1 / rateAt(rate, 1_340);
    expect(peek(state, limits, 1_340, 1).retryAfterMs).toBe(Math.ceil(spacing * 1.15));
    // A rate bare refusals made is AIMD's, which finds what the server admits by itself.
    // A refusal slower than the rate's second counts as a second.
    observe(state, limits, 1_400, waited(1_000, -5_000));
    expect(state.rate?.roundTripMs).toBe(1_000);
    const bareRate = grantedState(30, 10);
    observe(bareRate, limits, 300, bare(-100));
    expect(bareRate.rate?.roundTripMs).toBe(0);
  });

  it('is read over whole seconds only for a wait of whole seconds', () => {
    const twoSeconds = grantedState(30, 10);
    observe(twoSeconds, limits, 300, waited(2_000, -20));
    expect((twoSeconds.rate?.ceiling ?? 0) * 1_000).toBeCloseTo(29 / 2, 9);
    // A wait to the ms: from the first grant to the wait's end, 550 ms.
    const exact = grantedState(30, 10);
    observe(exact, limits, 300, waited(250, -20));
    expect((exact.rate?.ceiling ?? 0) * 1_000).toBeCloseTo((29 * 1_000) / 550, 9);
  });

  it('is one permit slower for each refusal of a request sent before it came (an echo)', () => {
    const state = grantedState(30, 10);
    observe(state, limits, 300, waited(1_000, -20));
    observe(state, limits, 310, waited(1_000, -30));
    observe(state, limits, 312, waited(1_000, -20));
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo(27, 9);
    expect((state.rate?.perMs ?? 0) * 1_000).toBeCloseTo(27 * AIMD.HEADROOM, 9);
    // The sample after starts afresh: 20 granted from the last block's end, then a refusal
    // measures them alone, 19 in a second.
    expect(state.blockedUntil).toBe(1_312);
    for (let i = 0; i < 20; i++) decide(state, limits, 1_320 + i * 40, [1], false);
    observe(state, limits, 2_100, waited(1_000, -20));
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo(19, 9);
  });

  it('is held when the first permit after the block is refused (the window still spent), echoes and all', () => {
    // 29 admitted from 0 until the wait's end at 550: 52.7 per second, paced at 50.1.
    const state = grantedState(30, 10);
    observe(state, limits, 300, waited(250, -20));
    const ceiling = (29 * 1_000) / 550;
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo(ceiling, 9);
    // Four granted as the block ends, 20 ms apart; the first refused with another wait, then two
    // more: the server still counted the last window, which says nothing of the rate.
    const sends = [550, 570, 590, 610];
    for (const at of sends) expect(decide(state, limits, at, [1], false)[0]?.allowed).toBe(true);
    observe(state, limits, 620, waited(100, 550 - 620));
    observe(state, limits, 625, waited(95, 570 - 625));
    observe(state, limits, 630, waited(90, 590 - 630));
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo(ceiling, 9);
    expect((state.rate?.perMs ?? 0) * 1_000).toBeCloseTo(ceiling * AIMD.HEADROOM, 9);
    expect(state.blockedUntil).toBe(720);
    // A refusal past the probe measures again: the one admitted of the four and four of five
    // granted after the block, from the first of the four (550) until its wait's end.
    for (let i = 0; i < 5; i++) decide(state, limits, 720 + i * 20, [1], false);
    observe(state, limits, 820, waited(30, 800 - 820));
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo((5 * 1_000) / (850 - 550), 9);
  });

  it('is held by a refused probe once between two samples', () => {
    // Paced too fast (52.7 per second taught for a server of fewer): after each block one permit
    // is admitted and the next refused, 10 ms later, within a permit of the first.
    const state = grantedState(30, 10);
    observe(state, limits, 300, waited(250, -20));
    const ceiling = state.rate?.ceiling ?? 0;
    decide(state, limits, 550, [1], false);
    decide(state, limits, 560, [1], false);
    observe(state, limits, 565, waited(20, -5));
    expect(state.rate?.ceiling).toBe(ceiling);
    for (const at of [585, 605, 625])
      expect(decide(state, limits, at, [1], false)[0]?.allowed).toBe(true);
    observe(state, limits, 630, waited(20, 605 - 630));
    // Not held again, though the probe was refused: 3 admitted since 550, until the wait's end.
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo((3 * 1_000) / (650 - 550), 9);
  });

  it('after a sample its rate kept for a second or more, is no slower than KEPT of that rate', () => {
    // Taught 29 per second (27.55 paced), then paced at it for 1.6 s, all admitted but the last.
    const state = grantedState(30, 10);
    observe(state, limits, 300, waited(1_000, -20));
    const paced = (state.rate?.perMs ?? 0) * 1_000;
    for (let i = 0; i < 44; i++) {
      expect(decide(state, limits, 1_300 + i * 37, [1], false)[0]?.allowed).toBe(true);
    }
    observe(state, limits, 2_900, waited(1_000, -9));
    // Over whole seconds the 43 admitted read as two seconds' worth: 20.4 per second paced.
    // The rate they kept, just too fast: 0.9 of it.
    expect((state.rate?.perMs ?? 0) * 1_000).toBeCloseTo(paced * 0.9, 9);
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo((paced * 0.9) / AIMD.HEADROOM, 9);
    // A sample under a second says no such thing: 19 of 20 sent over 0.74 s, a second's worth.
    for (let i = 0; i < 20; i++) {
      expect(decide(state, limits, 3_900 + i * 39, [1], false)[0]?.allowed).toBe(true);
    }
    observe(state, limits, 4_650, waited(1_000, -10));
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo(19, 9);
  });

  it('counts in the next sample none of the last one’s echoes', () => {
    // 29 admitted from 0 until the wait's end at 350: 82.9 per second, paced at 78.7.
    const state = grantedState(30, 10);
    observe(state, limits, 300, waited(50, -20));
    // Twenty granted after the block, while three echoes of the first sample come.
    for (let i = 0; i < 20; i++) decide(state, limits, 350 + i * 20, [1], false);
    observe(state, limits, 355, waited(45, 270 - 355));
    observe(state, limits, 360, waited(40, 280 - 360));
    observe(state, limits, 365, waited(35, 290 - 365));
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo((26 * 1_000) / 350, 9);
    // Refused, the nineteenth of them: 19 admitted, from 350 until the wait's end (more than
    // SAMPLE_TRIPS of the echoes' 85 ms round trip).
    observe(state, limits, 760, waited(10, 710 - 760));
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo((19 * 1_000) / (770 - 350), 9);
    // An echo of the first sample now (sent before the second began) is none of the second's:
    // the rate stands. One of the second's shrinks it by a permit.
    const ceiling = state.rate?.ceiling ?? 0;
    observe(state, limits, 775, waited(10, 290 - 775));
    expect(state.rate?.ceiling).toBe(ceiling);
    observe(state, limits, 780, waited(10, 690 - 780));
    expect(state.rate?.ceiling).toBeCloseTo((ceiling * 18) / 19, 12);
  });

  it('is not made again from a sample spanning less than SAMPLE_TRIPS of its round trips: it goes on', () => {
    const state = grantedState(30, 10);
    observe(state, limits, 300, waited(50, -20));
    // An echo 100 ms on its way: the rate's longest round trip.
    observe(state, limits, 350, waited(50, 250 - 350));
    expect(state.rate?.roundTripMs).toBe(100);
    const ceiling = state.rate?.ceiling ?? 0;
    for (let i = 0; i < 16; i++) decide(state, limits, 400 + i * 20, [1], false);
    // A refusal 160 ms into the sample (170 with its wait): too short to say.
    observe(state, limits, 560, waited(10, 540 - 560));
    expect(state.rate?.ceiling).toBe(ceiling);
    // 330 ms in, it says: 14 of the 16 granted since 400 admitted.
    observe(state, limits, 720, waited(10, 700 - 720));
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo((14 * 1_000) / (730 - 400), 9);
  });

  it('is not taught by fewer than MIN_SAMPLE admitted: the sample goes on to the next refusal', () => {
    const state = grantedState(2, 10);
    observe(state, limits, 20, waited(1_000));
    expect(state.rate).toBeUndefined();
    expect(state.blockedUntil).toBe(1_020);
    for (let i = 0; i < 10; i++) decide(state, limits, 1_020 + i * 10, [1], false);
    observe(state, limits, 1_200, waited(1_000, -10));
    // 1 + 9 admitted since the first grant at 0, until 2 s: the window of two whole seconds.
    expect((state.rate?.ceiling ?? 0) * 1_000).toBeCloseTo(10 / 2, 9);
  });

  it('paces nothing a key’s own rate already paces slower', () => {
    const state = grantedState(300, 1);
    observe(state, limits, 300, waited(1_000));
    expect(state.rate).toBeUndefined();
    expect(state.blockedUntil).toBe(1_300);
  });
});

describe('pacers on a store that paces refusals', () => {
  it('are all held by the rate one of them heard refused', async () => {
    const clock = createManualClock();
    const fake = fakeStore({ now: clock.now });
    const [a, b] = [0, 1].map(() =>
      createPacer({ limits: perSecond(100), clock, store: fake.store }),
    ) as [ReturnType<typeof createPacer>, ReturnType<typeof createPacer>];
    a.observe('k', { kind: 'refusal' });
    // Nothing was admitted: half the key's own rate, 50 per second, after a pause of a permit.
    const started: number[] = [];
    const tasks = [0, 1, 2].map(() => b.schedule(() => started.push(clock.now()), { key: 'k' }));
    await turn();
    expect(started).toEqual([]);
    await clock.advanceAsync(100);
    await Promise.all(tasks);
    expect(started).toEqual([20, 40, 60]);
    // The pacer that heard it learned no rate of its own: the store's paces it.
    expect(a.inspect('k').learned).toBeUndefined();
    a.dispose();
    b.dispose();
  });

  it('are paced together by the rate a server that says only `Retry-After` admitted them all', async () => {
    // Three paced fetches, ten times too generous, against a fixed window of 30 per second
    // answering each refusal with nothing but a whole-second `Retry-After`.
    const { clock, backend, net } = servedThroughNetwork({
      scheme: 'fixed-window',
      limit: 30,
      windowMs: 1_000,
      dialect: 'retry-after',
      delayMs: [0, 0],
    });
    const fake = fakeStore({ now: clock.now });
    const clients = [0, 1, 2].map(() =>
      createPacedFetch({ limits: perSecond(300), store: fake.store, fetch: net.fetch, clock }),
    );
    const calls = Array.from({ length: 180 }, (_, i) =>
      (clients[i % 3] as (typeof clients)[0])(`https://api.test/n/${i}`),
    );
    const statuses = await settleAll(clock, net, calls, 60_000);
    expect(statuses.filter((status) => status === 200)).toHaveLength(180);
    // The first window's burst is refused; after it, none. Each pacer learning its own share
    // (fd94f3f: 10 per second each, one grown to 10 per 864 ms) earned a refusal in every
    // window after, at 1,240, 2,360, 3,480 and 4,600 ms.
    const refused = backend.hits.filter((hit) => hit.status === 429).map((hit) => hit.at);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.filter((at) => at >= 1_000)).toEqual([]);
    // The store paces them, at HEADROOM of the 30 per second it saw admitted: none learned a
    // rate of its own (their slow starts only bound what each has in flight).
    for (const client of clients) {
      expect(client.pacer.inspect('https://api.test').learned?.source).not.toBe('rate');
    }
    const last = Math.max(...backend.hits.map((hit) => hit.at));
    expect(last).toBeLessThan(1_000 + (150 * 1_000) / (30 * 0.9));
    for (const client of clients) client.pacer.dispose();
  });

  it('let a paced fetch retry a bare 429 at the store’s pace, spending no retry', async () => {
    const clock = createManualClock();
    const fake = fakeStore({ now: clock.now });
    const net = network({ clock, delayMs: [0, 0] });
    let calls = 0;
    server.use(
      http.get('https://api.test/*', () =>
        ++calls <= 3 ? new HttpResponse(null, { status: 429 }) : HttpResponse.json({ ok: true }),
      ),
    );
    const pacedFetch = createPacedFetch({
      limits: perSecond(100),
      store: fake.store,
      fetch: net.fetch,
      clock,
      retry: { limit: 0 },
    });
    const { statuses, done, all } = trackCalls([pacedFetch('https://api.test/x')]);
    await driveNetwork(clock, net, done, 60_000);
    await all;
    // `retry.limit: 0` returned the first bare 429 as final before. Now three refusals are
    // retried at the store's pace: one admitted in the last second makes a rate of about one
    // a second, doubling; 3.6 s in all, where the backoffs (1, 2 and 4 s) would take 7.
    expect(statuses).toEqual([200]);
    expect(calls).toBe(4);
    expect(clock.now()).toBeLessThan(4_000);
    pacedFetch.pacer.dispose();
  });
});
