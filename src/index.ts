export {
  AllOf,
  createStrategy,
  FixedWindow,
  Gcra,
  SlidingLog,
  SlidingWindow,
  type Strategy,
  TokenBucket,
} from './core/algorithms/index.js';
export { performanceTicker, type Ticker } from './core/clock.js';
export type { Decision, DenialReason } from './core/decision.js';
export {
  createRateLimiter,
  type PolicyInput,
  type PolicyResolver,
  RateLimiter,
  type RateLimiterOptions,
  type ServerQuota,
} from './core/limiter.js';
export {
  type Algorithm,
  type Policy,
  type PolicyOptions,
  perDay,
  perHour,
  perMinute,
  perSecond,
  type ResolvedPolicy,
  resolvePolicy,
} from './core/policy.js';
