import { type Admits, type Strategy, settleRetry } from './algorithms/strategy.js';
import { allow, type Decision, deny, EPSILON, wholeMs } from './decision.js';

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
  /** Shortest time a sample of admitted requests seeds the first rate over (see `refused`). */
  SEED_MS: 1_000,
});

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
