import { IDLE_OUTBOX_SNAPSHOT } from './idle.js';
import type { OutboxSnapshot } from './types.js';

type Fields = { -readonly [K in keyof OutboxSnapshot]: OutboxSnapshot[K] };

/**
 * The outbox's observable state (the zustand contract): `set` changes fields, `publish` freezes
 * a new snapshot and tells the listeners, but only when a field really changed, since
 * `useSyncExternalStore` compares snapshots by identity.
 */
export class OutboxState {
  private fields: Fields = { ...IDLE_OUTBOX_SNAPSHOT };
  private snapshot: OutboxSnapshot = IDLE_OUTBOX_SNAPSHOT;
  private readonly listeners = new Set<() => void>();

  get current(): Readonly<Fields> {
    return this.fields;
  }

  /** Changes fields and publishes if any of them changed. */
  set(patch: Partial<Fields>): void {
    let changed = false;
    for (const [name, value] of Object.entries(patch) as [keyof Fields, unknown][]) {
      if (!Object.is(this.fields[name], value)) {
        (this.fields as Record<string, unknown>)[name] = value;
        changed = true;
      }
    }
    if (!changed) return;
    this.snapshot = Object.freeze({ ...this.fields });
    for (const listener of [...this.listeners]) {
      try {
        listener();
      } catch (error) {
        report(error);
      }
    }
  }

  readonly getSnapshot = (): OutboxSnapshot => this.snapshot;

  readonly subscribe = (listener: () => void): (() => void) => {
    if (typeof listener !== 'function') {
      throw new TypeError('[fetch-pacer] Expected `listener` to be a function');
    }
    // A wrapper per call, so the same function subscribed twice needs two unsubscribes.
    const entry = () => listener();
    this.listeners.add(entry);
    return () => {
      this.listeners.delete(entry);
    };
  };
}

/** A callback of the user's that throws must not break the outbox: report it the platform way. */
export function report(error: unknown): void {
  const reportError = (globalThis as { reportError?: (error: unknown) => void }).reportError;
  if (typeof reportError === 'function') reportError(error);
  else console.error(error);
}
