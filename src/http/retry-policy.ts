import { backoffMs as backoff } from '../core/backoff.js';
import { assertKnownOptions, assertPositiveFinite, fail } from '../core/validate.js';

/** When and how a paced fetch retries a response the server refused. */
export interface RetryOptions {
  /** Most retries of one call (so at most `limit + 1` requests). An integer >= 0. @default 2 */
  readonly limit?: number;
  /**
   * Longest `Retry-After` (or backoff) worth waiting for, in ms. Beyond it the response is
   * returned as it is (the key stays blocked for what the server asked).
   * @default 60_000
   */
  readonly maxRetryAfterMs?: number;
  /** Statuses that are retried. @default [429, 503] */
  readonly statuses?: readonly number[];
  /**
   * Methods retried on a status other than 429. A 429 means the server did not process the
   * request, so it is retried whatever the method; a 503 may come after side effects, so only
   * idempotent methods are retried by default.
   * @default ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']
   */
  readonly methods?: readonly string[];
  /** First backoff without `Retry-After`, in ms; it doubles per retry. @default 1_000 */
  readonly backoffMs?: number;
  /** Most backoff without `Retry-After`, in ms. @default 30_000 */
  readonly maxBackoffMs?: number;
  /** Source of jitter in [0, 1). @default Math.random */
  readonly random?: () => number;
}

export interface ResolvedRetry {
  readonly limit: number;
  readonly maxRetryAfterMs: number;
  readonly statuses: ReadonlySet<number>;
  readonly methods: ReadonlySet<string>;
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
  readonly random: () => number;
}

const IDEMPOTENT = ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE'];

const RETRY_OPTIONS = [
  'limit',
  'maxRetryAfterMs',
  'statuses',
  'methods',
  'backoffMs',
  'maxBackoffMs',
  'random',
];

export function resolveRetry(retry: RetryOptions | false | undefined): ResolvedRetry {
  if (retry === false) return resolveRetry({ limit: 0 });
  if (retry !== undefined) {
    if (typeof retry !== 'object' || retry === null || Array.isArray(retry)) {
      fail('retry', 'an object `{ limit, ... }` or false', retry, TypeError);
    }
    assertKnownOptions('`retry`', retry, RETRY_OPTIONS);
  }
  const {
    limit = 2,
    maxRetryAfterMs = 60_000,
    statuses = [429, 503],
    methods = IDEMPOTENT,
    backoffMs = 1_000,
    maxBackoffMs = 30_000,
    random = Math.random,
  } = retry ?? {};
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0) {
    fail('retry.limit', 'an integer >= 0', limit);
  }
  // `!(x >= 0)` is also true for NaN.
  if (typeof maxRetryAfterMs !== 'number' || !(maxRetryAfterMs >= 0)) {
    fail('retry.maxRetryAfterMs', 'a number of ms >= 0', maxRetryAfterMs);
  }
  assertPositiveFinite('retry.backoffMs', backoffMs);
  assertPositiveFinite('retry.maxBackoffMs', maxBackoffMs);
  if (
    !Array.isArray(statuses) ||
    !statuses.every((s) => Number.isInteger(s) && s >= 400 && s < 600)
  ) {
    fail('retry.statuses', 'a list of 4xx/5xx statuses', statuses, TypeError);
  }
  if (!Array.isArray(methods) || !methods.every((m) => typeof m === 'string')) {
    fail('retry.methods', 'a list of method names', methods, TypeError);
  }
  if (typeof random !== 'function') fail('retry.random', 'a function', random, TypeError);
  return {
    limit,
    maxRetryAfterMs,
    statuses: new Set(statuses),
    methods: new Set(methods.map((method) => method.toUpperCase())),
    backoffMs,
    maxBackoffMs,
    random,
  };
}

/** Is this a refusal the client should back off from (and block the key for)? */
export function isRefusal(retry: ResolvedRetry, status: number): boolean {
  return retry.statuses.has(status);
}

/** The backoff without a `Retry-After` before retry `attempt` (0 first): core/backoff.ts. */
export function backoffMs(retry: ResolvedRetry, attempt: number): number {
  return backoff(attempt, retry.backoffMs, retry.maxBackoffMs, retry.random);
}

/** May this refused request be sent again (ignoring how long the wait is)? */
export function mayRetry(
  retry: ResolvedRetry,
  status: number,
  method: string,
  attempt: number,
): boolean {
  if (attempt >= retry.limit) return false;
  return status === 429 || retry.methods.has(method.toUpperCase());
}
