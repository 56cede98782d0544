import { it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.mjs';
import { createPacedFetch, type PacedFetchOptions } from '../../src/http/paced-fetch.js';
import { slidingLog } from '../../src/index.js';
import { servedThroughNetwork, settleAll } from '../support/counting-servers.js';
import { server } from '../support/msw.js';
import {
  BARE_SERVERS,
  CALLS,
  DELAYS,
  RATE,
  row,
  type Scheme,
  SEEDS,
  summarize,
} from './bare-servers.js';

// Servers that refuse with a bare 429 (no header at all), as nginx `limit_req` and HAProxy's
// stick tables do, against the clients that do not know the limit (10x generous, none), on the
// manual clock: what the AIMD of issue 12 earns. The real servers are in `npm run bench:servers`.
//
//   npm run measure:bare
//   ONLY=haproxy CLIENT=zero DELAY=60 SEEDS=7 npm run measure:bare   (one server, client, delay, seed)

const ORIGIN = 'https://api.test';

const CLIENTS: Record<string, Partial<PacedFetchOptions>> = {
  'published, sliding-log': { limits: { limit: RATE, windowMs: 1_000, algorithm: slidingLog } },
  'published (default)': { limits: { limit: RATE, windowMs: 1_000 } },
  '10x generous': { limits: { limit: RATE * 10, windowMs: 1_000 } },
  'zero configuration': {},
};
async function runOne(
  scheme: Scheme,
  delayMs: readonly [number, number],
  client: Partial<PacedFetchOptions>,
  seed: number,
) {
  const { clock, backend, net } = servedThroughNetwork({
    ...scheme,
    limit: RATE,
    windowMs: 1_000,
    dialect: 'none',
    delayMs,
    seed,
  });
  const pacedFetch = createPacedFetch({
    ...client,
    fetch: net.fetch,
    clock,
    retry: { random: seededRandom(seed) },
  } as PacedFetchOptions);
  const statuses = await settleAll(
    clock,
    net,
    Array.from({ length: CALLS }, (_, i) => pacedFetch(`${ORIGIN}/n/${i}`)),
    1_200_000,
  );
  server.resetHandlers();
  return summarize(backend.hits, statuses);
}

it('prints what clients that do not know the limit earn from servers that say nothing', async () => {
  const lines = [
    '| server | delay | client | refused | after 2 s | failed | x ideal | throughput after 2 s |',
    '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const [name, { scheme, idealMs }] of Object.entries(BARE_SERVERS)) {
    if (process.env['ONLY'] && !name.includes(process.env['ONLY'])) continue;
    for (const delayMs of DELAYS) {
      for (const [clientName, client] of Object.entries(CLIENTS)) {
        if (process.env['CLIENT'] && !clientName.includes(process.env['CLIENT'])) continue;
        // nginx's published limit has a burst, which these clients do not say.
        if (clientName.startsWith('published') && scheme.scheme === 'gcra') continue;
        if (process.env['DELAY'] && String(delayMs[1]) !== process.env['DELAY']) continue;
        const runs = [];
        for (const seed of SEEDS) runs.push(await runOne(scheme, delayMs, client, seed));
        lines.push(row([name, `${delayMs[0]}-${delayMs[1]} ms`, clientName], runs, idealMs));
      }
    }
  }
  console.log(lines.join('\n'));
});
