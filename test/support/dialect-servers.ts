/**
 * Mocked APIs, one per rate-limit dialect, that enforce what each API's documentation says
 * with exactly the headers it documents (the address is beside each). Windows are scaled down
 * (GitHub's hour is a minute here) so 80 calls finish in seconds of manual time. Time is the
 * arrival time the client's network stamps (`x-arrived-at`), on the test's manual clock.
 */
import { HttpResponse, http } from 'msw';
import type { ManualClock } from '../../src/testing/index.js';
import { type Admission, goDuration, weightedBucket } from '../../demo/src/mock/llm-api.js';
import { goDelay } from './counting-servers.js';
import { turn } from './flush.js';

export const ORIGIN = 'https://api.dialect.test';
/** Wall-clock epoch ms at manual time 0 (not on a whole second, as no real clock is). */
export const EPOCH = Date.UTC(2026, 11, 1, 10, 0, 0) + 370;

type Model = (at: number) => Admission;

/** A fixed window that opens at the first arrival after the last one ended; refusals not counted. */
export function fixedWindow(limit: number, windowMs: number): Model {
  let count = 0;
  let endsAt = Number.NEGATIVE_INFINITY;
  return (at) => {
    if (at >= endsAt) {
      count = 0;
      endsAt = at + windowMs;
    }
    const ok = count < limit;
    if (ok) count++;
    const resetMs = endsAt - at;
    return { ok, remaining: limit - count, nextMs: count < limit ? 0 : resetMs, resetMs };
  };
}

/** A token (or leaky) bucket of `capacity`, refilled `capacity` per `fillMs`. */
export function bucket(capacity: number, fillMs: number): Model {
  const weighted = weightedBucket(capacity, fillMs);
  return (at) => weighted.admit(at, 1);
}

/**
 * Traefik's bucket (golang.org/x/time/rate reserved as its middleware does): `burst` tokens,
 * `average` per second; a request is admitted (held up to half a permit's time, which this
 * model does not delay) while the bucket has half a token or more.
 */
function traefikBucket(average: number, burst: number): Model {
  const perMs = average / 1000;
  const maxDelayMs = 1 / (2 * perMs);
  let tokens = burst;
  let stamp = 0;
  return (at) => {
    tokens = Math.min(burst, tokens + Math.max(0, at - stamp) * perMs);
    stamp = Math.max(stamp, at);
    const delayMs = tokens >= 1 ? 0 : (1 - tokens) / perMs;
    const ok = delayMs <= maxDelayMs;
    if (ok) tokens -= 1;
    const nextMs = tokens >= 1 ? 0 : (1 - tokens) / perMs;
    return {
      ok,
      remaining: Math.max(0, Math.floor(tokens)),
      nextMs,
      resetMs: (burst - tokens) / perMs,
    };
  };
}

/**
 * envoyproxy/ratelimit's fixed windows (the service behind Envoy's global rate limit filter):
 * one count per window of the wall clock's `windowMs`, aligned to it (its cache key is the unit
 * times the whole units since the epoch), every hit counted, refused ones too.
 */
export function alignedWindow(limit: number, windowMs: number): Model {
  let count = 0;
  let index = Number.NEGATIVE_INFINITY;
  return (at) => {
    const wall = EPOCH + at;
    const current = Math.floor(wall / windowMs);
    if (current !== index) {
      index = current;
      count = 0;
    }
    count++;
    const resetMs = (current + 1) * windowMs - wall;
    const ok = count <= limit;
    return { ok, remaining: Math.max(0, limit - count), nextMs: ok ? 0 : resetMs, resetMs };
  };
}

/**
 * Spring Cloud Gateway's `RedisRateLimiter` (`META-INF/scripts/request_rate_limiter.lua`,
 * https://github.com/spring-cloud/spring-cloud-gateway): a bucket of `capacity` tokens that
 * Redis' `TIME` in whole seconds refills, `rate` tokens for each second passed since the last
 * request, a request taking one token.
 */
export function wholeSecondBucket(rate: number, capacity: number): Model {
  let tokens = capacity;
  let refreshed = 0;
  return (at) => {
    const wall = EPOCH + at;
    const now = Math.floor(wall / 1000);
    tokens = Math.min(capacity, tokens + Math.max(0, now - refreshed) * rate);
    refreshed = now;
    const ok = tokens >= 1;
    if (ok) tokens -= 1;
    const nextMs = ok ? 0 : (now + 1) * 1000 - wall;
    const resetMs = (Math.ceil((capacity - tokens) / rate) + now) * 1000 - wall;
    return { ok, remaining: tokens, nextMs, resetMs };
  };
}

/** A rolling window (a sliding log) of `limit` per `windowMs`; refusals not counted. */
export function rollingWindow(limit: number, windowMs: number): Model {
  const log: number[] = [];
  return (at) => {
    while (log.length > 0 && (log[0] as number) <= at - windowMs) log.shift();
    const ok = log.length < limit;
    if (ok) log.push(at);
    const resetMs = log.length > 0 ? (log[0] as number) + windowMs - at : 0;
    return { ok, remaining: limit - log.length, nextMs: ok ? 0 : resetMs, resetMs };
  };
}

/** An admission of Kong's, with each period's limit and count (`X-RateLimit-*-<Period>`). */
interface KongAdmission extends Admission {
  /** The limit of the period the draft-6 fields report. */
  readonly limit: number;
  readonly periods: ReadonlyArray<readonly [string, number, number]>;
}

/**
 * Kong's rate-limiting plugin (`kong/plugins/rate-limiting/handler.lua`, the `local` policy,
 * https://github.com/Kong/kong): a fixed window of the clock per configured period, admitted
 * requests counted in each; a request over any period's limit is refused, and counted in none.
 * Draft-6's fields report the period with the fewest left (the longer of a tie), its reset the
 * whole seconds to its window's end, at least 1.
 */
export function kongWindows(limits: ReadonlyArray<readonly [string, number, number]>): Model {
  const usage = limits.map(() => ({ index: Number.NEGATIVE_INFINITY, count: 0 }));
  return (at) => {
    const wall = EPOCH + at;
    usage.forEach((u, i) => {
      const index = Math.floor(wall / (limits[i] as readonly [string, number, number])[2]);
      if (index !== u.index) Object.assign(u, { index, count: 0 });
    });
    const stop = limits.findIndex(([, limit], i) => (usage[i]?.count ?? 0) >= limit);
    const ok = stop < 0;
    let chosen = -1;
    let left = Number.POSITIVE_INFINITY;
    const periods = limits.map(([name, limit, ms], i) => {
      const used = (usage[i]?.count ?? 0) + (ok || stop === i ? 1 : 0);
      const remaining = Math.max(0, limit - used);
      if (remaining < left || (remaining === left && ms > (limits[chosen]?.[2] ?? 0))) {
        chosen = i;
        left = remaining;
      }
      return [name, limit, remaining] as const;
    });
    if (ok) for (const u of usage) u.count++;
    const [, limit, ms] = limits[chosen] as readonly [string, number, number];
    const resetMs = ((usage[chosen]?.index ?? 0) + 1) * ms - wall;
    const admission: KongAdmission = {
      ok,
      remaining: left,
      nextMs: ok ? 0 : resetMs,
      resetMs,
      limit,
      periods,
    };
    return admission;
  };
}

/** What a dialect answers: the headers of an admitted request, the whole refusal otherwise. */
interface Reply {
  readonly status?: number;
  readonly headers: Record<string, string>;
  readonly body?: unknown;
}

export interface Dialect {
  readonly name: string;
  readonly doc: string;
  readonly model: () => Model;
  readonly admitted: (a: Admission, wallMs: number) => Record<string, string>;
  readonly refused: (a: Admission, wallMs: number) => Reply;
  /** What the first request gets instead (Anthropic's 529 when overloaded), if anything. */
  readonly first?: Reply;
}

const sec = (ms: number) => Math.ceil(ms / 1000);
const unixSec = (wallMs: number) => sec(wallMs);
const json = { 'content-type': 'application/json' };

export const DIALECTS: readonly Dialect[] = [
  {
    // draft-ietf-httpapi-ratelimit-headers: RateLimit + RateLimit-Policy, Retry-After on 429.
    name: 'IETF RateLimit draft',
    doc: 'https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/',
    model: () => fixedWindow(10, 1000),
    admitted: (a) => ({
      ratelimit: `"default";r=${a.remaining};t=${sec(a.resetMs)}`,
      'ratelimit-policy': '"default";q=10;w=1',
    }),
    refused: (a) => ({
      headers: {
        ratelimit: `"default";r=0;t=${sec(a.resetMs)}`,
        'ratelimit-policy': '"default";q=10;w=1',
        'retry-after': String(sec(a.nextMs)),
      },
    }),
  },
  {
    // rate-limiter-flexible's README: X-RateLimit-Reset as whole Unix seconds, Retry-After.
    name: 'X-RateLimit, Unix-second reset',
    doc: 'https://github.com/animir/node-rate-limiter-flexible/wiki/Express-Middleware',
    model: () => fixedWindow(10, 1000),
    admitted: (a, wall) => ({
      'x-ratelimit-limit': '10',
      'x-ratelimit-remaining': String(a.remaining),
      'x-ratelimit-reset': String(unixSec(wall + a.resetMs)),
    }),
    refused: (a, wall) => ({
      headers: {
        'retry-after': String(sec(a.nextMs)),
        'x-ratelimit-limit': '10',
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(unixSec(wall + a.resetMs)),
      },
    }),
  },
  {
    // GitHub primary limit: 403 with x-ratelimit-remaining 0, wait for x-ratelimit-reset.
    name: 'GitHub primary (403)',
    doc: 'https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api',
    model: () => fixedWindow(20, 10_000),
    admitted: (a, wall) => github(a, wall, 20),
    refused: (a, wall) => ({
      status: 403,
      headers: { ...json, ...github(a, wall, 20) },
      body: {
        message: 'API rate limit exceeded for user ID 1.',
        documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api',
      },
    }),
  },
  {
    // GitHub secondary limit: 403 with retry-after while the primary quota has room.
    name: 'GitHub secondary (403 + retry-after)',
    doc: 'https://docs.github.com/rest/using-the-rest-api/troubleshooting-the-rest-api#rate-limit-errors',
    model: () => fixedWindow(10, 1000),
    admitted: (_a, wall) => github({ remaining: 4000 } as Admission, wall, 5000),
    refused: (a, wall) => ({
      status: 403,
      headers: {
        ...json,
        'retry-after': String(sec(a.nextMs)),
        ...github({ remaining: 4000 } as Admission, wall, 5000),
      },
      body: {
        message:
          'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
      },
    }),
  },
  {
    // OpenAI: x-ratelimit-*-requests with Go-duration resets (time until full), tokens too.
    name: 'OpenAI (Go durations)',
    doc: 'https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers',
    model: () => bucket(10, 1000),
    admitted: (a) => openai(a),
    refused: (a) => ({
      headers: { ...json, ...openai(a) },
      body: {
        error: {
          message: 'Rate limit reached for requests',
          type: 'requests',
          code: 'rate_limit_exceeded',
        },
      },
    }),
  },
  {
    // Anthropic: anthropic-ratelimit-requests-* with RFC 3339 resets, retry-after on 429, 529.
    name: 'Anthropic (RFC 3339, 529)',
    doc: 'https://docs.anthropic.com/en/api/rate-limits#response-headers',
    model: () => bucket(10, 1000),
    admitted: (a, wall) => anthropic(a, wall),
    refused: (a, wall) => ({
      headers: { ...json, 'retry-after': String(sec(a.nextMs)), ...anthropic(a, wall) },
      body: {
        type: 'error',
        error: {
          type: 'rate_limit_error',
          message: 'Number of requests has exceeded your rate limit.',
        },
      },
    }),
    // https://docs.anthropic.com/en/api/errors: 529 overloaded_error, no rate-limit headers.
    first: {
      status: 529,
      headers: json,
      body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    },
  },
  {
    // Azure OpenAI (PTU): retry-after-ms beside retry-after on 429.
    name: 'retry-after-ms (Azure OpenAI)',
    doc: 'https://learn.microsoft.com/en-us/azure/ai-services/openai/how-to/provisioned-get-started',
    model: () => bucket(10, 1000),
    admitted: () => ({}),
    refused: (a) => ({
      headers: {
        'retry-after-ms': String(Math.ceil(a.nextMs)),
        'retry-after': String(sec(a.nextMs)),
      },
    }),
  },
  {
    // Traefik's rateLimit middleware: a token bucket of `burst` refilled `average` per second;
    // a request that would wait up to half a permit's time is held that long and served, any
    // other refused with Retry-After in whole seconds rounded up and the exact wait in
    // X-Retry-In (serveDelayError in pkg/middlewares/ratelimiter/rate_limiter.go,
    // https://github.com/traefik/traefik). Here `average: 10, burst: 5`.
    name: 'Traefik (X-Retry-In)',
    doc: 'https://doc.traefik.io/traefik/middlewares/http/ratelimit/',
    model: () => traefikBucket(10, 5),
    admitted: () => ({}),
    refused: (a) => ({
      headers: { 'retry-after': String(sec(a.nextMs)), 'x-retry-in': goDelay(a.nextMs) },
    }),
  },
  {
    // X: x-rate-limit-* (Unix seconds), 15-minute windows (15 s here), 429 without Retry-After.
    name: 'X (x-rate-limit-*)',
    doc: 'https://docs.x.com/fundamentals/rate-limits',
    model: () => fixedWindow(15, 15_000),
    admitted: (a, wall) => xHeaders(a, wall),
    refused: (a, wall) => ({
      headers: { ...json, ...xHeaders(a, wall) },
      body: { errors: [{ code: 88, message: 'Rate limit exceeded' }] },
    }),
  },
  {
    // Jira Cloud: X-RateLimit-Reset as yyyy-MM-ddTHH:mmZ, Retry-After on 429.
    name: 'Jira (ISO reset)',
    doc: 'https://developer.atlassian.com/cloud/jira/platform/rate-limiting/',
    model: () => fixedWindow(10, 1000),
    admitted: (a, wall) => jira(a, wall),
    refused: (a, wall) => ({
      headers: {
        'retry-after': String(sec(a.nextMs)),
        'ratelimit-reason': 'jira-burst-based',
        ...jira(a, wall),
      },
    }),
  },
  {
    // Reddit: x-ratelimit-used / -remaining (float) / -reset (seconds), no limit header.
    name: 'Reddit (float remaining)',
    doc: 'https://github.com/reddit/reddit/wiki/API',
    model: () => fixedWindow(20, 10_000),
    admitted: (a) => reddit(a, 20),
    refused: (a) => ({ headers: reddit(a, 20) }),
  },
  {
    // Shopify REST: a leaky bucket of 40, 2 per second; 429 with Retry-After: 2.0.
    name: 'Shopify (used/limit)',
    doc: 'https://shopify.dev/docs/api/admin-rest/usage/rate-limits',
    model: () => bucket(40, 20_000),
    admitted: (a) => ({ 'x-shopify-shop-api-call-limit': `${40 - a.remaining}/40` }),
    refused: () => ({
      headers: { 'x-shopify-shop-api-call-limit': '40/40', 'retry-after': '2.0' },
      body: {
        errors:
          'Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service.',
      },
    }),
  },
  {
    // Discord: x-ratelimit-* with float reset-after, bucket, scope; body retry_after (seconds).
    name: 'Discord (reset-after, body)',
    doc: 'https://discord.com/developers/docs/topics/rate-limits',
    model: () => fixedWindow(5, 1000),
    admitted: (a, wall) => discord(a, wall),
    refused: (a, wall) => ({
      headers: {
        ...json,
        'retry-after': String(sec(a.nextMs)),
        'x-ratelimit-scope': 'user',
        ...discord(a, wall),
      },
      body: {
        message: 'You are being rate limited.',
        retry_after: Math.ceil(a.nextMs) / 1000,
        global: false,
      },
    }),
  },
  {
    // Slack Web API: 429 with Retry-After only.
    name: 'Slack (Retry-After only)',
    doc: 'https://api.slack.com/docs/rate-limits',
    model: () => fixedWindow(10, 1000),
    admitted: () => ({}),
    refused: (a) => ({ headers: { 'retry-after': String(sec(a.nextMs)) } }),
  },
  {
    // Google APIs: the wait is only in the body, error.details[] google.rpc.RetryInfo.
    name: 'Google (body retryDelay)',
    doc: 'https://cloud.google.com/apis/design/errors#error_details',
    model: () => fixedWindow(10, 1000),
    admitted: () => ({}),
    refused: (a) => ({
      headers: { 'content-type': 'application/json; charset=UTF-8' },
      body: {
        error: {
          code: 429,
          message: 'Quota exceeded.',
          status: 'RESOURCE_EXHAUSTED',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.RetryInfo',
              retryDelay: `${Math.ceil(a.nextMs) / 1000}s`,
            },
          ],
        },
      },
    }),
  },
  {
    // Envoy Gateway's global rate limit (Envoy's rate limit filter, `enable_x_ratelimit_headers:
    // DRAFT_VERSION_03`, ratelimit_headers.cc): the limit with its quota policy, the count, the
    // whole seconds to the window's end; its 429 says `x-envoy-ratelimited` too, no Retry-After.
    name: 'Envoy (draft-03 x-ratelimit)',
    doc: 'https://gateway.envoyproxy.io/docs/tasks/traffic/global-rate-limit/',
    model: () => alignedWindow(10, 1000),
    admitted: (a) => envoy(a),
    refused: (a) => ({ headers: { 'x-envoy-ratelimited': 'true', ...envoy(a) } }),
  },
  {
    // Kong's rate-limiting plugin, `second: 10, minute: 60`: draft-6 fields of the period with
    // the fewest left, each period's own as X-RateLimit-*-<Period>, Retry-After on a 429.
    name: 'Kong (X-RateLimit-Limit-Minute)',
    doc: 'https://developer.konghq.com/plugins/rate-limiting/',
    model: () =>
      kongWindows([
        ['second', 10, 1000],
        ['minute', 60, 60_000],
      ]),
    admitted: (a) => kong(a as KongAdmission),
    refused: (a) => ({
      headers: { 'retry-after': String(Math.max(1, sec(a.resetMs))), ...kong(a as KongAdmission) },
      body: { message: 'API rate limit exceeded' },
    }),
  },
  {
    // HubSpot: X-HubSpot-RateLimit-Max per -Interval-Milliseconds, a rolling window (its
    // TEN_SECONDLY_ROLLING policy; 100 per 10 s there, 20 per 2 s here), the daily quota beside
    // it; a 429 names the policy in its body, and no wait.
    name: 'HubSpot (Interval-Milliseconds)',
    doc: 'https://developers.hubspot.com/docs/guides/apps/api-usage/usage-details',
    model: () => rollingWindow(20, 2000),
    admitted: (a) => hubspot(a),
    refused: (a) => ({
      headers: { ...json, ...hubspot(a) },
      body: {
        status: 'error',
        message: 'You have reached your ten_secondly_rolling limit.',
        errorType: 'RATE_LIMIT',
        correlationId: 'c033cdaa-2c40-4a64-ae48-b4cec88dad24',
        policyName: 'TEN_SECONDLY_ROLLING',
      },
    }),
  },
  {
    // Spring Cloud Gateway's RedisRateLimiter, the doc's replenishRate 10, burstCapacity 20:
    // the tokens left and the bucket's settings on every answer; a 429 with nothing else.
    name: 'Spring Cloud Gateway (Replenish-Rate)',
    doc: 'https://docs.spring.io/spring-cloud-gateway/reference/spring-cloud-gateway-server-webflux/gatewayfilter-factories/requestratelimiter-factory.html',
    model: () => wholeSecondBucket(10, 20),
    admitted: (a) => springCloudGateway(a),
    refused: (a) => ({ headers: springCloudGateway(a) }),
  },
];

function envoy(a: Admission): Record<string, string> {
  return {
    'x-ratelimit-limit': '10, 10;w=1',
    'x-ratelimit-remaining': String(a.remaining),
    'x-ratelimit-reset': String(sec(a.resetMs)),
  };
}

function kong(a: KongAdmission): Record<string, string> {
  const headers: Record<string, string> = {
    'ratelimit-limit': String(a.limit),
    'ratelimit-remaining': String(a.remaining),
    'ratelimit-reset': String(Math.max(1, sec(a.resetMs))),
  };
  for (const [name, limit, remaining] of a.periods) {
    const period = name[0]?.toUpperCase() + name.slice(1);
    headers[`x-ratelimit-limit-${period}`] = String(limit);
    headers[`x-ratelimit-remaining-${period}`] = String(remaining);
  }
  return headers;
}

function hubspot(a: Admission): Record<string, string> {
  return {
    'x-hubspot-ratelimit-daily': '250000',
    'x-hubspot-ratelimit-daily-remaining': '249000',
    'x-hubspot-ratelimit-interval-milliseconds': '2000',
    'x-hubspot-ratelimit-max': '20',
    'x-hubspot-ratelimit-remaining': String(a.remaining),
  };
}

function springCloudGateway(a: Admission): Record<string, string> {
  return {
    'X-RateLimit-Remaining': String(a.remaining),
    'X-RateLimit-Replenish-Rate': '10',
    'X-RateLimit-Burst-Capacity': '20',
    'X-RateLimit-Requested-Tokens': '1',
  };
}

function github(a: Admission, wall: number, limit: number): Record<string, string> {
  return {
    'x-ratelimit-limit': String(limit),
    'x-ratelimit-remaining': String(a.remaining),
    'x-ratelimit-used': String(limit - a.remaining),
    'x-ratelimit-reset': String(unixSec(wall + (a.resetMs ?? 3_600_000))),
    'x-ratelimit-resource': 'core',
  };
}

function openai(a: Admission): Record<string, string> {
  return {
    'x-ratelimit-limit-requests': '10',
    'x-ratelimit-remaining-requests': String(a.remaining),
    'x-ratelimit-reset-requests': goDuration(a.resetMs),
    'x-ratelimit-limit-tokens': '150000',
    'x-ratelimit-remaining-tokens': '149984',
    'x-ratelimit-reset-tokens': '6m0s',
  };
}

function anthropic(a: Admission, wall: number): Record<string, string> {
  const at = (ms: number) =>
    new Date(Math.ceil((wall + ms) / 1000) * 1000).toISOString().replace('.000', '');
  return {
    'anthropic-ratelimit-requests-limit': '10',
    'anthropic-ratelimit-requests-remaining': String(a.remaining),
    'anthropic-ratelimit-requests-reset': at(a.resetMs),
    'anthropic-ratelimit-tokens-limit': '400000',
    'anthropic-ratelimit-tokens-remaining': '312000',
    'anthropic-ratelimit-tokens-reset': at(60_000),
  };
}

function xHeaders(a: Admission, wall: number): Record<string, string> {
  return {
    'x-rate-limit-limit': '15',
    'x-rate-limit-remaining': String(a.remaining),
    'x-rate-limit-reset': String(unixSec(wall + a.resetMs)),
  };
}

function jira(a: Admission, wall: number): Record<string, string> {
  const minute = new Date(Math.ceil((wall + a.resetMs) / 60_000) * 60_000).toISOString();
  return {
    'x-ratelimit-limit': '10',
    'x-ratelimit-remaining': String(a.remaining),
    'x-ratelimit-reset': `${minute.slice(0, 16)}Z`,
  };
}

function reddit(a: Admission, limit: number): Record<string, string> {
  return {
    'x-ratelimit-used': String(limit - a.remaining),
    'x-ratelimit-remaining': `${a.remaining}.0`,
    'x-ratelimit-reset': String(sec(a.resetMs)),
  };
}

function discord(a: Admission, wall: number): Record<string, string> {
  return {
    'x-ratelimit-limit': '5',
    'x-ratelimit-remaining': String(a.remaining),
    'x-ratelimit-reset': ((wall + a.resetMs) / 1000).toFixed(3),
    'x-ratelimit-reset-after': (Math.ceil(a.resetMs) / 1000).toFixed(3),
    'x-ratelimit-bucket': 'abcd1234',
  };
}

/** The msw handler of `dialect`, and what reached it. */
export function dialectServer(dialect: Dialect) {
  const admit = dialect.model();
  const statuses: number[] = [];
  /** Arrival times of the refusals. */
  const refusedAt: number[] = [];
  let first = dialect.first;
  const handler = http.all(`${ORIGIN}/*`, ({ request }) => {
    const at = Number(request.headers.get('x-arrived-at'));
    const wall = EPOCH + at;
    const date = { date: new Date(wall).toUTCString() };
    if (first !== undefined) {
      const reply = first;
      first = undefined;
      statuses.push(reply.status ?? 429);
      return HttpResponse.json(reply.body ?? null, {
        status: reply.status ?? 429,
        headers: { ...date, ...reply.headers },
      });
    }
    const admission = admit(at);
    if (admission.ok) {
      statuses.push(200);
      return HttpResponse.json(
        { ok: true },
        { headers: { ...date, ...dialect.admitted(admission, wall) } },
      );
    }
    const reply = dialect.refused(admission, wall);
    const status = reply.status ?? 429;
    statuses.push(status);
    refusedAt.push(at);
    const headers = { ...date, ...reply.headers };
    return reply.body === undefined
      ? new HttpResponse('Too Many Requests', { status, headers })
      : HttpResponse.json(reply.body, { status, headers });
  });
  return {
    handler,
    refusals: () => statuses.filter((status) => status !== 200).length,
    statuses,
    refusedAt,
  };
}

/**
 * The client's network on the manual clock: a request arrives `upMs` after it is sent and its
 * answer `downMs` after that. `busy` counts requests inside msw (no manual time passes there).
 */
export function delayedNetwork(clock: ManualClock, upMs: number, downMs: number) {
  const net = { busy: 0, sent: [] as number[] };
  const wait = (ms: number) =>
    ms === 0 ? Promise.resolve() : new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
  const fetch = async (request: Request): Promise<Response> => {
    net.sent.push(clock.now());
    await wait(upMs);
    request.headers.set('x-arrived-at', String(clock.now()));
    net.busy++;
    try {
      const response = await globalThis.fetch(request);
      return response;
    } finally {
      net.busy--;
      await wait(downMs);
    }
  };
  return { fetch, net };
}

/**
 * Moves the manual clock timer by timer until every call settled (or `endMs`): before each
 * step, everything that needs no time (msw, response handling) runs out.
 */
export async function runUntilSettled(
  clock: ManualClock,
  net: { busy: number },
  pending: () => number,
  endMs: number,
): Promise<void> {
  for (;;) {
    for (let i = 0; i < 400 && net.busy > 0; i++) await turn();
    for (let i = 0; i < 8; i++) await turn();
    if (pending() === 0) return;
    const next = clock.nextTimerAt;
    if (next === undefined || next > endMs) return;
    await clock.advanceAsync(Math.max(0, next - clock.now()));
  }
}
