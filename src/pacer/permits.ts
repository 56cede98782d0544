import type { Ticker } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import type { PacerLimiter } from '../core/pacer-limiter.js';
import type { ServerSignal } from '../core/signal.js';
import type { Cost, ReserveTimes, UnitCosts, UnitInspection } from '../core/units.js';
import type { RateLimitError } from './errors.js';
import type { ResolvedPacerOptions } from './options.js';
import type { Store } from './store-contract.js';
import type { Task, TaskOptions } from './task.js';
import type { KeyInspection } from './types.js';
import type { WaitingTasks } from './waiting.js';

/**
 * Where a scheduler's permits come from: the one part that differs between a pacer that counts
 * in memory (`LocalPermits`, the limiter answering synchronously) and one whose store answers
 * with Promises (`StorePermits`, brought in by `defineStore`). The scheduler owns the queue,
 * the task lifecycle and the loop (flush, pump, arm); a permit source decides, for the due
 * keys the loop hands it, which tasks start now.
 */
export interface Permits {
  /** ms until the head task of `key` (costing `cost`) should be decided: its due time. */
  waitOf(key: string, cost: Cost): number;
  /**
   * The fast path, for a task nothing can be ahead of: run it now if its permit exists (no
   * queue entry, no task object). Undefined: it goes through `admit`.
   */
  startNow<T>(run: () => T | PromiseLike<T>, options: TaskOptions): Promise<T> | undefined;
  /** Queues a checked task, or rejects it at once (reject mode, `maxQueue`, `maxWaitMs`). */
  admit<T>(run: () => T | PromiseLike<T>, options: TaskOptions): Promise<T>;
  /** `pacer.tryAcquire`: a take now, never ahead of the line of `key`. */
  tryAcquire(key: string, cost: number): Decision;
  /** Starts (or asks for) every due task while slots are free. */
  pump(): void;
  /** Slots held by decisions under way (a store call out for them); 0 when none can be. */
  readonly pending: number;
  /** The server's word: the limiter has it already; a store hears it too. */
  observe(key: string, signal: ServerSignal): void;
  blockUntil(key: string, until: number): void;
  /**
   * `pacer.adjust`: the key's limits per unit are charged or given back `delta` (checked here),
   * for a reserve charged at the `reserved` times if known.
   */
  adjust(key: string, delta: UnitCosts, reserved?: ReserveTimes): void;
  /**
   * For a key with limits per unit: when a task of `own` amounts would get them behind the
   * `ahead` amounts of the tasks before it (see `projectUnits`), for `onProgress`. Absent
   * where the permits' state is not at hand (a store's): those keys project no start.
   */
  projectUnits?(
    key: string,
    ahead: Readonly<Record<string, number>>,
    own: UnitCosts,
    units: Readonly<Record<string, UnitInspection>>,
  ): Decision;
  inspect(key: string): KeyInspection;
  /** The pacer is disposed: stop listening to the store, let it drop its waits. */
  dispose(): void;
  /**
   * A started task of `key` that took `cost` permits has settled (for a paced fetch: its
   * response arrived). Optional, and free when absent: the seam for accounting that counts a
   * permit from the send until the answer (the server counts arrivals, which lie between).
   */
  settled?(key: string, cost: Cost): void;
  /**
   * Whether `settled` wants to hear of a task starting now (read at each start). Absent: always.
   * The in-memory limiter listens only once a key counts permits until their answer, so the
   * fast path makes no closure per task until then.
   */
  readonly settles?: boolean;
}

/** What a permit source may use of its scheduler. */
export interface SchedulerCore {
  readonly options: ResolvedPacerOptions;
  /** The pacer's local limiter: policies, capacity checks, projections, known server blocks. */
  readonly limiter: PacerLimiter;
  readonly waiting: WaitingTasks;
  readonly now: Ticker;
  readonly paused: boolean;
  readonly disposed: boolean;
  /** While the timer's flush runs: the ticker time it was armed for (NaN otherwise). */
  readonly timerAt: number;
  /** Whether a concurrency slot is free (decisions under way hold theirs). */
  hasSlot(): boolean;
  /** Concurrency slots free: neither running a task nor held by a decision under way. */
  freeSlots(): number;
  /** Runs a task at once with no queue entry (the fast path), counting it admitted. */
  runNow<T>(run: () => T | PromiseLike<T>, options: TaskOptions): Promise<T>;
  /** Queues a checked task: its abort listener, its progress reports. */
  enqueue<T>(
    run: () => T | PromiseLike<T>,
    options: TaskOptions,
  ): { readonly task: Task; readonly promise: Promise<T> };
  /** Starts a task that left the line with its permit. */
  start(task: Task): void;
  /** Settles a task that never started, exactly once. */
  settle(task: Task, ok: boolean, value: unknown): void;
  /** A rate denial: counted, flushed, and the rejection returned. */
  deny(error: RateLimitError): Promise<never>;
  /** Counts permits granted (`admitted`) or denials (`denied`) for the snapshot. */
  count(admitted: number, denied: number): void;
  /** The end of every event: start what is due, re-arm, publish. */
  flush(): void;
  /** Re-times the waiting tasks of `key` after its credit changed, and flushes. */
  retime(key: string): void;
}

/** Makes the permit source of a pacer whose options name `store` (see `defineStore`). */
export type PermitsFactory = (core: SchedulerCore, store: Store) => Permits;

/**
 * A task of `key` ended: a state that counts permits until their answer (`arrival-safe`, a
 * slow start) counts them from now, and the waiting tasks of the key, due "at the next
 * answer", are re-timed. Both permit sources settle this way.
 */
export function settleAtEnd(core: SchedulerCore, key: string, cost: Cost): void {
  const { limiter, waiting } = core;
  if (!limiter.settles) return;
  limiter.settle(key, cost);
  if (waiting.line(key) !== undefined) core.retime(key);
}
