import { combine } from './algorithms/all-of.js';
import { type Admits, type Strategy, settleRetry } from './algorithms/strategy.js';
import { allow, type Decision, deny, EPSILON, wholeMs } from './decision.js';
import type { Policy } from './policy.js';

/**
 * Where a key's learned policy came from:
 * - `'server'`: the server advertised it (`RateLimit-Policy`), see `RateLimiter.observe`;
 * - `'rate'`: refusals without a policy taught it (AIMD), see `RateLimiter.refused`;
 * - `'client'`: set with `RateLimiter.learn` (the paced fetch's probe of an unknown server).
 */
export type LearnedSource = 'server' | 'rate' | 'client';

/** A key's learned policy as `policyOf(key).learned` shows it. */
export interface LearnedPolicy {
  /** Permits per window (1 for a learned rate: one permit every `windowMs`). */
  readonly limit: number;
  /** The window in ms. */
  readonly windowMs: number;
  readonly source: LearnedSource;
}

/**
 * AIMD, for a server that refuses without saying its policy (nginx `limit_req`):
 *
 * - `STRIKES` within `STRIKE_MS`: what a key needs to learn a rate at all. One or two refusals
 *   are often network jitter against a policy that is right (arrivals bunched up on the way;
 *   the paced fetch's backoff absorbs them); a policy that is too fast earns a wall of them.
 * - `CUT`: each cut multiplies the learned rate by it; the first cut, the key's own fastest
 *   rate. Once a rate is learned, one refusal of a request sent since the last cut cuts again.
 * - `RECOVERY_MS`: every permit taken raises the rate, so that it grows back by the rate it was
 *   cut to over this much steady sending (linear in time, as TCP's congestion avoidance). A
 *   permit adds at most that much, so a server that refuses every request brings the rate down
 *   to one request per `RECOVERY_MS`, and no lower.
 *
 * One permit at a time (no burst). Back at the key's own rate, the learned rate is dropped.
 */
export const AIMD = Object.freeze({
  STRIKES: 3,
  STRIKE_MS: 1_000,
  CUT: 0.5,
  RECOVERY_MS: 5_000,
});

/** A learned policy as it is enforced: its state, and what to report of it. */
export interface Lesson {
  readonly part: Strategy;
  readonly policy: LearnedPolicy;
  /** For `'server'`: ticker time of the last answer that opened the server's window. */
  openedAt: number;
}

/**
 * A key's state once it has learned a policy: the configured state (`base`) and the learned
 * one must both allow, as `AllOf`; the learned part is charged at most its capacity (a request
 * bigger than the server's whole window takes all of it rather than waiting forever). Keys
 * without a lesson never see this class, so they pay nothing for it.
 */
export class Learned implements Strategy {
  /** Ticker time of the first of `strikes` refusals without a policy (AIMD, before a rate). */
  struckAt = Number.NEGATIVE_INFINITY;
  strikes = 0;

  constructor(
    readonly base: Strategy,
    public lesson: Lesson | undefined,
    /** The configured fastest rate (permits per ms): a learned rate is dropped there. */
    readonly configuredPerMs: number,
  ) {}

  get capacity(): number {
    return this.base.capacity;
  }

  tryAcquire(now: number, cost: number): Decision {
    const lesson = this.lesson;
    if (lesson === undefined) return this.base.tryAcquire(now, cost);
    const { part } = lesson;
    const charge = cost < part.capacity ? cost : part.capacity;
    const learned = part.peek(now, charge);
    if (!learned.allowed) return combine([this.base.peek(now, cost), learned]);
    const configured = this.base.tryAcquire(now, cost);
    if (!configured.allowed) return combine([configured, learned]);
    const taken = part.tryAcquire(now, charge);
    if (part instanceof AdaptiveRate && part.ratePerMs >= this.configuredPerMs) {
      this.lesson = undefined;
    }
    return combine([configured, taken]);
  }

  peek(now: number, cost: number): Decision {
    const lesson = this.lesson;
    if (lesson === undefined) return this.base.peek(now, cost);
    const { part } = lesson;
    return combine([
      this.base.peek(now, cost),
      part.peek(now, cost < part.capacity ? cost : part.capacity),
    ]);
  }

  level(now: number): number {
    const level = this.base.level(now);
    const learned = this.lesson?.part.level(now) ?? level;
    return learned < level ? learned : level;
  }

  isAtRest(now: number): boolean {
    return this.base.isAtRest(now) && (this.lesson?.part.isAtRest(now) ?? true);
  }

  restsAt(now: number): number {
    const at = this.base.restsAt(now);
    const learned = this.lesson?.part.restsAt(now) ?? at;
    return learned > at ? learned : at;
  }

  lowerRemaining(now: number, remaining: number): void {
    this.base.lowerRemaining(now, remaining);
    this.lesson?.part.lowerRemaining(now, remaining);
  }
}

/**
 * The learned rate of AIMD: a bucket of one permit refilled at `ratePerMs`, which `cut` halves
 * and every permit taken raises (see `AIMD`). Rates only change at a permit or a cut, so a wait
 * it reports holds unless the server refuses again.
 */
export class AdaptiveRate implements Strategy, Admits {
  readonly capacity = 1;
  private tokens = 0;
  private stamp: number;
  /** The rate right after the last cut: it grows back by this much per `RECOVERY_MS`. */
  private floor: number;
  /** Permits taken since the last cut: a refusal only counts if one was sent after the cut. */
  private taken = 0;

  /** A rate just cut to `ratePerMs` at `now` (the server refused): it starts empty. */
  constructor(
    public ratePerMs: number,
    now: number,
  ) {
    this.stamp = now;
    this.floor = this.ratePerMs;
  }

  private tokensAt(now: number): number {
    const elapsed = now - this.stamp;
    if (!(elapsed > 0)) return this.tokens;
    const refilled = this.tokens + elapsed * this.ratePerMs;
    return refilled < 1 ? refilled : 1;
  }

  /**
   * The server refused a request: halve the rate, and start empty. Refusals of requests sent
   * before the last cut (nothing taken since) say nothing new: false, and nothing changes.
   */
  cut(now: number): boolean {
    if (this.taken === 0) return false;
    this.tokens = 0;
    if (now > this.stamp) this.stamp = now;
    this.ratePerMs *= AIMD.CUT;
    this.floor = this.ratePerMs;
    this.taken = 0;
    return true;
  }

  level(now: number): number {
    return Math.max(0, this.tokensAt(now));
  }

  fits(at: number, cost: number): boolean {
    return this.tokensAt(at) >= cost - EPSILON;
  }

  tryAcquire(now: number, cost: number): Decision {
    const tokens = this.tokensAt(now);
    if (tokens < cost - EPSILON) return this.denial(now, cost, tokens);
    this.tokens = tokens - cost;
    if (now > this.stamp) this.stamp = now;
    this.taken++;
    // Linear in time: a permit comes every 1/r ms, so it adds floor / (RECOVERY_MS * r), at
    // most `floor` (a rate so slow that permits are further apart than RECOVERY_MS).
    this.ratePerMs += this.floor * Math.min(1, 1 / (AIMD.RECOVERY_MS * this.ratePerMs));
    return allow(0, wholeMs((1 - this.tokens) / this.ratePerMs), 1);
  }

  peek(now: number, cost: number): Decision {
    const tokens = this.tokensAt(now);
    if (tokens < cost - EPSILON) return this.denial(now, cost, tokens);
    return allow(0, wholeMs((1 - tokens + cost) / this.ratePerMs), 1);
  }

  private denial(now: number, cost: number, tokens: number): Decision {
    const retryAfterMs = settleRetry(this, now, cost, (cost - tokens) / this.ratePerMs);
    return deny('rate', retryAfterMs, 0, wholeMs((1 - tokens) / this.ratePerMs), 1);
  }

  isAtRest(now: number): boolean {
    return this.tokensAt(now) >= 1;
  }

  restsAt(now: number): number {
    return now + Math.max(0, 1 - this.tokensAt(now)) / this.ratePerMs;
  }

  lowerRemaining(now: number, remaining: number): void {
    if (this.tokensAt(now) <= remaining) return;
    this.tokens = remaining;
    if (now > this.stamp) this.stamp = now;
  }
}

/**
 * Internal: what the paced fetch tells the limiter beyond the server's count, riding on
 * `pacer.observe(key, quota)` under this symbol until the pacer has methods of its own for
 * `RateLimiter.learn` and `RateLimiter.refused`. Not exported from the package.
 */
export const NOTE: unique symbol = Symbol('fetch-pacer.learning-note');

export interface LearningNote {
  /** Learn this as a `'client'` policy, unless the key has learned one already. */
  readonly probe?: Policy;
  /** Drop a `'client'` policy (the probe was answered without a policy); keep any other. */
  readonly unprobe?: boolean;
  /** A refusal without a policy: `RateLimiter.refused(key)`. */
  readonly refused?: boolean;
}
