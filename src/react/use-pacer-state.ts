import { useEffect, useMemo, useRef, useSyncExternalStore } from 'react';
import type { PacerSnapshot } from '../pacer/types.js';
import { usePacerSource } from './context.js';
import { type PacerSource, pacerOf } from './source.js';

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

const getIdleSnapshot = (): PacerSnapshot => IDLE_PACER_SNAPSHOT;

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
  // The selection last rendered, so that a new selector function (an inline arrow, each render)
  // that selects an equal value returns the same value and causes no render.
  const rendered = useRef<{ readonly value: T } | null>(null);
  const [getSelection, getServerSelection] = useMemo(() => {
    let memo: { readonly snapshot: PacerSnapshot; readonly value: T } | undefined;
    const select = (snapshot: PacerSnapshot): T => {
      if (memo !== undefined && memo.snapshot === snapshot) return memo.value;
      const next = selector(snapshot);
      const previous = memo ?? rendered.current;
      const value = previous !== null && isEqual(previous.value, next) ? previous.value : next;
      memo = { snapshot, value };
      return value;
    };
    return [() => select(pacer.getSnapshot()), () => select(getIdleSnapshot())];
  }, [pacer, selector, isEqual]);
  const value = useSyncExternalStore(pacer.subscribe, getSelection, getServerSelection);
  useEffect(() => {
    rendered.current = { value };
  }, [value]);
  return value;
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
