import { type Algorithm, createPacedFetch, type PacedFetch, type PacerMode } from 'fetch-pacer';
import type { ServerLimits } from '../mock/server';

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
}

export const DEFAULT_SETTINGS: Settings = {
  rate: 10,
  burst: 10,
  algorithm: 'token-bucket',
  mode: 'queue',
  concurrency: Number.POSITIVE_INFINITY,
  stricterServer: false,
};

export const ALGORITHMS: readonly { readonly value: Algorithm; readonly label: string }[] = [
  { value: 'token-bucket', label: 'Token bucket' },
  { value: 'gcra', label: 'GCRA' },
  { value: 'sliding-log', label: 'Sliding log' },
  { value: 'sliding-window', label: 'Sliding window' },
  { value: 'fixed-window', label: 'Fixed window' },
];

/** Only these two take a burst different from the rate. */
export function hasBurst(algorithm: Algorithm): boolean {
  return algorithm === 'token-bucket' || algorithm === 'gcra';
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

/** The server enforces what the client assumes, or half of it when stricter. */
export function serverLimitsOf(settings: Settings): ServerLimits {
  const capacity = capacityOf(settings);
  if (!settings.stricterServer) return { rate: settings.rate, burst: capacity };
  return { rate: Math.max(1, settings.rate / 2), burst: Math.max(1, Math.floor(capacity / 2)) };
}

/** The key the paced fetch uses for the demo's API: its origin. */
export const API_KEY = globalThis.location?.origin ?? 'http://localhost';
