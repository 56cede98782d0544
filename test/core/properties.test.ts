import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Algorithm,
  createRateLimiter,
  type Decision,
  fixedWindow,
  gcra,
  type Policy,
  type PolicyInput,
  type RateLimiter,
  slidingLog,
  slidingWindow,
  tokenBucket,
} from '../../src/index.js';
import { createManualClock } from '../../src/testing/index.js';

// Property tests of the core against DESIGN.md "Semantics", over random policies of all five
// algorithms, random costs and random non-decreasing call times (whole ms, quarter ms, or any
// double). Each property replays whole runs on fresh limiters, so a probe never disturbs the run
// it checks.

// ---------------------------------------------------------------------------------------------
// Generators

const ALGORITHMS: readonly Algorithm[] = [
  tokenBucket,
  gcra,
  slidingLog,
  slidingWindow,
  fixedWindow,
];

const aLimit = fc.integer({ min: 1, max: 20 });
const aWindowMs = fc.oneof(
  fc.constantFrom(1, 7, 100, 333, 1000, 60_000),
  fc.integer({ min: 1, max: 10_000 }),
);
const aBurst = fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined });

function aPolicyOf(algorithm: Algorithm): fc.Arbitrary<Policy> {
  return fc
    .record({ limit: aLimit, windowMs: aWindowMs, burst: aBurst })
    .map(({ limit, windowMs, burst }) =>
      algorithm.burst === 'capacity' && burst !== undefined
        ? { algorithm, limit, windowMs, burst }
        : { algorithm, limit, windowMs },
    );
}

const anyPolicy = fc.constantFrom(...ALGORITHMS).chain(aPolicyOf);

/** Token-bucket/gcra parameters without the algorithm, to run both on the same rate. */
const aRate = fc
  .record({ limit: aLimit, windowMs: aWindowMs, burst: aBurst })
  .map(({ limit, windowMs, burst }) =>
    burst === undefined ? { limit, windowMs } : { limit, windowMs, burst },
  );

const capacityOf = (policy: Policy): number => policy.burst ?? policy.limit;

const policiesOf = (input: PolicyInput): readonly Policy[] =>
  Array.isArray(input) ? input : [input as Policy];

/** The time scales a run of calls should explore for these policies. */
interface Pace {
  /** Most one call may cost. */
  readonly capacity: number;
  /** The fastest policy's time per permit. */
  readonly permitMs: number;
  /** The longest window. */
  readonly windowMs: number;
}

function paceOf(input: PolicyInput): Pace {
  const policies = policiesOf(input);
  return {
    capacity: Math.min(...policies.map(capacityOf)),
    permitMs: Math.min(...policies.map((p) => p.windowMs / p.limit)),
    windowMs: Math.max(...policies.map((p) => p.windowMs)),
  };
}

type Timing = 'whole ms' | 'quarter ms' | 'any double';
const ALL_TIMINGS: readonly Timing[] = ['whole ms', 'quarter ms', 'any double'];

/** Mostly whole ms, sometimes quarters or arbitrary doubles. */
function aTimingAmong(timings: readonly Timing[]): fc.Arbitrary<Timing> {
  return fc.oneof(
    ...timings.map((timing) => ({
      arbitrary: fc.constant(timing),
      weight: timing === 'whole ms' ? 3 : 1,
    })),
  );
}

/**
 * Where the ticker stands at the first call: it need not be zero, nor positive, and a process up
 * for months reads 2^34 ms (200 days), where a double resolves only 4e-6 ms.
 */
function aStartTime(timing: Timing): fc.Arbitrary<number> {
  switch (timing) {
    case 'whole ms':
      return fc.oneof(
        fc.constant(0),
        fc.integer({ min: -1_000, max: 1_000_000 }),
        fc.integer({ min: 0, max: 2 ** 34 }),
      );
    case 'quarter ms':
      return fc
        .oneof(fc.integer({ min: -4_000, max: 4_000_000 }), fc.integer({ min: 0, max: 2 ** 36 }))
        .map((q) => q / 4);
    case 'any double':
      return fc.oneof(
        fc.double({ min: -1_000, max: 1_000_000, noNaN: true }),
        fc.double({ min: 0, max: 2 ** 34, noNaN: true }),
      );
  }
}

/**
 * Time between two calls: none, about a permit's worth, up to two windows, or a hair either side
 * of a whole number of permit intervals (where buckets fill up and retries come due).
 */
function aGap({ permitMs, windowMs }: Pace, timing: Timing): fc.Arbitrary<number> {
  const short = Math.max(1, Math.ceil(2 * permitMs));
  const long = Math.max(1, Math.ceil(2 * windowMs));
  const intervals = fc.integer({ min: 1, max: 4 });
  switch (timing) {
    case 'whole ms':
      return fc.oneof(
        fc.constant(0),
        fc.integer({ min: 0, max: short }),
        fc.integer({ min: 0, max: long }),
        fc
          .tuple(intervals, fc.integer({ min: -1, max: 1 }))
          .map(([n, hair]) => Math.max(0, Math.round(n * permitMs) + hair)),
      );
    case 'quarter ms':
      return fc
        .oneof(
          fc.constant(0),
          fc.integer({ min: 0, max: 4 * short }),
          fc.integer({ min: 0, max: 4 * long }),
          fc
            .tuple(intervals, fc.integer({ min: -1, max: 1 }))
            .map(([n, hair]) => Math.max(0, Math.round(4 * n * permitMs) + hair)),
        )
        .map((q) => q / 4);
    case 'any double':
      return fc.oneof(
        fc.constant(0),
        fc.double({ min: 0, max: short, noNaN: true }),
        fc.double({ min: 0, max: long, noNaN: true }),
        fc
          .tuple(intervals, fc.double({ min: -1, max: 1, noNaN: true }))
          .map(([n, hair]) => Math.max(0, n * permitMs + hair)),
      );
  }
}

/** Mostly single permits, sometimes anything up to the capacity. */
const aCost = (capacity: number) =>
  fc.oneof({ arbitrary: fc.constant(1), weight: 2 }, fc.integer({ min: 1, max: capacity }));

interface Call {
  readonly at: number;
  readonly cost: number;
}

function aCallSequence<Extra>(
  pace: Pace,
  extra: fc.Arbitrary<Extra>,
  timings: readonly Timing[] = ALL_TIMINGS,
): fc.Arbitrary<(Call & Extra)[]> {
  return aTimingAmong(timings)
    .chain((timing) =>
      fc.tuple(
        aStartTime(timing),
        fc.array(fc.tuple(aGap(pace, timing), aCost(pace.capacity), extra), {
          minLength: 1,
          maxLength: 40,
          size: 'max',
        }),
      ),
    )
    .map(([start, steps]) => {
      let at = start;
      return steps.map(([gap, cost, more]) => {
        at += gap;
        return { ...more, at, cost };
      });
    });
}

const nothingMore = fc.constant({});

interface Run<C extends Call = Call> {
  readonly policy: PolicyInput;
  readonly calls: readonly C[];
}

function aRunOf<Extra>(
  policies: fc.Arbitrary<PolicyInput>,
  extra: fc.Arbitrary<Extra>,
  timings: readonly Timing[] = ALL_TIMINGS,
): fc.Arbitrary<Run<Call & Extra>> {
  return policies.chain((policy) =>
    aCallSequence(paceOf(policy), extra, timings).map((calls) => ({ policy, calls })),
  );
}

/** One policy (three runs in four) or two on the same key. */
const anyPolicyInput: fc.Arbitrary<PolicyInput> = fc.oneof(
  { arbitrary: anyPolicy, weight: 3 },
  { arbitrary: fc.tuple(anyPolicy, anyPolicy), weight: 1 },
);

const aRun = aRunOf(anyPolicyInput, nothingMore);

// ---------------------------------------------------------------------------------------------
// Running calls

function limiterWithClock(policy: PolicyInput) {
  const clock = createManualClock();
  const limiter = createRateLimiter({ limits: policy, clock });
  return { clock, limiter };
}

/** Plays the calls on a fresh limiter, one key; returns it (clock at the last call) and the answers. */
function replay(policy: PolicyInput, calls: readonly Call[]) {
  const { clock, limiter } = limiterWithClock(policy);
  const decisions = calls.map(({ at, cost }) => {
    clock.set(at);
    return limiter.tryAcquire('key', cost);
  });
  return { clock, limiter, decisions };
}

/** What `tryAcquire` answers at `at` after replaying `calls` on a fresh limiter. */
function retryOnACopy(policy: PolicyInput, calls: readonly Call[], at: number, cost: number) {
  const { clock, limiter } = replay(policy, calls);
  clock.set(at);
  return limiter.tryAcquire('key', cost);
}

function itemAt<T>(items: readonly T[], index: number): T {
  const item = items[index];
  if (item === undefined) throw new Error(`no item at ${index}`);
  return item;
}

/** The allowed calls of a run. */
function admitted(calls: readonly Call[], decisions: readonly Decision[]): Call[] {
  return calls.filter((_, i) => itemAt(decisions, i).allowed);
}

/** Most permits admitted in a closed interval `[s, s + lengthMs]` (its worst start is a call). */
function mostInClosedSpan(taken: readonly Call[], lengthMs: number): number {
  let most = 0;
  for (const { at: start } of taken) {
    const end = start + lengthMs;
    let sum = 0;
    for (const { at, cost } of taken) if (start <= at && at <= end) sum += cost;
    most = Math.max(most, sum);
  }
  return most;
}

/** Most permits admitted in a half-open window `(t - windowMs, t]`, as the sliding log counts. */
function mostInSlidingWindow(taken: readonly Call[], windowMs: number): number {
  let most = 0;
  for (const { at: end } of taken) {
    let sum = 0;
    for (const { at, cost } of taken) if (end - windowMs < at && at <= end) sum += cost;
    most = Math.max(most, sum);
  }
  return most;
}

/** Most permits admitted in one aligned window `[k * windowMs, (k + 1) * windowMs)`. */
function mostInAlignedWindow(taken: readonly Call[], windowMs: number): number {
  const perWindow = new Map<number, number>();
  for (const { at, cost } of taken) {
    const k = Math.floor(at / windowMs);
    perWindow.set(k, (perWindow.get(k) ?? 0) + cost);
  }
  return Math.max(0, ...perWindow.values());
}

// ---------------------------------------------------------------------------------------------
// Properties

describe('retryAfterMs', () => {
  it('names the first whole ms at which the same request is allowed: not one ms earlier', () => {
    let denials = 0;
    fc.assert(
      fc.property(aRun, ({ policy, calls }) => {
        const { decisions } = replay(policy, calls);
        const broken = decisions.flatMap((decision, call) => {
          if (decision.allowed) return [];
          denials++;
          const { at, cost } = itemAt(calls, call);
          const history = calls.slice(0, call + 1);
          const r = decision.retryAfterMs;
          const allowedAtRetry = retryOnACopy(policy, history, at + r, cost).allowed;
          // `at + (r - 1)`, not `(at + r) - 1`: with r = 1 that is `at` itself, where the
          // double `(at + 1) - 1` can land past `at` (at = -1e-320 gives 0, a new window).
          const allowedEarlier =
            r >= 1 && retryOnACopy(policy, history, at + (r - 1), cost).allowed;
          return allowedAtRetry && !allowedEarlier
            ? []
            : [{ call, r, allowedAtRetry, allowedEarlier }];
        });
        expect(broken).toEqual([]);
      }),
      { numRuns: 300 },
    );
    expect(denials).toBeGreaterThan(500);
  });
});

describe('a denied request', () => {
  it('changes nothing: removing denied calls from a run leaves every other decision as it was', () => {
    let deniedExtras = 0;
    const aRunWithExtraCalls = aRunOf(anyPolicyInput, fc.record({ extra: fc.boolean() }));
    fc.assert(
      fc.property(aRunWithExtraCalls, ({ policy, calls }) => {
        const withExtras = replay(policy, calls).decisions;
        const kept = calls.filter((call, i) => !call.extra || itemAt(withExtras, i).allowed);
        const expected = withExtras.filter((d, i) => !itemAt(calls, i).extra || d.allowed);
        deniedExtras += calls.length - kept.length;
        expect(replay(policy, kept).decisions).toEqual(expected);
      }),
      { numRuns: 300 },
    );
    expect(deniedExtras).toBeGreaterThan(300);
  });
});

describe('admissions', () => {
  const runOf = (algorithm: Algorithm) => aRunOf(aPolicyOf(algorithm), nothingMore);
  const single = (policy: PolicyInput) => policy as Policy;

  it('sliding-log admits at most `limit` permits in any half-open window of windowMs', () => {
    fc.assert(
      fc.property(runOf(slidingLog), ({ policy, calls }) => {
        const { limit, windowMs } = single(policy);
        const taken = admitted(calls, replay(policy, calls).decisions);
        expect(mostInSlidingWindow(taken, windowMs)).toBeLessThanOrEqual(limit);
      }),
      { numRuns: 200 },
    );
  });

  for (const algorithm of [tokenBucket, gcra]) {
    it(`${algorithm.name} admits at most capacity + limit * L / windowMs in any closed interval of length L`, () => {
      fc.assert(
        fc.property(
          runOf(algorithm),
          fc.double({ min: 0, max: 3, noNaN: true }),
          ({ policy, calls }, spanInWindows) => {
            const { limit, windowMs } = single(policy);
            const capacity = capacityOf(single(policy));
            const taken = admitted(calls, replay(policy, calls).decisions);
            for (const length of [windowMs, spanInWindows * windowMs]) {
              // A hair of float tolerance: admitted permits are whole, the bound need not be.
              const bound = capacity + (limit * length) / windowMs + 1e-6;
              expect(mostInClosedSpan(taken, length)).toBeLessThanOrEqual(bound);
            }
          },
        ),
        { numRuns: 200 },
      );
    });
  }

  for (const algorithm of [fixedWindow, slidingWindow]) {
    it(`${algorithm.name} admits at most \`limit\` permits per aligned window [k * windowMs, (k + 1) * windowMs)`, () => {
      fc.assert(
        fc.property(runOf(algorithm), ({ policy, calls }) => {
          const { limit, windowMs } = single(policy);
          const taken = admitted(calls, replay(policy, calls).decisions);
          expect(mostInAlignedWindow(taken, windowMs)).toBeLessThanOrEqual(limit);
        }),
        { numRuns: 200 },
      );
    });
  }

  it('fixed-window admits twice its limit within 1 ms across a window boundary, as documented', () => {
    fc.assert(
      fc.property(aLimit, aWindowMs, fc.nat(1_000), (limit, windowMs, k) => {
        const boundary = (k + 1) * windowMs;
        const justBefore = boundary - Math.min(1, windowMs / 2);
        const calls = [
          ...Array.from({ length: limit }, () => ({ at: justBefore, cost: 1 })),
          ...Array.from({ length: limit }, () => ({ at: boundary, cost: 1 })),
        ];
        const { decisions } = replay({ algorithm: fixedWindow, limit, windowMs }, calls);
        expect(mostInClosedSpan(admitted(calls, decisions), 1)).toBe(2 * limit);
      }),
      { numRuns: 50 },
    );
  });
});

describe('gcra', () => {
  it('admits exactly like a token bucket of the same rate and burst, at whole- and quarter-ms times', () => {
    const aSharedRun = aRate.chain((rate) =>
      aCallSequence(paceOf(rate), nothingMore, ['whole ms', 'quarter ms']).map((calls) => ({
        rate,
        calls,
      })),
    );
    fc.assert(
      fc.property(aSharedRun, ({ rate, calls }) => {
        const bucket = replay({ ...rate, algorithm: tokenBucket }, calls).decisions;
        const cell = replay({ ...rate, algorithm: gcra }, calls).decisions;
        expect(cell).toEqual(bucket);
      }),
      { numRuns: 500 },
    );
  });

  it('admits a full burst of perSecond(39) after 1e7 ms of uptime, like the token bucket', () => {
    // Regression: gcra kept `tat` as one absolute number, rounded at each update to what a double
    // near 1e7 resolves (1.9e-9 ms). In permits that exceeded EPSILON: from the 30th call a fresh
    // key reported one permit fewer in `remaining`, and it denied the 39th with retryAfterMs 1.
    for (const algorithm of [gcra, tokenBucket]) {
      const calls = Array.from({ length: 40 }, () => ({ at: 1e7, cost: 1 }));
      const { decisions } = replay({ limit: 39, windowMs: 1000, algorithm }, calls);
      expect(decisions.filter((d) => d.allowed)).toHaveLength(39);
      expect(decisions[38]).toMatchObject({ allowed: true, remaining: 0, resetMs: 1000 });
      expect(decisions[39]).toMatchObject({ allowed: false, retryAfterMs: 26 });
    }
  });
});

describe('eviction', () => {
  it('is invisible: evictIdle() and the automatic sweep never change a decision', () => {
    let evicted = 0;
    let swept = 0;
    // A few keys come back soon after a sweep; many keys make the automatic sweep run.
    const aKeyCount = fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 4, max: 40 }));
    const aKeyedRun = aKeyCount.chain((keys) =>
      aRunOf(
        anyPolicyInput,
        fc.record({
          key: fc.integer({ min: 1, max: keys }).map((n) => `user-${n}`),
          // Call `evictIdle()` just before this call (one call in five).
          evictFirst: fc.oneof(
            { arbitrary: fc.constant(true), weight: 1 },
            { arbitrary: fc.constant(false), weight: 4 },
          ),
        }),
      ),
    );
    fc.assert(
      fc.property(aKeyedRun, ({ policy, calls }) => {
        const clock = createManualClock();
        const shared = createRateLimiter({ limits: policy, clock });
        // The reference: one limiter per key never holds another key, so it never sweeps.
        const ownLimiters = new Map<string, RateLimiter>();
        const own = (key: string): RateLimiter => {
          let limiter = ownLimiters.get(key);
          if (limiter === undefined) {
            limiter = createRateLimiter({ limits: policy, clock });
            ownLimiters.set(key, limiter);
          }
          return limiter;
        };
        const actual = [];
        const expected = [];
        for (const { at, cost, key, evictFirst } of calls) {
          clock.set(at);
          if (evictFirst) evicted += shared.evictIdle();
          const before = shared.size;
          actual.push(shared.tryAcquire(key, cost));
          if (shared.size < before) swept++;
          expected.push(own(key).tryAcquire(key, cost));
        }
        expect(actual).toEqual(expected);
      }),
      { numRuns: 300 },
    );
    // Not vacuous: keys were dropped both ways.
    expect(evicted).toBeGreaterThan(100);
    expect(swept).toBeGreaterThan(30);
  });
});

describe('several policies on one key', () => {
  it('allows iff every policy allows, and charges none of them on a denial', () => {
    let splitVerdicts = 0;
    const aPairRun = aRunOf(fc.tuple(anyPolicy, anyPolicy), nothingMore);
    fc.assert(
      fc.property(aPairRun, ({ policy, calls }) => {
        const clock = createManualClock();
        const both = createRateLimiter({ limits: policy, clock });
        // Each policy alone, charged only when the pair allowed.
        const alone = policiesOf(policy).map((p) => createRateLimiter({ limits: p, clock }));
        const actual = [];
        const expected = [];
        for (const { at, cost } of calls) {
          clock.set(at);
          const { allowed, remaining, retryAfterMs } = both.tryAcquire('key', cost);
          const parts = alone.map((limiter) => limiter.peek('key', cost));
          if (!allowed && parts.some((d) => d.allowed)) splitVerdicts++;
          // Every part must take the permits of an allowed call.
          const charged =
            allowed && alone.every((limiter) => limiter.tryAcquire('key', cost).allowed);
          actual.push({ allowed, remaining, retryAfterMs, charged });
          expected.push({
            allowed: parts.every((d) => d.allowed),
            remaining: Math.min(...parts.map((d) => d.remaining)),
            retryAfterMs: Math.max(...parts.map((d) => d.retryAfterMs)),
            charged: allowed,
          });
        }
        expect(actual).toEqual(expected);
      }),
      { numRuns: 300 },
    );
    // The case that matters: one policy would allow, the other denies, and neither is charged.
    expect(splitVerdicts).toBeGreaterThan(500);
  });
});

describe('every decision', () => {
  it('has whole remaining in [0, capacity], whole non-negative waits, and waits only when denied', () => {
    fc.assert(
      fc.property(aRun, ({ policy, calls }) => {
        const { capacity } = paceOf(policy);
        const wholeAtLeastZero = (n: number) => Number.isInteger(n) && n >= 0;
        const malformed = replay(policy, calls).decisions.filter(
          (d) =>
            !wholeAtLeastZero(d.remaining) ||
            d.remaining > capacity ||
            !wholeAtLeastZero(d.resetMs) ||
            !wholeAtLeastZero(d.retryAfterMs) ||
            (d.retryAfterMs === 0) !== d.allowed,
        );
        expect(malformed).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('is what peek() foretold just before it', () => {
    fc.assert(
      fc.property(aRun, ({ policy, calls }) => {
        const { clock, limiter } = limiterWithClock(policy);
        const foretold = [];
        const decided = [];
        for (const { at, cost } of calls) {
          clock.set(at);
          foretold.push(limiter.peek('key', cost));
          decided.push(limiter.tryAcquire('key', cost));
        }
        expect(decided).toEqual(foretold);
      }),
      { numRuns: 300 },
    );
  });
});
