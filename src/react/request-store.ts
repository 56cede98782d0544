import type { Pacer } from '../pacer/types.js';
import {
  applyChange,
  type Change,
  type HookState,
  IDLE,
  type RateLimitedFetchState,
  viewFor,
} from './request-state.js';

/** The fields of a hook's state a component can read, and so be re-rendered for. */
type Field = keyof RateLimitedFetchState<unknown>;

const FIELDS: readonly Field[] = ['status', 'data', 'error', 'response', 'startAt', 'retryAt'];

/** Belongs to no request: the first render derives what to show from the input. */
const INITIAL: HookState<never> = Object.freeze({
  request: undefined,
  pacer: undefined,
  view: IDLE,
});

/**
 * What the server renders and hydration starts from: nothing requested. No request is sent
 * on a server (effects do not run there), so `idle` is what is true; the client shows `queued`
 * from its first render after hydration, when the request goes out.
 */
const ON_SERVER: HookState<never> = Object.freeze({
  request: undefined,
  pacer: undefined,
  view: IDLE,
});

/** What the component last committed: the request its fields belong to. */
export interface Rendered {
  readonly request: string | undefined;
  readonly pacer: Pacer;
  readonly keepPreviousData: boolean;
}

/**
 * One hook's state, outside React (the way TanStack Query's observer keeps a query's result):
 * a store for `useSyncExternalStore` that tells the component of a change only when a field
 * it has read changed. A row that shows `status` and `data` is not re-rendered when the
 * pacer moves its projected `startAt`; one that shows `startAt` is. Reads are tracked through
 * getters on the result (`track`), as TanStack Query does; until the component has read any
 * field, every change is told.
 */
export class RequestStore<T> {
  private state: HookState<T> = INITIAL;
  private readonly listeners = new Set<() => void>();
  private readonly tracked = new Set<Field>();

  /** @param rendered what the component last committed (read when a change arrives). */
  constructor(private readonly rendered: () => Rendered) {}

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  };

  readonly getSnapshot = (): HookState<T> => this.state;

  readonly getServerSnapshot = (): HookState<T> => ON_SERVER;

  /** Whether `state` is the server's (or hydration's) snapshot: show `idle`. */
  static isServer(state: HookState<unknown>): boolean {
    return state === ON_SERVER;
  }

  /** Applies a run's change (or the hook's own abort); tells the component if it shows it. */
  apply(request: string, pacer: Pacer, change: Change<T>, keepPreviousData: boolean): void {
    const previous = this.state;
    const next = applyChange(previous, request, pacer, change, keepPreviousData);
    if (next === previous) return;
    this.state = next;
    if (this.shows(previous, next)) {
      for (const listener of [...this.listeners]) listener();
    }
  }

  /**
   * The state as the result the component renders: its fields are getters that remember which
   * ones were read. `extras` (the hook's functions) are plain fields.
   */
  track<E extends object>(view: RateLimitedFetchState<T>, extras: E): RateLimitedFetchState<T> & E {
    const result = { ...extras } as RateLimitedFetchState<T> & E;
    const tracked = this.tracked;
    for (const field of FIELDS) {
      Object.defineProperty(result, field, {
        enumerable: true,
        get() {
          tracked.add(field);
          return view[field];
        },
      });
    }
    return result;
  }

  /** Whether a field the component has read differs between the two states, as it renders them. */
  private shows(previous: HookState<T>, next: HookState<T>): boolean {
    if (this.tracked.size === 0) return true;
    const { request, pacer, keepPreviousData } = this.rendered();
    const before = viewFor(previous, request, pacer, keepPreviousData);
    const after = viewFor(next, request, pacer, keepPreviousData);
    for (const field of this.tracked) {
      if (!Object.is(before[field], after[field])) return true;
    }
    return false;
  }
}
