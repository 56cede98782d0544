import { AdaptiveRate, AIMD, MIN_SAMPLE } from './adaptive-rate.js';
import { type LearnedLimit, WithLearned } from './learned.js';
import { adopt, forget, type KeyStates, MAX_LOGGED, ownPolicy, retime } from './learned-policy.js';
import { SampledRate } from './sampled-rate.js';
import { SlowStart } from './slow-start.js';

/**
 * A refusal of `key` (a policy the server advertised is not second-guessed):
 *
 * - with a wait (`Retry-After`), the requests admitted since the key's last refusal, over the
 *   time from the first of them until the wait ends, are the server's window: the key learns
 *   that rate (`'rate'`), counted arrival-safe. Refusals with nothing admitted since the last
 *   one are echoes of the same excess and teach nothing. Each refusal measures again, so an
 *   estimate that was too fast is corrected by the next refusal it earns. On a store that
 *   learns rates for every client (`sharesRates`), the store learns it from all their grants;
 * - without one, AIMD (a bare 429, nginx's `limit_req`), see `AIMD`: the third refusal within
 *   a second, or in a row with nothing admitted between, makes the key learn a rate: half its
 *   own fastest rate, or the rate the server admitted since the last refusal (over at least
 *   `AIMD.SEED_MS`) if that is slower, as it always is for zero configuration. From then on the rate pauses, probes, cuts and grows by
 *   itself (`AdaptiveRate`); it is dropped once it is back at the key's own rate.
 *
 * Zero configuration's slow start is halved either way.
 */
export function refused(
  states: KeyStates,
  key: string,
  now: number,
  wait: number | undefined,
  sentAt: number,
  attempt = 0,
): void {
  const state = states.stateFor(key, now);
  if (state === undefined) return;
  const { peakPerMs } = states.compiled(key);
  const learning =
    state instanceof WithLearned ? state : new WithLearned(state, undefined, peakPerMs, now);
  if (learning !== state) states.replace(key, learning);
  const current = learning.learned;
  if (current?.policy.source === 'server') return;
  if (wait !== undefined) {
    // A request sent before the last refusal came is an echo of the same excess.
    if (sentAt < learning.lastRefusalAt) return;
    if (current?.counter instanceof SlowStart) current.counter.cut();
    // The store paces the key by the rate it learns from every client's refusals, a window's
    // worth of them at a time (`refusedWithWait` in stores/shared-rate.ts).
    if (states.sharesRates()) return;
    let { admitted, firstAdmittedAt } = learning;
    learning.admitted = 0;
    learning.firstAdmittedAt = Number.NEGATIVE_INFINITY;
    // A request sent the instant the last refusal came knew nothing of it either.
    const afterLast = sentAt > learning.lastRefusalAt;
    const servedPerMs = servedWhileBusy(learning, now, wait);
    learning.lastRefusalAt = now;
    learning.sampleFrom = Number.POSITIVE_INFINITY;
    if (learning.confirmed) {
      if (adoptOwnArrivalSafe(states, key, now)) return;
      // A store counts the key's confirmed policy for every client, and this pacer's
      // admissions are only its share of them: a rate taught by them held it to that share
      // (three processes on one store against a simulated sliding log through 5-60 ms of
      // jitter: one refused learned 33 per 3.9 s, and the 300 calls took 14.4 s where a fair
      // share takes 5.1 s). The block, shared through the store, is the answer.
      if (!states.answered()) return;
    }
    const wholeSeconds = inWholeSeconds(wait);
    // The sample spans the server's window: from its first admission to the wait's end, in whole
    // seconds for a whole-second wait (`windowOfWait`). Read as the middle of that second
    // instead, a refusal with a few ms of its window to go taught a rate up to a third too slow,
    // and the first sample, a slow start's burst, one too fast (0.60-0.75x of the rate after two
    // windows against @fastify/rate-limit saying only `retry-after`: bench:servers).
    let windowMs = windowOfWait(firstAdmittedAt, now, sentAt, wait);
    // The run of refusals this one belongs to admitted more, and faster: its sample, not this
    // one's few. The run began at a refusal (the bucket empty), so what the server admitted since
    // is what it frees; four admitted since the last refusal read 15.3 per second where the run
    // served 19.5, and that rate, the ceiling, held a GCRA of 20 saying `X-Retry-In` at 0.71x
    // after two windows (`measure:arrivals` seed 6; 0.90x now).
    if (admitted >= MIN_SAMPLE && servedPerMs !== undefined && servedPerMs * windowMs > admitted) {
      admitted = learning.busyAdmitted;
      firstAdmittedAt = learning.busyFrom;
      windowMs = windowOfWait(firstAdmittedAt, now, sentAt, wait);
    }
    // The rate that paced the key when refused, if a refusal taught it: too fast.
    const taught =
      current?.policy.source === 'rate' && current.counter.retimed !== undefined
        ? current.policy.limit / current.policy.windowMs
        : undefined;
    if (admitted >= MIN_SAMPLE && windowMs >= 1) {
      // The fastest rate the sample allows, which the rate grows to and no further until
      // refused: its whole seconds' (no faster is a whole number of seconds), or its exact
      // wait's by send times at both ends (the sample's rate, read until the refusal's answer,
      // counts the round trip's two one-way delays in the server's window: about 0.94 of the
      // rate through 5-60 ms each way, under the growth's `HEADROOM` for good; by send times the
      // two cancel on average; learned at that rate instead of growing to it, 1-18 refusals
      // came after two windows). On a store that learns no rate for its clients (`sharesRates`
      // false: one of one's own; this package's return above) the sample is this pacer's share
      // of what the server admitted, and the share grows when the others are done: up to its
      // wait a second early then (held to its share, the last of three processes on one Redis
      // store, before it learned rates, ran at a quarter of the rate alone).
      const fastestPerMs = !wholeSeconds
        ? admitted / Math.max(1, windowMs - (now - sentAt))
        : states.answered()
          ? admitted / windowMs / AIMD.HEADROOM
          : admitted / Math.max(1, now + wait - 1_000 - firstAdmittedAt);
      learning.sampled ??= new SampledRate(now);
      const floorPerMs = learning.sampled.refused(now, now + wait, taught, fastestPerMs);
      // A sample of several of the server's windows (a slow start that kept to its counts)
      // teaches the same rate over a window of the limit it named.
      const { namedLimit } = learning;
      const spent = namedLimit > 0 && admitted >= namedLimit;
      const limit = spent ? namedLimit : admitted;
      // A sample that spent the limit the server named ends a window of its: the wait is when
      // it counts afresh, and the block holds the key until then, so the rate starts there
      // rather than a learned window later (rate-limiter-flexible sat out 1.1 s more). Any
      // other wait may be for one permit (a bucket's), and its permits in use stay counted.
      const sampledPerMs = admitted / windowMs;
      const kept = floorPerMs !== undefined && floorPerMs > sampledPerMs;
      const windowOfLimit = kept ? limit / floorPerMs : (windowMs * limit) / admitted;
      // Requests of the sample still on their way may be admitted yet, and raise the rate it
      // taught (`admittedLate`); not a rate kept before it.
      if (!kept) {
        learning.sampleFrom = firstAdmittedAt;
        learning.sampleSize = admitted;
      }
      paceAt(states, key, now, limit, windowOfLimit, spent);
    } else {
      // The server admitted at least the rate refused while it kept refusing: the refusal is a
      // busy bucket's debt from a faster rate before (or jitter into a bucket run dry), not this
      // rate too fast, and it changes nothing, as an echo does. Cut for it, and the rate refused
      // taken for the ceiling, a GCRA saying `X-Retry-In` through 5-60 ms of jitter held a key
      // at 0.80x after two windows (one seed of eight in `measure:arrivals`, 0.89x now; the
      // other 2,047 rows of the eight seeds unchanged).
      if (taught !== undefined && servedPerMs !== undefined && servedPerMs >= taught) return;
      const floorPerMs = learning.sampled?.refused(now, now + wait, taught);
      // Refused again before it admitted a sample's worth, with a wait shorter than the taught
      // rate's window: the server frees one permit at a time (a bucket), the rate is too fast,
      // and by how much no sample between such refusals can say (Azure's `retry-after-ms` of one
      // permit refused every third request for good at twice its rate). Back to the last rate
      // kept, or cut as AIMD cuts. A wait of a window or more (a whole-second `Retry-After` on
      // a 1 s window) holds the key long enough by itself: cut too, it went to 0.75x. Nothing
      // admitted between two refusals says the server has not freed up (another client spends
      // it), not that the rate is too fast: no cut, as AIMD's refused probe cuts nothing.
      const policy = (current as LearnedLimit | undefined)?.policy;
      if (
        taught !== undefined &&
        policy !== undefined &&
        afterLast &&
        admitted > 0 &&
        wait < policy.windowMs
      ) {
        let cutPerMs =
          floorPerMs !== undefined && floorPerMs < taught ? floorPerMs : taught * AIMD.CUT;
        // Not below what the server served while refusing (a bucket kept busy admits its rate):
        // cut in turn from a slow start's burst read as a rate three times the server's, the
        // key landed anywhere from 0.7 of its rate to the rate, and grew back by a twentieth a
        // second (a GCRA saying `X-Retry-In`, through 5-60 ms of jitter: 0.81x after two
        // windows in one seed, 0.87x in another; and a refusal after two windows without any).
        if (servedPerMs !== undefined && servedPerMs > cutPerMs) {
          cutPerMs = Math.min(servedPerMs, taught * AIMD.RECUT);
        }
        paceAt(states, key, now, 1, 1 / Math.max(cutPerMs, 1 / AIMD.FLOOR_MS));
      }
    }
    return;
  }
  if (current?.counter instanceof SlowStart) current.counter.cut();
  // The store paces the key by the rate it learns from every client's refusals (`SharedRate`).
  if (states.sharesRates()) return;
  // A server that stopped admitting the key (or never did) refuses everything: no rate paces
  // it, and the key's callers spend their retries (see `AIMD.ADMITTED_MS`).
  const admits = now - learning.lastAdmission() <= AIMD.ADMITTED_MS;
  if (current?.counter instanceof AdaptiveRate) {
    if (admits) current.counter.refused(now, sentAt);
    else forget(states, key, 'rate');
    return;
  }
  // Strikes count within `STRIKE_MS`, or for as long as the server admits nothing between
  // them: refusals in a row are no jitter, however slowly they come (a server of one per 5 s
  // refused a call's three sends over 1.8 s, and its retries were spent before a rate paced it).
  if (now - learning.struckAt > AIMD.STRIKE_MS && learning.lastAdmission() > learning.struckAt) {
    learning.struckAt = now;
    learning.strikes = 0;
  }
  // A call's own third refusal is a strike-out too: with the key's others admitted between its
  // refusals (a server of one per 250 ms, a slow start sending two at a time), the strikes reset
  // and the call's two retries were spent before any rate paced it (`RefusalSignal.attempt`).
  const calledOut = attempt >= AIMD.STRIKES - 1;
  if ((++learning.strikes < AIMD.STRIKES && !calledOut) || !admits) return;
  // The first cut halves the key's own rate (the rate it was really sending at is not known
  // any more: by the time its refusals are read, its own bucket may have refilled), or starts
  // at the rate the server admitted since the last refusal, if slower: requests admitted over
  // the time since the first of them, at least `SEED_MS` (a slow start's sample is a burst
  // into the server's first window: 60 in 0.3 s from a server of 60 per second). One or two
  // admitted are a sample too: a rate too slow grows, where half of zero configuration's own
  // (500 per ms) paused 2 us after each refusal, and a server of 2 per 250 ms refused one
  // call all 20 of its sends within 22 ms.
  const { admitted, firstAdmittedAt } = learning;
  const spanMs = Math.max(now - firstAdmittedAt, AIMD.SEED_MS);
  const seen = admitted > 0 ? admitted / spanMs : Infinity;
  const ratePerMs = Math.min(peakPerMs * AIMD.SEED_CUT, seen);
  // The rate is a burst's, read over SEED_MS: a bucket's burst, if a probe shows it refilled.
  const burst = now - firstAdmittedAt < AIMD.SEED_MS && seen < peakPerMs * AIMD.SEED_CUT;
  learning.admitted = 0;
  learning.firstAdmittedAt = Number.NEGATIVE_INFINITY;
  // The pauses and probes of the rate take the key over: a block the strikes before earned
  // (the paced fetch's backoff for refusals it could not explain) would only hide when the
  // server counts afresh. A wait the server stated (a Retry-After heard) stays.
  if (learning.lastRefusalAt === Number.NEGATIVE_INFINITY) states.unblock(key);
  learning.learned = {
    counter: new AdaptiveRate(ratePerMs, now, { admitted, spanMs, burst }, peakPerMs),
    policy: { limit: 1, windowMs: 1 / ratePerMs, source: 'rate' },
    openedAt: Number.NEGATIVE_INFINITY,
  };
}

/**
 * What the server admitted of the key's requests sent since the first of this run of refusals
 * with an exact wait (each within `RATE_WINDOW_MS` of the last), per ms until this one's wait
 * ends: a server that keeps refusing is busy, and what it admits meanwhile is its rate (a
 * bucket's refill, a window's limit). Counted from every answer, unlike a sample's (whose
 * requests were all sent after the last refusal: between refusals a tenth of a second apart,
 * one or two). Undefined before the run admitted `MIN_SAMPLE`, and for a whole-second wait,
 * whose end is not known. Starts a new run if the last refusal was longer ago.
 */
function servedWhileBusy(learning: WithLearned, now: number, wait: number): number | undefined {
  if (now - learning.lastRefusalAt > RATE_WINDOW_MS) {
    learning.busySince = now;
    learning.busyAdmitted = 0;
    learning.busyFrom = Number.POSITIVE_INFINITY;
    return undefined;
  }
  return learning.busyAdmitted >= MIN_SAMPLE && !inWholeSeconds(wait)
    ? learning.busyAdmitted / (now + wait - learning.busyFrom)
    : undefined;
}

/**
 * The shortest window a rate a refusal taught is counted over (see `paceAt`): a second, the
 * window most servers count.
 */
export const RATE_WINDOW_MS = 1_000;

/**
 * Paces `key` at `limit` per `windowMs`, a rate a refusal taught, spaced from the block's end
 * (see `adopt`), over a window of at least `RATE_WINDOW_MS` (the fewest permits of the same rate
 * that fill it), unless the sample spent the limit the server named (`spent`: the server's
 * window). The key counts its permits arrival-safe, each from its send until its answer and then
 * for a window, which costs a round trip per window: a bucket's exact waits (Traefik's
 * `X-Retry-In`, a few ms) taught samples of 3 permits over 180 ms, and through 5-60 ms of jitter
 * a rate counted over its sample paced the key at 0.7 of it. A window lengthened for a slower
 * rate instead (`retime`) held the permits of the faster one as long: a rate cut five times
 * stood 2 s (`measure:arrivals`, a GCRA saying `X-Retry-In`).
 */
function paceAt(
  states: KeyStates,
  key: string,
  now: number,
  limit: number,
  windowMs: number,
  spent = false,
): void {
  if (windowMs < RATE_WINDOW_MS && !spent) {
    const perMs = limit / windowMs;
    limit = Math.ceil(perMs * RATE_WINDOW_MS);
    windowMs = limit / perMs;
  }
  adopt(states, key, now, Math.min(limit, MAX_LOGGED), windowMs, 'rate', {
    inUseUntilBlockEnds: spent,
  });
}

/** A wait of whole seconds (`Retry-After`'s), rounded up by up to a second. */
function inWholeSeconds(waitMs: number): boolean {
  return waitMs >= 1_000 && waitMs % 1_000 === 0;
}

/**
 * The server's window, read from a refusal at `now` of a request sent at `sentAt` that said to
 * wait `waitMs`, for a sample whose first request was sent at `firstAt`: from then until the
 * wait ends. A wait in whole seconds (`Retry-After`'s) is rounded up by up to a second, so the
 * window is read as a whole number of seconds, as servers set them: the fewest past the
 * earliest end the sample allows (the send span less the refused request's round trip, the
 * wait a second early).
 */
export function windowOfWait(firstAt: number, now: number, sentAt: number, waitMs: number): number {
  if (!inWholeSeconds(waitMs)) return now + waitMs - firstAt;
  const earliest = sentAt - (now - sentAt) - firstAt + waitMs - 1_000;
  return Math.max(1, Math.floor(earliest / 1_000) + 1) * 1_000;
}

/**
 * The server admitted a request of the sample a refusal with a wait taught the key's rate from,
 * answered after that refusal (it was on its way then: a burst's answers come in any order, and
 * a quarter of a slow start's burst came after the refusal through 5-60 ms of jitter). The
 * sample was one larger: so is the rate, and the most it may grow to.
 */
export function admittedLate(state: WithLearned): void {
  const learned = state.learned;
  if (learned?.policy.source !== 'rate' || learned.counter.retimed === undefined) return;
  const grown = (state.sampleSize + 1) / state.sampleSize;
  state.sampleSize++;
  retime(state, learned.policy.windowMs / grown);
  state.sampled?.scale(grown);
}

/**
 * The server admitted a request of a key paced by a rate a refusal with a wait taught: the rate
 * grows if its `SampledRate` says so (the same permits, counted over a shorter window).
 */
export function grow(state: WithLearned, now: number, sentAt: number): void {
  const learned = state.learned;
  if (learned?.policy.source !== 'rate' || learned.counter.retimed === undefined) return;
  const { limit, windowMs } = learned.policy;
  const ratePerMs = state.sampled?.answered(now, sentAt, limit / windowMs, state.configuredPerMs);
  if (ratePerMs !== undefined) retime(state, limit / ratePerMs);
}

/**
 * A key whose own limit the server confirmed, refused with a wait: its own policy, whose
 * accounting let the network bunch arrivals past the limit (a sliding log counted at the send,
 * a bucket's burst), is learned as the server's, counted arrival-safe where the pacer hears
 * every answer (see `adopt`). Learning the refusal's sample instead read @fastify/rate-limit's
 * whole-second `Retry-After: 1` at a window's edge as 59 per 1.5 s, and held a sliding log of
 * its limit to 0.6x of it for good. False when there is nothing to learn.
 */
function adoptOwnArrivalSafe(states: KeyStates, key: string, now: number): boolean {
  if (!states.answered()) return false;
  const own = ownPolicy(states, key, states.compiled(key).limit);
  if (own === undefined || own.algorithm === 'arrival-safe') return false;
  return adopt(states, key, now, own.limit, own.windowMs, 'server') !== undefined;
}
