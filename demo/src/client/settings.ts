import {
  type Algorithm,
  createPacedFetch,
  fixedWindow,
  gcra,
  type PacedFetch,
  type PacerMode,
  slidingLog,
  slidingWindow,
  tokenBucket,
} from 'fetch-pacer';
import type { Counting, Dialect, ServerConfig } from '../mock/server';

/** What the controls set. */
export interface Settings {
  /** Client: permits per second. */
  readonly rate: number;
  /** Client: most permits at once (token bucket and GCRA only). */
  readonly burst: number;
  readonly algorithm: Algorithm;
  readonly mode: PacerMode;
  /** Most requests in flight at once; `Infinity` for no bound. */
  readonly concurrency: number;
  /** The server allows half of what the client thinks. */
  readonly stricterServer: boolean;
  /** How the mock server counts. */
  readonly counting: Counting;
  /** What the mock server says in its headers. */
  readonly dialect: Dialect;
}

export const DEFAULT_SETTINGS: Settings = {
  rate: 10,
  burst: 10,
  algorithm: tokenBucket,
  mode: 'queue',
  concurrency: Number.POSITIVE_INFINITY,
  stricterServer: false,
  counting: 'sliding-log',
  dialect: 'ietf',
};

/** The algorithms the select offers; an option's value is the algorithm's name. */
export const ALGORITHMS: readonly { readonly algorithm: Algorithm; readonly label: string }[] = [
  { algorithm: tokenBucket, label: 'Token bucket' },
  { algorithm: gcra, label: 'GCRA' },
  { algorithm: slidingLog, label: 'Sliding log' },
  { algorithm: slidingWindow, label: 'Sliding window' },
  { algorithm: fixedWindow, label: 'Fixed window' },
];

/** The algorithm a select option names (the default if none). */
export function algorithmNamed(name: string): Algorithm {
  return ALGORITHMS.find(({ algorithm }) => algorithm.name === name)?.algorithm ?? tokenBucket;
}

/** Only the token bucket and GCRA take a burst different from the rate. */
export function hasBurst(algorithm: Algorithm): boolean {
  return algorithm.burst === 'capacity';
}

/** Permits the client can spend at once. */
export function capacityOf(settings: Settings): number {
  return hasBurst(settings.algorithm) ? settings.burst : settings.rate;
}

/** The paced fetch the controls describe. */
export function createClient(settings: Settings): PacedFetch {
  const { rate, burst, algorithm, mode, concurrency } = settings;
  return createPacedFetch({
    limits: { limit: rate, windowMs: 1000, algorithm, ...(hasBurst(algorithm) ? { burst } : {}) },
    mode,
    concurrency,
  });
}

export const COUNTINGS: readonly { readonly value: Counting; readonly label: string }[] = [
  { value: 'sliding-log', label: 'Sliding log' },
  { value: 'fixed-window', label: 'Fixed window' },
  { value: 'gcra', label: 'Leaky bucket (GCRA)' },
];

export const DIALECTS: readonly { readonly value: Dialect; readonly label: string }[] = [
  { value: 'ietf', label: 'IETF RateLimit' },
  { value: 'x-ratelimit', label: 'X-RateLimit-*' },
  { value: 'retry-after', label: 'Only Retry-After' },
  { value: 'none', label: 'Nothing' },
];

/**
 * The server publishes the client's rate per second (half when stricter), the limit the client
 * was configured to; how it counts it is its own. A leaky bucket lets bursts of half the rate
 * through (nginx `limit_req rate=10r/s burst=5 nodelay`), not the client's full burst.
 */
export function serverConfigOf(settings: Settings): ServerConfig {
  const rate = settings.stricterServer ? Math.max(1, Math.floor(settings.rate / 2)) : settings.rate;
  return {
    counting: settings.counting,
    dialect: settings.dialect,
    limits: { rate, burst: Math.max(1, Math.floor(rate / 2)) },
  };
}

/** The key the paced fetch uses for the demo's API: its origin. */
export const API_KEY = globalThis.location?.origin ?? 'http://localhost';
