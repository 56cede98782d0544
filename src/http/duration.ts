/** Turning header numbers into delays: the caps and rounding every parser in src/http shares. */
import { MAX_DELAY_MS } from '../core/signal.js';

/**
 * The longest delay, in ms, the header parsers report: `MAX_DELAY_MS` (core/signal.ts, one
 * constant for every cap), 2^31 − 1 ms. Longer values are capped to it rather than passed on,
 * because `setTimeout` fires at once for anything larger.
 *
 * @example
 * parseRetryAfter('99999999', now) === MAX_DELAY_MS // true
 */
export { MAX_DELAY_MS };

/** 365 days: the widest gap we believe between a reset time and now. */
const YEAR_MS = 365 * 24 * 60 * 60 * 1000;

/**
 * A candidate delay as the parsers report it: whole ms rounded up (a retry at `now + delay`
 * is never early), negative as 0, at most {@link MAX_DELAY_MS}; NaN gives `undefined`.
 */
export function toDelayMs(ms: number): number | undefined {
  if (Number.isNaN(ms)) return undefined;
  if (ms <= 0) return 0;
  return Math.min(Math.ceil(ms), MAX_DELAY_MS);
}

/**
 * Non-negative decimal seconds text (`"60"`, `"1.5"`) to exact ms, or `undefined` for
 * anything else. Digits are converted in two parts because `1.1 * 1000` is
 * 1100.0000000000002, which would round up to 1101 ms; sub-millisecond digits round up.
 */
export function secondsTextToMs(text: string): number | undefined {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (match === null) return undefined;
  const whole = match[1] ?? '';
  const fraction = match[2] ?? '';
  const subMs = /[1-9]/.test(fraction.slice(3)) ? 1 : 0;
  return Number(whole) * 1000 + Number(fraction.slice(0, 3).padEnd(3, '0')) + subMs;
}

/**
 * A reset value that may be delta seconds, Unix seconds or Unix ms, given as `scaledMs`
 * (the value × 1000, i.e. its reading as seconds in ms). Legacy headers use all three
 * (GitHub sends Unix seconds, express-rate-limit's draft-6 and most proxies delta
 * seconds, a few Unix ms), and only "now" tells them apart:
 *
 * 1. up to one year of seconds is a delta: no rate-limit window is longer, and Unix
 *    seconds that small are in 1971;
 * 2. otherwise, if it is within a year of now as Unix seconds, it is Unix seconds;
 * 3. otherwise, if it is within a year of now as Unix ms, it is Unix ms;
 * 4. otherwise it is garbage (`undefined`): decades of delta or a clock a year off are
 *    more likely a bug than a quota, and blocking a key for weeks on a guess is worse
 *    than not knowing.
 *
 * A reset already in the past is 0; a negative value is 0, like Retry-After.
 */
export function resetToDelayMs(scaledMs: number, nowEpochMs: number): number | undefined {
  if (Number.isNaN(scaledMs)) return undefined;
  if (scaledMs <= YEAR_MS) return toDelayMs(scaledMs);
  if (!Number.isFinite(nowEpochMs) || !Number.isFinite(scaledMs)) return undefined;
  if (Math.abs(scaledMs - nowEpochMs) <= YEAR_MS) return toDelayMs(scaledMs - nowEpochMs);
  const epochMs = scaledMs / 1000;
  if (Math.abs(epochMs - nowEpochMs) <= YEAR_MS) return toDelayMs(epochMs - nowEpochMs);
  return undefined;
}
