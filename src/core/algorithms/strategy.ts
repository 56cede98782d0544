import { type Decision, EPSILON } from '../decision.js';

/**
 * One key's counting state under one policy. Every algorithm implements this interface, so the
 * limiter (and later the stores) can hold any of them.
 *
 * Time passed in must not decrease; `RateLimiter` guarantees it by clamping its ticker.
 * A denial never changes the state, and neither do `peek`, `isAtRest` and `restsAt`.
 *
 * Bytes against speed, measured (V8 instruction counts per decision): the classes keep their
 * state in `#private` fields, which minifiers shorten, except SlidingLog, whose allowed path ran
 * 3% more instructions so; their helpers are TypeScript `private` methods, since a `#private`
 * method gives every instance a brand slot, 8 B more for each key's state.
 */
export interface Strategy {
  /** Most permits one request can ever take (a larger cost throws at the limiter). */
  readonly capacity: number;
  /** Decides and, when allowed, takes `cost` permits. */
  tryAcquire(now: number, cost: number): Decision;
  /** What `tryAcquire` would answer now, without taking anything. */
  peek(now: number, cost: number): Decision;
  /**
   * `tryAcquire(now, cost).allowed` without making a Decision: the pacer's path, where a task
   * only starts or waits. Optional: a strategy without it is asked `tryAcquire`.
   */
  take?(now: number, cost: number): boolean;
  /** Permits available at `now` as a float (partly refilled credit included), for gauges. */
  level(now: number): number;
  /** True when the state is identical to a fresh one: dropping it changes no future decision. */
  isAtRest(now: number): boolean;
  /** The ticker time from which the state is at rest if nothing else happens. */
  restsAt(now: number): number;
  /**
   * Lowers the permits available now to at most `remaining` (the server's count). Never raises
   * them past the state's own count: a server that says "100 left" does not make a local limit
   * of 10 any looser (a newer count may replace what an older one lowered, see `ArrivalSafe`).
   * `sentAt`: when the answered request was sent, if known (a slow start reads counts by it,
   * see `SlowStart.lowerRemaining`; `ArrivalSafe` replaces an older count's stand-ins by it).
   * `backAt`: when the server said the permits it counts are back (its reset), if it did:
   * `ArrivalSafe` holds what the count lowered until then, no longer.
   */
  lowerRemaining(now: number, remaining: number, sentAt?: number, backAt?: number): void;
  /**
   * Takes back what the server's last count lowered (`lowerRemaining`): a learned policy models
   * that count from here (a bucket found by its counts, see `countsShowBucket` in learning.ts).
   * Only `ArrivalSafe` keeps what it lowered apart from its own permits.
   */
  withdrawCounts?(): void;
  /**
   * Permits taken within the last `windowMs` (at most the state's own window) and still counted:
   * what a learned policy of that window that replaces this state starts with (`adopt`). Without
   * it, `capacity - level`, which a spacing algorithm's level (when the next may go) overstates.
   */
  inUse?(now: number, windowMs: number): number;
  /**
   * The server counted `remaining` more of its `limit` at the arrival of a request sent at
   * `sentAt` (pacer time, after its take). Only algorithms that count a permit until its answer
   * (`ArrivalSafe`) listen, and only to a count of their own limit: it is room they may take
   * at once (see `ArrivalSafe.heardRoom`).
   */
  heardRoom?(now: number, remaining: number, limit: number, sentAt: number): void;
  /**
   * `cost` permits taken earlier were answered at `now` (their task ended). Only algorithms
   * that count a permit until its answer (`ArrivalSafe`) listen; the others count at the take.
   */
  settle?(now: number, cost: number): void;
  /**
   * The pacer reaches a due request `lateMs` after its due time (a hidden page's timers wake once
   * a second): credit that a spacing algorithm (`ArrivalSafe`) did not let pile up meanwhile is
   * granted now, so the pacer catches up instead of sending one request per wake.
   */
  catchUp?(now: number, lateMs: number): void;
  /**
   * The same permits (taken, in flight, answered) counted over a window of `windowMs` instead:
   * a learned rate that grows (`SampledRate`). Only the learned windows that can grow have it.
   */
  retimed?(windowMs: number): Strategy;
}

/** `strategy.inUse`, or what its level leaves of its capacity. */
export function inUseOf(strategy: Strategy, now: number, windowMs: number): number {
  return (
    strategy.inUse?.(now, windowMs) ?? Math.ceil(strategy.capacity - strategy.level(now) - EPSILON)
  );
}

/** The exact admission test of a strategy at time `at`, with no side effects. */
export interface Admits {
  fits(at: number, cost: number): boolean;
}

/**
 * Turns an estimated wait into the `retryAfterMs` contract: the smallest whole number of ms
 * after which `fits` holds. The estimate comes from float arithmetic and can be a hair off
 * either way, so it is checked against the very predicate `tryAcquire` uses, and nudged.
 */
export function settleRetry(state: Admits, now: number, cost: number, estimateMs: number): number {
  let wait = Math.max(1, Math.ceil(estimateMs - 1e-6));
  for (let step = 0; step < 8 && wait > 1 && state.fits(now + wait - 1, cost); step++) wait--;
  for (let step = 0; step < 8 && !state.fits(now + wait, cost); step++) wait++;
  return wait;
}
