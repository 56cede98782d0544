/**
 * RFC 3339 / ISO 8601 date-times as rate-limit resets use them: Anthropic's
 * `anthropic-ratelimit-requests-reset: 2025-01-15T14:24:00Z`, Jira's `X-RateLimit-Reset`
 * in `yyyy-MM-ddTHH:mmZ` (to the minute). `Date.parse` is not used: it accepts `"1"` and
 * engine-specific forms.
 */

import { floatToDelayMs } from './duration.js';

/** Date, `T` (or a space, as RFC 3339 allows), time with optional seconds and fraction, zone. */
const ISO_DATE_TIME =
  /^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d{1,9}))?)?(?:[Zz]|([+-])(\d\d):?(\d\d))$/;

/** An instant read from a header, and how finely it was given (ms). */
export interface ReadInstant {
  readonly epochMs: number;
  readonly precisionMs: number;
}

/**
 * Parses an RFC 3339 date-time (with `Z` or an offset; minutes-only as Jira sends allowed) into
 * Unix epoch ms, or `undefined` when it is not one, names a day or time that does not exist, a
 * leap second, or a year before 1970. Its precision is its last field: 60000 without seconds,
 * 1000 with whole seconds, finer with a fraction. Fractions beyond ms round up, so a wait read
 * from it is never short.
 *
 * @example parseIsoDate('2025-01-15T14:24:00Z') // { epochMs: 1736951040000, precisionMs: 1000 }
 */
export function parseIsoDate(text: string): ReadInstant | undefined {
  const m = text.length <= 40 ? ISO_DATE_TIME.exec(text) : null;
  if (m === null) return undefined;
  const [year, month, day, hours, minutes, seconds, offH, offM] = [1, 2, 3, 4, 5, 6, 9, 10].map(
    (i) => Number(m[i] ?? 0),
  ) as [number, number, number, number, number, number, number, number];
  const at = Date.UTC(year, month - 1, day, hours, minutes, seconds);
  const back = new Date(at);
  // Date.UTC rolls an impossible field over (31 Feb, 24:00, :60): it must read back the same.
  if (
    year < 1970 ||
    back.getUTCDate() !== day ||
    back.getUTCHours() !== hours ||
    back.getUTCMinutes() !== minutes ||
    offH > 23 ||
    offM > 59
  ) {
    return undefined;
  }
  const offsetMs = (m[8] === '-' ? -1 : 1) * (offH * 60 + offM) * 60_000;
  const digits = m[7]?.length ?? 0;
  const fractionMs = digits === 0 ? 0 : floatToDelayMs(Number(`0.${m[7]}`) * 1000);
  return {
    epochMs: at - offsetMs + fractionMs,
    precisionMs: m[6] === undefined ? 60_000 : Math.max(1, 1000 / 10 ** digits),
  };
}
