import { tokenBucket } from '../core/algorithms/token-bucket.js';
import { assertFiniteNumber, assertKnownOptions, describe, fail } from '../core/validate.js';
import { assertCost, type UnitCosts, type UnitLimits } from '../core/units.js';
import { isRateLimitError } from '../pacer/errors.js';
import { PACER_OPTIONS, type PacerOptions } from '../pacer/options.js';
import { createPacer } from '../pacer/pacer.js';
import { reportTo } from '../pacer/progress.js';
import { realClock } from '../pacer/real-clock.js';
import type { Pacer, ScheduleOptions, TaskProgress } from '../pacer/types.js';
import { proberOf, type LearnOptions, resolveLearn, START } from './probes.js';
import { applyServerAnswer } from './answer-to-pacer.js';
import { saysOffline, untilOnline } from './offline.js';
import { readBodyHintText } from './body-hint.js';
import { arrivalSafeByDefault, spacedForStores } from './fetch-policy.js';
import {
  isRefusal,
  mayRetry,
  mayRetryOffline,
  networkRetryMs,
  type RetryOptions,
  refusalOf,
  resolveRetry,
} from './retry-policy.js';
import { dateOf, readServerAnswer, type ServerAnswer } from './server-answer.js';
import { serverClock } from './server-clock.js';
import { type ActualCost, adjustToActual, applyUnitQuotas } from './unit-costs.js';

/**
 * The own policy of a zero-configuration paced fetch: a ceiling no API reaches (a million
 * requests a second), so that what binds is what each key learns (slow start, then the server's
 * word).
 */
const UNCONFIGURED = Object.freeze({
  limit: 1_000_000,
  windowMs: 1_000,
  algorithm: tokenBucket,
});

/** A billion tokens a second, counted at the send: no limit, until one is learned. */
const NO_TOKEN_LIMIT = Object.freeze({
  limit: 1_000_000_000,
  windowMs: 1_000,
  algorithm: tokenBucket,
});

/**
 * The own limits of a zero-configuration paced fetch with a `cost` function: its requests as
 * without one, and the token units of OpenAI and Anthropic at a ceiling no API reaches, so that
 * a cost in tokens is accepted and what binds is what the headers teach in each unit.
 */
const UNCONFIGURED_UNITS: UnitLimits = Object.freeze({
  requests: UNCONFIGURED,
  tokens: NO_TOKEN_LIMIT,
  'input-tokens': NO_TOKEN_LIMIT,
  'output-tokens': NO_TOKEN_LIMIT,
});

/**
 * Shortest stated wait that blocks the key before the refused request's task settles (see
 * `pacedFetch`). A wait of a few ms (a GCRA's next permit: Traefik's `X-Retry-In`) is over
 * about when the next call would go: blocked for at once, it only changed the sample that
 * teaches the key its rate (a Traefik-like GCRA through 5-60 ms of jitter, seeds 1-8 of
 * `measure:arrivals`: 0.88x of the rate on average, 0.83x with every wait blocked in the task).
 */
const BLOCK_IN_TASK_MS = 100;

/** What a response's headers said, and the server's time they were read at (epoch ms). */
interface Heard {
  readonly answer: ServerAnswer | undefined;
  readonly nowEpochMs: number;
}

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
  /**
   * Permits a request takes, or with limits per unit its amount in each
   * (`(request, init) => ({ requests: 1, tokens: estimate })`). `init` is the call's own
   * `RequestInit`, so an estimate can read a body given as a string (as the OpenAI and Anthropic
   * SDKs give their JSON) without reading the request's stream. @default 1
   */
  readonly cost?: (request: Request, init: RequestInit | undefined) => number | UnitCosts;
  /**
   * The real cost of a request once its answer has come, for costs known only then (an LLM's
   * `usage`): given a clone of the response, it returns the amounts the request really took, and
   * the difference from its `cost` is charged or given back at once (`pacer.adjust`), so the
   * next requests start as early as the server takes them. Never holds the response: a
   * stream's usage counts when it arrives, or never. See `ActualCost`.
   */
  readonly actualCost?: ActualCost;
  /** Higher goes first among waiting requests of its key. @default 0 */
  readonly priority?: (request: Request) => number;
  /**
   * Retries after refusals (429, 503, 529, a rate-limit 403), or `false` for none. A refusal
   * that says when to come back waits that long and goes again first in line, without spending
   * `retry.limit`. See `RetryOptions`.
   */
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
  /**
   * Wall-clock epoch ms, only for absolute times in headers (HTTP-dates, Unix resets), read
   * against the server's clock as its answers' `Date` shows it. @default Date.now
   */
  readonly wallClock?: () => number;
}

/**
 * One call's own pacing: each field given overrides what the paced fetch derives from the
 * request (its `key`, `cost` and `priority` functions).
 */
export interface RequestPacing {
  /** The rate-limit key of this request. @default the paced fetch's `key(request)` */
  readonly key?: string | undefined;
  /** Permits (or amounts per unit) this request takes. @default the paced fetch's `cost(request)`, else 1 */
  readonly cost?: number | UnitCosts | undefined;
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
 * abort, `QueueFullError`, a reject-mode or `maxWaitMs` `RateLimitError`, and a network error
 * that its retries did not outlast (idempotent methods are sent again after a backoff, see
 * `RetryOptions.limit`).
 *
 * @example
 * const pacedFetch = createPacedFetch({ limits: perSecond(10) });
 * const response = await pacedFetch('https://api.example.com/items');
 * // One call's own key, cost, priority, and where it stands while it waits:
 * await pacedFetch(url, { pacing: { key: 'reports', cost: 5, onProgress: console.log } });
 */
export function createPacedFetch(options: PacedFetchOptions = {}): PacedFetch {
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
    actualCost: actualCostOf,
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
    ['actualCost', actualCostOf],
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
  const { learning, probing, slowStart } = resolveLearn(learnOptions);
  // Zero configuration: no limits, no pacer, no store. Every key starts slow and learns.
  // Its own keys: no shared pacer (whose keys are its owner's), no store (which counts on its own).
  const ownKeys = shared === undefined && pacerOptions.store === undefined;
  // Its store learns the rate of bare refusals for every client (`Store.pacesRefusals`).
  const storePaces = shared === undefined && pacerOptions.store?.pacesRefusals === true;
  const zeroConfig = ownKeys && pacerOptions.limits === undefined;
  if (zeroConfig && !learning) {
    throw new TypeError(
      '[fetch-pacer] `learn: false` needs `limits`: without them a paced fetch learns the limits from the server',
    );
  }
  // Slow start for its own keys (with a store too: each pacer holds its own requests in
  // flight), not in reject mode (which would refuse what it holds back).
  const startsSlow =
    zeroConfig || (shared === undefined && slowStart && pacerOptions.mode !== 'reject');
  if (zeroConfig && !slowStart) {
    throw new TypeError(
      '[fetch-pacer] `learn.slowStart: false` needs `limits`: without them every key starts slow',
    );
  }
  // With a store but no `limits`, createPacer throws the message that names it.
  const pacer =
    shared ??
    createPacer({
      ...pacerOptions,
      // A store counts at the send, spaced (see `spacedForStores`). With a `cost` function, a
      // cost may come in units: each of the LLM APIs' is learned.
      limits: zeroConfig
        ? costOf === undefined
          ? UNCONFIGURED
          : UNCONFIGURED_UNITS
        : pacerOptions.store === undefined
          ? arrivalSafeByDefault(pacerOptions.limits)
          : spacedForStores(pacerOptions.limits),
    } as PacerOptions);
  const retry = resolveRetry(retryOptions);
  // The time an offline call waits for the network on (a shared pacer's clock is its own).
  const clock = pacerOptions.clock ?? realClock;
  const send: FetchFunction = fetchImpl ?? ((request) => globalThis.fetch(request));

  // Absolute times are read against the server's clock, learned from its answers' `Date`.
  const clockOfServer = serverClock();

  /**
   * What the server said in its headers, and the server's time they are read at. `sentEpochMs`:
   * when the request went, by the wall clock.
   */
  function headersOf(response: Response, sentEpochMs: number): Heard {
    const { status, headers } = response;
    const answeredEpochMs = wallClock();
    // A response from a cache (`Age`) is dated when it was first sent, not now.
    const date = headers.has('age') ? undefined : dateOf(headers, answeredEpochMs);
    if (date !== undefined) clockOfServer.heard(date, sentEpochMs, answeredEpochMs);
    const nowEpochMs = clockOfServer.now(answeredEpochMs);
    return { answer: asTaken(readServerAnswer({ status, headers, nowEpochMs })), nowEpochMs };
  }

  /**
   * The answer whole: a refusal's body too when its headers give no wait, read after its task
   * settled (a body that trickles holds no permit of the key).
   */
  async function answerOf(response: Response, heard: Heard): Promise<ServerAnswer | undefined> {
    const { status, headers } = response;
    if (heard.answer?.retryAfterMs !== undefined || !isRefusal(retry, status, heard.answer)) {
      return heard.answer;
    }
    const body = await readBodyHintText(response);
    if (body === undefined) return heard.answer;
    return asTaken(readServerAnswer({ status, headers, nowEpochMs: heard.nowEpochMs, body }));
  }

  /** Without its quota when the headers' counts are not to be read (`readRateLimitHeaders`). */
  function asTaken(answer: ServerAnswer | undefined): ServerAnswer | undefined {
    if (readRateLimitHeaders || answer?.quota === undefined) return answer;
    const { quota: _ignored, ...rest } = answer;
    return rest;
  }

  async function pacedFetch(input: string | URL | Request, init?: PacingInit): Promise<Response> {
    const { requestInit, pacing } = splitInit(init);
    // One Request up front: it fixes the URL and method, and keeps the body replayable (each
    // attempt sends a clone, so the original body is never consumed).
    const request = new Request(input, requestInit);
    // The call's own pacing wins; the functions are not even asked then.
    const key = pacing?.key ?? keyOf(request);
    const cost = pacing?.cost ?? costOf?.(request, requestInit);
    const priority = pacing?.priority ?? priorityOf?.(request);
    const onProgress = pacing?.onProgress;
    if (probing) proberOf(pacer).calling(key); // a key at rest probes first (probes.ts)
    if (startsSlow) pacer.observe(key, START); // a key never heard from starts slow
    // The refusal a retry replaces: its body is freed only once the retry starts, so that a
    // retry the pacer will not queue (`maxWaitMs`, reject mode) can return it instead.
    let refused: Response | undefined;
    for (let attempt = 0, unexplained = 0; ; attempt++) {
      // Fields spelled out, not `{ ...task, front }`: spread copies take a slow shape in V8.
      const options: ScheduleOptions = {
        key,
        cost,
        priority,
        signal: request.signal,
        front: attempt > 0,
        onProgress,
      };
      const previous = refused;
      let sentAt = 0;
      let sentEpochMs = 0;
      // What the task read of its answer, and a network error's backoff. Read inside the task,
      // a wait the server stated (at least BLOCK_IN_TASK_MS) or the backoff blocks the key
      // before the task settles and the pacer starts the next call of the key: read after, a
      // call queued behind one in flight (a slow start's) went out at once behind a
      // `Retry-After: 5`.
      const outcome: {
        heard?: Heard;
        networkWaitMs?: number | undefined;
        blockedMs?: number | undefined;
        offline?: boolean;
      } = {};
      let response: Response;
      try {
        response = await pacer.schedule(async () => {
          sentAt = pacer.now();
          sentEpochMs = wallClock();
          // Not awaited: a body stream may only settle its cancel once its source does.
          previous?.body?.cancel().catch(() => {});
          let answered: Response;
          try {
            answered = await send(request.clone());
          } catch (error) {
            // The request went and no response came: sent again after a backoff, for which
            // the whole key waits (the queue behind it meets the same network), if the method
            // and the call's retries allow. The server said nothing, so nothing is learned: an
            // outage (or a browser offline) must not teach a rate.
            if (!request.signal.aborted) {
              if (
                (error as Error | undefined)?.name === 'TypeError' &&
                saysOffline() &&
                mayRetryOffline(retry, request.method, attempt)
              ) {
                // The page says why: no retry of `retry.limit` is spent, and no backoff could
                // succeed. The call waits for the network (below), holding no permit.
                outcome.offline = true;
              } else {
                outcome.networkWaitMs = networkRetryMs(
                  retry,
                  error,
                  request.method,
                  attempt,
                  unexplained,
                );
              }
            }
            if (outcome.networkWaitMs !== undefined) {
              pacer.blockUntil(key, pacer.now() + outcome.networkWaitMs);
            }
            throw error;
          }
          const heard = headersOf(answered, sentEpochMs);
          outcome.heard = heard;
          const { answer } = heard;
          // Only the block: what the answer teaches is told once the permit is no longer in
          // flight (an admission's count would count it twice; AIMD reads refusals after).
          const stated = refusalOf(retry, answered.status, answer, unexplained);
          if (stated?.explained && stated.waitMs >= BLOCK_IN_TASK_MS) {
            outcome.blockedMs = stated.waitMs;
            pacer.blockUntil(key, pacer.now() + stated.waitMs);
          }
          return answered;
        }, options);
      } catch (error) {
        if (previous !== undefined && isRateLimitError(error)) return previous;
        if (outcome.offline === true) {
          // Sent again once the page is back online, first in line; at most the longest wait
          // the call accepts before a retry (`retry.maxRetryAfterMs`), then its error. Told as a
          // block (a React status of 'blocked', not 'loading'), until that latest time.
          reportTo(onProgress, { state: 'blocked', until: pacer.now() + retry.maxRetryAfterMs });
          if (!(await untilOnline(clock, retry.maxRetryAfterMs, request.signal))) throw error;
          refused = undefined;
          continue;
        }
        if (outcome.networkWaitMs === undefined) throw error;
        unexplained++;
        refused = undefined;
        continue;
      }
      // The task resolved, so it heard the headers, and its permits are answered.
      const answeredAt = pacer.now();
      const answer = await answerOf(response, outcome.heard as Heard);
      const refusal = applyServerAnswer(
        pacer,
        key,
        answer,
        refusalOf(retry, response.status, answer, unexplained),
        {
          learning,
          sentAt,
          attempt,
          pacesRefusals: shared === undefined,
          storePaces,
          blockedMs: outcome.blockedMs,
        },
      );
      if (readRateLimitHeaders) applyUnitQuotas(pacer, key, answer?.units, learning);
      if (refusal === undefined) {
        if (actualCostOf !== undefined) {
          adjustToActual(pacer, key, cost ?? 1, actualCostOf, response, request, {
            startedAt: sentAt,
            answeredAt,
          });
        }
        return response;
      }
      if (!mayRetry(retry, refusal, request.method, attempt, unexplained)) return response;
      if (refusal.waitMs > retry.maxRetryAfterMs) return response;
      if (!refusal.explained) unexplained++;
      refused = response;
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
  'actualCost',
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
  if (cost !== undefined) assertCost('pacing.cost', cost);
  if (priority !== undefined) assertFiniteNumber('pacing.priority', priority);
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw new TypeError(
      `[fetch-pacer] Expected \`pacing.onProgress\` to be a function, got ${describe(onProgress)}`,
    );
  }
  return pacing as RequestPacing;
}
