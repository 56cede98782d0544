import type { PacerSnapshot } from './types.js';

/**
 * The store half of the pacer (the zustand contract): `subscribe` + `getSnapshot`, where a
 * snapshot is frozen and replaced, never mutated, and replaced only when a field changed,
 * because `useSyncExternalStore` compares snapshots by identity.
 *
 * `read` returns the live fields; `blockedKeys` must keep its identity while the set of blocked
 * keys is unchanged (the pacer caches the sorted array).
 */
export class Snapshots {
  readonly #read: () => PacerSnapshot;
  #snapshot: PacerSnapshot;
  /** The snapshot listeners last heard of; a change made visible by `current()` still notifies. */
  #notified: PacerSnapshot;
  readonly #listeners = new Set<() => void>();
  #notifying = false;
  #again = false;

  /** @param read the live fields, as a fresh object each call (it may be frozen and kept). */
  constructor(read: () => PacerSnapshot) {
    this.#read = read;
    this.#snapshot = Object.freeze(read());
    this.#notified = this.#snapshot;
  }

  /** The snapshot of the state now: the same object while nothing changed. */
  current(): PacerSnapshot {
    const live = this.#read();
    const last = this.#snapshot;
    if (
      live.queued !== last.queued ||
      live.inFlight !== last.inFlight ||
      live.admitted !== last.admitted ||
      live.denied !== last.denied ||
      live.blockedKeys !== last.blockedKeys ||
      live.paused !== last.paused ||
      live.disposed !== last.disposed
    ) {
      this.#snapshot = Object.freeze(live);
    }
    return this.#snapshot;
  }

  subscribe(listener: () => void): () => void {
    if (typeof listener !== 'function') {
      throw new TypeError('[fetch-pacer] Expected `listener` to be a function');
    }
    // A wrapper per call, so the same function subscribed twice needs two unsubscribes.
    const entry = () => listener();
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  /**
   * Tells every listener, once, if the snapshot changed since they were last told. Changes made
   * by listeners themselves are coalesced into one more round, not nested calls.
   */
  publish(): void {
    // Nobody to tell: build nothing; `current()` catches up when someone asks.
    if (this.#listeners.size === 0) return;
    if (this.#notifying) {
      this.#again = true;
      return;
    }
    this.#notifying = true;
    try {
      do {
        this.#again = false;
        const snapshot = this.current();
        if (snapshot === this.#notified) break;
        this.#notified = snapshot;
        for (const listener of [...this.#listeners]) {
          try {
            listener();
          } catch (error) {
            report(error);
          }
        }
      } while (this.#again);
    } finally {
      this.#notifying = false;
    }
  }
}

/**
 * A listener that throws must not break the pacer or starve the other listeners; its error is
 * reported the platform way (`reportError`: the console and a window `error` event in browsers),
 * or to `console.error` where that does not exist (Node 20).
 */
export function report(error: unknown): void {
  const reportError = (globalThis as { reportError?: (error: unknown) => void }).reportError;
  if (typeof reportError === 'function') reportError(error);
  else console.error(error);
}
