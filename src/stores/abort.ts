/**
 * One `abort` listener per signal, whatever the number of waits on it. A pacer passes one
 * signal (its lifetime) to every store call, and a store may have thousands of calls waiting on
 * it at once: a listener each would trip Node's MaxListenersExceededWarning at eleven.
 */
const waiting = new WeakMap<AbortSignal, Set<() => void>>();

/** Calls `callback` once when `signal` aborts. Returns the function that forgets it. */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let callbacks = waiting.get(signal);
  if (callbacks === undefined) {
    const set = new Set<() => void>();
    callbacks = set;
    waiting.set(signal, set);
    signal.addEventListener(
      'abort',
      () => {
        waiting.delete(signal);
        for (const wake of [...set]) wake();
      },
      { once: true },
    );
  }
  const set = callbacks;
  set.add(callback);
  return () => {
    set.delete(callback);
  };
}
