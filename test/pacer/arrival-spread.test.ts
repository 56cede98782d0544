import { describe, expect, it } from 'vitest';
import { gcra } from '../../src/core/algorithms/gcra.js';
import { perMinute, perSecond, resolvePolicy } from '../../src/core/policy.js';
import { RoundTrips, spreadFor } from '../../src/pacer/arrival-spread.js';
import { createPacer, defineStore, type Store, type StoreCall } from '../../src/pacer/index.js';
import { createManualClock } from '../../src/testing/index.js';

const spaced = resolvePolicy({ ...perSecond(60), algorithm: gcra, burst: 1 });
const bursty = resolvePolicy({ ...perSecond(60), algorithm: gcra, burst: 5 });
const slow = resolvePolicy({ ...perMinute(10), algorithm: gcra, burst: 1 });

describe('spreadFor', () => {
  it('widens the window of a policy without a burst by half the round trip', () => {
    const limits = Object.freeze([spaced, bursty, slow]);
    const spread = spreadFor(limits, 83);
    expect(spread.map((policy) => policy.windowMs)).toEqual([1_042, 1_000, 60_042]);
    // The rest of each policy is its own: a bursty one, the same object.
    expect(spread[0]).toMatchObject({ limit: 60, capacity: 1, algorithm: 'gcra' });
    expect(spread[1]).toBe(bursty);
    expect(Object.isFrozen(spread) && Object.isFrozen(spread[0])).toBe(true);
  });

  it('gives the same array again while the whole ms of half the round trip stays', () => {
    const limits = Object.freeze([spaced]);
    const first = spreadFor(limits, 81);
    expect(spreadFor(limits, 82)).toBe(first);
    const longer = spreadFor(limits, 83);
    expect(longer).not.toBe(first);
    expect(spreadFor(limits, 84)).toBe(longer);
  });

  it('leaves the limits as they are without a round trip, or without a policy to spread', () => {
    const limits = Object.freeze([spaced]);
    expect(spreadFor(limits, 0)).toBe(limits);
    expect(spreadFor(limits, Number.NaN)).toBe(limits);
    const withBursts = Object.freeze([bursty]);
    expect(spreadFor(withBursts, 80)).toBe(withBursts);
  });

  it('widens a window by half of it at most, whatever the round trip', () => {
    const limits = Object.freeze([spaced]);
    expect(spreadFor(limits, 60_000)[0]?.windowMs).toBe(1_500);
  });
});

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
    expect(trips.of('other', 17)).toBe(0);
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
  it("carry its spaced policies widened by half the round trip the key's answers took", async () => {
    const clock = createManualClock();
    const windows: number[] = [];
    const store: Store = {
      synchronous: true,
      take(_key, _cost, call: StoreCall) {
        windows.push(call.limits[0]?.windowMs as number);
        return { allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 0, limit: 60 };
      },
      peek: () => ({ allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 0, limit: 60 }),
      block() {},
      observe() {},
    };
    const pacer = createPacer({
      limits: { ...perSecond(60), algorithm: gcra, burst: 1 },
      clock,
      store: defineStore(store),
    });
    await pacer.schedule(() => 'first', { key: 'k' });
    clock.advance(90);
    pacer.observe('k', { kind: 'answered', sentAt: 0 });
    await pacer.schedule(() => 'second', { key: 'k' });
    // Another key's round trip is its own.
    await pacer.schedule(() => 'other', { key: 'other' });
    expect(windows).toEqual([1_000, 1_045, 1_000]);
    pacer.dispose();
  });
});
