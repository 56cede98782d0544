import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/core/limiter.js';
import type { Algorithm, Policy } from '../../src/core/policy.js';
import { fixedWindow, gcra, slidingLog, slidingWindow, tokenBucket } from '../../src/index.js';
import { createPacer, type PacerClock } from '../../src/pacer/index.js';
import { createManualClock } from '../../src/testing/index.js';

type Op =
  | {
      kind: 'schedule';
      key: number;
      cost: number;
      priority: number;
      duration: number;
      abortable: boolean;
      front: boolean;
      throws: boolean;
    }
  | { kind: 'abort'; index: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'block'; key: number; ms: number }
  | { kind: 'observe'; key: number; remaining: number; resetMs: number }
  | { kind: 'pause' }
  | { kind: 'resume' };

const KEYS = ['a', 'b', 'c'];

const policyArb = fc
  .record({
    algorithm: fc.constantFrom<Algorithm>(
      tokenBucket,
      gcra,
      slidingLog,
      slidingWindow,
      fixedWindow,
    ),
    limit: fc.integer({ min: 1, max: 5 }),
    windowMs: fc.constantFrom(100, 250, 1_000, 333),
    burst: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
  })
  .map(({ algorithm, limit, windowMs, burst }): Policy => {
    return algorithm.burst === 'capacity' && burst !== undefined
      ? { algorithm, limit, windowMs, burst }
      : { algorithm, limit, windowMs };
  });

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('schedule' as const),
      key: fc.integer({ min: 0, max: 2 }),
      cost: fc.integer({ min: 1, max: 7 }),
      priority: fc.integer({ min: 0, max: 2 }),
      duration: fc.constantFrom(0, 0, 10, 150, 600),
      abortable: fc.boolean(),
      front: fc.boolean(),
      throws: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('abort' as const), index: fc.nat() }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.integer({ min: 0, max: 700 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('block' as const),
      key: fc.integer({ min: 0, max: 2 }),
      ms: fc.integer({ min: 1, max: 900 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('observe' as const),
      key: fc.integer({ min: 0, max: 2 }),
      remaining: fc.integer({ min: 0, max: 3 }),
      resetMs: fc.integer({ min: 0, max: 900 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'pause' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'resume' as const }) },
);

const configArb = fc.record({
  policy: policyArb,
  mode: fc.constantFrom<'queue' | 'reject'>('queue', 'queue', 'reject'),
  concurrency: fc.constantFrom(1, 2, Number.POSITIVE_INFINITY),
  maxQueue: fc.constantFrom(4, Number.POSITIVE_INFINITY),
  maxWaitMs: fc.constantFrom(800, Number.POSITIVE_INFINITY),
  maxKeys: fc.constantFrom(2, Number.POSITIVE_INFINITY),
});

type LogEntry =
  | { t: number; kind: 'start'; key: string; cost: number }
  | { t: number; kind: 'block'; key: string; until: number }
  | { t: number; kind: 'observe'; key: string; remaining: number; resetMs: number };

interface Tracked {
  runs: number;
  settled: number;
  outcome: 'pending' | 'resolved' | 'rejected';
  abortedBeforeStart: boolean;
  controller: AbortController | undefined;
}

describe('pacer properties', () => {
  it('settles every task exactly once; starts none before its permits or later than due; one timer; concurrency held', async () => {
    await fc.assert(
      fc.asyncProperty(configArb, fc.array(opArb, { maxLength: 40 }), async (config, ops) => {
        const clock = createManualClock();
        let pacerTimers = 0;
        let maxPacerTimers = 0;
        const live = new Set<number>();
        const pacerClock: PacerClock = {
          now: clock.now,
          setTimeout: (callback, ms) => {
            const id = clock.setTimeout(() => {
              live.delete(id);
              callback();
            }, ms);
            live.add(id);
            pacerTimers = live.size;
            maxPacerTimers = Math.max(maxPacerTimers, pacerTimers);
            return id;
          },
          clearTimeout: (handle) => {
            live.delete(handle as number);
            clock.clearTimeout(handle as number);
          },
        };
        const { policy, ...pacerOptions } = config;
        const pacer = createPacer({ limits: policy, ...pacerOptions, clock: pacerClock });
        const log: LogEntry[] = [];
        const tasks: Tracked[] = [];
        let paused = false;
        let running = 0;
        let maxRunning = 0;

        const checkNoneOverdue = () => {
          if (paused || config.mode === 'reject') return;
          const snapshot = pacer.getSnapshot();
          if (snapshot.inFlight >= config.concurrency) return;
          for (const key of KEYS) {
            const inspection = pacer.inspect(key);
            if (inspection.queued > 0) expect(inspection.nextStartAt).toBeGreaterThan(clock.now());
          }
        };

        for (const op of ops) {
          switch (op.kind) {
            case 'schedule': {
              const key = KEYS[op.key] as string;
              const controller = op.abortable ? new AbortController() : undefined;
              const tracked: Tracked = {
                runs: 0,
                settled: 0,
                outcome: 'pending',
                abortedBeforeStart: false,
                controller,
              };
              tasks.push(tracked);
              const run = () => {
                tracked.runs++;
                log.push({ t: clock.now(), kind: 'start', key, cost: op.cost });
                if (op.throws) throw new Error('task failed');
                if (op.duration === 0) return 'done';
                running++;
                maxRunning = Math.max(maxRunning, running);
                return new Promise<string>((resolve) => {
                  clock.setTimeout(() => {
                    running--;
                    resolve('done');
                  }, op.duration);
                });
              };
              pacer
                .schedule(run, {
                  key,
                  cost: op.cost,
                  priority: op.priority,
                  front: op.front,
                  signal: controller?.signal,
                })
                .then(
                  () => {
                    tracked.settled++;
                    tracked.outcome = 'resolved';
                  },
                  () => {
                    tracked.settled++;
                    tracked.outcome = 'rejected';
                  },
                );
              break;
            }
            case 'abort': {
              const tracked = tasks[op.index % Math.max(1, tasks.length)];
              if (tracked?.controller !== undefined && !tracked.controller.signal.aborted) {
                if (tracked.runs === 0 && tracked.settled === 0) tracked.abortedBeforeStart = true;
                tracked.controller.abort();
              }
              break;
            }
            case 'advance':
              await clock.advanceAsync(op.ms);
              break;
            case 'block': {
              const key = KEYS[op.key] as string;
              const until = clock.now() + op.ms;
              log.push({ t: clock.now(), kind: 'block', key, until });
              pacer.blockUntil(key, until);
              break;
            }
            case 'observe': {
              const key = KEYS[op.key] as string;
              const { remaining, resetMs } = op;
              log.push({ t: clock.now(), kind: 'observe', key, remaining, resetMs });
              pacer.observe(key, { kind: 'quota', remaining, resetMs });
              break;
            }
            case 'pause':
              paused = true;
              pacer.pause();
              break;
            case 'resume':
              paused = false;
              pacer.resume();
              break;
          }
          await clock.advanceAsync(0);
          checkNoneOverdue();
          expect(pacerTimers).toBeLessThanOrEqual(1);
        }

        // Drain: everything left must settle.
        pacer.resume();
        for (let round = 0; round < 50 && tasks.some((task) => task.settled === 0); round++) {
          await clock.advanceAsync(5_000);
        }
        await pacer.onIdle();
        // Past every block, whose expiry the pacer wakes for (to update its snapshot).
        await clock.advanceAsync(1_000);

        for (const task of tasks) {
          expect(task.settled).toBe(1);
          expect(task.runs).toBeLessThanOrEqual(1);
          // A task that was aborted while it waited never ran.
          if (task.abortedBeforeStart) expect(task.runs).toBe(0);
        }
        expect(maxPacerTimers).toBeLessThanOrEqual(1);
        expect(maxRunning).toBeLessThanOrEqual(config.concurrency);
        expect(clock.pendingTimers).toBe(0);
        expect(pacer.getSnapshot()).toMatchObject({ queued: 0, inFlight: 0 });
        expect(pacer.getSnapshot().admitted).toBe(tasks.filter((task) => task.runs === 1).length);

        // Replay the starts and the server's word into a fresh limiter: each start was allowed.
        let now = 0;
        const reference = createRateLimiter({
          policy: config.policy,
          maxKeys: config.maxKeys,
          clock: () => now,
        });
        for (const entry of log) {
          now = entry.t;
          if (entry.kind === 'block') reference.blockUntil(entry.key, entry.until);
          else if (entry.kind === 'observe') {
            const { remaining, resetMs } = entry;
            reference.observe(entry.key, { kind: 'quota', remaining, resetMs });
          } else expect(reference.tryAcquire(entry.key, entry.cost).allowed).toBe(true);
        }

        // And directly: no window of windowMs holds more than the algorithm can admit.
        const { limit, windowMs, algorithm, burst } = config.policy;
        const bound =
          algorithm?.burst === 'capacity'
            ? (burst ?? limit) + limit
            : algorithm === slidingLog
              ? limit
              : 2 * limit;
        const starts = log.filter((entry) => entry.kind === 'start');
        for (const key of KEYS) {
          const ofKey = starts.filter((start) => start.key === key);
          for (const first of ofKey) {
            const inWindow = ofKey.filter((s) => s.t >= first.t && s.t < first.t + windowMs);
            const cost = inWindow.reduce((sum, s) => sum + s.cost, 0);
            expect(cost).toBeLessThanOrEqual(bound);
          }
        }
      }),
      { numRuns: 150 },
    );
  }, 60_000);
});
