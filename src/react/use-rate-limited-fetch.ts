import { useEffect, useRef, useState, useSyncExternalStore } from 'react';
import { assertKnownOptions, fail } from '../core/validate.js';
import { usePacerSource } from './context.js';
import { fingerprint, type RequestInput } from './fingerprint.js';
import { type Lifetime, useLifetime } from './lifetime.js';
import { assertParse, type Parse } from './parse.js';
import { RequestRunner, type RunSpec } from './request-runner.js';
import { IDLE, type RateLimitedFetchState, viewFor } from './request-state.js';
import { type Rendered, RequestStore } from './request-store.js';
import { type PacerSource, pacerOf } from './source.js';
import { type BoundFetch, BoundFetcher } from './use-paced-fetch.js';

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
   * Waits this many ms after the input last changed before sending (trailing debounce, for
   * search as you type): a change within the wait drops the request still waiting, which sent
   * nothing and took no permit. A request already sent is left alone until the next one goes
   * (or its own signal aborts it). Meanwhile the status is `queued`, `startAt` undefined.
   * `refetch()` sends at once. A finite number >= 0; 0 sends at once. @default 0
   */
  readonly debounceMs?: number | undefined;
  /**
   * The paced fetch to send through, called as it is (its `fetch`, `key`, `retry` options hold);
   * or a pacer, which gets a default paced fetch. @default the one of `<PacerProvider>`
   */
  readonly fetch?: PacerSource | undefined;
}

const OPTIONS = [
  'init',
  'parse',
  'key',
  'cost',
  'priority',
  'enabled',
  'keepPreviousData',
  'debounceMs',
  'fetch',
] as const;

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
 * The component re-renders only when a field it reads changes (as with TanStack Query): a row
 * that shows `status` and `data` is not re-rendered each time the pacer moves `startAt`. On the
 * server, and while hydrating, the status is `idle` (nothing is sent there).
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
  assertKnownOptions('useRateLimitedFetch()', options, OPTIONS);
  const {
    init,
    parse = 'json',
    key,
    cost,
    priority,
    enabled = true,
    keepPreviousData = false,
    debounceMs = 0,
    fetch,
  } = options;
  assertParse(parse);
  if (typeof debounceMs !== 'number' || !Number.isFinite(debounceMs) || debounceMs < 0) {
    fail('debounceMs', 'a finite number >= 0 (ms)', debounceMs);
  }
  const source = usePacerSource(fetch, 'useRateLimitedFetch');
  const pacer = pacerOf(source);
  const request = input != null && enabled ? fingerprint(input, init) : undefined;
  const spec: RunSpec<T> | undefined =
    input != null && request !== undefined
      ? { input, init, source, pacer, request, pacing: { key, cost, priority }, parse }
      : undefined;

  // What the last commit rendered: refetch(), the runner's reports and the store use it.
  const latest = useRef<Latest<T>>({ spec, source, request, pacer, keepPreviousData, debounceMs });
  useEffect(() => {
    latest.current = { spec, source, request, pacer, keepPreviousData, debounceMs };
  });
  // Unmounting stops everything, a debounced request in flight and the bound fetch's too.
  const lifetime = useLifetime(() => hook.unmounted());
  const [hook] = useState(() => new FetchHook<T>(latest, lifetime));
  const { store, runner } = hook;
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);

  // A new request (by value) or another pacer starts a run; the spec itself is a new object on
  // every render, so the run reads the committed one from `latest`.
  // biome-ignore lint/correctness/useExhaustiveDependencies: `request` and `pacer` are the triggers
  useEffect(() => {
    const { spec: current, debounceMs: wait } = latest.current;
    if (current === undefined) {
      runner.stop(); // a debounced request may still be in flight
      return;
    }
    if (wait > 0) {
      void runner.startAfter(current, wait);
      return () => {
        runner.cancelPending();
      };
    }
    void runner.start(current);
    return () => {
      runner.stop();
    };
  }, [runner, request, pacer]);

  const view: RateLimitedFetchState<T> = RequestStore.isServer(state)
    ? IDLE
    : viewFor(state, request, pacer, keepPreviousData);
  return store.track(view, hook.actions);
}

/** What the last commit rendered, for everything that runs after it. */
interface Latest<T> extends Rendered {
  readonly spec: RunSpec<T> | undefined;
  readonly source: PacerSource;
  readonly debounceMs: number;
}

/**
 * One hook's lasting parts, made once per component: the store it renders, the runner of its
 * requests, its bound fetch, and `refetch` and `abort` (stable, so fine in dependency lists).
 */
class FetchHook<T> {
  readonly store: RequestStore<T>;
  readonly runner: RequestRunner<T>;
  private readonly bound: BoundFetcher;
  readonly actions: Pick<RateLimitedFetchResult<T>, 'refetch' | 'abort' | 'fetch'>;

  constructor(latest: { readonly current: Latest<T> }, lifetime: Lifetime) {
    const store = new RequestStore<T>(() => latest.current);
    const runner = new RequestRunner<T>((run, change) => {
      store.apply(run.request, run.pacer, change, latest.current.keepPreviousData);
    });
    this.store = store;
    this.runner = runner;
    this.bound = new BoundFetcher(() => latest.current.source, lifetime.alive);
    const refetch = (): Promise<void> => {
      const current = latest.current.spec;
      if (current === undefined || !lifetime.alive()) return Promise.resolve();
      return runner.start(current);
    };
    const abort = (): void => {
      const { spec: current, keepPreviousData } = latest.current;
      if (!runner.stop('The request was aborted.') || current === undefined) return;
      store.apply(current.request, current.pacer, { kind: 'aborted' }, keepPreviousData);
    };
    this.actions = { refetch, abort, fetch: this.bound.fetch };
  }

  unmounted(): void {
    this.runner.stop();
    this.bound.unmounted();
  }
}
