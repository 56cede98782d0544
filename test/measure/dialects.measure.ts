import { it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.mjs';
import { createPacedFetch, type PacedFetchOptions } from '../../src/http/paced-fetch.js';
import { createManualClock } from '../../src/testing/index.js';
import { network, settleAll } from '../support/counting-servers.js';
import {
  DIALECTS,
  type Dialect,
  dialectServer,
  EPOCH,
  ORIGIN,
  wholeSecondBucket,
} from '../support/dialect-servers.js';
import { fakeStore } from '../support/fake-store.js';
import { server } from '../support/msw.js';

// What each client configuration earns from the gateways and APIs whose headers were read last
// (test/support/dialect-servers.ts: each mocked from its documentation or source, 10 per second
// each), 300 calls at once, on the manual clock, straight to the server and through 5-60 ms of
// jitter each way, seeds 1-3: refusals, those after the first 2 s, failed calls, the time the
// last call ended, and the rate after 2 s against the published 10 per second.
//
//   npm run measure:dialects
//   DIALECTS_ONLY=HubSpot npm run measure:dialects
//   PACERS=3 npm run measure:dialects     (three paced fetches on one store, the fake store's real
//                                          shared-bucket arithmetic, each sending a third)
//   REFUSED_AT=1 npm run measure:dialects  (each run's refusals, ms of arrival)

const CALLS = 300;
const PACERS = Number(process.env['PACERS'] ?? 1);
const RATE = 10;
const SETTLED_MS = 2_000;
const SEEDS = [1, 2, 3];
const DELAYS: readonly (readonly [number, number])[] = [
  [0, 0],
  [5, 60],
];

const named = (name: string) => DIALECTS.find((d) => d.name === name) as Dialect;
const gateway = named('Spring Cloud Gateway (Replenish-Rate)');
/** The docs' "steady rate": a bucket of one second's refill. */
const steadyGateway: Dialect = {
  ...gateway,
  name: 'Spring Cloud Gateway, steady (capacity 10)',
  model: () => wholeSecondBucket(10, 10),
  admitted: (a, wall) => ({ ...gateway.admitted(a, wall), 'X-RateLimit-Burst-Capacity': '10' }),
  refused: (a, wall) => ({
    headers: { ...gateway.admitted(a, wall), 'X-RateLimit-Burst-Capacity': '10' },
  }),
};

/** Each dialect, with the limit it publishes (10 per second, HubSpot's as 20 per 2 s). */
const SERVERS: ReadonlyArray<readonly [Dialect, { limit: number; windowMs: number }]> = [
  [named('Envoy (draft-03 x-ratelimit)'), { limit: 10, windowMs: 1000 }],
  [gateway, { limit: 10, windowMs: 1000 }],
  [steadyGateway, { limit: 10, windowMs: 1000 }],
  [named('HubSpot (Interval-Milliseconds)'), { limit: 20, windowMs: 2000 }],
];

const CLIENTS: Record<string, (published: PacedFetchOptions['limits']) => object> = {
  'published limit': (published) => ({ limits: published }),
  '10x generous': () => ({ limits: { limit: RATE * 10, windowMs: 1000 } }),
  'zero configuration': () => ({}),
};

async function runOne(
  dialect: Dialect,
  client: object,
  delayMs: readonly [number, number],
  seed: number,
) {
  const clock = createManualClock();
  const mock = dialectServer(dialect);
  server.use(mock.handler);
  const net = network({ clock, delayMs, seed });
  const store = PACERS > 1 ? { store: fakeStore({ now: clock.now }).store } : {};
  const pacedFetches = Array.from({ length: PACERS }, (_, i) =>
    createPacedFetch({
      ...client,
      ...store,
      fetch: net.fetch,
      clock,
      wallClock: () => EPOCH + clock.now(),
      retry: { random: seededRandom(seed * 10 + i) },
    } as PacedFetchOptions),
  );
  const ended: number[] = [];
  const calls = Array.from({ length: CALLS }, (_, i) =>
    (pacedFetches[i % PACERS] as (typeof pacedFetches)[0])(`${ORIGIN}/items/${i}`).then(
      (response) => {
        ended.push(clock.now());
        return response;
      },
    ),
  );
  const statuses = await settleAll(clock, net, calls, 1_200_000);
  server.resetHandlers();
  if (process.env['REFUSED_AT']) {
    console.log(dialect.name, JSON.stringify(mock.refusedAt.map(Math.round)));
  }
  const last = Math.max(...ended);
  return {
    refusals: mock.refusals(),
    late: mock.refusedAt.filter((at) => at > SETTLED_MS).length,
    failed: statuses.filter((status) => status !== 200).length,
    lastMs: last,
    rate: ended.filter((at) => at > SETTLED_MS).length / ((last - SETTLED_MS) / 1000) / RATE,
  };
}

const span = (values: number[], digits = 0) => {
  const [low, high] = [Math.min(...values), Math.max(...values)].map((v) => v.toFixed(digits));
  return low === high ? low : `${low}-${high}`;
};

it('prints what each client earns from the gateways and APIs whose headers it reads', async () => {
  const only = process.env['DIALECTS_ONLY'] ?? '';
  const lines = [
    '| server | client | delay | refused | after 2 s | failed | last call | rate after 2 s |',
    '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const [dialect, published] of SERVERS) {
    if (!dialect.name.includes(only)) continue;
    for (const [name, make] of Object.entries(CLIENTS)) {
      // A store paces `limits` (a paced fetch on one takes no zero configuration).
      if (PACERS > 1 && name === 'zero configuration') continue;
      for (const delayMs of DELAYS) {
        const runs = [];
        for (const seed of SEEDS) runs.push(await runOne(dialect, make(published), delayMs, seed));
        const delay = delayMs[1] === 0 ? 'none' : `${delayMs[0]}-${delayMs[1]} ms`;
        lines.push(
          `| ${dialect.name} | ${name} | ${delay} | ${span(runs.map((r) => r.refusals))} | ${span(runs.map((r) => r.late))} | ${span(runs.map((r) => r.failed))} | ${span(
            runs.map((r) => r.lastMs / 1000),
            1,
          )} s | ${span(
            runs.map((r) => r.rate),
            2,
          )}x |`,
        );
      }
    }
  }
  console.log(lines.join('\n'));
});
