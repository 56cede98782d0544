/**
 * Why a request was denied:
 * - `'rate'`: the policy has no permit for it yet;
 * - `'key-limit'`: `maxKeys` distinct keys are busy, so no state could be made for this one;
 * - `'blocked'`: the server told us to wait (Retry-After), see `RateLimiter.blockUntil`;
 * - `'cost'`: the cost can never fit the capacity (the limiter throws instead when a caller asks);
 * - `'in-flight'`: a slow start waits for answers of requests in flight (`retryAfterMs` is a
 *   lower bound, not a projection: `maxWaitMs` does not judge it, as it does not judge a wait for
 *   a concurrency slot).
 */
export type DenialReason = 'rate' | 'key-limit' | 'blocked' | 'cost' | 'in-flight';

/** The answer to "may this request go now?". Plain data: safe to log, compare and serialise. */
export interface Decision {
  readonly allowed: boolean;
  /** Whole permits left after this decision. */
  readonly remaining: number;
  /**
   * 0 when allowed. When denied: the smallest whole number of ms after which the same request
   * is allowed if nothing else happens. A retry at exactly `now + retryAfterMs` succeeds; one
   * 1 ms earlier does not.
   */
  readonly retryAfterMs: number;
  /** Whole ms (rounded up) until the key is back to a fresh, full state if nothing else happens. */
  readonly resetMs: number;
  /** The `limit` of the policy that decided (the tightest one when a key has several). */
  readonly limit: number;
  /** Present on denials only. */
  readonly reason?: DenialReason;
}

export function allow(remaining: number, resetMs: number, limit: number): Decision {
  return { allowed: true, remaining, retryAfterMs: 0, resetMs, limit };
}

export function deny(
  reason: DenialReason,
  retryAfterMs: number,
  remaining: number,
  resetMs: number,
  limit: number,
): Decision {
  return { allowed: false, remaining, retryAfterMs, resetMs, limit, reason };
}

/**
 * Tolerance for float arithmetic on permits and ms. Rates such as 1000 ms / 3 cannot be exact
 * in binary; without it a bucket refilled to 0.9999999999999999 would deny a request that the
 * arithmetic on paper allows. It is far below anything a ticker can resolve.
 */
export const EPSILON = 1e-9;

/** A duration in ms as a whole number, rounded up, never negative. */
export function wholeMs(ms: number): number {
  return ms > EPSILON ? Math.ceil(ms - EPSILON) : 0;
}
