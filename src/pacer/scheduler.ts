import { MonotonicClock } from '../core/clock.js';
import type { Decision } from '../core/decision.js';
import type { Cost, ReserveTimes, UnitCosts } from '../core/units.js';
import type { ServerSignal } from '../core/limiter.js';
import { createPacerLimiter, type PacerLimiter } from '../core/pacer-limiter.js';
import { unitsOf } from '../core/unit-limits.js';
import { assertFiniteNumber, assertPositiveInteger } from '../core/validate.js';
import { onAbort } from './abort.js';
import { PacerDisposedError, RateLimitError } from './errors.js';
import { LocalPermits } from './local-permits.js';
import type { ResolvedPacerOptions } from './options.js';
import type { Permits, SchedulerCore } from './permits.js';
import { RunningTasks, settle, type TaskEvents } from './lifecycle.js';
import { ProgressReports, type UnitStarts } from './progress.js';
import { Snapshots } from './snapshots.js';
import {
  assertKey,
  createTask,
  DEFAULT_KEY,
  resolveTaskOptions,
  type Task,
  type TaskOptions,
} from './task.js';
import { Timer } from './timer.js';
import type { KeyInspection, PacerSnapshot, ScheduleOptions } from './types.js';
import { WaitingTasks } from './waiting.js';

/**
 * The one scheduler of a pacer: the queue, the task lifecycle and the loop, composed with a
 * permit source (`Permits`) that says which due tasks start. Every event (a task queued,
 * settled or aborted, the timer, the server's word, pause) ends in `flush()`: start what is
 * due, re-arm the one timer for the earliest due key, publish the snapshot, wake `onIdle`.
 *
 * Without a store the permits are the in-memory limiter's (`LocalPermits`); with one, the
 * permit source `defineStore` attached to it (`StorePermits`), so bundles without a store carry
 * none of its code.
 */
export class Scheduler implements SchedulerCore, TaskEvents {
  readonly limiter: PacerLimiter;
  readonly waiting: WaitingTasks;
  private readonly permits: Permits;
  private readonly timer: Timer;
  /** While the timer's flush runs: the ticker time it was armed for (NaN otherwise). */
  timerAt = Number.NaN;
  private readonly store: Snapshots;
  /** Tasks started and not settled: their count is what `concurrency` bounds. */
  private readonly running: RunningTasks;
  private admitted = 0;
  private denied = 0;
  paused = false;
  disposed = false;
  private order = 0;
  /** The pacer's clock, clamped (see `now`). */
  private readonly clock: MonotonicClock;
  private flushing = false;
  private again = false;
  private idleWaiters: (() => void)[] = [];
  /** While a head's due time is computed: the one time every reading gives (see `waitAt`). */
  private pinned: number | undefined;
  /** Tasks with an `onProgress` listener, told where they stand after each flush. */
  private readonly progress = new ProgressReports();
  /**
   * Keys the server blocked since the last flush, and until when (only while `maxWaitMs` bounds
   * a wait): the time it said, which a store keeps even where this pacer's limiter, at
   * `maxKeys` blocks, did not.
   */
  private readonly blocked = new Map<string, number>();

  constructor(
    readonly options: ResolvedPacerOptions,
    /** The permit source; the in-memory limiter's (`LocalPermits`) by default. */
    makePermits: (core: SchedulerCore) => Permits = (core) => new LocalPermits(core),
  ) {
    const { limits, maxKeys, clock } = options;
    this.clock = new MonotonicClock(clock);
    this.limiter = createPacerLimiter({ limits, maxKeys, clock: this });
    this.waiting = new WaitingTasks(
      (key, cost, now) => this.waitAt(key, cost, now),
      () => this.now(),
      (task, error) => this.settle(task, false, error),
    );
    // A key whose block the limiter dropped for `maxKeys` is due sooner: re-timed here, it is
    // armed for by the flush that follows the block that dropped it.
    this.limiter.feedback.onBlockDropped = (key) => this.waiting.retimeKey(key);
    if (options.mode === 'queue' && options.maxWaitMs !== Number.POSITIVE_INFINITY) {
      // Judged at the next flush, not here: a block may come in the middle of a store's answer.
      this.limiter.feedback.onBlocked = (key, until) => {
        const known = this.blocked.get(key);
        if (known === undefined || until > known) this.blocked.set(key, until);
      };
    }
    this.permits = makePermits(this);
    // The in-memory permits settle every task's permits at its end (`LocalPermits.settled`).
    this.limiter.answered = this.permits instanceof LocalPermits;
    this.running = new RunningTasks(this);
    this.timer = new Timer(clock, (at) => {
      this.timerAt = at;
      try {
        this.flush();
      } finally {
        this.timerAt = Number.NaN;
      }
    });
    this.store = new Snapshots(() => ({
      queued: this.waiting.size,
      inFlight: this.running.count,
      admitted: this.admitted,
      denied: this.denied,
      blockedKeys: this.limiter.feedback.blockedKeys(),
      paused: this.paused,
      disposed: this.disposed,
    }));
  }

  /**
   * The pacer's time base: its clock, clamped (`MonotonicClock`): never backwards, and a reading
   * of NaN or ±Infinity is ignored (the last good time stands), so no wait can be computed from
   * it. While a head's due time is computed, the time it is computed at (see `waitAt`).
   */
  now(): number {
    return this.pinned ?? this.clock.now();
  }

  schedule<T>(run: () => T | PromiseLike<T>, options?: ScheduleOptions): Promise<T> {
    if (typeof run !== 'function') {
      throw new TypeError('[fetch-pacer] Expected the task to be a function');
    }
    const task = resolveTaskOptions(options);
    if (this.disposed) return Promise.reject(new PacerDisposedError());
    if (task.signal?.aborted) return Promise.reject(task.signal.reason);
    if (this.flushing) return this.permits.admit(run, task);
    // Start whatever is due first (a real timer may be late), so the checks below see the
    // queue as it is: a task judged to start now must not find its slot taken.
    this.permits.pump();
    return this.permits.startNow(run, task) ?? this.permits.admit(run, task);
  }

  /** The fast path's start: the permit is taken, the task runs now with no queue entry. */
  runNow<T>(run: () => T | PromiseLike<T>, options: TaskOptions): Promise<T> {
    this.admitted++;
    return this.running.runNow(run, options.key, options.units ?? options.cost, options.onProgress);
  }

  /** Puts a checked task in its line: listening to its signal and, if asked, reporting. */
  enqueue<T>(
    run: () => T | PromiseLike<T>,
    options: TaskOptions,
  ): { readonly task: Task; readonly promise: Promise<T> } {
    const created = createTask(run, options, this.order++);
    const { task } = created;
    const { maxWaitMs } = this.options;
    if (maxWaitMs !== Number.POSITIVE_INFINITY) task.startBy = this.now() + maxWaitMs;
    const { signal } = options;
    // One listener per signal, however many tasks share it (see abort.ts).
    if (signal !== undefined) task.onAbort = onAbort(signal, () => this.abort(task));
    if (task.onProgress !== undefined) this.progress.track(task);
    this.waiting.add(task, options.front);
    return created;
  }

  tryAcquire(key: string = DEFAULT_KEY, cost = 1): Decision {
    if (this.disposed) throw new PacerDisposedError();
    assertKey(key);
    assertPositiveInteger('cost', cost);
    const decision = this.permits.tryAcquire(key, cost);
    this.count(decision.allowed ? 1 : 0, decision.allowed ? 0 : 1);
    this.flush();
    return decision;
  }

  blockUntil(key: string, until: number): void {
    assertKey(key);
    this.limiter.feedback.blockUntil(key, until);
    // A disposed pacer's store link is closed: a response that arrives after `dispose()` (a task
    // in flight) is no error, and the store is not asked again.
    if (this.disposed) return;
    this.permits.blockUntil(key, until);
    this.retime(key);
  }

  observe(key: string, signal: ServerSignal): void {
    assertKey(key);
    this.limiter.feedback.observe(key, signal);
    if (this.disposed) return;
    this.permits.observe(key, signal);
    this.retime(key);
  }

  adjust(key: string, delta: UnitCosts, reserved?: ReserveTimes): void {
    if (this.disposed) throw new PacerDisposedError();
    assertKey(key);
    if (reserved !== undefined) {
      assertFiniteNumber('reserved.startedAt', reserved?.startedAt);
      const { answeredAt } = reserved;
      if (answeredAt !== undefined) assertFiniteNumber('reserved.answeredAt', answeredAt);
    }
    this.permits.adjust(key, delta, reserved);
    this.retime(key);
  }

  pause(): void {
    this.paused = true;
    this.flush();
  }

  resume(): void {
    this.paused = false;
    this.flush();
  }

  onIdle(): Promise<void> {
    if (this.waiting.size === 0 && this.running.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const task of this.waiting.drain()) this.settle(task, false, new PacerDisposedError());
    this.flush();
    this.permits.dispose();
  }

  subscribe(listener: () => void): () => void {
    return this.store.subscribe(listener);
  }

  getSnapshot(): PacerSnapshot {
    return this.store.current();
  }

  inspect(key: string = DEFAULT_KEY): KeyInspection {
    assertKey(key);
    return this.permits.inspect(key);
  }

  count(admitted: number, denied: number): void {
    this.admitted += admitted;
    this.denied += denied;
  }

  deny(error: RateLimitError): Promise<never> {
    this.denied++;
    this.flush();
    return Promise.reject(error);
  }

  private abort(task: Task): void {
    if (task.state !== 'queued') return;
    this.waiting.remove(task);
    this.settle(task, false, task.signal?.reason);
    this.flush();
  }

  settle(task: Task, ok: boolean, value: unknown): void {
    settle(task, ok, value);
  }

  taskEnded(): void {
    this.flush();
  }

  taskStarted(): void {
    this.store.publish();
  }

  taskSettled(key: string, cost: Cost): void {
    this.permits.settled?.(key, cost);
  }

  hearsSettled(): boolean {
    return this.permits.settled !== undefined && this.permits.settles !== false;
  }

  hasSlot(): boolean {
    return this.freeSlots() > 0;
  }

  freeSlots(): number {
    return this.options.concurrency - this.running.count - this.permits.pending;
  }

  start(task: Task): void {
    this.running.start(task);
  }

  /** After the server's word: re-time the key's waiting tasks. */
  retime(key: string): void {
    this.waiting.retimeKey(key);
    this.flush();
  }

  /** The end of every event: start what is due, re-arm the one timer, publish, wake onIdle. */
  flush(): void {
    // A task started here may schedule, abort or pause synchronously: that work joins this
    // flush instead of nesting one.
    if (this.flushing) {
      this.again = true;
      return;
    }
    this.flushing = true;
    // The time this flush is judged at: a report read on a later reading would see the head
    // overdue by a few µs that the pump, reading earlier, did not (issue 15).
    const at = this.progress.active ? this.now() : undefined;
    try {
      if (this.blocked.size > 0) this.rejectPastBlocks();
      do {
        this.again = false;
        this.permits.pump();
      } while (this.again);
      this.arm();
    } finally {
      this.flushing = false;
    }
    if (this.progress.active) this.reportProgress(at ?? this.now());
    this.store.publish();
    if (this.waiting.size === 0 && this.running.count === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  /**
   * `maxWaitMs` holds for a task already waiting, too: a server block that came after it was
   * queued and ends past the latest start it was allowed rejects it now, as `schedule` would have
   * (`RateLimitError` with the block's wait), not when the block ends (a `Retry-After` of an hour
   * held tasks that asked to wait 10 s at most for that hour). Within its bound it waits.
   */
  private rejectPastBlocks(): void {
    const { maxWaitMs } = this.options;
    for (const [key, told] of this.blocked) {
      const kept = this.limiter.feedback.blockedUntil(key) ?? 0;
      const until = kept > told ? kept : told;
      for (const task of [...(this.waiting.line(key) ?? [])]) {
        if (task.startBy >= until) continue;
        const decision = this.limiter.peek(key, task.units ?? task.cost);
        this.waiting.remove(task);
        this.denied++;
        this.settle(task, false, new RateLimitError(decision, { key, maxWaitMs }));
      }
    }
    this.blocked.clear();
  }

  /**
   * The wait of a head judged at `now` alone: the limiter and the permit source read that same
   * time, so the due time `now + wait` is where the permits are, not off by the µs between two
   * readings (which moved every projection behind the head, issue 15).
   */
  private waitAt(key: string, cost: Cost, now: number): number {
    this.pinned = now;
    try {
      return this.permits.waitOf(key, cost);
    } finally {
      this.pinned = undefined;
    }
  }

  private reportProgress(at: number): void {
    this.progress.refresh(
      (key) => this.waiting.waitingKey(key),
      (key) => ({
        blockedUntil: this.limiter.feedback.blockedUntil(key),
        ratePerMs: this.limiter.policyOf(key).ratePerMs,
        rejectMode: this.options.mode === 'reject',
        awaitingAnswers: this.limiter.peek(key, 1).reason === 'in-flight',
        units: this.unitStarts(key, at),
      }),
      at,
    );
  }

  /** `KeyState.units` of `key` at `at`: its projected starts, if it counts several units. */
  private unitStarts(key: string, at: number): UnitStarts | 'unknown' | undefined {
    const units = unitsOf(this.limiter, key);
    if (units === undefined) return undefined;
    const { permits } = this;
    if (permits.projectUnits === undefined) return 'unknown';
    // One inspection for every task of this refresh: capacities and rates do not change in it.
    return {
      main: Object.keys(units)[0] as string,
      startAt: (ahead, own) =>
        at + (permits.projectUnits?.(key, ahead, own, units).retryAfterMs ?? 0),
    };
  }

  private arm(): void {
    if (this.disposed || this.paused) {
      this.timer.clear();
      return;
    }
    // With every slot taken nothing can start on a timer: the next settle pumps instead.
    const none = Number.POSITIVE_INFINITY;
    const due = this.hasSlot() ? (this.waiting.earliest()?.due ?? none) : none;
    const at = Math.min(due, this.limiter.feedback.nextBlockEnd());
    if (at === none) {
      this.timer.clear();
      return;
    }
    // Waiting tasks are work that should keep a Node process alive; a block expiry is not.
    this.timer.set(at, at - this.now(), this.waiting.size > 0);
  }
}
