import {
  createPacer,
  type Pacer,
  type PacerClock,
  type PacerOptions,
} from '../../src/pacer/index.js';
import { createManualClock, type ManualClock } from '../../src/testing/index.js';

export interface Harness {
  readonly clock: ManualClock;
  readonly pacer: Pacer;
  /** `clock.now()` at each start, in start order, with the task's label. */
  readonly starts: { readonly label: string; readonly at: number }[];
  /** A task that records its start and resolves with its label. */
  readonly task: (label: string) => () => string;
  /** Start times of the tasks whose label starts with `prefix`. */
  readonly startsOf: (prefix?: string) => number[];
}

/** A pacer on a manual clock (or the clock given), plus a start recorder. */
export function harness(
  options: Omit<PacerOptions, 'clock'>,
  wrapClock?: (clock: ManualClock) => PacerClock,
): Harness {
  const clock = createManualClock();
  const pacer = createPacer({ ...options, clock: wrapClock?.(clock) ?? clock });
  const starts: { label: string; at: number }[] = [];
  const task = (label: string) => () => {
    starts.push({ label, at: clock.now() });
    return label;
  };
  const startsOf = (prefix = '') =>
    starts.filter((start) => start.label.startsWith(prefix)).map((start) => start.at);
  return { clock, pacer, starts, task, startsOf };
}

/** A promise to settle by hand: a task that runs until the test says so. */
export function gate<T = void>() {
  let open: (value: T) => void = () => {};
  let fail: (reason: unknown) => void = () => {};
  const promise = new Promise<T>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/** Counts the `abort` listeners live on a signal (added and not removed or fired). */
export function trackListeners(signal: AbortSignal): {
  readonly live: number;
  readonly added: number;
} {
  const live = new Set<unknown>();
  let added = 0;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((type: string, listener: EventListener, options?: unknown) => {
    if (type === 'abort') {
      added++;
      live.add(listener);
      // A `once` listener is gone after it fires: count that as removed.
      const once = typeof options === 'object' && options !== null && 'once' in options;
      const wrapped: EventListener = (event) => {
        if (once) live.delete(listener);
        listener(event);
      };
      wrappers.set(listener, wrapped);
      add(type, wrapped, options as AddEventListenerOptions);
      return;
    }
    add(type, listener, options as AddEventListenerOptions);
  }) as AbortSignal['addEventListener'];
  const wrappers = new Map<unknown, EventListener>();
  signal.removeEventListener = ((type: string, listener: EventListener, options?: unknown) => {
    live.delete(listener);
    remove(type, wrappers.get(listener) ?? listener, options as EventListenerOptions);
  }) as AbortSignal['removeEventListener'];
  return {
    get live() {
      return live.size;
    },
    get added() {
      return added;
    },
  };
}

/** What a promise settled with, without awaiting it: read after letting microtasks run. */
export function outcome<T>(promise: Promise<T>) {
  const state: { status: 'pending' | 'resolved' | 'rejected'; value?: T; reason?: unknown } = {
    status: 'pending',
  };
  promise.then(
    (value) => {
      state.status = 'resolved';
      state.value = value;
    },
    (reason: unknown) => {
      state.status = 'rejected';
      state.reason = reason;
    },
  );
  return state;
}

/** Lets pending promise callbacks run. */
export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}
