import { type Admits, type Strategy, settleRetry } from './algorithms/strategy.js';
import { allow, type Decision, deny, EPSILON, wholeMs } from './decision.js';

/**
 * AIMD, for a server that refuses without saying its policy (nginx `limit_req`, HAProxy's stick
 * tables), with a ceiling as TCP's BIC and CUBIC keep one:
 *
 * - `STRIKES` within `STRIKE_MS`, or in a row with nothing admitted between: what a key needs
 *   to learn a rate at all. One or two refusals are often network jitter against a policy that
 *   is right (arrivals bunched up on the way; the paced fetch's backoff absorbs them); a policy
 *   that is too fast earns a wall of them, and refusals in a row are no jitter.
 *   The first rate is the sample's (what the server admitted before, over at least `SEED_MS`)
 *   or `SEED_CUT` of the key's own; a sample that came as a burst doubles when the first probe
 *   shows that the server refilled (a bucket, not a spent window: see `reseed`).
 * - After a refusal the key pauses, then sends one request alone, the **probe**, and nothing
 *   more until its answer (or `PROBE_WAIT_MS`, if none comes). A refused probe says the server
 *   has not counted afresh yet (a window that is spent): the rate stays, and the next pause is
 *   `PAUSE_GROWTH` times longer, from one permit interval up to `MAX_PAUSE_MS`, so that finding the end of a
 *   window costs a handful of refusals, not a wall of them (HAProxy counts every refusal, and
 *   keeps refusing a client that keeps sending). A refusal after an admitted probe says the rate
 *   is too fast: what the server admitted over the last `ADMISSIONS_MS` becomes the **ceiling**, and
 *   the rate goes to `HEADROOM` of it (to `CUT` of itself while nothing was measured), at most
 *   once per `HOLD_MS`. After a growth without a refusal, what was admitted is only what was
 *   sent, which lags the growth: the ceiling is at least `CUT` of the rate refused,
 *   provisional (a refusal within `HOLD_MS` cuts it by `RECUT` more).
 * - Between refusals the rate grows with every permit taken while it is what holds the key
 *   back: toward `HEADROOM` of the ceiling (the gap halving every `APPROACH_MS`, never faster
 *   than doubling every `DOUBLE_MS`), and it stays there: a rate that was refused is not tried
 *   again until `RAISE_MS` passed without a refusal, when the ceiling rises by `RAISE` (a server
 *   whose limit grew is found again, at one refusal per `RAISE_MS` at most). Each raise not
 *   refused is followed by a larger one a `DOUBLE_MS` later (`RAISE` to the power of the raises
 *   in a row, as CUBIC probes past its last maximum): a share that was cut while other clients
 *   sent (pacers on one store, processes on one API) grows back once they are done, in seconds
 *   rather than at a tenth per `RAISE_MS`. The first ceiling
 *   is the key's own rate, refused; without one (zero configuration) the rate doubles until
 *   its first cut, or until a spent window's sample gives one.
 * - `FLOOR_MS`: a server that refuses every request brings the rate down to one request per
 *   `FLOOR_MS`, and no lower.
 * - `ADMITTED_MS`: a server that admitted nothing of the key for that long (or never) refuses
 *   everything (a quota spent for the day, a key revoked), and no rate paces it: the rate is
 *   dropped at its next refusal, and not learned, so the callers' own retry budgets end the
 *   calls instead of a probe every pause (up to `MAX_PAUSE_MS`) for each of them in turn.
 *
 * One permit at a time (no burst). Back at the key's own rate, the learned rate is dropped.
 */
export const AIMD = Object.freeze({
  STRIKES: 3,
  STRIKE_MS: 1_000,
  SEED_CUT: 0.5,
  CUT: 0.7,
  DOUBLE_MS: 1_000,
  APPROACH_MS: 500,
  HEADROOM: 0.95,
  RAISE_MS: 10_000,
  RAISE: 1.1,
  MAX_PAUSE_MS: 30_000,
  PROBE_WAIT_MS: 1_000,
  PAUSE_GROWTH: 1.5,
  HOLD_MS: 1_000,
  ADMISSIONS_MS: 1_000,
  FLOOR_MS: 5_000,
  ADMITTED_MS: 60_000,
  /** Shortest time a sample of admitted requests seeds the first rate over (see `refused`). */
  SEED_MS: 1_000,
  /** What a provisional ceiling refused is cut by (see `provisional`). */
  RECUT: 0.9,
});

const FLOOR_PER_MS = 1 / AIMD.FLOOR_MS;

/** Raises in a row that compound no further: `RAISE` to the 1,830th power is 1e75, finite. */
export const MOST_RAISES = 60;

/**
 * What the `raises`-th raise of a ceiling in a row multiplies it by: `RAISE` to that power, as
 * CUBIC probes past its last maximum (`AdaptiveRate`, `SampledRate`; a store's rate computes the
 * product from the time since its cut, `raisedBy` in stores/shared-rate.ts).
 */
export function raiseFactor(raises: number): number {
  return AIMD.RAISE ** Math.min(raises, MOST_RAISES);
}
/**
 * Fewest requests admitted between two refusals for them to teach a rate: one or two over a
 * whole-second wait make an estimate many times too slow, which no refusal would correct.
 */
export const MIN_SAMPLE = 3;
/**
 * Refused probes in a row that say a window was spent. One is not enough: through jitter a probe
 * can reach a bucket together with requests sent before the refusal, which took its refill
 * (nginx then got a ceiling of its burst's rate, half its own, in one run of five).
 */
export const SPENT_STREAK = 2;

/**
 * The learned rate of AIMD: a bucket of one permit refilled at `ratePerMs`, which a refusal
 * cuts or pauses and every permit taken raises (see `AIMD`). Rates only change at a permit or a
 * refusal, so a wait it reports holds unless the server refuses again.
 */
export class AdaptiveRate implements Strategy, Admits {
  readonly capacity = 1;
  private tokens: number;
  private stamp: number;
  /**
   * The rate not to go past: the key's own (refused) at first, then a spent window's sample or
   * what the server admitted when it refused; Infinity without one (zero configuration).
   */
  private ceiling = Number.POSITIVE_INFINITY;
  /** When the rate last grew (growth is per time of sending, see `grow`). */
  private grewAt: number;
  /** When the last refusal that changed anything came: requests sent before it are echoes. */
  private refusedAt: number;
  /** When the ceiling was last set or raised. */
  private ceilingAt: number;
  /** Raises in a row since the ceiling was last set by a refusal or a sample. */
  private raises = 0;
  /** When the rate was last cut: refusals of requests sent within `HOLD_MS` cut nothing more. */
  private cutAt = Number.NEGATIVE_INFINITY;
  /** Refusals in a row with nothing admitted between them: the pause grows with each. */
  private streak = 0;
  /** Whether the server admitted a request sent since the last refusal (the probe). */
  private admitted = false;
  /** When the rate was learned: answers to requests sent before belong to its sample. */
  private readonly learnedAt: number;
  /** Admissions, decayed with a time constant of `ADMISSIONS_MS`: their rate is it / ADMISSIONS_MS. */
  private admissions: number;
  private admissionsAt: number;
  /** When the probe went, while its answer is awaited; -Infinity otherwise. */
  private probeAt = Number.NEGATIVE_INFINITY;
  /** Whether a spent window's sample set the ceiling, or a cut did (which measures better). */
  private sampled = false;
  /**
   * Whether the ceiling is CUT of a rate refused after a growth no refusal measured, above what
   * the server was seen to admit: a large burst absorbed much of the growth (nginx's `burst=15`
   * at 60 per second took the key to 105), and a refusal within HOLD_MS then cuts it by RECUT
   * (or to what was admitted, if more), not held as the echo of the last cut.
   */
  private provisional = false;
  /** Whether the rate is still a burst's read over `SEED_MS`, to double once (see `reseed`). */
  private burstSeed: boolean;

  /**
   * A rate learned at `now`, when the server refused: it starts with a pause of one permit.
   * `sample`: the requests admitted before (`admitted` over `spanMs`) that taught it; answers
   * to requests sent before `now` still count in it when they come. `burst`: they came in less
   * than `SEED_MS` and set the rate, read over `SEED_MS` (see `reseed`). `refusedPerMs`: the fastest
   * rate the key was sending at when refused (its own policy's), the first ceiling; Infinity
   * when unknown (zero configuration).
   */
  constructor(
    public ratePerMs: number,
    now: number,
    private readonly sample: {
      admitted: number;
      readonly spanMs: number;
      readonly burst?: boolean;
    } = {
      admitted: 0,
      spanMs: 0,
    },
    refusedPerMs = Number.POSITIVE_INFINITY,
  ) {
    if (!(this.ratePerMs > FLOOR_PER_MS)) this.ratePerMs = FLOOR_PER_MS;
    this.burstSeed = sample.burst === true;
    this.ceiling = refusedPerMs > 0 ? refusedPerMs : Number.POSITIVE_INFINITY;
    this.stamp = now;
    this.tokens = 0;
    this.grewAt = now;
    this.refusedAt = now;
    this.ceilingAt = now;
    this.learnedAt = now;
    // The sample's rate, if it was one: otherwise nothing heard yet.
    this.admissions =
      this.sample.admitted >= MIN_SAMPLE && this.sample.spanMs > 0
        ? (this.sample.admitted / this.sample.spanMs) * AIMD.ADMISSIONS_MS
        : 0;
    this.admissionsAt = now;
  }

  /** The rate the server admitted requests at, over about the last `ADMISSIONS_MS`. */
  private admittedPerMs(now: number): number {
    const elapsed = now - this.admissionsAt;
    const decayed =
      elapsed > 0 ? this.admissions * Math.exp(-elapsed / AIMD.ADMISSIONS_MS) : this.admissions;
    return decayed / AIMD.ADMISSIONS_MS;
  }

  /** Until when nothing may go: the probe's answer is awaited (at most `PROBE_WAIT_MS`). */
  private heldUntil(): number {
    return this.probeAt + AIMD.PROBE_WAIT_MS;
  }

  private tokensAt(now: number): number {
    const elapsed = now - this.stamp;
    if (!(elapsed > 0)) return this.tokens;
    const refilled = this.tokens + elapsed * this.ratePerMs;
    return refilled < 1 ? refilled : 1;
  }

  /** The rate grows by the time sent at it since it last did (at most two permits' worth). */
  private grow(now: number): void {
    const elapsed = Math.min(now - this.grewAt, 2 / this.ratePerMs);
    this.grewAt = now;
    if (!(elapsed > 0)) return;
    const doubled = this.ratePerMs * 2 ** (elapsed / AIMD.DOUBLE_MS);
    if (this.ceiling === Number.POSITIVE_INFINITY) {
      this.ratePerMs = doubled;
      return;
    }
    if (now - this.ceilingAt >= (this.raises === 0 ? AIMD.RAISE_MS : AIMD.DOUBLE_MS)) {
      this.raises++;
      this.ceiling *= raiseFactor(this.raises);
      this.ceilingAt = now;
    }
    // Toward HEADROOM of the ceiling, the gap halving every APPROACH_MS, and never faster than
    // doubling (a ceiling far above: the rate the key's own policy was refused at).
    const target = this.ceiling * AIMD.HEADROOM;
    if (this.ratePerMs < target) {
      const approached = target - (target - this.ratePerMs) * 2 ** (-elapsed / AIMD.APPROACH_MS);
      this.ratePerMs = approached < doubled ? approached : doubled;
    }
  }

  /**
   * The server refused a request sent at `sentAt`; false if that says nothing new (it was sent
   * no later than the last refusal came: an echo of the same excess). Otherwise the rate is cut
   * (the server admitted the probe since the last refusal) or the pause grows (it did not, or
   * the last cut is under `HOLD_MS` old), and the key waits that pause from `now`.
   */
  refused(now: number, sentAt: number): boolean {
    if (sentAt <= this.refusedAt) return false;
    this.refusedAt = now;
    this.raises = 0;
    // What the server admitted is known once a sample or ADMISSIONS_MS of answers taught it.
    const admitted = this.admittedPerMs(now);
    const rate = this.ratePerMs;
    const measured =
      admitted < rate &&
      (this.sample.admitted >= MIN_SAMPLE || now >= this.learnedAt + AIMD.ADMISSIONS_MS);
    // A provisional ceiling refused says it was too high: cut again at once (see below).
    const wasProvisional = this.provisional;
    const held = sentAt < this.cutAt + AIMD.HOLD_MS && !this.provisional;
    this.provisional = false;
    if (this.admitted && measured && !held) {
      // Sending faster than the server admits: what it admitted is the ceiling, and the rate
      // goes just below it at once. Not again within HOLD_MS: the server still counts what
      // came before (a sliding log refuses for a window after a burst).
      // What it admitted measures its rate once it refused some of it. A key that grew without
      // a refusal measured only its own sends, which lag the rate it grew to (doubling every
      // DOUBLE_MS, the decayed count reads about 0.6 of it): the ceiling is at least CUT of the
      // rate refused, as TCP cuts its window, and provisional (see `provisional`); refused
      // again, RECUT of it. A GCRA with a burst small against its rate (nginx's `burst=5` at
      // 60 per second, through 5-60 ms of jitter) refused the key growing at 83-85 per second,
      // read 44-48, and held it at 0.77x of the rate for RAISE_MS (now 0.90-0.94x); a
      // provisional ceiling refused and cut to what was read (the count still lagging the
      // growth) held a key at 0.70-0.75x against nginx's `burst=15` (`npm run measure:bare`).
      const cut = rate * (wasProvisional ? AIMD.RECUT : AIMD.CUT);
      this.ceiling = Math.max(admitted, cut);
      this.provisional = cut > admitted;
      this.ratePerMs = Math.max(FLOOR_PER_MS, this.ceiling * AIMD.HEADROOM);
      this.ceilingAt = now;
      this.cutAt = now;
      this.sampled = true;
      this.streak = 0;
    } else if (this.admitted && !held) {
      // Too fast, by how much unknown (a rate guessed, not measured; or one the server admitted
      // whole, refused for jitter): cut by CUT.
      this.ceiling = rate;
      this.ratePerMs = Math.max(FLOOR_PER_MS, rate * AIMD.CUT);
      this.ceilingAt = now;
      this.sampled = true;
      this.streak = 0;
    } else if (this.streak < 30) {
      // (1.5 ** 30 permits is past MAX_PAUSE_MS at any rate above the floor.)
      // A refused probe, or a refusal within HOLD_MS of a cut to what the server admitted
      // (it still counts what came before): the rate stays, the pause grows.
      this.streak++;
    }
    this.admitted = false;
    this.probeAt = Number.NEGATIVE_INFINITY;
    this.grewAt = now;
    const pauseMs = Math.min(AIMD.MAX_PAUSE_MS, AIMD.PAUSE_GROWTH ** this.streak / this.ratePerMs);
    // The next permit comes after the pause: the bucket owes what it refills meanwhile.
    this.tokens = 1 - pauseMs * this.ratePerMs;
    if (now > this.stamp) this.stamp = now;
    return true;
  }

  /** The server admitted a request sent at `sentAt`: after the last refusal, the rate holds. */
  answered(now: number, sentAt: number): void {
    this.admissions = this.admittedPerMs(now) * AIMD.ADMISSIONS_MS + 1;
    this.admissionsAt = now;
    if (sentAt <= this.learnedAt) this.sample.admitted++;
    if (sentAt > this.refusedAt) {
      // Admitted only after probes were refused (SPENT_STREAK): the pauses did not refill the
      // server (a window that was spent), so the sample was its window's, not a burst's: it
      // (or the rate now, if faster) is the ceiling. A probe admitted at once: the server
      // refills faster than the sample said.
      const { admitted, spanMs } = this.sample;
      if (this.streak >= SPENT_STREAK && !this.sampled && admitted >= MIN_SAMPLE) {
        this.sampled = true;
        this.ceiling = Math.min(this.ceiling, Math.max(admitted / spanMs, this.ratePerMs));
        this.ceilingAt = now;
        // As a cut: the server still counts the window's burst for HOLD_MS (a sliding log
        // frees one permit per entry that ages out), and a refusal then is no news. Cut for
        // it, the key read the probes' quiet second as the ceiling (a sliding log of 60 per
        // second through 5-60 ms of jitter: 34 per second for RAISE_MS, 0.54x).
        this.cutAt = now;
        this.raises = 0;
        this.ratePerMs = Math.min(this.ratePerMs, this.ceiling) * AIMD.HEADROOM;
      }
      if (this.burstSeed && !this.admitted && this.streak < SPENT_STREAK && !this.sampled) {
        this.reseed();
      }
      this.admitted = true;
      this.streak = 0;
      this.probeAt = Number.NEGATIVE_INFINITY;
    }
  }

  /**
   * The first probe was admitted before `SPENT_STREAK` were refused: the server refilled within
   * a pause, so it is no spent window, and the burst that seeded the rate (read over
   * `SEED_MS`, see `sample`) was a bucket's, not a window's worth: nginx's `burst=5` at 60 per second
   * seeded 6 per second. The rate doubles at once (a second's growth), below the ceiling:
   * grown from the burst's rate, a key met the server's rate 3-4 s in, and the refusals of its
   * overshoot came after the server's first two windows (2-8 of them against nginx's
   * `burst=15`, none now, `npm run measure:bare`).
   */
  private reseed(): void {
    this.burstSeed = false;
    const doubled = Math.min(this.ratePerMs * 2, this.ceiling * AIMD.HEADROOM);
    if (doubled > this.ratePerMs) this.ratePerMs = doubled;
  }

  level(now: number): number {
    return Math.max(0, this.tokensAt(now));
  }

  fits(at: number, cost: number): boolean {
    return at >= this.heldUntil() && this.tokensAt(at) >= cost - EPSILON;
  }

  tryAcquire(now: number, cost: number): Decision {
    const tokens = this.tokensAt(now);
    if (now < this.heldUntil() || tokens < cost - EPSILON) return this.denial(now, cost, tokens);
    // Full for more than a quarter of a permit's time (a timer's lateness is less): the key
    // sent slower than its rate (its callers had nothing more), which says nothing of a faster one.
    const idle = now - (this.stamp + (1 - this.tokens) / this.ratePerMs) > 0.25 / this.ratePerMs;
    this.tokens = tokens - cost;
    if (now > this.stamp) this.stamp = now;
    // The first permit after a refusal is the probe: the rest wait for its answer. The rate
    // grows only while the server admits it and it is what holds the key back.
    if (!this.admitted) this.probeAt = now;
    if (this.admitted && !idle) this.grow(now);
    else this.grewAt = now;
    return allow(0, wholeMs((1 - this.tokens) / this.ratePerMs), 1);
  }

  peek(now: number, cost: number): Decision {
    const tokens = this.tokensAt(now);
    if (now < this.heldUntil() || tokens < cost - EPSILON) return this.denial(now, cost, tokens);
    return allow(0, wholeMs((1 - tokens + cost) / this.ratePerMs), 1);
  }

  /** A wait behind the probe is a bound: its answer (`answered`, `refused`) comes sooner. */
  private denial(now: number, cost: number, tokens: number): Decision {
    const refillMs = (cost - tokens) / this.ratePerMs;
    const estimateMs = Math.max(refillMs, this.heldUntil() - now);
    const retryAfterMs = settleRetry(this, now, cost, estimateMs);
    return deny('rate', retryAfterMs, 0, wholeMs(Math.max(0, 1 - tokens) / this.ratePerMs), 1);
  }

  isAtRest(now: number): boolean {
    return now >= this.heldUntil() && this.tokensAt(now) >= 1;
  }

  restsAt(now: number): number {
    const refilled = now + Math.max(0, 1 - this.tokensAt(now)) / this.ratePerMs;
    const held = this.heldUntil();
    return held > refilled ? held : refilled;
  }

  lowerRemaining(now: number, remaining: number): void {
    if (this.tokensAt(now) <= remaining) return;
    this.tokens = remaining;
    if (now > this.stamp) this.stamp = now;
  }
}
