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
 * The default ticker: `performance.now()` of the `performance` there is when a limiter or pacer
 * is made (importing touches nothing). Read once: `globalThis.performance` is an accessor in
 * Node, and looking it up on every decision cost more than the rest of a keyed take.
 */
export function performanceTicker(): Ticker {
  const source = performance;
  return () => source.now();
}

/**
 * `read`, clamped so that time never runs backwards and a bad reading changes nothing: a value
 * below the latest one, `NaN` or ±Infinity (a broken polyfill, a test fake, a clock after a
 * jump) is ignored and the latest good time is returned instead. Before any good reading it is
 * 0. Every time base of the library (a limiter's, a pacer's) is one of these, so no loop that
 * waits for time to pass can meet a time that never does.
 */
export function monotonic(read: Ticker): Ticker {
  let latest = Number.NEGATIVE_INFINITY;
  return () => {
    const t = read();
    if (t > latest && t < Number.POSITIVE_INFINITY) latest = t;
    return latest === Number.NEGATIVE_INFINITY ? 0 : latest;
  };
}
