import { combine } from './algorithms/all-of.js';
import type { Strategy } from './algorithms/strategy.js';
import { AdaptiveRate } from './adaptive-rate.js';
import type { Decision } from './decision.js';
import type { SampledRate } from './sampled-rate.js';
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
  /**
   * The last answers (at most five) that left at least `limit - 2` of the limit the server
   * named, oldest first, three numbers each: send time, answer time, count (see
   * `countsShowBucket`).
   */
  openings?: number[] | undefined;
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
  /**
   * Requests the server admitted of those sent since the first of a run of refusals with a
   * wait (each within `RATE_WINDOW_MS` of the last, see refusals.ts), and when the first of
   * them was sent: what a server kept busy serves, echoes and all (see `servedWhileBusy`).
   */
  busyAdmitted = 0;
  busySince = Number.POSITIVE_INFINITY;
  busyFrom = Number.POSITIVE_INFINITY;
  /** When the last refusal that taught something came: answers to requests sent before it are echoes. */
  lastRefusalAt = Number.NEGATIVE_INFINITY;
  /**
   * When the first request of the sample the last refusal taught a rate from was sent (Infinity:
   * none taught): requests sent from then until that refusal, admitted later, join it.
   */
  sampleFrom = Number.POSITIVE_INFINITY;
  /** The requests that sample counts, late ones included (see `admittedLate`). */
  sampleSize = 0;
  /** The limit the server's counts named without a window (`QuotaSignal.limit`); 0 if none. */
  namedLimit = 0;
  /**
   * The server's resets were found to be a bucket's refill, not a window's end (see
   * `disprovesWindow`): windows inferred from them are read as buckets from then on.
   */
  resetsRefill = false;
  /**
   * With `resetsRefill`: the shortest window of the bucket the server's counts still allow
   * (see `refillBound` in learning.ts), tightened by each count; infinite until one bounds it.
   */
  refillMs = Number.POSITIVE_INFINITY;
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

  lowerRemaining(now: number, remaining: number, sentAt?: number, backAt?: number): void {
    this.base.lowerRemaining(now, remaining, sentAt, backAt);
    this.learned?.counter.lowerRemaining(now, remaining, sentAt, backAt);
  }

  heardRoom(now: number, remaining: number, limit: number, sentAt: number): void {
    this.base.heardRoom?.(now, remaining, limit, sentAt);
    this.learned?.counter.heardRoom?.(now, remaining, limit, sentAt);
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
