/** The http layer's exports. The header parsers here are pure: no timers, no clock, no fetch. */
export { MAX_DELAY_MS } from './duration.js';
export {
  createPacedFetch,
  type FetchFunction,
  type PacedFetch,
  type PacedFetchOptions,
  type PacingInit,
  type RequestPacing,
} from './paced-fetch.js';
export type { ServerQuotaReport } from './ratelimit-headers.js';
export type { RetryOptions } from './retry-policy.js';
export { type AnswerInput, readServerAnswer, type ServerAnswer } from './server-answer.js';
export type { UnitQuota } from './vendor-headers.js';
