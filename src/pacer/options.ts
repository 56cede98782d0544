import type { Clock } from '../core/clock.js';
import { type PolicyInput, type PolicyResolver, summarizePolicy } from '../core/limiter.js';
import { unitLimits } from '../core/unit-limits.js';
import { assertBound, assertKnownOptions, fail } from '../core/validate.js';
import { realClock } from './real-clock.js';
import type { Store } from './store-contract.js';

/**
 * Time and timers of a pacer. A `ManualClock` from `fetch-pacer/testing` satisfies it, so a
 * test owns time. `now` must be monotonic ms (a float), like `performance.now()`.
 */
export interface PacerClock extends Clock {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** `'queue'`: wait for the permit. `'reject'`: fail at once with a `RateLimitError`. */
export type PacerMode = 'queue' | 'reject';

export interface PacerOptions {
  /**
   * The policy of every key (`perSecond(10)`, or `[perSecond(10), perDay(1000)]` where all must
   * allow), or a function of the key for per-tier limits. A function must be pure: the pacer
   * calls it again to answer `inspect` and to project waits.
   */
  readonly limits: PolicyInput | PolicyResolver;
  /**
   * What a task without a permit does: wait its turn (`'queue'`) or reject at once with a
   * `RateLimitError` carrying the Decision (`'reject'`).
   * @default 'queue'
   */
  readonly mode?: PacerMode;
  /**
   * Most tasks waiting at once, over all keys (a task waiting for a `concurrency` slot counts).
   * One more rejects with `QueueFullError`. An integer >= 0; 0 means "start now or fail".
   * @default Infinity
   */
  readonly maxQueue?: number;
  /**
   * Longest projected wait, in ms, that a task accepts at enqueue time (`mode: 'queue'`).
   * Beyond it the task rejects at once with a `RateLimitError` whose `retryAfterMs` is the
   * projected wait. The projection counts the permits of the tasks ahead of it in its key's
   * line and the key's rate (and a server block in force); it ignores `concurrency`, `pause()`,
   * higher-priority tasks that arrive later and server blocks to come. Checked once, at enqueue:
   * to bound the whole wait, pass `signal: AbortSignal.timeout(ms)` as well.
   * @default Infinity
   */
  readonly maxWaitMs?: number;
  /**
   * Most tasks of this pacer in flight at once (started and not yet settled). A task takes its
   * permit only when a slot is free, so a task waiting for a slot holds no permit.
   * @default Infinity
   */
  readonly concurrency?: number;
  /**
   * Most keys with live limiter state at once (see `RateLimiterOptions.maxKeys`); a task of a
   * new key beyond it waits (queue) or is denied with `reason: 'key-limit'` (reject).
   * @default Infinity
   */
  readonly maxKeys?: number;
  /** @default `performance.now()` and the global `setTimeout`/`clearTimeout`, looked up per call */
  readonly clock?: PacerClock;
  /**
   * Where bucket state lives. Without it the pacer counts in memory, for itself alone
   * (synchronous, the fastest). With a shared store every pacer using it draws on one bucket per
   * key: `crossTabStore({ name })` from `fetch-pacer/cross-tab` for the tabs and workers of an
   * origin, `redisStore({ client })` from `fetch-pacer/redis` for Node processes. All of them
   * must use the same `limits`.
   *
   * With a store that answers asynchronously a task waits for its store's answer before it
   * starts (reject mode too: it rejects once the store has denied it), `tryAcquire` throws (use
   * `acquire`), `maxWaitMs` is judged on the store's word one round trip after `schedule`, and
   * `maxKeys` bounds local state only (the store expires its own keys at rest).
   * @default the pacer's own in-memory limiter
   */
  readonly store?: Store | undefined;
}

/** Every option validated, defaults filled in. */
export interface ResolvedPacerOptions {
  readonly limits: PolicyInput | PolicyResolver;
  readonly mode: PacerMode;
  readonly maxQueue: number;
  readonly maxWaitMs: number;
  readonly concurrency: number;
  readonly maxKeys: number;
  readonly clock: PacerClock;
  readonly store: Store | undefined;
}

const MODES: readonly PacerMode[] = ['queue', 'reject'];

/** Every option of `createPacer`: a paced fetch that makes its pacer passes these on. */
export const PACER_OPTIONS: readonly (keyof PacerOptions)[] = [
  'limits',
  'mode',
  'maxQueue',
  'maxWaitMs',
  'concurrency',
  'maxKeys',
  'clock',
  'store',
];

export function resolvePacerOptions(options: PacerOptions): ResolvedPacerOptions {
  if (typeof options !== 'object' || options === null) {
    fail('options', 'pacer options `{ limits }`', options, TypeError);
  }
  assertKnownOptions('createPacer()', options, PACER_OPTIONS);
  const {
    limits,
    mode = 'queue',
    maxQueue = Infinity,
    maxWaitMs = Infinity,
    concurrency = Infinity,
    maxKeys = Infinity,
    clock = realClock,
    store,
  } = options;
  if (limits === undefined) fail('limits', 'a policy such as `perSecond(10)`', limits);
  // A static policy is checked now, naming `limits`; a resolver's answers are checked per key.
  if (typeof limits !== 'function') summarizePolicy(limits, 'limits', unitLimits.compile);
  if (!MODES.includes(mode)) fail('mode', "'queue' or 'reject'", mode, TypeError);
  assertCount('maxQueue', maxQueue);
  // `!(x >= 0)` is also true for NaN.
  if (typeof maxWaitMs !== 'number' || !(maxWaitMs >= 0)) {
    fail('maxWaitMs', 'a number of ms >= 0 (or Infinity)', maxWaitMs);
  }
  assertBound('concurrency', concurrency);
  assertBound('maxKeys', maxKeys);
  assertClock(clock);
  // A store is checked where it is used: createPacer (which needs its `defineStore` mark).
  return { limits, mode, maxQueue, maxWaitMs, concurrency, maxKeys, clock, store };
}

function assertCount(field: string, value: unknown): void {
  if (value === Infinity) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    fail(field, 'an integer >= 0 (or Infinity)', value);
  }
}

function assertClock(clock: unknown): asserts clock is PacerClock {
  const methods = ['now', 'setTimeout', 'clearTimeout'] as const;
  const ok =
    typeof clock === 'object' &&
    clock !== null &&
    methods.every((name) => typeof (clock as Record<string, unknown>)[name] === 'function');
  if (!ok) {
    const expected =
      'an object with `now()`, `setTimeout()` and `clearTimeout()`, such as a ManualClock';
    fail('clock', expected, clock, TypeError);
  }
}
