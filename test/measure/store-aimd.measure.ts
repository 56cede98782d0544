import { it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.mjs';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import {
  type CountingDialect,
  servedThroughNetwork,
  settleAll,
} from '../support/counting-servers.js';
import { fakeStore } from '../support/fake-store.js';
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

// Three paced fetches, 10x too generous, sharing one store (the fake store: the real
// shared-bucket arithmetic) against a simulated server that answers a bare 429: what the
// processes of one app behind one API key earn. `npm run bench:servers:store` runs the same
// against real nginx and HAProxy; this twin on the manual clock gives the same picture in
// seconds, for trying changes (nginx direct: 2 refusals, 1 after two windows, 1.06x of its rate
// after them here, 3, 1, 0.99x there; before the store learned one rate for all, 16, 12-13,
// 0.35-0.38x here and 15, 9, 0.38x there).
//
//   npm run measure:store
//   ONLY=gcra DELAY=60 SEEDS=7 TRACE=1 npm run measure:store   (one row, every send printed)
//   PACERS=1 NOSTORE=1 npm run measure:store                    (one paced fetch, no store)
//   DIALECT=retry-after npm run measure:store     (each refusal says `Retry-After`, nothing else)
//   GENEROUS=1 npm run measure:store              (the clients told the published limit)

const PACERS = Number(process.env['PACERS'] ?? 3);
/** The clients' limit, in multiples of the published rate (1: told the published limit). */
const GENEROUS = Number(process.env['GENEROUS'] ?? 10);
const ORIGIN = 'https://api.test';
const DIALECT = (process.env['DIALECT'] ?? 'none') as CountingDialect;
// The bare-429 servers but the sliding log, which `measure:bare` shows to be no harder.
const SERVERS = Object.entries(BARE_SERVERS).filter(([name]) => name !== 'sliding log');

async function runOne(scheme: Scheme, delayMs: readonly [number, number], seed: number) {
  const { clock, backend, net } = servedThroughNetwork({
    ...scheme,
    limit: RATE,
    windowMs: 1_000,
    dialect: DIALECT,
    delayMs,
    seed,
  });
  const fake = fakeStore({ now: clock.now });
  const trace: string[] = [];
  const clients = Array.from({ length: PACERS }, (_, i) =>
    createPacedFetch({
      limits: { limit: RATE * GENEROUS, windowMs: 1_000 },
      ...(process.env['NOSTORE'] ? {} : { store: fake.store }),
      fetch: async (request: Request) => {
        const sent = clock.now();
        const response = await net.fetch(request);
        if (process.env['TRACE']) {
          const seen = clients[i]?.pacer.inspect(ORIGIN);
          const learned = seen?.learned;
          const extra = seen
            ? ` lv=${seen.level.toFixed(2)} next=${seen.nextStartAt === undefined ? '-' : (seen.nextStartAt - clock.now()).toFixed(0)} blk=${seen.blockedUntil === undefined ? '-' : (seen.blockedUntil - clock.now()).toFixed(0)}`
            : '';
          trace.push(
            `${sent.toFixed(0).padStart(6)} ${clock.now().toFixed(0).padStart(6)} p${i} ${response.status} r=${response.headers.get('x-ratelimit-remaining')} ${learned ? `${learned.source} ${learned.limit}/${learned.windowMs.toFixed(0)}` : '-'}${extra}`,
          );
        }
        return response;
      },
      clock,
      // Unix resets (`X-RateLimit-Reset: 1700000001`) are read against the server's wall clock.
      wallClock: backend.wallClock,
      retry: { random: seededRandom(seed * 10 + i) },
    }),
  );
  const statuses = await settleAll(
    clock,
    net,
    Array.from({ length: CALLS }, (_, i) =>
      (clients[i % PACERS] as (typeof clients)[0])(`${ORIGIN}/n/${i}`),
    ),
    1_200_000,
  );
  server.resetHandlers();
  if (process.env['TRACE']) console.log(trace.join('\n'));
  return summarize(backend.hits, statuses);
}

it('prints what three generous pacers on one store earn from servers that say nothing', async () => {
  const lines = [
    '| server | delay | refused | after 2 s | failed | x ideal | rate after 2 s |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const [name, { scheme, idealMs }] of SERVERS) {
    if (process.env['ONLY'] && !name.includes(process.env['ONLY'])) continue;
    for (const delayMs of DELAYS) {
      if (process.env['DELAY'] && String(delayMs[1]) !== process.env['DELAY']) continue;
      const runs = [];
      for (const seed of SEEDS) runs.push(await runOne(scheme, delayMs, seed));
      lines.push(row([name, `${delayMs[0]}-${delayMs[1]} ms`], runs, idealMs));
    }
  }
  console.log(lines.join('\n'));
});
