import type { CountingServerOptions, ServerHit } from '../support/counting-servers.js';

// What `measure:bare` and `measure:store` share: simulated servers of RATE per second that
// answer a bare 429 (nginx `limit_req`, HAProxy's stick tables), CALLS handed over at once, and
// how a run is summed up and printed.

export const CALLS = 300;
export const RATE = 60;

export type Scheme = Pick<
  CountingServerOptions,
  'scheme' | 'burst' | 'countsRefused' | 'countsInFloats'
>;

/** Each server with the fastest schedule it allows for CALLS at once (ms to the last arrival). */
export const BARE_SERVERS: Record<string, { scheme: Scheme; idealMs: number }> = {
  'nginx-like gcra, burst 15': {
    scheme: { scheme: 'gcra', burst: 16 },
    idealMs: ((CALLS - 16) * 1_000) / RATE,
  },
  // nginx's docs' example, `burst=5 nodelay`: a burst small against the rate.
  'nginx-like gcra, burst 5': {
    scheme: { scheme: 'gcra', burst: 6 },
    idealMs: ((CALLS - 6) * 1_000) / RATE,
  },
  // redis-gcra's Lua, as the real-server bench runs it (`gcra-burst5`): its float counts.
  'redis-gcra-like gcra, burst 5': {
    scheme: { scheme: 'gcra', burst: 5, countsInFloats: true },
    idealMs: ((CALLS - 5) * 1_000) / RATE,
  },
  'haproxy-like sliding window, refusals counted': {
    scheme: { scheme: 'sliding-window', countsRefused: true },
    idealMs: ((CALLS - RATE) * 1_000) / RATE,
  },
  'fixed window': {
    scheme: { scheme: 'fixed-window' },
    idealMs: (Math.ceil(CALLS / RATE) - 1) * 1_000,
  },
  // rolling-rate-limiter's: every attempt logged, so a client refused stays refused until it
  // slows down.
  'rolling-like sliding log, refusals counted': {
    scheme: { scheme: 'sliding-log', countsRefused: true },
    idealMs: (Math.ceil(CALLS / RATE) - 1) * 1_000,
  },
  'sliding log': {
    scheme: { scheme: 'sliding-log' },
    idealMs: (Math.ceil(CALLS / RATE) - 1) * 1_000,
  },
};

/** Each way, ms: straight to the server and through jitter; `DELAYS=1-4,5-60` for others. */
export const DELAYS: readonly (readonly [number, number])[] = process.env['DELAYS']
  ? process.env['DELAYS'].split(',').map((range) => {
      const [low = 0, high = low] = range.split('-').map(Number);
      return [low, high] as const;
    })
  : [
      [0, 0],
      [5, 60],
    ];

export const SEEDS = (process.env['SEEDS'] ?? '7,8,9').split(',').map(Number);

/** A run as the tables give it, from what the server saw and each call's final status. */
export function summarize(hits: readonly ServerHit[], statuses: readonly (number | undefined)[]) {
  const admitted = hits.filter((hit) => hit.status === 200).map((hit) => hit.at);
  const refusedAt = hits.filter((hit) => hit.status !== 200).map((hit) => hit.at);
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

type Run = ReturnType<typeof summarize>;

/** `low-high` of `values` (one value when they agree). */
function range(values: readonly number[], digits = 0, unit = ''): string {
  const low = Math.min(...values).toFixed(digits);
  const high = Math.max(...values).toFixed(digits);
  return low === high ? `${low}${unit}` : `${low}-${high}${unit}`;
}

/** A table row: `leading` cells, then the runs' refusals, late ones, failures and times. */
export function row(leading: readonly string[], runs: readonly Run[], idealMs: number): string {
  const cells = [
    ...leading,
    range(runs.map((run) => run.refusals)),
    range(runs.map((run) => run.late)),
    range(runs.map((run) => run.failed)),
    range(
      runs.map((run) => run.end / idealMs),
      2,
      'x',
    ),
    range(
      runs.map((run) => run.throughput),
      2,
      'x',
    ),
  ];
  return `| ${cells.join(' | ')} |`;
}
