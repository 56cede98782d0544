/**
 * An in-process Web Locks manager (exclusive mode only): requests for one name are granted one at
 * a time, first come first served, as `navigator.locks` does between the tabs of an origin.
 * Several stores on one manager are several tabs. `hold` keeps a lock the way a tab stuck
 * mid-operation would, until `release` (the browser releasing a closed tab's locks).
 */
export function fakeLocks() {
  const queues = new Map<string, (() => void)[]>();
  const held = new Set<string>();
  let granted = 0;

  function acquire(name: string, signal: AbortSignal | undefined): Promise<void> {
    if (!held.has(name)) {
      held.add(name);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const queue = queues.get(name) ?? [];
      queues.set(name, queue);
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        queue.splice(queue.indexOf(grant), 1);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      queue.push(grant);
    });
  }

  function release(name: string): void {
    const next = queues.get(name)?.shift();
    if (next === undefined) held.delete(name);
    else next();
  }

  const locks = {
    async request<T>(
      name: string,
      optionsOrCallback: { signal?: AbortSignal } | ((lock: unknown) => T | Promise<T>),
      maybeCallback?: (lock: unknown) => T | Promise<T>,
    ): Promise<T> {
      const callback = (
        typeof optionsOrCallback === 'function' ? optionsOrCallback : maybeCallback
      ) as (lock: unknown) => T | Promise<T>;
      const options = typeof optionsOrCallback === 'function' ? {} : optionsOrCallback;
      options.signal?.throwIfAborted();
      await acquire(name, options.signal);
      granted++;
      try {
        return await callback({ name, mode: 'exclusive' });
      } finally {
        release(name);
      }
    },
    query: async () => ({ held: [], pending: [] }),
  } as unknown as LockManager;

  return {
    locks,
    get granted() {
      return granted;
    },
    /** Takes `name` and keeps it until the returned release is called. */
    async hold(name: string): Promise<() => void> {
      await acquire(name, undefined);
      return () => release(name);
    },
    /** Requests waiting for `name`. */
    waiting(name: string): number {
      return queues.get(name)?.length ?? 0;
    },
  };
}
