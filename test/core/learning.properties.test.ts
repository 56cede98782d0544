import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Algorithm,
  fixedWindow,
  gcra,
  type Policy,
  slidingLog,
  slidingWindow,
  tokenBucket,
} from '../../src/index.js';
import { createPacerLimiter } from '../../src/core/pacer-limiter.js';
import { createManualClock } from '../../src/testing/index.js';

// A key that learned a policy on top of its own: whatever its own policy (all five algorithms),
// whatever it did before, it never admits more than the learned `limit` in any window of the
// learned `windowMs` after learning it, nor anything its own policy alone would refuse, and
// learning never raised its credit.

const ALGORITHMS: readonly Algorithm[] = [
  tokenBucket,
  gcra,
  slidingLog,
  slidingWindow,
  fixedWindow,
];

const aPolicy: fc.Arbitrary<Policy> = fc
  .record({
    algorithm: fc.constantFrom(...ALGORITHMS),
    limit: fc.integer({ min: 1, max: 30 }),
    windowMs: fc.constantFrom(10, 100, 250, 1000),
  })
  .map(({ algorithm, limit, windowMs }) => ({ algorithm, limit, windowMs }));

const aLearned = fc.record({
  limit: fc.integer({ min: 1, max: 10 }),
  windowMs: fc.constantFrom(7, 50, 100, 333, 1000),
});

/** Calls as (gap before it in ms, cost); gaps of 0 make bursts. */
const aRun = fc.array(
  fc.record({
    gap: fc.oneof(
      fc.constant(0),
      fc.integer({ min: 0, max: 120 }),
      fc.double({ min: 0, max: 5, noNaN: true }),
    ),
    cost: fc.integer({ min: 1, max: 3 }),
  }),
  { minLength: 1, maxLength: 120 },
);

describe('a learned policy', () => {
  it('holds the tighter of both in any window, and learning never raises credit', () => {
    fc.assert(
      fc.property(
        aPolicy,
        aLearned,
        aRun,
        fc.nat({ max: 119 }),
        (policy, learned, run, learnAt) => {
          const clock = createManualClock();
          const limiter = createPacerLimiter({ limits: policy, clock });
          const alone = createPacerLimiter({ limits: policy, clock });
          const taken: Array<{ at: number; charge: number }> = [];
          let learnedAt: number | undefined;
          run.forEach(({ gap, cost: wanted }, index) => {
            clock.advance(gap);
            if (index === learnAt % run.length) {
              const before = limiter.level('k');
              limiter.feedback.observe('k', {
                kind: 'policy',
                remaining: learned.limit,
                ...learned,
              });
              expect(limiter.level('k')).toBeLessThanOrEqual(before + 1e-9);
              learnedAt = clock.now();
            }
            const cost = Math.min(wanted, policy.limit);
            const decision = limiter.tryAcquire('k', cost);
            if (!decision.allowed) return;
            // Its own policy alone, fed the same admitted requests, admits this one too.
            expect(alone.tryAcquire('k', cost).allowed).toBe(true);
            if (learnedAt !== undefined) {
              taken.push({ at: clock.now(), charge: Math.min(cost, learned.limit) });
            }
          });
          // No window [s, s + windowMs) after learning holds more than the learned limit.
          for (const { at: start } of taken) {
            const inWindow = taken
              .filter(({ at }) => at >= start && at < start + learned.windowMs)
              .reduce((sum, { charge }) => sum + charge, 0);
            expect(inWindow).toBeLessThanOrEqual(learned.limit);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
