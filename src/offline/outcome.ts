/**
 * What an answer means for an entry, and how long an entry that got no definitive answer
 * waits. Pure: no clock, no storage.
 */

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
 * attempt, capped at `maxRetryDelayMs`, with equal jitter (half of it fixed, half random) so
 * that many clients that failed together do not come back together, and none comes back at once.
 */
export function backoffMs(attempts: number, backoff: Backoff): number {
  const exponent = Math.min(Math.max(attempts - 1, 0), 52);
  const ceiling = Math.min(backoff.maxRetryDelayMs, backoff.retryDelayMs * 2 ** exponent);
  return Math.ceil(ceiling / 2 + (backoff.random() * ceiling) / 2);
}
