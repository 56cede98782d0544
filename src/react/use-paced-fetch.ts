import { useEffect, useRef, useState } from 'react';
import type { PacingInit, RequestPacing } from '../http/paced-fetch.js';
import { usePacerSource } from './context.js';
import { abortReason } from './errors.js';
import type { RequestInput } from './fingerprint.js';
import { useLifetime } from './lifetime.js';
import { anySignal, signalOf } from './signals.js';
import { fetchOf, type PacerSource } from './source.js';

/** One request's own pacing (key, cost, priority, onProgress): the paced fetch's `init.pacing`. */
export type Pacing = RequestPacing;

/** `RequestInit`, plus this request's own pacing: the paced fetch's `init`. */
export type PacedRequestInit = PacingInit;

/** A paced fetch bound to a component: its requests are aborted when the component unmounts. */
export type BoundFetch = (input: RequestInput, init?: PacedRequestInit) => Promise<Response>;

/**
 * A paced fetch bound to a component: what `usePacedFetch` returns, kept in a hook's state (so
 * `useRateLimitedFetch` holds one without the hooks of a second `usePacedFetch`).
 */
export class BoundFetcher {
  private controller: AbortController | undefined;

  /**
   * @param source the source to send through (the one the component rendered last)
   * @param alive whether the component can still send
   */
  constructor(
    private readonly source: () => PacerSource,
    private readonly alive: () => boolean,
  ) {}

  readonly fetch: BoundFetch = (input, init) => {
    if (!this.alive()) {
      return Promise.reject(
        abortReason('The component unmounted: its bound fetch sends no more requests.'),
      );
    }
    try {
      this.controller ??= new AbortController();
      const signal = anySignal([this.controller.signal, signalOf(input, init)]);
      // The source's paced fetch takes `init.pacing` out and checks it.
      return fetchOf(this.source())(input, { ...init, signal });
    } catch (error) {
      // A malformed input or init: rejected like fetch does, not thrown.
      return Promise.reject(error);
    }
  };

  /** The component unmounted: its requests still waiting leave the queue, those in flight stop. */
  unmounted(): void {
    this.controller?.abort(abortReason('The component unmounted: its request was aborted.'));
  }
}

/**
 * A fetch for event handlers, paced like every other request, and bound to the component: when
 * it unmounts, its requests still waiting leave the queue (taking no permit) and those in flight
 * are aborted; later calls reject at once. Each rejects with an `AbortError` (`isAbortError`).
 * Its identity is stable, so it can go in dependency lists.
 *
 * ```tsx
 * const fetch = usePacedFetch(api);
 * const save = async () => {
 *   const response = await fetch('/api/items', { method: 'POST', body });
 * };
 * ```
 *
 * @param source a paced fetch or a pacer; `undefined` for the one of `<PacerProvider>`.
 */
export function usePacedFetch(source?: PacerSource): BoundFetch {
  const resolved = usePacerSource(source, 'usePacedFetch');
  const latest = useRef(resolved);
  useEffect(() => {
    latest.current = resolved;
  });
  const lifetime = useLifetime(() => bound.unmounted());
  const [bound] = useState(() => new BoundFetcher(() => latest.current, lifetime.alive));
  return bound.fetch;
}
