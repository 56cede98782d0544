import { AIMD, MIN_SAMPLE, MOST_RAISES, SPENT_STREAK } from '../core/adaptive-rate.js';
import { allow, type Decision, deny, EPSILON, wholeMs } from '../core/decision.js';
import { RATE_WINDOW_MS, windowOfWait } from '../core/refusals.js';
import { KEPT, RAISE_MS as SAMPLED_RAISE_MS } from '../core/sampled-rate.js';

/**
 * One rate for a key, learned in a shared store from the bare refusals (a 429 with no wait:
 * nginx's `limit_req`, HAProxy's stick tables) that any of its clients heard, and paced for all
 * of them: the AIMD of `AdaptiveRate` (the same constants), kept where every client counts.
 * Each pacer learning a rate from its own requests found only its share, cut whenever another
 * pushed the server over, and a refusal's backoff, shared through the store, held every pacer
 * so that none struck out and learned at all (three processes on one store against nginx:
 * 15-24 refusals, 0.36-0.38x of its rate).
 *
 * - The first bare refusal makes it: what the store granted the key over about the last
 *   `ADMISSIONS_MS`, less what was refused (`SharedAdmissions`), or half the key's own rate if
 *   less, with no ceiling: it doubles every `DOUBLE_MS` until the next cut.
 * - A refusal of a request sent before the last refusal came is an echo of the same excess
 *   (every client's requests in flight then): it changes nothing.
 * - Another, more than `HOLD_MS` after the last cut, cuts it: to `HEADROOM` of what was
 *   admitted over about the last `ADMISSIONS_MS` (the ceiling; `shareCounted`), or to `CUT` of
 *   itself when that was no less. One within `HOLD_MS` says the server's window is spent, and
 *   so does a refusal of the probe (the first permit after the last refusal's pause,
 *   `probeAt`), which holds the rate as it is for `HOLD_MS` more. Either way the key pauses:
 *   one permit, `PAUSE_GROWTH` times longer for each refusal since the cut.
 * - `SPENT_STREAK` refusals within `HOLD_MS` of the first, the last of a probe, say its window
 *   was spent: what the server admitted of the key before is its window's worth
 *   (`SharedAdmissions.sample`), the ceiling (less the permits still in flight: `granted`), and
 *   the rate goes to `HEADROOM` of it, as `AdaptiveRate` does after refused probes.
 *   Left to grow with time while the server refused, the rate reached twice the server's by the
 *   window's end, and the cut that followed measured a second of refusals: a quarter of the
 *   rate, half the server's (HAProxy, which counts refusals too: 0.60-0.73x of its rate after
 *   two windows, on the manual clock of `npm run measure:store`).
 * - Between cuts it grows with time: toward `HEADROOM` of the ceiling (the gap halving every
 *   `APPROACH_MS`, never faster than doubling every `DOUBLE_MS`), the ceiling rising by `RAISE`
 *   once `RAISE_MS` passed without a refusal, and by more each `DOUBLE_MS` after (`raisedBy`).
 *   A function of the time since the cut, so that a store
 *   (the Redis script too) computes it at each decision and writes only when it changes.
 * - One permit per `1 / rate` ms (a GCRA), and one more at once for a client that came late for
 *   its permit (`debtAt`). Back at the key's own rate, it is dropped; it is forgotten with the
 *   key once at rest.
 *
 * A refusal that says when to come back (a `Retry-After` and no policy) makes it too, from what
 * every client was admitted in the server's window: see `refusedWithWait`.
 *
 * A store without it (`Store.pacesRefusals`) leaves each pacer to learn its own.
 */
export interface SharedRate {
  /** Permits per ms at `cutAt`. */
  perMs: number;
  /** Permits per ms not to go past (what was admitted when it was cut); 0: none yet. */
  ceiling: number;
  /** Shared-clock ms of the last cut (or of the refusal that made it). */
  cutAt: number;
  /** Shared-clock ms of the spacing's last change. */
  stamp: number;
  /** ms of debt ahead of `stamp`. */
  debt: number;
  /**
   * Refusals since the last cut: the pause after each grows (`PAUSE_GROWTH`). For a rate a
   * refusal with a wait taught, 1 once a refused probe held it (`refusedWithWait`).
   */
  streak: number;
  /**
   * Shared-clock ms of the last refusal that changed anything: a request sent no later was
   * sent before it was heard, an echo of the same excess (any client's in flight then).
   */
  refusedAt: number;
  /**
   * Permits granted since `refusedAt`: all but the first (the one a refusal of the window's
   * next request answers) are in flight when it comes, and not yet among the refused.
   */
  granted: number;
  /** Shared-clock ms of the first of those (the probe after the refusal's pause). */
  probeAt: number;
  /**
   * The admissions of the sample a refusal with a wait taught the rate from (`refusedWithWait`),
   * less its echoes since; 0 for a rate bare refusals made or cut.
   */
  sample: number;
  /**
   * Shared-clock ms of that sample's first grant: a refusal of a request sent before it is none
   * of the sample's echoes (see `refusedWithWait`). Absent for a rate bare refusals made.
   */
  sampleFrom?: number;
  /**
   * The longest round trip (ms) of the refusals with a wait since the one that taught the rate
   * (its echoes'), at most `RATE_WINDOW_MS`: its permits are spaced by half of it more per
   * `RATE_WINDOW_MS` (`spacingOf`). 0 for a rate bare refusals made, until a refusal with a wait
   * comes.
   */
  roundTripMs: number;
  /**
   * The send (shared ms) and count of the last answers that named a limit and left at least two
   * short of it, as pairs: they may show the server to be a bucket (`countHeard` in
   * bucket-state.ts).
   */
  highs?: number[];
}

/**
 * What the store granted a key, less what the server refused: an average decayed with a time
 * constant of `ADMISSIONS_MS` (its rate is `count / ADMISSIONS_MS`), kept for every key of a
 * store that paces refusals, for the rate its first refusal makes.
 */
export interface SharedAdmissions {
  count: number;
  /** Shared-clock ms of its last change. */
  at: number;
  /**
   * Granted less refused since `since`, not decayed: the sample a spent window's ceiling is
   * read from (over at least `SEED_MS`, as `AdaptiveRate`'s sample). A burst into the server's
   * first window is its window's worth; the decayed count read it 10-25% low a few hundred ms
   * on, and the ceiling kept the key there.
   */
  sample: number;
  /** Shared-clock ms of the first grant of the sample. */
  since: number;
  /**
   * Shared-clock ms the count began (-Infinity: long ago). A count decayed over a shorter
   * history is short of its rate: see `shareCounted`.
   */
  from: number;
}

const FLOOR_PER_MS = 1 / AIMD.FLOOR_MS;

/** The admissions' count decayed to `now`. */
function decayed(admissions: SharedAdmissions, now: number): number {
  const elapsed = now - admissions.at;
  return elapsed > 0
    ? admissions.count * Math.exp(-elapsed / AIMD.ADMISSIONS_MS)
    : admissions.count;
}

/** Counts `amount` more admitted (negative: refused) at `now`, never below none. */
export function admit(
  admissions: SharedAdmissions,
  now: number,
  amount: number,
  inSample = true,
): void {
  const count = decayed(admissions, now) + amount;
  admissions.count = count > 0 ? count : 0;
  if (now > admissions.at) admissions.at = now;
  if (!inSample) return;
  if (!(admissions.sample > 0) && amount > 0) admissions.since = now;
  const sample = admissions.sample + amount;
  admissions.sample = sample > 0 ? sample : 0;
}

/** No admissions yet at `now`. */
export function noAdmissions(now: number): SharedAdmissions {
  return { count: 0, at: now, sample: 0, since: now, from: now };
}

/**
 * The share of its rate that the admissions' decayed count holds, for a history shorter than a
 * few `ADMISSIONS_MS` (at least `SEED_MS`): a constant rate since `from` decays to that rate
 * times `1 - e^(-history / ADMISSIONS_MS)`. Read as the whole, a key's first cut 1.3 s into its
 * first admissions took three quarters of the server's rate for the ceiling, and held there for
 * `RAISE_MS` (three pacers on one store against a GCRA of 60 per second with a burst of 15
 * through 5-60 ms of jitter: 0.82-0.84x of its rate after two windows, `npm run measure:store`).
 */
function shareCounted(admissions: SharedAdmissions, now: number): number {
  const history = now - admissions.from;
  return 1 - Math.exp(-(history > AIMD.SEED_MS ? history : AIMD.SEED_MS) / AIMD.ADMISSIONS_MS);
}

/** What the key was admitted per ms over about the last `ADMISSIONS_MS` (its history's share). */
export function recentPerMs(admissions: SharedAdmissions, now: number): number {
  return decayed(admissions, now) / AIMD.ADMISSIONS_MS / shareCounted(admissions, now);
}

/**
 * What the server admitted of the key per ms, by the sample (over its span, at least `SEED_MS`)
 * or by the recent admissions if that is more (a sample of a long, slower past); 0 when the
 * sample is under `MIN_SAMPLE`, too few to say.
 */
function sampledPerMs(admissions: SharedAdmissions, now: number, inFlight: number): number {
  const sample = admissions.sample - inFlight;
  if (!(sample >= MIN_SAMPLE)) return 0;
  const spanMs = now - admissions.since;
  const sampled = sample / (spanMs > AIMD.SEED_MS ? spanMs : AIMD.SEED_MS);
  const recent = decayed(admissions, now) / AIMD.ADMISSIONS_MS;
  return sampled > recent ? sampled : recent;
}

/** The rate at `now`: grown since the last cut (see `SharedRate`), never below the floor. */
export function rateAt(rate: SharedRate, now: number): number {
  const elapsed = now > rate.cutAt ? now - rate.cutAt : 0;
  const doubled = rate.perMs * 2 ** (elapsed / AIMD.DOUBLE_MS);
  if (!(rate.ceiling > 0)) return doubled;
  const raised =
    rate.ceiling * raisedBy(elapsed, rate.sample > 0 ? SAMPLED_RAISE_MS : AIMD.RAISE_MS);
  const target = raised * AIMD.HEADROOM;
  if (!(rate.perMs < target)) return rate.perMs;
  const approached = target - (target - rate.perMs) * 2 ** (-elapsed / AIMD.APPROACH_MS);
  return approached < doubled ? approached : doubled;
}

/**
 * What the ceiling is raised by `elapsed` ms after the cut, as `AdaptiveRate` raises it: by
 * `RAISE` once `afterMs` passed without a refusal (`RAISE_MS`; a minute for a rate a refusal
 * with a wait taught, as `SampledRate` raises it: a growth refused costs every client the whole
 * wait, a second for a whole-second `Retry-After`, where a bare refusal costs one request), then
 * a larger raise each `DOUBLE_MS` (`RAISE` to the power of the raises in a row, as CUBIC probes
 * past its last maximum). One raise per `RAISE_MS` held a rate cut low while a window was spent
 * (HAProxy) at half the server's for over a minute.
 */
export function raisedBy(elapsed: number, afterMs: number = AIMD.RAISE_MS): number {
  if (!(elapsed >= afterMs)) return 1;
  const raises = Math.min(MOST_RAISES, 1 + Math.floor((elapsed - afterMs) / AIMD.DOUBLE_MS));
  return AIMD.RAISE ** ((raises * (raises + 1)) / 2);
}

/**
 * The debt at `at`, or a credit (negative) of at most `LATE_PERMITS` for a client that came late
 * for its permit: a permit every `1 / rate` ms with none to spare lost every lateness for good,
 * and clients that take through a store's round trip, each woken by its own timer, came a few
 * ms late for most (three processes on Redis against real HAProxy ran at 0.85-0.89x of its
 * rate where 0.95x was paced).
 */
function debtAt(rate: SharedRate, at: number, spacing = spacingOf(rate, at)): number {
  const elapsed = at - rate.stamp;
  if (!(elapsed > 0)) return rate.debt;
  const debt = rate.debt - elapsed;
  const credit = -LATE_PERMITS * spacing;
  return debt > credit ? debt : credit;
}

/**
 * ms between two permits of `rate` at `at`: `1 / rate`, and for a rate a refusal with a wait
 * taught, half its round trip more per `RATE_WINDOW_MS`, as a lone pacer counts such a rate
 * arrival-safe over that window (core/refusals.ts `paceAt`). The rate is what the server admitted
 * in its window, paced at `HEADROOM` of it, a twentieth (50 ms a second) to spare: less than the
 * 55 ms jitter may bunch a second's arrivals by through 5-60 ms each way, and three processes on
 * one store against rolling-rate-limiter (a sliding log that logs what it refuses, saying a
 * whole-second `Retry-After`) had refusals after two windows in three runs of four (0.72-0.95x
 * of its rate after them); none in eight spaced so (0.88-0.94x; `bench:servers:store`).
 */
function spacingOf(rate: SharedRate, at: number): number {
  return (1 + rate.roundTripMs / 2 / RATE_WINDOW_MS) / rateAt(rate, at);
}

/** Permits a late client may take at once to catch up (see `debtAt`). */
export const LATE_PERMITS = 1;

/**
 * ms a client that came late for a permit of a learned policy keeps, to take its next one as
 * much earlier (at most one permit's time): spaced one at a time with none to spare, every
 * client's lateness was lost for good, and clients that take through a store's round trip,
 * each woken by its own timer, came a millisecond or two late for most (one process on Redis
 * spaced at 60 per second sent one per 17.7 ms; three against real express-rate-limit stating
 * its policy, 10x generous, ran at 0.92x of its rate straight to it and 0.88x through 5-60 ms of
 * jitter, 0.99x and 0.95x with the credit). The spacing is that much wider, so that no window
 * holds more than the limit for it (4 ms a window: 0.996x of a second's).
 */
export const LATE_MS = 4;

/** The credit a late client keeps of a learned policy spaced `spacingMs` apart (`LATE_MS`). */
export function lateCreditMs(spacingMs: number): number {
  return spacingMs < LATE_MS ? spacingMs : LATE_MS;
}

/**
 * The key waits from `now` (after a refusal): one permit, `PAUSE_GROWTH` times longer for each
 * refusal since the last cut (a window that is spent: its end is found with a handful of
 * refusals, not a wall of them), up to `MAX_PAUSE_MS`; or longer if it owed more.
 */
function pause(rate: SharedRate, now: number): void {
  const spacing = spacingOf(rate, now);
  const owed = debtAt(rate, now, spacing);
  const pauseMs = Math.min(AIMD.MAX_PAUSE_MS, AIMD.PAUSE_GROWTH ** rate.streak * spacing);
  rate.debt = owed > pauseMs ? owed : pauseMs;
  rate.stamp = now;
}

/**
 * The server refused the key without saying when to come back, at `now`: the rate is made, cut
 * or held (see `SharedRate`). `ownPerMs`: the key's own rate, above which none is kept.
 * Returns the rate, or undefined when none paces the key (its own is slower).
 */
export function refused(
  rate: SharedRate | undefined,
  admissions: SharedAdmissions,
  now: number,
  ownPerMs: number,
  sentAt = now,
): SharedRate | undefined {
  const admitted = decayed(admissions, now) / AIMD.ADMISSIONS_MS;
  const whole = recentPerMs(admissions, now);
  admit(admissions, now, -1);
  if (rate !== undefined && sentAt <= rate.refusedAt) return rate;
  if (rate === undefined) {
    const seed = ownPerMs * AIMD.SEED_CUT;
    const perMs = admitted > 0 && admitted < seed ? admitted : seed;
    const made = madeAt(now, perMs > FLOOR_PER_MS ? perMs : FLOOR_PER_MS, 0, 0, 0);
    if (!(made.perMs < ownPerMs)) return undefined;
    pause(made, now);
    return made;
  }
  rate.refusedAt = now;
  rate.sample = 0;
  // Granted since the last refusal and sent after this one's request: in flight (see `granted`).
  const inFlight = rate.granted > 1 ? rate.granted - 1 : 0;
  // The first permit after the last refusal's pause, or one taken with it (a late client's):
  // refused, it says the window is still spent, not that the rate is too fast, as a refused
  // probe says to `AdaptiveRate`. Cut for it after HOLD_MS, the rate read the quiet second
  // of a spent window as the ceiling: three processes on Redis against HAProxy (which counts
  // refusals) through the jitter proxy held a third of its rate for RAISE_MS, in 3 of 19 runs.
  const probe = refusedProbe(rate, now, sentAt);
  rate.granted = 0;
  if (now >= rate.cutAt + AIMD.HOLD_MS && !probe) {
    const current = rateAt(rate, now);
    const measured = whole > 0 && whole < current;
    rate.ceiling = measured ? Math.max(whole, current / 4) : current;
    const cut = measured ? rate.ceiling * AIMD.HEADROOM : current * AIMD.CUT;
    rate.perMs = cut > FLOOR_PER_MS ? cut : FLOOR_PER_MS;
    rate.cutAt = now;
    rate.streak = 0;
  } else if (rate.streak < 30) {
    // (1.5 ** 30 permits is past MAX_PAUSE_MS at any rate above the floor.)
    rate.streak++;
    // Only a refused probe says the window is spent: a refusal with permits admitted since the
    // last (a GCRA's burst spent, through jitter) took a sample of 45 per second from nginx's
    // 60 for the ceiling, held for RAISE_MS (0.72-0.77x in 5 of 30 seeds of measure:store).
    const sampled =
      probe && rate.ceiling === 0 && rate.streak >= SPENT_STREAK
        ? sampledPerMs(admissions, now, inFlight)
        : 0;
    if (sampled > 0) {
      // A spent window (see `SharedRate`): its sample is the ceiling, and the rate holds below it.
      rate.ceiling = sampled < ownPerMs ? sampled : ownPerMs;
      const held = (rate.perMs < rate.ceiling ? rate.perMs : rate.ceiling) * AIMD.HEADROOM;
      rate.perMs = held > FLOOR_PER_MS ? held : FLOOR_PER_MS;
      rate.cutAt = now;
    } else if (probe) {
      // The window is still spent, and the server counts what came before for HOLD_MS more
      // (HAProxy counts refusals): the rate holds as it is until then.
      rate.perMs = rateAt(rate, now);
      rate.cutAt = now;
    }
  }
  pause(rate, now);
  return rate;
}

/**
 * The server refused the key at `now` and said when to come back (`waitMs`, a `Retry-After`),
 * a request sent at `sentAt`: what the store granted since the last such refusal, less what the
 * server refused, is what the server admitted of every client in its window, and the rate is
 * that many over the window (`windowOfWait`: from the first grant until the wait ends, in whole
 * seconds for a whole-second wait), `HEADROOM` of it paced for every client. The block holds
 * them until the wait ends; the rate grows past its sample only by the ceiling's raise after a
 * minute without a refusal (`raisedBy`), and the next refusal measures again.
 *
 * Each pacer learning a rate from its own answers found only its share of the server's window,
 * which grew when the others were done: three processes on one store against
 * `@fastify/rate-limit` saying only `retry-after` ran at 0.44-0.76x of its rate after two
 * windows, 0.95-0.97x with this (`npm run bench:servers:store`).
 *
 * A refusal of a request sent before the last one came is an echo of the same excess: if its
 * grant was counted in the sample that taught the rate, the sample is one less, and so is the
 * rate. A refused probe holds the rate (once between two samples), a sample shorter than
 * `SAMPLE_TRIPS` round trips goes on to the next refusal, and a sample its rate kept for a second
 * teaches no slower than `KEPT` of it (`keptPerMs`). Returns the rate, or
 * undefined when none paces the key (its own is slower).
 */
export function refusedWithWait(
  rate: SharedRate | undefined,
  admissions: SharedAdmissions,
  now: number,
  ownPerMs: number,
  sentAt: number,
  waitMs: number,
): SharedRate | undefined {
  const { since } = admissions;
  // A request granted before the sample began is none of it (an echo of the last sample's
  // refusal, which shrinks the rate that sample taught): counted in the sample, echoes of the
  // slow start's burst left 4 of the 8 admitted since, and a GCRA of 60 per second with a burst
  // of 5 was paced at 12 (0.20x of its rate after two windows in one seed of three of
  // `DIALECT=traefik npm run measure:store`).
  admit(admissions, now, -1, sentAt >= since);
  // At most the window the rate is counted over (see `heardRoundTrip` in bucket-state.ts).
  const roundTripMs = Math.min(now - sentAt, RATE_WINDOW_MS);
  if (rate !== undefined && roundTripMs > rate.roundTripMs) rate.roundTripMs = roundTripMs;
  if (rate !== undefined && sentAt <= rate.refusedAt) {
    // Granted after the refusal that taught the rate (an echo of a refused probe), or before its
    // sample began (an echo of the sample before, whose rate was made already): not in its
    // sample. Shrunk by each, the echoes of a slow start's burst took a rate its next sample (6
    // admitted over 73 ms) taught to a sixth, and a GCRA of 60 per second with a burst of 15,
    // saying Traefik's exact `X-Retry-In`, paced three pacers at 12 per second for 20 s (0.21x of
    // its rate after two windows, 300 calls in 4.6 times the ideal; seed 7 of `DIALECT=traefik
    // npm run measure:store`).
    if (sentAt > rate.cutAt || sentAt < (rate.sampleFrom ?? Number.NEGATIVE_INFINITY)) return rate;
    if (rate.sample > 1) {
      const shrunk = (rate.sample - 1) / rate.sample;
      rate.sample--;
      rate.perMs *= shrunk;
      rate.ceiling *= shrunk;
    }
    return rate;
  }
  const admitted = admissions.sample;
  if (
    rate !== undefined &&
    rate.sample > 0 &&
    rate.streak === 0 &&
    refusedProbe(rate, now, sentAt)
  ) {
    // The first permit after the block refused: the server's window is still spent (it counted
    // what it refused then too), which says nothing of the rate. Its requests in flight are
    // echoes of this refusal, not of the rate's sample. Taught by the few admitted since, three
    // pacers on one store against a sliding window that counts refusals, saying Traefik's exact
    // `X-Retry-In`, learned 11 per second of its 60 from 3 sent as the block ended, then 4 per
    // second as their refusals came (0.06-0.07x of its rate in two seeds of three, `DIALECT=traefik
    // npm run measure:store`). Once between two samples (`streak`): a rate too fast whose block
    // lets one permit through and refuses the next, a few ms later, taught nothing for good.
    rate.refusedAt = now;
    rate.granted = 0;
    rate.streak = 1;
    return rate;
  }
  const windowMs = windowOfWait(since, now, sentAt, waitMs);
  if (
    !(admitted >= MIN_SAMPLE) ||
    (rate !== undefined && windowMs < SAMPLE_TRIPS * rate.roundTripMs)
  ) {
    // Too few to say, or too short: the sample goes on past this refusal, to the next.
    if (rate !== undefined) rate.refusedAt = now;
    return rate;
  }
  admissions.sample = 0;
  let ceiling = admitted / windowMs;
  let perMs = Math.max(ceiling * AIMD.HEADROOM, FLOOR_PER_MS);
  const kept = rate === undefined ? 0 : keptPerMs(rate, now, admitted, now - since);
  if (kept > perMs) {
    perMs = kept;
    ceiling = kept / AIMD.HEADROOM;
  }
  if (!(perMs < ownPerMs)) return undefined;
  const made = madeAt(now, perMs, ceiling, admitted, roundTripMs);
  made.sampleFrom = since;
  return made;
}

/**
 * The fewest round trips (the longest of the rate's refusals with a wait) a sample must span to
 * make a new rate where one a wait taught paces the key (`refusedWithWait`). A sample counts the
 * requests granted since it began less the refusals heard: its requests still on their way when
 * the refusal comes may be refused yet, and the server's admissions in its span include requests
 * granted before it, up to a round trip's worth each. Over a span of a round trip or so they are
 * most of it: the echoes of a slow start's burst cut a sample of 6 admitted over 73 ms to 2, and
 * three pacers against a GCRA of 60 per second with a burst of 15, saying Traefik's exact
 * `X-Retry-In` through 5-60 ms of jitter, were paced at 25 per second until the ceiling's raise a
 * minute later (`DIALECT=traefik npm run measure:store`, seeds 1-8: 0.42-0.93x of its rate after
 * two windows with `sampleFrom`; 0.89-0.97x so, with a few more refusals in the first two: 18-30
 * -> 24-36; at 2 round trips 0.81-0.93x, at 4 0.87-0.98x with 29-41).
 */
export const SAMPLE_TRIPS = 3;

/**
 * The slowest rate a refusal with a wait may teach after a sample paced by a rate a wait taught
 * (`rate`): `KEPT` of that rate, if the sample spans a second or more and the server admitted
 * `KEPT` of what the rate allowed over it; else 0. A rate the server admitted for a second, then
 * refused once, is just too fast, as `SampledRate` keeps a lone pacer's: read over whole seconds
 * instead, 95 admitted over 1.65 s of such a sample taught a window of two, 45 per second where
 * 57 had passed (a sliding log of 60 that logs refusals, saying only `Retry-After`, one refusal
 * after two windows: 0.48-0.75x of its rate after them, 0.69-0.75x with this; the same with
 * Traefik's exact `X-Retry-In`, 0.51-0.82x and 0.53-0.85x, on the manual clock of
 * `measure:store` with one refusal forced; `bench:servers:store` against rolling-rate-limiter has
 * such refusals in most runs).
 */
function keptPerMs(rate: SharedRate, now: number, admitted: number, spanMs: number): number {
  if (!(rate.sample > 0) || spanMs < AIMD.DOUBLE_MS) return 0;
  const kept = rateAt(rate, now) * KEPT;
  return admitted >= kept * spanMs ? kept : 0;
}

/**
 * Whether a refusal at `now` of a request sent at `sentAt` is of the key's probe: the first
 * permit granted after its last refusal (or one taken with it, by a late client).
 */
function refusedProbe(rate: SharedRate, now: number, sentAt: number): boolean {
  return rate.granted === 0 || sentAt < rate.probeAt + spacingOf(rate, now);
}

/**
 * A rate made by a refusal at `now` whose answer took `roundTripMs`: cut then, owing nothing,
 * nothing granted since.
 */
function madeAt(
  now: number,
  perMs: number,
  ceiling: number,
  sample: number,
  roundTripMs: number,
): SharedRate {
  return {
    perMs,
    ceiling,
    cutAt: now,
    stamp: now,
    debt: 0,
    streak: 0,
    refusedAt: now,
    granted: 0,
    probeAt: now,
    sample,
    roundTripMs,
  };
}

/** The shared rate of a state with the core's decisions, as `LearnedPart` in bucket-state.ts. */
export class RatePart {
  constructor(private readonly rate: SharedRate) {}

  decide(now: number, cost: number, take: boolean): Decision {
    if (cost === 0) return allow(0, 0, 1);
    const spacing = spacingOf(this.rate, now);
    const debt = debtAt(this.rate, now, spacing);
    if (debt > EPSILON * spacing) return deny('rate', wholeMs(debt), 0, wholeMs(debt), 1);
    const after = debt + cost * spacing;
    if (take) {
      if (this.rate.granted === 0) this.rate.probeAt = now;
      this.rate.granted += cost;
      this.rate.debt = after;
      if (now > this.rate.stamp) this.rate.stamp = now;
    }
    return allow(0, wholeMs(after), 1);
  }

  /** As `LearnedPart.adjust`: a charge is debt, a give-back cancels debt (never below none). */
  adjust(now: number, amount: number): void {
    const spacing = spacingOf(this.rate, now);
    const debt = debtAt(this.rate, now, spacing) + amount * spacing;
    this.rate.debt = debt > 0 ? debt : 0;
    if (now > this.rate.stamp) this.rate.stamp = now;
  }

  /** At rest once its debt is paid and `RAISE_MS` passed since its last cut. */
  restsAt(now: number): number {
    const until = Math.max(now + debtAt(this.rate, now), this.rate.cutAt + AIMD.RAISE_MS);
    return until > now ? until : now;
  }
}
