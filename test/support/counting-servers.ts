import { HttpResponse, http } from 'msw';
import { seededRandom } from '../../bench/lib/random.mjs';
import { createManualClock, type ManualClock } from '../../src/testing/index.js';
import { turn } from './flush.js';
import { server } from './msw.js';

/**
 * Rate-limited servers that count the way real ones do, **at arrival time**, for tests that put a
 * network between the paced client and the server. Each scheme follows a real implementation:
 *
 * - `'sliding-log'`: an exact log of accepted requests, a request refused while `limit` were
 *   accepted in the last `windowMs` (half-open: one exactly a window old is out). Strict APIs.
 * - `'fixed-window'`: a window that opens at the first hit after the last one ended, every hit
 *   counted, refused ones too: express-rate-limit's MemoryStore and rate-limiter-flexible's
 *   RateLimiterMemory (https://github.com/animir/node-rate-limiter-flexible/wiki/Memory).
 * - `'sliding-window'`: two aligned fixed windows weighted by the elapsed share, refused when
 *   `previous * (1 - elapsed / windowMs) + current >= limit`, refused hits not counted: Upstash's
 *   `slidingWindow` (https://upstash.com/docs/redis/sdks/ratelimit-ts/algorithms) and
 *   Cloudflare's counting rules.
 * - `'gcra'`: the generic cell rate algorithm with emission interval `windowMs / limit` and a
 *   tolerance of `burst - 1` intervals: redis-cell, throttled, nginx `limit_req` (whose `burst`
 *   is the extra requests beyond the first, hence `burst + 1` here).
 *
 * What the server says (`dialect`): IETF draft-8 headers (`RateLimit`, `RateLimit-Policy`, as
 * express-rate-limit's `standardHeaders: 'draft-8'` sends them), the `X-RateLimit-*` family with
 * a whole-second Unix reset (rate-limiter-flexible's README) or a fractional one (koa-ratelimit's
 * `X-RateLimit-Reset: 1764583200.406`, https://github.com/koajs/ratelimit) or whole seconds to go,
 * rounded up (@fastify/rate-limit's `x-ratelimit-reset: 1`,
 * https://github.com/fastify/fastify-rate-limit#options), the whole-second Unix family with
 * `Retry-After: msBeforeNext / 1000` on every answer, as rate-limiter-flexible's README sets its
 * four headers (https://github.com/animir/node-rate-limiter-flexible#readme, "You may want to set
 * HTTP headers for the response"), only `Retry-After` on a refusal, `Retry-After` and the
 * exact wait as a Go duration in `X-Retry-In` on a refusal (Traefik's `rateLimit` middleware:
 * see `goDelay`), or nothing at all (nginx). Every refusal but the last carries `Retry-After` in
 * whole seconds.
 */
export type CountingScheme = 'sliding-log' | 'fixed-window' | 'sliding-window' | 'gcra';
export type CountingDialect =
  | 'ietf'
  | 'x-ratelimit'
  | 'x-ratelimit-fractional'
  | 'x-ratelimit-delta'
  | 'rate-limiter-flexible'
  | 'retry-after'
  | 'traefik'
  | 'none';

export const COUNTING_SCHEMES: readonly CountingScheme[] = [
  'sliding-log',
  'fixed-window',
  'sliding-window',
  'gcra',
];
export const COUNTING_DIALECTS: readonly CountingDialect[] = [
  'ietf',
  'x-ratelimit',
  'x-ratelimit-fractional',
  'x-ratelimit-delta',
  'rate-limiter-flexible',
  'retry-after',
  'traefik',
  'none',
];

export interface CountingServerOptions {
  readonly clock: ManualClock;
  readonly scheme: CountingScheme;
  readonly limit: number;
  readonly windowMs: number;
  /** For `'gcra'`: requests admitted at once. @default limit */
  readonly burst?: number;
  /**
   * For `'gcra'`: counts as redis-gcra 0.3.0's Lua script does (`lib/gcra.lua`,
   * https://github.com/Losant/redis-gcra), in floats on the wall clock's whole ms: a full bucket
   * of 5 at 60 per second says 3 left where an integer GCRA says 4, and a count is often one
   * lower than the integer one. @default false (integers, as redis-cell and throttled count)
   */
  readonly countsInFloats?: boolean;
  /**
   * For `'sliding-window'`: refused hits count too, as in HAProxy's `http_req_rate` (every
   * tracked request increments the stick table's counter). @default false (Upstash's). For
   * `'sliding-log'`: refused hits are logged too, as rolling-rate-limiter logs every attempt
   * (https://github.com/peterkhayes/rolling-rate-limiter: "all of their actions will be blocked
   * until they pause or slow their requests"). @default false
   */
  readonly countsRefused?: boolean;
  readonly dialect: CountingDialect;
  /** Wall-clock epoch ms at manual time 0, for Unix resets. @default 1_700_000_000_000 */
  readonly epoch?: number;
  readonly origin?: string;
}

/** One request as the server saw it: its arrival time and the status it got. */
export interface ServerHit {
  readonly at: number;
  readonly status: number;
}

/** A verdict of a scheme at an arrival: admitted or not, and what to tell the client. */
export interface Verdict {
  readonly admitted: boolean;
  /** Requests the server would still admit right now. */
  readonly remaining: number;
  /** ms until the quota resets (a window's end, or the bucket being full again). */
  readonly resetMs: number;
  /** On a refusal: ms until the same request would be admitted. */
  readonly retryMs: number;
}

export type Counter = (at: number) => Verdict;

/** Wall-clock ms at manual time 0, for Unix resets (see `CountingServerOptions.epoch`). */
const EPOCH = 1_700_000_000_000;

function slidingLog(limit: number, windowMs: number, countsRefused: boolean): Counter {
  const logged: number[] = [];
  return (at) => {
    while (logged.length > 0 && (logged[0] as number) <= at - windowMs) logged.shift();
    const admitted = logged.length < limit;
    if (admitted || countsRefused) logged.push(at);
    // Admitted once all but `limit - 1` of the log are a window old: the oldest, counting only
    // what was accepted; with refused hits logged too, the one `limit` from the newest
    // (rolling-rate-limiter's `timestamps[n - maxInInterval] + interval - now`).
    const freeing = logged[Math.max(0, logged.length - limit)] ?? at;
    return {
      admitted,
      remaining: Math.max(0, limit - logged.length),
      resetMs: (logged.at(-1) ?? at) + windowMs - at,
      retryMs: admitted ? 0 : freeing + windowMs - at,
    };
  };
}

function fixedWindow(limit: number, windowMs: number): Counter {
  let count = 0;
  let endsAt = Number.NEGATIVE_INFINITY;
  return (at) => {
    if (at >= endsAt) {
      count = 0;
      endsAt = at + windowMs;
    }
    count++;
    const admitted = count <= limit;
    return {
      admitted,
      remaining: Math.max(0, limit - count),
      resetMs: endsAt - at,
      retryMs: admitted ? 0 : endsAt - at,
    };
  };
}

function slidingWindow(limit: number, windowMs: number, countsRefused: boolean): Counter {
  let index = Number.NEGATIVE_INFINITY;
  let previous = 0;
  let current = 0;
  return (at) => {
    const now = Math.floor(at / windowMs);
    if (now !== index) {
      previous = now === index + 1 ? current : 0;
      current = 0;
      index = now;
    }
    const elapsed = (at - now * windowMs) / windowMs;
    const estimate = previous * (1 - elapsed) + current;
    const admitted = estimate < limit;
    if (admitted || countsRefused) current++;
    // The estimate falls below the limit again once the previous window's weight has decayed.
    const over = previous * (1 - elapsed) + current - limit + 1;
    const retryMs =
      admitted || previous === 0
        ? (now + 1) * windowMs - at
        : Math.min((now + 1) * windowMs - at, (over / previous) * windowMs);
    return {
      admitted,
      remaining: Math.max(0, Math.floor(limit - (previous * (1 - elapsed) + current))),
      // Upstash's `reset`: the end of the current window, `(currentWindow + 1) * windowSize`
      // (src/single.ts, slidingWindow), though the previous window's weight lasts a window more.
      resetMs: (now + 1) * windowMs - at,
      retryMs: admitted ? 0 : Math.max(1, retryMs),
    };
  };
}

function gcra(limit: number, windowMs: number, burst: number): Counter {
  const interval = windowMs / limit;
  const tolerance = (burst - 1) * interval;
  let tat = Number.NEGATIVE_INFINITY;
  return (at) => {
    const base = Math.max(tat, at);
    // Real GCRAs count in integers (nginx in ms, redis-cell in ns) and admit a tie; here the
    // intervals are floats, summed: a full burst exactly when the bucket is full again came
    // out a hair over the tolerance (6 per 250 ms, 6 at once at 0 and at 251).
    const admitted = at >= base - tolerance - 1e-6;
    if (admitted) tat = base + interval;
    const ahead = Math.max(tat, at) - at;
    return {
      admitted,
      // In integers too, as redis-cell and throttled count (in ns): one arrival into a full
      // bucket leaves exactly `burst - 1`, where the float quotient said 4 of 6 for 5 at 60 per
      // second. (redis-gcra counts in Lua floats and says `burst - 2` there: the real-server
      // bench has it, bench/servers/gcra-app.mjs.)
      remaining: Math.max(0, Math.floor((tolerance - ahead) / interval + 1e-9) + 1),
      resetMs: ahead,
      retryMs: admitted ? 0 : base - tolerance - at,
    };
  };
}

/**
 * redis-gcra's script (lib/gcra.lua of 0.3.0), step for step, for a cost of 1: its `now` is the
 * app's `Date.now()`, whole ms of the wall clock (`epoch + at` here), its arithmetic Lua's
 * doubles. Its burst is `burst` (what it admits at once); its counts are floored quotients of
 * floats near 1.7e12, so often one lower than an integer GCRA's (`burst - 2` of a full bucket).
 */
function luaGcra(limit: number, windowMs: number, burst: number, epoch: number): Counter {
  const emissionInterval = windowMs / limit;
  const burstOffset = emissionInterval * burst;
  let stored: number | undefined;
  let expiresAt = Number.NEGATIVE_INFINITY;
  return (at) => {
    const now = Math.floor(epoch + at);
    // The key expires `reset_in` ms after its last SET (`PX`).
    const tat = Math.max(stored !== undefined && now < expiresAt ? stored : now, now);
    const newTat = tat + emissionInterval;
    const diff = now - (newTat - burstOffset);
    const remaining = Math.floor(diff / emissionInterval);
    if (remaining < 0) {
      return {
        admitted: false,
        remaining: Math.max(0, Math.floor((now - (tat - burstOffset)) / emissionInterval)),
        resetMs: Math.ceil(tat - now),
        retryMs: Math.ceil(-diff),
      };
    }
    const resetMs = Math.ceil(newTat - now);
    stored = newTat;
    expiresAt = now + resetMs;
    return { admitted: true, remaining, resetMs, retryMs: 0 };
  };
}

/** The count of a scheme alone, without msw: `admits(at)` says whether a hit at `at` is admitted. */
export function schemeCounter(
  options: Pick<
    CountingServerOptions,
    'scheme' | 'limit' | 'windowMs' | 'burst' | 'countsRefused' | 'countsInFloats' | 'epoch'
  >,
): Counter {
  const { scheme, limit, windowMs } = options;
  if (scheme === 'gcra' && options.countsInFloats === true) {
    return luaGcra(limit, windowMs, options.burst ?? limit, options.epoch ?? EPOCH);
  }
  return scheme === 'sliding-log'
    ? slidingLog(limit, windowMs, options.countsRefused === true)
    : scheme === 'fixed-window'
      ? fixedWindow(limit, windowMs)
      : scheme === 'sliding-window'
        ? slidingWindow(limit, windowMs, options.countsRefused === true)
        : gcra(limit, windowMs, options.burst ?? limit);
}

/** An msw handler for `${origin}/*` that counts every request at its arrival time. */
export function countingServer(options: CountingServerOptions) {
  const { clock, limit, windowMs, dialect, epoch = EPOCH } = options;
  const { scheme } = options;
  const origin = options.origin ?? 'https://api.test';
  const count = schemeCounter(options);
  // The limit the `X-RateLimit-*` family names: a GCRA's is its burst, what it admits at once
  // (redis-cell's "total limit of the key (max_burst + 1). This is equivalent to the common
  // X-RateLimit-Limit HTTP header", https://github.com/brandur/redis-cell#response; throttled's
  // `RateLimitResult.Limit`, "the maximum number of requests that could be permitted
  // instantaneously for this key starting from an empty state"), with `X-RateLimit-Reset` when it
  // is full again.
  const named = scheme === 'gcra' ? (options.burst ?? limit) : limit;
  const hits: ServerHit[] = [];
  // Real servers count whole ms: a window's `(at + windowMs) - at` summed in floats came out a
  // hair over 1000 now and then, a reset of "2" on a 1 s window.
  const seconds = (ms: number) => Math.max(0, Math.ceil(Math.round(ms) / 1000));
  const handler = http.all(`${origin}/*`, ({ request }) => {
    // The arrival time the network stamped (see `network`), so msw's own turns cannot blur it.
    const at = Number(request.headers.get('x-arrived-at') ?? clock.now());
    const verdict = count(at);
    hits.push({ at, status: verdict.admitted ? 200 : 429 });
    // Every answer is dated by the server's clock, whole seconds, as real servers date theirs.
    const headers: Record<string, string> = { date: new Date(epoch + at).toUTCString() };
    if (dialect === 'ietf') {
      headers['ratelimit'] = `"${scheme}";r=${verdict.remaining};t=${seconds(verdict.resetMs)}`;
      headers['ratelimit-policy'] = `"${scheme}";q=${limit};w=${windowMs / 1000}`;
    } else if (dialect === 'x-ratelimit') {
      headers['x-ratelimit-limit'] = String(named);
      headers['x-ratelimit-remaining'] = String(verdict.remaining);
      headers['x-ratelimit-reset'] = String(Math.ceil((epoch + at + verdict.resetMs) / 1000));
    } else if (dialect === 'x-ratelimit-fractional') {
      headers['x-ratelimit-limit'] = String(named);
      headers['x-ratelimit-remaining'] = String(verdict.remaining);
      headers['x-ratelimit-reset'] = ((epoch + at + verdict.resetMs) / 1000).toFixed(3);
    } else if (dialect === 'x-ratelimit-delta') {
      headers['x-ratelimit-limit'] = String(named);
      headers['x-ratelimit-remaining'] = String(verdict.remaining);
      headers['x-ratelimit-reset'] = String(seconds(verdict.resetMs));
    }
    if (dialect === 'rate-limiter-flexible') {
      headers['x-ratelimit-limit'] = String(named);
      headers['x-ratelimit-remaining'] = String(verdict.remaining);
      headers['x-ratelimit-reset'] = String(Math.ceil((epoch + at + verdict.resetMs) / 1000));
      // msBeforeNext / 1000: the reset to the ms on an admission, the wait on a refusal.
      headers['retry-after'] = String(
        (verdict.admitted ? verdict.resetMs : verdict.retryMs) / 1000,
      );
      if (verdict.admitted) return HttpResponse.json({ ok: true }, { headers });
      return new HttpResponse('Too Many Requests', { status: 429, headers });
    }
    if (verdict.admitted) return HttpResponse.json({ ok: true }, { headers });
    if (dialect !== 'none') headers['retry-after'] = String(seconds(verdict.retryMs));
    if (dialect === 'traefik') headers['x-retry-in'] = goDelay(verdict.retryMs);
    return new HttpResponse('Too Many Requests', { status: 429, headers });
  });
  return {
    handler,
    hits,
    /** The server's wall clock, for the client's `wallClock` (Unix resets are read against it). */
    wallClock: () => epoch + clock.now(),
    refusals: () => hits.filter((hit) => hit.status !== 200).length,
  };
}

export interface NetworkOptions {
  readonly clock: ManualClock;
  /** One-way delay of each request and of each response, in ms: `[min, max]`, uniform. */
  readonly delayMs: readonly [number, number];
  /** Seed of the delays, so a run can be reproduced. @default 1 */
  readonly seed?: number;
}

/**
 * A counting server on the msw server, behind a network on a fresh manual clock: what every test
 * that puts delay between a paced client and a server starts with. `delayMs` and `seed` are the
 * network's (see `network`), the rest the server's.
 */
export function servedThroughNetwork(
  options: Omit<CountingServerOptions, 'clock'> & Omit<NetworkOptions, 'clock'>,
) {
  const { delayMs, seed, ...served } = options;
  const clock = createManualClock();
  const backend = countingServer({ clock, ...served });
  server.use(backend.handler);
  const net = network({ clock, delayMs, ...(seed === undefined ? {} : { seed }) });
  return { clock, backend, net };
}

/**
 * A network between a paced client and an msw server, on the manual clock: each request reaches
 * the server after its own random delay (stamped `x-arrived-at`), and its response reaches the
 * client after another. Pass `fetch` to the paced fetch; drive time with `driveNetwork`.
 */
export function network(options: NetworkOptions) {
  const { clock, delayMs } = options;
  const random = seededRandom(options.seed ?? 1);
  const [low, high] = delayMs;
  const delay = () => low + random() * (high - low);
  const wait = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
  const sent: number[] = [];
  let atServer = 0;
  let inTransit = 0;
  const fetch = async (request: Request): Promise<Response> => {
    sent.push(clock.now());
    inTransit++;
    try {
      await wait(delay());
      request.headers.set('x-arrived-at', String(clock.now()));
      atServer++;
      let response: Response;
      try {
        response = await globalThis.fetch(request);
      } finally {
        atServer--;
      }
      await wait(delay());
      return response;
    } finally {
      inTransit--;
    }
  };
  return {
    fetch,
    sent,
    /** True when no request is at the server: the clock may move. */
    quiet: () => atServer === 0,
    inTransit: () => inTransit,
  };
}

/**
 * Moves the manual clock from timer to timer until `done()`, letting every request that reached
 * the server be answered before time moves on (msw answers over a few macrotask turns). Fails
 * loudly when nothing is pending but the work is not done, or past `endMs`.
 */
export async function driveNetwork(
  clock: ManualClock,
  net: { quiet(): boolean },
  done: () => boolean,
  endMs: number,
): Promise<void> {
  for (;;) {
    for (let turns = 0; turns < 4 || !net.quiet(); turns++) {
      if (turns > 400) throw new Error('a request is still at the server after 400 turns');
      await turn();
    }
    if (done()) return;
    const next = clock.nextTimerAt;
    if (next === undefined) throw new Error('nothing is pending, yet not every call settled');
    if (next > endMs) throw new Error(`calls still pending at ${endMs} ms`);
    await clock.advanceAsync(Math.max(0, next - clock.now()));
  }
}

/**
 * Drives `calls` through `net` on `clock` until every one settled (see `driveNetwork`): each
 * one's status (-1 for a rejection) in the order they settled.
 */
export async function settleAll(
  clock: ManualClock,
  net: { quiet(): boolean },
  calls: readonly Promise<Response>[],
  endMs: number,
): Promise<number[]> {
  const { statuses, done, all } = trackCalls(calls);
  await driveNetwork(clock, net, done, endMs);
  await all;
  return statuses;
}

/**
 * Follows calls to their end: each one's status (-1 for a rejection) in the order they settled,
 * and whether all have, for `driveNetwork`'s `done`.
 */
export function trackCalls(calls: readonly Promise<Response>[]) {
  const statuses: number[] = [];
  const all = Promise.all(
    calls.map((call) =>
      call.then(
        (response) => statuses.push(response.status),
        () => statuses.push(-1),
      ),
    ),
  );
  return { statuses, done: () => statuses.length === calls.length, all };
}

/**
 * A wait as Go's `time.Duration.String()` prints it, as Traefik's `X-Retry-In` carries it
 * (`16.666666ms`, `1.5s`, `1m0.25s`): to the ns, trailing zeros dropped.
 */
export function goDelay(ms: number): string {
  const ns = Math.round(ms * 1e6);
  const trimmed = (value: number, unit: string) => `${Number(value.toFixed(9))}${unit}`;
  if (ns < 1_000) return `${ns}ns`;
  if (ns < 1_000_000) return trimmed(ns / 1_000, '\u00b5s');
  if (ns < 1_000_000_000) return trimmed(ns / 1_000_000, 'ms');
  const minutes = Math.floor(ns / 60_000_000_000);
  const seconds = trimmed((ns % 60_000_000_000) / 1e9, 's');
  return minutes > 0 ? `${minutes}m${seconds}` : seconds;
}
