import fc from 'fast-check';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { ServerQuota } from '../../src/core/limiter.js';
import { ietfUnitQuotas } from '../../src/http/ratelimit-headers.js';
import { MAX_DELAY_MS, type ServerQuotaReport } from '../../src/http/index.js';
import { parseRateLimitHeaders } from '../../src/http/ratelimit-headers.js';

/** A wall clock nobody cares about, for headers that do not depend on it. */
const NOW = Date.UTC(2026, 10, 29, 14, 0, 0);

function parse(headers: Record<string, string>, now = NOW): ServerQuotaReport | undefined {
  return parseRateLimitHeaders(new Headers(headers), now);
}

describe('IETF RateLimit / RateLimit-Policy (draft-08 and later)', () => {
  it.each([
    [
      'one item without a policy',
      { ratelimit: '"default";r=50;t=30' },
      { remaining: 50, resetMs: 30_000, policy: 'default', source: 'ietf' },
    ],
    [
      'an item without t (no time window)',
      { ratelimit: '"default";r=999;pk=:dHJpYWwxMjEzMjM=:' },
      { remaining: 999, policy: 'default', source: 'ietf' },
    ],
    [
      'a token name instead of a string',
      { ratelimit: 'default;r=5;t=1' },
      { remaining: 5, resetMs: 1000, policy: 'default', source: 'ietf' },
    ],
    [
      'the fewest remaining of several items, with its policy',
      {
        ratelimit: '"burst";r=10;t=1, "daily";r=3;t=3600',
        'ratelimit-policy': '"burst";q=20;w=1, "daily";q=1000;w=86400',
      },
      {
        remaining: 3,
        resetMs: 3_600_000,
        limit: 1000,
        windowMs: 86_400_000,
        policy: 'daily',
        source: 'ietf',
      },
    ],
    [
      'the longest reset when remaining ties',
      { ratelimit: '"a";r=0;t=5, "b";r=0;t=50, "c";r=0;t=7' },
      { remaining: 0, resetMs: 50_000, policy: 'b', source: 'ietf' },
    ],
    [
      'an item with t over one without when remaining ties',
      { ratelimit: '"a";r=0, "b";r=0;t=1' },
      { remaining: 0, resetMs: 1000, policy: 'b', source: 'ietf' },
    ],
    [
      'the policy with the same partition key',
      {
        ratelimit: '"p";r=1;pk=:Yg==:',
        'ratelimit-policy': '"p";q=10;w=1;pk=:YQ==:, "p";q=20;w=2;pk=:Yg==:',
      },
      { remaining: 1, limit: 20, windowMs: 2000, policy: 'p', source: 'ietf' },
    ],
    [
      'the first policy of that name when no partition key matches',
      {
        ratelimit: '"p";r=1;pk=:Yw==:',
        'ratelimit-policy': '"p";q=10;w=1;pk=:YQ==:, "p";q=20;w=2;pk=:Yg==:',
      },
      { remaining: 1, limit: 10, windowMs: 1000, policy: 'p', source: 'ietf' },
    ],
    [
      'no limit when no policy has that name',
      { ratelimit: '"a";r=1;t=1', 'ratelimit-policy': '"b";q=10;w=1' },
      { remaining: 1, resetMs: 1000, policy: 'a', source: 'ietf' },
    ],
    [
      'no limit or window from a malformed policy header',
      { ratelimit: '"a";r=1;t=1', 'ratelimit-policy': '"a";q=10;w=1,' },
      { remaining: 1, resetMs: 1000, policy: 'a', source: 'ietf' },
    ],
    [
      'a policy without w, or with w=0, or a negative or decimal q',
      { ratelimit: '"a";r=1', 'ratelimit-policy': '"a";q=-1;w=0' },
      { remaining: 1, policy: 'a', source: 'ietf' },
    ],
    [
      'items without a usable r skipped',
      { ratelimit: '"a";t=5, "b";r=1.5;t=5, ("c" "d");r=0, ?1;r=0, "e";r=7;t=9' },
      { remaining: 7, resetMs: 9000, policy: 'e', source: 'ietf' },
    ],
    [
      'unknown parameters ignored',
      { ratelimit: '"a";r=4;t=2;acme-burst=5;note="x";flag' },
      { remaining: 4, resetMs: 2000, policy: 'a', source: 'ietf' },
    ],
    [
      'a negative r as 0 and a negative t as 0',
      { ratelimit: '"a";r=-1;t=-5' },
      { remaining: 0, resetMs: 0, policy: 'a', source: 'ietf' },
    ],
    [
      'a decimal t ignored',
      { ratelimit: '"a";r=3;t=1.5' },
      { remaining: 3, policy: 'a', source: 'ietf' },
    ],
    [
      'a huge t capped at MAX_DELAY_MS',
      { ratelimit: '"a";r=0;t=999999999999999' },
      { remaining: 0, resetMs: MAX_DELAY_MS, policy: 'a', source: 'ietf' },
    ],
    [
      'the largest structured-field integer as remaining',
      { ratelimit: '"a";r=999999999999999' },
      { remaining: 999_999_999_999_999, policy: 'a', source: 'ietf' },
    ],
  ] as const)('reads %s', (_case, headers, report) => {
    expect(parse(headers)).toEqual(report);
  });

  it('reads a list split over two RateLimit fields', () => {
    const headers = new Headers();
    headers.append('RateLimit', '"hour";r=500;t=600');
    headers.append('RateLimit', '"day";r=20;t=7200');
    expect(parseRateLimitHeaders(headers, NOW)).toEqual({
      remaining: 20,
      resetMs: 7_200_000,
      policy: 'day',
      source: 'ietf',
    });
  });

  it.each([
    ['a trailing comma', '"a";r=2;t=60,'],
    ['a space before a parameter', '"a" ;r=2'],
    ['an unterminated string', '"a;r=2'],
    ['an uppercase parameter', '"a";R=2'],
    ['r without a name', 'r=2'],
    ['nothing but a name', '"a"'],
  ])('ignores the whole field with %s and falls back to older headers', (_case, value) => {
    expect(parse({ ratelimit: value })).toBeUndefined();
    expect(parse({ ratelimit: value, 'x-ratelimit-remaining': '9' })).toEqual({
      remaining: 9,
      source: 'x-ratelimit',
    });
  });
});

describe('IETF quota units (`qu`)', () => {
  const headers = new Headers({
    ratelimit: '"req";r=50;t=30, "bytes";r=10;t=30, "tok";r=1200;t=20, "tok2";r=900;t=40',
    'ratelimit-policy':
      '"req";q=100;w=60;qu="request", "bytes";q=1000000;qu="content-bytes";w=60, "tok";q=2000;qu="tokens";w=60, "tok2";q=5000;qu=tokens;w=3600',
  });

  it('reports on requests only: a quota in another unit is not a count of requests', () => {
    // The bytes item has fewer remaining, but 10 bytes say nothing of the requests left.
    expect(parseRateLimitHeaders(headers, NOW)).toEqual({
      remaining: 50,
      resetMs: 30_000,
      limit: 100,
      windowMs: 60_000,
      policy: 'req',
      source: 'ietf',
    });
  });

  it('reads the other units apart, the most restrictive of each', () => {
    expect(ietfUnitQuotas(headers)).toEqual([
      { unit: 'content-bytes', remaining: 10, limit: 1_000_000, resetMs: 30_000, windowMs: 60_000 },
      { unit: 'tokens', remaining: 900, limit: 5_000, resetMs: 40_000, windowMs: 3_600_000 },
    ]);
    expect(ietfUnitQuotas(new Headers({ ratelimit: '"a";r=1;t=1' }))).toEqual([]);
  });

  it('is not read when the only items are in other units', () => {
    const bytes = new Headers({
      ratelimit: '"bytes";r=10;t=30',
      'ratelimit-policy': '"bytes";q=1000000;qu="content-bytes";w=60',
    });
    expect(parseRateLimitHeaders(bytes, NOW)).toBeUndefined();
  });
});

describe('draft-7 RateLimit dictionary', () => {
  it.each([
    [
      'the draft example with its policy',
      { ratelimit: 'limit=100, remaining=50, reset=5', 'ratelimit-policy': '100;w=10' },
      { remaining: 50, resetMs: 5000, limit: 100, windowMs: 10_000, source: 'draft-7' },
    ],
    [
      'the window of the policy whose quota is the limit',
      { ratelimit: 'limit=100, remaining=1, reset=7', 'ratelimit-policy': '10;w=1, 100;w=60' },
      { remaining: 1, resetMs: 7000, limit: 100, windowMs: 60_000, source: 'draft-7' },
    ],
    [
      'no window when no policy has that quota',
      { ratelimit: 'limit=100, remaining=1, reset=7', 'ratelimit-policy': '10;w=1' },
      { remaining: 1, resetMs: 7000, limit: 100, source: 'draft-7' },
    ],
    [
      'members in any order, with parameters ignored',
      { ratelimit: 'reset=60;x=1, remaining=2, limit=3' },
      { remaining: 2, resetMs: 60_000, limit: 3, source: 'draft-7' },
    ],
    ['remaining alone', { ratelimit: 'remaining=2' }, { remaining: 2, source: 'draft-7' }],
    [
      'negatives: remaining and reset as 0, limit dropped',
      { ratelimit: 'limit=-3, remaining=-2, reset=-60' },
      { remaining: 0, resetMs: 0, source: 'draft-7' },
    ],
    [
      'non-integer limit and reset dropped',
      { ratelimit: 'limit=3.5, remaining=2, reset="60"' },
      { remaining: 2, source: 'draft-7' },
    ],
  ] as const)('reads %s', (_case, headers, report) => {
    expect(parse(headers)).toEqual(report);
  });

  it.each([
    ['no remaining', 'limit=3, reset=60'],
    ['a decimal remaining', 'limit=3, remaining=2.5, reset=60'],
    ['an inner-list remaining', 'remaining=(1 2)'],
    ['a boolean remaining', 'remaining'],
    ['an uppercase key', 'Limit=3, Remaining=2, Reset=60'],
    ['a trailing comma', 'limit=3, remaining=2, reset=60,'],
  ])('gives nothing for %s', (_case, value) => {
    expect(parse({ ratelimit: value })).toBeUndefined();
  });
});

describe('precedence', () => {
  const ietf = { ratelimit: '"a";r=1;t=1' };
  const draft7 = { ratelimit: 'limit=9, remaining=2, reset=2' };
  const draft6 = { 'ratelimit-remaining': '3' };
  const legacy = { 'x-ratelimit-remaining': '4' };

  it.each([
    ['IETF over everything', { ...ietf, ...draft6, ...legacy }, 'ietf'],
    ['draft-7 over draft-6 and X-RateLimit', { ...draft7, ...draft6, ...legacy }, 'draft-7'],
    ['draft-6 over X-RateLimit', { ...draft6, ...legacy }, 'draft-6'],
    ['X-RateLimit last', legacy, 'x-ratelimit'],
    [
      'draft-6 when the IETF field has no usable item',
      { ratelimit: '"a";t=1', ...draft6 },
      'draft-6',
    ],
  ] as const)('picks %s', (_case, headers, source) => {
    expect(parse(headers)?.source).toBe(source);
  });

  it('never mixes fields from two families', () => {
    expect(parse({ ...ietf, 'x-ratelimit-limit': '100', 'ratelimit-limit': '100' })).toEqual({
      remaining: 1,
      resetMs: 1000,
      policy: 'a',
      source: 'ietf',
    });
  });
});

describe('the report', () => {
  it('is a ServerQuota, so it can be passed to observe()', () => {
    expectTypeOf<ServerQuotaReport>().toExtend<ServerQuota>();
  });

  const fragments = fc.constantFrom(
    '"a"',
    'a',
    ';',
    '; ',
    ',',
    ', ',
    ' ',
    'r=',
    't=',
    'q=',
    'w=',
    'pk=',
    'limit=',
    'remaining=',
    'reset=',
    '-',
    '0',
    '7',
    '1.5',
    '999999999999999',
    '9999999999999999999',
    '1795960804',
    ':YQ==:',
    '?1',
    '(',
    ')',
    '@1',
    '%"a"',
    '"',
  );
  const value = fc.oneof(
    fc.array(fragments, { maxLength: 12 }).map((parts) => parts.join('')),
    fc.string({ unit: fc.constantFrom(...' !"#$%()*,-.0123456789:;=?@AZaz'.split('')) }),
  );
  const names = [
    'ratelimit',
    'ratelimit-policy',
    'ratelimit-limit',
    'ratelimit-remaining',
    'ratelimit-reset',
    'x-ratelimit-limit',
    'x-ratelimit-remaining',
    'x-ratelimit-reset',
    'x-ratelimit-used',
    'x-ratelimit-resource',
  ];
  const headerSets = fc.dictionary(fc.constantFrom(...names), value);

  it('never throws and never holds NaN, Infinity, a negative or an undefined field', () => {
    fc.assert(
      fc.property(headerSets, fc.oneof(fc.constant(NOW), fc.double()), (headers, now) => {
        const report = parse(headers, now);
        if (report === undefined) return;
        expect(Object.values(report)).not.toContain(undefined);
        expect(Number.isSafeInteger(report.remaining) && report.remaining >= 0).toBe(true);
        if (report.resetMs !== undefined) {
          expect(Number.isInteger(report.resetMs)).toBe(true);
          expect(report.resetMs).toBeGreaterThanOrEqual(0);
          expect(report.resetMs).toBeLessThanOrEqual(MAX_DELAY_MS);
        }
        if (report.limit !== undefined) {
          expect(Number.isSafeInteger(report.limit) && report.limit >= 0).toBe(true);
        }
        if (report.windowMs !== undefined) {
          expect(Number.isFinite(report.windowMs) && report.windowMs > 0).toBe(true);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
