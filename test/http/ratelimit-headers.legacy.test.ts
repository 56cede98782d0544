import { describe, expect, it } from 'vitest';
import { MAX_DELAY_MS, type ServerQuotaReport } from '../../src/http/index.js';
import { parseRateLimitHeaders } from '../../src/http/ratelimit-headers.js';

/** A wall clock nobody cares about, for headers that do not depend on it. */
const NOW = Date.UTC(2026, 10, 29, 14, 0, 0);

function parse(headers: Record<string, string>, now = NOW): ServerQuotaReport | undefined {
  return parseRateLimitHeaders(new Headers(headers), now);
}

describe('draft-6 RateLimit-Limit / -Remaining / -Reset', () => {
  it.each([
    [
      'all three with RateLimit-Policy',
      {
        'ratelimit-limit': '10',
        'ratelimit-remaining': '4',
        'ratelimit-reset': '7',
        'ratelimit-policy': '10;w=1, 100;w=60',
      },
      { remaining: 4, resetMs: 7000, limit: 10, windowMs: 1000, source: 'draft-6' },
    ],
    [
      'policies inside an older RateLimit-Limit',
      { 'ratelimit-limit': '10, 10;w=1, 50;w=60', 'ratelimit-remaining': '4' },
      { remaining: 4, limit: 10, windowMs: 1000, source: 'draft-6' },
    ],
    ['remaining alone', { 'ratelimit-remaining': '0' }, { remaining: 0, source: 'draft-6' }],
    [
      'garbage limit and reset dropped',
      { 'ratelimit-limit': 'ten', 'ratelimit-remaining': '4', 'ratelimit-reset': '7s' },
      { remaining: 4, source: 'draft-6' },
    ],
    [
      'a reset in Unix seconds (GitLab)',
      { 'ratelimit-remaining': '4', 'ratelimit-reset': String(NOW / 1000 + 90) },
      { remaining: 4, resetMs: 90_000, source: 'draft-6' },
    ],
    [
      'a negative remaining and reset as 0',
      { 'ratelimit-remaining': '-1', 'ratelimit-reset': '-1' },
      { remaining: 0, resetMs: 0, source: 'draft-6' },
    ],
  ] as const)('reads %s', (_case, headers, report) => {
    expect(parse(headers)).toEqual(report);
  });

  it.each([
    ['no remaining', { 'ratelimit-limit': '10', 'ratelimit-reset': '7' }],
    ['a word', { 'ratelimit-remaining': 'abc' }],
    ['a decimal', { 'ratelimit-remaining': '2.5' }],
    ['an exponent', { 'ratelimit-remaining': '1e3' }],
    ['two values', { 'ratelimit-remaining': '2, 3' }],
    ['an empty value', { 'ratelimit-remaining': '' }],
  ])('gives nothing for %s', (_case, headers) => {
    expect(parse(headers)).toBeUndefined();
  });
});

describe('X-RateLimit-*', () => {
  const nowS = NOW / 1000;
  it.each([
    ['a delta-seconds reset', '60', 60_000],
    ['a zero reset', '0', 0],
    ['a decimal delta', '1.5', 1500, 100],
    ['a delta of exactly a year, capped', '31536000', MAX_DELAY_MS],
    ['a Unix-seconds reset', String(nowS + 3600), 3_600_000],
    ['a decimal Unix-seconds reset', `${nowS + 1}.123`, 1123, 1],
    ['a Jira ISO reset, to the minute', '2026-11-29T14:01Z', 60_000, 60_000],
    ['a Unix-seconds reset in the past', String(nowS - 10), 0],
    ['a Unix-seconds reset almost a year ahead, capped', String(nowS + 364 * 86_400), MAX_DELAY_MS],
    ['a Unix-ms reset', String(NOW + 2500), 2500],
    ['a Unix-ms reset in the past', String(NOW - 2500), 0],
    ['a negative reset', '-5', 0],
    ['a far-off number: neither a delta nor near now', '500000000', undefined],
    ['Unix seconds more than a year ahead', String(nowS + 400 * 86_400), undefined],
    ['Unix seconds more than a year ago', String(nowS - 400 * 86_400), undefined],
    ['an HTTP-date', 'Sun, 29 Nov 2026 14:01:00 GMT', undefined],
    ['an exponent', '6e1', undefined],
    ['a word', 'soon', undefined],
    ['a huge number', '9'.repeat(400), undefined],
  ] as Array<[string, string, number | undefined, number?]>)(
    'reads %s',
    (_case, reset, resetMs, precision) => {
      const report = parse({ 'x-ratelimit-remaining': '1', 'x-ratelimit-reset': reset });
      expect(report).toEqual({
        remaining: 1,
        ...(resetMs === undefined ? {} : { resetMs }),
        ...(precision === undefined ? {} : { resetPrecisionMs: precision }),
        source: 'x-ratelimit',
      });
    },
  );

  it('cannot tell a Unix time from garbage without a finite now, but still reads a delta', () => {
    const headers = { 'x-ratelimit-remaining': '1', 'x-ratelimit-reset': String(nowS + 60) };
    expect(parse(headers, Number.NaN)).toEqual({ remaining: 1, source: 'x-ratelimit' });
    expect(parse({ ...headers, 'x-ratelimit-reset': '60' }, Number.NaN)).toEqual({
      remaining: 1,
      resetMs: 60_000,
      source: 'x-ratelimit',
    });
  });

  it.each([
    [
      'any letter case in the names',
      { 'X-RateLimit-Limit': '10', 'X-RATELIMIT-REMAINING': ' 3 ' },
      { remaining: 3, limit: 10, source: 'x-ratelimit' },
    ],
    [
      'GitHub used when remaining is missing',
      { 'x-ratelimit-limit': '60', 'x-ratelimit-used': '4' },
      { remaining: 56, limit: 60, source: 'x-ratelimit' },
    ],
    [
      'GitHub used when remaining is garbage, never below 0',
      { 'x-ratelimit-limit': '60', 'x-ratelimit-used': '61', 'x-ratelimit-remaining': 'n/a' },
      { remaining: 0, limit: 60, source: 'x-ratelimit' },
    ],
    [
      'remaining over used when both are there',
      { 'x-ratelimit-limit': '60', 'x-ratelimit-used': '4', 'x-ratelimit-remaining': '50' },
      { remaining: 50, limit: 60, source: 'x-ratelimit' },
    ],
    [
      'a negative remaining as 0, a negative limit dropped',
      { 'x-ratelimit-limit': '-1', 'x-ratelimit-remaining': '-1' },
      { remaining: 0, source: 'x-ratelimit' },
    ],
    [
      'a negative remaining as 0 in the limit Reddit’s used gives too',
      { 'x-ratelimit-remaining': '-999999999999999', 'x-ratelimit-used': '7' },
      { remaining: 0, limit: 7, source: 'x-ratelimit' },
    ],
    [
      'a decimal count, truncated (Reddit sends 575.0)',
      { 'x-ratelimit-remaining': '575.0', 'x-ratelimit-used': '25' },
      { remaining: 575, limit: 600, source: 'x-ratelimit' },
    ],
    [
      'garbage limit dropped',
      { 'x-ratelimit-limit': '1e3', 'x-ratelimit-remaining': '3' },
      { remaining: 3, source: 'x-ratelimit' },
    ],
    [
      'the resource as the policy name',
      { 'x-ratelimit-remaining': '3', 'x-ratelimit-resource': 'search' },
      { remaining: 3, policy: 'search', source: 'x-ratelimit' },
    ],
    [
      'an empty resource dropped',
      { 'x-ratelimit-remaining': '3', 'x-ratelimit-resource': '' },
      { remaining: 3, source: 'x-ratelimit' },
    ],
  ] as const)('reads %s', (_case, headers, report) => {
    expect(parse(headers)).toEqual(report);
  });

  it.each([
    ['nothing', {}],
    ['limit and reset only', { 'x-ratelimit-limit': '60', 'x-ratelimit-reset': '60' }],
    ['a word', { 'x-ratelimit-remaining': 'many' }],
    ['16 digits', { 'x-ratelimit-remaining': '1234567890123456' }],
    ['a plus sign', { 'x-ratelimit-remaining': '+3' }],
    ['two values', { 'x-ratelimit-remaining': '3, 3' }],
    ['used without limit', { 'x-ratelimit-used': '3' }],
  ])('gives nothing for %s', (_case, headers) => {
    expect(parse(headers)).toBeUndefined();
  });
});
