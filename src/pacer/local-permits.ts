import type { Decision } from '../core/decision.js';
import { adjustUnits } from '../core/unit-limits.js';
import type { ServerSignal } from '../core/signal.js';
import type { Cost, ReserveTimes, UnitCosts, UnitInspection } from '../core/units.js';
import { QueueFullError, RateLimitError } from './errors.js';
import { type Permits, type SchedulerCore, settleAtEnd } from './permits.js';
import { denyBehind, inspectKey, project, projectUnits } from './projection.js';
import type { Task, TaskOptions } from './task.js';
import type { KeyInspection } from './types.js';

/**
 * Permits from the pacer's own in-memory limiter, the default: it answers synchronously, so a
 * task nothing waits ahead of takes its permit inside `schedule()` (the fast path), and a due
 * task is decided the moment the loop reaches it.
 */
export class LocalPermits implements Permits {
  readonly pending = 0;

  get settles(): boolean {
    return this.core.limiter.settles;
  }

  constructor(private readonly core: SchedulerCore) {}

  /**
   * ms until `cost` permits of `key` exist, to the µs; in reject mode 0 (a task waits only for
   * a slot; its rate is decided when its turn comes). A Decision's `retryAfterMs` is whole ms
   * (rounded up), so a timer set to it would start each task up to 1 ms after its permit, and
   * that lateness is what pacing accuracy measures. Where the key's level and rate (or its
   * block) tell the moment within that last ms, the head is due then. Only a refinement: a
   * moment outside the last whole ms is not trusted (a window algorithm's level is no token
   * count, and with several policies another one may bind), and the whole ms stands.
   */
  waitOf(key: string, cost: Cost): number {
    const { limiter, options } = this.core;
    if (options.mode === 'reject') return 0;
    const decision = limiter.peek(key, cost);
    const whole = decision.retryAfterMs;
    if (decision.allowed || whole === 0) return 0;
    let exact: number;
    // Amounts per unit: the binding unit is not known here, so the whole ms stands.
    if (typeof cost === 'object') return whole;
    if (decision.reason === 'rate') {
      exact = (cost - limiter.level(key)) / limiter.policyOf(key).ratePerMs;
    } else if (decision.reason === 'blocked') {
      exact = (limiter.feedback.blockedUntil(key) ?? Number.NaN) - this.core.now();
    } else {
      return whole;
    }
    if (!(exact > whole - 1 && exact <= whole)) return whole;
    // Up to the next µs: a float a hair short of the permit would wake the pacer too early.
    return Math.ceil(exact * 1_000 - 1e-6) / 1_000;
  }

  /**
   * No task of its key waits, a slot is free (so, the queue just pumped, no task of another key
   * is due and waiting for one), not paused: if its permit exists it runs now, with no queue
   * entry, no task object and no abort listener, what `admit` would end up doing at a fraction
   * of the cost.
   */
  startNow<T>(run: () => T | PromiseLike<T>, options: TaskOptions): Promise<T> | undefined {
    const { core } = this;
    if (core.paused || !core.hasSlot() || core.waiting.line(options.key) !== undefined) {
      return undefined;
    }
    let denied: Decision | undefined;
    try {
      denied = core.limiter.tryTake(options.key, options.units ?? options.cost);
    } catch {
      return undefined; // a cost beyond capacity: `admit` rejects it with the core's error
    }
    return denied === undefined ? core.runNow(run, options) : undefined;
  }

  admit<T>(run: () => T | PromiseLike<T>, options: TaskOptions): Promise<T> {
    const { core } = this;
    const { limiter } = core;
    const { mode, maxQueue, maxWaitMs } = core.options;
    const { key, cost, priority, front } = options;
    try {
      const decision = limiter.peek(key, options.units ?? cost);
      if (mode === 'reject' && !decision.allowed) {
        return core.deny(new RateLimitError(decision, { key }));
      }
      const line = core.waiting.line(key);
      const leads = line === undefined || line.wouldLead(priority, front);
      const startsNow = leads && decision.allowed && !core.paused && core.hasSlot();
      if (!startsNow && core.waiting.size >= maxQueue) {
        core.flush();
        return Promise.reject(new QueueFullError(maxQueue, { key }));
      }
      if (!startsNow && mode === 'queue' && maxWaitMs !== Number.POSITIVE_INFINITY) {
        const { units } = options;
        const projected =
          units === undefined
            ? project(
                limiter,
                limiter.policyOf(key),
                key,
                (line?.costAhead(priority, front) ?? 0) + cost,
              )
            : projectUnits(limiter, key, line?.unitsAhead(priority, front) ?? {}, units);
        // Behind a slow start the wait is for answers, like a wait for a slot: not judged.
        if (projected.retryAfterMs > maxWaitMs && projected.reason !== 'in-flight') {
          return core.deny(new RateLimitError(projected, { key, maxWaitMs }));
        }
      }
    } catch (error) {
      // The core's RangeError for a cost beyond capacity, or a bad policy from a resolver.
      core.flush();
      return Promise.reject(error);
    }
    const { promise } = core.enqueue(run, options);
    core.flush();
    return promise;
  }

  tryAcquire(key: string, cost: number): Decision {
    const { limiter, waiting } = this.core;
    const line = waiting.line(key);
    if (line === undefined) {
      const decision = limiter.tryAcquire(key, cost);
      // No task to end: a permit taken by hand is answered when it is taken.
      if (decision.allowed && limiter.settles) limiter.settle(key, cost);
      return decision;
    }
    limiter.peek(key, cost); // throws, like the core, for a cost beyond capacity
    // Never ahead of the line: denied, with the wait behind every task of the key.
    return denyBehind(limiter, limiter.policyOf(key), key, line.totalCost + cost);
  }

  /** Starts every task that is due, earliest key first, while slots are free. */
  pump(): void {
    const { core } = this;
    const { waiting, limiter } = core;
    while (!core.paused && !core.disposed && core.hasSlot()) {
      const key = waiting.earliest();
      if (key === undefined) return;
      const now = core.now();
      if (key.due > now) return;
      const task = key.line.head as Task;
      // The timer fired late (a hidden page wakes once a second): a spacing policy catches up.
      // (Lateness behind busy slots is no reason to: the timer is not armed then.)
      const late = now - core.timerAt;
      if (late > 0 && key.due <= core.timerAt && limiter.settles) {
        limiter.catchUp(key.key, late);
      }
      const cost = task.units ?? task.cost;
      let decision: Decision | undefined;
      try {
        // A task that starts costs no Decision; a denied one (rare: it was due) says why and
        // until when.
        decision = limiter.tryTake(key.key, cost);
      } catch (error) {
        waiting.remove(task);
        core.settle(task, false, error);
        continue;
      }
      if (decision === undefined) {
        waiting.remove(task);
        core.count(1, 0);
        core.start(task);
      } else if (core.options.mode === 'reject') {
        waiting.remove(task);
        core.count(0, 1);
        core.settle(task, false, new RateLimitError(decision, { key: task.key }));
      } else {
        // Due, yet denied: another key took the last `maxKeys` room first, or the clock stepped
        // back. Look again when the limiter says; at least 1 ms on, so this loop cannot spin.
        waiting.postpone(key, now + Math.max(1, decision.retryAfterMs));
      }
    }
  }

  /**
   * A task of `key` ended: a policy that counts permits until their answer (`arrival-safe`)
   * counts them from now, and the waiting tasks of the key, due "at the next answer", are
   * re-timed.
   */
  settled(key: string, cost: Cost): void {
    settleAtEnd(this.core, key, cost);
  }

  observe(_key: string, _signal: ServerSignal): void {}

  blockUntil(_key: string, _until: number): void {}

  adjust(key: string, delta: UnitCosts, reserved?: ReserveTimes): void {
    adjustUnits(this.core.limiter, key, delta, reserved);
  }

  projectUnits(
    key: string,
    ahead: Readonly<Record<string, number>>,
    own: UnitCosts,
    units: Readonly<Record<string, UnitInspection>>,
  ): Decision {
    return projectUnits(this.core.limiter, key, ahead, own, units);
  }

  inspect(key: string): KeyInspection {
    const { limiter, waiting } = this.core;
    const line = waiting.line(key);
    const policy = limiter.policyOf(key);
    return inspectKey(limiter, policy, key, this.core.now(), line?.size ?? 0, line?.head);
  }

  dispose(): void {}
}
