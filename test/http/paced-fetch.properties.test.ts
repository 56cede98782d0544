/**
 * Issue 12, as properties: a paced fetch against every counting server and dialect of
 * `counting-servers.ts`, with a random limit, window, network delays and calls (some at once,
 * some later), on a manual clock. A client configured to the published limit earns no refusal,
 * and so does one told a GCRA server's burst as well;
 * a client ten times too generous, or with no configuration at all, loses no call (the server
 * may refuse on the wire, but every call ends 200). In every run each call settles exactly
 * once, before `driveNetwork` runs out of pending work or of time.
 *
 * Counterexamples found are kept as `examples` of their property, each with what it was.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.mjs';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { slidingLog } from '../../src/index.js';
import {
  COUNTING_DIALECTS,
  COUNTING_SCHEMES,
  type CountingDialect,
  type CountingScheme,
  driveNetwork,
  servedThroughNetwork,
} from '../support/counting-servers.js';
import { fakeStore } from '../support/fake-store.js';
import { server } from '../support/msw.js';

const ORIGIN = 'https://api.test';
/**
 * The scenarios are drawn from this seed, so that CI runs the same ones each time (a random
 * seed found `burstAcrossTheServersWindow` in about one run in seven). `FC_SEED=<n>` explores
 * others.
 */
const SEED = Number(process.env['FC_SEED'] ?? 20_261_204);
/** Manual time a run may take before `driveNetwork` calls it stuck. */
const END_MS = 3_600_000;

/** Calls sent `atMs` after the first ones. */
interface Batch {
  readonly atMs: number;
  readonly count: number;
}

interface Scenario {
  readonly scheme: CountingScheme;
  readonly dialect: CountingDialect;
  readonly limit: number;
  readonly windowMs: number;
  /** One-way delay of the network, `[low, low + width]` ms. */
  readonly delayMs: readonly [number, number];
  /** Seed of the network's delays and of the retries' backoff jitter. */
  readonly seed: number;
  /** Calls sent at once at time 0. */
  readonly calls: number;
  readonly later: readonly Batch[];
  /** A GCRA server's burst (requests at once), told to the published client too. */
  readonly burst?: number;
  /**
   * A sliding log or sliding window that counts refused hits too (rolling-rate-limiter,
   * HAProxy's `http_req_rate`): a client refused stays refused until it slows down.
   */
  readonly countsRefused?: boolean;
}

const scenarioArb: fc.Arbitrary<Scenario> = fc
  .record({
    scheme: fc.constantFrom(...COUNTING_SCHEMES),
    dialect: fc.constantFrom(...COUNTING_DIALECTS),
    limit: fc.integer({ min: 1, max: 30 }),
    windowMs: fc.constantFrom(250, 500, 1_000, 2_000, 5_000),
    low: fc.integer({ min: 0, max: 50 }),
    width: fc.integer({ min: 0, max: 100 }),
    seed: fc.integer({ min: 1, max: 0x7fff_ffff }),
    countsRefused: fc.boolean(),
  })
  .chain(({ low, width, ...server }) =>
    fc
      .record({
        calls: fc.integer({ min: 1, max: 3 * server.limit }),
        later: fc.array(
          fc.record({
            atMs: fc.integer({ min: 0, max: 3 * server.windowMs }),
            count: fc.integer({ min: 1, max: server.limit }),
          }),
          { maxLength: 3 },
        ),
      })
      .map(
        ({ calls, later }): Scenario => ({
          ...server,
          delayMs: [low, low + width],
          calls,
          later,
        }),
      ),
  );

type Client = 'published' | 'sliding-log' | 'generous' | 'zero-config';

/**
 * Runs `scenario` with a client of its kind: its calls at 0 and in their batches, time driven
 * until every one settled. The server's refusals, each call's status (-1 for a rejection) and
 * how many times it settled, in call order.
 */
async function run(client: Client, scenario: Scenario, onOneStore = 1) {
  const { scheme, dialect, limit, windowMs, delayMs, seed, burst, countsRefused } = scenario;
  const told = burst === undefined ? {} : { burst };
  server.resetHandlers();
  const { clock, backend, net } = servedThroughNetwork({
    scheme,
    limit,
    windowMs,
    dialect,
    ...told,
    ...(countsRefused === true ? { countsRefused } : {}),
    delayMs,
    seed,
  });
  // Several paced fetches (processes, tabs) share one store, the calls dealt out in turn.
  const store = onOneStore > 1 ? { store: fakeStore({ now: clock.now }).store } : {};
  const pacedFetches = Array.from({ length: onOneStore }, (_, k) =>
    createPacedFetch({
      ...(client === 'published'
        ? { limits: { limit, windowMs, ...told } }
        : client === 'sliding-log'
          ? { limits: { limit, windowMs, algorithm: slidingLog } }
          : client === 'generous'
            ? { limits: { limit: 10 * limit, windowMs } }
            : {}),
      ...store,
      fetch: net.fetch,
      clock,
      wallClock: backend.wallClock,
      // The default retries, with a seeded backoff jitter so that a counterexample repeats.
      retry: { random: seededRandom(seed + k) },
    }),
  );
  const total = scenario.calls + scenario.later.reduce((sum, batch) => sum + batch.count, 0);
  const statuses: (number | undefined)[] = Array.from({ length: total }, () => undefined);
  const settles: number[] = Array.from({ length: total }, () => 0);
  let settled = 0;
  let sent = 0;
  const settle = (i: number, status: number) => {
    statuses[i] = status;
    settles[i] = (settles[i] ?? 0) + 1;
    settled++;
  };
  const send = (count: number) => {
    for (let n = 0; n < count; n++) {
      const i = sent++;
      (pacedFetches[i % onOneStore] as (typeof pacedFetches)[0])(`${ORIGIN}/n/${i}`).then(
        (response) => settle(i, response.status),
        () => settle(i, -1),
      );
    }
  };
  send(scenario.calls);
  for (const batch of scenario.later) clock.setTimeout(() => send(batch.count), batch.atMs);
  // Throws if a call is still pending with nothing left to happen, or at END_MS.
  await driveNetwork(clock, net, () => settled === total, END_MS);
  return { refusals: backend.refusals(), statuses, settles };
}

type Outcome = Awaited<ReturnType<typeof run>>;

/** Every call settled once, with a 200. */
function expectNoCallLost({ statuses, settles }: Outcome) {
  expect(settles.filter((times) => times !== 1)).toEqual([]);
  expect(statuses.filter((status) => status !== 200)).toEqual([]);
}

function expectNoRefusal(outcome: Outcome) {
  expect(outcome.refusals).toBe(0);
  expectNoCallLost(outcome);
}

/**
 * A bare-429 server (`dialect: 'none'`) on a network without delay, calls at once: what the
 * pinned scenarios below share.
 */
function bareScenario(
  scenario: Pick<Scenario, 'scheme' | 'limit' | 'windowMs' | 'calls'> & Partial<Scenario>,
): Scenario {
  return { dialect: 'none', delayMs: [0, 0], seed: 1, later: [], ...scenario };
}

/**
 * Zero configuration against a bare-429 server of 2 per 250 ms, 5 calls at once: its AIMD rate
 * started at half a million per second (a sample of two admitted was no sample), and one call's
 * 20 sends were all refused within 22 ms. Kept as an example.
 */
const twoAdmittedThenAWall = bareScenario({
  scheme: 'sliding-log',
  limit: 2,
  windowMs: 250,
  calls: 5,
});

/**
 * A published-limit client that spends its first window's credit in two parts: 2 at 0, and 5
 * at 1000. The first window's 3 unspent went at 1000 next to a window the server still weighed
 * (at 1400 its estimate was 2 * 0.6 + 4 >= 5); that credit now lapses when the window ends.
 */
const splitFirstWindow = bareScenario({
  scheme: 'sliding-window',
  limit: 5,
  windowMs: 1_000,
  calls: 2,
  later: [{ atMs: 1_000, count: 5 }],
});

/**
 * A bare-429 server of one request per 5 s: the second call's three sends were refused in
 * 1.8 s, never three within a second, so no rate paced them and the call ended 429. Three
 * refusals in a row now teach a rate however slowly they come.
 */
const oneEveryFiveSeconds = bareScenario({
  scheme: 'fixed-window',
  limit: 1,
  windowMs: 5_000,
  calls: 2,
});

/**
 * A bare-429 server of one request per 250 ms (as nginx's `limit_req` of 4r/s without a burst):
 * the slow start sent two as each answer came, and retries go first, so the call refused first
 * kept going second: refused at 100, 1110 and 2772 ms, each right after another call was
 * admitted, never three refusals within a second or in a row, and its retries were spent before
 * a rate paced it. A call's own third refusal now teaches the rate (`RefusalSignal.attempt`).
 */
const onePer250Ms = bareScenario({
  scheme: 'sliding-log',
  limit: 1,
  windowMs: 250,
  delayMs: [23, 27],
  seed: 673_546_346,
  calls: 2,
  later: [
    { atMs: 565, count: 1 },
    { atMs: 4, count: 1 },
  ],
});

/**
 * 2 calls at 0, then 30 at 950-952, to a sliding-window counter of 30 per second that sends
 * `x-ratelimit-*` with fractional resets, 42-155 ms away (found by a random seed). The first
 * window's credit (28 left) went at once at 950 and arrived after the server's window turned
 * at 1000, next to the 2 it still weighed (at 1396: 2 x 0.6 + 29 >= 30); the client, counting
 * the 2 free a window after their answers (1176, 1287), sent at 1288 and was refused. That
 * credit now lapses after such a pause (`ArrivalSafe.lapse`).
 */
const burstAcrossTheServersWindow: Scenario = {
  scheme: 'sliding-window',
  dialect: 'x-ratelimit-fractional',
  limit: 30,
  windowMs: 1_000,
  seed: 24,
  delayMs: [42, 113],
  calls: 2,
  later: [
    { atMs: 950, count: 7 },
    { atMs: 952, count: 23 },
  ],
};

describe('a paced fetch against random servers, limits, delays and calls (issue 12)', () => {
  it('configured to the published limit, earns no refusal and every call ends 200', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        expectNoRefusal(await run('published', scenario));
      }),
      { seed: SEED, numRuns: 250, examples: [[splitFirstWindow], [burstAcrossTheServersWindow]] },
    );
  }, 60_000);

  it('naming slidingLog, earns no refusal from a sliding log or fixed windows of the published limit', async () => {
    // The log a server keeps, counted at arrival (see fetch-policy.ts): whatever the jitter, no
    // window of the server's holds more than the limit. (A sliding-window counter or a GCRA is
    // no sliding log: naming one for them is the caller's error.)
    const logOrWindows = scenarioArb.chain((scenario) =>
      fc
        .constantFrom<CountingScheme>('sliding-log', 'fixed-window')
        .map((scheme): Scenario => ({ ...scenario, scheme })),
    );
    await fc.assert(
      fc.asyncProperty(logOrWindows, async (scenario) => {
        expectNoRefusal(await run('sliding-log', scenario));
      }),
      { seed: SEED, numRuns: 200 },
    );
  }, 60_000);

  it("told a GCRA server's burst, earns no refusal and every call ends 200", async () => {
    // nginx's `limit_req burst=`: bursts of that many at any time, each request counted as the
    // server would count one that arrived as late as its answer.
    const gcraWithBurst = scenarioArb
      .filter((scenario) => scenario.limit >= 2)
      .chain((scenario) =>
        fc
          .integer({ min: 2, max: scenario.limit })
          .map((burst): Scenario => ({ ...scenario, scheme: 'gcra', burst })),
      );
    await fc.assert(
      fc.asyncProperty(gcraWithBurst, async (scenario) => {
        expectNoRefusal(await run('published', scenario));
      }),
      { seed: SEED, numRuns: 150 },
    );
  }, 60_000);

  it('ten times too generous, loses no call', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) =>
        expectNoCallLost(await run('generous', scenario)),
      ),
      { seed: SEED, numRuns: 200, examples: [[oneEveryFiveSeconds], [onePer250Ms]] },
    );
  }, 60_000);

  it('three on one store, configured to the published limit or ten times too generous, lose no call', async () => {
    // The store counts at the send, spread evenly over a window half the longest round trip
    // its clients told longer (`spreadAt` in stores/bucket-state.ts), not at the arrival: a
    // refusal through jitter is still possible where the way out took longer than half a round
    // trip (with the published limit, 1 of these 150 scenarios refused once; 26 without the
    // spread), a lost call is not. Bare refusals teach the store's shared rate
    // (stores/shared-rate.ts), which paces all three.
    const client = fc.constantFrom<Client>('published', 'generous');
    await fc.assert(
      fc.asyncProperty(client, scenarioArb, async (kind, scenario) =>
        expectNoCallLost(await run(kind, scenario, 3)),
      ),
      { seed: SEED, numRuns: 150 },
    );
  }, 60_000);

  it('with no configuration, loses no call', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) =>
        expectNoCallLost(await run('zero-config', scenario)),
      ),
      {
        seed: SEED,
        numRuns: 200,
        examples: [[twoAdmittedThenAWall], [oneEveryFiveSeconds], [onePer250Ms]],
      },
    );
  }, 60_000);
});
