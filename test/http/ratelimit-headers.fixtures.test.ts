import fs from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ServerQuotaReport } from '../../src/http/index.js';
import { parseRateLimitHeaders } from '../../src/http/ratelimit-headers.js';
import { parseRetryAfter } from '../../src/http/retry-after.js';

interface FixtureResponse {
  readonly source?: string;
  readonly name?: string;
  readonly status: number;
  readonly headers: Record<string, string>;
}

function loadJson(url: URL): unknown {
  return JSON.parse(fs.readFileSync(url, 'utf8'));
}

function parse(headers: Record<string, string>, now: number): ServerQuotaReport | undefined {
  return parseRateLimitHeaders(new Headers(headers), now);
}

describe('express-rate-limit 8.7.5 captures (shared fixture)', () => {
  const responses = loadJson(
    new URL('./fixtures/ratelimit-headers.express-rate-limit.json', import.meta.url),
  ) as FixtureResponse[];
  // Legacy mode's x-ratelimit-reset is Unix seconds: the window opened 60 s before it.
  const legacyReset = 1_795_960_804;
  const legacyNow = (legacyReset - 60) * 1000;
  const window = { resetMs: 60_000, limit: 3, windowMs: 60_000 };
  const expected: ServerQuotaReport[] = [
    ...[2, 1, 0, 0].map((remaining) => ({ remaining, ...window, source: 'draft-6' as const })),
    ...[2, 1, 0, 0].map((remaining) => ({ remaining, ...window, source: 'draft-7' as const })),
    ...[2, 1, 0, 0].map((remaining) => ({
      remaining,
      ...window,
      policy: 'api',
      source: 'ietf' as const,
    })),
    ...[2, 1, 0, 0].map((remaining) => ({
      remaining,
      resetMs: 60_000,
      limit: 3,
      source: 'x-ratelimit' as const,
    })),
  ];

  it('has the sixteen responses this table describes', () => {
    expect(responses.map((r) => r.source)).toEqual(
      ['draft-6', 'draft-7', 'draft-8', 'legacy'].flatMap((mode) =>
        [1, 2, 3, 4].map(
          (n) =>
            `express-rate-limit 8.7.5 standardHeaders=${mode} (limit 3 per 60 s), request ${n}`,
        ),
      ),
    );
  });

  it.each(responses.map((response, i) => [response.source, response, expected[i]] as const))(
    'reads %s',
    (_source, response, report) => {
      expect(parse(response.headers, legacyNow)).toEqual(report);
    },
  );

  it.each(responses.map((response) => [response.source, response] as const))(
    'reads Retry-After on %s only when it is the 429',
    (_source, response) => {
      expect(parseRetryAfter(response.headers['retry-after'], legacyNow)).toBe(
        response.status === 429 ? 60_000 : undefined,
      );
    },
  );

  it('counts a Unix-seconds reset down from now', () => {
    const legacy = responses[12];
    expect(legacy?.headers['x-ratelimit-reset']).toBe(String(legacyReset));
    const at = (now: number) => parse(legacy?.headers ?? {}, now)?.resetMs;
    expect(at(legacyNow + 2_500)).toBe(57_500);
    expect(at(legacyReset * 1000 - 0.5)).toBe(1);
    expect(at(legacyReset * 1000)).toBe(0);
    expect(at(legacyReset * 1000 + 30_000)).toBe(0);
  });
});

describe('hand-written responses (test/http/fixtures)', () => {
  const { responses } = loadJson(
    new URL('./fixtures/ratelimit-headers.handwritten.json', import.meta.url),
  ) as { responses: FixtureResponse[] };
  const expected: Record<string, [ServerQuotaReport | undefined, number | undefined]> = {
    'github-core': [
      { remaining: 56, resetMs: 1_247_000, limit: 60, policy: 'core', source: 'x-ratelimit' },
      undefined,
    ],
    'github-primary-exceeded': [
      { remaining: 0, resetMs: 3_025_000, limit: 60, policy: 'core', source: 'x-ratelimit' },
      undefined,
    ],
    'github-secondary-exceeded': [
      { remaining: 4966, resetMs: 1_247_000, limit: 5000, policy: 'core', source: 'x-ratelimit' },
      60_000,
    ],
    'nginx-limit-req-default': [undefined, undefined],
    'nginx-limit-req-429': [undefined, undefined],
    'retry-after-http-date': [undefined, 60_000],
    'ietf-throttled-with-retry-after-date': [
      { remaining: 0, resetMs: 5000, policy: 'default', source: 'ietf' },
      5000,
    ],
    'ietf-multiple-windows': [
      {
        remaining: 100,
        resetMs: 36_000_000,
        limit: 5000,
        windowMs: 86_400_000,
        policy: 'day',
        source: 'ietf',
      },
      undefined,
    ],
    'gitlab-throttled': [{ remaining: 0, resetMs: 30_000, limit: 60, source: 'draft-6' }, 30_000],
    'discord-style-decimal-epoch': [
      // The precise x-ratelimit-reset-after wins over the epoch reset.
      {
        remaining: 1,
        resetMs: 1123,
        resetPrecisionMs: 1,
        resetFromArrival: true,
        limit: 5,
        policy: 'abcd1234',
        source: 'x-ratelimit',
      },
      undefined,
    ],
  };

  it('has an expectation for every response', () => {
    expect(responses.map((r) => r.name)).toEqual(Object.keys(expected));
  });

  it.each(responses.map((r) => [r.name, r] as const))(
    'reads %s, with its Date header as now',
    (name, response) => {
      const now = Date.parse(new Headers(response.headers).get('date') ?? '');
      const [report, retryAfterMs] = expected[name ?? ''] ?? [];
      expect(parse(response.headers, now)).toEqual(report);
      expect(parseRetryAfter(response.headers['retry-after'], now)).toBe(retryAfterMs);
    },
  );
});

describe('purity', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('reads no clock of its own: time comes only from nowEpochMs', () => {
    const noClock = () => {
      throw new Error('read the clock');
    };
    vi.spyOn(Date, 'now').mockImplementation(noClock);
    vi.spyOn(performance, 'now').mockImplementation(noClock);
    const now = Date.UTC(2026, 10, 29, 14, 0, 0);
    const all = {
      ratelimit: '"a";r=0;t=5',
      'ratelimit-remaining': '1',
      'ratelimit-reset': '1795960804',
      'x-ratelimit-remaining': '1',
      'x-ratelimit-reset': '1795960804',
    };
    expect(parse(all, now)).toEqual({ remaining: 0, resetMs: 5000, policy: 'a', source: 'ietf' });
    expect(parse({ 'x-ratelimit-remaining': '1', 'x-ratelimit-reset': '1795960804' }, now)).toEqual(
      { remaining: 1, resetMs: 4000, source: 'x-ratelimit' },
    );
    expect(parseRetryAfter('Sunday, 29-Nov-26 14:00:09 GMT', now)).toBe(9000);
  });
});
