import type { Pacer, TaskProgress } from '../pacer/types.js';

/** Where a hook's request stands, as its pacer reports it per attempt (see `TaskProgress`). */
export type RequestProgress = TaskProgress;

/**
 * - `idle`: nothing requested (no input, `enabled: false`, or `abort()`ed).
 * - `queued`: waiting for a permit of its key, or a concurrency slot.
 * - `blocked`: waiting because the server said so (429/503 with `Retry-After`).
 * - `loading`: sent; the response (or its body) is on its way.
 * - `success` / `error`: settled.
 */
export type FetchStatus = 'idle' | 'queued' | 'blocked' | 'loading' | 'success' | 'error';

interface Pending<S extends FetchStatus, T> {
  readonly status: S;
  /** The data of the last success for this input (or the previous one with `keepPreviousData`). */
  readonly data: T | undefined;
  readonly error: undefined;
  readonly response: Response | undefined;
  readonly startAt: undefined;
  readonly retryAt: undefined;
}

/** What `useRateLimitedFetch` reports; `status` narrows the other fields. */
export type RateLimitedFetchState<T> =
  | Pending<'idle', T>
  | (Omit<Pending<'queued', T>, 'startAt'> & {
      /**
       * Pacer-clock ms (compare with `pacer.now()`) at which the request is projected to start;
       * `undefined` while that is not known yet.
       */
      readonly startAt: number | undefined;
    })
  | (Omit<Pending<'blocked', T>, 'retryAt'> & {
      /** Pacer-clock ms at which the server's `Retry-After` ends. */
      readonly retryAt: number;
    })
  | Pending<'loading', T>
  | {
      readonly status: 'success';
      readonly data: T;
      readonly error: undefined;
      readonly response: Response;
      readonly startAt: undefined;
      readonly retryAt: undefined;
    }
  | {
      readonly status: 'error';
      readonly data: T | undefined;
      /** An `HttpError`, a parse error, a network `TypeError`, or the pacer's `RateLimitError`/`QueueFullError`. */
      readonly error: unknown;
      readonly response: Response | undefined;
      readonly startAt: undefined;
      readonly retryAt: undefined;
    };

/** A change reported by a run. */
export type Change<T> =
  | { readonly kind: 'progress'; readonly progress: RequestProgress }
  | { readonly kind: 'success'; readonly data: T; readonly response: Response }
  | { readonly kind: 'error'; readonly error: unknown; readonly response: Response | undefined }
  | { readonly kind: 'aborted' };

/** The hook's state: what it shows, and which request (and pacer) that belongs to. */
export interface HookState<T> {
  readonly request: string | undefined;
  readonly pacer: Pacer | undefined;
  readonly view: RateLimitedFetchState<T>;
}

/** Nothing requested, nothing known. */
export const IDLE: Pending<'idle', never> = Object.freeze({
  status: 'idle',
  data: undefined,
  error: undefined,
  response: undefined,
  startAt: undefined,
  retryAt: undefined,
});

/**
 * What a request shows before its run reports: `queued` (`idle` without a request), keeping
 * the previous data only with `keepPreviousData`.
 */
export function freshView<T>(
  previous: RateLimitedFetchState<T>,
  active: boolean,
  keepPreviousData: boolean,
): RateLimitedFetchState<T> {
  if (!active) return IDLE;
  return {
    status: 'queued',
    data: keepPreviousData ? previous.data : undefined,
    error: undefined,
    response: undefined,
    startAt: undefined,
    retryAt: undefined,
  };
}

/** The view of `state` for the request rendered now. */
export function viewFor<T>(
  state: HookState<T>,
  request: string | undefined,
  pacer: Pacer,
  keepPreviousData: boolean,
): RateLimitedFetchState<T> {
  if (state.request === request && state.pacer === pacer) return state.view;
  return freshView(state.view, request !== undefined, keepPreviousData);
}

/** Applies a run's change; returns `state` itself when nothing visible changed (no render). */
export function applyChange<T>(
  state: HookState<T>,
  request: string,
  pacer: Pacer,
  change: Change<T>,
  keepPreviousData: boolean,
): HookState<T> {
  const base = viewFor(state, request, pacer, keepPreviousData);
  const view = reduce(base, change);
  if (view === state.view && state.request === request && state.pacer === pacer) return state;
  return { request, pacer, view };
}

function reduce<T>(view: RateLimitedFetchState<T>, change: Change<T>): RateLimitedFetchState<T> {
  const { data } = view;
  // The response goes with the data it produced, until a new one settles.
  const response = view.status === 'error' ? undefined : view.response;
  let next: RateLimitedFetchState<T>;
  switch (change.kind) {
    case 'progress': {
      const { progress } = change;
      const pending = { data, error: undefined, response, startAt: undefined, retryAt: undefined };
      if (progress.state === 'queued') {
        next = { ...pending, status: 'queued', startAt: progress.startAt };
      } else if (progress.state === 'blocked') {
        next = { ...pending, status: 'blocked', retryAt: progress.until };
      } else {
        next = { ...pending, status: 'loading' };
      }
      break;
    }
    case 'success':
      next = {
        status: 'success',
        data: change.data,
        error: undefined,
        response: change.response,
        startAt: undefined,
        retryAt: undefined,
      };
      break;
    case 'error':
      next = {
        status: 'error',
        data,
        error: change.error,
        response: change.response,
        startAt: undefined,
        retryAt: undefined,
      };
      break;
    case 'aborted':
      if (view.status !== 'queued' && view.status !== 'blocked' && view.status !== 'loading') {
        return view;
      }
      next = {
        status: 'idle',
        data,
        error: undefined,
        response,
        startAt: undefined,
        retryAt: undefined,
      };
      break;
  }
  return sameView(view, next) ? view : next;
}

function sameView<T>(a: RateLimitedFetchState<T>, b: RateLimitedFetchState<T>): boolean {
  return (
    a.status === b.status &&
    Object.is(a.data, b.data) &&
    Object.is(a.error, b.error) &&
    a.response === b.response &&
    a.startAt === b.startAt &&
    a.retryAt === b.retryAt
  );
}
