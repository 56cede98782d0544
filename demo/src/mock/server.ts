import { createStore } from '../lib/store';
import { COUNTERS, type Counter, type Counting, type ServerLimits } from './counting';
import { type Dialect, headersOf } from './dialects';

export type { Counting, ServerLimits } from './counting';
export type { Dialect } from './dialects';

/**
 * The demo's backend, run by an msw Service Worker in this tab (see `handlers.ts`):
 * `GET /api/:lane/items/:id`.
 * Each lane (`paced`, `unpaced`) has its own counter with the same limits, so the paced client
 * and plain fetch face identical servers. The visitor picks how it counts (`counting.ts`) and
 * what it says in its headers (`dialects.ts`); over the limit it answers 429.
 */
export type Lane = 'paced' | 'unpaced';

export const LANES: readonly Lane[] = ['paced', 'unpaced'];

/** One request as the server saw it. `at` is `performance.now()` on arrival. */
export interface Arrival {
  readonly at: number;
  readonly lane: Lane;
  readonly burst: string;
  readonly status: 200 | 429;
}

export interface LaneCounts {
  readonly sent: number;
  readonly ok: number;
  readonly refused: number;
}

/** What the visitor picked: how the server counts, what it says, and its limit. */
export interface ServerConfig {
  readonly counting: Counting;
  readonly dialect: Dialect;
  readonly limits: ServerLimits;
}

export interface ServerState {
  readonly config: ServerConfig;
  /** Since the page loaded, per lane. */
  readonly totals: Readonly<Record<Lane, LaneCounts>>;
  /** Per burst id, per lane (the last few bursts). */
  readonly bursts: Readonly<Record<string, Readonly<Record<Lane, LaneCounts>>>>;
  /** Arrivals of the last minute, oldest first (for the timeline). */
  readonly arrivals: readonly Arrival[];
}

const ZERO: LaneCounts = { sent: 0, ok: 0, refused: 0 };
const KEEP_BURSTS = 8;
const KEEP_MS = 60_000;

export const DEFAULT_SERVER: ServerConfig = {
  counting: 'sliding-log',
  dialect: 'ietf',
  limits: { rate: 10, burst: 5 },
};

export const serverState = createStore<ServerState>({
  config: DEFAULT_SERVER,
  totals: { paced: ZERO, unpaced: ZERO },
  bursts: {},
  arrivals: [],
});

function countersOf({ counting, limits }: ServerConfig): Record<Lane, Counter> {
  return { paced: COUNTERS[counting](limits), unpaced: COUNTERS[counting](limits) };
}

let counters = countersOf(DEFAULT_SERVER);

/** Sets how both lanes count, what they say and their limit; the counts start afresh. */
export function configureServer(config: ServerConfig): void {
  counters = countersOf(config);
  serverState.set((state) => ({ ...state, config }));
}

function add(counts: LaneCounts | undefined, ok: boolean): LaneCounts {
  const { sent, ok: oks, refused } = counts ?? ZERO;
  return { sent: sent + 1, ok: oks + (ok ? 1 : 0), refused: refused + (ok ? 0 : 1) };
}

function record(arrival: Arrival): void {
  serverState.set((state) => {
    const ok = arrival.status === 200;
    const burst = state.bursts[arrival.burst] ?? { paced: ZERO, unpaced: ZERO };
    const bursts = {
      ...state.bursts,
      [arrival.burst]: { ...burst, [arrival.lane]: add(burst[arrival.lane], ok) },
    };
    const ids = Object.keys(bursts);
    for (const stale of ids.slice(0, Math.max(0, ids.length - KEEP_BURSTS))) delete bursts[stale];
    const since = arrival.at - KEEP_MS;
    const first = state.arrivals.findIndex((a) => a.at >= since);
    return {
      ...state,
      totals: { ...state.totals, [arrival.lane]: add(state.totals[arrival.lane], ok) },
      bursts,
      arrivals: [...(first <= 0 ? state.arrivals : state.arrivals.slice(first)), arrival],
    };
  });
}

/** Request ids are `<burst>-<n>`: the server counts per burst for the comparison. */
function burstOf(id: string): string {
  return id.slice(0, id.lastIndexOf('-'));
}

/** The server's answer to one request, decided the moment it arrives. */
export interface Answer {
  readonly status: 200 | 429;
  readonly headers: Readonly<Record<string, string>>;
  readonly retryAfterS: number;
}

/** `at`: when the request was sent (see `network.ts`), in `performance.now()` ms. */
export function answer(lane: Lane, id: string, at: number): Answer {
  const count = counters[lane].take(at);
  const { dialect, limits } = serverState.get().config;
  const status = count.allowed ? 200 : 429;
  record({ at, lane, burst: burstOf(id), status });
  const headers = headersOf(dialect, count, Math.floor(limits.rate), performance.timeOrigin + at);
  return { status, headers, retryAfterS: Math.max(1, Math.ceil(count.nextMs / 1000)) };
}
