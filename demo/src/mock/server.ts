import { createStore } from '../lib/store';
import { ServerBucket } from './server-bucket';

/**
 * The demo's backend, run by an msw Service Worker in this tab (see `handlers.ts`):
 * `GET /api/:lane/items/:id`.
 * Each lane (`paced`, `unpaced`) has its own bucket with the same limits, so the paced client
 * and plain fetch face identical servers. Over the limit it answers 429 with `Retry-After` and
 * the IETF `RateLimit` / `RateLimit-Policy` headers, as a well-behaved API does.
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

export interface ServerLimits {
  readonly rate: number;
  readonly burst: number;
}

export interface ServerState {
  readonly limits: ServerLimits;
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

export const serverState = createStore<ServerState>({
  limits: { rate: 10, burst: 10 },
  totals: { paced: ZERO, unpaced: ZERO },
  bursts: {},
  arrivals: [],
});

const buckets: Record<Lane, ServerBucket> = {
  paced: new ServerBucket(10, 10, 0),
  unpaced: new ServerBucket(10, 10, 0),
};

/** Sets the server's limit for both lanes. */
export function configureServer(limits: ServerLimits): void {
  const now = performance.now();
  for (const lane of LANES) buckets[lane].configure(limits.rate, limits.burst, now);
  serverState.set((state) => ({ ...state, limits }));
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
  const decision = buckets[lane].take(at);
  const { rate, burst } = serverState.get().limits;
  const status = decision.allowed ? 200 : 429;
  record({ at, lane, burst: burstOf(id), status });
  const headers: Record<string, string> = {
    'ratelimit-policy': `"api";q=${burst};w=${Math.max(1, Math.round(burst / rate))}`,
    ratelimit: `"api";r=${decision.remaining}${decision.remaining > 0 ? `;t=${decision.resetS}` : ''}`,
  };
  // A 429 says when to come back, in both headers. An accepted request that took the last
  // token says only "none left": the bucket refills continuously, so there is no whole second
  // to wait for, and the pacer's own schedule decides when the next request may go.
  if (!decision.allowed) headers['ratelimit'] = `"api";r=0;t=${decision.retryAfterS}`;
  if (!decision.allowed) headers['retry-after'] = String(decision.retryAfterS);
  return { status, headers, retryAfterS: decision.retryAfterS };
}
