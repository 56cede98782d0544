/**
 * HTTP-date (RFC 9110 §5.6.7), parsed strictly. `Date.parse` is not used: it accepts junk
 * such as `"1"` or `"Sun 1994"`, and its handling of non-ISO strings differs by engine.
 */

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const LONG_DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

// Fixed-width like the grammar; the names are matched loosely here and looked up exactly
// below, because HTTP-date is case-sensitive (`sun, 06 nov 1994 ... gmt` is not one).
/** IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = /^([A-Za-z]{3}), (\d\d) ([A-Za-z]{3}) (\d{4}) (\d\d):(\d\d):(\d\d) GMT$/;
/** Obsolete RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`. */
const RFC850_DATE = /^([A-Za-z]{6,9}), (\d\d)-([A-Za-z]{3})-(\d\d) (\d\d):(\d\d):(\d\d) GMT$/;
/** Obsolete asctime: `Sun Nov  6 08:49:37 1994` (a one-digit day is padded with a space). */
const ASCTIME_DATE = /^([A-Za-z]{3}) ([A-Za-z]{3}) ( \d|\d\d) (\d\d):(\d\d):(\d\d) (\d{4})$/;

const DAY_MS = 86_400_000;

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
  const date = Number(dateText);
  const [hh, mm, ss] = [Number(hhText), Number(mmText), Number(ssText)];
  if (weekday < 0 || month < 0) return undefined;
  if (date < 1 || date > daysInMonth(year, month)) return undefined;
  if (hh > 23 || mm > 59 || ss > 60) return undefined;
  const days = daysFromCivil(year, month + 1, date);
  // 1970-01-01 was a Thursday (4).
  if ((((days + 4) % 7) + 7) % 7 !== weekday) return undefined;
  return days * DAY_MS + ((hh * 60 + mm) * 60 + ss) * 1000;
}

function daysInMonth(year: number, month: number): number {
  if (month === 1) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month] ?? 0;
}

/**
 * Days since 1970-01-01 of a proleptic Gregorian date (month 1-12), by Howard Hinnant's
 * `days_from_civil`. `Date.UTC` would do, except that it maps years 0-99 to 1900-1999.
 */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * ((month + 9) % 12) + 2) / 5) + day - 1;
  const dayOfEra =
    yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}
