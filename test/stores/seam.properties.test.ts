import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Policy } from '../../src/core/policy.js';
import { gcra, tokenBucket } from '../../src/index.js';
import { createPacer, type PacerClock } from '../../src/pacer/index.js';
import { createManualClock } from '../../src/testing/index.js';
import { fakeStore } from '../support/fake-store.js';

type Op =
  | {
      kind: 'schedule';
      key: number;
      cost: number;
      priority: number;
      duration: number;
      abortable: boolean;
      front: boolean;
    }
  | { kind: 'abort'; index: number }
  | { kind: 'answer'; index: number }
  | { kind: 'fail'; index: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'block'; key: number; ms: number }
  | { kind: 'pause' }
  | { kind: 'resume' }
  | { kind: 'dispose' };

const KEYS = ['a', 'b'];

const policyArb = fc
  .record({
    algorithm: fc.constantFrom(tokenBucket, gcra),
    limit: fc.integer({ min: 1, max: 4 }),
    windowMs: fc.constantFrom(100, 333, 1_000),
    burst: fc.option(fc.integer({ min: 2, max: 5 }), { nil: undefined }),
  })
  .map(({ burst, ...rest }): Policy => (burst === undefined ? rest : { ...rest, burst }));

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('schedule' as const),
      key: fc.integer({ min: 0, max: 1 }),
      cost: fc.integer({ min: 1, max: 2 }),
      priority: fc.integer({ min: 0, max: 1 }),
      duration: fc.constantFrom(0, 0, 50, 400),
      abortable: fc.boolean(),
      front: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('abort' as const), index: fc.nat() }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('answer' as const), index: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fail' as const), index: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.integer({ min: 0, max: 600 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('block' as const),
      key: fc.integer({ min: 0, max: 1 }),
      ms: fc.integer({ min: 1, max: 700 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'pause' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'resume' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'dispose' as const }) },
);

const configArb = fc.record({
  policy: policyArb,
  mode: fc.constantFrom<'queue' | 'reject'>('queue', 'queue', 'reject'),
  concurrency: fc.constantFrom(1, 2, Number.POSITIVE_INFINITY),
  maxWaitMs: fc.constantFrom(900, Number.POSITIVE_INFINITY),
  batches: fc.boolean(),
});

interface Tracked {
  readonly key: string;
  readonly priority: number;
  readonly front: boolean;
  readonly order: number;
  runs: number;
  settled: number;
  abortedBeforeStart: boolean;
  controller: AbortController | undefined;
}

describe('the store seam: properties with an asynchronous store', () => {
  it('settles every task exactly once, starts none without a grant, keeps FIFO per key and one timer', async () => {
    await fc.assert(
      fc.asyncProperty(configArb, fc.array(opArb, { maxLength: 50 }), async (config, ops) => {
        const clock = createManualClock();
        const live = new Set<number>();
        let maxTimers = 0;
        const pacerClock: PacerClock = {
          now: clock.now,
          setTimeout: (callback, ms) => {
            const id = clock.setTimeout(() => {
              live.delete(id);
              callback();
            }, ms);
            live.add(id);
            maxTimers = Math.max(maxTimers, live.size);
            return id;
          },
          clearTimeout: (handle) => {
            live.delete(handle as number);
            clock.clearTimeout(handle as number);
          },
        };
        const fake = fakeStore({ now: clock.now, answer: 'manual', batches: config.batches });
        const pacer = createPacer({
          limits: config.policy,
          mode: config.mode,
          concurrency: config.concurrency,
          maxWaitMs: config.maxWaitMs,
          clock: pacerClock,
          store: fake.store,
        });
        const tasks: Tracked[] = [];
        const startOrder: Tracked[] = [];
        let running = 0;
        let maxRunning = 0;
        const startsBy = new Map<string, number>();
        const blockedUntil = new Map<string, number>();
        let paused = false;
        const violations: string[] = [];
        const pick = <T>(list: readonly T[], index: number) => list[index % list.length];

        for (const op of ops) {
          switch (op.kind) {
            case 'schedule': {
              const key = KEYS[op.key] as string;
              const controller = op.abortable ? new AbortController() : undefined;
              const tracked: Tracked = {
                key,
                priority: op.priority,
                front: op.front,
                order: tasks.length,
                runs: 0,
                settled: 0,
                abortedBeforeStart: false,
                controller,
              };
              tasks.push(tracked);
              const run = () => {
                tracked.runs++;
                startOrder.push(tracked);
                // Nothing starts while paused, or while a block the pacer was told of holds.
                // (Recorded, not thrown: the pacer would take a throw for the task's failure.)
                if (paused) violations.push('started while paused');
                if (clock.now() < (blockedUntil.get(key) ?? 0)) violations.push('started blocked');
                // No start without a grant: never more starts of a key than permits granted.
                const started = (startsBy.get(key) ?? 0) + op.cost;
                startsBy.set(key, started);
                const granted = fake.grants
                  .filter((grant) => grant.key === key)
                  .reduce((sum, grant) => sum + grant.cost, 0);
                if (started > granted)
                  violations.push(`${started} permits started, ${granted} granted`);
                if (op.duration === 0) return;
                running++;
                maxRunning = Math.max(maxRunning, running);
                return new Promise<void>((resolve) =>
                  clock.setTimeout(() => {
                    running--;
                    resolve();
                  }, op.duration),
                );
              };
              const count = () => {
                tracked.settled++;
              };
              pacer
                .schedule(run, {
                  key,
                  cost: op.cost,
                  priority: op.priority,
                  front: op.front,
                  signal: controller?.signal,
                })
                .then(count, count);
              break;
            }
            case 'abort': {
              const tracked = pick(tasks, op.index);
              if (tracked?.controller !== undefined && !tracked.controller.signal.aborted) {
                if (tracked.runs === 0 && tracked.settled === 0) tracked.abortedBeforeStart = true;
                tracked.controller.abort();
              }
              break;
            }
            case 'answer':
              pick(fake.pending, op.index)?.answer();
              break;
            case 'fail':
              pick(fake.pending, op.index)?.fail(new Error('store failed'));
              break;
            case 'advance':
              await clock.advanceAsync(op.ms);
              break;
            case 'block': {
              const key = KEYS[op.key] as string;
              const until = clock.now() + op.ms;
              blockedUntil.set(key, Math.max(until, blockedUntil.get(key) ?? 0));
              pacer.blockUntil(key, until);
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
            case 'dispose':
              pacer.dispose();
              break;
          }
          await clock.advanceAsync(0);
          expect(live.size).toBeLessThanOrEqual(1);
          expect(fake.overlaps).toBe(0);
        }

        // Drain: answer everything and let time pass until every task has settled.
        paused = false;
        pacer.resume();
        for (let round = 0; round < 400 && tasks.some((task) => task.settled === 0); round++) {
          fake.answerAll();
          await clock.advanceAsync(0);
          if (fake.pending.length === 0) await clock.advanceAsync(250);
        }
        await pacer.onIdle();

        expect(violations).toEqual([]);
        for (const task of tasks) {
          expect(task.settled).toBe(1);
          expect(task.runs).toBeLessThanOrEqual(1);
          if (task.abortedBeforeStart) expect(task.runs).toBe(0);
        }
        // FIFO per key within a priority (tasks put in `front` aside).
        for (const key of KEYS) {
          for (const priority of [0, 1]) {
            const orders = startOrder
              .filter((t) => t.key === key && t.priority === priority && !t.front)
              .map((t) => t.order);
            expect(orders).toEqual([...orders].sort((x, y) => x - y));
          }
        }
        expect(maxTimers).toBeLessThanOrEqual(1);
        expect(maxRunning).toBeLessThanOrEqual(config.concurrency);
        expect(fake.overlaps).toBe(0);
        expect(pacer.getSnapshot()).toMatchObject({ queued: 0, inFlight: 0 });
        expect(pacer.getSnapshot().admitted).toBe(tasks.filter((t) => t.runs === 1).length);
      }),
      { numRuns: 300 },
    );
  }, 60_000);
});
