import { describe, expect, it } from 'vitest';
import { parseBodyHint } from '../../src/http/body-hint.js';
import { parseGoDuration } from '../../src/http/duration.js';
import { parseIsoDate } from '../../src/http/iso-date.js';
import { parseRetryIn } from '../../src/http/retry-after.js';
import { CLOCK_SKEW_MS, readServerAnswer, serverNow } from '../../src/http/server-answer.js';

describe('parseGoDuration (OpenAI resets, time.Duration.String)', () => {
  it.each([
    ['1s', 1000, 1000],
    ['6m0s', 360_000, 1000],
    ['20ms', 20, 1],
    ['1h2m3.5s', 3_723_500, 100],
    ['0s', 0, 1000],
    ['1.5ms', 2, 1],
    ['250us', 1, 1],
    ['250\u00b5s', 1, 1],
    ['1.1s', 1100, 100],
  ])('reads %s as %i ms, precise to %i ms', (text, ms, precisionMs) => {
    expect(parseGoDuration(text)).toEqual({ ms, precisionMs });
  });

  it.each(['', '1', '-1s', '+1s', '1 s', 's', '1x', '1sm', '.5s', '1e3s'])(
    'reads %j as nothing',
    (text) => {
      expect(parseGoDuration(text)).toBeUndefined();
    },
  );
});

describe('parseIsoDate (Anthropic and Jira resets)', () => {
  const at = Date.UTC(2025, 0, 15, 14, 24, 0);
  it.each([
    ['2025-01-15T14:24:00Z', at, 1000],
    ['2025-01-15T14:24Z', at, 60_000],
    ['2025-01-15t14:24:00z', at, 1000],
    ['2025-01-15 14:24:00Z', at, 1000],
    ['2025-01-15T14:24:00.5Z', at + 500, 100],
    ['2025-01-15T14:24:00.1234Z', at + 124, 1],
    ['2025-01-15T15:24:00+01:00', at, 1000],
    ['2025-01-15T13:54:00-0030', at, 1000],
  ])('reads %s', (text, epochMs, precisionMs) => {
    expect(parseIsoDate(text)).toEqual({ epochMs, precisionMs });
  });

  it.each([
    '2025-02-30T00:00:00Z',
    '2025-01-15T24:00:00Z',
    '2025-01-15T14:60:00Z',
    '2025-01-15T14:24:60Z',
    '2025-01-15T14:24:00',
    '2025-01-15T14:24:00+25:00',
    '1969-12-31T23:59:59Z',
    '2025-01-15',
    'Wed, 15 Jan 2025 14:24:00 GMT',
  ])('reads %s as nothing', (text) => {
    expect(parseIsoDate(text)).toBeUndefined();
  });
});

describe('parseBodyHint (waits only a refusal body gives)', () => {
  it.each([
    [
      'Discord',
      '{"message":"You are being rate limited.","retry_after":64.57,"global":false}',
      { retryAfterMs: 64_570 },
    ],
    ['Discord, global', '{"retry_after":1.5,"global":true}', { retryAfterMs: 1500, global: true }],
    [
      'Google RetryInfo',
      '{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"14.374s"}]}}',
      { retryAfterMs: 14_374 },
    ],
  ])('reads %s', (_name, text, hint) => {
    expect(parseBodyHint(text)).toEqual(hint);
  });

  it.each([
    ['not JSON', 'Too Many Requests'],
    ['malformed JSON', '{"retry_after": 1'],
    ['a negative wait', '{"retry_after": -1}'],
    ['a string wait', '{"retry_after": "5"}'],
    [
      'a RetryInfo without unit',
      '{"error":{"details":[{"@type":"google.rpc.RetryInfo","retryDelay":"4"}]}}',
    ],
    [
      'another detail type',
      '{"error":{"details":[{"@type":"google.rpc.QuotaFailure","retryDelay":"4s"}]}}',
    ],
    ['an array', '[{"retry_after": 1}]'],
  ])('reads %s as nothing', (_name, text) => {
    expect(parseBodyHint(text)).toBeUndefined();
  });
});

describe("parseRetryIn (Traefik's X-Retry-In: Go's time.Duration.String())", () => {
  it.each([
    ['16.666666ms', 17],
    ['1.5s', 1500],
    ['1m0.25s', 60_250],
    ['500\u00b5s', 1],
    ['0s', 0],
    [' 20ms ', 20],
  ])('reads %s', (text, ms) => {
    expect(parseRetryIn(text)).toBe(ms);
  });

  it.each(['', '17', '-5ms', 'soon', '1.5', '5 ms'])('reads %j as nothing', (text) => {
    expect(parseRetryIn(text)).toBeUndefined();
  });

  it('wins within the second of Retry-After, and the longer one wins when they disagree', () => {
    const wait = (retryIn: string, retryAfter: string) =>
      readServerAnswer({
        status: 429,
        headers: new Headers({ 'retry-after': retryAfter, 'x-retry-in': retryIn }),
        nowEpochMs: 0,
      })?.retryAfterMs;
    expect(wait('16.666666ms', '1')).toBe(17);
    expect(wait('2.4s', '3')).toBe(2_400);
    // A wait that disagrees with the whole-second one by more than its rounding: the longer.
    expect(wait('20ms', '5')).toBe(5_000);
    expect(wait('7s', '1')).toBe(7_000);
  });
});

describe('serverNow: absolute times are read against the server clock when ours is off', () => {
  const date = 'Tue, 01 Dec 2026 10:00:00 GMT';
  const server = Date.UTC(2026, 11, 1, 10, 0, 0);
  it.each([
    ['a right clock, inside the second of Date', server + 700, server + 700],
    ['a clock within the skew allowed', server + CLOCK_SKEW_MS, server + CLOCK_SKEW_MS],
    ['a clock an hour slow', server - 3_600_000, server],
    ['a clock an hour fast', server + 3_600_000, server],
  ])('keeps %s', (_case, now, expected) => {
    expect(serverNow(new Headers({ date }), now)).toBe(expected);
  });

  it('keeps our clock without a usable Date', () => {
    expect(serverNow(new Headers(), 5)).toBe(5);
    expect(serverNow(new Headers({ date: 'yesterday' }), 5)).toBe(5);
  });
});
