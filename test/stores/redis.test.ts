/**
 * The Redis store against a real redis-server (REDIS_URL; `.ci/run` starts one on a loopback
 * port). Without REDIS_URL these tests are skipped, saying so; with it set and no server there,
 * they fail.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import fc from 'fast-check';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Policy, perHour, perSecond, resolvePolicy } from '../../src/core/policy.js';
import { createPacer, type StoreCall } from '../../src/pacer/index.js';
import {
  isStoreUnavailableError,
  type RedisScripting,
  redisStore,
} from '../../src/stores/redis/index.js';
import { encodeCost, parseDecisions, SCRIPT, scriptArgs } from '../../src/stores/redis/script.js';
import {
  adjust,
  type BucketState,
  decide,
  heardRoundTrip,
  learn,
  lower,
  normalize,
  observe,
  restsAt,
  spreadAt,
} from '../../src/stores/bucket-state.js';
import { startRedisServer, useTestRedis } from '../support/redis-server.js';
import { compactLua } from '../../scripts/compact-lua.mjs';
import type { WorkerResult } from './redis-worker.js';
import { gcra, slidingWindow, tokenBucket } from '../../src/index.js';

const url = process.env['REDIS_URL'];
if (url === undefined) {
  console.warn(
    "[fetch-pacer] REDIS_URL is not set: the Redis store tests are skipped. Start one with `redis-server --port 6390 --bind 127.0.0.1 --save '' --daemonize yes` and set REDIS_URL=redis://127.0.0.1:6390.",
  );
}

type Client = ReturnType<typeof createClient>;

/**
 * The script deletes a key it wrote at rest (its admissions with it): the shared bucket's twin
 * starts afresh there too.
 */
function forgetAtRest(
  state: BucketState,
  limits: ReturnType<typeof call>['limits'],
  now: number,
): BucketState {
  return restsAt(state, limits, now) <= now ? normalize(undefined, limits, now) : state;
}
const run = `t${process.pid}-${Date.now()}`;
const call = (limits: Policy[], signal = new AbortController().signal): StoreCall => ({
  limits: Object.freeze(limits.map((policy) => resolvePolicy(policy))),
  signal,
});

describe.skipIf(url === undefined)('redisStore against a real redis-server', () => {
  const redis = useTestRedis(url, () => run);
  let client: Client;
  beforeAll(() => {
    client = redis.client;
  });

  /**
   * The script as the package ships it (`npm run build` compacts it: scripts/compact-lua.mjs);
   * the store's own tests below run the source's.
   */
  const shipped = compactLua(SCRIPT);
  /**
   * One run of the script on the test's clock. The script sets its TTL from that clock, but
   * Redis expires keys on its own: PERSIST in the same transaction keeps the key until the
   * test's time says it is at rest.
   */
  const script = async (key: string, args: string[]) => (await scriptTtl(key, args)).reply;
  /** As `script`, with the TTL the script set (ms; -1 when it wrote nothing, -2: deleted). */
  const scriptTtl = async (key: string, args: string[]) => {
    const [reply, ttl] = await client
      .multi()
      .eval(shipped, { keys: [key], arguments: args })
      .pTTL(key)
      .persist(key)
      .exec();
    return { reply, ttl: Number(ttl) };
  };

  it('runs the core arithmetic in Lua: the same decisions as the shared bucket, at any time', async () => {
    /** A step that takes one permit and does nothing else. */
    const quiet = {
      dt: 0,
      costs: [1],
      stop: false,
      trip: 0,
      block: undefined,
      learn: undefined as { limit: number; windowMs: number; inferred: boolean } | undefined,
      count: undefined as
        | { remaining: number; limit: number; sentAt: number; resetMs?: number }
        | undefined,
      refused: undefined as number | undefined,
      waited: undefined as { sentAt: number; waitMs: 1 | 250 | 1_000 | 2_000 } | undefined,
    };
    const policyArb = fc
      .record({
        algorithm: fc.constantFrom(tokenBucket, gcra),
        limit: fc.integer({ min: 1, max: 40 }),
        windowMs: fc.constantFrom(1, 7, 333, 1_000, 60_000),
        // Often one at a time: what a take's round trip spreads (`spreadAt`).
        burst: fc.option(fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 50 })), {
          nil: undefined,
        }),
      })
      .map(({ burst, ...rest }): Policy => (burst === undefined ? rest : { ...rest, burst }));
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(policyArb, { minLength: 1, maxLength: 2 }),
        fc.array(
          fc.record({
            dt: fc.oneof(
              fc.integer({ min: 0, max: 3_000 }),
              fc.double({ min: 0, max: 20, noNaN: true }),
            ),
            costs: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }),
            stop: fc.boolean(),
            // The round trip the taking client told (`StoreCall.roundTripMs`; 0: none heard).
            trip: fc.oneof(
              fc.constant(0),
              fc.integer({ min: 1, max: 300 }),
              fc.double({ min: 0, max: 130, noNaN: true }),
            ),
            block: fc.option(fc.integer({ min: 1, max: 2_000 }), { nil: undefined }),
            // The server's advertised policy, as a client of the store learned it.
            learn: fc.option(
              fc.record({
                // Often a limit the counts below name.
                limit: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constantFrom(3, 5, 6)),
                windowMs: fc.constantFrom<number>(1, 7, 333, 1_000, 1_050, 60_000),
                // Inferred from a reset (its counts may show a bucket), or stated.
                inferred: fc.boolean(),
              }),
              { nil: undefined, freq: 4 },
            ),
            // A count of a limit the server named, of a request sent this long ago: a count of
            // the learned policy's limit may show a bucket, and then steers it (shared-counts.ts).
            count: fc.option(
              fc.record(
                {
                  remaining: fc.integer({ min: 0, max: 6 }),
                  limit: fc.constantFrom<number>(3, 5, 6),
                  sentAt: fc.integer({ min: -120, max: 0 }),
                  // When it resets: a count of 0 blocks until then, unless the key's own count of
                  // the learned policy agrees (`agreesAtZero`).
                  resetMs: fc.constantFrom<number>(100, 1_000),
                },
                { requiredKeys: ['remaining', 'limit', 'sentAt'] },
              ),
              { nil: undefined, freq: 2 },
            ),
            // A bare refusal a client heard, of a request sent this long ago (shared-rate.ts).
            refused: fc.option(fc.integer({ min: -300, max: 0 }), { nil: undefined, freq: 3 }),
            // A refusal that said when to come back (`refusedWithWait`).
            waited: fc.option(
              fc.record({
                // Up to a refusal slower than the second its rate's round trip is capped at.
                sentAt: fc.oneof(
                  fc.integer({ min: -300, max: 0 }),
                  fc.integer({ min: -3_000, max: 0 }),
                ),
                waitMs: fc.constantFrom(1, 250, 1_000, 2_000),
              }),
              { nil: undefined, freq: 3 },
            ),
          }),
          { maxLength: 15 },
        ),
        async (policies, steps) => {
          const limits = call(policies).limits;
          const capacity = Math.min(...limits.map((l) => l.capacity));
          const key = `${run}:lua:${n++}`;
          let now = 1_732_000_000_000.125;
          let state = normalize(undefined, limits, now);
          for (const step of steps) {
            now += step.dt;
            if (step.block !== undefined) {
              await script(key, scriptArgs('b', limits, [step.block], String(now)));
              state.blockedUntil = Math.max(state.blockedUntil, now + step.block);
            }
            if (step.learn !== undefined) {
              const { limit, windowMs, inferred } = step.learn;
              const args = [limit, windowMs, 0, 0, inferred ? 1 : 0];
              await script(key, scriptArgs('a', limits, args, String(now)));
              const policy = { kind: 'policy', limit, windowMs } as const;
              observe(state, limits, now, inferred ? { ...policy, inferred } : policy);
            }
            if (step.count !== undefined) {
              const { remaining, limit, sentAt, resetMs } = step.count;
              // As the store sends them: the block of a count of 0, then the count.
              if (remaining === 0 && resetMs !== undefined) {
                const args = [resetMs, limit, 0, -sentAt];
                await script(key, scriptArgs('b', limits, args, String(now)));
              }
              const args = [remaining, -sentAt, limit];
              await script(key, scriptArgs('l', limits, args, String(now)));
              const reset = resetMs === undefined ? {} : { resetMs };
              observe(state, limits, now, { kind: 'quota', remaining, limit, sentAt, ...reset });
              state = forgetAtRest(state, limits, now);
            }
            if (step.refused !== undefined) {
              await script(key, scriptArgs('f', limits, [step.refused], String(now)));
              observe(state, limits, now, { kind: 'refusal', sentAt: step.refused });
              state = forgetAtRest(state, limits, now);
            }
            if (step.waited !== undefined) {
              const { sentAt, waitMs } = step.waited;
              await script(key, scriptArgs('w', limits, [sentAt, waitMs], String(now)));
              observe(state, limits, now, { kind: 'refusal', sentAt, retryAfterMs: waitMs });
              state = forgetAtRest(state, limits, now);
            }
            const costs = step.costs.map((cost) => Math.min(cost, capacity));
            const told = [step.trip, step.stop ? 1 : 0, ...costs];
            const { reply, ttl } = await scriptTtl(key, scriptArgs('t', limits, told, String(now)));
            state = normalize(structuredClone(state), limits, now);
            const decisions = decide(state, limits, now, costs, step.stop, step.trip);
            expect(parseDecisions(reply)).toEqual(decisions);
            if (decisions.some((decision) => decision.allowed)) {
              // Written with the time it rests (a few ms of Redis's own clock gone since).
              const rest = Math.ceil(restsAt(state, limits, now) - now);
              if (ttl === -2) expect(rest).toBeLessThanOrEqual(0);
              else expect(Math.abs(ttl - rest)).toBeLessThanOrEqual(20);
              state = forgetAtRest(state, limits, now);
            }
          }
        },
      ),
      {
        numRuns: 150,
        // A rate made by a refusal, grants for over a second, and a refusal that cuts it to
        // what was admitted (the random steps rarely span HOLD_MS); then the decisions at the
        // rate it was cut to.
        examples: [
          // A window of 5 per second learned, then full counts of it, 50 ms apart: a bucket,
          // sped up by its full counts (doubling), held by one of 3, cut at one of 1 and by the
          // refusals of requests sent after the cut (an older one's echo changes nothing).
          [
            [{ algorithm: gcra, limit: 600, windowMs: 1_000 }],
            [
              { ...quiet, learn: { limit: 5, windowMs: 1_000, inferred: true } },
              ...Array.from({ length: 12 }, () => ({
                ...quiet,
                dt: 50,
                count: { remaining: 4, limit: 5, sentAt: -30 },
              })),
              { ...quiet, dt: 20, count: { remaining: 3, limit: 5, sentAt: -30 } },
              ...Array.from({ length: 5 }, () => ({
                ...quiet,
                dt: 20,
                count: { remaining: 4, limit: 5, sentAt: -30 },
              })),
              { ...quiet, dt: 20, count: { remaining: 1, limit: 5, sentAt: -10 } },
              { ...quiet, dt: 5, count: { remaining: 0, limit: 5, sentAt: -40 } },
              { ...quiet, dt: 5, learn: { limit: 5, windowMs: 1_000, inferred: true } },
              { ...quiet, dt: 30, waited: { sentAt: -20, waitMs: 1_000 } },
              { ...quiet, dt: 1_000, refused: -5 },
              { ...quiet, dt: 10, refused: -100 },
              ...Array.from({ length: 10 }, () => ({ ...quiet, dt: 30 })),
            ],
          ],
          // A bucket found and cut once per drain: a count of 2 (of 5) cuts it, the same count
          // of a request sent after that cut does not, a lower one does; after a full count, a
          // count of 2 alone does not (the jitter's), two in a row do; and as low two windows
          // after the last cut, it is cut again.
          [
            [{ algorithm: gcra, limit: 600, windowMs: 1_000 }],
            [
              { ...quiet, learn: { limit: 5, windowMs: 1_000, inferred: true } },
              ...Array.from({ length: 3 }, () => ({
                ...quiet,
                dt: 100,
                count: { remaining: 4, limit: 5, sentAt: -30 },
              })),
              ...[2, 2, 2, 1, 1, 4, 2, 4, 1, 2, 2, 2].map((remaining) => ({
                ...quiet,
                dt: 40,
                count: { remaining, limit: 5, sentAt: -30 },
              })),
              ...[6_000, 40].map((dt) => ({
                ...quiet,
                dt,
                count: { remaining: 2, limit: 5, sentAt: -30 },
              })),
              ...Array.from({ length: 6 }, () => ({ ...quiet, dt: 100 })),
            ],
          ],
          // A policy of 5 per second the server stated, spent by the key's own takes: a count of
          // 0 with a reset blocks nothing (the key's count agrees); then, inferred (of another
          // window, so learned again), the same count blocks until its reset in the window it
          // was learned in, and blocks nothing a window later.
          [
            [{ algorithm: gcra, limit: 600, windowMs: 1_000 }],
            [
              { ...quiet, learn: { limit: 5, windowMs: 1_000, inferred: false } },
              { ...quiet, dt: 1, count: { remaining: 0, limit: 5, sentAt: -1, resetMs: 1_000 } },
              ...Array.from({ length: 6 }, () => ({ ...quiet, dt: 100 })),
              { ...quiet, dt: 2_000, learn: { limit: 5, windowMs: 2_000, inferred: true } },
              { ...quiet, dt: 1, count: { remaining: 0, limit: 5, sentAt: -1, resetMs: 1_000 } },
              ...Array.from({ length: 6 }, () => ({ ...quiet, dt: 100 })),
              { ...quiet, dt: 2_000 },
              { ...quiet, dt: 1, count: { remaining: 0, limit: 5, sentAt: -1, resetMs: 1_000 } },
              ...Array.from({ length: 6 }, () => ({ ...quiet, dt: 100 })),
            ],
          ],
          // A window inferred and taken from past its first: a count of 0 answered late, with a
          // permit due again but one taken since its request was sent, blocks nothing; one of a
          // request sent after the last take blocks until its reset.
          [
            [{ algorithm: gcra, limit: 600, windowMs: 1_000 }],
            [
              { ...quiet, learn: { limit: 5, windowMs: 1_000, inferred: true } },
              { ...quiet, dt: 1_100 },
              { ...quiet, dt: 205 },
              {
                ...quiet,
                dt: 300,
                count: { remaining: 0, limit: 5, sentAt: -400, resetMs: 1_000 },
              },
              ...Array.from({ length: 3 }, () => ({ ...quiet, dt: 100 })),
              { ...quiet, dt: 400, count: { remaining: 0, limit: 5, sentAt: -50, resetMs: 1_000 } },
              ...Array.from({ length: 3 }, () => ({ ...quiet, dt: 100 })),
            ],
          ],
          // Told a burst of 5 that the server names as its limit: a window of it inferred is not
          // learned, and a count of it drops the rate a whole-second wait taught.
          [
            [{ algorithm: gcra, limit: 60, windowMs: 1_000, burst: 5 }],
            [
              ...Array.from({ length: 5 }, () => quiet),
              { ...quiet, waited: { sentAt: -5, waitMs: 1_000 } },
              { ...quiet, dt: 1_000, learn: { limit: 5, windowMs: 1_000, inferred: true } },
              { ...quiet, dt: 20, count: { remaining: 3, limit: 5, sentAt: -10 } },
              ...Array.from({ length: 10 }, () => ({ ...quiet, dt: 10 })),
            ],
          ],
          // Told 5 per second, spaced, nothing learned: a count of 0 of its own limit blocks a
          // state made just now; then, taken at its pace, one it agrees with (no permit to give,
          // or one taken since the request was sent) blocks nothing; one sent after its last
          // change, with a permit to give, blocks until the reset (`agreesAtZero`).
          [
            [{ algorithm: tokenBucket, limit: 5, windowMs: 1_000, burst: 1 }],
            [
              { ...quiet, count: { remaining: 0, limit: 5, sentAt: -10, resetMs: 1_000 } },
              { ...quiet, dt: 1_100 },
              ...Array.from({ length: 4 }, () => ({ ...quiet, dt: 200 })),
              { ...quiet, dt: 1, count: { remaining: 0, limit: 5, sentAt: -1, resetMs: 1_000 } },
              {
                ...quiet,
                dt: 250,
                count: { remaining: 0, limit: 5, sentAt: -120, resetMs: 1_000 },
              },
              { ...quiet, dt: 600, count: { remaining: 0, limit: 5, sentAt: -20, resetMs: 1_000 } },
              ...Array.from({ length: 6 }, () => ({ ...quiet, dt: 200 })),
            ],
          ],
          // A rate a wait taught, and its echo 100 ms on its way; a refusal of a sample shorter
          // than SAMPLE_TRIPS of that makes no rate, a longer one does (its first grant kept);
          // then an echo of a request sent before that sample began shrinks nothing, and one
          // sent in it does.
          [
            [{ algorithm: gcra, limit: 100, windowMs: 1_000 }],
            [
              ...Array.from({ length: 30 }, () => ({ ...quiet, dt: 10 })),
              { ...quiet, waited: { sentAt: -20, waitMs: 250 as const } },
              { ...quiet, dt: 50, waited: { sentAt: -100, waitMs: 250 as const } },
              ...Array.from({ length: 20 }, () => ({ ...quiet, dt: 20 })),
              { ...quiet, dt: 5, waited: { sentAt: -20, waitMs: 1 as const } },
              ...Array.from({ length: 20 }, () => ({ ...quiet, dt: 20 })),
              { ...quiet, dt: 5, waited: { sentAt: -20, waitMs: 1 as const } },
              { ...quiet, dt: 5, waited: { sentAt: -700, waitMs: 1 as const } },
              { ...quiet, dt: 5, waited: { sentAt: -100, waitMs: 1 as const } },
              ...Array.from({ length: 5 }, () => ({ ...quiet, dt: 20 })),
            ],
          ],
          // Told 60 per second, published, and granted at it for half a second (about 37 per
          // second, read over a second): a window of 15 per second inferred then is a bucket,
          // paced from the rate admitted, and its counts steer it; after quiet seconds, one
          // inferred again (learned afresh: 5 of them) is a window (`foundByAdmissions`).
          [
            [{ algorithm: tokenBucket, limit: 60, windowMs: 1_000, burst: 1 }],
            [
              ...Array.from({ length: 30 }, () => ({ ...quiet, dt: 17 })),
              { ...quiet, learn: { limit: 15, windowMs: 1_000, inferred: true } },
              ...Array.from({ length: 4 }, () => ({
                ...quiet,
                dt: 20,
                count: { remaining: 14, limit: 15, sentAt: -30 },
              })),
              { ...quiet, dt: 3_000, learn: { limit: 5, windowMs: 1_000, inferred: true } },
              ...Array.from({ length: 6 }, () => ({ ...quiet, dt: 20 })),
            ],
          ],
          // Told 5 per second, published: a window of it inferred (within a tenth) is its own
          // policy's to count, a longer one is learned, and it then spaces the key.
          [
            [{ algorithm: gcra, limit: 5, windowMs: 1_000, burst: 1 }],
            [
              { ...quiet, learn: { limit: 5, windowMs: 1_050, inferred: true } },
              ...Array.from({ length: 3 }, () => ({ ...quiet, dt: 100 })),
              { ...quiet, dt: 100, learn: { limit: 5, windowMs: 1_200, inferred: true } },
              ...Array.from({ length: 6 }, () => ({ ...quiet, dt: 100 })),
            ],
          ],
          // A rate a whole-second wait taught, then counts of a limit of 5 that say 3 (of a full
          // bucket, in redis-gcra's floats): looked at over a second, a bucket, which replaces
          // the rate and is steered by the counts; then it rests, and is forgotten.
          [
            [{ algorithm: gcra, limit: 600, windowMs: 1_000 }],
            [
              ...Array.from({ length: 6 }, () => quiet),
              { ...quiet, waited: { sentAt: -5, waitMs: 1_000 } },
              ...Array.from({ length: 12 }, () => ({
                ...quiet,
                dt: 90,
                count: { remaining: 3, limit: 5, sentAt: -25 },
              })),
              { ...quiet, dt: 40, count: { remaining: 2, limit: 5, sentAt: -25 } },
              ...Array.from({ length: 4 }, () => ({ ...quiet, dt: 4_000 })),
            ],
          ],
          [
            [{ algorithm: gcra, limit: 100, windowMs: 1_000 }],
            [
              { ...quiet, refused: 0 },
              ...Array.from({ length: 60 }, () => ({ ...quiet, dt: 25 })),
              { ...quiet, dt: 25, refused: -5 },
              ...Array.from({ length: 20 }, () => ({ ...quiet, dt: 10 })),
            ],
          ],
          // Thirty granted in 300 ms, refused with a whole-second wait and two echoes: a rate
          // of 28 per second less two, paced once the block ends; then a refusal with a wait of
          // 250 ms after more were granted, which measures again; then a minute of grants.
          [
            [{ algorithm: gcra, limit: 100, windowMs: 1_000 }],
            [
              ...Array.from({ length: 30 }, () => ({ ...quiet, dt: 10 })),
              { ...quiet, waited: { sentAt: -20, waitMs: 1_000 } },
              { ...quiet, dt: 5, waited: { sentAt: -30, waitMs: 1_000 } },
              { ...quiet, dt: 5, waited: { sentAt: -25, waitMs: 1_000 } },
              { ...quiet, dt: 1_000 },
              ...Array.from({ length: 25 }, () => ({ ...quiet, dt: 40, costs: [1, 1] })),
              { ...quiet, dt: 10, waited: { sentAt: -10, waitMs: 250 } },
              ...Array.from({ length: 10 }, () => ({ ...quiet, dt: 30, costs: [1, 1] })),
              // A minute and more without a refusal: only then is its ceiling raised.
              ...Array.from({ length: 14 }, () => ({ ...quiet, dt: 5_000, costs: [1, 1, 1] })),
            ],
          ],
          // A rate a whole-second wait taught, paced for 1.6 s, then refused once: no slower than
          // KEPT of it.
          [
            [{ algorithm: gcra, limit: 100, windowMs: 1_000 }],
            [
              ...Array.from({ length: 30 }, () => ({ ...quiet, dt: 10 })),
              { ...quiet, waited: { sentAt: -20, waitMs: 1_000 } },
              { ...quiet, dt: 1_000 },
              ...Array.from({ length: 43 }, () => ({ ...quiet, dt: 37 })),
              { ...quiet, dt: 9, waited: { sentAt: -9, waitMs: 1_000 } },
              { ...quiet, dt: 1_000 },
              ...Array.from({ length: 10 }, () => ({ ...quiet, dt: 20 })),
            ],
          ],
          // A rate an exact wait taught; as its block ends the probe is refused (held), with an
          // echo of it and one of the sample; then a probe refused again, which measures.
          [
            [{ algorithm: gcra, limit: 100, windowMs: 1_000 }],
            [
              ...Array.from({ length: 30 }, () => ({ ...quiet, dt: 10 })),
              { ...quiet, waited: { sentAt: -20, waitMs: 250 } },
              { ...quiet, dt: 250 },
              { ...quiet, dt: 20 },
              { ...quiet, dt: 10, waited: { sentAt: -30, waitMs: 250 } },
              { ...quiet, dt: 5, waited: { sentAt: -290, waitMs: 250 } },
              { ...quiet, dt: 255 },
              { ...quiet, dt: 20 },
              { ...quiet, dt: 20 },
              { ...quiet, dt: 5, waited: { sentAt: -45, waitMs: 1 } },
              ...Array.from({ length: 10 }, () => ({ ...quiet, dt: 30 })),
            ],
          ],
          // Ten granted in a second make a slow rate, cut 1.5 s later below the ceiling it
          // measured; then 16 s without a refusal: the ceiling raised, and raised more.
          [
            [{ algorithm: gcra, limit: 100, windowMs: 1_000 }],
            [
              ...Array.from({ length: 10 }, () => ({ ...quiet, dt: 100 })),
              { ...quiet, refused: 0 },
              ...Array.from({ length: 60 }, () => ({ ...quiet, dt: 25 })),
              { ...quiet, dt: 25, refused: -5 },
              ...Array.from({ length: 16 }, () => ({ ...quiet, dt: 1_000, costs: [1, 1, 1] })),
            ],
          ],
          // A cut 1.5 s in, then, more than HOLD_MS later, the probe after a pause refused (the
          // window still spent: no cut, a longer pause), and a permit after an admitted probe
          // refused (a cut); the decisions at each rate.
          [
            [{ algorithm: gcra, limit: 100, windowMs: 1_000 }],
            [
              { ...quiet, refused: 0 },
              ...Array.from({ length: 60 }, () => ({ ...quiet, dt: 25 })),
              { ...quiet, dt: 25, refused: -5 },
              { ...quiet, dt: 1_100 },
              { ...quiet, dt: 30, refused: -30 },
              ...Array.from({ length: 4 }, () => ({ ...quiet, dt: 40 })),
              { ...quiet, dt: 500 },
              { ...quiet, dt: 30 },
              { ...quiet, dt: 30, refused: -30 },
              ...Array.from({ length: 10 }, () => ({ ...quiet, dt: 25 })),
            ],
          ],
          // Forty granted at once, a rate made by a refusal, then two refusals of the last permit
          // of 0.2 s of permits (those before it admitted): no spent window, no sample.
          [
            [{ algorithm: gcra, limit: 400, windowMs: 1_000 }],
            [
              ...Array.from({ length: 40 }, () => quiet),
              { ...quiet, dt: 300, refused: 0 },
              ...Array.from({ length: 8 }, () => ({ ...quiet, dt: 25 })),
              { ...quiet, dt: 1, refused: -1 },
              ...Array.from({ length: 8 }, () => ({ ...quiet, dt: 25 })),
              { ...quiet, dt: 1, refused: -1 },
              ...Array.from({ length: 10 }, () => ({ ...quiet, dt: 25 })),
            ],
          ],
          // Forty granted in 0.4 s, then three refusals in 0.2 s with permits granted between
          // them: a spent window, whose sample (not decayed: 40 over SEED_MS, less the permits
          // still in flight) is the ceiling the rate holds below; then the decisions at that
          // rate, of clients late for their permits (two at once: one on credit).
          [
            [{ algorithm: gcra, limit: 400, windowMs: 1_000 }],
            [
              ...Array.from({ length: 40 }, () => ({ ...quiet, dt: 10 })),
              { ...quiet, refused: 0 },
              ...Array.from({ length: 4 }, () => ({ ...quiet, dt: 25 })),
              { ...quiet, dt: 10, refused: -80 },
              ...Array.from({ length: 4 }, () => ({ ...quiet, dt: 25 })),
              { ...quiet, dt: 10, refused: -90 },
              ...Array.from({ length: 20 }, () => ({ ...quiet, dt: 45, costs: [1, 1, 1] })),
            ],
          ],
        ],
      },
    );
  }, 60_000);

  it('runs amounts per policy, counts per unit and adjustments in Lua as the shared bucket does', async () => {
    const policyArb = fc
      .record({
        algorithm: fc.constantFrom(tokenBucket, gcra),
        limit: fc.integer({ min: 1, max: 60 }),
        windowMs: fc.constantFrom(1, 7, 333, 1_000, 60_000),
      })
      .map((policy): Policy => policy);
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(policyArb, { minLength: 2, maxLength: 3 }),
        fc.array(
          fc.record({
            dt: fc.oneof(
              fc.integer({ min: 0, max: 3_000 }),
              fc.double({ min: 0, max: 20, noNaN: true }),
            ),
            costs: fc.array(
              fc.array(fc.integer({ min: 0, max: 60 }), { minLength: 3, maxLength: 3 }),
              {
                minLength: 1,
                maxLength: 3,
              },
            ),
            stop: fc.boolean(),
            lower: fc.option(
              fc.record({
                remaining: fc.integer({ min: 0, max: 30 }),
                policy: fc.integer({ min: 0, max: 2 }),
                // The round trip of the answer that said so (0: not known).
                roundTripMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 100_000 })),
              }),
              { nil: undefined, freq: 4 },
            ),
            adjust: fc.option(
              fc.array(fc.integer({ min: -80, max: 80 }), { minLength: 3, maxLength: 3 }),
              { nil: undefined, freq: 3 },
            ),
            // When the reserve given back was taken, relative (a policy that filled up since
            // absorbed it: low-room.ts).
            reservedAt: fc.option(fc.integer({ min: -3_000, max: 0 }), { nil: undefined }),
            // A policy the server advertised in the unit whose first policy is `of`. Its windows
            // outlast the run: Redis forgets a key at rest once a write finds it so (a give-back
            // to a full bucket), which the bucket-state model here does not.
            learn: fc.option(
              fc.record({
                limit: fc.integer({ min: 1, max: 60 }),
                windowMs: fc.constantFrom(60_000, 63_000),
                of: fc.integer({ min: 0, max: 2 }),
                // The round trip of the answer that stated it (0: not known).
                roundTripMs: fc.oneof(
                  fc.constant(0),
                  fc.double({ min: 0, max: 100_000, noNaN: true }),
                ),
              }),
              { nil: undefined, freq: 4 },
            ),
            refused: fc.option(fc.integer({ min: -300, max: 0 }), { nil: undefined, freq: 3 }),
          }),
          { maxLength: 15 },
        ),
        async (policies, steps) => {
          const limits = call(policies).limits;
          const key = `${run}:units:${n++}`;
          let now = 1_732_000_000_000.125;
          let state = normalize(undefined, limits, now);
          for (const step of steps) {
            now += step.dt;
            if (step.lower !== undefined) {
              const which = [Math.min(step.lower.policy, limits.length - 1)];
              const { remaining, roundTripMs } = step.lower;
              const args = [remaining, roundTripMs, 0, ...which.map((index) => index + 1)];
              await script(key, scriptArgs('l', limits, args, String(now)));
              lower(state, limits, now, remaining, which);
              heardRoundTrip(state, now, which[0] as number, roundTripMs);
              spreadAt(state, limits, now, roundTripMs, true);
            }
            if (step.learn !== undefined) {
              const { limit, windowMs, roundTripMs } = step.learn;
              const of = Math.min(step.learn.of, limits.length - 1);
              const args = [limit, windowMs, of, roundTripMs];
              await script(key, scriptArgs('a', limits, args, String(now)));
              learn(state, now, limit, windowMs, of);
              heardRoundTrip(state, now, of, roundTripMs);
              spreadAt(state, limits, now, roundTripMs, true);
            }
            if (step.adjust !== undefined) {
              const amounts = step.adjust.slice(0, limits.length);
              const { reservedAt } = step;
              const args = reservedAt === undefined ? amounts : [...amounts, reservedAt];
              await script(key, scriptArgs('d', limits, args, String(now)));
              adjust(state, limits, now, amounts, reservedAt);
              if (amounts.some((amount) => amount !== 0)) state = forgetAtRest(state, limits, now);
            }
            if (step.refused !== undefined) {
              await script(key, scriptArgs('f', limits, [step.refused], String(now)));
              observe(state, limits, now, { kind: 'refusal', sentAt: step.refused });
              state = forgetAtRest(state, limits, now);
            }
            const costs = step.costs.map((amounts) =>
              limits.map((policy, index) => Math.min(amounts[index] ?? 0, policy.capacity)),
            );
            const args = scriptArgs(
              't',
              limits,
              [0, step.stop ? 1 : 0, ...costs.map(encodeCost)],
              String(now),
            );
            const fromRedis = parseDecisions(await script(key, args));
            state = normalize(structuredClone(state), limits, now);
            const decisions = decide(state, limits, now, costs, step.stop);
            expect(fromRedis).toEqual(decisions);
            if (decisions.some((decision) => decision.allowed)) {
              state = forgetAtRest(state, limits, now);
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  }, 60_000);

  it('shares what one client learned: a policy it heard paces every client of the store', async () => {
    const prefix = `${run}:learn:`;
    const heard = redisStore({ client, prefix });
    const other = redisStore({ client, prefix });
    // Both configured far too generously; only the first heard the server's policy.
    const limits = [perSecond(1_000)];
    await heard.observe('k', { kind: 'policy', limit: 2, windowMs: 1_000 }, call(limits));
    const [first, second] = await other.takeMany('k', [1, 1], false, call(limits));
    expect(first).toMatchObject({ allowed: true, limit: 2 });
    // Spread evenly: the next permit one spacing (a window and a late client's 4 ms per 2:
    // 502 ms) after the first, on Redis's clock.
    expect(second).toMatchObject({ allowed: false, reason: 'rate' });
    expect(second?.retryAfterMs).toBeGreaterThan(400);
    expect(second?.retryAfterMs).toBeLessThanOrEqual(502);
    // Kept at least two of its windows, though the generous bucket is full again at once.
    expect(await client.pTTL(`${prefix}k`)).toBeGreaterThan(1_800);
    // A tokens policy (another unit) and a hostile one teach a store nothing.
    await heard.observe(
      't',
      { kind: 'policy', limit: 1, windowMs: 1_000, unit: 'tokens' },
      call(limits),
    );
    await heard.observe('h', { kind: 'policy', limit: 1e12, windowMs: 1 }, call(limits));
    expect(await client.exists([`${prefix}t`, `${prefix}h`])).toBe(0);
  });

  it('counts limits per unit for every process: the tokens one spends, another waits for', async () => {
    const prefix = `${run}:units:`;
    const day = 86_400_000;
    const limits = {
      requests: { limit: 100_000, windowMs: day },
      tokens: { limit: 1_000, windowMs: day },
    };
    // Three pacers, each with its own client of the store, as three processes would have.
    const pacers = [0, 1, 2].map(() =>
      createPacer({ limits, mode: 'reject', store: redisStore({ client, prefix }) }),
    );
    /** Calls of 10 tokens, the `index`-th by pacer `index % 3` from `first`: how many went. */
    const went = async (count: number, first: number) => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: count }, (_, index) =>
          (pacers[(first + index) % 3] as (typeof pacers)[number]).schedule(() => true, {
            key: 'k',
            cost: { requests: 1, tokens: 10 },
          }),
        ),
      );
      return outcomes.filter((outcome) => outcome.status === 'fulfilled').length;
    };
    // 1,000 tokens a day at 10 a call: exactly 100 of 150, between the three.
    expect(await went(150, 0)).toBe(100);
    // A give-back is in Redis for every process: 100 tokens back, 10 more calls.
    pacers[0]?.adjust('k', { tokens: -100 });
    expect(await went(15, 1)).toBe(10);
    // The reserve of a call sent before the bucket was last full (before all of them) is
    // absorbed: nothing comes back, no call more.
    const before = (pacers[0]?.now() ?? 0) - 60_000;
    pacers[0]?.adjust('k', { tokens: -100 }, { startedAt: before });
    expect(await went(5, 2)).toBe(0);
    // A tokens count of 0 from the server blocks the key; a count of requests is not one.
    const queue = createPacer({ limits: perSecond(5), store: redisStore({ client, prefix }) });
    queue.observe('plain', { kind: 'quota', remaining: 0, resetMs: 60_000, unit: 'tokens' });
    await expect(queue.schedule(() => 'went', { key: 'plain' })).resolves.toBe('went');
    for (const pacer of [...pacers, queue]) pacer.dispose();
  });

  it('spreads a spaced policy by the round trip any client told, for every client', async () => {
    const prefix = `${run}:trip:`;
    const heard = redisStore({ client, prefix });
    const other = redisStore({ client, prefix });
    // One permit at a time, 2 a second: a paced fetch's spaced default.
    const limits = [{ ...perSecond(2), algorithm: tokenBucket, burst: 1 }];
    // A client heard an answer 200 ms after its send; the other has heard none.
    const told = { ...call(limits), roundTripMs: 200 };
    await heard.observe('k', { kind: 'answered', sentAt: -200 }, told);
    expect((await other.take('k', 1, call(limits))).allowed).toBe(true);
    // The next permit (1000 + 100) / 2 ms after, on Redis's clock: the spread window.
    const next = await other.take('k', 1, call(limits));
    expect(next).toMatchObject({ allowed: false, reason: 'rate' });
    expect(next.retryAfterMs).toBeGreaterThan(500);
    expect(next.retryAfterMs).toBeLessThanOrEqual(550);
    // An answer shorter than the longest its client holds is no store call.
    await heard.observe('q', { kind: 'answered', sentAt: -50 }, told);
    expect(await client.exists(`${prefix}q`)).toBe(0);
  });

  it('shares one bucket between stores, on the server clock, and writes nothing for a denial', async () => {
    const prefix = `${run}:share:`;
    const a = redisStore({ client, prefix });
    const b = redisStore({ client, prefix });
    const limits = [perSecond(2)];
    expect((await a.take('k', 1, call(limits))).allowed).toBe(true);
    expect(await b.takeMany('k', [1, 1], false, call(limits))).toMatchObject([
      { allowed: true, remaining: 0 },
      { allowed: false, reason: 'rate' },
    ]);
    const denied = await a.peek('k', 1, call(limits));
    expect(denied.allowed).toBe(false);
    expect(denied.retryAfterMs).toBeGreaterThan(0);
    expect(denied.retryAfterMs).toBeLessThanOrEqual(500);
    // The key expires once its bucket is full again: 1 s from empty at 2 per second.
    const ttl = await client.pTTL(`${prefix}k`);
    expect(ttl).toBeGreaterThan(800);
    expect(ttl).toBeLessThanOrEqual(1_000);
    const before = await client.hGetAll(`${prefix}k`);
    await b.take('k', 1, call(limits));
    expect(await client.hGetAll(`${prefix}k`)).toEqual(before);
  });

  it('counts several policies on one key atomically, gcra too', async () => {
    const store = redisStore({ client, prefix: `${run}:multi:` });
    const limits = [perSecond(5, { algorithm: gcra }), perHour(3)];
    const decisions = await store.takeMany('k', [1, 1, 1, 1], false, call(limits));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(decisions[3]).toMatchObject({ limit: 3, reason: 'rate' });
  });

  it('shares a block, and lowers credit to the server count', async () => {
    const prefix = `${run}:block:`;
    const store = redisStore({ client, prefix });
    const limits = [perSecond(10)];
    await store.block('k', 5_000, call(limits));
    const blocked = await store.take('k', 1, call(limits));
    expect(blocked).toMatchObject({ allowed: false, reason: 'blocked' });
    expect(blocked.retryAfterMs).toBeGreaterThan(4_900);
    expect(await client.pTTL(`${prefix}k`)).toBeGreaterThan(4_900);
    await store.observe('other', { kind: 'quota', remaining: 1 }, call(limits));
    expect(await store.takeMany('other', [1, 1], false, call(limits))).toMatchObject([
      { allowed: true },
      { allowed: false },
    ]);
    await store.reset('k');
    expect((await store.take('k', 1, call(limits))).allowed).toBe(true);
  });

  it('loads the script again when the server forgot it (NOSCRIPT)', async () => {
    const store = redisStore({ client, prefix: `${run}:noscript:` });
    const limits = [perSecond(10)];
    await store.take('k', 1, call(limits));
    await client.scriptFlush();
    expect((await store.take('k', 1, call(limits))).remaining).toBe(8);
  });

  it('works through the three-line adapter, and points an ioredis client to it', async () => {
    const adapter: RedisScripting = {
      eval: (script, keys, args) => client.eval(script, { keys, arguments: args }),
    };
    const store = redisStore({ client: adapter, prefix: `${run}:adapter:` });
    expect((await store.take('k', 1, call([perSecond(1)]))).allowed).toBe(true);
    expect((await store.take('k', 1, call([perSecond(1)]))).allowed).toBe(false);
    const ioredisLike = { status: 'ready', evalsha: () => {}, eval: () => {} };
    expect(() => redisStore({ client: ioredisLike as never })).toThrow(/ioredis.*adapter/);
    expect(() => redisStore({ client, onError: 'maybe' as never })).toThrow(/onError/);
    expect(() =>
      redisStore({ client }).check([
        resolvePolicy({ limit: 1, windowMs: 1, algorithm: slidingWindow }),
      ]),
    ).toThrow(/redisStore counts with `tokenBucket` or `gcra`, got `slidingWindow`/);
  });

  it('reports a script error at once instead of waiting it out', async () => {
    const prefix = `${run}:wrongtype:`;
    await client.set(`${prefix}k`, 'not a hash');
    const store = redisStore({ client, prefix });
    await expect(store.take('k', 1, call([perSecond(1)]))).rejects.toThrow(/WRONGTYPE/);
  });

  describe('eight Node processes on one bucket', () => {
    const PROCESSES = 8;
    let dir: string;
    let workers: ChildProcess[] = [];

    /** Whether a key under `prefix` has `field` set to a number above 0 (the script wrote it). */
    async function storedField(prefix: string, field: string): Promise<boolean> {
      for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 100 })) {
        for (const stored of keys) if (Number(await client.hGet(stored, field)) > 0) return true;
      }
      return false;
    }

    /**
     * The first process sends one call to `url`, and what its answer taught is in Redis: the
     * store writes in the background (best effort, like every store write), so this waits
     * until the hash has `field`, as another process would find it.
     */
    async function firstHears(
      type: 'generous' | 'fetches',
      prefix: string,
      url: string,
      field: string,
    ): Promise<WorkerResult> {
      const result = await ask(workers[0] as ChildProcess, { type, prefix, url, calls: 1 });
      for (let tries = 0; !(await storedField(prefix, field)); tries++) {
        if (tries > 500) throw new Error(`\`${field}\` never reached Redis`);
      }
      return result;
    }

    /** An API on a loopback port: `answer` gets each request's response and its arrival count. */
    async function api(answer: (response: ServerResponse, count: number) => void) {
      const arrivals: number[] = [];
      const server: Server = createServer((_request, response) => {
        arrivals.push(performance.now());
        answer(response, arrivals.length);
      });
      await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
      const target = `http://127.0.0.1:${(server.address() as { port: number }).port}/x`;
      return { arrivals, target, server };
    }

    const ask = (worker: ChildProcess, command: unknown) =>
      new Promise<WorkerResult>((resolveResult, reject) => {
        const onMessage = (message: { type: string; result?: WorkerResult; error?: string }) => {
          if (message.type === 'ready') return;
          worker.off('message', onMessage);
          if (message.type === 'result') resolveResult(message.result as WorkerResult);
          else reject(new Error(message.error));
        };
        worker.on('message', onMessage);
        worker.send(command as never);
      });

    beforeAll(async () => {
      // The sources, bundled on the fly; `redis` stays an import, resolved from node_modules,
      // so the bundle lives in node_modules/.cache.
      const cache = resolve(import.meta.dirname, '../../node_modules/.cache');
      mkdirSync(cache, { recursive: true });
      dir = mkdtempSync(join(cache, 'fetch-pacer-redis-workers-'));
      const outfile = join(dir, 'worker.mjs');
      await build({
        entryPoints: [resolve(import.meta.dirname, 'redis-worker.ts')],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        outfile,
        external: ['redis'],
        logLevel: 'error',
      });
      workers = Array.from({ length: PROCESSES }, () =>
        fork(outfile, [], { env: { ...process.env, REDIS_URL: url }, execArgv: [] }),
      );
      await Promise.all(
        workers.map(
          (worker) =>
            new Promise<void>((ready, failed) => {
              worker.once('message', () => ready());
              worker.once('error', failed);
              worker.once('exit', (code) => failed(new Error(`a worker exited with ${code}`)));
            }),
        ),
      );
    }, 60_000);

    afterAll(() => {
      // By pid: every worker this suite forked, ready or not.
      for (const worker of workers) {
        worker.removeAllListeners('exit');
        if (worker.exitCode === null) worker.kill();
      }
      rmSync(dir, { recursive: true, force: true });
    });

    it('admits exactly 1,000 of 8 x 2,000 calls at a capacity of 1,000, in every one of 20 trials', async () => {
      const admittedPerTrial: number[] = [];
      const msPerTrial: number[] = [];
      for (let trial = 0; trial < 20; trial++) {
        const prefix = `${run}:trial${trial}:`;
        const started = performance.now();
        const results = await Promise.all(
          workers.map((worker) =>
            ask(worker, { type: 'burst', prefix, calls: 2_000, capacity: 1_000 }),
          ),
        );
        msPerTrial.push(performance.now() - started);
        for (const result of results) {
          expect(result.errors).toEqual([]);
          expect(result.admitted + result.denied).toBe(2_000);
          expect(Object.keys(result.reasons)).toEqual(result.denied > 0 ? ['rate'] : []);
        }
        admittedPerTrial.push(results.reduce((sum, result) => sum + result.admitted, 0));
      }
      console.info(
        `[redis] admitted per trial (8 processes x 2,000 calls, capacity 1,000): ${admittedPerTrial.join(', ')}; min ${Math.min(...admittedPerTrial)}, max ${Math.max(...admittedPerTrial)}; ${Math.round(Math.min(...msPerTrial))}..${Math.round(Math.max(...msPerTrial))} ms per trial`,
      );
      expect(admittedPerTrial).toEqual(Array(20).fill(1_000));
    }, 120_000);

    it('admits exactly 1,000 with no batching either: 8 x 2,000 takes at once, one script each', async () => {
      const admittedPerTrial: number[] = [];
      for (let trial = 0; trial < 3; trial++) {
        const prefix = `${run}:single${trial}:`;
        const results = await Promise.all(
          workers.map((worker) =>
            ask(worker, { type: 'takes', prefix, calls: 2_000, capacity: 1_000 }),
          ),
        );
        for (const result of results) expect(result.errors).toEqual([]);
        admittedPerTrial.push(results.reduce((sum, result) => sum + result.admitted, 0));
      }
      console.info(`[redis] unbatched takes, admitted per trial: ${admittedPerTrial.join(', ')}`);
      expect(admittedPerTrial).toEqual([1_000, 1_000, 1_000]);
    }, 120_000);

    it("keeps all of them to the server's policy once one of them heard it, shared through Redis", async () => {
      // The server advertises 40 a second on every answer (and counts nothing itself: the test
      // checks the arrivals). Every process is configured at 1,000 a second.
      const { arrivals, target, server } = await api((response) =>
        response
          .writeHead(200, { 'ratelimit-policy': '"p";q=40;w=1', ratelimit: '"p";r=39;t=1' })
          .end('ok'),
      );
      const prefix = `${run}:learned:`;
      try {
        // The first process hears the policy; Redis holds it (`lq`) before the others fire.
        const first = await firstHears('generous', prefix, target, 'lq1');
        expect(first.statuses).toEqual({ 200: 1 });
        arrivals.length = 0;
        // Then every process fires 10 at once: 80 calls, which their own limits would send at once.
        const results = await Promise.all(
          workers.map((worker) =>
            ask(worker, { type: 'generous', prefix, url: target, calls: 10 }),
          ),
        );
        for (const result of results) expect(result.statuses).toEqual({ 200: 10 });
        arrivals.sort((a, b) => a - b);
        let most = 0;
        for (const [i, at] of arrivals.entries()) {
          const within = arrivals.slice(i).filter((other) => other < at + 1_000).length;
          if (within > most) most = within;
        }
        const took = (arrivals.at(-1) as number) - (arrivals[0] as number);
        console.info(
          `[redis] 8 processes x 10 calls after one heard 40 per second: at most ${most} in any second, ${Math.round(took)} ms from the first to the last`,
        );
        // 40 a second spread evenly between the 8 (one per 25 ms): 41 in a second at most.
        expect(most).toBeLessThanOrEqual(41);
        expect(took).toBeGreaterThanOrEqual(79 * 25 - 100);
      } finally {
        server.close();
      }
    }, 30_000);

    it('stops all of them on one 429 with Retry-After, shared through Redis', async () => {
      const { arrivals, target, server } = await api((response, count) => {
        if (count === 1) response.writeHead(429, { 'retry-after': '120' }).end();
        else response.writeHead(200).end('ok');
      });
      const prefix = `${run}:retry-after:`;
      try {
        // One process meets the 429: its paced fetch blocks the key (in Redis, `b`) for 120 s.
        const first = await firstHears('fetches', prefix, target, 'b');
        expect(first.statuses).toEqual({ 429: 1 });
        // Then every process fires: none gets through, each told it is blocked.
        const results = await Promise.all(
          workers.map((worker) => ask(worker, { type: 'fetches', prefix, url: target, calls: 50 })),
        );
        for (const result of results) {
          expect(result).toMatchObject({ admitted: 0, denied: 50, reasons: { blocked: 50 } });
        }
        expect(arrivals).toHaveLength(1);
      } finally {
        server.close();
      }
    }, 30_000);
  });

  describe('when Redis dies mid-run', () => {
    const outage = async (onError: 'fail-closed' | 'fail-open') => {
      const server = await startRedisServer();
      const own = createClient({ url: server.url });
      own.on('error', () => {});
      await own.connect();
      const store = redisStore({
        client: own,
        onError,
        timeoutMs: 200,
        maxOutageMs: 1_500,
        prefix: `${run}:`,
      });
      const limits = perSecond(50);
      const pacer = createPacer({ limits, store, concurrency: 4 });
      const starts: number[] = [];
      const tasks = Array.from({ length: 200 }, () =>
        pacer.schedule(() => {
          starts.push(performance.now());
        }),
      );
      const outcomes = Promise.allSettled(tasks);
      // Mid-run: once 60 have started (50 at once, then one every 20 ms).
      while (starts.length < 60) await new Promise((next) => setImmediate(next));
      await server.kill();
      const killedAt = performance.now();
      const startedAtKill = starts.length;
      const settled = await outcomes;
      const settledAt = performance.now();
      return { server, own, pacer, store, starts, settled, killedAt, settledAt, startedAtKill };
    };

    it('fail-closed: starts nothing without Redis, rejects the waiting tasks after maxOutageMs, recovers', async () => {
      const { server, own, pacer, starts, settled, killedAt, settledAt, startedAtKill } =
        await outage('fail-closed');
      try {
        // Only what Redis granted before it died (at most one call's worth: 4 slots) started after.
        expect(starts.length - startedAtKill).toBeLessThanOrEqual(4);
        const rejected = settled.filter((s) => s.status === 'rejected');
        expect(rejected.length + starts.length).toBe(200);
        for (const outcome of rejected) {
          expect(isStoreUnavailableError((outcome as PromiseRejectedResult).reason)).toBe(true);
        }
        // Nothing hung: all settled within the outage bound plus a call's timeout and a probe.
        expect(settledAt - killedAt).toBeLessThan(1_500 + 200 + 2_000);
        // Redis comes back: once the client reconnected and a probe got through, tasks start.
        const ready = new Promise((reconnected) => own.once('ready', reconnected));
        await server.restart();
        await ready;
        let recovered = false;
        const deadline = performance.now() + 5_000;
        while (!recovered && performance.now() < deadline) {
          recovered = await pacer.schedule(() => true).catch(() => false);
          if (!recovered) await new Promise((next) => setImmediate(next));
        }
        expect(recovered).toBe(true);
      } finally {
        pacer.dispose();
        own.destroy();
        await server.stop();
      }
    }, 30_000);

    it('fail-open: keeps pacing alone at the policy, and nothing waits on Redis', async () => {
      const { server, own, pacer, starts, settled, killedAt } = await outage('fail-open');
      try {
        expect(settled.every((s) => s.status === 'fulfilled')).toBe(true);
        expect(starts).toHaveLength(200);
        // Alone, still under the policy: a fresh local bucket (50), then 50 per second.
        const after = starts.filter((at) => at > killedAt);
        for (let i = 0; i < after.length; i++) {
          for (let j = i; j < after.length; j++) {
            const allowed = 50 + ((after[j] as number) - (after[i] as number)) * 0.05 + 1e-6;
            expect(j - i + 1).toBeLessThanOrEqual(Math.floor(allowed) + 4);
          }
        }
      } finally {
        pacer.dispose();
        own.destroy();
        await server.stop();
      }
    }, 30_000);
  });
});
