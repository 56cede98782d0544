import { strategyFor } from './algorithms/index.js';
import { combine } from './algorithms/all-of.js';
import { arrivalSafe } from './algorithms/arrival-safe.js';
import { slidingLog } from './algorithms/sliding-log.js';
import { slidingWindow } from './algorithms/sliding-window.js';
import type { Strategy } from './algorithms/strategy.js';
import { tokenBucket } from './algorithms/token-bucket.js';
import { AdaptiveRate, AIMD, MIN_SAMPLE } from './adaptive-rate.js';
import type { CompiledPolicy } from './compile.js';
import { type Decision, EPSILON } from './decision.js';
import { type Algorithm, resolvePolicy } from './policy.js';
export { AdaptiveRate, AIMD } from './adaptive-rate.js';
import { SampledRate } from './sampled-rate.js';
import { MAX_DELAY_MS, type ServerSignal, serverDelay } from './signal.js';
import { SlowStart } from './slow-start.js';

/**
 * Where a key's learned policy came from:
 * - `'server'`: the server advertised it (a `policy` signal);
 * - `'rate'`: refusals without a policy taught it (`refusal` signals: the requests admitted
 *   before a refusal over the time until its Retry-After, or AIMD without one);
 * - `'client'`: the client holds a key it knows nothing of to it (a `probe` signal);
 * - `'start'`: a slow start (a `start` signal, for a key never heard from): `limit` requests in flight,
 *   one more per answer (`windowMs` is 0: it paces by answers, not by time).
 */
export type LearnedSource = 'server' | 'rate' | 'client' | 'start';

/** A key's learned policy as `policyOf(key).learned` shows it. */
export interface LearnedPolicy {
  /** Permits per window (1 for a learned rate: one permit every `windowMs`). */
  readonly limit: number;
  /** The window in ms. */
  readonly windowMs: number;
  readonly source: LearnedSource;
}

/** A learned policy as it is enforced: its counting state, and what to report of it. */
export interface LearnedLimit {
  readonly counter: Strategy;
  readonly policy: LearnedPolicy;
  /** For `'server'`: ticker time of the last answer that opened the server's window. */
  openedAt: number;
  /**
   * For a window inferred from a reset (`PolicySignal.inferred`): the answers since the one
   * that opened it, while their counts only fell: the fewest left, and when the first of them
   * said the server resets (see `disprovesWindow`).
   */
  run?: { remaining: number; readonly ends: number } | undefined;
}

/**
 * A key's state once it has learned a policy: the configured state (`base`) and the learned
 * one must both allow, as `AllOf`; the learned part is charged at most its capacity (a request
 * bigger than the server's whole window takes all of it rather than waiting forever). Keys
 * that learned nothing never see this class, so they pay nothing for it.
 */
export class WithLearned implements Strategy {
  /** Ticker time of the first of `strikes` refusals without a policy (AIMD, before a rate). */
  struckAt = Number.NEGATIVE_INFINITY;
  strikes = 0;
  /**
   * Requests the server admitted (`answered` signals) since the last refusal, and when the
   * first of them was sent: a rate's sample.
   */
  admitted = 0;
  firstAdmittedAt = Number.NEGATIVE_INFINITY;
  /** When the last refusal that taught something came: answers to requests sent before it are echoes. */
  lastRefusalAt = Number.NEGATIVE_INFINITY;
  /** The limit the server's counts named without a window (`QuotaSignal.limit`); 0 if none. */
  namedLimit = 0;
  /**
   * The server's resets were found to be a bucket's refill, not a window's end (see
   * `disprovesWindow`): windows inferred from them are read as buckets from then on.
   */
  resetsRefill = false;
  /** When the server last admitted a request of the key (an `answered` signal), if since `heardSince`. */
  admittedAt = Number.NEGATIVE_INFINITY;
  /**
   * The server's counts confirmed the key's own limit (a window inferred for it, see
   * `applySignal`), so the key kept its own policy: a refusal with a wait then says that its
   * own accounting let arrivals bunch past that limit, not that its rate is wrong (see `refused`).
   */
  confirmed = false;
  /** What a rate refusals with a wait taught may grow to, and when (see `SampledRate`). */
  sampled: SampledRate | undefined;

  constructor(
    readonly base: Strategy,
    public learned: LearnedLimit | undefined,
    /** The configured fastest rate (permits per ms): a learned rate is dropped there. */
    readonly configuredPerMs: number,
    /**
     * Since when this state hears the key's answers: when it was made, or -Infinity for a slow
     * start's (made at the key's first call: every answer was heard).
     */
    private readonly heardSince: number,
  ) {}

  /**
   * When the server last admitted a request of the key, as far as this state knows: before
   * `heardSince` it may have (a configured key is wrapped at its first refusal), so that counts.
   */
  lastAdmission(): number {
    return this.admittedAt > this.heardSince ? this.admittedAt : this.heardSince;
  }

  get capacity(): number {
    return this.base.capacity;
  }

  tryAcquire(now: number, cost: number): Decision {
    const learned = this.learned;
    if (learned === undefined) return this.base.tryAcquire(now, cost);
    const { counter: part } = learned;
    const charge = cost < part.capacity ? cost : part.capacity;
    const verdict = part.peek(now, charge);
    if (!verdict.allowed) return combine([this.base.peek(now, cost), verdict]);
    const configured = this.base.tryAcquire(now, cost);
    if (!configured.allowed) return combine([configured, verdict]);
    const taken = part.tryAcquire(now, charge);
    this.dropIfBack(now, part);
    return combine([configured, taken]);
  }

  /**
   * Takes `cost` from the learned counter alone, not from the key's own policy: for a pacer
   * whose store counts that policy (see `RateLimiter.takeLearned`). Nothing learned: allowed
   * as the own policy would (its state is never taken from then, so it only tells capacity).
   */
  takeLearned(now: number, cost: number): Decision {
    const learned = this.learned;
    if (learned === undefined) return this.base.peek(now, cost);
    const { counter: part } = learned;
    const taken = part.tryAcquire(now, cost < part.capacity ? cost : part.capacity);
    if (taken.allowed) this.dropIfBack(now, part);
    return taken;
  }

  /** A rate AIMD learned that is back at the key's own is dropped. */
  private dropIfBack(now: number, part: Strategy): void {
    if (part instanceof AdaptiveRate && part.ratePerMs >= this.configuredPerMs) {
      // Back at its own rate: the key goes on from what the learned rate left it. What its own
      // bucket refilled meanwhile was never the server's to give (the server saw the key send
      // all along): spent at once, it was a burst into a sliding log's window.
      this.base.lowerRemaining(now, part.level(now));
      this.learned = undefined;
    }
  }

  peek(now: number, cost: number): Decision {
    const learned = this.learned;
    if (learned === undefined) return this.base.peek(now, cost);
    const { counter: part } = learned;
    return combine([
      this.base.peek(now, cost),
      part.peek(now, cost < part.capacity ? cost : part.capacity),
    ]);
  }

  level(now: number): number {
    const level = this.base.level(now);
    const learned = this.learned?.counter.level(now) ?? level;
    return learned < level ? learned : level;
  }

  isAtRest(now: number): boolean {
    return this.base.isAtRest(now) && (this.learned?.counter.isAtRest(now) ?? true);
  }

  restsAt(now: number): number {
    const at = this.base.restsAt(now);
    const learned = this.learned?.counter.restsAt(now) ?? at;
    return learned > at ? learned : at;
  }

  lowerRemaining(now: number, remaining: number, sentAt?: number): void {
    this.base.lowerRemaining(now, remaining);
    this.learned?.counter.lowerRemaining(now, remaining, sentAt);
  }

  catchUp(now: number, lateMs: number): void {
    this.base.catchUp?.(now, lateMs);
    this.learned?.counter.catchUp?.(now, lateMs);
  }

  settle(now: number, cost: number): void {
    this.base.settle?.(now, cost);
    const counter = this.learned?.counter;
    counter?.settle?.(now, cost < counter.capacity ? cost : counter.capacity);
  }
}

/**
 * The most permits a learned window is counted with an exact log for; a larger advertised limit
 * is counted with a sliding-window counter (two numbers), so a server's claim costs O(1) memory
 * per key whatever it says (`q=1e8` would otherwise fill a log of 1e8 entries).
 */
const MAX_LOGGED = 1_000;

/** What the learning needs of the limiter that holds the keys (see `RateLimiter`). */
export interface KeyStates {
  /** The state of `key`, made if there is room for it (undefined when there is none). */
  stateFor(key: string, now: number): Strategy | undefined;
  /** The state of `key` if it has one. */
  stateOf(key: string): Strategy | undefined;
  /** Puts `state` in place of `key`'s (a state may rest sooner or later now). */
  replace(key: string, state: Strategy): void;
  compiled(key: string): CompiledPolicy;
  blockUntil(key: string, until: number): void;
  /** Ends the block of `key`, if any. */
  unblock(key: string): void;
  /** Whether every permit taken is settled at its answer (a pacer's): learned windows then count arrival-safe. */
  answered(): boolean;
}

/**
 * What a signal of the server does to `key` (checked by `assertSignal`) at `now`:
 *
 * - `quota`: the local credit is lowered to at most `remaining` (never raised), and with
 *   nothing remaining the key is blocked for `resetMs`;
 * - `policy`: the key adopts `limit` per `windowMs` as its learned policy (exact: never more
 *   than `limit` in any window), `remaining` is that policy's count, and the block ends no
 *   later than one window after the answer that opened the server's window (the one that said
 *   `limit - 1`): a reset in whole seconds would hold the key up to a second too long;
 * - `refusal`: with `retryAfterMs` the key is blocked that long; without, AIMD (`refused`);
 * - `probe`: the key is held to the probe's policy, unless it learned one already;
 * - `answered`: a probe's policy is dropped (any other learned policy stays).
 *
 * Every delay is cut to `MAX_DELAY_MS`, every learned window too.
 */
export function applySignal(
  states: KeyStates,
  key: string,
  now: number,
  signal: ServerSignal,
): void {
  switch (signal.kind) {
    case 'refusal': {
      const wait = serverDelay(signal.retryAfterMs);
      if (wait !== undefined && wait > 0) states.blockUntil(key, now + wait);
      refused(states, key, now, wait, signal.sentAt ?? now);
      return;
    }
    case 'probe': {
      const state = states.stateOf(key);
      if (state instanceof WithLearned && state.learned !== undefined) return;
      adopt(states, key, now, signal.limit, signal.windowMs, 'client');
      return;
    }
    case 'start': {
      const state = states.stateFor(key, now);
      // A key that learned anything (or whose slow start ended) has been heard from: only a
      // key new or at rest starts slow. Sent at every call, so it must not restart one.
      if (state === undefined || state instanceof WithLearned) return;
      const learned: LearnedLimit = {
        counter: new SlowStart(),
        policy: { limit: 1, windowMs: 0, source: 'start' },
        openedAt: Number.NEGATIVE_INFINITY,
      };
      const peakPerMs = states.compiled(key).peakPerMs;
      states.replace(key, new WithLearned(state, learned, peakPerMs, Number.NEGATIVE_INFINITY));
      return;
    }
    case 'answered': {
      const state = states.stateOf(key);
      const sentAt = signal.sentAt ?? now;
      if (state instanceof WithLearned) state.admittedAt = now;
      // Counted in a rate's sample only if sent after the last refusal that taught one.
      if (state instanceof WithLearned && sentAt >= state.lastRefusalAt) {
        if (state.admitted++ === 0) state.firstAdmittedAt = sentAt;
        const counter = state.learned?.counter;
        if (counter instanceof SlowStart) {
          counter.grow();
          return;
        }
        if (counter instanceof AdaptiveRate) counter.answered(now, sentAt);
        else if (state.sampled !== undefined) grow(state, now, sentAt);
      }
      forget(states, key, 'client');
      return;
    }
  }
  const { remaining } = signal;
  const reset = serverDelay(signal.resetMs);
  const ends = reset !== undefined && reset > 0 ? now + reset : undefined;
  // An inferred window of the key's own limit confirms its policy: that ends a slow start.
  const confirms =
    signal.kind === 'policy' &&
    signal.inferred === true &&
    states.compiled(key).limit === signal.limit;
  if (confirms) {
    endSlowStart(states, key);
    const state = states.stateOf(key);
    if (state instanceof WithLearned) state.confirmed = true;
  }
  if (signal.kind === 'policy' && !confirms) {
    const state = states.stateOf(key);
    const refills =
      signal.inferred === true &&
      state instanceof WithLearned &&
      state.resetsRefill &&
      reset !== undefined &&
      remaining !== undefined &&
      remaining < signal.limit;
    // A reset found to be a bucket's refill (one permit's time when one was used): the window
    // is the time to refill the whole limit, as for a bucket the headers name (OpenAI's). Once
    // learned so, it is kept: one permit's reset, less the network delay, times the limit
    // would make it up to 20 times too short.
    const kept = state instanceof WithLearned ? state.learned : undefined;
    const learned =
      refills && kept?.policy.source === 'server' && kept.policy.limit === signal.limit
        ? kept
        : adopt(
            states,
            key,
            now,
            signal.limit,
            refills ? (reset * signal.limit) / (signal.limit - remaining) : signal.windowMs,
            'server',
            { bucket: refills || signal.bucket === true },
          );
    if (learned !== undefined) {
      if (remaining === undefined) return;
      const { windowMs } = learned.policy;
      if (remaining === learned.policy.limit - 1) learned.openedAt = now;
      if (signal.inferred === true && !refills && ends !== undefined) {
        learned.run = { remaining, ends };
      }
      // Permits the log does not know of (another client's) count a whole window from now,
      // unless the server's window resets sooner (a fixed window): then only its block holds.
      if (ends === undefined || ends >= now + windowMs) {
        learned.counter.lowerRemaining(now, remaining);
      }
      if (remaining === 0 && ends !== undefined && hasCredit(states, key, now)) {
        const reopens = learned.openedAt + windowMs;
        states.blockUntil(key, reopens > now && reopens < ends ? reopens : ends);
      }
      return;
    }
  }
  if (remaining === undefined) return;
  if (signal.kind === 'quota') {
    nameLimit(states.stateOf(key), signal.limit);
    if (signal.limit !== undefined && !states.answered()) confirmShared(states, key, signal.limit);
  }
  if (remaining === 0) spentWindow(states.stateOf(key));
  if (
    signal.kind === 'quota' &&
    ends !== undefined &&
    disprovesWindow(states, key, now, remaining, ends)
  ) {
    return;
  }
  // Blocked only if the key's own count still had credit: a count that agrees with the
  // server's knows better when the next permit frees (a sliding server's reset is when it is
  // empty again, not when its next permit frees).
  if (remaining === 0 && ends !== undefined && hasCredit(states, key, now)) {
    // The block holds the key until the server counts afresh. Lowered to 0 as well, the key's
    // own count would hold it a whole window of its own: a minute for a server whose window
    // resets in 5 s.
    states.blockUntil(key, ends);
    return;
  }
  // A slow start reads a count by the time its request was sent (`SlowStart.lowerRemaining`).
  const sentAt = signal.kind === 'quota' ? signal.sentAt : undefined;
  states.stateFor(key, now)?.lowerRemaining(now, remaining, sentAt);
}

/**
 * Whether a count of `key` (`remaining`, the server resetting at `ends`) shows that the window
 * its learned policy inferred from a reset was none: within one window the counts fell, yet the
 * reset moved later by more than the window and a half (network delay and a whole-second
 * reset's rounding move it less). A bucket's reset is when it is full again, one permit's
 * time per permit used (a GCRA: 50 ms for 20 per second after one request, read as a window of
 * 20 per 50 ms). The policy is then learned again as a bucket of the time to refill the whole
 * limit, and so is every window inferred for the key later (`resetsRefill`).
 */
function disprovesWindow(
  states: KeyStates,
  key: string,
  now: number,
  remaining: number,
  ends: number,
): boolean {
  const state = states.stateOf(key);
  if (!(state instanceof WithLearned)) return false;
  const { learned } = state;
  const run = learned?.run;
  if (learned === undefined || run === undefined) return false;
  if (remaining >= run.remaining) {
    // A new window (or answers out of order): a new run.
    learned.run = { remaining, ends };
    return false;
  }
  run.remaining = remaining;
  const { limit, windowMs } = learned.policy;
  if (ends - run.ends <= 1.5 * windowMs + 100) return false;
  state.resetsRefill = true;
  learned.run = undefined;
  const windowOfLimit = ((ends - now) * limit) / (limit - remaining);
  adopt(states, key, now, limit, windowOfLimit, 'server', { bucket: true });
  return true;
}

/** Keeps the limit a server's count named (see `QuotaSignal.limit`) on a key that learns. */
function nameLimit(state: Strategy | undefined, limit: number | undefined): void {
  if (state instanceof WithLearned && Number.isInteger(limit) && (limit as number) > 0) {
    state.namedLimit = Math.min(limit as number, MAX_LOGGED);
  }
}

/** A count of the server's said nothing remains: a rate a refusal taught must not grow past it. */
function spentWindow(state: Strategy | undefined): void {
  if (state instanceof WithLearned) state.sampled?.spent();
}

/** Whether `key` would still have a whole permit by its own count. */
function hasCredit(states: KeyStates, key: string, now: number): boolean {
  const state = states.stateOf(key);
  // A slow start counts requests in flight and the server's count, not when a permit frees:
  // only the key's own policy may know that better than the server's reset.
  const counted =
    state instanceof WithLearned && state.learned?.counter instanceof SlowStart
      ? state.base
      : state;
  return counted === undefined || counted.level(now) >= 1 - EPSILON;
}

/**
 * A refusal of `key` (a policy the server advertised is not second-guessed):
 *
 * - with a wait (`Retry-After`), the requests admitted since the key's last refusal, over the
 *   time from the first of them until the wait ends, are the server's window: the key learns
 *   that rate (`'rate'`), counted arrival-safe. Refusals with nothing admitted since the last
 *   one are echoes of the same excess and teach nothing. Each refusal measures again, so an
 *   estimate that was too fast is corrected by the next refusal it earns;
 * - without one, AIMD (a bare 429, nginx's `limit_req`), see `AIMD`: the third refusal within
 *   a second makes the key learn a rate: half its own fastest rate, or the rate the server
 *   admitted since the last refusal (over at least `AIMD.SEED_MS`) if that is slower, as it
 *   always is for zero configuration. From then on the rate pauses, probes, cuts and grows by
 *   itself (`AdaptiveRate`); it is dropped once it is back at the key's own rate.
 *
 * Zero configuration's slow start is halved either way.
 */
function refused(
  states: KeyStates,
  key: string,
  now: number,
  wait: number | undefined,
  sentAt: number,
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
    const { admitted, firstAdmittedAt } = learning;
    learning.admitted = 0;
    learning.firstAdmittedAt = Number.NEGATIVE_INFINITY;
    learning.lastRefusalAt = now;
    // A wait in whole seconds (Retry-After's) is up to a second early of the truth: read as the
    // middle of that second. An estimate too fast is measured again by the refusal it earns; one
    // too slow would stay so (the earliest made too many refusals, the latest stayed slow:
    // measure:arrivals).
    if (learning.confirmed) {
      if (adoptOwnArrivalSafe(states, key, now)) return;
      // A store counts the key's confirmed policy for every client, and this pacer's
      // admissions are only its share of them: a rate taught by them held it to that share
      // (three processes on one store against a simulated sliding log through 5-60 ms of
      // jitter: one refused learned 33 per 3.9 s, and the 300 calls took 14.4 s where a fair
      // share takes 5.1 s). The block, shared through the store, is the answer.
      if (!states.answered()) return;
    }
    const wholeSeconds = wait >= 1_000 && wait % 1_000 === 0;
    const earliest = wholeSeconds ? wait - 500 : wait;
    const windowMs = now + earliest - firstAdmittedAt;
    // The rate that paced the key when refused, if a refusal taught it: too fast.
    const taught =
      current?.policy.source === 'rate' && current.counter.retimed !== undefined
        ? current.policy.limit / current.policy.windowMs
        : undefined;
    if (admitted >= MIN_SAMPLE && windowMs >= 1) {
      // The fastest rate the sample allows: its wait as early as the rounding allows.
      const fastestMs = Math.max(1, now + (wholeSeconds ? wait - 1_000 : wait) - firstAdmittedAt);
      learning.sampled ??= new SampledRate(now);
      const floorPerMs = learning.sampled.refused(now, now + wait, taught, admitted / fastestMs);
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
      const windowOfLimit =
        floorPerMs !== undefined && floorPerMs > sampledPerMs
          ? limit / floorPerMs
          : (windowMs * limit) / admitted;
      adopt(states, key, now, Math.min(limit, MAX_LOGGED), windowOfLimit, 'rate', {
        inUseUntilBlockEnds: spent,
      });
    } else learning.sampled?.refused(now, now + wait, taught);
    return;
  }
  if (current?.counter instanceof SlowStart) current.counter.cut();
  // A server that stopped admitting the key (or never did) refuses everything: no rate paces
  // it, and the key's callers spend their retries (see `AIMD.ADMITTED_MS`).
  const admits = now - learning.lastAdmission() <= AIMD.ADMITTED_MS;
  if (current?.counter instanceof AdaptiveRate) {
    if (admits) current.counter.refused(now, sentAt);
    else forget(states, key, 'rate');
    return;
  }
  if (now - learning.struckAt > AIMD.STRIKE_MS) {
    learning.struckAt = now;
    learning.strikes = 0;
  }
  if (++learning.strikes < AIMD.STRIKES || !admits) return;
  // The first cut halves the key's own rate (the rate it was really sending at is not known
  // any more: by the time its refusals are read, its own bucket may have refilled), or starts
  // at the rate the server admitted since the last refusal, if slower: requests admitted over
  // the time since the first of them, at least `SEED_MS` (a slow start's sample is a burst
  // into the server's first window: 60 in 0.3 s from a server of 60 per second).
  const { admitted, firstAdmittedAt } = learning;
  const spanMs = Math.max(now - firstAdmittedAt, AIMD.SEED_MS);
  const seen = admitted >= MIN_SAMPLE ? admitted / spanMs : Infinity;
  const ratePerMs = Math.min(peakPerMs * AIMD.SEED_CUT, seen);
  learning.admitted = 0;
  learning.firstAdmittedAt = Number.NEGATIVE_INFINITY;
  // The pauses and probes of the rate take the key over: a block the strikes before earned
  // (the paced fetch's backoff for refusals it could not explain) would only hide when the
  // server counts afresh. A wait the server stated (a Retry-After heard) stays.
  if (learning.lastRefusalAt === Number.NEGATIVE_INFINITY) states.unblock(key);
  learning.learned = {
    counter: new AdaptiveRate(ratePerMs, now, { admitted, spanMs }, peakPerMs),
    policy: { limit: 1, windowMs: 1 / ratePerMs, source: 'rate' },
    openedAt: Number.NEGATIVE_INFINITY,
  };
}

/**
 * The server admitted a request of a key paced by a rate a refusal with a wait taught: the rate
 * grows if its `SampledRate` says so (the same permits, counted over a shorter window).
 */
function grow(state: WithLearned, now: number, sentAt: number): void {
  const learned = state.learned;
  const retimed = learned?.counter.retimed;
  if (learned?.policy.source !== 'rate' || retimed === undefined) return;
  const { limit, windowMs } = learned.policy;
  const ratePerMs = state.sampled?.answered(now, sentAt, limit / windowMs, state.configuredPerMs);
  if (ratePerMs === undefined) return;
  const window = limit / ratePerMs;
  state.learned = {
    ...learned,
    counter: retimed.call(learned.counter, window),
    policy: { limit, windowMs: window, source: 'rate' },
  };
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
  const { limit, policies } = states.compiled(key);
  const own = policies.find((policy) => policy.limit === limit);
  if (own === undefined || own.algorithm === 'arrival-safe') return false;
  return adopt(states, key, now, own.limit, own.windowMs, 'server') !== undefined;
}

/**
 * Makes `limit` per `windowMs` the learned policy of `key` (unless it already is, from the same
 * source) and returns it; `undefined` when it is no policy (a limit of 0, a window of NaN) or
 * there is no room for the key's state. The window is cut to `MAX_DELAY_MS`.
 *
 * It starts with the permits in use now, as the policy it replaces counts them (or the key's
 * own): learning never hands out credit. It lives in the key's state, so it counts against
 * `maxKeys` and is forgotten with the key at rest.
 */
function adopt(
  states: KeyStates,
  key: string,
  now: number,
  limit: number,
  windowMs: number,
  source: LearnedSource,
  how: {
    /** The server counts with a token bucket (`PolicySignal.bucket`). */
    readonly bucket?: boolean;
    /** The key is blocked until the server counts afresh: nothing in use is carried over. */
    readonly inUseUntilBlockEnds?: boolean;
  } = {},
): LearnedLimit | undefined {
  const { bucket = false } = how;
  if (!(Number.isInteger(limit) && limit > 0 && windowMs > 0)) return undefined;
  const window = windowMs < MAX_DELAY_MS ? windowMs : MAX_DELAY_MS;
  const state = states.stateFor(key, now);
  if (state === undefined) return undefined;
  const current = state instanceof WithLearned ? state.learned : undefined;
  if (
    current !== undefined &&
    current.policy.source === source &&
    current.policy.limit === limit &&
    (current.policy.windowMs === window ||
      // A window the headers do not state is derived from an answer's reset, which wobbles with
      // the network delay (a fixed window's: 950-990 ms for 1 s through 5-60 ms of jitter).
      // Re-adopting restarts the count with every permit in use stamped now, a window late:
      // once per window, that held koa-ratelimit's clients to a few requests a second.
      (source === 'server' && Math.abs(current.policy.windowMs - window) <= window / 10))
  ) {
    return current;
  }
  // Arrival-safe where every permit's answer is told (a pacer); a bare limiter's caller never
  // settles its permits, so there a sliding log.
  const algorithm: Algorithm = bucket
    ? tokenBucket
    : limit > MAX_LOGGED
      ? slidingWindow
      : states.answered()
        ? arrivalSafe
        : slidingLog;
  // A rate a refusal taught is paced from the start, without a first window at once: the
  // server's window is full of the sample that taught it (and of its refusals, which HAProxy
  // counts too). A burst when the block ended was refused whole.
  const burst = source === 'rate' && algorithm === arrivalSafe ? { burst: 1 } : {};
  const resolved = resolvePolicy({ limit, windowMs: window, algorithm, ...burst }, 'policy');
  const counter = strategyFor(resolved);
  // A slow start counts requests in flight, not permits in a window: the key's own policy
  // counted every take.
  const before =
    current !== undefined && !(current.counter instanceof SlowStart)
      ? current.counter
      : state instanceof WithLearned
        ? state.base
        : state;
  // A spaced rate in place of another rate a refusal taught starts spaced from the block's end:
  // the permits the old one counted were spread at a rate, over a window that is the sample's
  // length, not the server's (59 per 3.1 s after a long sample), and carried over they held
  // the key a whole such window after the block ended.
  const respaced = source === 'rate' && burst.burst === 1 && current?.policy.source === 'rate';
  const inUse =
    how.inUseUntilBlockEnds === true || respaced
      ? 0
      : Math.ceil(before.capacity - before.level(now) - EPSILON);
  if (inUse > 0) counter.lowerRemaining(now, Math.max(0, limit - inUse));
  const learned: LearnedLimit = {
    counter,
    policy: { limit, windowMs: window, source },
    openedAt: Number.NEGATIVE_INFINITY,
  };
  if (state instanceof WithLearned) state.learned = learned;
  else states.replace(key, new WithLearned(state, learned, states.compiled(key).peakPerMs, now));
  return learned;
}

/**
 * A pacer on a store (it does not hear every answer: `answered()` is false) told a count that
 * names the key's own limit: that confirms it, as an inferred window does (see `applySignal`).
 * The store counts that limit for every client, and an inferred window confirms it only to the
 * client that opened the server's window (the one told `limit - 1`): the others stayed in
 * their slow start, held to the server's count that the rest spent, for seconds (three
 * processes on one store against a simulated sliding log through 5-60 ms of jitter, the store
 * asked fairly: 11.8 s for 300 calls, 7.2 s with this).
 */
function confirmShared(states: KeyStates, key: string, limit: number): void {
  if (states.compiled(key).limit !== limit) return;
  endSlowStart(states, key);
  const state = states.stateOf(key);
  if (state instanceof WithLearned) state.confirmed = true;
}

/** Ends the slow start of `key`, keeping its state heard from (a `start` then restarts none). */
function endSlowStart(states: KeyStates, key: string): void {
  const state = states.stateOf(key);
  if (!(state instanceof WithLearned) || !(state.learned?.counter instanceof SlowStart)) return;
  state.learned = undefined;
  states.replace(key, state);
}

/** Drops the learned policy of `key` if it came from `source`. */
function forget(states: KeyStates, key: string, source: LearnedSource): void {
  const state = states.stateOf(key);
  if (!(state instanceof WithLearned) || state.learned?.policy.source !== source) return;
  // Unwrapped, the key pays nothing for learning again; a strike to remember keeps it.
  if (state.struckAt === Number.NEGATIVE_INFINITY) states.replace(key, state.base);
  else {
    state.learned = undefined;
    states.replace(key, state);
  }
}

/** The learned policy of a key's state as `policyOf(key).learned` shows it, if any. */
export function learnedPolicyOf(state: Strategy | undefined): LearnedPolicy | undefined {
  const learned = state instanceof WithLearned ? state.learned : undefined;
  if (learned === undefined) return undefined;
  const { counter } = learned;
  if (counter instanceof SlowStart) {
    return { limit: Math.floor(counter.window), windowMs: 0, source: 'start' };
  }
  return counter instanceof AdaptiveRate
    ? { limit: 1, windowMs: 1 / counter.ratePerMs, source: 'rate' }
    : learned.policy;
}

/**
 * The sustained rate (permits per ms) of a policy of `ratePerMs` that learned `learned`: the
 * slower of the two. A slow start (`windowMs` 0) paces by answers, not by time.
 */
export function learnedRatePerMs(ratePerMs: number, learned: LearnedPolicy | undefined): number {
  if (learned === undefined || !(learned.windowMs > 0)) return ratePerMs;
  const perMs = learned.limit / learned.windowMs;
  return perMs < ratePerMs ? perMs : ratePerMs;
}

/** The learned counter of a key's state (its capacity bounds the key's), if any. */
export function learnedCounterOf(state: Strategy | undefined): Strategy | undefined {
  return state instanceof WithLearned ? state.learned?.counter : undefined;
}
