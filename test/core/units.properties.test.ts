import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  arrivalSafe,
  fixedWindow,
  gcra,
  type Policy,
  slidingLog,
  slidingWindow,
  tokenBucket,
} from '../../src/index.js';
import { createPacerLimiter, type PacerLimiter } from '../../src/core/pacer-limiter.js';
import { adjustUnits, unitsOf } from '../../src/core/unit-limits.js';
import { createManualClock } from '../../src/testing/index.js';

// Property tests of limits per unit (issue 14): random limits in two or three units, random
// requests that reserve an upper bound of their cost and give back the rest after a random
// delay, random times. A reference server counts each unit in a token bucket, charging each
// request's real cost when it arrives (as OpenAI and Anthropic document their buckets).

const UNITS = ['requests', 'tokens', 'output'] as const;

const aLimits = fc.record({
  requests: fc.integer({ min: 1, max: 20 }),
  tokens: fc.integer({ min: 50, max: 5_000 }),
  output: fc.integer({ min: 50, max: 5_000 }),
  windowMs: fc.constantFrom(100, 1_000, 60_000),
});

/** One request: when (ms after the previous one), its real cost, its reserve's margin. */
/** One request: when (ms after the previous one), its real cost (% of each limit), its reserve's margin (% more). */
const aRequest = fc.record({
  gapMs: fc.integer({ min: 0, max: 300 }),
  tokens: fc.integer({ min: 0, max: 60 }),
  output: fc.integer({ min: 0, max: 60 }),
  margin: fc.integer({ min: 0, max: 40 }),
  answerMs: fc.integer({ min: 0, max: 200 }),
});

/** `percent` of `limit`, whole. */
const share = (limit: number, percent: number) => Math.floor((limit * percent) / 100);

type Limits = { requests: number; tokens: number; output: number; windowMs: number };

/** What a request really costs in each unit, and the reserve it is paced on (`extra`% more). */
function costsOf(
  limits: Limits,
  request: { tokens: number; output: number; margin: number },
  extra = 0,
) {
  const real = {
    requests: 1,
    tokens: share(limits.tokens, request.tokens),
    output: share(limits.output, request.output),
  };
  const reserve = {
    requests: 1,
    tokens: Math.min(limits.tokens, share(real.tokens, 100 + request.margin + extra)),
    output: Math.min(limits.output, share(real.output, 100 + request.margin + extra)),
  };
  return { real, reserve };
}

function policy(limit: number, windowMs: number, algorithm?: Policy['algorithm']): Policy {
  return algorithm === undefined ? { limit, windowMs } : { limit, windowMs, algorithm };
}

function limiterOf(limits: Limits, algorithm?: Policy['algorithm']) {
  const clock = createManualClock();
  const limiter = createPacerLimiter({
    limits: {
      requests: policy(limits.requests, limits.windowMs),
      tokens: policy(limits.tokens, limits.windowMs, algorithm),
      output: policy(limits.output, limits.windowMs, algorithm),
    },
    clock,
  });
  return { clock, limiter };
}

/** A token bucket per unit, full at first, as the server counts. */
function referenceServer(limits: Limits) {
  const levels = { requests: limits.requests, tokens: limits.tokens, output: limits.output };
  let stamp = 0;
  return {
    /** True if the server admits the real `costs` at `at` (and charges them). */
    admit(at: number, costs: Record<(typeof UNITS)[number], number>): boolean {
      for (const unit of UNITS) {
        levels[unit] = Math.min(
          limits[unit],
          levels[unit] + ((at - stamp) * limits[unit]) / limits.windowMs,
        );
      }
      stamp = at;
      if (!UNITS.every((unit) => levels[unit] >= costs[unit] - 1e-6)) return false;
      for (const unit of UNITS) levels[unit] -= costs[unit];
      return true;
    },
  };
}

function levels(limiter: PacerLimiter) {
  const units = unitsOf(limiter, 'k');
  return UNITS.map((unit) => units?.[unit]?.level);
}

describe('limits per unit (properties)', () => {
  it('never admits what the server would refuse in any unit, reserves given back', () => {
    fc.assert(
      fc.property(aLimits, fc.array(aRequest, { maxLength: 60 }), (limits, requests) => {
        const { clock, limiter } = limiterOf(limits);
        const server = referenceServer(limits);
        const answers: { at: number; since: number; delta: Record<string, number> }[] = [];
        for (const request of requests) {
          clock.advance(request.gapMs);
          // Give back the reserves of the answers that came by now.
          answers.sort((a, b) => a.at - b.at);
          while (answers.length > 0 && (answers[0]?.at as number) <= clock.now()) {
            const answer = answers.shift() as (typeof answers)[number];
            adjustUnits(limiter, 'k', answer.delta, { startedAt: answer.since });
          }
          const { real, reserve } = costsOf(limits, request);
          if (!limiter.tryAcquire('k', reserve).allowed) continue;
          // The server counts the real cost at the send here (no network).
          expect(server.admit(clock.now(), real)).toBe(true);
          answers.push({
            at: clock.now() + request.answerMs,
            since: clock.now(),
            delta: { tokens: real.tokens - reserve.tokens, output: real.output - reserve.output },
          });
        }
      }),
    );
  });

  it('never admits what the server would refuse, units counted until the answer given back', () => {
    // The tokens are counted `arrivalSafe` (a bucket charged at the answer, see
    // `arrivalSafeUnit`), the server charges the real cost when the request arrives (at the
    // send here), the answer comes later and the give-back later still (a stream's usage).
    fc.assert(
      fc.property(
        aLimits,
        fc.array(
          fc.record({
            request: aRequest,
            usageMs: fc.integer({ min: 0, max: 1_000 }),
            extra: fc.integer({ min: 0, max: 100 }),
          }),
          {
            maxLength: 60,
          },
        ),
        (limits, requests) => {
          const clock = createManualClock();
          const safe = (limit: number) => ({
            ...policy(limit, limits.windowMs),
            algorithm: arrivalSafe,
          });
          const limiter = createPacerLimiter({
            limits: {
              requests: policy(limits.requests, limits.windowMs),
              tokens: safe(limits.tokens),
              output: safe(limits.output),
            },
            clock,
          });
          const server = referenceServer(limits);
          type Due = { at: number; run: () => void };
          const due: Due[] = [];
          const runDue = () => {
            due.sort((a, b) => a.at - b.at);
            while (due.length > 0 && (due[0] as Due).at <= clock.now()) due.shift()?.run();
          };
          for (const { request, usageMs, extra } of requests) {
            clock.advance(request.gapMs);
            runDue();
            const { real, reserve } = costsOf(limits, request, extra);
            if (!limiter.tryAcquire('k', reserve).allowed) continue;
            expect(server.admit(clock.now(), real)).toBe(true);
            const startedAt = clock.now();
            const answeredAt = startedAt + request.answerMs;
            due.push({ at: answeredAt, run: () => limiter.settle('k', reserve) });
            due.push({
              at: answeredAt + usageMs,
              run: () =>
                adjustUnits(
                  limiter,
                  'k',
                  { tokens: real.tokens - reserve.tokens, output: real.output - reserve.output },
                  { startedAt, answeredAt },
                ),
            });
          }
        },
      ),
    );
  });

  it('charges no unit on a denial, whatever the algorithm', () => {
    const anAlgorithm = fc.constantFrom(tokenBucket, slidingLog, slidingWindow, fixedWindow, gcra);
    fc.assert(
      fc.property(
        aLimits,
        anAlgorithm,
        fc.array(aRequest, { maxLength: 40 }),
        (limits, algorithm, requests) => {
          const { clock, limiter } = limiterOf(limits, algorithm);
          for (const request of requests) {
            clock.advance(request.gapMs);
            const cost = {
              requests: 1,
              tokens: Math.min(limits.tokens, request.tokens * 20),
              output: Math.min(limits.output, request.output * 20),
            };
            const before = levels(limiter);
            const decision = limiter.tryAcquire('k', cost);
            if (!decision.allowed) {
              expect(levels(limiter)).toEqual(before);
              expect(decision.retryAfterMs).toBeGreaterThan(0);
            }
          }
        },
      ),
    );
  });

  it('never makes a request wait longer after a give-back, and a charge never shortens it', () => {
    fc.assert(
      fc.property(
        aLimits,
        fc.array(aRequest, { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 5_000 }),
        (limits, requests, back) => {
          const { clock, limiter } = limiterOf(limits);
          for (const request of requests) {
            clock.advance(request.gapMs);
            const cost = {
              requests: 1,
              tokens: share(limits.tokens, request.tokens),
              output: share(limits.output, request.output),
            };
            const wait = limiter.peek('k', cost).retryAfterMs;
            if (request.margin % 2 === 0) {
              adjustUnits(limiter, 'k', { tokens: -back, output: -back });
              expect(limiter.peek('k', cost).retryAfterMs).toBeLessThanOrEqual(wait);
            } else {
              adjustUnits(limiter, 'k', { tokens: request.margin });
              expect(limiter.peek('k', cost).retryAfterMs).toBeGreaterThanOrEqual(wait);
            }
            limiter.tryAcquire('k', cost);
          }
          // A give-back never raises a unit above its capacity.
          const units = unitsOf(limiter, 'k');
          for (const unit of UNITS) {
            expect(units?.[unit]?.level).toBeLessThanOrEqual(limits[unit] + 1e-9);
          }
        },
      ),
    );
  });
});
