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

/** Longest numeric header text read (digits, a dot, a sign): anything longer is garbage. */
export const MAX_NUMBER_TEXT = 40;

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
 * A float number of ms read from a header (`64.57` s is 64570.00000000001 ms) as a delay: the
 * epsilon undoes float error, not real excess, before `toDelayMs` rounds up. NaN is 0.
 */
export function floatToDelayMs(ms: number): number {
  return toDelayMs(ms - 1e-6) ?? 0;
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
  if (isDelta(scaledMs)) return toDelayMs(scaledMs);
  if (!Number.isFinite(nowEpochMs) || !Number.isFinite(scaledMs)) return undefined;
  if (Math.abs(scaledMs - nowEpochMs) <= YEAR_MS) return toDelayMs(scaledMs - nowEpochMs);
  const epochMs = scaledMs / 1000;
  if (Math.abs(epochMs - nowEpochMs) <= YEAR_MS) return toDelayMs(epochMs - nowEpochMs);
  return undefined;
}

/** Whether a reset `resetToDelayMs` reads is a delta (rule 1), not an instant. */
export function isDelta(scaledMs: number): boolean {
  return scaledMs <= YEAR_MS;
}

/**
 * `value` without the spaces and tabs around it (HTTP's optional whitespace), in linear time:
 * a `/^[ \t]+|[ \t]+$/` replace backtracks at every run of spaces (quadratic: 300 ms for
 * `'1' + 15 kB of spaces + 'x'`).
 */
export function trimSpaces(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isSpace(value.charCodeAt(start))) start++;
  while (end > start && isSpace(value.charCodeAt(end - 1))) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

function isSpace(code: number): boolean {
  return code === 32 || code === 9;
}

/** ms per unit of a Go duration (`time.Duration.String()`); `us` and both micro signs too. */
const GO_UNITS: Readonly<Record<string, number>> = {
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
  us: 1e-3,
  '\u00b5s': 1e-3,
  '\u03bcs': 1e-3,
  ns: 1e-6,
};
const GO_PART = /(\d{1,15})(?:\.(\d{1,15}))?(ms|us|\u00b5s|\u03bcs|ns|h|m|s)/y;

/** A delay read from a header, and how finely it was given (ms): `1000` for whole seconds. */
export interface ReadDelay {
  readonly ms: number;
  readonly precisionMs: number;
  /** Said as a delay, not an instant (see `ServerQuotaReport.resetFromArrival`). */
  readonly fromArrival?: true;
}

/**
 * A Go duration as OpenAI sends its resets (`1s`, `6m0s`, `20ms`, `1h2m3.5s`, `0s`) to ms, or
 * `undefined` for anything else (no sign, no bare number). Its precision is that of its last
 * part: `6m0s` is known to the second, `20ms` to the ms, `3.5s` to 100 ms.
 */
export function parseGoDuration(text: string): ReadDelay | undefined {
  if (text.length === 0 || text.length > MAX_NUMBER_TEXT) return undefined;
  let ms = 0;
  let precisionMs = 1;
  GO_PART.lastIndex = 0;
  while (GO_PART.lastIndex < text.length) {
    const at = GO_PART.lastIndex;
    const match = GO_PART.exec(text);
    if (match === null || match.index !== at) return undefined;
    const [, whole = '', fraction = '', unit = ''] = match;
    const unitMs = GO_UNITS[unit] ?? 0;
    ms += Number(`${whole}.${fraction || '0'}`) * unitMs;
    precisionMs = Math.max(1, unitMs / 10 ** fraction.length);
  }
  return { ms: floatToDelayMs(ms), precisionMs };
}
