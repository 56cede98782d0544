import { useCallback, useEffect, useRef, useState } from 'react';
import { usePacerSource } from './context.js';
import { fingerprint, type RequestInput } from './fingerprint.js';
import { useLifetime } from './lifetime.js';
import { assertParse, type Parse } from './parse.js';
import { RequestRunner, type RunSpec } from './request-runner.js';
import {
  applyChange,
  type HookState,
  IDLE,
  type RateLimitedFetchState,
  viewFor,
} from './request-state.js';
import { type PacerSource, pacerOf } from './source.js';
import { type BoundFetch, usePacedFetch } from './use-paced-fetch.js';

/** Belongs to no request: the first render derives what to show from the input. */
const INITIAL: HookState<never> = { request: undefined, pacer: undefined, view: IDLE };

/** Options of `useRateLimitedFetch`, but `parse`. */
export interface UseRateLimitedFetchOptions {
  /** The fetch options (method, headers, body, ...). Compared by value: inline is fine. */
  readonly init?: RequestInit | undefined;
  /** The rate-limit key of the request. @default the paced fetch's `key` (the request's origin) */
  readonly key?: string | undefined;
  /** Permits the request takes. @default the paced fetch's `cost`, else 1 */
  readonly cost?: number | undefined;
  /** Higher starts first among waiting requests of its key. @default the paced fetch's, else 0 */
  readonly priority?: number | undefined;
  /** `false` sends nothing (status `idle`), like a `null` input. @default true */
  readonly enabled?: boolean | undefined;
  /** While a new input loads, keep showing the data of the previous one. @default false */
  readonly keepPreviousData?: boolean | undefined;
  /**
   * The paced fetch to send through, called as it is (its `fetch`, `key`, `retry` options hold);
   * or a pacer, which gets a default paced fetch. @default the one of `<PacerProvider>`
   */
  readonly fetch?: PacerSource | undefined;
}

/** What `useRateLimitedFetch` returns: the state, and what to do with it. */
export type RateLimitedFetchResult<T> = RateLimitedFetchState<T> & {
  /** Sends the request again (stopping one in progress); resolves once it settles. */
  readonly refetch: () => Promise<void>;
  /** Stops the request in progress (it leaves the queue, or is aborted): status `idle`. */
  readonly abort: () => void;
  /** A paced fetch bound to the component, for event handlers (see `usePacedFetch`). */
  readonly fetch: BoundFetch;
};

/**
 * Loads `input` through the pacer and tells where the request is: `idle`, `queued` (with the
 * projected `startAt`), `blocked` (the server's `retryAt`), `loading`, `success` or `error`.
 *
 * A new input (by value: URL, method, headers, body) aborts the previous request and sends the
 * new one; unmounting aborts it, freeing its place in the queue. `null` sends nothing.
 *
 * ```tsx
 * const { status, data, error } = useRateLimitedFetch<User>(`/api/users/${id}`);
 * ```
 */
export function useRateLimitedFetch<T = unknown>(
  input: RequestInput | null | undefined,
  options?: UseRateLimitedFetchOptions & { readonly parse?: 'json' | undefined },
): RateLimitedFetchResult<T>;
export function useRateLimitedFetch(
  input: RequestInput | null | undefined,
  options: UseRateLimitedFetchOptions & { readonly parse: 'text' },
): RateLimitedFetchResult<string>;
export function useRateLimitedFetch(
  input: RequestInput | null | undefined,
  options: UseRateLimitedFetchOptions & { readonly parse: 'response' },
): RateLimitedFetchResult<Response>;
export function useRateLimitedFetch<T>(
  input: RequestInput | null | undefined,
  options: UseRateLimitedFetchOptions & {
    readonly parse: (response: Response) => T | PromiseLike<T>;
  },
): RateLimitedFetchResult<T>;
export function useRateLimitedFetch<T>(
  input: RequestInput | null | undefined,
  options: UseRateLimitedFetchOptions & { readonly parse?: Parse<T> | undefined } = {},
): RateLimitedFetchResult<T> {
  const {
    init,
    parse = 'json',
    key,
    cost,
    priority,
    enabled = true,
    keepPreviousData = false,
    fetch,
  } = options;
  assertParse(parse);
  const source = usePacerSource(fetch, 'useRateLimitedFetch');
  const pacer = pacerOf(source);
  const request = input != null && enabled ? fingerprint(input, init) : undefined;
  const spec: RunSpec<T> | undefined =
    input != null && request !== undefined
      ? { input, init, source, pacer, request, pacing: { key, cost, priority }, parse }
      : undefined;

  const [state, setState] = useState<HookState<T>>(INITIAL);
  // What the last commit rendered: refetch() and the runner's reports use it.
  const latest = useRef({ spec, keepPreviousData });
  useEffect(() => {
    latest.current = { spec, keepPreviousData };
  });

  const [runner] = useState(
    () =>
      new RequestRunner<T>((run, change) => {
        setState((current) =>
          applyChange(current, run.request, run.pacer, change, latest.current.keepPreviousData),
        );
      }),
  );
  const lifetime = useLifetime();

  // A new request (by value) or another pacer starts a run; the spec itself is a new object on
  // every render, so the run reads the committed one from `latest`.
  // biome-ignore lint/correctness/useExhaustiveDependencies: `request` and `pacer` are the triggers
  useEffect(() => {
    const current = latest.current.spec;
    if (current === undefined) return;
    void runner.start(current);
    return () => {
      runner.stop();
    };
  }, [runner, request, pacer]);

  const refetch = useCallback((): Promise<void> => {
    const current = latest.current.spec;
    if (current === undefined || !lifetime.alive()) return Promise.resolve();
    return runner.start(current);
  }, [runner, lifetime]);

  const abort = useCallback((): void => {
    const current = latest.current.spec;
    if (!runner.stop('The request was aborted.') || current === undefined) return;
    const keep = latest.current.keepPreviousData;
    setState((state) =>
      applyChange(state, current.request, current.pacer, { kind: 'aborted' }, keep),
    );
  }, [runner]);

  const boundFetch = usePacedFetch(fetch);
  const view = viewFor(state, request, pacer, keepPreviousData);
  return { ...view, refetch, abort, fetch: boundFetch };
}
