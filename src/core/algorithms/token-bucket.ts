import { allow, type Decision, deny, EPSILON, wholeMs } from '../decision.js';
import type { Algorithm, ResolvedPolicy } from '../policy.js';
import { type Admits, type Strategy, settleRetry } from './strategy.js';

/**
 * The classic token bucket: `capacity` tokens, refilled at `limit / windowMs` per ms, lazily on
 * each call, fractional credit kept. A new bucket is full. Two numbers of state.
 */
export class TokenBucket implements Strategy, Admits {
  /** Tokens at `#stamp`. */
  #tokens: number;
  /** Ticker time `#tokens` was counted at; -Infinity until the first permit is taken. */
  #stamp = -Infinity;

  constructor(readonly policy: ResolvedPolicy) {
    this.#tokens = policy.capacity;
  }

  get capacity(): number {
    return this.policy.capacity;
  }

  private tokensAt(now: number): number {
    const elapsed = now - this.#stamp;
    if (!(elapsed > 0)) return this.#tokens;
    const { limit, windowMs, capacity } = this.policy;
    const refilled = this.#tokens + (elapsed * limit) / windowMs;
    return refilled < capacity ? refilled : capacity;
  }

  /** ms (a float) until `tokens` grows back to capacity. */
  private toFull(tokens: number): number {
    const { limit, windowMs, capacity } = this.policy;
    return ((capacity - tokens) * windowMs) / limit;
  }

  private set(now: number, tokens: number): void {
    this.#tokens = tokens;
    if (now > this.#stamp) this.#stamp = now;
  }

  level(now: number): number {
    return Math.max(0, this.tokensAt(now));
  }

  fits(at: number, cost: number): boolean {
    return this.tokensAt(at) >= cost - EPSILON;
  }

  tryAcquire(now: number, cost: number): Decision {
    return this.decide(now, cost, true);
  }

  take(now: number, cost: number): boolean {
    const tokens = this.tokensAt(now);
    if (tokens < cost - EPSILON) return false;
    this.set(now, tokens - cost);
    return true;
  }

  peek(now: number, cost: number): Decision {
    return this.decide(now, cost, false);
  }

  /** `tryAcquire` when `take`, else `peek`: one decision, so the two cannot disagree. */
  private decide(now: number, cost: number, take: boolean): Decision {
    const tokens = this.tokensAt(now);
    if (tokens < cost - EPSILON) return this.denial(now, cost, tokens);
    const left = tokens - cost;
    if (take) this.set(now, left);
    return allow(whole(left), wholeMs(this.toFull(left)), this.policy.limit);
  }

  private denial(now: number, cost: number, tokens: number): Decision {
    const { limit, windowMs } = this.policy;
    const estimate = ((cost - tokens) * windowMs) / limit;
    const retryAfterMs = settleRetry(this, now, cost, estimate);
    return deny('rate', retryAfterMs, whole(tokens), wholeMs(this.toFull(tokens)), limit);
  }

  isAtRest(now: number): boolean {
    return this.tokensAt(now) >= this.policy.capacity;
  }

  restsAt(now: number): number {
    return now + this.toFull(this.tokensAt(now));
  }

  lowerRemaining(now: number, remaining: number): void {
    if (this.tokensAt(now) > remaining) this.set(now, remaining);
  }
}

/**
 * The token bucket, the default algorithm: `burst` is its capacity (`perSecond(10, { burst: 20 })`
 * holds 20 at once and refills 10 a second).
 */
export const tokenBucket: Algorithm = /* @__PURE__ */ Object.freeze({
  name: 'token-bucket',
  burst: 'capacity',
  create: (policy: ResolvedPolicy) => new TokenBucket(policy),
});

/** Whole permits in a float count; a hair under an integer (float error) counts as that integer. */
export function whole(permits: number): number {
  const n = Math.floor(permits + EPSILON);
  return n > 0 ? n : 0;
}
