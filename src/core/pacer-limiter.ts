import type { ServerFeedback } from './feedback.js';
import { serverFeedback } from './feedback.js';
import { KeyedLimiter, type RateLimiterOptions } from './limiter.js';
import { unitLimits } from './unit-limits.js';

/** A limiter with every part: limits per unit and the server's feedback. */
export type PacerLimiter = KeyedLimiter & { readonly feedback: ServerFeedback };

/**
 * The limiter a pacer (and a store's local fallback) counts with: limits per unit, the server's
 * blocks, and what its answers teach. `createRateLimiter` is the same limiter without them.
 */
export function createPacerLimiter(options: RateLimiterOptions): PacerLimiter {
  return new KeyedLimiter(options, { units: unitLimits, feedback: serverFeedback }) as PacerLimiter;
}
