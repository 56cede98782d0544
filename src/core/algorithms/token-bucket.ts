import { allow, type Decision, deny, EPSILON, wholeMs } from '../decision.js';
import type { ResolvedPolicy } from '../policy.js';
import { type Admits, type Strategy, settleRetry } from './strategy.js';

/**
 * The classic token bucket: `capacity` tokens, refilled at `limit / windowMs` per ms, lazily on
 * each call, fractional credit kept. A new bucket is full. Two numbers of state.
 */
export class TokenBucket implements Strategy, Admits {
  /** Tokens at `stamp`. */
  private tokens: number;
  /** Ticker time `tokens` was counted at; -Infinity until the first permit is taken. */
  private stamp = Number.NEGATIVE_INFINITY;

  get capacity(): number {
    return this.policy.capacity;
  }

  constructor(readonly policy: ResolvedPolicy) {
    this.tokens = policy.capacity;
  }

  private tokensAt(now: number): number {
    const elapsed = now - this.stamp;
    if (!(elapsed > 0)) return this.tokens;
    const { limit, windowMs, capacity } = this.policy;
    const refilled = this.tokens + (elapsed * limit) / windowMs;
    return refilled < capacity ? refilled : capacity;
  }

  /** ms until `tokens` grows back to capacity. */
  private msToFull(tokens: number): number {
    const { limit, windowMs, capacity } = this.policy;
    return wholeMs(((capacity - tokens) * windowMs) / limit);
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
    const left = tokens - cost;
    this.tokens = left;
    if (now > this.stamp) this.stamp = now;
    return allow(whole(left), this.msToFull(left), this.policy.limit);
  }

  peek(now: number, cost: number): Decision {
    const tokens = this.tokensAt(now);
    if (tokens < cost - EPSILON) return this.denial(now, cost, tokens);
    return allow(whole(tokens - cost), this.msToFull(tokens - cost), this.policy.limit);
  }

  private denial(now: number, cost: number, tokens: number): Decision {
    const { limit, windowMs } = this.policy;
    const estimate = ((cost - tokens) * windowMs) / limit;
    const retryAfterMs = settleRetry(this, now, cost, estimate);
    return deny('rate', retryAfterMs, whole(tokens), this.msToFull(tokens), limit);
  }

  isAtRest(now: number): boolean {
    return this.tokensAt(now) >= this.policy.capacity;
  }

  restsAt(now: number): number {
    const tokens = this.tokensAt(now);
    const { limit, windowMs, capacity } = this.policy;
    return tokens >= capacity ? now : now + ((capacity - tokens) * windowMs) / limit;
  }

  lowerRemaining(now: number, remaining: number): void {
    if (this.tokensAt(now) <= remaining) return;
    this.tokens = remaining;
    if (now > this.stamp) this.stamp = now;
  }
}

/** Whole permits in a float count; a hair under an integer (float error) counts as that integer. */
export function whole(permits: number): number {
  const n = Math.floor(permits + EPSILON);
  return n > 0 ? n : 0;
}
