import { it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.mjs';
import { createPacedFetch, type PacedFetchOptions } from '../../src/http/paced-fetch.js';
import { tokenBucket } from '../../src/index.js';
import {
  COUNTING_DIALECTS,
  COUNTING_SCHEMES,
  type CountingDialect,
  type CountingScheme,
  servedThroughNetwork,
  settleAll,
} from '../support/counting-servers.js';
import { server } from '../support/msw.js';

// What a paced client earns from servers that count at arrival time, with and without network
// jitter between send and arrival, on the manual clock (deterministic: seeded delays). The
// baseline of issue 12 ("never a lost call, never a wall of 429s"), next to the real-server
// bench (`npm run bench:servers`), which has real servers but only loopback delays.
//
//   npx vitest run --config test/measure/vitest.config.ts arrivals
//   ARRIVALS_ONLY=fixed-window/x-ratelimit-delta npm run measure:arrivals   (rows whose
//   "scheme/dialect/delay/client" contains it; ARRIVALS_HITS=1 prints each run's server log;
//   ARRIVALS_SEED=3 another draw of the network's delays than the default 7)

const CALLS = 200;
const LIMIT = 20;
const WINDOW_MS = 1_000;
const ORIGIN = 'https://api.test';

const SCHEMES = COUNTING_SCHEMES;
const DIALECTS = COUNTING_DIALECTS;
const DELAYS: readonly (readonly [number, number])[] = [
  [0, 0],
  [5, 60],
];

/** The client configurations of the issue: the published limit, 10x too generous, none. */
const CLIENTS: Record<string, () => Partial<PacedFetchOptions> | undefined> = {
  'published (default)': () => ({ limits: { limit: LIMIT, windowMs: WINDOW_MS } }),
  'published, token-bucket': () => ({
    limits: { limit: LIMIT, windowMs: WINDOW_MS, algorithm: tokenBucket },
  }),
  '10x generous': () => ({ limits: { limit: LIMIT * 10, windowMs: WINDOW_MS } }),
  'zero configuration': () => ({}),
};

interface Row {
  readonly scheme: string;
  readonly dialect: string;
  readonly delay: string;
  readonly client: string;
  readonly refusals: string;
  readonly late: string;
  readonly failed: string;
  readonly makespan: string;
  readonly rate: string;
}

const ONLY = process.env['ARRIVALS_ONLY'] ?? '';
const PRINT_HITS = process.env['ARRIVALS_HITS'] === '1';
/** The network's delays and the backoff's jitter: one seed, the same run every time. */
const SEED = Number(process.env['ARRIVALS_SEED'] ?? 7);

/** The targets look past the server's first two windows: refusals there, and the rate. */
const SETTLED_MS = 2 * WINDOW_MS;

async function runOne(
  scheme: CountingScheme,
  dialect: CountingDialect,
  delayMs: readonly [number, number],
  client: Partial<PacedFetchOptions>,
): Promise<{ refusals: number; late: number; failed: number; makespanMs: number; rate: number }> {
  const { clock, backend, net } = servedThroughNetwork({
    scheme,
    limit: LIMIT,
    windowMs: WINDOW_MS,
    dialect,
    delayMs,
    seed: SEED,
  });
  const pacedFetch = createPacedFetch({
    ...client,
    fetch: net.fetch,
    clock,
    wallClock: backend.wallClock,
    // Seeded, so that each row is the same run every time (the backoff's jitter).
    retry: { random: seededRandom(SEED) },
  } as PacedFetchOptions);
  const statuses = await settleAll(
    clock,
    net,
    Array.from({ length: CALLS }, (_, i) => pacedFetch(`${ORIGIN}/n/${i}`)),
    1_200_000,
  );
  const admitted = backend.hits.filter((hit) => hit.status === 200).map((hit) => hit.at);
  const makespanMs = Math.max(...admitted);
  if (PRINT_HITS) {
    console.log(backend.hits.map((hit) => `${hit.at.toFixed(1)}:${hit.status}`).join(' '));
  }
  const admittedLate = admitted.filter((at) => at > SETTLED_MS).length;
  server.resetHandlers();
  return {
    refusals: backend.refusals(),
    late: backend.hits.filter((hit) => hit.status !== 200 && hit.at > SETTLED_MS).length,
    failed: statuses.filter((status) => status !== 200).length,
    makespanMs,
    // As the real-server bench counts it: admissions after two windows per second until the
    // last one, against the published rate.
    rate: (admittedLate / (makespanMs - SETTLED_MS)) * (WINDOW_MS / LIMIT),
  };
}

it('prints what each client earns from each counting scheme', async () => {
  // Ideal: LIMIT per window, the first window at 0 (GCRA with burst = limit admits the same).
  const idealMs = (Math.ceil(CALLS / LIMIT) - 1) * WINDOW_MS;
  const rows: Row[] = [];
  for (const scheme of SCHEMES) {
    for (const dialect of DIALECTS) {
      for (const delayMs of DELAYS) {
        for (const [name, make] of Object.entries(CLIENTS)) {
          const delay = delayMs[1] === 0 ? 'none' : `${delayMs[0]}-${delayMs[1]} ms`;
          if (!`${scheme}/${dialect}/${delay}/${name}`.includes(ONLY)) continue;
          let client: Partial<PacedFetchOptions> | undefined;
          try {
            client = make();
            createPacedFetch({ ...client, fetch: async () => new Response() } as PacedFetchOptions);
          } catch {
            client = undefined;
          }
          if (client === undefined) {
            rows.push({
              scheme,
              dialect,
              delay,
              client: name,
              refusals: 'not supported yet',
              late: '-',
              failed: '-',
              makespan: '-',
              rate: '-',
            });
            continue;
          }
          const { refusals, late, failed, makespanMs, rate } = await runOne(
            scheme,
            dialect,
            delayMs,
            client,
          );
          rows.push({
            scheme,
            dialect,
            delay,
            client: name,
            refusals: String(refusals),
            late: String(late),
            failed: String(failed),
            makespan: `${(makespanMs / idealMs).toFixed(2)}x`,
            rate: `${rate.toFixed(2)}x`,
          });
        }
      }
    }
  }
  const columns: (keyof Row)[] = [
    'scheme',
    'dialect',
    'delay',
    'client',
    'refusals',
    'late',
    'failed',
    'makespan',
    'rate',
  ];
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]) =>
    `| ${cells.map((cell, i) => cell.padEnd(widths[i] as number)).join(' | ')} |`;
  console.log(
    [
      `${CALLS} calls at once; server: ${LIMIT} per ${WINDOW_MS} ms counted at arrival; ideal makespan ${idealMs} ms (last admitted arrival); late: refusals after ${SETTLED_MS} ms; rate: admissions after ${SETTLED_MS} ms per second, against the limit`,
      line(columns),
      line(widths.map((w) => '-'.repeat(w))),
      ...rows.map((row) => line(columns.map((c) => row[c]))),
    ].join('\n'),
  );
});
