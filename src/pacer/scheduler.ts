import type { Decision } from '../core/decision.js';
import { RateLimiter, type ServerSignal } from '../core/limiter.js';
import { monotonic, type Ticker } from '../core/clock.js';
import { assertPositiveInteger } from '../core/validate.js';
import { onAbort } from './abort.js';
import { PacerDisposedError, QueueFullError, RateLimitError } from './errors.js';
import type { ResolvedPacerOptions } from './options.js';
import { type KeyState, ProgressReports, reportStarted } from './progress.js';
import { denyBehind, inspectKey, project } from './projection.js';
import { SnapshotStore } from './store.js';
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
 * Schedules tasks against a RateLimiter it owns. Every event (a task queued, settled or aborted,
 * the timer, the server's word, pause) ends in `flush()`: start what is due, re-arm the one
 * timer for the earliest due key, publish the snapshot, wake `onIdle`.
 *
 * With a `store`, `SharedScheduler` (shared-scheduler.ts) takes over where permits come from;
 * this class is the in-memory path and knows nothing of stores.
 */
export class Scheduler {
  protected readonly limiter: RateLimiter;
  protected readonly waiting: WaitingTasks;
  private readonly timer: Timer;
  private readonly store: SnapshotStore;
  protected inFlight = 0;
  protected admitted = 0;
  protected denied = 0;
  protected paused = false;
  protected disposed = false;
  protected order = 0;
  /**
   * The pacer's time base: its clock, clamped (`monotonic`): never backwards, and a reading of
   * NaN or ±Infinity is ignored (the last good time stands), so no wait can be computed from it.
   */
  readonly now: Ticker;
  protected flushing = false;
  private again = false;
  private idleWaiters: (() => void)[] = [];
  /** Tasks with an `onProgress` listener, told where they stand after each flush. */
  protected readonly progress = new ProgressReports();

  constructor(protected readonly options: ResolvedPacerOptions) {
    const { limits, maxKeys, clock, mode } = options;
    this.now = monotonic(() => clock.now());
    this.limiter = new RateLimiter({ policy: limits, maxKeys, clock: this.now });
    this.waiting = new WaitingTasks(
      this.waitOf(mode),
      () => this.now(),
      (task, error) => this.settle(task, false, error),
    );
    this.timer = new Timer(clock, () => this.flush());
    this.store = new SnapshotStore(() => ({
      queued: this.waiting.size,
      inFlight: this.inFlight,
      admitted: this.admitted,
      denied: this.denied,
      blockedKeys: this.limiter.blockedKeys(),
      paused: this.paused,
      disposed: this.disposed,
    }));
  }

  /**
   * How long the head of a key waits for its permits (called from the constructor). In reject
   * mode a task waits only for a slot; its rate is decided when its turn comes.
   */
  protected waitOf(mode: ResolvedPacerOptions['mode']): (key: string, cost: number) => number {
    return mode === 'queue' ? (key, cost) => this.permitWait(key, cost) : () => 0;
  }

  /**
   * ms until `cost` permits of `key` exist, to the µs. A Decision's `retryAfterMs` is whole ms
   * (rounded up), so a timer set to it would start each task up to 1 ms after its permit, and
   * that lateness is what pacing accuracy measures. Where the key's level and rate (or its
   * block) tell the moment within that last ms, the head is due then. Only a refinement: a
   * moment outside the last whole ms is not trusted (a window algorithm's level is no token
   * count, and with several policies another one may bind), and the whole ms stands.
   */
  private permitWait(key: string, cost: number): number {
    const decision = this.limiter.peek(key, cost);
    const whole = decision.retryAfterMs;
    if (decision.allowed || whole === 0) return 0;
    let exact: number;
    if (decision.reason === 'rate') {
      exact = (cost - this.limiter.level(key)) / this.limiter.policyOf(key).ratePerMs;
    } else if (decision.reason === 'blocked') {
      exact = (this.limiter.blockedUntil(key) ?? Number.NaN) - this.now();
    } else {
      return whole;
    }
    if (!(exact > whole - 1 && exact <= whole)) return whole;
    // Up to the next µs: a float a hair short of the permit would wake the pacer too early.
    return Math.ceil(exact * 1_000 - 1e-6) / 1_000;
  }

  schedule<T>(run: () => T | PromiseLike<T>, options?: ScheduleOptions): Promise<T> {
    if (typeof run !== 'function') {
      throw new TypeError('[fetch-pacer] Expected the task to be a function');
    }
    const task = resolveTaskOptions(options);
    if (this.disposed) return Promise.reject(new PacerDisposedError());
    if (task.signal?.aborted) return Promise.reject(task.signal.reason);
    if (this.flushing) return this.admit(run, task);
    // Start whatever is due first (a real timer may be late), so the checks below see the
    // queue as it is: a task judged to start now must not find its slot taken.
    this.pump();
    return this.startNow(run, task) ?? this.admit(run, task);
  }

  /**
   * The fast path, for a task nothing can be ahead of: no task of its key waits, a slot is free
   * (so, the queue just pumped, no task of another key is due and waiting for one), not paused.
   * If its permit exists it runs now, with no queue entry, no task object and no abort listener:
   * what `admit` would end up doing, at a fraction of the cost. Otherwise undefined: the task
   * goes through `admit`, which queues it or rejects it.
   */
  protected startNow<T>(
    run: () => T | PromiseLike<T>,
    options: TaskOptions,
  ): Promise<T> | undefined {
    if (this.paused || !this.hasSlot() || this.waiting.line(options.key) !== undefined) {
      return undefined;
    }
    let decision: Decision;
    try {
      decision = this.limiter.tryAcquire(options.key, options.cost);
    } catch {
      return undefined; // a cost beyond capacity: `admit` rejects it with the core's error
    }
    if (!decision.allowed) return undefined;
    this.admitted++;
    this.inFlight++;
    reportStarted(options.onProgress);
    let result: T | PromiseLike<T>;
    let thenable: boolean;
    try {
      result = run();
      // Reading `then` may throw (a getter, a revoked Proxy): the task failed, its slot is free.
      thenable = isThenable(result);
    } catch (error) {
      this.taskEnded();
      return Promise.reject(error);
    }
    if (!thenable) {
      // A synchronous task is over when it returns: its slot is free at once, and one
      // promise (the caller's) is all it costs.
      this.taskEnded();
      return Promise.resolve(result as T);
    }
    this.store.publish();
    return Promise.resolve(result).then(this.taskDone, this.taskFailed);
  }

  /** A task started by `startNow` finished: its slot is free. Bound once, shared by all. */
  private readonly taskDone = <T>(value: T): T => {
    this.taskEnded();
    return value;
  };

  private readonly taskFailed = (error: unknown): never => {
    this.taskEnded();
    throw error;
  };

  private taskEnded(): void {
    this.inFlight--;
    this.flush();
  }

  /** Queues a checked task (or rejects it at once): the in-memory limiter decides. */
  protected admit<T>(run: () => T | PromiseLike<T>, options: TaskOptions): Promise<T> {
    const { mode, maxQueue, maxWaitMs } = this.options;
    const { key, cost, priority, front } = options;
    try {
      const decision = this.limiter.peek(key, cost);
      if (mode === 'reject' && !decision.allowed) {
        return this.deny(new RateLimitError(decision, { key }));
      }
      const line = this.waiting.line(key);
      const leads = line === undefined || line.wouldLead(priority, front);
      const startsNow = leads && decision.allowed && !this.paused && this.hasSlot();
      if (!startsNow && this.waiting.size >= maxQueue) {
        this.flush();
        return Promise.reject(new QueueFullError(maxQueue, { key }));
      }
      if (!startsNow && mode === 'queue' && maxWaitMs !== Number.POSITIVE_INFINITY) {
        const ahead = line?.costAhead(priority, front) ?? 0;
        const projected = project(this.limiter, this.limiter.policyOf(key), key, ahead + cost);
        if (projected.retryAfterMs > maxWaitMs) {
          return this.deny(new RateLimitError(projected, { key, maxWaitMs }));
        }
      }
    } catch (error) {
      // The core's RangeError for a cost beyond capacity, or a bad policy from a resolver.
      this.flush();
      return Promise.reject(error);
    }
    const { promise } = this.enqueue(run, options);
    this.flush();
    return promise;
  }

  /** Puts a checked task in its line: listening to its signal and, if asked, reporting. */
  protected enqueue<T>(
    run: () => T | PromiseLike<T>,
    options: TaskOptions,
  ): { readonly task: Task; readonly promise: Promise<T> } {
    const created = createTask(run, options, this.order++);
    const { task } = created;
    const { signal } = options;
    // One listener per signal, however many tasks share it (see abort.ts).
    if (signal !== undefined) task.onAbort = onAbort(signal, () => this.abort(task));
    if (task.onProgress !== undefined) this.progress.track(task.key);
    this.waiting.add(task, options.front);
    return created;
  }

  tryAcquire(key: string = DEFAULT_KEY, cost = 1): Decision {
    if (this.disposed) throw new PacerDisposedError();
    assertKey(key);
    assertPositiveInteger('cost', cost);
    const line = this.waiting.line(key);
    let decision: Decision;
    if (line === undefined) {
      decision = this.limiter.tryAcquire(key, cost);
    } else {
      this.limiter.peek(key, cost); // throws, like the core, for a cost beyond capacity
      // Never ahead of the line: denied, with the wait behind every task of the key.
      decision = denyBehind(this.limiter, this.limiter.policyOf(key), key, line.totalCost + cost);
    }
    if (decision.allowed) this.admitted++;
    else this.denied++;
    this.flush();
    return decision;
  }

  blockUntil(key: string, until: number): void {
    assertKey(key);
    this.limiter.blockUntil(key, until);
    this.serverSaid(key);
  }

  observe(key: string, signal: ServerSignal): void {
    assertKey(key);
    this.limiter.observe(key, signal);
    this.serverSaid(key);
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
    if (this.waiting.size === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const task of this.waiting.drain()) this.settle(task, false, new PacerDisposedError());
    this.flush();
  }

  subscribe(listener: () => void): () => void {
    return this.store.subscribe(listener);
  }

  getSnapshot(): PacerSnapshot {
    return this.store.current();
  }

  inspect(key: string = DEFAULT_KEY): KeyInspection {
    assertKey(key);
    const line = this.waiting.line(key);
    return inspectKey(
      this.limiter,
      this.limiter.policyOf(key),
      key,
      this.now(),
      line?.size ?? 0,
      line?.head,
    );
  }

  protected deny(error: RateLimitError): Promise<never> {
    this.denied++;
    this.flush();
    return Promise.reject(error);
  }

  protected abort(task: Task): void {
    if (task.state !== 'queued') return;
    this.waiting.remove(task);
    this.settle(task, false, task.signal?.reason);
    this.flush();
  }

  /** Settles a task that has not started or has finished; exactly once, listener removed. */
  protected settle(task: Task, ok: boolean, value: unknown): void {
    if (task.state === 'done') return;
    task.state = 'done';
    this.detach(task);
    if (ok) task.resolve(value);
    else task.reject(value);
  }

  private detach(task: Task): void {
    task.onAbort?.();
    task.onAbort = undefined;
  }

  protected hasSlot(): boolean {
    return this.inFlight < this.options.concurrency;
  }

  /** Starts every task that is due, earliest key first, while slots are free. */
  protected pump(): void {
    while (!this.paused && !this.disposed && this.hasSlot()) {
      const key = this.waiting.earliest();
      if (key === undefined) return;
      const now = this.now();
      if (key.due > now) return;
      const task = key.line.head as Task;
      let decision: Decision;
      try {
        decision = this.limiter.tryAcquire(key.key, task.cost);
      } catch (error) {
        this.waiting.remove(task);
        this.settle(task, false, error);
        continue;
      }
      if (decision.allowed) {
        this.waiting.remove(task);
        this.admitted++;
        this.start(task);
      } else if (this.options.mode === 'reject') {
        this.waiting.remove(task);
        this.denied++;
        this.settle(task, false, new RateLimitError(decision, { key: task.key }));
      } else {
        // Due, yet denied: another key took the last `maxKeys` room first, or the clock stepped
        // back. Look again when the limiter says; at least 1 ms on, so this loop cannot spin.
        this.waiting.postpone(key, now + Math.max(1, decision.retryAfterMs));
      }
    }
  }

  protected start(task: Task): void {
    task.state = 'running';
    // The signal has no say once the task runs (the task never sees it): drop the listener now.
    this.detach(task);
    reportStarted(task.onProgress);
    this.inFlight++;
    let result: unknown;
    let thenable: boolean;
    try {
      result = task.run();
      thenable = isThenable(result); // may throw, as in `startNow`
    } catch (error) {
      this.finish(task, false, error);
      return;
    }
    // As in `startNow`: a synchronous task is over when it returns, and so is its slot.
    if (!thenable) {
      this.finish(task, true, result);
      return;
    }
    Promise.resolve(result).then(
      (value) => this.finish(task, true, value),
      (error: unknown) => this.finish(task, false, error),
    );
  }

  private finish(task: Task, ok: boolean, value: unknown): void {
    this.inFlight--;
    this.settle(task, ok, value);
    this.flush();
  }

  /** After `blockUntil`/`observe`: mirror the key's block and re-time its waiting tasks. */
  protected serverSaid(key: string): void {
    this.waiting.retimeKey(key);
    this.flush();
  }

  /** The end of every event: start what is due, re-arm the one timer, publish, wake onIdle. */
  protected flush(): void {
    // A task started here may schedule, abort or pause synchronously: that work joins this
    // flush instead of nesting one.
    if (this.flushing) {
      this.again = true;
      return;
    }
    this.flushing = true;
    try {
      do {
        this.again = false;
        this.pump();
      } while (this.again);
      this.arm();
    } finally {
      this.flushing = false;
    }
    if (this.progress.active) this.reportProgress();
    this.store.publish();
    if (this.waiting.size === 0 && this.inFlight === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  private reportProgress(): void {
    this.progress.refresh(
      (key) => this.waiting.waitingKey(key),
      (key): KeyState => ({
        now: this.now(),
        blockedUntil: this.limiter.blockedUntil(key),
        ratePerMs: this.limiter.policyOf(key).ratePerMs,
        rejectMode: this.options.mode === 'reject',
      }),
    );
  }

  private arm(): void {
    if (this.disposed || this.paused) {
      this.timer.clear();
      return;
    }
    // With every slot taken nothing can start on a timer: the next settle pumps instead.
    const none = Number.POSITIVE_INFINITY;
    const due = this.hasSlot() ? (this.waiting.earliest()?.due ?? none) : none;
    const at = Math.min(due, this.limiter.nextBlockEnd());
    if (at === none) {
      this.timer.clear();
      return;
    }
    // Waiting tasks are work that should keep a Node process alive; a block expiry is not.
    this.timer.set(at, at - this.now(), this.waiting.size > 0);
  }
}

/** Whether `value` is a promise or promise-like: a task with a `then` is awaited. */
function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<T>).then === 'function'
  );
}
