import { strategyFor } from './algorithms/index.js';
import { ArrivalSafe, arrivalSafe } from './algorithms/arrival-safe.js';
import { slidingLog } from './algorithms/sliding-log.js';
import { slidingWindow } from './algorithms/sliding-window.js';
import { inUseOf, type Strategy } from './algorithms/strategy.js';
import { tokenBucket } from './algorithms/token-bucket.js';
import type { CompiledPolicy } from './compile.js';
import { type LearnedLimit, type LearnedSource, WithLearned } from './learned.js';
import { type Algorithm, type ResolvedPolicy, resolvePolicy } from './policy.js';
import { MAX_DELAY_MS } from './signal.js';
import { SlowStart } from './slow-start.js';

/**
 * The most permits a learned window is counted with an exact log for; a larger advertised limit
 * is counted with a sliding-window counter (two numbers), so a server's claim costs O(1) memory
 * per key whatever it says (`q=1e8` would otherwise fill a log of 1e8 entries).
 */
export const MAX_LOGGED = 1_000;

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
  /** Whether a store learns the rate of bare refusals for every client (`sharesRates`). */
  sharesRates(): boolean;
  /** Whether a store hears the server's counts and blocks at their 0 (`storeHearsCounts`). */
  storeHearsCounts(): boolean;
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
export function adopt(
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
  // settles its permits, so there a sliding log. A bucket too, with its limit as the burst (a
  // GCRA's count at arrival, see `ArrivalSafe.answeredTat`): a token bucket counted at the send
  // let jitter bunch the arrivals of a bucket spent to its last permit (a GCRA of 20 per second
  // through 5-60 ms each way refused 3-5 requests after the first two windows).
  const algorithm: Algorithm = bucket
    ? states.answered() && limit <= MAX_LOGGED
      ? arrivalSafe
      : tokenBucket
    : limit > MAX_LOGGED
      ? slidingWindow
      : states.answered()
        ? arrivalSafe
        : slidingLog;
  // A rate a refusal taught is paced from the start, without a first window at once: the
  // server's window is full of the sample that taught it (and of its refusals, which HAProxy
  // counts too). A burst when the block ended was refused whole.
  const burst =
    source === 'rate' && algorithm === arrivalSafe
      ? { burst: 1 }
      : bucket && algorithm === arrivalSafe
        ? { burst: limit }
        : {};
  const resolved = resolvePolicy({ limit, windowMs: window, algorithm, ...burst }, 'policy');
  const counter = strategyFor(resolved);
  if (bucket && counter instanceof ArrivalSafe) counter.countAsBucket();
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
  const inUse = how.inUseUntilBlockEnds === true || respaced ? 0 : inUseOf(before, now, window);
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
 * The learned policy of `state` counted over `windowMs` from now on, its permits kept (a rate
 * grown or cut, a bucket's window bounded closer): nothing for a counter that cannot be retimed.
 */
export function retime(state: WithLearned, windowMs: number): void {
  const learned = state.learned;
  const retimed = learned?.counter.retimed;
  if (learned === undefined || retimed === undefined) return;
  state.learned = {
    ...learned,
    counter: retimed.call(learned.counter, windowMs),
    policy: { ...learned.policy, windowMs },
  };
}

/** The policy of `key`'s own limits of `limit` permits, if any. */
export function ownPolicy(
  states: KeyStates,
  key: string,
  limit: number | undefined,
): ResolvedPolicy | undefined {
  return states.compiled(key).policies.find((policy) => policy.limit === limit);
}

/** Ends the slow start of `key`, keeping its state heard from (a `start` then restarts none). */
export function endSlowStart(states: KeyStates, key: string): void {
  const state = states.stateOf(key);
  if (!(state instanceof WithLearned) || !(state.learned?.counter instanceof SlowStart)) return;
  state.learned = undefined;
  states.replace(key, state);
}

/** Drops the learned policy of `key` if it came from `source`. */
export function forget(states: KeyStates, key: string, source: LearnedSource): void {
  const state = states.stateOf(key);
  if (!(state instanceof WithLearned) || state.learned?.policy.source !== source) return;
  // Unwrapped, the key pays nothing for learning again; a strike to remember keeps it.
  if (state.struckAt === Number.NEGATIVE_INFINITY) states.replace(key, state.base);
  else {
    state.learned = undefined;
    states.replace(key, state);
  }
}
