'use client';

/**
 * fetch-pacer/react: hooks over a pacer, built on `useSyncExternalStore`. Importing it reads no
 * clock and starts no timer, so it is safe in server rendering. `'use client'`: the hooks and
 * the provider are client components for React Server Components bundlers (Next.js).
 */
export { PacerProvider, type PacerProviderProps, usePacer } from './context.js';
export { HttpError, isAbortError, isHttpError } from './errors.js';
export type { RequestInput } from './fingerprint.js';
export type { Parse } from './parse.js';
export type { FetchStatus, RateLimitedFetchState, RequestProgress } from './request-state.js';
export type { PacerSource } from './source.js';
export { useBucketLevel } from './use-bucket-level.js';
export { IDLE_OUTBOX_SNAPSHOT, useOutbox } from './use-outbox.js';
export {
  type BoundFetch,
  type PacedRequestInit,
  type Pacing,
  usePacedFetch,
} from './use-paced-fetch.js';
export { IDLE_PACER_SNAPSHOT, shallowEqual, usePacerState } from './use-pacer-state.js';
export {
  type RateLimitedFetchResult,
  type UseRateLimitedFetchOptions,
  useRateLimitedFetch,
} from './use-rate-limited-fetch.js';
