import { it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.mjs';
import { createPacedFetch, type PacedFetchOptions } from '../../src/http/paced-fetch.js';
import { slidingLog } from '../../src/index.js';
import { createManualClock } from '../../src/testing/index.js';
import {
  type CountingServerOptions,
  countingServer,
  driveNetwork,
  network,
  trackCalls,
} from '../support/counting-servers.js';
import { server } from '../support/msw.js';

// Servers that refuse with a bare 429 (no header at all), as nginx `limit_req` and HAProxy's
// stick tables do, against the clients that do not know the limit (10x generous, none), on the
// manual clock: what the AIMD of issue 12 earns. The real servers are in `npm run bench:servers`.
//
//   npm run measure:bare
//   ONLY=haproxy CLIENT=zero DELAY=60 SEEDS=7 npm run measure:bare   (one server, client, delay, seed)

const CALLS = 300;
const RATE = 60;
const ORIGIN = 'https://api.test';

type Scheme = Pick<CountingServerOptions, 'scheme' | 'burst' | 'countsRefused'>;
/** Each server with the fastest schedule it allows for CALLS at once (ms to the last arrival). */
const SERVERS: Record<string, { scheme: Scheme; idealMs: number }> = {
  'nginx-like gcra, burst 15': {
    scheme: { scheme: 'gcra', burst: 16 },
    idealMs: ((CALLS - 16) * 1_000) / RATE,
  },
  'haproxy-like sliding window, refusals counted': {
    scheme: { scheme: 'sliding-window', countsRefused: true },
    idealMs: ((CALLS - RATE) * 1_000) / RATE,
  },
  'fixed window, refusals counted': {
    scheme: { scheme: 'fixed-window' },
    idealMs: (Math.ceil(CALLS / RATE) - 1) * 1_000,
  },
  'sliding log': {
    scheme: { scheme: 'sliding-log' },
    idealMs: (Math.ceil(CALLS / RATE) - 1) * 1_000,
  },
};
const CLIENTS: Record<string, Partial<PacedFetchOptions>> = {
  'published, sliding-log': { limits: { limit: RATE, windowMs: 1_000, algorithm: slidingLog } },
  'published (default)': { limits: { limit: RATE, windowMs: 1_000 } },
  '10x generous': { limits: { limit: RATE * 10, windowMs: 1_000 } },
  'zero configuration': {},
};
const DELAYS: readonly (readonly [number, number])[] = [
  [0, 0],
  [5, 60],
];

const SEEDS = (process.env['SEEDS'] ?? '7,8,9').split(',').map(Number);

async function runOne(
  scheme: Scheme,
  delayMs: readonly [number, number],
  client: Partial<PacedFetchOptions>,
  seed: number,
) {
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
  const pacedFetch = createPacedFetch({
    ...client,
    fetch: net.fetch,
    clock,
    retry: { random: seededRandom(seed) },
  } as PacedFetchOptions);
  const { statuses, done, all } = trackCalls(
    Array.from({ length: CALLS }, (_, i) => pacedFetch(`${ORIGIN}/n/${i}`)),
  );
  await driveNetwork(clock, net, done, 1_200_000);
  await all;
  server.resetHandlers();
  const admitted = backend.hits.filter((hit) => hit.status === 200).map((hit) => hit.at);
  const refusedAt = backend.hits.filter((hit) => hit.status !== 200).map((hit) => hit.at);
  const end = Math.max(...admitted);
  const after = admitted.filter((at) => at > 2_000).length;
  return {
    refusals: refusedAt.length,
    late: refusedAt.filter((at) => at > 2_000).length,
    failed: statuses.filter((status) => status !== 200).length,
    end,
    // Admitted per second after the first two windows, as a share of the published rate.
    throughput: end > 2_000 ? after / ((end - 2_000) / 1_000) / RATE : Number.NaN,
  };
}

it('prints what clients that do not know the limit earn from servers that say nothing', async () => {
  const lines = [
    '| server | delay | client | refused | after 2 s | failed | x ideal | throughput after 2 s |',
    '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const [name, { scheme, idealMs }] of Object.entries(SERVERS)) {
    if (process.env['ONLY'] && !name.includes(process.env['ONLY'])) continue;
    for (const delayMs of DELAYS) {
      for (const [clientName, client] of Object.entries(CLIENTS)) {
        if (process.env['CLIENT'] && !clientName.includes(process.env['CLIENT'])) continue;
        // nginx's published limit has a burst, which these clients do not say.
        if (clientName.startsWith('published') && scheme.scheme === 'gcra') continue;
        if (process.env['DELAY'] && String(delayMs[1]) !== process.env['DELAY']) continue;
        const runs = [];
        for (const seed of SEEDS) runs.push(await runOne(scheme, delayMs, client, seed));
        const range = (values: number[], digits = 0, unit = '') => {
          const low = Math.min(...values).toFixed(digits);
          const high = Math.max(...values).toFixed(digits);
          return low === high ? `${low}${unit}` : `${low}-${high}${unit}`;
        };
        lines.push(
          `| ${name} | ${delayMs[0]}-${delayMs[1]} ms | ${clientName} | ${range(runs.map((r) => r.refusals))} | ${range(runs.map((r) => r.late))} | ${range(runs.map((r) => r.failed))} | ${range(
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
  }
  console.log(lines.join('\n'));
});
