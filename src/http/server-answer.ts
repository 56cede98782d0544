/**
 * What a server said in one response, read by one pure function: its count (every dialect of
 * `parseRateLimitHeaders`), quotas in other units (tokens), when to come back (retry-after-ms,
 * Retry-After, a refusal body's hint), and whether it refused the request for a rate limit.
 * Turning that into pacing is `applyServerAnswer`'s job (answer-to-pacer.ts).
 */
import { type BodyHint, parseBodyHint } from './body-hint.js';
import { trimSpaces } from './duration.js';
import { parseHttpDate } from './http-date.js';
import { readRateLimitFields, type ServerQuotaReport } from './ratelimit-headers.js';
import { parseRetryAfter, parseRetryAfterMs, parseRetryIn } from './retry-after.js';
import { readTokenQuotas, type UnitQuota } from './vendor-headers.js';

/** A response as `readServerAnswer` reads it. */
export interface AnswerInput {
  readonly status: number;
  readonly headers: Headers;
  /** The client's wall clock, Unix epoch ms (corrected by the response's `Date`, see below). */
  readonly nowEpochMs: number;
  /** A refusal's body text, when it was read (see `readBodyHintText`). */
  readonly body?: string | undefined;
}

/** What a server said about its rate limit in one response. */
export interface ServerAnswer {
  /** Its count of requests, from whichever header family it speaks. */
  readonly quota?: ServerQuotaReport;
  /** Its quotas in other units (OpenAI's and Anthropic's tokens), not paced on (issue 14). */
  readonly units?: readonly UnitQuota[];
  /**
   * ms to wait before the next request, when the server says so outright: `retry-after-ms`,
   * then Traefik's `X-Retry-In` or the body's hint (precise) when it agrees with `Retry-After`
   * to its second, then `Retry-After` (seconds or an HTTP-date, read against the response's
   * `Date`).
   */
  readonly retryAfterMs?: number;
  /**
   * The server refused the request for a rate limit: a 429, or a 403 that says so (GitHub:
   * `x-ratelimit-remaining: 0`, or a `retry-after` for its secondary limit). A plain 403 is not.
   */
  readonly refused: boolean;
  /** Discord's `x-ratelimit-scope` (`user`, `global`, `shared`), or `global` from its body. */
  readonly scope?: string;
}

/**
 * How far the client's wall clock may be from the response's `Date` before the `Date` is used
 * instead (ms). `Date` is whole seconds, floored, and a response takes time to arrive, so a
 * right clock reads up to about a second past it.
 */
export const CLOCK_SKEW_MS = 2000;

/**
 * Reads one response. Pure: time comes only from `nowEpochMs`; never throws; every header
 * read is bounded in length. `undefined` when the response says nothing of a rate limit.
 *
 * Absolute times (HTTP-dates, Unix-second and RFC 3339 resets) are read against the server's
 * own clock when its `Date` header is more than `CLOCK_SKEW_MS` from `nowEpochMs`: a client
 * clock an hour slow must not turn a 2 s `Retry-After` date into an hour.
 *
 * @example
 * readServerAnswer({ status: 429, headers: new Headers({ 'retry-after': '2' }), nowEpochMs: Date.now() })
 * // { refused: true, retryAfterMs: 2000 }
 */
export function readServerAnswer(input: AnswerInput): ServerAnswer | undefined {
  const { status, headers, body } = input;
  const now = serverNow(headers, input.nowEpochMs);
  const fields = readRateLimitFields(headers, now);
  const units = [...readTokenQuotas(headers, now), ...fields.units];
  const hint = body === undefined ? undefined : parseBodyHint(body);
  const wait = waitOf(headers, now, hint);
  const quota = status < 400 ? refineResetByWait(fields.quota, wait) : fields.quota;
  const retryAfterMs = refineByReset(wait, quota, headers);
  const refused =
    status === 429 || (status === 403 && (quota?.remaining === 0 || retryAfterMs !== undefined));
  const scopeText = headers.get('x-ratelimit-scope');
  const scope =
    (scopeText === null ? '' : trimSpaces(scopeText).slice(0, 32)) ||
    (hint?.global === true || headers.get('x-ratelimit-global') !== null ? 'global' : '');
  if (quota === undefined && units.length === 0 && retryAfterMs === undefined && !refused) {
    return undefined;
  }
  return {
    refused,
    ...(quota === undefined ? {} : { quota }),
    ...(units.length === 0 ? {} : { units }),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(scope === '' ? {} : { scope }),
  };
}

/** The wall clock to read absolute times against: the server's `Date` when ours is far off. */
export function serverNow(headers: Headers, nowEpochMs: number): number {
  const date = dateOf(headers, nowEpochMs);
  if (date === undefined || !Number.isFinite(nowEpochMs)) return date ?? nowEpochMs;
  return Math.abs(nowEpochMs - date) <= CLOCK_SKEW_MS ? nowEpochMs : date;
}

/** The response's `Date`, epoch ms (whole seconds); undefined if it has none that parses. */
export function dateOf(headers: Headers, nowEpochMs: number): number | undefined {
  const text = headers.get('date');
  return text === null || text.length > 64
    ? undefined
    : parseHttpDate(trimSpaces(text), nowEpochMs);
}

/**
 * The explicit wait: retry-after-ms, then Traefik's `X-Retry-In` or the body's (if precise and
 * consistent), then Retry-After.
 */
function waitOf(headers: Headers, now: number, hint: BodyHint | undefined): number | undefined {
  const ms = parseRetryAfterMs(headers.get('retry-after-ms'));
  if (ms !== undefined) return ms;
  const header = parseRetryAfter(headers.get('retry-after'), now);
  const finer = parseRetryIn(headers.get('x-retry-in')) ?? hint?.retryAfterMs;
  if (finer === undefined) return header;
  // Discord: `Retry-After: 65` and `retry_after: 64.57`; Traefik: `Retry-After: 1` and
  // `X-Retry-In: 16.666666ms`. The finer one wins within the coarser one's second (read as a
  // whole second, a token bucket's one-permit wait taught a rate of its burst per second), and
  // the longer one wins when they disagree.
  if (header === undefined || Math.abs(header - finer) < 1000) return finer;
  return Math.max(header, finer);
}

/**
 * rate-limiter-flexible's README sends `Retry-After: 0.734` (ms before its points come back) on
 * every answer, beside `X-RateLimit-Reset` in whole Unix seconds, rounded up: read against the
 * clock, such a reset falls anywhere in the second after the window's end. A wait that agrees
 * with it to within its unit is the same instant, read by the server: a finer one replaces it,
 * and a whole-second one (`1` on the answer that opened a 1 s window) bounds it, so the window is
 * learned from that answer (`windowOf`) and nothing left waits to the instant, not a second long.
 * Only on an answer that is not a refusal: a refusal's wait is read on its own (and
 * koa-ratelimit's is rounded down), and refined by the reset instead (`refineByReset`).
 */
function refineResetByWait(
  quota: ServerQuotaReport | undefined,
  waitMs: number | undefined,
): ServerQuotaReport | undefined {
  if (quota?.resetMs === undefined || waitMs === undefined || quota.resetFull === true) {
    return quota;
  }
  const { resetMs, resetPrecisionMs = 1000 } = quota;
  if (resetPrecisionMs < 1000 || Math.abs(waitMs - resetMs) >= resetPrecisionMs) return quota;
  if (waitMs % 1000 !== 0) {
    return { ...quota, resetMs: waitMs, resetPrecisionMs: 1, resetFromArrival: true };
  }
  return waitMs < resetMs ? { ...quota, resetMs: waitMs } : quota;
}

/**
 * Discord sends `Retry-After: 65` beside `X-RateLimit-Reset-After: 64.57`: a whole-second wait
 * is replaced by the precise reset of an exhausted quota that falls within its second.
 */
function refineByReset(
  waitMs: number | undefined,
  quota: ServerQuotaReport | undefined,
  headers: Headers,
): number | undefined {
  if (waitMs === undefined || quota?.remaining !== 0 || quota.resetFull === true) return waitMs;
  const { resetMs, resetPrecisionMs = 1000 } = quota;
  if (resetMs === undefined || resetPrecisionMs >= 1000 || headers.has('retry-after-ms')) {
    return waitMs;
  }
  return resetMs <= waitMs && resetMs > waitMs - 1000 ? resetMs : waitMs;
}
