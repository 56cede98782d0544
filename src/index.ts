// The root is what an app uses: policies and the algorithm values they count with, a limiter
// (made one way, `createRateLimiter`), an unkeyed state (`createStrategy`), the pacer, the paced
// fetch, their errors and types. The algorithm classes, `resolvePolicy` and the default ticker
// are internals a bundle need not name.
export { arrivalSafe } from './core/algorithms/arrival-safe.js';
export { fixedWindow } from './core/algorithms/fixed-window.js';
export { gcra } from './core/algorithms/gcra.js';
export { createStrategy, type Strategy } from './core/algorithms/index.js';
export { slidingLog } from './core/algorithms/sliding-log.js';
export { slidingWindow } from './core/algorithms/sliding-window.js';
export { tokenBucket } from './core/algorithms/token-bucket.js';
export type { Clock } from './core/clock.js';
export type { Decision, DenialReason } from './core/decision.js';
export {
  createRateLimiter,
  type PolicyInput,
  type PolicyResolver,
  type PolicySummary,
  type RateLimiter,
  type RateLimiterOptions,
  type ServerSignal,
} from './core/limiter.js';
export type { Cost, ReserveTimes, UnitCosts, UnitInspection, UnitLimits } from './core/units.js';
export type { ActualCost } from './http/unit-costs.js';
export {
  type Algorithm,
  type AlgorithmName,
  type Policy,
  type PolicyOptions,
  perDay,
  perHour,
  perMinute,
  perSecond,
  type ResolvedPolicy,
} from './core/policy.js';
export {
  type AnswerInput,
  createPacedFetch,
  type FetchFunction,
  MAX_DELAY_MS,
  type PacedFetch,
  type PacedFetchOptions,
  type PacingInit,
  type RequestPacing,
  type RetryOptions,
  readServerAnswer,
  type ServerAnswer,
  type ServerQuotaReport,
  type UnitQuota,
} from './http/index.js';
export {
  createPacer,
  defineStore,
  isPacerError,
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
  type Store,
  type StoreCall,
  type StoreCost,
  type StoreEvent,
  type TaskProgress,
} from './pacer/index.js';
