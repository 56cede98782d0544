/**
 * A monotonic source of time in milliseconds (a float). Rate decisions read it once each.
 *
 * Never `Date.now()`: the wall clock jumps when the system time is corrected, and a bucket
 * that sees time run backwards or leap forwards would deny or admit a burst it should not.
 */
export type Ticker = () => number;

/**
 * Where a limiter or a pacer reads the time: an object with `now()`, monotonic ms (`performance`,
 * a `ManualClock`, `{ now: () => ms }`). A pacer's clock sets timers too (`PacerClock`).
 */
export interface Clock {
  now(): number;
}

/**
 * `source.now()`, clamped so that time never runs backwards and a bad reading changes nothing: a
 * value below the latest one, `NaN` or ±Infinity (a broken polyfill, a test fake, a clock after a
 * jump) is ignored and the latest good time is returned instead. Before any good reading it is
 * 0. Every time base of the library (a limiter's, a pacer's) is one of these, so no loop that
 * waits for time to pass can meet a time that never does.
 *
 * A class and not a closure: a limiter reads it for every decision, and V8 drops optimized code
 * that inlined a closure once that closure's owner is collected (a pacer made after another was
 * dropped started on cold code, issue 11).
 */
export class MonotonicClock implements Clock {
  #latest = Number.NEGATIVE_INFINITY;

  /**
   * @param source where the time is read. The default `performance` is the one there is when the
   * clock is made (importing touches nothing): `globalThis.performance` is an accessor in Node,
   * and looking it up on every decision cost more than the rest of a keyed take.
   */
  constructor(private readonly source: Clock = performance) {}

  now(): number {
    const t = this.source.now();
    if (t > this.#latest && t < Number.POSITIVE_INFINITY) {
      this.#latest = t;
      // The reading itself, not the field: a double read back from a field is boxed anew.
      return t;
    }
    return this.#latest === Number.NEGATIVE_INFINITY ? 0 : this.#latest;
  }
}
