import { AIMD, raiseFactor } from './adaptive-rate.js';

/**
 * What a rate taught by a refusal with a wait (`Retry-After` and no policy, learning.ts
 * `refused`) may grow to, and when it grows: AIMD on the result. The sample (the requests
 * admitted before the refusal, over the time until the wait ends) is exact only when the wait
 * is: a whole-second `Retry-After: 1` may mean anything from 1 ms to 1 s, so the rate is learned
 * from the middle of that second, and one learned too slow would stay so, since nothing refuses
 * it (10x generous against a sliding log through 5-60 ms of jitter held 0.68x of the server's
 * rate for good: `measure:arrivals`). So the rate grows while the server admits it and the key
 * sends as fast as it lets:
 *
 * - the **ceiling** is the fastest rate the samples allow (each one's wait at the earliest the
 *   rounding allows), and at most a taught rate the server refused;
 * - every second in which the server admitted nearly the rate's worth of the key's requests
 *   (`KEPT`, by the time they were sent) raises the rate, by `GROWTH` and by more for each such
 *   second in a row, up to `HEADROOM` of the ceiling (and never past the key's own rate);
 * - a refused growth goes back to the last rate kept (see `refused`), and the rate it was
 *   refused at is the ceiling: the same growth is not refused twice;
 * - a ceiling not refused for `RAISE_MS` rises by `AIMD.RAISE`, and by more each `DOUBLE_MS`
 *   after while the server admits the rate (another client sharing the server, a process on the
 *   same API, may have stopped; a long wait may have taught a rate far too slow).
 *
 * A key whose callers send slower than the rate teaches nothing of a faster one, and grows not;
 * nor does one whose server's counts said its window was full (`spent`).
 */
/** What a kept period raises the rate by. */
const GROWTH = 1.05;
/**
 * A ceiling not refused for this long rises by `AIMD.RAISE`. Rarer than AIMD's: a growth refused
 * with a wait costs the whole wait (a second of nothing sent, for a whole-second `Retry-After`),
 * where a bare refusal costs one request.
 */
export const RAISE_MS = 60_000;
/** Of the permits a period of the rate allowed, the share the server must have admitted. */
export const KEPT = 0.9;

export class SampledRate {
  /** The fastest rate (permits per ms) not shown too fast: the slowest refused, or a sample's. */
  private ceilingPerMs = Number.POSITIVE_INFINITY;
  private ceilingAt: number;
  /** Raises of the ceiling in a row since a refusal set it (see `answered`). */
  private raises = 0;
  /** The rate of the last period kept (see `answered`), until the next refusal. */
  private keptPerMs: number | undefined;
  /** When the current period of evidence began (by send time). */
  private since: number;
  /** Admissions of requests sent in the current period. */
  private admitted = 0;
  /** Periods kept in a row (see `answered`). */
  private streak = 0;
  /** Whether a count of the server's said its window was full during the current period. */
  private full = false;
  /** Whether the last refusal's sample set the ceiling (see `scale`). */
  private bySample = false;

  constructor(now: number) {
    this.since = now;
    this.ceilingAt = now;
  }

  /**
   * The server refused a request of the key while it was paced at `ratePerMs` (undefined: no
   * taught rate paced it); the sample's fastest rate is `fastestPerMs` (undefined: the sample
   * was too small to teach one). The key is blocked until `resumesAt`: the next period of
   * evidence starts there. Returns the slowest rate to learn now, if any: the last rate a
   * period kept, when a growth past it was refused (a sample of a key paced at a steady rate
   * is refused when the server's window is just full, and over several windows a slower rate
   * before the growth makes it read slow).
   */
  refused(
    now: number,
    resumesAt: number,
    ratePerMs: number | undefined,
    fastestPerMs?: number,
  ): number | undefined {
    // What the last period kept says: a growth past it was refused (back to it), or it was
    // refused itself since (the server still admitted `KEPT` of it then: just below it).
    const kept = this.keptPerMs;
    const floor =
      kept === undefined || ratePerMs === undefined
        ? undefined
        : kept < ratePerMs
          ? kept
          : ratePerMs * KEPT;
    let ceiling = this.ceilingPerMs;
    if (ratePerMs !== undefined && ratePerMs < ceiling) ceiling = ratePerMs;
    // A sample slower than a rate kept since spans periods of several rates (their average):
    // it bounds nothing.
    if (
      fastestPerMs !== undefined &&
      fastestPerMs < ceiling &&
      !(floor !== undefined && fastestPerMs < floor)
    ) {
      ceiling = fastestPerMs;
    }
    this.bySample = ceiling === fastestPerMs;
    this.ceilingPerMs = ceiling;
    this.ceilingAt = now;
    this.raises = 0;
    this.since = resumesAt;
    this.admitted = 0;
    this.streak = 0;
    this.full = false;
    this.keptPerMs = undefined;
    return floor !== undefined && floor > ceiling ? ceiling : floor;
  }

  /**
   * The last sample was larger by `factor` (`admittedLate`): so is the ceiling, if it set it
   * (one a refused rate set stays).
   */
  scale(factor: number): void {
    if (this.bySample) this.ceilingPerMs *= factor;
  }

  /** A count of the server's said nothing remains (`QuotaSignal.remaining` 0). */
  spent(): void {
    this.full = true;
  }

  /**
   * The server admitted a request sent at `sentAt`, while the key is paced at `ratePerMs` (no
   * faster than `capPerMs`, its own policy's): the rate to grow to, or undefined to keep it.
   */
  answered(now: number, sentAt: number, ratePerMs: number, capPerMs: number): number | undefined {
    if (sentAt < this.since) return undefined;
    // A period of evidence, by the time the requests were sent (their answers come a round trip
    // later, in any order): a second, no shorter than a few permits' time.
    const periodMs = Math.max(AIMD.DOUBLE_MS, 3 / ratePerMs);
    if (sentAt < this.since + periodMs) {
      this.admitted++;
      return undefined;
    }
    // The first answer of a request sent after the period: the period is over. Kept at the rate
    // only if the server admitted nearly all of it: a rate too fast by a little is cut to the
    // server's by the server's own count (a sliding log of 20 per second admits no more than
    // 20 of 24 sent in a second), and says nothing of a faster one.
    const kept = this.admitted >= KEPT * ratePerMs * periodMs;
    const { full } = this;
    this.since = sentAt;
    this.admitted = 1;
    this.full = false;
    if (kept) this.keptPerMs = ratePerMs;
    // A server whose counts said its window was full has no room for a faster rate: the rate
    // fits it (a fixed window of 20 that a rate of 20.4 a second fills to its last permit).
    if (!kept || full) {
      this.streak = 0;
      return undefined;
    }
    // Not refused for RAISE_MS, the ceiling rises, and by more each DOUBLE_MS after while the
    // server admits it (`AIMD.RAISE` to the power of the raises in a row, as `AdaptiveRate`'s):
    // a rate taught far too slow (a 503's `Retry-After: 120` after a hundred admitted read as
    // a hundred per two minutes) rose by a tenth a minute, and 298 calls a server admitted at
    // 100 a second took 275 s after the wait.
    if (now - this.ceilingAt >= (this.raises === 0 ? RAISE_MS : AIMD.DOUBLE_MS)) {
      this.raises++;
      this.ceilingPerMs *= raiseFactor(this.raises);
      this.ceilingAt = now;
    }
    const ceiling = this.ceilingPerMs * AIMD.HEADROOM;
    const target = ceiling < capPerMs ? ceiling : capPerMs;
    // Not worth a new count for less than a hundredth.
    if (!(target > ratePerMs * 1.01)) return undefined;
    // Each kept period in a row grows by more (as CUBIC probes): from 0.6x of the server's rate
    // (the slowest a whole-second wait's middle makes it), 0.9x is four seconds away, not nine.
    this.streak++;
    const grown = ratePerMs * GROWTH ** this.streak;
    return grown < target ? grown : target;
  }
}
