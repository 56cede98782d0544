import type { Decision } from '../core/decision.js';
import type { PolicySummary, ServerSignal } from '../core/limiter.js';
import type { Cost, ReserveTimes, UnitCosts } from '../core/units.js';
import { QueueFullError, RateLimitError } from './errors.js';
import { type Permits, type SchedulerCore, settleAtEnd } from './permits.js';
import { addUnits } from './line.js';
import { projectFrom, projectRest } from './projection.js';
import { isPromise, MAX_BATCH, StoreLink, sortAnswers } from './store-link.js';
import type { Store, StoreEvent } from './store-contract.js';
import type { Task, TaskOptions, WaitingKey } from './task.js';
import type { KeyInspection } from './types.js';

/**
 * Permits from a store (`defineStore` brings this in): asked for the head tasks of each due key,
 * one call per key at a time, so FIFO holds per key and no task starts before the store granted
 * it. A store that answers with a Promise is awaited; one that answers at once is not.
 *
 * The scheduler's limiter keeps only what must be known synchronously here: the policies
 * (capacity checks, projections) and the server blocks this pacer heard of.
 */
export class StorePermits implements Permits {
  private readonly shared: StoreLink;
  /** Tasks a store call is out for: each holds a concurrency slot until the store answers. */
  private taking = 0;

  constructor(
    private readonly core: SchedulerCore,
    store: Store,
  ) {
    this.shared = new StoreLink(
      store,
      core.options.limits,
      (event) => this.storeChanged(event),
      () => core.now(),
    );
    // The store learns the rate of bare refusals for every client: this limiter learns none.
    core.limiter.sharesRates = store.pacesRefusals === true;
    // The store blocks a key at a server's count of 0 for every client: this limiter does not.
    core.limiter.feedback.storeHearsCounts = store.observe !== undefined;
  }

  get pending(): number {
    return this.taking;
  }

  /** Once a key counts requests in flight (a slow start, see `ownRateAllows`): told of each end. */
  get settles(): boolean {
    return this.core.limiter.settles;
  }

  /** A task ended: a slow start of its key has one fewer in flight, and its line looks again. */
  settled(key: string, cost: Cost): void {
    settleAtEnd(this.core, key, cost);
  }

  /** The store's answer times a key: until it is asked, only a known block waits. */
  waitOf(key: string): number {
    return this.core.options.mode === 'queue' ? this.blockWait(key) : 0;
  }

  /** ms until the server block on `key` that this pacer knows of ends; 0 when none. */
  private blockWait(key: string): number {
    const until = this.core.limiter.feedback.blockedUntil(key);
    return until === undefined ? 0 : until - this.core.now();
  }

  /** No fast path: only the store grants permits, and it is asked in `pump`. */
  startNow(): undefined {
    return undefined;
  }

  admit<T>(run: () => T | PromiseLike<T>, options: TaskOptions): Promise<T> {
    const { mode, maxQueue, maxWaitMs } = this.core.options;
    const { key, cost, priority, front } = options;
    let info: PolicySummary;
    let ahead = 0;
    let unitsAhead: Record<string, number> | undefined;
    try {
      // Throws, like the core, for a cost beyond capacity (in any unit) or a unit the key does
      // not count; denies during a known server block.
      const known = this.core.limiter.peek(key, options.units ?? cost);
      this.shared.prepare(key);
      if (mode === 'reject' && known.reason === 'blocked') {
        return this.core.deny(new RateLimitError(known, { key }));
      }
      info = this.core.limiter.policyOf(key);
      const line = this.core.waiting.line(key);
      // Asked for at once: the nearest thing to "starts now" when only the store knows.
      const asksNow =
        (line === undefined || line.wouldLead(priority, front)) &&
        !this.core.paused &&
        this.core.hasSlot();
      if (!asksNow && this.core.waiting.size >= maxQueue) {
        this.core.flush();
        return Promise.reject(new QueueFullError(maxQueue, { key }));
      }
      // Permits a call already out is asking for are in the store before the peek below.
      const waiting = this.core.waiting.waitingKey(key);
      ahead = Math.max(0, (line?.costAhead(priority, front) ?? 0) - (waiting?.claimed ?? 0));
      if (options.units !== undefined) {
        unitsAhead = line?.unitsAhead(priority, front) ?? {};
        if (waiting?.claimedUnits !== undefined) addUnits(unitsAhead, waiting.claimedUnits, -1);
        addUnits(unitsAhead, options.units, 1);
      }
    } catch (error) {
      this.core.flush();
      return Promise.reject(error);
    }
    const { task, promise } = this.core.enqueue(run, options);
    if (mode === 'queue' && maxWaitMs !== Number.POSITIVE_INFINITY) {
      this.rejectIfTooLong(task, info, ahead + cost, unitsAhead);
    }
    this.core.flush();
    return promise;
  }

  tryAcquire(key: string, cost: number): Decision {
    this.core.limiter.peek(key, cost); // throws, like the core, for a cost beyond capacity
    const info = this.core.limiter.policyOf(key);
    const line = this.core.waiting.line(key);
    return this.shared.tryNow(key, cost, line?.totalCost, info, this.core.now());
  }

  blockUntil(key: string, until: number): void {
    const ms = until - this.core.now();
    if (ms > 0) this.shared.block(key, ms);
  }

  observe(key: string, signal: ServerSignal): void {
    // A store's times are relative (see `Store`): the pacer's clock never reaches it.
    const { sentAt } = signal as { readonly sentAt?: number };
    const relative =
      sentAt === undefined
        ? signal
        : ({ ...signal, sentAt: sentAt - this.core.now() } as ServerSignal);
    this.shared.observe(key, relative);
  }

  /**
   * Whether this pacer may ask the store for the head task of `waiting` now, for a key its
   * limiter measured something of (`gatedBy`; the scheduler tells it every signal): a rate
   * learned by AIMD, or a slow start (requests in flight). Each pacer measures them from its own requests,
   * so the store cannot, and several pacers on one store each find their share, as TCP flows
   * do. Then one task at a time, asked for only when the limiter allows it (its pauses and
   * probes, its window), which counts it once the store grants; reject mode rejects the task
   * it denies. A pacer that measured nothing asks as it is.
   */
  private ownRateAllows(waiting: WaitingKey): boolean {
    const head = waiting.line.head;
    if (head === undefined) return true;
    // Only a peek: the permit is taken when the store grants (see `answered`).
    const own = this.core.limiter.peek(waiting.key, head.units ?? head.cost);
    if (own.allowed) return true;
    if (this.core.options.mode === 'reject') {
      this.core.waiting.remove(head);
      this.core.count(0, 1);
      this.core.settle(head, false, new RateLimitError(own, { key: waiting.key }));
    } else {
      this.core.waiting.postpone(waiting, this.core.now() + Math.max(1, own.retryAfterMs));
    }
    return false;
  }

  adjust(key: string, delta: UnitCosts, reserved?: ReserveTimes): void {
    // A store counts a permit at its take: its reserve was charged at the start (relative, as
    // every time a store is told).
    const ago =
      reserved === undefined ? undefined : Math.min(0, reserved.startedAt - this.core.now());
    this.shared.adjust(key, delta, ago);
  }

  dispose(): void {
    this.shared.close();
  }

  inspect(key: string): KeyInspection {
    const info = this.core.limiter.policyOf(key);
    const at = this.core.now();
    const waiting = this.core.waiting.waitingKey(key);
    const inspection = {
      at,
      level: this.shared.level(key, at, info),
      capacity: info.capacity,
      limit: info.limit,
      queued: waiting?.line.size ?? 0,
      blockedUntil: this.core.limiter.feedback.blockedUntil(key),
      ...(info.learned === undefined ? {} : { learned: info.learned }),
    };
    if (waiting === undefined || waiting.line.head === undefined) return Object.freeze(inspection);
    // Being asked now, or due when the store said (never in the past).
    const nextStartAt = waiting.taking ? at : Math.max(at, waiting.due);
    return Object.freeze({ ...inspection, nextStartAt });
  }

  /** Asks the store for the head tasks of every due key (one call per key), while slots last. */
  pump(): void {
    const stopAtDenial = this.core.options.mode === 'queue';
    while (!this.core.paused && !this.core.disposed) {
      const free = this.core.freeSlots();
      if (!(free > 0)) return;
      const waiting = this.core.waiting.earliest();
      if (waiting === undefined) return;
      if (waiting.due > this.core.now()) return;
      const blocked = this.core.limiter.feedback.blockedUntil(waiting.key);
      if (blocked !== undefined) {
        // A block this pacer knows of needs no store call: wait it out, or reject at once.
        if (stopAtDenial) this.core.waiting.postpone(waiting, blocked);
        else this.rejectBlocked(waiting);
        continue;
      }
      const gated = gatedBy(this.core.limiter.policyOf(waiting.key).learned?.source);
      if (gated && !this.ownRateAllows(waiting)) continue;
      const batch = this.setAside(waiting, gated ? 1 : Math.min(free, MAX_BATCH));
      this.taking += batch.length;
      const costs = batch.map((task) => this.shared.costOf(task.key, task.units ?? task.cost));
      const answers = this.shared.ask(waiting.key, costs, stopAtDenial);
      if (isPromise(answers)) {
        answers.then(
          (decisions) => this.answered(waiting, batch, decisions, gated),
          (error: unknown) => this.failed(waiting, batch, error),
        );
      } else {
        this.answered(waiting, batch, answers, gated);
      }
    }
  }

  /**
   * Sets the key aside while the store decides up to `max` of its head tasks (returned in line
   * order): out of the timer's reach (due never) and not re-timed until `release`.
   */
  private setAside(waiting: WaitingKey, max: number): Task[] {
    waiting.taking = true;
    waiting.changedMeanwhile = false;
    this.core.waiting.postpone(waiting, Number.POSITIVE_INFINITY);
    const tasks: Task[] = [];
    let claimed = 0;
    let claimedUnits: Record<string, number> | undefined;
    for (const task of waiting.line) {
      tasks.push(task);
      claimed += task.cost;
      if (task.units !== undefined) {
        claimedUnits ??= Object.create(null) as Record<string, number>;
        addUnits(claimedUnits, task.units, 1);
      }
      if (tasks.length >= max) break;
    }
    waiting.claimed = claimed;
    waiting.claimedUnits = claimedUnits;
    return tasks;
  }

  /** The store answered: the key is due at `due` again, or forgotten if its line is empty. */
  private release(waiting: WaitingKey, due: number): void {
    waiting.taking = false;
    waiting.claimed = 0;
    waiting.claimedUnits = undefined;
    // Disposed meanwhile: the key is no longer this pacer's to time.
    if (this.core.waiting.waitingKey(waiting.key) !== waiting) return;
    const head = waiting.line.head;
    if (head === undefined) {
      this.core.waiting.retimeKey(waiting.key); // forgets it
      return;
    }
    waiting.order = head.order;
    this.core.waiting.postpone(waiting, due);
  }

  /** Reject mode, with the key blocked: every waiting task of it is denied, as `schedule` would. */
  private rejectBlocked(waiting: WaitingKey): void {
    for (const task of [...waiting.line]) {
      const decision = this.core.limiter.peek(task.key, task.units ?? task.cost);
      this.core.waiting.remove(task);
      this.core.count(0, 1);
      this.core.settle(task, false, new RateLimitError(decision, { key: task.key }));
    }
  }

  /**
   * `maxWaitMs`: the store's peek and the line ahead project the start; the task rejects if it
   * is still waiting then and would wait too long (one round trip after `schedule`). With
   * limits per unit, `units` holds the amounts per unit ahead and its own: the slowest unit
   * decides.
   */
  private rejectIfTooLong(
    task: Task,
    info: PolicySummary,
    total: number,
    units: Readonly<Record<string, number>> | undefined,
  ): void {
    const { maxWaitMs } = this.core.options;
    const perUnit = units === undefined ? undefined : this.shared.unitsFit(task.key, units);
    const decide = (first: Decision) => {
      if (task.state !== 'queued' || this.core.disposed) return;
      const projected =
        perUnit === undefined
          ? projectFrom(first, info, total)
          : projectRest(first, perUnit.restMs);
      if (projected.retryAfterMs <= maxWaitMs) return;
      this.core.waiting.remove(task);
      this.core.count(0, 1);
      this.core.settle(task, false, new RateLimitError(projected, { key: task.key, maxWaitMs }));
      this.core.flush();
    };
    const answer = this.shared.peek(task.key, perUnit?.fits ?? Math.min(total, info.capacity));
    // A failed peek leaves the task to its take, which reports the store's failure.
    if (isPromise(answer)) answer.then(decide, () => {});
    else decide(answer);
  }

  /**
   * The store decided `batch`: start the granted, reject (reject mode) or re-time the denied. A
   * task asked for under what this pacer learned (`gated`, see `ownRateAllows`) takes its permit
   * of that now, only from that: the store counts the key's policy. (Taken before the ask and
   * given back at a denial, a slow start's request that went alone past the server's count, and
   * was then denied by the store, held every later one for a second waiting for its answer; the
   * policy, taken here too, paced the asks a second time, out of step with the store's grants:
   * three processes on one store, the two in a slow start got nothing for 2-4 s.)
   */
  private answered(
    waiting: WaitingKey,
    batch: readonly Task[],
    answers: readonly Decision[],
    gated: boolean,
  ): void {
    // Disposed meanwhile: every task was rejected then, and a grant goes unused.
    if (this.core.disposed) {
      this.taking -= batch.length;
      return;
    }
    const { key } = waiting;
    const now = this.core.now();
    const last = answers[answers.length - 1];
    if (last !== undefined) this.shared.record(key, last, now, this.core.limiter.policyOf(key));
    const held = this.core.paused || this.core.limiter.feedback.blockedUntil(key) !== undefined;
    const sorted = sortAnswers(batch, answers, this.core.options.mode === 'reject', held);
    if (sorted.blockedMs > 0) this.core.limiter.feedback.blockUntil(key, now + sorted.blockedMs);
    for (const [task, decision] of sorted.rejects) {
      this.core.waiting.remove(task);
      this.core.count(0, 1);
      this.core.settle(task, false, new RateLimitError(decision, { key }));
    }
    for (const task of sorted.starts) {
      this.core.waiting.remove(task);
      if (gated) this.core.limiter.feedback.takeLearned(key, task.units ?? task.cost);
    }
    let due = now;
    const { waitFor } = sorted;
    if (waitFor !== undefined && waiting.line.head === waitFor && !waiting.changedMeanwhile) {
      due = now + Math.max(1, sorted.retryAfterMs);
    }
    // Queue mode waits out a block; reject mode looks again now, to reject the rest at once.
    const blockEnd = this.core.options.mode === 'queue' ? now + this.blockWait(key) : now;
    this.release(waiting, Math.max(due, blockEnd));
    this.core.count(sorted.starts.length, 0);
    // The slots of the tasks that start stay taken until each one has: one that is over when
    // it returns flushes, and that flush must not hand the next task's slot to another call.
    this.taking -= batch.length - sorted.starts.length;
    for (const task of sorted.starts) {
      this.taking--;
      this.core.start(task);
    }
    this.core.flush();
  }

  /** The store failed for good (it retries on its own first): the batch rejects with its error. */
  private failed(waiting: WaitingKey, batch: readonly Task[], error: unknown): void {
    this.taking -= batch.length;
    if (this.core.disposed) return;
    for (const task of batch) {
      if (task.state !== 'queued') continue;
      this.core.waiting.remove(task);
      this.core.settle(task, false, error);
    }
    this.release(waiting, this.core.now());
    this.core.flush();
  }

  /** News from the store: a block made elsewhere, or credit that changed (ask again now). */
  private storeChanged(event: StoreEvent): void {
    if (this.core.disposed || typeof event?.key !== 'string') return;
    const { key, blockedMs } = event;
    if (typeof blockedMs === 'number' && blockedMs > 0) {
      this.core.limiter.feedback.blockUntil(key, this.core.now() + blockedMs);
      this.core.retime(key);
      return;
    }
    const waiting = this.core.waiting.waitingKey(key);
    if (waiting === undefined) return;
    if (waiting.taking) waiting.changedMeanwhile = true;
    else this.core.waiting.retimeKey(key);
    this.core.flush();
  }
}

/** Learned sources that gate a store's asks (see `StorePermits.ownRateAllows`). */
function gatedBy(source: string | undefined): boolean {
  return source === 'rate' || source === 'start';
}
