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
  type PolicySummary,
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
export {
  createPacedFetch,
  type FetchFunction,
  MAX_DELAY_MS,
  type PacedFetch,
  type PacedFetchOptions,
  parseRateLimitHeaders,
  parseRetryAfter,
  type RateLimitHeaderSource,
  type RetryOptions,
  type ServerQuotaReport,
} from './http/index.js';
export {
  createPacer,
  isPacerDisposedError,
  isPacerError,
  isQueueFullError,
  isRateLimitError,
  type KeyInspection,
  type Pacer,
  type PacerClock,
  PacerDisposedError,
  PacerError,
  type PacerMode,
  type PacerOptions,
  type PacerSnapshot,
  QueueFullError,
  type QueueFullErrorOptions,
  RateLimitError,
  type RateLimitErrorOptions,
  type ScheduleOptions,
} from './pacer/index.js';
