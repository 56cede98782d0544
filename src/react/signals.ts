/**
 * A signal that aborts when any of `signals` does, with that signal's reason.
 * `AbortSignal.any` where it exists (Node 20.3, every current browser), else by hand.
 */
export function anySignal(signals: readonly (AbortSignal | null | undefined)[]): AbortSignal {
  const present = signals.filter((signal): signal is AbortSignal => signal != null);
  if (present.length === 1) return present[0] as AbortSignal;
  if (typeof AbortSignal.any === 'function') return AbortSignal.any(present);
  const controller = new AbortController();
  const aborted = present.find((signal) => signal.aborted);
  if (aborted !== undefined) {
    controller.abort(aborted.reason);
    return controller.signal;
  }
  const onAbort = (event: Event) => {
    for (const signal of present) signal.removeEventListener('abort', onAbort);
    controller.abort((event.target as AbortSignal).reason);
  };
  for (const signal of present) signal.addEventListener('abort', onAbort, { once: true });
  return controller.signal;
}

/**
 * The caller's own signal of a request: `init.signal`, else the one of a `Request` input (which
 * `new Request(input, { signal })` would otherwise replace).
 */
export function signalOf(
  input: RequestInfo | URL,
  init: RequestInit | undefined,
): AbortSignal | undefined {
  return init?.signal ?? (input instanceof Request ? input.signal : undefined);
}
