/**
 * What an answer means for an entry, and how long an entry that got no definitive answer
 * waits. Pure: no clock, no storage.
 */

import { backoffMs as exponential } from '../core/backoff.js';

/** `sent`: it leaves. `rejected`: it leaves, reported. `retry`: it stays and waits. */
export type Verdict = 'sent' | 'rejected' | 'retry';

/**
 * 2xx is sent. An opaque response (`status` 0, `mode: 'no-cors'`) counts as sent too: the browser
 * hides the status, and the request did reach the server. 408, 429 and 5xx say "not now": the
 * entry stays. Every other status (4xx, a 3xx that fetch did not follow) is definitive: sending
 * the same bytes again would get the same answer.
 */
export function verdictOf(status: number): Verdict {
  if (status === 0 || (status >= 200 && status < 300)) return 'sent';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  return 'rejected';
}

export interface Backoff {
  readonly retryDelayMs: number;
  readonly maxRetryDelayMs: number;
  readonly random: () => number;
}

/**
 * The wait after the `attempts`-th failed attempt (1, 2, ...): `retryDelayMs` doubling per
 * attempt up to `maxRetryDelayMs`, with equal jitter (core/backoff.ts).
 */
export function backoffMs(attempts: number, backoff: Backoff): number {
  return exponential(attempts - 1, backoff.retryDelayMs, backoff.maxRetryDelayMs, backoff.random);
}
