/**
 * One `abort` listener per signal, whatever the number of waits on it. Thousands of queued tasks
 * may share one signal (a page's, a request group's), and a pacer passes one signal (its
 * lifetime) to every store call: a listener each would trip Node's MaxListenersExceededWarning
 * at eleven, and make adding one O(listeners). Here adding and forgetting a wait are O(1), and
 * the listener is removed with the last wait on its signal.
 */
const waiting = new WeakMap<AbortSignal, Waits>();

interface Waits {
  readonly callbacks: Set<() => void>;
  readonly listener: () => void;
}

/** Calls `callback` once when `signal` aborts. Returns the function that forgets it. */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let waits = waiting.get(signal);
  if (waits === undefined) {
    const callbacks = new Set<() => void>();
    const listener = () => {
      waiting.delete(signal);
      for (const wake of [...callbacks]) wake();
    };
    waits = { callbacks, listener };
    waiting.set(signal, waits);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { callbacks, listener } = waits;
  callbacks.add(callback);
  return () => {
    if (!callbacks.delete(callback) || callbacks.size > 0) return;
    if (waiting.get(signal)?.listener === listener) waiting.delete(signal);
    signal.removeEventListener('abort', listener);
  };
}
