import fc from 'fast-check';
import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { MAX_LEARNED_LIMIT, quotaForCore } from '../../src/http/answer-to-pacer.js';
import { parseBodyHint } from '../../src/http/body-hint.js';
import { MAX_DELAY_MS, parseGoDuration, trimSpaces } from '../../src/http/duration.js';
import { parseIsoDate } from '../../src/http/iso-date.js';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { parseRateLimitHeaders } from '../../src/http/ratelimit-headers.js';
import { parseRetryAfter, parseRetryAfterMs, parseRetryIn } from '../../src/http/retry-after.js';
import { readServerAnswer } from '../../src/http/server-answer.js';
import { createManualClock } from '../../src/testing/index.js';
import { drive } from '../support/flush.js';
import { server } from '../support/msw.js';

const NOW = Date.UTC(2026, 11, 1, 10, 0, 0);
const KB100 = 100 * 1024;

/**
 * Inputs of 100 kB built to make a backtracking pattern quadratic or worse (runs of spaces,
 * digits, separators, almost-matching prefixes). The test asserts each result; a parser that
 * is not linear does not finish within the test's timeout (a quadratic one needs ~10^10 steps).
 */
const hostile: ReadonlyArray<readonly [string, number | undefined]> = [
  // [value, what parseRetryAfter reads in it]
  [`1${' '.repeat(KB100)}x`, undefined],
  [`${' '.repeat(KB100)}1`, 1000],
  [`${'\t '.repeat(KB100 / 2)}`, undefined],
  ['9'.repeat(KB100), MAX_DELAY_MS],
  [`${'9'.repeat(KB100)}.`, undefined],
  [`${'1.'.repeat(KB100 / 2)}`, undefined],
  [`${'1h'.repeat(KB100 / 2)}x`, undefined],
  [`${'"a";q=1, '.repeat(KB100 / 9)}(`, undefined],
  [`${'a=1, '.repeat(KB100 / 5)}=`, undefined],
  [`2026-12-01T10:00:00${'0'.repeat(KB100)}Z`, undefined],
  [`{"retry_after": ${'9'.repeat(KB100)}}`, undefined],
  [`${'['.repeat(KB100)}`, undefined],
];

describe('hostile headers cost linear time and never throw', () => {
  it.each(hostile.map(([value, retryAfter], i) => [i, value, retryAfter] as const))(
    'reads hostile value %i (100 kB) as it is, in linear time',
    (_i, value, retryAfter) => {
      // String#trim is linear too; it only trims more kinds of space than HTTP's OWS.
      expect(trimSpaces(value)).toBe(value.trim());
      expect(parseRetryAfter(value, NOW)).toBe(retryAfter);
      // The same digits read as ms: 1 for `1`, the cap for the nines.
      const asMs = retryAfter === 1000 ? 1 : retryAfter;
      expect(parseRetryAfterMs(value)).toBe(asMs);
      expect(parseGoDuration(value)).toBeUndefined();
      expect(parseRetryIn(value)).toBeUndefined();
      expect(parseIsoDate(value)).toBeUndefined();
      expect(parseBodyHint(value)).toBeUndefined();
      const names = [
        'ratelimit',
        'ratelimit-policy',
        'ratelimit-remaining',
        'x-ratelimit-remaining',
        'x-ratelimit-reset',
        'x-ratelimit-reset-after',
        'x-ratelimit-remaining-requests',
        'x-ratelimit-reset-requests',
        'anthropic-ratelimit-requests-remaining',
        'anthropic-ratelimit-requests-reset',
        'x-rate-limit-remaining',
        'x-shopify-shop-api-call-limit',
        'x-hubspot-ratelimit-remaining',
        'retry-after',
        'retry-after-ms',
        'x-retry-in',
        'date',
      ];
      for (const name of names) {
        const headers = new Headers({ [name]: value });
        const answer = readServerAnswer({ status: 429, headers, nowEpochMs: NOW, body: value });
        expect(answer?.refused).toBe(true);
        // Spaces then `1` is a fine count; nothing else here is one.
        if (value.trim() === '1') continue;
        expect(parseRateLimitHeaders(headers, NOW)).toBeUndefined();
        expect(answer?.quota).toBeUndefined();
      }
      // Beside a count: Envoy's limit (a list of policies), Spring Cloud Gateway's settings.
      const settings = [
        'x-ratelimit-limit',
        'x-ratelimit-replenish-rate',
        'x-ratelimit-burst-capacity',
        'x-ratelimit-requested-tokens',
        'x-ratelimit-replenish-time',
      ];
      for (const name of settings) {
        const headers = new Headers({ 'x-ratelimit-remaining': '2', [name]: value });
        const report = parseRateLimitHeaders(headers, NOW);
        if (value.trim() !== '1') expect(report).toEqual({ remaining: 2, source: 'x-ratelimit' });
        else expect(report?.remaining).toBeGreaterThan(0);
      }
    },
  );
});

describe('readServerAnswer on arbitrary headers (property)', () => {
  const fragments = fc.constantFrom(
    '',
    ' ',
    '0',
    '1',
    '-1',
    '575.0',
    '1.5',
    '999999999999999',
    '9999999999999999999',
    '1795960804',
    '1h2m3.5s',
    '20ms',
    '6m0s',
    '2026-12-01T10:00Z',
    '2026-12-01T10:00:01.5+01:00',
    'Tue, 01 Dec 2026 10:00:02 GMT',
    '32/40',
    '"a";q=999999999999999;w=999999999999',
    '"a";r=0;t=5',
    'limit=3, remaining=0, reset=1',
    '10, 10;w=1;name="per-ip", 1000;w=3600',
  );
  const value = fc.oneof(
    fc.array(fragments, { maxLength: 6 }).map((parts) => parts.join('')),
    fc.string({ maxLength: 40 }),
  );
  const names = [
    'date',
    'retry-after',
    'retry-after-ms',
    'ratelimit',
    'ratelimit-policy',
    'x-ratelimit-limit',
    'x-ratelimit-remaining',
    'x-ratelimit-reset',
    'x-ratelimit-reset-after',
    'x-ratelimit-used',
    'x-ratelimit-replenish-rate',
    'x-ratelimit-burst-capacity',
    'x-ratelimit-requested-tokens',
    'x-ratelimit-replenish-time',
    'x-ratelimit-limit-requests',
    'x-ratelimit-remaining-requests',
    'x-ratelimit-reset-requests',
    'x-ratelimit-remaining-tokens',
    'x-ratelimit-reset-tokens',
    'anthropic-ratelimit-requests-remaining',
    'anthropic-ratelimit-requests-reset',
    'anthropic-ratelimit-output-tokens-remaining',
    'x-rate-limit-remaining',
    'x-rate-limit-reset',
    'x-shopify-shop-api-call-limit',
    'x-hubspot-ratelimit-remaining',
    'x-hubspot-ratelimit-max',
    'x-hubspot-ratelimit-interval-milliseconds',
  ];
  const body = fc.oneof(
    fc.constant(undefined),
    fc.json(),
    fc.double().map((n) => JSON.stringify({ retry_after: n })),
    fc.string().map((s) =>
      JSON.stringify({
        error: { details: [{ '@type': 'x.google.rpc.RetryInfo', retryDelay: s }] },
      }),
    ),
  );
  const isDelay = (ms: number | undefined) =>
    ms === undefined || (Number.isInteger(ms) && ms >= 0 && ms <= MAX_DELAY_MS);

  it('never throws; every delay is a whole ms from 0 to MAX_DELAY_MS; what the core is told is capped', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom(...names), value),
        fc.constantFrom(200, 403, 429, 503, 529),
        fc.oneof(fc.constant(NOW), fc.double()),
        body,
        (headers, status, nowEpochMs, text) => {
          const answer = readServerAnswer({
            status,
            headers: new Headers(headers),
            nowEpochMs,
            body: text,
          });
          if (answer === undefined) return;
          expect(isDelay(answer.retryAfterMs)).toBe(true);
          for (const unit of answer.units ?? []) expect(isDelay(unit.resetMs)).toBe(true);
          const { quota } = answer;
          if (quota === undefined) return;
          expect(isDelay(quota.resetMs)).toBe(true);
          if (quota.windowMs !== undefined)
            expect(quota.windowMs).toBeLessThanOrEqual(MAX_DELAY_MS);
          const told = quotaForCore(quota, answer.refused);
          expect(Number.isSafeInteger(told.remaining) && told.remaining >= 0).toBe(true);
          expect(isDelay(told.resetMs)).toBe(true);
          if (told.limit !== undefined) expect(told.limit).toBeLessThanOrEqual(MAX_LEARNED_LIMIT);
          if (told.windowMs !== undefined) {
            expect(told.windowMs).toBeGreaterThanOrEqual(1);
            expect(told.windowMs).toBeLessThanOrEqual(MAX_DELAY_MS);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('a hostile policy does not break the key', () => {
  it.each([
    ['a quota of 10^15', '"a";q=999999999999999;w=1'],
    ['a quota of 10^8 (800 MB of log before)', '"a";q=100000000;w=60'],
    ['a window of 31,000 years', '"a";q=10;w=999999999999'],
  ])('keeps serving later calls after %s', async (_case, policy) => {
    const clock = createManualClock();
    let served = 0;
    server.use(
      http.get('https://api.test/*', () => {
        served++;
        return HttpResponse.json(
          {},
          { headers: { ratelimit: '"a";r=5;t=1', 'ratelimit-policy': policy } },
        );
      }),
    );
    // All 20 go before the first answer (no slow start): each answer brings the hostile policy.
    const pacedFetch = createPacedFetch({
      limits: { limit: 100, windowMs: 1000 },
      learn: { slowStart: false },
      clock,
    });
    const calls = Array.from({ length: 20 }, (_, i) => pacedFetch(`https://api.test/${i}`));
    await drive(clock, pacedFetch.pacer, 5000);
    const statuses = (await Promise.all(calls)).map((response) => response.status);
    expect(statuses).toEqual(Array(20).fill(200));
    expect(served).toBe(20);
    // Whatever the server claimed, the key's learned policy is bounded.
    expect(pacedFetch.pacer.inspect('https://api.test').limit).toBeLessThanOrEqual(100);
  });
});

describe('quotaForCore', () => {
  it('tells the core a reset said as a delay, counted from the arrival, and not an instant', () => {
    const quota = { remaining: 3, resetMs: 83, resetPrecisionMs: 1, limit: 6 } as const;
    const delay = { ...quota, resetFromArrival: true, source: 'x-ratelimit' } as const;
    expect(quotaForCore(delay, false)).toMatchObject({ resetMs: 83, resetFromArrival: true });
    const instant = quotaForCore({ ...quota, source: 'x-ratelimit' }, false);
    expect(instant).toMatchObject({ resetMs: 83 });
    expect(instant).not.toHaveProperty('resetFromArrival');
  });

  it('keeps the rate of a policy beyond MAX_LEARNED_LIMIT on a shorter window', () => {
    expect(
      quotaForCore({ remaining: 5, limit: 100_000_000, windowMs: 60_000, source: 'ietf' }, false),
    ).toEqual({
      remaining: 5,
      limit: MAX_LEARNED_LIMIT,
      windowMs: 6,
    });
  });

  it('drops a policy faster than one window of MAX_LEARNED_LIMIT per ms', () => {
    expect(
      quotaForCore(
        { remaining: 5, limit: 999_999_999_999_999, windowMs: 1000, source: 'ietf' },
        false,
      ),
    ).toEqual({ remaining: 5 });
  });

  it('infers a window from the answer that opened it, a whole second when within a tenth under one', () => {
    const opening = {
      remaining: 59,
      limit: 60,
      resetPrecisionMs: 1,
      source: 'x-ratelimit',
    } as const;
    // koa-ratelimit's 1 s read 9 ms late: 991 ms would pace a 61st request into the window.
    expect(quotaForCore({ ...opening, resetMs: 991 }, false)).toMatchObject({
      windowMs: 1_000,
      inferred: true,
    });
    expect(quotaForCore({ ...opening, resetMs: 59_400 }, false)).toMatchObject({
      windowMs: 60_000,
    });
    // Further under a whole second, it is taken as read.
    expect(quotaForCore({ ...opening, resetMs: 850 }, false)).toMatchObject({ windowMs: 850 });
    expect(quotaForCore({ ...opening, resetMs: 450 }, false)).toMatchObject({ windowMs: 450 });
  });

  it('infers a window of whole seconds from a Unix-second reset of the answer that opened it', () => {
    // express-rate-limit's default X-RateLimit-Reset: the window's end rounded up to its second,
    // so the window is the shortest whole second in (resetMs - 1000, resetMs + the round trip].
    const opening = { remaining: 59, limit: 60, source: 'x-ratelimit' } as const;
    expect(quotaForCore({ ...opening, resetMs: 1_700 }, false)).toMatchObject({
      windowMs: 1_000,
      inferred: true,
    });
    expect(quotaForCore({ ...opening, resetMs: 2_300 }, false)).toMatchObject({
      windowMs: 2_000,
    });
    // 1 s or 2 s: the shorter (the next window's opening answer tells it again).
    expect(quotaForCore({ ...opening, resetMs: 1_700 }, false, 400)).toMatchObject({
      windowMs: 1_000,
    });
    // Under a second to go, with a short round trip: no whole second fits, nothing is inferred.
    expect(quotaForCore({ ...opening, resetMs: 450 }, false, 50)).toEqual({
      remaining: 59,
      resetMs: 450,
      limit: 60,
    });
    expect(quotaForCore({ ...opening, resetMs: 450 }, false, 600)).toMatchObject({
      windowMs: 1_000,
    });
    // Only the answer that opened the window tells it.
    expect(quotaForCore({ ...opening, remaining: 30, resetMs: 1_700 }, false)).not.toHaveProperty(
      'windowMs',
    );
  });

  it('reads a whole-second reset within 2 s as its earliest on an answer with nothing left', () => {
    const report = { remaining: 0, resetMs: 1800, limit: 10, source: 'x-ratelimit' } as const;
    // The latest it may reset goes along: the count is no count that outlasts a window of 1.8 s.
    expect(quotaForCore(report, false)).toEqual({
      remaining: 0,
      resetMs: 800,
      resetAtMostMs: 1800,
      limit: 10,
    });
    // `1` is read as 0 and dropped: within a second is all it says.
    expect(quotaForCore({ ...report, resetMs: 1000 }, false)).toEqual({
      remaining: 0,
      resetAtMostMs: 1000,
      limit: 10,
    });
    // A refusal proves the window had not ended: its reset stands.
    expect(quotaForCore(report, true)).toEqual({ remaining: 0, resetMs: 1800, limit: 10 });
    // Further out, the second of rounding costs little: the reset stands.
    expect(quotaForCore({ ...report, resetMs: 30_000 }, false)).toMatchObject({ resetMs: 30_000 });
    // Known to the ms, it stands.
    expect(quotaForCore({ ...report, resetPrecisionMs: 1 }, false)).toMatchObject({
      resetMs: 1800,
    });
  });

  it('waits one permit of a bucket, not until it is full (OpenAI, Anthropic)', () => {
    const report = {
      remaining: 0,
      resetMs: 60_000,
      limit: 60,
      resetFull: true,
      source: 'openai',
    } as const;
    // Its window is the time to refill the whole limit: 60 per 60 s (inferred: not stated).
    expect(quotaForCore(report, true)).toEqual({
      remaining: 0,
      resetMs: 1000,
      limit: 60,
      windowMs: 60_000,
      inferred: true,
    });
  });
});
