import { describe, expect, it } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { createPacer, defineStore, type Store, type StoreCall } from '../../src/pacer/index.js';
import { RoundTrips } from '../../src/pacer/round-trips.js';
import { createManualClock } from '../../src/testing/index.js';

describe('RoundTrips', () => {
  it('holds the longest of the recent answers, and lets a faster network in after 16', () => {
    const trips = new RoundTrips();
    trips.heard('k', 30, 0, 2_000);
    trips.heard('k', 110, 1, 2_000);
    trips.heard('k', 20, 2, 2_000);
    expect(trips.of('k', 3)).toBe(110);
    // The 110 ms answer is in the first half of eight; the second half holds it as the older.
    for (let at = 3; at < 15; at++) trips.heard('k', 20, at, 2_000);
    expect(trips.of('k', 15)).toBe(110);
    // The sixteenth answer fills the second half, and the first goes.
    trips.heard('k', 20, 15, 2_000);
    expect(trips.of('k', 16)).toBe(20);
    expect(trips.of('other', 16)).toBe(0);
  });

  it('forgets a key not heard from for its keep time', () => {
    const trips = new RoundTrips();
    trips.heard('k', 50, 0, 2_000);
    expect(trips.of('k', 2_000)).toBe(50);
    expect(trips.of('k', 2_001)).toBe(0);
    // Heard again, it starts afresh.
    trips.heard('k', 10, 2_500, 2_000);
    expect(trips.of('k', 2_500)).toBe(10);
  });

  it('ignores a round trip that is no time', () => {
    const trips = new RoundTrips();
    for (const ms of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) trips.heard('k', ms, 0, 1_000);
    expect(trips.of('k', 0)).toBe(0);
  });
});

describe("a pacer's calls to its store", () => {
  it("tell the round trip the key's answers took, each key its own", async () => {
    const clock = createManualClock();
    const told: (number | undefined)[] = [];
    const allowed = { allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 0, limit: 60 };
    const store: Store = {
      synchronous: true,
      take(_key, _cost, call: StoreCall) {
        told.push(call.roundTripMs);
        return allowed;
      },
      peek: () => allowed,
      block() {},
      observe() {},
    };
    const pacer = createPacer({ limits: perSecond(60), clock, store: defineStore(store) });
    await pacer.schedule(() => 'first', { key: 'k' });
    clock.advance(90);
    // An answer that says when its request was sent (the paced fetch's, with learning on).
    pacer.observe('k', { kind: 'answered', sentAt: 0 });
    await pacer.schedule(() => 'second', { key: 'k' });
    await pacer.schedule(() => 'other', { key: 'other' });
    expect(told).toEqual([0, 90, 0]);
    pacer.dispose();
  });
});
