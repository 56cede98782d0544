/**
 * HTTP-date (RFC 9110 §5.6.7), parsed strictly. `Date.parse` is not used: it accepts junk
 * such as `"1"` or `"Sun 1994"`, and its handling of non-ISO strings differs by engine.
 */

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const LONG_DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const DAYS = LONG_DAYS.map((day) => day.slice(0, 3));

// Fixed-width like the grammar; the names are matched loosely here and looked up exactly
// below, because HTTP-date is case-sensitive (`sun, 06 nov 1994 ... gmt` is not one).
/** IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = /^([A-Za-z]{3}), (\d\d) ([A-Za-z]{3}) (\d{4}) (\d\d):(\d\d):(\d\d) GMT$/;
/** Obsolete RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`. */
const RFC850_DATE = /^([A-Za-z]{6,9}), (\d\d)-([A-Za-z]{3})-(\d\d) (\d\d):(\d\d):(\d\d) GMT$/;
/** Obsolete asctime: `Sun Nov  6 08:49:37 1994` (a one-digit day is padded with a space). */
const ASCTIME_DATE = /^([A-Za-z]{3}) ([A-Za-z]{3}) ( \d|\d\d) (\d\d):(\d\d):(\d\d) (\d{4})$/;

/**
 * Parses an HTTP-date in any of its three forms (a recipient must accept all three) into
 * Unix epoch ms, or `undefined` when the text is not exactly one of them, names a day or
 * month that does not exist (`31 Feb`, `25:00:00`), or gives a weekday the date does not
 * fall on: an inconsistent date is corrupt, and we cannot tell which half is right.
 * Seconds up to 60 are accepted for a leap second.
 *
 * `nowEpochMs` only resolves the two-digit years of the RFC 850 form: the year in now's
 * century, unless that is more than 50 years in the future, in which case the century
 * before (RFC 9110 §5.6.7); likewise the next century when that is not too far ahead.
 *
 * @param value - the field value, already trimmed
 * @param nowEpochMs - the current wall-clock time, Unix epoch ms
 * @returns Unix epoch ms, or `undefined`
 * @example
 * parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT', now) // 784111777000
 */
export function parseHttpDate(value: string, nowEpochMs: number): number | undefined {
  let m = IMF_FIXDATE.exec(value);
  if (m !== null) {
    const [, day, date, month, year, hh, mm, ss] = m;
    return toEpochMs(DAYS.indexOf(day ?? ''), Number(year), month, date, hh, mm, ss);
  }
  m = RFC850_DATE.exec(value);
  if (m !== null) {
    const [, day, date, month, yy, hh, mm, ss] = m;
    const year = fullYear(Number(yy), nowEpochMs);
    if (year === undefined) return undefined;
    return toEpochMs(LONG_DAYS.indexOf(day ?? ''), year, month, date, hh, mm, ss);
  }
  m = ASCTIME_DATE.exec(value);
  if (m !== null) {
    const [, day, month, date, hh, mm, ss, year] = m;
    return toEpochMs(DAYS.indexOf(day ?? ''), Number(year), month, date?.trim(), hh, mm, ss);
  }
  return undefined;
}

function fullYear(twoDigits: number, nowEpochMs: number): number | undefined {
  if (!Number.isFinite(nowEpochMs)) return undefined;
  const nowYear = new Date(nowEpochMs).getUTCFullYear();
  let year = Math.floor(nowYear / 100) * 100 + twoDigits;
  if (year > nowYear + 50) year -= 100;
  else if (year + 100 <= nowYear + 50) year += 100;
  return year;
}

function toEpochMs(
  weekday: number,
  year: number,
  monthName: string | undefined,
  dateText: string | undefined,
  hhText: string | undefined,
  mmText: string | undefined,
  ssText: string | undefined,
): number | undefined {
  const month = MONTHS.indexOf(monthName ?? '');
  const [hh, mm, ss] = [Number(hhText), Number(mmText), Number(ssText)];
  // Not Date.UTC: it maps the years 0-99 to 1900-1999. A day the month does not have rolls
  // over into the next month, which is how `31 Feb` (or day 00) is caught.
  const day = new Date(0);
  day.setUTCFullYear(year, month, Number(dateText));
  if (month < 0 || day.getUTCMonth() !== month || day.getUTCDay() !== weekday) return undefined;
  if (hh > 23 || mm > 59 || ss > 60) return undefined;
  return day.getTime() + ((hh * 60 + mm) * 60 + ss) * 1000;
}
