import type { PacerSnapshot } from '../pacer/types.js';
import { usePacerSource } from './context.js';
import { type PacerSource, pacerOf } from './source.js';
import { useSelectedSnapshot } from './use-selected-snapshot.js';

/**
 * What the server renders, and what hydration starts from: an idle pacer. A pacer on a server
 * is shared by every request it serves, so its live state belongs in no one's HTML; and a
 * constant needs no clock, so server rendering reads neither `performance` nor timers.
 */
export const IDLE_PACER_SNAPSHOT: PacerSnapshot = Object.freeze({
  queued: 0,
  inFlight: 0,
  admitted: 0,
  denied: 0,
  blockedKeys: Object.freeze([]) as readonly string[],
  paused: false,
  disposed: false,
});

const identity = <T>(value: T): T => value;

/**
 * The pacer's state, live: `queued`, `inFlight`, `admitted`, `denied`, `blockedKeys`, `paused`,
 * `disposed`. With a `selector`, the component re-renders only when the selected value changes
 * (by `isEqual`, `Object.is` by default; pass `shallowEqual` for a selector that builds an
 * object or array).
 *
 * ```tsx
 * const queued = usePacerState(api, (state) => state.queued);
 * ```
 *
 * @param source a paced fetch or a pacer; `undefined` for the one of `<PacerProvider>`.
 */
export function usePacerState(source?: PacerSource): PacerSnapshot;
export function usePacerState<T>(
  source: PacerSource | undefined,
  selector: (snapshot: PacerSnapshot) => T,
  isEqual?: (a: T, b: T) => boolean,
): T;
export function usePacerState<T>(
  source: PacerSource | undefined,
  selector: (snapshot: PacerSnapshot) => T = identity as (snapshot: PacerSnapshot) => T,
  isEqual: (a: T, b: T) => boolean = Object.is,
): T {
  const pacer = pacerOf(usePacerSource(source, 'usePacerState', 'source'));
  return useSelectedSnapshot(pacer, IDLE_PACER_SNAPSHOT, selector, isEqual);
}

/**
 * Equal when both are the same, or are objects (or arrays) with the same own keys holding
 * `Object.is`-equal values: for selectors that pick several fields into a new object.
 */
export function shallowEqual<T>(a: T, b: T): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  if (keysA.length !== Object.keys(b).length) return false;
  return keysA.every(
    (key) =>
      Object.hasOwn(b, key) &&
      Object.is((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
  );
}
