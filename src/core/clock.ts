/**
 * A monotonic source of time in milliseconds (a float). Rate decisions read it once each.
 *
 * Never `Date.now()`: the wall clock jumps when the system time is corrected, and a bucket
 * that sees time run backwards or leap forwards would deny or admit a burst it should not.
 */
export type Ticker = () => number;

/** The default ticker: `performance.now()`, looked up at call time so importing touches nothing. */
export const performanceTicker: Ticker = () => performance.now();
