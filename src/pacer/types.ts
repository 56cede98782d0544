import type { Decision } from '../core/decision.js';
import type { LearnedPolicy } from '../core/learned.js';
import type { ServerSignal } from '../core/signal.js';
import type { ReserveTimes, UnitCosts, UnitInspection } from '../core/units.js';

/** Where and how a task is paced. Every field may be left out (or passed as `undefined`). */
export interface ScheduleOptions {
  /** The rate-limit key (an origin, a user, an API token). @default 'default' */
  readonly key?: string | undefined;
  /**
   * Permits the task takes: a positive integer, at most the policy's capacity; or, for limits
   * per unit, an amount in each (`{ requests: 1, tokens: 812 }`, a unit left out is 0).
   * @default 1
   */
  readonly cost?: number | UnitCosts | undefined;
  /**
   * Higher starts first among the waiting tasks of the same key; FIFO within a priority.
   * Any finite number. A steady stream of higher-priority tasks can hold lower ones back.
   * @default 0
   */
  readonly priority?: number | undefined;
  /**
   * Aborting it while the task waits takes the task out of the queue at once and rejects it
   * with `signal.reason`; it took no permit. Once the task has started, aborting does nothing
   * here: the task is not cancelled (give the signal to the task yourself, as fetch takes it).
   */
  readonly signal?: AbortSignal | undefined;
  /**
   * Advanced: put the task ahead of every waiting task of its key and priority (still behind
   * higher priorities). For a retry that already waited its turn, such as a request the server
   * answered with 429. Several `front` tasks go last-in first-out among themselves.
   * @default false
   */
  readonly front?: boolean | undefined;
  /**
   * Told where the task stands while it waits, then once when it starts. Called synchronously
   * from the pacer, only when the report changes (never twice in a row with the same value):
   * `queued` with the projected start, `blocked` with the end of the server's block on its key,
   * and `started` last. A task that starts at once reports only `started`; one that is aborted,
   * denied or disposed reports nothing more. A throwing listener is reported (`reportError`,
   * or thrown from a microtask where that is missing) and the pacer goes on.
   */
  readonly onProgress?: ((progress: TaskProgress) => void) | undefined;
}

/** Where a scheduled task stands: see `ScheduleOptions.onProgress`. */
export type TaskProgress =
  | {
      /** Waiting for its permits (or a concurrency slot, or `resume()`). */
      readonly state: 'queued';
      /**
       * Pacer-clock ms at which its permits are projected to exist: the time its key's head gets
       * them plus the permits of the tasks between at the key's rate (exact for a token bucket
       * or GCRA with a backlog, an estimate for window algorithms). It moves when the line ahead
       * changes, not as time passes, and a move under 1 ms (a real clock's noise, the window
       * algorithms' whole-ms waits) is not reported. Undefined when the permits are due but the task waits for
       * something else (a concurrency slot, `resume()`, a store's answer), and in reject mode.
       */
      readonly startAt: number | undefined;
    }
  | {
      /**
       * Waiting because the server said so (`blockUntil`, or `observe` with nothing left); from
       * a paced fetch, also because its send failed while the page said it was offline.
       */
      readonly state: 'blocked';
      /**
       * Pacer-clock ms at which the server's block on its key ends; offline, the latest the
       * call waits for the network (it goes as soon as the page is online).
       */
      readonly until: number;
    }
  | { readonly state: 'started' };

/** Immutable state of a pacer for `useSyncExternalStore`: a new object only when it changed. */
export interface PacerSnapshot {
  /** Tasks waiting (for a permit, a server block or a concurrency slot). */
  readonly queued: number;
  /** Tasks started and not yet settled. */
  readonly inFlight: number;
  /** Permits granted so far: tasks started plus `tryAcquire` calls allowed. */
  readonly admitted: number;
  /** Rate denials so far: reject-mode and `maxWaitMs` rejections plus `tryAcquire` denials. */
  readonly denied: number;
  /** Keys the server blocked (via `blockUntil` or `observe`) whose block still holds, sorted. */
  readonly blockedKeys: readonly string[];
  readonly paused: boolean;
  readonly disposed: boolean;
}

/** One key's live state, computed when asked (for gauges and animations). */
export interface KeyInspection {
  /** The ticker time this was computed at, in ms. */
  readonly at: number;
  /** Permits available now as a float, partly refilled credit included. */
  readonly level: number;
  /** Most permits the key holds at once (the tightest `burst ?? limit`). */
  readonly capacity: number;
  /** The tightest `limit` of the key's policy. */
  readonly limit: number;
  /** Tasks of this key waiting. */
  readonly queued: number;
  /** Ticker time until which the server blocked the key, or undefined. */
  readonly blockedUntil: number | undefined;
  /**
   * Ticker time at which the next waiting task of the key gets its permit (it may still wait
   * for a concurrency slot, or for `resume()`). Absent when none waits.
   */
  readonly nextStartAt?: number;
  /**
   * The policy the key learned from the server on top of its own (an advertised
   * `RateLimit-Policy`, or a rate cut on refusals), which counts in `capacity` and `limit`.
   * Absent while it has learned none.
   */
  readonly learned?: LearnedPolicy;
  /**
   * With limits per unit: each unit by name (`units.tokens.level`), its learned policy too. The
   * fields above are the main (first) unit's.
   */
  readonly units?: Readonly<Record<string, UnitInspection>>;
}

export interface Pacer {
  /**
   * Runs `task` once its key has the permits (queue mode) or rejects with `RateLimitError` if
   * it has none now (reject mode). Returns the task's own result.
   *
   * Rejects with: `signal.reason` on abort, `QueueFullError`, `RateLimitError` (reject mode, or
   * a projected wait beyond `maxWaitMs`), `PacerDisposedError`, the core's `RangeError` when
   * `cost` exceeds the key's capacity, or whatever the task throws. Throws synchronously only
   * for malformed arguments (a task that is not a function, a key that is not a string, a cost
   * that is not a positive integer, a non-finite priority).
   */
  schedule<T>(task: () => T | PromiseLike<T>, options?: ScheduleOptions): Promise<T>;
  /**
   * Resolves when the permit is granted (a task that does nothing), for callers that do the
   * work themselves. That work is outside `concurrency`, which counts the empty task only.
   */
  acquire(options?: ScheduleOptions): Promise<void>;
  /**
   * Answers at once and, when allowed, takes the permit. It never jumps the queue: while tasks
   * of `key` wait, it is denied (`'rate'`, or `'blocked'`) with the projected wait behind them.
   * Not held back by `pause()` and takes no concurrency slot. Throws like the core for a bad
   * key or a cost beyond capacity, and `PacerDisposedError` after `dispose()`.
   */
  tryAcquire(key?: string, cost?: number): Decision;
  /**
   * The pacer's clock now (monotonic ms): the time base of `blockUntil`, `inspect().at`,
   * `blockedUntil` and `nextStartAt`. `pacer.blockUntil(key, pacer.now() + retryAfterMs)`.
   */
  now(): number;
  /** The server said "not before `until`" (ticker ms): tasks of `key` wait until then. */
  blockUntil(key: string, until: number): void;
  /**
   * What the server said of `key`, as one typed signal: its count (`{ kind: 'quota',
   * remaining, resetMs }`, which only ever lowers local credit), an advertised policy
   * (`{ kind: 'policy', limit, windowMs }`, learned on top of the key's own), a refusal
   * (`{ kind: 'refusal', retryAfterMs? }`: blocked that long, or AIMD without it), a probe of
   * an unknown key or the answer that ends it. With a store, the store hears it too.
   */
  observe(key: string, signal: ServerSignal): void;
  /**
   * The real cost of a started task of `key` is known (an LLM answer's `usage`): charges
   * `delta` more in each unit it names, or gives it back where negative
   * (`{ tokens: used - estimated }`), at once, and re-times the waiting tasks of the key. (Not
   * `settle`: that is the limiter's word for a permit whose answer came.) A
   * give-back never raises a unit above its capacity; a charge beyond what a unit holds is paid
   * as its permits come back. For limits per unit; with a store, every client of the store
   * sees it (`Store.adjust`).
   *
   * `reserved` says when the task's reserve was charged: `{ startedAt, answeredAt }`, each
   * `pacer.now()` then (the paced fetch passes them). A give-back is then at most the least room
   * the unit had to its capacity since: a server's bucket that filled up meanwhile has absorbed
   * the over-charge, and so has the pacer's. Without it, a give-back is credited up to the room
   * the unit has now, which can put the pacer ahead of the server by what it absorbed. With a
   * store, the start is the reserve's time (`Store.adjust`'s `reservedAt`).
   */
  adjust(key: string, delta: UnitCosts, reserved?: ReserveTimes): void;
  /** No task starts until `resume()`; queued tasks keep their place. Clears the timer. */
  pause(): void;
  resume(): void;
  /** Resolves once nothing is queued and nothing is in flight. */
  onIdle(): Promise<void>;
  /**
   * Rejects every queued task with `PacerDisposedError`, clears the timer and refuses new
   * tasks. Tasks in flight run to the end. Idempotent.
   */
  dispose(): void;
  /** Calls `listener` after each change of the snapshot. Bound: pass it around freely. */
  subscribe(listener: () => void): () => void;
  /** The current snapshot. Bound, for `useSyncExternalStore(pacer.subscribe, pacer.getSnapshot)`. */
  getSnapshot(): PacerSnapshot;
  /** The live state of `key` at this instant. */
  inspect(key?: string): KeyInspection;
}
