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
    // Counted from the arrival (`resetFromArrival`), as a Unix reset is not.
    ['a decimal delta', '1.5', 1500, 100, true],
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
  ] as Array<[string, string, number | undefined, number?, true?]>)(
    'reads %s',
    (_case, reset, resetMs, precision, fromArrival) => {
      const report = parse({ 'x-ratelimit-remaining': '1', 'x-ratelimit-reset': reset });
      expect(report).toEqual({
        remaining: 1,
        ...(resetMs === undefined ? {} : { resetMs }),
        ...(precision === undefined ? {} : { resetPrecisionMs: precision }),
        ...(fromArrival === undefined ? {} : { resetFromArrival: true }),
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

describe("X-RateLimit-Limit with draft-03's quota policies (Envoy, Limitador)", () => {
  it.each([
    [
      "Envoy's list: the first member, the window of its quota's policy",
      '10, 10;w=1;name="per-ip", 1000;w=3600',
      { limit: 10, windowMs: 1000 },
    ],
    ['a policy of another quota only: the limit alone', '10, 1000;w=3600', { limit: 10 }],
    ['the limit with its own window', '10;w=60', { limit: 10, windowMs: 60_000 }],
    ['a first member that is no integer: nothing', '"10", 10;w=1', {}],
    ['a negative limit: nothing', '-10, -10;w=1', {}],
    ['a list that is no structured field: nothing', '10, 10;w=1;;', {}],
  ] as Array<[string, string, object]>)('reads %s', (_case, limit, expected) => {
    const report = parse({
      'x-ratelimit-limit': limit,
      'x-ratelimit-remaining': '3',
      'x-ratelimit-reset': '1',
    });
    expect(report).toEqual({ remaining: 3, resetMs: 1000, ...expected, source: 'x-ratelimit' });
  });
});

describe("Spring Cloud Gateway's RedisRateLimiter", () => {
  function scg(remaining: string, rate: string, capacity?: string, cost?: string) {
    return parse({
      'x-ratelimit-remaining': remaining,
      'x-ratelimit-replenish-rate': rate,
      ...(capacity === undefined ? {} : { 'x-ratelimit-burst-capacity': capacity }),
      ...(cost === undefined ? {} : { 'x-ratelimit-requested-tokens': cost }),
    });
  }
  const source = 'spring-cloud-gateway';

  it("reads a bucket a second's refill shallower, its count as much lower", () => {
    // The doc's 10 a second, bursts of 20: never ahead of the whole-second refill.
    expect(scg('20', '10', '20', '1')).toEqual({
      remaining: 11,
      limit: 11,
      windowMs: 1100,
      bucket: true,
      source,
    });
    expect(scg('12', '10', '20')).toEqual({
      remaining: 3,
      limit: 11,
      windowMs: 1100,
      bucket: true,
      source,
    });
    expect(scg('5', '10', '20')).toMatchObject({ remaining: 0, limit: 11 });
    // 1 token a second, 5 a request, a bucket of 5: one request per 5 s, at once.
    expect(scg('4', '1', '5', '5')).toEqual({
      remaining: 0,
      limit: 1,
      windowMs: 5000,
      bucket: true,
      source,
    });
    // Requests of 60 tokens refilled 1 a second, a bucket of 60: one request a minute.
    expect(scg('60', '1', '60', '60')).toEqual({
      remaining: 1,
      limit: 1,
      windowMs: 60_000,
      bucket: true,
      source,
    });
  });

  it("reads a bucket under a second's refill deep as a window of whole seconds", () => {
    // The doc's steady rate: a bucket of one second's refill.
    expect(scg('7', '10', '10')).toEqual({ remaining: 7, limit: 10, windowMs: 1000, source });
    // 3 tokens a second, 2 a request, a bucket of 3: one request a second, covered.
    expect(scg('3', '3', '3', '2')).toEqual({ remaining: 1, limit: 1, windowMs: 1000, source });
    // Without a capacity, a bucket of one second's refill.
    expect(scg('9', '10')).toEqual({ remaining: 9, limit: 10, windowMs: 1000, source });
  });

  it("reads a refill per X-RateLimit-Replenish-Time seconds (OpenVPN Cloud Connexa's)", () => {
    // 10 tokens per 15 s, no capacity said: a window of 10 per 15 s.
    expect(
      parse({
        'x-ratelimit-remaining': '7',
        'x-ratelimit-replenish-rate': '10',
        'x-ratelimit-replenish-time': '15',
      }),
    ).toEqual({ remaining: 7, limit: 10, windowMs: 15_000, source });
    // 1 token per 2 s into a bucket of 5: a bucket of 5 refilled in 10 s.
    expect(
      parse({
        'x-ratelimit-remaining': '5',
        'x-ratelimit-replenish-rate': '1',
        'x-ratelimit-replenish-time': '2',
        'x-ratelimit-burst-capacity': '5',
      }),
    ).toEqual({ remaining: 5, limit: 5, windowMs: 10_000, bucket: true, source });
  });

  it('reads a bucket too small for any request as a count alone', () => {
    expect(scg('0', '10', '0')).toEqual({ remaining: 0, source });
    expect(scg('3', '1', '3', '5')).toEqual({ remaining: 0, source });
  });

  it("reads nothing for Redis down (-1): no count of 0, and not the X-RateLimit family's", () => {
    expect(scg('-1', '10', '20', '1')).toBeUndefined();
    expect(scg('n/a', '10', '20', '1')).toBeUndefined();
  });

  it('is the X-RateLimit family without a replenish rate of at least 1', () => {
    expect(scg('4', '0', '20')).toEqual({ remaining: 4, source: 'x-ratelimit' });
    expect(scg('4', 'fast', '20')).toEqual({ remaining: 4, source: 'x-ratelimit' });
  });

  it('keeps huge settings finite and its policy within what a pacer learns', () => {
    const report = scg('9'.repeat(15), '9'.repeat(15), '9'.repeat(15), '1');
    expect(report?.source).toBe(source);
    for (const value of [report?.remaining, report?.limit, report?.windowMs]) {
      expect(Number.isFinite(value)).toBe(true);
    }
    // A capacity past 15 digits is none: a bucket of one second's refill, 1 a second.
    expect(scg('1', '1', '9'.repeat(400))).toEqual({
      remaining: 1,
      limit: 1,
      windowMs: 1000,
      bucket: true,
      source,
    });
  });
});

describe('HubSpot', () => {
  it.each([
    [
      'the limit per its interval in ms',
      { max: '100', remaining: '97', interval: '10000' },
      { remaining: 97, limit: 100, windowMs: 10_000 },
    ],
    ['a count alone', { remaining: '3' }, { remaining: 3 }],
    ['a negative count as 0', { max: '100', remaining: '-2' }, { remaining: 0, limit: 100 }],
    ['an interval of 0: none', { remaining: '3', interval: '0' }, { remaining: 3 }],
    [
      'an interval past a year: a year',
      { remaining: '3', interval: '9'.repeat(15) },
      {
        remaining: 3,
        windowMs: MAX_DELAY_MS,
      },
    ],
  ] as Array<[string, Record<string, string>, object]>)('reads %s', (_case, fields, expected) => {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(fields)) {
      headers[`x-hubspot-ratelimit-${name === 'interval' ? 'interval-milliseconds' : name}`] =
        value;
    }
    expect(parse(headers)).toEqual({ ...expected, source: 'hubspot' });
  });
});
