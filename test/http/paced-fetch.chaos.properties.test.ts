/**
 * A paced fetch against a hostile or broken server, as a property: each answer is a random
 * status with random rate-limit headers of every dialect the paced fetch reads (garbage, huge,
 * negative, dates, durations, structured fields, a skewed `Date`), a random body hint, or a
 * network error; the client has random limits (none at all, a policy, limits per unit with an
 * `actualCost` that may fail), a store or none, learning or not, retry and queue options, and
 * calls at random times, some aborted at random times, on a network of random delays, all on a
 * manual clock.
 *
 * Whatever the server says: every call settles, with a Response, an AbortError, the network's
 * TypeError or a PacerError (never an error of the paced fetch's own: a RangeError, a parse
 * error); a call sends at most `maxAttempts` requests; no rejection goes unhandled; nothing is
 * reported but a failing hook of the caller's (`actualCost`: its estimate then stands); and the
 * pacer ends with nothing queued or in flight. The parsers are held to their bounds one by one
 * in server-answer.hostile.test.ts; this is the whole path, from the answer through learning
 * to the queue. `CHAOS_RUNS=5000` runs more (8,000 runs passed when it was written).
 */
import fc from 'fast-check';
import { HttpResponse, http } from 'msw';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.mjs';
import { MAX_DELAY_MS } from '../../src/core/signal.js';
import { createPacedFetch, type PacedFetchOptions } from '../../src/http/paced-fetch.js';
import { isPacerError } from '../../src/pacer/errors.js';
import { createManualClock } from '../../src/testing/index.js';
import { driveNetwork, network } from '../support/counting-servers.js';
import { fakeStore } from '../support/fake-store.js';
import { turn } from '../support/flush.js';
import { server } from '../support/msw.js';

const ORIGIN = 'https://api.test';
/** The server's wall clock at manual time 0 (Unix resets and `Date` are read against it). */
const EPOCH = 1_795_000_000_000;
/**
 * Past the longest block any answer may set (MAX_DELAY_MS) and the waits behind it, for each
 * request a scenario's calls may send: each answer may set a block again, and with no
 * `maxWaitMs` the calls queued behind wait it out (a 403 with `retry-after: 1795000003`
 * returned at once, as beyond `retry.maxRetryAfterMs`, and held the four calls behind it for a
 * block each, past a bound of one: CI, seed -583819458).
 */
const endMsFor = (requests: number) => (requests + 1) * 2 * MAX_DELAY_MS;

const fragments = fc.constantFrom(
  '',
  ' ',
  '0',
  '1',
  '2',
  '-1',
  '0.05',
  '575.0',
  '1e3',
  'NaN',
  'Infinity',
  '999999999999999',
  '9999999999999999999',
  '1795000003',
  '1795000000.5',
  '1h2m3.5s',
  '20ms',
  '6m0s',
  '2026-11-16T08:26:43Z',
  '2026-11-16T08:26:40.5+01:00',
  'Mon, 16 Nov 2026 08:26:44 GMT',
  'Thu, 01 Jan 1970 00:00:00 GMT',
  '32/40',
  '"a";q=999999999999999;w=999999999999',
  '"a";q=1e8;w=1',
  '"a";q=5;w=1',
  '"a";r=0;t=5',
  '"a";r=2;t=1',
  'limit=3, remaining=0, reset=1',
  '10;w=1',
  ';',
  ',',
  '"',
);

const value = fc.oneof(
  { weight: 4, arbitrary: fc.array(fragments, { maxLength: 4 }).map((parts) => parts.join('')) },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
  // Long enough to catch a parser that backtracks, bounded so a run stays fast.
  { weight: 1, arbitrary: fc.constant(`1${' '.repeat(4_000)}x`) },
);

const headerNames = fc.constantFrom(
  'date',
  'retry-after',
  'retry-after-ms',
  'ratelimit',
  'ratelimit-policy',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'x-ratelimit-reset-after',
  'x-ratelimit-used',
  'x-ratelimit-bucket',
  'x-ratelimit-global',
  'x-ratelimit-scope',
  'x-ratelimit-resource',
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-tokens',
  'anthropic-ratelimit-requests-limit',
  'anthropic-ratelimit-requests-remaining',
  'anthropic-ratelimit-requests-reset',
  'anthropic-ratelimit-tokens-remaining',
  'anthropic-ratelimit-output-tokens-remaining',
  'x-rate-limit-limit',
  'x-rate-limit-remaining',
  'x-rate-limit-reset',
  'x-shopify-shop-api-call-limit',
);

const body = fc.oneof(
  fc.constant(undefined),
  fc.constant('not json {'),
  fc.json({ maxDepth: 2 }),
  fc.oneof(fc.double(), fc.string({ maxLength: 8 })).map((n) => JSON.stringify({ retry_after: n })),
  fc.string({ maxLength: 12 }).map((delay) =>
    JSON.stringify({
      error: {
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: delay }],
      },
    }),
  ),
);

interface Answer {
  /** 0: a network error (the fetch rejects with a TypeError). */
  readonly status: number;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string | undefined;
}

const answerArb: fc.Arbitrary<Answer> = fc.record({
  status: fc.constantFrom(0, 200, 200, 200, 204, 400, 403, 403, 404, 429, 429, 429, 500, 503, 529),
  headers: fc.array(fc.tuple(headerNames, value), { maxLength: 6 }),
  body,
});

interface Call {
  readonly atMs: number;
  /** Aborted this long after it was made, if at all. */
  readonly abortAfterMs: number | undefined;
  readonly path: string;
  readonly method: 'GET' | 'POST';
}

const callArb: fc.Arbitrary<Call> = fc.record({
  atMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 5_000 })),
  abortAfterMs: fc.option(fc.integer({ min: 0, max: 3_000 }), { nil: undefined }),
  path: fc.constantFrom('/a', '/b', '/a/1'),
  method: fc.constantFrom('GET', 'GET', 'POST'),
});

const policyArb = fc.oneof(
  fc.record({ limit: fc.integer({ min: 1, max: 20 }), windowMs: fc.constantFrom(100, 1_000) }),
  fc.record({
    limit: fc.integer({ min: 1, max: 20 }),
    windowMs: fc.constantFrom(100, 1_000),
    burst: fc.integer({ min: 1, max: 20 }),
  }),
);

/** What the client is told besides the queue options (see `clientOf`). */
interface Client {
  /** `'units'`: requests and tokens, each call costing some tokens (OpenAI's shape). */
  readonly limits: 'none' | 'units' | { readonly limit: number; readonly windowMs: number };
  /** With limits: share them through a store (the fake one: the shared-bucket arithmetic). */
  readonly store: boolean;
  readonly learn: boolean;
  /** With units: what `actualCost` does (a real count, a garbage one, a throw, a late one). */
  readonly actualCost: 'none' | 'count' | 'garbage' | 'throws' | 'rejects';
}

const clientArb: fc.Arbitrary<Client> = fc.record({
  limits: fc.oneof(fc.constant('none' as const), fc.constant('units' as const), policyArb),
  store: fc.boolean(),
  learn: fc.boolean(),
  actualCost: fc.constantFrom(
    'none' as const,
    'count' as const,
    'garbage' as const,
    'throws' as const,
    'rejects' as const,
  ),
});

const optionsArb: fc.Arbitrary<Partial<PacedFetchOptions>> = fc
  .record({
    limits: fc.option(policyArb, { nil: undefined }),
    retry: fc.option(
      fc.oneof(
        fc.constant(false as const),
        fc.record({
          limit: fc.integer({ min: 0, max: 3 }),
          maxAttempts: fc.integer({ min: 1, max: 6 }),
          maxRetryAfterMs: fc.integer({ min: 0, max: 120_000 }),
          backoffMs: fc.integer({ min: 1, max: 2_000 }),
        }),
      ),
      { nil: undefined },
    ),
    maxWaitMs: fc.option(fc.integer({ min: 0, max: 10_000 }), { nil: undefined }),
    concurrency: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
    mode: fc.option(fc.constantFrom('queue' as const, 'reject' as const), { nil: undefined }),
  })
  .map(({ retry, maxWaitMs, concurrency, mode }) => {
    const defined = Object.entries({ retry, maxWaitMs, concurrency, mode });
    return Object.fromEntries(
      defined.filter(([, v]) => v !== undefined),
    ) as Partial<PacedFetchOptions>;
  });

/**
 * The paced fetch options of `client` on top of the queue options (which need limits: zero
 * configuration makes its own pacer, and takes only `retry`).
 */
function clientOf(client: Client, options: Partial<PacedFetchOptions>, now: () => number) {
  const { limits } = client;
  if (limits === 'none') return options.retry === undefined ? {} : { retry: options.retry };
  const perUnit = limits === 'units';
  const made: Record<string, unknown> = {
    ...options,
    limits: perUnit
      ? { requests: { limit: 10, windowMs: 1_000 }, tokens: { limit: 1_000, windowMs: 1_000 } }
      : limits,
    learn: client.learn,
  };
  if (client.store) made['store'] = fakeStore({ now }).store;
  if (perUnit) {
    made['cost'] = (request: Request) => ({ requests: 1, tokens: request.url.length * 10 });
    const actual = {
      none: undefined,
      count: () => ({ tokens: 100 }),
      garbage: () => ({ tokens: Number.NaN, requests: -5 }) as never,
      throws: () => {
        throw new Error('usage unreadable');
      },
      rejects: () => Promise.reject(new Error('usage never came')),
    }[client.actualCost];
    if (actual !== undefined) made['actualCost'] = actual;
  }
  return made as Partial<PacedFetchOptions>;
}

const scenarioArb = fc.record({
  answers: fc.array(answerArb, { minLength: 1, maxLength: 12 }),
  client: clientArb,
  options: optionsArb,
  calls: fc.array(callArb, { minLength: 1, maxLength: 12 }),
  delayMs: fc.tuple(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 60 })),
  seed: fc.integer({ min: 1, max: 0x7fff_ffff }),
});

type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

/**
 * How a call ended: a status, the kind of error it rejected with, or the error itself when it
 * is none of those (the property then fails, naming it).
 */
type Outcome = number | 'abort' | 'network' | 'pacer' | { readonly unexpected: string };

function outcomeOf(error: unknown): Outcome {
  if (error instanceof DOMException && error.name === 'AbortError') return 'abort';
  if (isPacerError(error)) return 'pacer';
  // The network's own failure, as fetch reports it (msw's `HttpResponse.error()`).
  if (error instanceof TypeError && error.message === 'Failed to fetch') return 'network';
  return { unexpected: String(error) };
}

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
/** What the paced fetch reported (`reportError`): a hook of the caller's that failed. */
const reported: unknown[] = [];
const platform = globalThis as { reportError?: ((error: unknown) => void) | undefined };
const reportError = platform.reportError;
beforeEach(() => {
  process.on('unhandledRejection', onUnhandled);
  platform.reportError = (error) => reported.push(error);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
  platform.reportError = reportError;
});

async function run(scenario: Scenario): Promise<Outcome[]> {
  const { answers, client, calls, delayMs, seed } = scenario;
  unhandled.length = 0;
  reported.length = 0;
  const clock = createManualClock();
  let served = 0;
  server.use(
    http.all(`${ORIGIN}/*`, () => {
      const answer = answers[served++ % answers.length] as Answer;
      if (answer.status === 0) return HttpResponse.error();
      const headers = new Headers();
      for (const [name, text] of answer.headers) {
        // A header value the Headers class itself refuses (a control character) cannot come
        // over the wire either.
        try {
          headers.append(name, text);
        } catch {}
      }
      const nobody = answer.status === 204;
      return new HttpResponse(nobody ? null : (answer.body ?? ''), {
        status: answer.status,
        headers,
      });
    }),
  );
  const net = network({ clock, delayMs: [delayMs[0], delayMs[0] + delayMs[1]], seed });
  const options = clientOf(client, scenario.options, clock.now);
  const retry = options.retry;
  const pacedFetch = createPacedFetch({
    ...options,
    ...(retry === undefined || retry === false
      ? {}
      : { retry: { ...retry, random: seededRandom(seed) } }),
    fetch: net.fetch,
    clock,
    wallClock: () => EPOCH + clock.now(),
  } as PacedFetchOptions);
  const outcomes: (Outcome | undefined)[] = calls.map(() => undefined);
  let settled = 0;
  let made = 0;
  calls.forEach((call, index) => {
    clock.setTimeout(() => {
      made++;
      const controller = new AbortController();
      if (call.abortAfterMs !== undefined) {
        clock.setTimeout(() => controller.abort(), call.abortAfterMs);
      }
      pacedFetch(`${ORIGIN}${call.path}`, { method: call.method, signal: controller.signal }).then(
        (response) => {
          outcomes[index] = response.status;
          settled++;
        },
        (error: unknown) => {
          outcomes[index] = outcomeOf(error);
          settled++;
        },
      );
    }, call.atMs);
  });
  try {
    // However the server answers, a call sends at most `maxAttempts` requests (20 by default).
    const attempts = retry === false ? 1 : (retry?.maxAttempts ?? 20);
    const endMs = endMsFor(calls.length * attempts);
    await driveNetwork(clock, net, () => made === calls.length && settled === calls.length, endMs);
    for (let i = 0; i < 5; i++) await turn();
    expect(unhandled).toEqual([]);
    // Only an `actualCost` that fails is reported (the estimate stands); nothing else is.
    const hookFails = client.limits === 'units' && !['none', 'count'].includes(client.actualCost);
    if (!hookFails) expect(reported).toEqual([]);
    expect(outcomes.filter((outcome) => typeof outcome === 'object')).toEqual([]);
    expect(served).toBeLessThanOrEqual(calls.length * attempts);
    const snapshot = pacedFetch.pacer.getSnapshot();
    expect(snapshot.queued).toBe(0);
    expect(snapshot.inFlight).toBe(0);
    return outcomes as Outcome[];
  } finally {
    pacedFetch.pacer.dispose();
    server.resetHandlers();
  }
}

describe('a paced fetch against a hostile server (property)', () => {
  it('settles every call, with a response or an abort, network or pacer error, and leaves nothing queued', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        const outcomes = await run(scenario);
        expect(outcomes).toHaveLength(scenario.calls.length);
      }),
      { numRuns: Number(process.env['CHAOS_RUNS'] ?? 150) },
    );
  }, 60_000);
});
