import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_DELAY_MS } from '../../src/http/index.js';
import { parseRetryAfter } from '../../src/http/retry-after.js';

/** Sun, 06 Nov 1994 08:49:00 GMT: 37 s before RFC 9110's example date. */
const NOW = Date.UTC(1994, 10, 6, 8, 49, 0);

describe('parseRetryAfter, delay-seconds', () => {
  it.each([
    ['0', 0],
    ['1', 1000],
    ['120', 120_000],
    ['007', 7000],
    ['  7 ', 7000],
    ['\t7\t', 7000],
    ['86400', 86_400_000],
  ])('reads %j as %d ms', (value, expected) => {
    expect(parseRetryAfter(value, NOW)).toBe(expected);
  });

  it.each([
    ['1.5', 1500],
    ['0.5', 500],
    ['1.1', 1100],
    ['2.25', 2250],
    ['0.0001', 1],
    ['1.0009', 1001],
    ['1.000', 1000],
  ])('reads the decimal %j as %d ms, rounding sub-millisecond digits up', (value, expected) => {
    expect(parseRetryAfter(value, NOW)).toBe(expected);
  });

  it.each([['-5'], ['-0'], ['-1.5'], ['  -60 ']])('reads the negative %j as 0', (value) => {
    expect(parseRetryAfter(value, NOW)).toBe(0);
  });

  it.each([
    ['2147483'], // 24.8 days: just under the cap
  ])('keeps %j seconds below the cap exact', (value) => {
    expect(parseRetryAfter(value, NOW)).toBe(2_147_483_000);
  });

  it.each([
    ['2147484'],
    ['99999999999'],
    ['999999999999999999999999999999'],
    ['9'.repeat(400)], // Number() of this is Infinity
    [`${'9'.repeat(400)}.5`],
  ])('caps the huge %j at MAX_DELAY_MS', (value) => {
    expect(parseRetryAfter(value, NOW)).toBe(MAX_DELAY_MS);
  });
});

describe('parseRetryAfter, HTTP-date', () => {
  it.each([
    ['IMF-fixdate', 'Sun, 06 Nov 1994 08:49:37 GMT'],
    ['RFC 850', 'Sunday, 06-Nov-94 08:49:37 GMT'],
    ['asctime', 'Sun Nov  6 08:49:37 1994'],
    ['IMF-fixdate with spaces around', '  Sun, 06 Nov 1994 08:49:37 GMT '],
  ])('reads the %s form as the time until then', (_form, value) => {
    expect(parseRetryAfter(value, NOW)).toBe(37_000);
  });

  it.each([
    ['IMF-fixdate', 'Sun, 06 Nov 1994 08:48:00 GMT'],
    ['RFC 850', 'Sunday, 06-Nov-94 08:48:00 GMT'],
    ['asctime', 'Sun Nov  6 08:48:00 1994'],
    ['the epoch', 'Thu, 01 Jan 1970 00:00:00 GMT'],
    ['year 0001', 'Mon, 01 Jan 0001 00:00:00 GMT'],
  ])('gives 0 for a date in the past (%s)', (_form, value) => {
    expect(parseRetryAfter(value, NOW)).toBe(0);
  });

  it('gives 0 for exactly now', () => {
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:00 GMT', NOW)).toBe(0);
  });

  it('rounds a fractional now up to whole ms, so the retry is never early', () => {
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', NOW + 0.25)).toBe(37_000);
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', NOW + 1.5)).toBe(36_999);
  });

  it('reads the asctime form with a two-digit day, zero-padded or not (date3 allows both)', () => {
    expect(parseRetryAfter('Thu Nov 10 08:49:00 1994', NOW)).toBe(4 * 86_400_000);
    expect(parseRetryAfter('Sun Nov 06 08:49:37 1994', NOW)).toBe(37_000);
  });

  it('accepts a leap second', () => {
    expect(
      parseRetryAfter('Sat, 31 Dec 2016 23:59:60 GMT', Date.UTC(2016, 11, 31, 23, 59, 0)),
    ).toBe(60_000);
  });

  it('accepts 29 February in a leap year, including 2000', () => {
    expect(parseRetryAfter('Thu, 29 Feb 2024 00:00:10 GMT', Date.UTC(2024, 1, 29))).toBe(10_000);
    expect(parseRetryAfter('Tue, 29 Feb 2000 00:00:10 GMT', Date.UTC(2000, 1, 29))).toBe(10_000);
  });

  it('caps a far-future date at MAX_DELAY_MS', () => {
    expect(parseRetryAfter('Fri, 31 Dec 9999 23:59:59 GMT', NOW)).toBe(MAX_DELAY_MS);
  });

  describe('RFC 850 two-digit years (RFC 9110 §5.6.7)', () => {
    const now2026 = Date.UTC(2026, 10, 29, 14, 0, 0);

    it('reads a year up to 50 years ahead in the current century', () => {
      // 06-Nov-75 is 2075, 49 years ahead (a Wednesday; in 1975 it was a Thursday): a
      // future date, so capped, where 1975 would have given 0.
      expect(parseRetryAfter('Wednesday, 06-Nov-75 00:00:00 GMT', now2026)).toBe(MAX_DELAY_MS);
      expect(parseRetryAfter('Thursday, 06-Nov-75 00:00:00 GMT', now2026)).toBeUndefined();
    });

    it('reads a year more than 50 years ahead as the century before', () => {
      // 06-Nov-77 would be 2077, 51 years ahead, so it is 1977 (a Sunday): in the past.
      expect(parseRetryAfter('Sunday, 06-Nov-77 00:00:00 GMT', now2026)).toBe(0);
      expect(parseRetryAfter('Saturday, 06-Nov-77 00:00:00 GMT', now2026)).toBeUndefined();
    });

    it('reads a year near the end of a century as the next one', () => {
      const now2099 = Date.UTC(2099, 11, 31, 23, 59, 0);
      // 01-Jan-00 is 2100 (a Friday), 1 minute ahead, not 2000 (a Saturday).
      expect(parseRetryAfter('Friday, 01-Jan-00 00:00:00 GMT', now2099)).toBe(60_000);
      expect(parseRetryAfter('Saturday, 01-Jan-00 00:00:00 GMT', now2099)).toBeUndefined();
    });

    it('cannot resolve a two-digit year without a finite now', () => {
      expect(parseRetryAfter('Sunday, 06-Nov-94 08:49:37 GMT', Number.NaN)).toBeUndefined();
    });
  });
});

describe('parseRetryAfter, garbage', () => {
  it.each([
    ['absent (null)', null],
    ['absent (undefined)', undefined],
    ['empty', ''],
    ['blank', '   '],
    ['a word', 'abc'],
    ['an exponent (Number() reads 1000)', '1e3'],
    ['a plus sign', '+5'],
    ['hex', '0x10'],
    ['a unit', '5s'],
    ['a unit after a space', '5 seconds'],
    ['a trailing dot', '1.'],
    ['a leading dot', '.5'],
    ['a comma decimal', '1,5'],
    ['two values joined by a repeated header', '120, 120'],
    ['Infinity', 'Infinity'],
    ['NaN', 'NaN'],
    ['a lone minus', '-'],
    ['a minus with garbage', '-abc'],
    ['inner space', '1 20'],
    ['a newline around it', '\n7\n'],
    ['an ISO 8601 date', '1994-11-06T08:49:37Z'],
    ['a date Date.parse accepts', 'Sun 1994'],
    ['a weekday that is not one', 'Sux, 06 Nov 1994 08:49:37 GMT'],
    ['a weekday the date does not fall on', 'Mon, 06 Nov 1994 08:49:37 GMT'],
    ['a month that is not one', 'Sun, 06 Nox 1994 08:49:37 GMT'],
    ['hour 25', 'Sun, 06 Nov 1994 25:00:00 GMT'],
    ['hour 24', 'Mon, 07 Nov 1994 24:00:00 GMT'],
    ['minute 60', 'Sun, 06 Nov 1994 08:60:00 GMT'],
    ['second 61', 'Sun, 06 Nov 1994 08:49:61 GMT'],
    ['day 00', 'Sun, 00 Nov 1994 08:49:37 GMT'],
    ['31 November', 'Thu, 31 Nov 1994 08:49:37 GMT'],
    ['29 February in a common year', 'Wed, 29 Feb 2023 00:00:00 GMT'],
    ['29 February 1900', 'Thu, 29 Feb 1900 00:00:00 GMT'],
    ['a lowercase day and month', 'sun, 06 nov 1994 08:49:37 GMT'],
    ['an uppercase month', 'Sun, 06 NOV 1994 08:49:37 GMT'],
    ['UTC instead of GMT', 'Sun, 06 Nov 1994 08:49:37 UTC'],
    ['a numeric zone', 'Sun, 06 Nov 1994 08:49:37 +0000'],
    ['no zone', 'Sun, 06 Nov 1994 08:49:37'],
    ['a one-digit day in IMF-fixdate', 'Sun, 6 Nov 1994 08:49:37 GMT'],
    ['a two-digit year in IMF-fixdate', 'Sun, 06 Nov 94 08:49:37 GMT'],
    ['a double space in IMF-fixdate', 'Sun,  06 Nov 1994 08:49:37 GMT'],
    ['no comma in IMF-fixdate', 'Sun 06 Nov 1994 08:49:37 GMT'],
    ['a one-digit hour', 'Sun, 06 Nov 1994 8:49:37 GMT'],
    ['a short weekday in RFC 850', 'Sun, 06-Nov-94 08:49:37 GMT'],
    ['a four-digit year in RFC 850', 'Sunday, 06-Nov-1994 08:49:37 GMT'],
    ['an unpadded day in asctime', 'Sun Nov 6 08:49:37 1994'],
    ['asctime with a zone', 'Sun Nov  6 08:49:37 1994 GMT'],
    ['an invalid time in asctime', 'Sun Nov  6 25:00:00 1994'],
  ])('ignores %s', (_case, value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });

  it('ignores an HTTP-date when now is not a finite number', () => {
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', Number.NaN)).toBeUndefined();
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', Number.POSITIVE_INFINITY)).toBe(
      undefined,
    );
  });

  it('still reads delay-seconds when now is not a finite number', () => {
    expect(parseRetryAfter('120', Number.NaN)).toBe(120_000);
  });
});

describe('parseRetryAfter, for any input', () => {
  const text = fc.oneof(
    fc.string(),
    fc
      .array(
        fc.constantFrom(
          'Sun',
          'Sunday',
          'Nov',
          ', ',
          ' ',
          '-',
          ':',
          '.',
          'GMT',
          '0',
          '06',
          '1994',
          '94',
          '9',
          '99999999999999999999',
        ),
      )
      .map((parts) => parts.join('')),
  );

  it('returns undefined or a whole number of ms from 0 to MAX_DELAY_MS, and never throws', () => {
    fc.assert(
      fc.property(text, fc.double(), (value, now) => {
        const delay = parseRetryAfter(value, now);
        if (delay === undefined) return;
        expect(Number.isInteger(delay)).toBe(true);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(MAX_DELAY_MS);
      }),
      { numRuns: 2000 },
    );
  });

  it('agrees with Date.UTC on every IMF-fixdate it builds', () => {
    const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
    const months = [
      'Jan',
      'Feb',
      'Mar',
      'Apr',
      'May',
      'Jun',
      'Jul',
      'Aug',
      'Sep',
      'Oct',
      'Nov',
      'Dec',
    ];
    const pad = (n: number, width = 2) => String(n).padStart(width, '0');
    fc.assert(
      fc.property(
        fc.date({
          min: new Date(Date.UTC(100, 0, 1)),
          max: new Date(Date.UTC(9999, 11, 31)),
          noInvalidDate: true,
        }),
        (date) => {
          const at = Math.floor(date.getTime() / 1000) * 1000;
          const d = new Date(at);
          const value = `${days[d.getUTCDay()]}, ${pad(d.getUTCDate())} ${months[d.getUTCMonth()]} ${pad(d.getUTCFullYear(), 4)} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} GMT`;
          const now = at - 1000;
          expect(parseRetryAfter(value, now)).toBe(1000);
        },
      ),
    );
  });
});
