import { backoffMs as backoff } from '../core/backoff.js';
import { assertKnownOptions, assertPositiveFinite, fail } from '../core/validate.js';
import type { ServerAnswer } from './server-answer.js';

/** When and how a paced fetch retries a response the server refused. */
export interface RetryOptions {
  /**
   * Most retries of one call after refusals the client cannot explain: a 429/503 that says
   * neither when to come back nor that the quota is spent (backoff), or one that says "now"
   * (`Retry-After: 0`), and after network errors (backoff; methods in `methods` only). A
   * refusal that gives a wait is retried after it without spending this (see `maxAttempts`).
   * An integer >= 0; 0 (or `retry: false`) retries nothing.
   * @default 2
   */
  readonly limit?: number;
  /**
   * Most requests one call sends in all, retries after a server-given wait included: the bound
   * on a server that refuses forever with a wait each time. An integer >= 1.
   * @default 20
   */
  readonly maxAttempts?: number;
  /**
   * Longest `Retry-After` (or backoff) worth waiting for, in ms. Beyond it the response is
   * returned as it is (the key stays blocked for what the server asked). Also the longest a call
   * whose send failed while the page was offline waits for `online`.
   * @default 60_000
   */
  readonly maxRetryAfterMs?: number;
  /**
   * Statuses that are refusals, retried. A 403 that says it is a rate limit (GitHub:
   * `x-ratelimit-remaining: 0`, or `retry-after`) is one too; a plain 403 is final.
   * @default [429, 503, 529]
   */
  readonly statuses?: readonly number[];
  /**
   * Methods retried on a 503 (or another status of yours) and after a network error. A 429, a
   * rate-limit 403 and Anthropic's 529 (overloaded) mean the server did not process the
   * request, so they are retried whatever the method; a 503 may come after side effects, and
   * so may a connection lost before the response, so only idempotent methods are retried by
   * default.
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
  readonly maxAttempts: number;
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
  'maxAttempts',
  'maxRetryAfterMs',
  'statuses',
  'methods',
  'backoffMs',
  'maxBackoffMs',
  'random',
];

export function resolveRetry(retry: RetryOptions | false | undefined): ResolvedRetry {
  if (retry === false) return resolveRetry({ limit: 0, maxAttempts: 1 });
  if (retry !== undefined) {
    if (typeof retry !== 'object' || retry === null || Array.isArray(retry)) {
      fail('retry', 'an object `{ limit, ... }` or false', retry, TypeError);
    }
    assertKnownOptions('`retry`', retry, RETRY_OPTIONS);
  }
  const {
    limit = 2,
    maxAttempts = 20,
    maxRetryAfterMs = 60_000,
    statuses = [429, 503, 529],
    methods = IDEMPOTENT,
    backoffMs = 1_000,
    maxBackoffMs = 30_000,
    random = Math.random,
  } = retry ?? {};
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0) {
    fail('retry.limit', 'an integer >= 0', limit);
  }
  if (typeof maxAttempts !== 'number' || !Number.isInteger(maxAttempts) || maxAttempts < 1) {
    fail('retry.maxAttempts', 'an integer >= 1', maxAttempts);
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
    maxAttempts,
    maxRetryAfterMs,
    statuses: new Set(statuses),
    methods: new Set(methods.map((method) => method.toUpperCase())),
    backoffMs,
    maxBackoffMs,
    random,
  };
}

/** A refusal as the retry loop sees it. */
export interface Refusal {
  /** ms the key waits: the server's, or the backoff when it gave none. */
  readonly waitMs: number;
  /** The server said when to come back (a wait > 0): the retry does not spend `limit`. */
  readonly explained: boolean;
  /** Not processed by the server (429, rate-limit 403, 529): retried whatever the method. */
  readonly unprocessed: boolean;
  /**
   * The server says the client is too fast (a 429, a rate-limit 403), not that it is down or
   * overloaded (a 503 or 529 may be an outage): a pacer that learned the key's rate may pace
   * its retry (`applyServerAnswer`).
   */
  readonly tooFast: boolean;
}

/**
 * Is this response a refusal, and how long does its key wait? A status in `statuses`, or an
 * answer that says it was refused for a rate limit. The wait is the server's: its explicit
 * wait (`retryAfterMs`), else, with nothing remaining, its reset (for a bucket, one permit's
 * refill: `resetMs / limit`); else the backoff of the `unexplained`-th unexplained refusal. A
 * `Retry-After: 0` on a refusal says nothing: koa-ratelimit rounds its wait down, so half a
 * second to go reads 0, and a retry at once met the same closed window until the calls failed.
 */
export function refusalOf(
  retry: ResolvedRetry,
  status: number,
  answer: ServerAnswer | undefined,
  unexplained: number,
): Refusal | undefined {
  if (!isRefusal(retry, status, answer)) return undefined;
  const stated = answer?.retryAfterMs;
  const given = stated !== undefined && stated > 0 ? stated : exhaustedWaitMs(answer);
  const tooFast = status === 429 || answer?.refused === true;
  const unprocessed = tooFast || status === 529;
  if (given !== undefined && given > 0) {
    return { waitMs: given, explained: true, unprocessed, tooFast };
  }
  return { waitMs: backoffMs(retry, unexplained), explained: false, unprocessed, tooFast };
}

/** Is this response a refusal: a status in `statuses`, or a rate-limit refusal by its word? */
export function isRefusal(
  retry: ResolvedRetry,
  status: number,
  answer: ServerAnswer | undefined,
): boolean {
  return retry.statuses.has(status) || answer?.refused === true;
}

/** With nothing remaining, when the quota lets one request through again. */
function exhaustedWaitMs(answer: ServerAnswer | undefined): number | undefined {
  const quota = answer?.quota;
  if (quota?.remaining !== 0 || quota.resetMs === undefined) return undefined;
  if (quota.resetFull !== true) return quota.resetMs;
  return Math.ceil(quota.resetMs / Math.max(1, quota.limit ?? 1));
}

/** The backoff without a `Retry-After` before retry `attempt` (0 first): core/backoff.ts. */
export function backoffMs(retry: ResolvedRetry, attempt: number): number {
  return backoff(attempt, retry.backoffMs, retry.maxBackoffMs, retry.random);
}

/**
 * May this refused request be sent again (ignoring how long the wait is)? `attempt` is the
 * number of requests sent so far minus one; `unexplained` the retries spent from `limit`.
 */
export function mayRetry(
  retry: ResolvedRetry,
  refusal: Refusal,
  method: string,
  attempt: number,
  unexplained: number,
): boolean {
  if (attempt + 1 >= retry.maxAttempts) return false;
  if (!refusal.explained && unexplained >= retry.limit) return false;
  return refusal.unprocessed || retry.methods.has(method.toUpperCase());
}

/**
 * May a request of `method` whose send failed while the page said it was offline be sent again
 * once it is online? As a network error (`methods`; `retry: false` sends nothing again), but
 * the page said why, so no retry of `limit` is spent: only `maxAttempts` bounds it.
 */
export function mayRetryOffline(retry: ResolvedRetry, method: string, attempt: number): boolean {
  return mayRetry(retry, OFFLINE_FAILURE, method, attempt, 0);
}

/** A network error as the retry loop sees it: unexplained, and maybe processed by the server. */
const NETWORK_FAILURE = { explained: false, unprocessed: false } as Refusal;
/** One while the page said it was offline: explained (no retry of `limit` spent). */
const OFFLINE_FAILURE = { explained: true, unprocessed: false } as Refusal;

/**
 * The backoff before sending again a request of `method` that was sent and failed with `error`,
 * or undefined when it may not be sent again: `error` is no network error, the method is not in
 * `methods` (a POST may have been processed before the connection was lost), or the call spent
 * `limit` or `maxAttempts` (`unexplained`: the retries spent from `limit` so far). A network
 * error is fetch's TypeError (the network down, a connection reset, or in a browser a response
 * without CORS headers, such as a 429 from a gateway that adds none); an abort is a
 * DOMException. By name, not `instanceof`: a fetch of another realm (jsdom's, an iframe's)
 * throws its own TypeError.
 */
export function networkRetryMs(
  retry: ResolvedRetry,
  error: unknown,
  method: string,
  attempt: number,
  unexplained: number,
): number | undefined {
  if ((error as Error | undefined)?.name !== 'TypeError') return undefined;
  if (!mayRetry(retry, NETWORK_FAILURE, method, attempt, unexplained)) return undefined;
  const waitMs = backoffMs(retry, unexplained);
  return waitMs > retry.maxRetryAfterMs ? undefined : waitMs;
}
