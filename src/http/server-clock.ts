/**
 * The server's wall clock against ours, learned from the `Date` of its answers, so that absolute
 * times it sends (a Unix-second `X-RateLimit-Reset`, an HTTP-date `Retry-After`) are read against
 * its clock, not a client's that is off.
 *
 * A `Date` is the server's time floored to the second, stamped while the request was with it:
 * between our send and our receipt of the answer. So each answer bounds the offset (server minus
 * ours) to `(date - answeredAt, date + 1 s - sentAt)`, about a second and a round trip wide, and
 * the answers together to their intersection, which narrows to about a round trip as answers land
 * on either side of the server's second ticks (within a second of answers at a few per second).
 *
 * Our clock is left as it is while the bounds hold 0 (a right clock always is), and once they
 * prove it off it is read by their lower bound: never later than the server's, so a reset is
 * read late, never early, by as little as the fastest way back once bounded (a few ms), by up
 * to a second from one answer (its `Date` alone, as a clock far off was read before).
 *
 * Before, a clock up to 2 s off was taken as right and one further off was replaced by the
 * `Date` alone: a clock 500 ms slow read each whole-second Unix reset that much late, and a 10x
 * generous client against a simulated fixed window of 20 per second through 5-60 ms of jitter
 * held its learned window and each count of 0 as much longer, 0.62x of the rate (0.33-0.50x at
 * 0.9-1.9 s slow, 0.46-0.56x at 1.5-1.9 s fast, 0.50x at 5 s off); 0.90-0.94x at every skew
 * now, as with a right clock (sliding logs too, and rate-limiter-flexible's headers).
 *
 * Bounds that stop agreeing (our clock stepped, or another server with another clock answered)
 * start again from two answers in a row that agree with each other and not with them: one alone
 * (a response from a cache, dated when it was first sent) changes nothing. The paced fetch
 * does not read a response with an `Age` for it at all (a cache's). O(1) memory.
 */
export interface ServerClock {
  /**
   * An answer dated `dateMs` (the server's `Date`, whole seconds) to a request sent at
   * `sentEpochMs` and answered at `answeredEpochMs`, both by our wall clock.
   */
  heard(dateMs: number, sentEpochMs: number, answeredEpochMs: number): void;
  /**
   * Our wall clock's `nowEpochMs` as the server's: as it is while the bounds hold 0, else by
   * the lower bound, never later than the server's (a reset is read late, never early).
   */
  now(nowEpochMs: number): number;
}

/** A clock of no answers yet: ours, as it is. */
export function serverClock(): ServerClock {
  let low = Number.NEGATIVE_INFINITY;
  let high = Number.POSITIVE_INFINITY;
  // The bounds of the last answer that disagreed, until the next answer agrees with them.
  let otherLow = Number.NaN;
  let otherHigh = Number.NaN;
  return {
    heard(dateMs, sentEpochMs, answeredEpochMs) {
      const from = dateMs - answeredEpochMs;
      const to = dateMs + 1000 - sentEpochMs;
      // NaN, or a send a second after its answer (our clock stepped back between): says nothing.
      if (!(from < to)) return;
      if (from < high && to > low) {
        if (from > low) low = from;
        if (to < high) high = to;
        otherLow = Number.NaN;
      } else if (from < otherHigh && to > otherLow) {
        low = Math.max(from, otherLow);
        high = Math.min(to, otherHigh);
        otherLow = Number.NaN;
      } else {
        otherLow = from;
        otherHigh = to;
      }
    },
    now: (nowEpochMs) => (low > 0 || high < 0 ? nowEpochMs + low : nowEpochMs),
  };
}
