/**
 * How the mock API counts requests: three schemes real servers use, written here independently
 * of fetch-pacer (the server must not be the client's twin). Each counts a request at the moment
 * it arrives (`at`, `performance.now()` ms) and answers what its headers can say about it.
 */
export type Counting = 'sliding-log' | 'fixed-window' | 'gcra';

/** The server's published limit: `rate` requests per second; `burst` only for GCRA. */
export interface ServerLimits {
  readonly rate: number;
  readonly burst: number;
}

export interface CountAnswer {
  readonly allowed: boolean;
  /** Whole requests left now (the `r` of `RateLimit`, `X-RateLimit-Remaining`). */
  readonly remaining: number;
  /** ms until the next request would be accepted (0 when one would be now). */
  readonly nextMs: number;
  /** ms until the whole quota is back (the `t` of `RateLimit`, the `X-RateLimit-Reset`). */
  readonly resetMs: number;
}

export interface Counter {
  take(at: number): CountAnswer;
}

const WINDOW_MS = 1000;

/**
 * Requests arrive a little out of order (each is counted when the handler runs it): the server's
 * clock never runs backwards, as a real one would not.
 */
function forward(): (at: number) => number {
  let last = Number.NEGATIVE_INFINITY;
  return (at) => {
    last = Math.max(last, at);
    return last;
  };
}

/**
 * A sliding log (express + rate-limiter-flexible, Upstash `slidingLogs`, the strictest common
 * scheme): at most `rate` accepted requests in any 1 s, counted exactly.
 */
export function slidingLog({ rate }: ServerLimits): Counter {
  const limit = Math.max(1, Math.floor(rate));
  const log: number[] = [];
  const clock = forward();
  return {
    take(at) {
      const now = clock(at);
      while (log.length > 0 && (log[0] as number) <= now - WINDOW_MS) log.shift();
      const allowed = log.length < limit;
      if (allowed) log.push(now);
      const oldest = log[0] ?? now;
      const newest = log[log.length - 1] ?? now;
      const remaining = limit - log.length;
      return {
        allowed,
        remaining,
        nextMs: remaining > 0 ? 0 : oldest + WINDOW_MS - now,
        resetMs: log.length === 0 ? 0 : newest + WINDOW_MS - now,
      };
    },
  };
}

/**
 * Fixed windows on the wall clock's whole seconds (express-rate-limit's default memory store,
 * GitHub's hourly window): `rate` per window, the count back to zero at each boundary, so two
 * windows' worth can pass across one.
 */
export function fixedWindow({ rate }: ServerLimits): Counter {
  const limit = Math.max(1, Math.floor(rate));
  const clock = forward();
  let window = Number.NaN;
  let count = 0;
  return {
    take(at) {
      const now = clock(at);
      const wall = performance.timeOrigin + now;
      const current = Math.floor(wall / WINDOW_MS);
      if (current !== window) {
        window = current;
        count = 0;
      }
      const allowed = count < limit;
      if (allowed) count++;
      const untilNext = (current + 1) * WINDOW_MS - wall;
      return {
        allowed,
        remaining: limit - count,
        nextMs: count < limit ? 0 : untilNext,
        resetMs: untilNext,
      };
    },
  };
}

/**
 * GCRA, the leaky bucket as a meter (nginx `limit_req ... burst=N nodelay`, redis-cell,
 * Brandur's throttled): one request every `1000 / rate` ms, `burst` of them at once.
 * https://nginx.org/en/docs/http/ngx_http_limit_req_module.html
 */
export function gcra({ rate, burst }: ServerLimits): Counter {
  const interval = WINDOW_MS / rate;
  const tolerance = (Math.max(1, Math.floor(burst)) - 1) * interval;
  const clock = forward();
  // The theoretical arrival time: when the bucket would be empty again.
  let tat = Number.NEGATIVE_INFINITY;
  return {
    take(at) {
      const now = clock(at);
      const start = Math.max(tat, now);
      const allowed = start - tolerance <= now;
      if (allowed) tat = start + interval;
      const backlog = Math.max(0, tat - now);
      return {
        allowed,
        remaining: Math.max(0, Math.floor((tolerance + interval - backlog) / interval)),
        nextMs: Math.max(0, tat - tolerance - now),
        resetMs: backlog,
      };
    },
  };
}

export const COUNTERS: Readonly<Record<Counting, (limits: ServerLimits) => Counter>> = {
  'sliding-log': slidingLog,
  'fixed-window': fixedWindow,
  gcra,
};
