import { it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.mjs';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { createManualClock } from '../../src/testing/index.js';
import {
  type CountingServerOptions,
  countingServer,
  driveNetwork,
  network,
  trackCalls,
} from '../support/counting-servers.js';
import { fakeStore } from '../support/fake-store.js';
import { server } from '../support/msw.js';

// Three paced fetches, 10x too generous, sharing one store (the fake store: the real
// shared-bucket arithmetic) against a simulated server that answers a bare 429: what the
// processes of one app behind one API key earn. `npm run bench:servers:store` runs the same
// against real nginx and HAProxy; this twin on the manual clock gives the same picture (nginx
// direct: 16 refusals, 12-13 after two windows, 0.35-0.38x of its rate here; 15, 9, 0.38x there)
// in seconds, for trying changes.
//
//   npm run measure:store
//   ONLY=gcra DELAY=60 SEEDS=7 TRACE=1 npm run measure:store   (one row, every send printed)
//   PACERS=1 NOSTORE=1 npm run measure:store                    (one paced fetch, no store)

const CALLS = 300;
const RATE = 60;
const PACERS = Number(process.env['PACERS'] ?? 3);
const ORIGIN = 'https://api.test';

type Scheme = Pick<CountingServerOptions, 'scheme' | 'burst' | 'countsRefused'>;
const SERVERS: Record<string, { scheme: Scheme; idealMs: number }> = {
  'nginx-like gcra, burst 15': {
    scheme: { scheme: 'gcra', burst: 16 },
    idealMs: ((CALLS - 16) * 1_000) / RATE,
  },
  'haproxy-like sliding window, refusals counted': {
    scheme: { scheme: 'sliding-window', countsRefused: true },
    idealMs: ((CALLS - RATE) * 1_000) / RATE,
  },
  'fixed window': {
    scheme: { scheme: 'fixed-window' },
    idealMs: (Math.ceil(CALLS / RATE) - 1) * 1_000,
  },
};
const DELAYS: readonly (readonly [number, number])[] = [
  [0, 0],
  [5, 60],
];
const SEEDS = (process.env['SEEDS'] ?? '7,8,9').split(',').map(Number);

async function runOne(scheme: Scheme, delayMs: readonly [number, number], seed: number) {
  const clock = createManualClock();
  const backend = countingServer({
    clock,
    ...scheme,
    limit: RATE,
    windowMs: 1_000,
    dialect: 'none',
  });
  server.use(backend.handler);
  const net = network({ clock, delayMs, seed });
  const fake = fakeStore({ now: clock.now });
  const trace: string[] = [];
  const clients = Array.from({ length: PACERS }, (_, i) =>
    createPacedFetch({
      limits: { limit: RATE * 10, windowMs: 1_000 },
      ...(process.env['NOSTORE'] ? {} : { store: fake.store }),
      fetch: async (request: Request) => {
        const sent = clock.now();
        const response = await net.fetch(request);
        if (process.env['TRACE']) {
          const learned = clients[i]?.pacer.inspect(ORIGIN).learned;
          trace.push(
            `${sent.toFixed(0).padStart(6)} p${i} ${response.status} ${learned ? `${learned.source} ${((1000 * learned.limit) / learned.windowMs).toFixed(1)}/s` : '-'}`,
          );
        }
        return response;
      },
      clock,
      retry: { random: seededRandom(seed * 10 + i) },
    }),
  );
  const { statuses, done, all } = trackCalls(
    Array.from({ length: CALLS }, (_, i) =>
      (clients[i % PACERS] as (typeof clients)[0])(`${ORIGIN}/n/${i}`),
    ),
  );
  await driveNetwork(clock, net, done, 1_200_000);
  await all;
  server.resetHandlers();
  if (process.env['TRACE']) console.log(trace.join('\n'));
  const admitted = backend.hits.filter((hit) => hit.status === 200).map((hit) => hit.at);
  const refusedAt = backend.hits.filter((hit) => hit.status !== 200).map((hit) => hit.at);
  const end = Math.max(...admitted);
  const after = admitted.filter((at) => at > 2_000).length;
  return {
    refusals: refusedAt.length,
    late: refusedAt.filter((at) => at > 2_000).length,
    failed: statuses.filter((status) => status !== 200).length,
    end,
    throughput: end > 2_000 ? after / ((end - 2_000) / 1_000) / RATE : Number.NaN,
  };
}

it('prints what three generous pacers on one store earn from servers that say nothing', async () => {
  const lines = [
    '| server | delay | refused | after 2 s | failed | x ideal | rate after 2 s |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const [name, { scheme, idealMs }] of Object.entries(SERVERS)) {
    if (process.env['ONLY'] && !name.includes(process.env['ONLY'])) continue;
    for (const delayMs of DELAYS) {
      if (process.env['DELAY'] && String(delayMs[1]) !== process.env['DELAY']) continue;
      const runs = [];
      for (const seed of SEEDS) runs.push(await runOne(scheme, delayMs, seed));
      const range = (values: number[], digits = 0, unit = '') => {
        const low = Math.min(...values).toFixed(digits);
        const high = Math.max(...values).toFixed(digits);
        return low === high ? `${low}${unit}` : `${low}-${high}${unit}`;
      };
      lines.push(
        `| ${name} | ${delayMs[0]}-${delayMs[1]} ms | ${range(runs.map((r) => r.refusals))} | ${range(runs.map((r) => r.late))} | ${range(runs.map((r) => r.failed))} | ${range(
          runs.map((r) => r.end / idealMs),
          2,
          'x',
        )} | ${range(
          runs.map((r) => r.throughput),
          2,
          'x',
        )} |`,
      );
    }
  }
  console.log(lines.join('\n'));
});
