import { parseGoDuration, secondsTextToMs, toDelayMs, trimSpaces } from './duration.js';
import { parseHttpDate } from './http-date.js';

/**
 * Reads a `Retry-After` value (RFC 9110 §10.2.3) as the delay, in ms, the server asks for.
 *
 * - delay-seconds: `"120"` → 120000. Leading zeros are fine; huge values are capped at
 *   {@link MAX_DELAY_MS}, so the result is always a finite number.
 * - decimal seconds, outside the grammar but sent by some servers: `"1.5"` → 1500. Taking
 *   them beats ignoring them, since ignoring means retrying sooner than the server asked.
 *   Sub-millisecond digits round up.
 * - negative seconds: `"-5"` → 0 (our DESIGN's rule: the server means "now").
 * - HTTP-date in any of its three forms: the time until then, 0 if it has passed.
 *
 * Anything else gives `undefined`: an empty value, `"abc"`, `"1e3"`, `"+5"`, `"0x10"`,
 * `"5s"`, a date that is not exactly an HTTP-date. Surrounding spaces and tabs are trimmed.
 * Results are whole ms, rounded up, so a retry at `now + delay` is never early.
 *
 * @param value - the header value, e.g. `response.headers.get('retry-after')`
 * @param nowEpochMs - the current wall-clock time in Unix epoch ms; HTTP-dates are relative
 *   to it (the only place where the pacer needs the wall clock)
 * @returns the delay in ms (an integer from 0 to {@link MAX_DELAY_MS}), or `undefined`
 * @example
 * parseRetryAfter('120', Date.now()) // 120000
 * parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', Date.UTC(1994, 10, 6, 8, 49, 7)) // 30000
 * parseRetryAfter('soon', Date.now()) // undefined
 */
export function parseRetryAfter(
  value: string | null | undefined,
  nowEpochMs: number,
): number | undefined {
  if (value === null || value === undefined) return undefined;
  // Every pattern below is anchored with no nested repetition, so linear; the trim was not.
  const text = trimSpaces(value);
  const seconds = secondsTextToMs(text);
  if (seconds !== undefined) return toDelayMs(seconds);
  if (/^-\d+(?:\.\d+)?$/.test(text)) return 0;
  if (!Number.isFinite(nowEpochMs)) return undefined;
  const at = parseHttpDate(text, nowEpochMs);
  return at === undefined ? undefined : toDelayMs(at - nowEpochMs);
}

/**
 * Reads `retry-after-ms` (Azure OpenAI, the OpenAI and Anthropic SDKs): the delay in ms,
 * possibly decimal, rounded up and capped like {@link parseRetryAfter}; `undefined` for
 * anything else.
 *
 * @example parseRetryAfterMs('1500') // 1500
 */
export function parseRetryAfterMs(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = trimSpaces(value);
  if (!/^\d+(?:\.\d+)?$/.test(text)) return undefined;
  return toDelayMs(Number(text));
}

/**
 * Reads Traefik's `X-Retry-In` (its `rateLimit` middleware refuses with it beside `Retry-After`
 * in whole seconds rounded up, https://doc.traefik.io/traefik/middlewares/http/ratelimit/): its
 * token bucket's exact delay as a Go duration (`16.666666ms`, `1.5s`), in whole ms rounded up
 * and capped like {@link parseRetryAfter}; `undefined` for anything else.
 *
 * @example parseRetryIn('16.666666ms') // 17
 */
export function parseRetryIn(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  return parseGoDuration(trimSpaces(value))?.ms;
}
