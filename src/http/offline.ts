/**
 * The page's word on the network: a call whose send failed while the browser says it is offline
 * waits for the network to come back rather than spend its retries on backoffs that cannot
 * succeed (`createPacedFetch`). TanStack Query pauses its retries the same way while offline
 * (tanstack.com/query/latest/docs/framework/react/guides/network-mode), without a bound; the
 * outbox (`fetch-pacer/offline`) keeps writes across reloads.
 */
import { MAX_DELAY_MS } from '../core/signal.js';
import type { PacerClock } from '../pacer/options.js';

interface OnlineEvents {
  addEventListener(type: 'online', listener: () => void): void;
  removeEventListener(type: 'online', listener: () => void): void;
}

/**
 * Whether the page says it is offline (only `navigator.onLine === false`: Node has none) and
 * will say when it is back (an `online` event to listen to): without one, waiting would only
 * run out its bound.
 */
export function saysOffline(): boolean {
  return (
    (globalThis as { navigator?: { onLine?: boolean } }).navigator?.onLine === false &&
    typeof (globalThis as Partial<OnlineEvents>).addEventListener === 'function'
  );
}

/**
 * Resolves true at the global's `online` event (at once if the page no longer says it is
 * offline), false after `maxMs` on `clock`; rejects with the signal's reason when it aborts.
 * Every listener and the timer are gone once it settles.
 */
export function untilOnline(
  clock: PacerClock,
  maxMs: number,
  signal: AbortSignal,
): Promise<boolean> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    if (!saysOffline()) {
      resolve(true);
      return;
    }
    const host = globalThis as unknown as OnlineEvents;
    const settle = (online: boolean | undefined) => {
      host.removeEventListener('online', onOnline);
      signal.removeEventListener('abort', onAbort);
      clock.clearTimeout(timer);
      if (online === undefined) reject(signal.reason);
      else resolve(online);
    };
    const onOnline = () => settle(true);
    const onAbort = () => settle(undefined);
    const timer = clock.setTimeout(() => settle(false), Math.min(maxMs, MAX_DELAY_MS));
    host.addEventListener('online', onOnline);
    signal.addEventListener('abort', onAbort);
  });
}
