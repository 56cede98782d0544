import { AIMD } from '../../src/core/adaptive-rate.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Decision } from '../../src/core/decision.js';
import { createPacerLimiter } from '../../src/core/pacer-limiter.js';
import { type Policy, perSecond, resolvePolicy } from '../../src/core/policy.js';
import { fixedWindow, gcra, tokenBucket } from '../../src/index.js';
import {
  adjust,
  assertShareable,
  block,
  decide,
  effectOf,
  effectOn,
  learn,
  lower,
  normalize,
  observe,
  peek,
  restsAt,
  spreadAt,
} from '../../src/stores/bucket-state.js';

const policyArb = fc
  .record({
    algorithm: fc.constantFrom(tokenBucket, gcra),
    limit: fc.integer({ min: 1, max: 50 }),
    windowMs: fc.constantFrom(1, 7, 100, 333, 1_000, 60_000),
    burst: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }),
  })
  .map(({ burst, ...rest }): Policy => (burst === undefined ? rest : { ...rest, burst }));

type Op =
  | { kind: 'take'; dt: number; costs: number[]; stop: boolean }
  | { kind: 'peek'; dt: number; cost: number }
  | { kind: 'lower'; dt: number; remaining: number }
  | { kind: 'block'; dt: number; ms: number };

const dtArb = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 0, max: 2_000 }),
  fc.double({ min: 0, max: 50, noNaN: true }),
);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('take' as const),
      dt: dtArb,
      costs: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 4 }),
      stop: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('peek' as const),
      dt: dtArb,
      cost: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('lower' as const),
      dt: dtArb,
      remaining: fc.integer({ min: 0, max: 5 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('block' as const),
      dt: dtArb,
      ms: fc.integer({ min: 1, max: 3_000 }),
    }),
  },
);

describe('the shared bucket: the core arithmetic on plain, storable numbers', () => {
  it('decides exactly as the core limiter, for one policy or several, near zero or near 1.7e12 ms', () => {
    fc.assert(
      fc.property(
        fc.array(policyArb, { minLength: 1, maxLength: 2 }),
        fc.constantFrom(0, 1_732_000_000_123.456),
        fc.array(opArb, { maxLength: 40 }),
        (policies, base, ops) => {
          let now = base;
          const limiter = createPacerLimiter({ limits: policies, clock: { now: () => now } });
          const limits = policies.map((policy) => resolvePolicy(policy));
          const capacity = Math.min(...limits.map((l) => l.capacity));
          // The first take creates the core's state, as the shared state exists from its first use.
          limiter.tryAcquire('k', 1);
          let state = normalize(undefined, limits, now);
          decide(state, limits, now, [1], false);
          for (const op of ops) {
            now += op.dt;
            // Round-trip through a structured clone, as IndexedDB stores it.
            state = normalize(structuredClone(state), limits, now);
            switch (op.kind) {
              case 'take': {
                const costs = op.costs.map((cost) => Math.min(cost, capacity));
                const expected = [];
                for (const cost of costs) {
                  const decision = limiter.tryAcquire('k', cost);
                  expected.push(decision);
                  if (op.stop && !decision.allowed) break;
                }
                expect(decide(state, limits, now, costs, op.stop)).toEqual(expected);
                break;
              }
              case 'peek': {
                const cost = Math.min(op.cost, capacity);
                expect(peek(state, limits, now, cost)).toEqual(limiter.peek('k', cost));
                break;
              }
              case 'lower':
                limiter.feedback.observe('k', { kind: 'quota', remaining: op.remaining });
                lower(state, limits, now, op.remaining);
                expect(peek(state, limits, now, 1)).toEqual(limiter.peek('k', 1));
                break;
              case 'block':
                limiter.feedback.blockUntil('k', now + op.ms);
                block(state, now + op.ms);
                break;
            }
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('decides exactly as the core for limits per unit: one amount per policy, a count per unit', () => {
    // The limit a decision names is the binding policy's in a store, and the tightest of its
    // unit in the core when the request needs none of that unit: both true, not always equal.
    const withoutLimit = ({ limit: _limit, ...decision }: Decision) => decision;
    type UnitOp =
      | { kind: 'take'; dt: number; amounts: [number, number][]; stop: boolean }
      | { kind: 'lower'; dt: number; unit: 'requests' | 'tokens'; remaining: number }
      | { kind: 'block'; dt: number; ms: number };
    const amountsArb = fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 40 }));
    const unitOpArb: fc.Arbitrary<UnitOp> = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({
          kind: fc.constant('take' as const),
          dt: dtArb,
          amounts: fc.array(amountsArb, { minLength: 1, maxLength: 4 }),
          stop: fc.boolean(),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('lower' as const),
          dt: dtArb,
          unit: fc.constantFrom<'requests' | 'tokens'>('requests', 'tokens'),
          remaining: fc.integer({ min: 0, max: 30 }),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('block' as const),
          dt: dtArb,
          ms: fc.integer({ min: 1, max: 3_000 }),
        }),
      },
    );
    const tokensArb = policyArb.map((policy) => ({
      ...policy,
      limit: policy.limit + 40,
      ...(policy.burst === undefined ? {} : { burst: policy.burst + 40 }),
    }));
    fc.assert(
      fc.property(
        policyArb,
        fc.array(tokensArb, { minLength: 1, maxLength: 2 }),
        fc.constantFrom(0, 1_732_000_000_123.456),
        fc.array(unitOpArb, { maxLength: 40 }),
        (requests, tokens, base, ops) => {
          let now = base;
          const limiter = createPacerLimiter({
            limits: { requests, tokens },
            clock: { now: () => now },
          });
          const limits = [requests, ...tokens].map((policy) => resolvePolicy(policy));
          const units = ['requests', ...tokens.map(() => 'tokens')];
          const cap = (unit: number) =>
            Math.min(...limits.filter((_, i) => units[i] === units[unit]).map((l) => l.capacity));
          limiter.tryAcquire('k', { requests: 1 });
          let state = normalize(undefined, limits, now);
          decide(state, limits, now, [[1, ...tokens.map(() => 0)]], false);
          for (const op of ops) {
            now += op.dt;
            state = normalize(structuredClone(state), limits, now);
            switch (op.kind) {
              case 'take': {
                const asked = op.amounts.map(([r, t]) => [
                  Math.min(r, cap(0)),
                  Math.min(t, cap(1)),
                ]);
                const expected = [];
                for (const [r, t] of asked) {
                  const decision = limiter.tryAcquire('k', { requests: r ?? 0, tokens: t ?? 0 });
                  expected.push(decision);
                  if (op.stop && !decision.allowed) break;
                }
                const costs = asked.map(([r, t]) => [r ?? 0, ...tokens.map(() => t ?? 0)]);
                const decided = decide(state, limits, now, costs, op.stop);
                expect(decided.map(withoutLimit)).toEqual(expected.map(withoutLimit));
                break;
              }
              case 'lower':
                limiter.feedback.observe('k', {
                  kind: 'quota',
                  remaining: op.remaining,
                  unit: op.unit,
                });
                observe(
                  state,
                  limits,
                  now,
                  { kind: 'quota', remaining: op.remaining, unit: op.unit },
                  units,
                );
                break;
              case 'block':
                limiter.feedback.blockUntil('k', now + op.ms);
                block(state, now + op.ms);
                break;
            }
            const probe = [1, ...tokens.map(() => 1)];
            expect(withoutLimit(peek(state, limits, now, probe))).toEqual(
              withoutLimit(limiter.peek('k', { requests: 1, tokens: 1 })),
            );
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('rests when full and unblocked, and not before', () => {
    const limits = [resolvePolicy({ limit: 10, windowMs: 10_000 })];
    const state = normalize(undefined, limits, 1_000);
    expect(restsAt(state, limits, 1_000)).toBe(1_000);
    decide(state, limits, 1_000, [4], false);
    expect(restsAt(state, limits, 1_000)).toBe(5_000);
    block(state, 8_000);
    expect(restsAt(state, limits, 1_000)).toBe(8_000);
    // What was admitted is kept ADMISSIONS_MS for the rate a first bare refusal makes, even
    // by a key that is full again long before (Redis forgot them between its grants).
    const fast = [resolvePolicy(perSecond(600))];
    const busy = normalize(undefined, fast, 1_000);
    decide(busy, fast, 1_000, [1], false);
    expect(restsAt(busy, fast, 1_000)).toBe(1_000 + AIMD.ADMISSIONS_MS);
  });

  it('starts a part fresh when its stored state is missing or malformed', () => {
    const limits = [
      resolvePolicy(perSecond(3)),
      resolvePolicy({ ...perSecond(2), algorithm: gcra }),
    ];
    const state = normalize(
      { stamps: [5, 'x'], values: [1], blockedUntil: Number.NaN },
      limits,
      10,
    );
    expect(state).toEqual({ stamps: [5, 10], values: [1, 0], blockedUntil: 0 });
  });

  it('counts only with the token bucket and GCRA', () => {
    expect(() =>
      assertShareable([resolvePolicy({ limit: 1, windowMs: 1, algorithm: fixedWindow })], 'x'),
    ).toThrow(/counts with `tokenBucket` or `gcra`, got `fixedWindow`/);
  });
});

describe('a spaced policy, spread by the round trip its clients told (spreadAt)', () => {
  const spaced = resolvePolicy({ ...perSecond(60), algorithm: tokenBucket, burst: 1 });
  const bursty = resolvePolicy({ ...perSecond(60), algorithm: gcra, burst: 5 });
  const slow = resolvePolicy({ limit: 10, windowMs: 60_000, algorithm: tokenBucket, burst: 1 });

  it('widens a policy without a burst by half the longest round trip told, at most by half', () => {
    const limits = [spaced, bursty, slow];
    const state = normalize(undefined, limits, 0);
    const spread = spreadAt(state, limits, 0, 83, true);
    expect(spread.map((policy) => policy.windowMs)).toEqual([1_042, 1_000, 60_042]);
    expect(spread[0]).toMatchObject({ limit: 60, capacity: 1, algorithm: 'token-bucket' });
    expect(spread[1]).toBe(bursty);
    // Kept for the next client, which told none, and shorter ones do not lower it.
    expect(spreadAt(state, limits, 0, 0, true)[0]?.windowMs).toBe(1_042);
    expect(spreadAt(state, limits, 0, 20, true)[0]?.windowMs).toBe(1_042);
    const long = normalize(undefined, [spaced], 0);
    expect(spreadAt(long, [spaced], 0, 60_000, true)[0]?.windowMs).toBe(1_500);
  });

  it("halves the round trip held every longest window of the key's since it was told", () => {
    const limits = [spaced];
    const state = normalize(undefined, limits, 0);
    spreadAt(state, limits, 0, 80, true);
    expect(spreadAt(state, limits, 1_000, 0, true)[0]?.windowMs).toBe(1_020);
    expect(spreadAt(state, limits, 2_000, 0, true)[0]?.windowMs).toBe(1_010);
    // A peek tells, and keeps nothing.
    expect(spreadAt(state, limits, 2_000, 100, false)[0]?.windowMs).toBe(1_050);
    expect(state).toMatchObject({ roundTripMs: 80, roundTripAt: 0 });
    // Stored as numbers, read back as they were; garbage starts without one.
    expect(normalize(structuredClone(state), limits, 2_000)).toMatchObject({ roundTripMs: 80 });
    const junk = { ...state, roundTripMs: 'x' };
    expect(normalize(junk, limits, 2_000).roundTripMs).toBeUndefined();
  });

  it("spaces every client's takes so, a client's first take before its own first answer too", () => {
    const limits = [spaced];
    const state = normalize(undefined, limits, 0);
    // One client, whose answers took 100 ms, takes; another, that heard none, asks next.
    expect(decide(state, limits, 0, [1], false, 100)[0]?.allowed).toBe(true);
    const next = decide(state, limits, 1_000 / 60, [1], false, 0)[0];
    expect(next).toMatchObject({ allowed: false, reason: 'rate' });
    // The token refilled since the take counts over the spread window: 1050 / 60 ms apart.
    expect(decide(state, limits, 1_050 / 60 - 0.01, [1], false, 0)[0]?.allowed).toBe(false);
    expect(decide(state, limits, 1_050 / 60, [1], false, 0)[0]?.allowed).toBe(true);
    expect(peek(state, limits, 1_050 / 60, 1, 0).allowed).toBe(false);
  });

  it('leaves the limits as they are without a round trip, or without a policy to spread', () => {
    const limits = [spaced];
    expect(spreadAt(normalize(undefined, limits, 0), limits, 0, 0, true)).toBe(limits);
    expect(spreadAt(normalize(undefined, limits, 0), limits, 0, Number.NaN, true)).toBe(limits);
    const withBursts = [bursty];
    const state = normalize(undefined, withBursts, 0);
    expect(spreadAt(state, withBursts, 0, 80, true)).toBe(withBursts);
    expect(state.roundTripMs).toBeUndefined();
  });
});

describe('a policy learned through a store (SharedLearned)', () => {
  const limits = [resolvePolicy(perSecond(1_000))];
  const learned = (now = 0) => {
    const state = normalize(undefined, limits, now);
    learn(state, now, 4, 1_000);
    return state;
  };

  it('is counted by every take, its rate spread evenly: one permit per window / limit', () => {
    const state = learned();
    const at = (now: number) => decide(state, limits, now, [1], false)[0]?.allowed;
    expect(at(0)).toBe(true);
    // A window and a late client's credit (LATE_MS) per 4.
    expect(decide(state, limits, 0, [1], false)[0]).toMatchObject({
      allowed: false,
      reason: 'rate',
      retryAfterMs: 251,
      limit: 4,
    });
    expect(at(250)).toBe(false);
    expect(at(251)).toBe(true);
  });

  it('keeps a late client the credit of a few ms, from a window after it was learned', () => {
    const state = learned();
    const at = (now: number) => decide(state, limits, now, [1], false)[0]?.allowed;
    // In its first window, 10 ms late for the permit due at 251: the next is a spacing later.
    expect(at(0)).toBe(true);
    expect(at(261)).toBe(true);
    expect(peek(state, limits, 261, 1).retryAfterMs).toBe(251);
    // From a window after, 4 ms of the lateness are kept: the next is 4 ms sooner, and a
    // client that came on time gets no more.
    expect(at(1_512)).toBe(true);
    expect(at(1_773)).toBe(true);
    expect(peek(state, limits, 1_773, 1).retryAfterMs).toBe(247);
    expect(at(2_020)).toBe(true);
    expect(peek(state, limits, 2_020, 1).retryAfterMs).toBe(251);
    // However long it waited, one permit's credit at most: never two within a spacing.
    expect(at(9_000)).toBe(true);
    expect(at(9_000)).toBe(false);
  });

  it('keeps it for a window inferred from a reset too', () => {
    // Without it, three processes on one Redis store, 10x generous, ran at 0.86-0.88x of the
    // rate of real fixed windows stating `X-RateLimit-*` through 5-60 ms of jitter.
    const state = normalize(undefined, limits, 0);
    learn(state, 0, 4, 1_000, 0, true);
    const at = (now: number) => decide(state, limits, now, [1], false)[0]?.allowed;
    expect(at(0)).toBe(true);
    expect(peek(state, limits, 0, 1).retryAfterMs).toBe(251);
    expect(at(1_512)).toBe(true);
    expect(at(1_773)).toBe(true);
    expect(peek(state, limits, 1_773, 1).retryAfterMs).toBe(247);
  });

  it('takes a count of 0 of an inferred window its spacing reached as its own, from a window after it was learned', () => {
    // A sliding log's reset is when it is empty again, a sliding-window counter's when its
    // window ends: blocked until then at each count of 0 the spacing had reached, three
    // processes on one store ran at 0.57x of such a counter's rate on loopback.
    const state = normalize(undefined, limits, 0);
    learn(state, 0, 4, 1_000, 0, true);
    const zero = { kind: 'quota', remaining: 0, limit: 4, resetMs: 900 } as const;
    expect(decide(state, limits, 10, [1], false)[0]?.allowed).toBe(true);
    // In the window it was learned in, the server counts requests the spacing did not.
    observe(state, limits, 20, zero);
    expect(peek(state, limits, 20, 1)).toMatchObject({ allowed: false, reason: 'blocked' });
    expect(peek(state, limits, 919, 1).allowed).toBe(false);
    expect(peek(state, limits, 920, 1).allowed).toBe(true);
    // A window after: its count of 0 is the key's own, and the next permit is a spacing on
    // (less a late client's credit), not at the reset.
    expect(decide(state, limits, 1_500, [1], false)[0]?.allowed).toBe(true);
    observe(state, limits, 1_510, { ...zero, resetMs: 990 });
    expect(peek(state, limits, 1_746, 1)).toMatchObject({ allowed: false, reason: 'rate' });
    expect(peek(state, limits, 1_747, 1).allowed).toBe(true);
    // With a permit to give, a count of a request sent after its last take is of requests it
    // did not count: it blocks.
    observe(state, limits, 1_747, { ...zero, resetMs: 990, sentAt: -200 });
    expect(peek(state, limits, 1_747, 1)).toMatchObject({ allowed: false, reason: 'blocked' });
    expect(peek(state, limits, 2_737, 1).allowed).toBe(true);
  });

  it('takes a count of 0 answered after its next take as its own, with a permit to give again', () => {
    // Answered a round trip late (5-60 ms each way), a count of 0 of a sliding-window counter
    // found the spacing due again, and blocked every client until the counter's window ended.
    const zero = { kind: 'quota', remaining: 0, limit: 4, resetMs: 800 } as const;
    const counted = (sentAt: number) => {
      const state = normalize(undefined, limits, 0);
      learn(state, 0, 4, 1_000, 0, true);
      expect(decide(state, limits, 1_500, [1], false)[0]?.allowed).toBe(true);
      expect(decide(state, limits, 1_747, [1], false)[0]?.allowed).toBe(true);
      observe(state, limits, 2_000, { ...zero, sentAt });
      return state;
    };
    // Sent at 1_500, answered at 2_000 with a permit due again: taken since, it is its own (the
    // key's own 1,000 a second, lowered to the count, has the next a ms on).
    expect(peek(counted(-500), limits, 2_001, 1).allowed).toBe(true);
    // Sent at 1_800, after its last take: not its own.
    const after = counted(-200);
    expect(peek(after, limits, 2_001, 1)).toMatchObject({ allowed: false, reason: 'blocked' });
    expect(peek(after, limits, 2_800, 1).allowed).toBe(true);
  });

  it("takes a count of 0 of the key's own limit, nothing learned, as its own when its spacing agrees", () => {
    // Told the published 4 per second (spaced): a window inferred of it is its own policy's to
    // count (none learned), and a count of 0 at a window's end blocked every client until a
    // sliding-window counter's reset, every other second.
    const told = [resolvePolicy({ limit: 4, windowMs: 1_000, algorithm: tokenBucket, burst: 1 })];
    const zero = { kind: 'quota', remaining: 0, limit: 4, resetMs: 900 } as const;
    const state = normalize(undefined, told, 0);
    for (const at of [0, 250, 500, 750]) {
      expect(decide(state, told, at, [1], false)[0]?.allowed).toBe(true);
    }
    // No permit to give: its own; the next permit a spacing on, not at the reset.
    observe(state, told, 751, { ...zero, sentAt: -1 });
    expect(state.learned).toBeUndefined();
    expect(peek(state, told, 999, 1)).toMatchObject({ allowed: false, reason: 'rate' });
    expect(peek(state, told, 1_010, 1).allowed).toBe(true);
    // Answered after a take since its request was sent, with a permit due again: its own (the
    // 300 ms it took spreads the spacing to 287.5 ms a permit).
    expect(decide(state, told, 1_010, [1], false)[0]?.allowed).toBe(true);
    observe(state, told, 1_260, { ...zero, sentAt: -300 });
    expect(peek(state, told, 1_260, 1)).toMatchObject({ allowed: false, reason: 'rate' });
    expect(peek(state, told, 1_560, 1).allowed).toBe(true);
    // Sent after the last change, with a permit to give: other clients' requests; it blocks.
    observe(state, told, 1_560, { ...zero, sentAt: -100 });
    expect(peek(state, told, 1_560, 1)).toMatchObject({ allowed: false, reason: 'blocked' });
    // Another limit than its own, or a key that took nothing, is blocked too.
    const other = normalize(undefined, told, 0);
    decide(other, told, 0, [1], false);
    observe(other, told, 1, { ...zero, limit: 5, sentAt: -1 });
    expect(peek(other, told, 250, 1)).toMatchObject({ allowed: false, reason: 'blocked' });
    const fresh = normalize(undefined, told, 100);
    observe(fresh, told, 100, { ...zero, sentAt: -50 });
    expect(peek(fresh, told, 100, 1)).toMatchObject({ allowed: false, reason: 'blocked' });
  });

  it("is learned per unit: a tokens policy spreads a key's tokens, and the requests keep theirs", () => {
    const units = ['requests', 'tokens'];
    const both = [resolvePolicy(perSecond(100)), resolvePolicy(perSecond(100_000))];
    const state = normalize(undefined, both, 0);
    const policy = { kind: 'policy', limit: 1_000, windowMs: 1_000, unit: 'tokens' } as const;
    observe(state, both, 0, policy, units);
    expect(state.learned).toEqual([
      { limit: 1_000, windowMs: 1_000, of: 1, stamp: 0, debt: 0, from: 0 },
    ]);
    // 500 tokens go when due, and pay 500 ms of the learned 1,000 a second (and 0.5 ms of a
    // late client's credit: at most one token's time, 1 ms, a window).
    expect(decide(state, both, 0, [[1, 500]], false)[0]?.allowed).toBe(true);
    expect(peek(state, both, 0, [1, 1])).toMatchObject({ allowed: false, retryAfterMs: 501 });
    // A request that needs no tokens is not held by them.
    expect(peek(state, both, 0, [1, 0]).allowed).toBe(true);
    // The answer said 100 were used: the 400 given back leave the spread too.
    adjust(state, both, 0, [0, -400]);
    expect(peek(state, both, 0, [1, 1])).toMatchObject({ allowed: false, retryAfterMs: 101 });
    expect(peek(state, both, 101, [1, 1]).allowed).toBe(true);
  });

  it('spaces its permits by a window and half the round trip its answers took, per permit', () => {
    // The server counts arrivals, which jitter spreads by up to about half a round trip each
    // way: sends a window and that apart per 4 arrive no more than 4 in any window.
    const state = normalize(undefined, limits, 0);
    const policy = { kind: 'policy', limit: 4, windowMs: 1_000 } as const;
    observe(state, limits, 0, { ...policy, sentAt: -400 });
    expect(decide(state, limits, 0, [1], false)[0]?.allowed).toBe(true);
    expect(peek(state, limits, 0, 1).retryAfterMs).toBe(301);
    // A shorter round trip does not narrow it at once: the longest heard halves each window.
    observe(state, limits, 0, { ...policy, sentAt: -100 });
    expect(peek(state, limits, 0, 1).retryAfterMs).toBe(301);
    expect(decide(state, limits, 1_000, [1], false)[0]?.allowed).toBe(true);
    // 276 apart, less the 4 ms a client late for its permit keeps a window after learning.
    expect(peek(state, limits, 1_000, 1).retryAfterMs).toBe(272);
    // A longer one widens it at once, a count's answer as a policy's; a new policy keeps the
    // network's round trip.
    observe(state, limits, 1_000, { kind: 'quota', remaining: 3, sentAt: -600 });
    learn(state, 1_000, 2, 1_000);
    expect(decide(state, limits, 1_000, [1], false)[0]?.allowed).toBe(true);
    expect(peek(state, limits, 1_000, 1).retryAfterMs).toBe(652);
    // A signal that does not say when its request was sent changes nothing.
    observe(state, limits, 1_000, { kind: 'policy', limit: 2, windowMs: 1_000 });
    expect(state.learned?.[0]).toMatchObject({ roundTripMs: 600, heardAt: 1_000 });
    // One request slower than a window (a long poll) counts as a window: at most 1.5 windows
    // per permit, not half its 60 s.
    observe(state, limits, 1_800, { ...policy, limit: 2, sentAt: -60_000 });
    expect(state.learned?.[0]).toMatchObject({ roundTripMs: 1_000, heardAt: 1_800 });
    expect(decide(state, limits, 1_800, [1], false)[0]?.allowed).toBe(true);
    expect(peek(state, limits, 1_800, 1).retryAfterMs).toBe(752);
  });

  it('lets a request bigger than one permit go when due, and makes it pay for all of it', () => {
    const state = learned();
    expect(decide(state, limits, 0, [3], false)[0]?.allowed).toBe(true);
    expect(peek(state, limits, 0, 1).retryAfterMs).toBe(753);
  });

  it('keeps its count for the same policy, or a window within a tenth; another starts afresh', () => {
    const state = learned();
    decide(state, limits, 0, [1], false);
    learn(state, 10, 4, 950);
    expect(peek(state, limits, 10, 1).retryAfterMs).toBe(241);
    learn(state, 10, 8, 1_000);
    expect(peek(state, limits, 10, 1).allowed).toBe(true);
  });

  it('is not lowered by a count, and outlives a full bucket by two of its windows', () => {
    const state = learned(100);
    lower(state, limits, 100, 0);
    expect(state.learned).toEqual([
      { limit: 4, windowMs: 1_000, of: 0, stamp: 100, debt: 0, from: 100 },
    ]);
    expect(restsAt(state, limits, 200)).toBe(2_100);
  });

  it('is read back only when every field is sound, and learns nothing it cannot hold', () => {
    const stored = { stamps: [0], values: [1_000], blockedUntil: 0 };
    const read = (...learnedParts: unknown[]) =>
      normalize({ ...stored, learned: learnedParts }, limits, 0).learned;
    const sound = { limit: 4, windowMs: 1_000, of: 0, stamp: 5, debt: 1 };
    expect(read(sound)).toEqual([sound]);
    expect(read({ ...sound, limit: 4.5 })).toBeUndefined();
    expect(read({ ...sound, stamp: 'x' })).toBeUndefined();
    // A unit the key's limits do not have (policy 1 of one), or a second of the same unit.
    expect(read({ ...sound, of: 1 })).toBeUndefined();
    expect(read(sound, { ...sound, limit: 9 })).toEqual([sound]);
    expect(read(null)).toBeUndefined();
    expect(normalize({ ...stored, learned: sound }, limits, 0).learned).toBeUndefined();
    expect(effectOf({ kind: 'policy', limit: 1e12, windowMs: 1 }).learns).toBeUndefined();
    expect(effectOf({ kind: 'policy', limit: 5, windowMs: 0.5 }).learns).toBeUndefined();
    expect(effectOf({ kind: 'policy', limit: 5, windowMs: 1_000 }).learns).toEqual({
      limit: 5,
      windowMs: 1_000,
      of: 0,
    });
    // A round trip is read back with the time it was heard, or not at all.
    const heard = { ...sound, roundTripMs: 80, heardAt: 3 };
    expect(read(heard)).toEqual([heard]);
    // When it was learned, if a number (absent: long ago).
    expect(read({ ...sound, from: 2 })).toEqual([{ ...sound, from: 2 }]);
    expect(read({ ...sound, from: 'x' })).toEqual([sound]);
    expect(read({ ...sound, roundTripMs: Number.NaN, heardAt: 3 })).toEqual([sound]);
    expect(read({ ...sound, roundTripMs: 80 })).toEqual([sound]);
    // A policy in a unit the key does not count teaches nothing; in one it counts, that unit.
    const policy = { kind: 'policy', limit: 5, windowMs: 1_000, unit: 'tokens' } as const;
    expect(effectOn(policy, 1, undefined)).toBeUndefined();
    expect(effectOn(policy, 3, ['requests', 'tokens', 'tokens'])?.learns).toEqual({
      limit: 5,
      windowMs: 1_000,
      of: 1,
    });
  });
});
