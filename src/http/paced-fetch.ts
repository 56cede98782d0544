import {
  assertFiniteNumber,
  assertKnownOptions,
  assertPositiveInteger,
  describe,
  fail,
} from '../core/validate.js';
import { PACER_OPTIONS, type PacerOptions } from '../pacer/options.js';
import { createPacer } from '../pacer/pacer.js';
import type { Pacer, ScheduleOptions, TaskProgress } from '../pacer/types.js';
import { adapterOf, heard, type LearnOptions, resolveLearn } from './adapt.js';
import { parseRateLimitHeaders } from './ratelimit-headers.js';
import { parseRetryAfter } from './retry-after.js';
import { backoffMs, isRefusal, mayRetry, type RetryOptions, resolveRetry } from './retry-policy.js';

/** The fetch being paced: the global one by default, looked up at each call. */
export type FetchFunction = (input: Request) => Promise<Response>;

export interface PacedFetchOptions extends Partial<PacerOptions> {
  /**
   * A pacer to share (several fetch wrappers, or a fetch wrapper and your own tasks, under one
   * budget). Without it, one is made from the pacer options here (`limits` is then required).
   */
  readonly pacer?: Pacer;
  /** The fetch to call. @default `globalThis.fetch`, looked up at call time (msw, polyfills) */
  readonly fetch?: FetchFunction;
  /** The rate-limit key of a request. @default the request's origin (`https://api.example.com`) */
  readonly key?: (request: Request) => string;
  /** Permits a request takes. @default 1 */
  readonly cost?: (request: Request) => number;
  /** Higher goes first among waiting requests of its key. @default 0 */
  readonly priority?: (request: Request) => number;
  /** Retries after 429/503, or `false` for none. See `RetryOptions`. */
  readonly retry?: RetryOptions | false;
  /** Read `RateLimit`/`X-RateLimit-*` headers to lower local credit. @default true */
  readonly readRateLimitHeaders?: boolean;
  /**
   * Learn the server's rate, not only its count: adopt the policy its headers advertise, and cut
   * a learned rate on refusals without headers (AIMD); `{ probe: true }` also sends one request
   * of a key at rest before the others. `false`: only lower credit. See `LearnOptions`.
   * @default true
   */
  readonly learn?: boolean | LearnOptions;
  /** Wall-clock epoch ms, only for HTTP-dates in headers. @default Date.now */
  readonly wallClock?: () => number;
}

/**
 * One call's own pacing: each field given overrides what the paced fetch derives from the
 * request (its `key`, `cost` and `priority` functions).
 */
export interface RequestPacing {
  /** The rate-limit key of this request. @default the paced fetch's `key(request)` */
  readonly key?: string | undefined;
  /** Permits this request takes. @default the paced fetch's `cost(request)`, else 1 */
  readonly cost?: number | undefined;
  /** Higher starts first among waiting requests of its key. @default `priority(request)`, else 0 */
  readonly priority?: number | undefined;
  /**
   * Told where the request stands, as `ScheduleOptions.onProgress`, for every attempt: a retried
   * 429 reports `started`, then `blocked` until its `Retry-After`, then `started` again.
   */
  readonly onProgress?: ((progress: TaskProgress) => void) | undefined;
}

/** `RequestInit`, plus `pacing`: the paced fetch takes it out before building the `Request`. */
export interface PacingInit extends RequestInit {
  readonly pacing?: RequestPacing | undefined;
}

/** `fetch`'s signature (an `init` may carry `pacing`), plus the pacer behind it. */
export type PacedFetch = ((
  input: string | URL | Request,
  init?: PacingInit,
) => Promise<Response>) & {
  readonly pacer: Pacer;
};

/**
 * Wraps `fetch` so that every request waits for its key's permit, and the server's refusals
 * (429/503 with `Retry-After`) and quota headers pace every later request of that key.
 * HTTP statuses never throw: after its retries it returns the last response. It rejects on
 * abort, `QueueFullError`, a reject-mode or `maxWaitMs` `RateLimitError`, and network errors.
 *
 * @example
 * const pacedFetch = createPacedFetch({ limits: perSecond(10) });
 * const response = await pacedFetch('https://api.example.com/items');
 * // One call's own key, cost, priority, and where it stands while it waits:
 * await pacedFetch(url, { pacing: { key: 'reports', cost: 5, onProgress: console.log } });
 */
export function createPacedFetch(options: PacedFetchOptions): PacedFetch {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(
      `[fetch-pacer] Expected paced fetch options \`{ limits }\` or \`{ pacer }\`, got ${describe(options)}`,
    );
  }
  assertKnownOptions('createPacedFetch()', options, PACED_FETCH_OPTIONS);
  const {
    pacer: shared,
    fetch: fetchImpl,
    key: keyOf = originOf,
    cost: costOf,
    priority: priorityOf,
    retry: retryOptions,
    readRateLimitHeaders = true,
    learn: learnOptions,
    wallClock = Date.now,
    ...pacerOptions
  } = options;
  for (const [field, value] of [
    ['fetch', fetchImpl],
    ['key', keyOf],
    ['cost', costOf],
    ['priority', priorityOf],
    ['wallClock', wallClock],
  ] as const) {
    if (value !== undefined && typeof value !== 'function') {
      throw new TypeError(
        `[fetch-pacer] Expected \`${field}\` to be a function, got ${describe(value)}`,
      );
    }
  }
  if (typeof readRateLimitHeaders !== 'boolean') {
    fail('readRateLimitHeaders', 'a boolean', readRateLimitHeaders, TypeError);
  }
  if (shared !== undefined) {
    if (!isPacer(shared)) fail('pacer', 'a pacer made by `createPacer()`', shared, TypeError);
    // A shared pacer was made with its own options: one passed here could only be ignored.
    const ignored = PACER_OPTIONS.find((name) => pacerOptions[name] !== undefined);
    if (ignored !== undefined) {
      throw new TypeError(
        `[fetch-pacer] \`${ignored}\` cannot apply next to a shared \`pacer\`, which has its own options: pass either \`pacer\` or the options to make one, not both`,
      );
    }
  }
  // Without `limits`, createPacer throws the message that names it.
  const pacer = shared ?? createPacer(pacerOptions as PacerOptions);
  const retry = resolveRetry(retryOptions);
  const send: FetchFunction = fetchImpl ?? ((request) => globalThis.fetch(request));
  const { learning, probing } = resolveLearn(learnOptions);

  /** After a response: learn the server's count and rate; a refusal's Retry-After, if any. */
  function learn(key: string, response: Response): number | undefined {
    const now = wallClock();
    const quota = readRateLimitHeaders ? parseRateLimitHeaders(response.headers, now) : undefined;
    if (!isRefusal(retry, response.status)) return heard(pacer, key, quota, false, learning);
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), now);
    heard(pacer, key, quota, retryAfterMs === undefined, learning);
    return retryAfterMs;
  }

  async function pacedFetch(input: string | URL | Request, init?: PacingInit): Promise<Response> {
    const { requestInit, pacing } = splitInit(init);
    // One Request up front: it fixes the URL and method, and keeps the body replayable (each
    // attempt sends a clone, so the original body is never consumed).
    const request = new Request(input, requestInit);
    // The call's own pacing wins; the functions are not even asked then.
    const key = pacing?.key ?? keyOf(request);
    const cost = pacing?.cost ?? costOf?.(request);
    const priority = pacing?.priority ?? priorityOf?.(request);
    const onProgress = pacing?.onProgress;
    if (probing) adapterOf(pacer).calling(key); // a key at rest probes first (adapt.ts)
    for (let attempt = 0; ; attempt++) {
      // Fields spelled out, not `{ ...task, front }`: spread copies take a slow shape in V8.
      const options: ScheduleOptions = {
        key,
        cost,
        priority,
        signal: request.signal,
        front: attempt > 0,
        onProgress,
      };
      const response = await pacer.schedule(() => send(request.clone()), options);
      const retryAfterMs = learn(key, response);
      if (!isRefusal(retry, response.status)) return response;
      const waitMs = retryAfterMs ?? backoffMs(retry, attempt);
      // The whole key waits, so calls queued behind this one do not earn the same refusal.
      pacer.blockUntil(key, pacer.now() + waitMs);
      if (!mayRetry(retry, response.status, request.method, attempt)) return response;
      if (waitMs > retry.maxRetryAfterMs) return response;
      // Free the connection; the refusal's body is of no use to the caller. Not awaited: a
      // body stream may only settle its cancel once its source does.
      response.body?.cancel().catch(() => {});
    }
  }

  return Object.assign(pacedFetch, { pacer });
}

/** Every option of `createPacedFetch`: its own, and those it passes to the pacer it makes. */
const PACED_FETCH_OPTIONS: readonly string[] = [
  ...PACER_OPTIONS,
  'pacer',
  'fetch',
  'key',
  'cost',
  'priority',
  'retry',
  'readRateLimitHeaders',
  'learn',
  'wallClock',
];

function isPacer(value: unknown): value is Pacer {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Pacer).schedule === 'function' &&
    typeof (value as Pacer).observe === 'function'
  );
}

function originOf(request: Request): string {
  return new URL(request.url).origin;
}

/**
 * Takes `pacing` out of `init` (it is no `RequestInit` field, and another fetch must not see it)
 * and checks it. An `init` without one is passed on as it is: a plain call costs no copy.
 */
function splitInit(init: PacingInit | undefined): {
  readonly requestInit: RequestInit | undefined;
  readonly pacing: RequestPacing | undefined;
} {
  if (typeof init !== 'object' || init === null || !('pacing' in init)) {
    return { requestInit: init, pacing: undefined };
  }
  const { pacing, ...requestInit } = init;
  return { requestInit, pacing: pacing === undefined ? undefined : checkPacing(pacing) };
}

/** Checks a call's `pacing` the way `schedule` checks its options, naming `pacing.<field>`. */
function checkPacing(pacing: unknown): RequestPacing {
  if (typeof pacing !== 'object' || pacing === null || Array.isArray(pacing)) {
    throw new TypeError(
      `[fetch-pacer] Expected \`pacing\` to be an object \`{ key, cost, priority, onProgress }\`, got ${describe(pacing)}`,
    );
  }
  const { key, cost, priority, onProgress } = pacing as Record<keyof RequestPacing, unknown>;
  if (key !== undefined && typeof key !== 'string') {
    throw new TypeError(
      `[fetch-pacer] Expected \`pacing.key\` to be a string, got ${describe(key)}`,
    );
  }
  // A TypeError for the wrong type, a RangeError for a number out of range: as `schedule`.
  if (cost !== undefined) assertPositiveInteger('pacing.cost', cost);
  if (priority !== undefined) assertFiniteNumber('pacing.priority', priority);
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw new TypeError(
      `[fetch-pacer] Expected \`pacing.onProgress\` to be a function, got ${describe(onProgress)}`,
    );
  }
  return pacing as RequestPacing;
}
