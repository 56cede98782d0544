// The idle snapshot and types only: the react entry carries none of the outbox's code (nor `idb`).
import { IDLE_OUTBOX_SNAPSHOT } from '../offline/idle.js';
import type { Outbox, OutboxSnapshot } from '../offline/types.js';
import { useSelectedSnapshot } from './use-selected-snapshot.js';

export { IDLE_OUTBOX_SNAPSHOT };

const identity = <T>(value: T): T => value;

/**
 * The outbox's state, live: `pending`, `inFlight`, `flushing`, `online`, `nextAttemptAt`,
 * `lastError`, `sent`, `rejected`, `dropped`. With a `selector`, the component re-renders only
 * when the selected value changes (by `isEqual`, `Object.is` by default).
 *
 * ```tsx
 * const pending = useOutbox(outbox, (state) => state.pending);
 * return pending > 0 ? <p>{pending} changes wait for the network</p> : null;
 * ```
 */
export function useOutbox(outbox: Outbox): OutboxSnapshot;
export function useOutbox<T>(
  outbox: Outbox,
  selector: (snapshot: OutboxSnapshot) => T,
  isEqual?: (a: T, b: T) => boolean,
): T;
export function useOutbox<T>(
  outbox: Outbox,
  selector: (snapshot: OutboxSnapshot) => T = identity as (snapshot: OutboxSnapshot) => T,
  isEqual: (a: T, b: T) => boolean = Object.is,
): T {
  if (
    typeof outbox !== 'object' ||
    outbox === null ||
    typeof outbox.subscribe !== 'function' ||
    typeof outbox.getSnapshot !== 'function'
  ) {
    throw new TypeError(
      '[fetch-pacer] useOutbox expects an outbox from `createOutbox()` (with `subscribe` and `getSnapshot`)',
    );
  }
  return useSelectedSnapshot(outbox, IDLE_OUTBOX_SNAPSHOT, selector, isEqual);
}
