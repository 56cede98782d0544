import { useEffect, useMemo, useRef, useSyncExternalStore } from 'react';

/** Anything with the store contract: `subscribe` and an immutable `getSnapshot`. */
export interface SnapshotSource<S> {
  subscribe(listener: () => void): () => void;
  getSnapshot(): S;
}

/**
 * `useSyncExternalStore` with a selector: the component re-renders only when the selected
 * value changes (by `isEqual`). The server (and hydration) sees `serverSnapshot`.
 * Shared by `usePacerState` and `useOutbox`.
 */
export function useSelectedSnapshot<S, T>(
  source: SnapshotSource<S>,
  serverSnapshot: S,
  selector: (snapshot: S) => T,
  isEqual: (a: T, b: T) => boolean,
): T {
  // The selection last rendered, so that a new selector function (an inline arrow, each render)
  // that selects an equal value returns the same value and causes no render.
  const rendered = useRef<{ readonly value: T } | null>(null);
  const [getSelection, getServerSelection] = useMemo(() => {
    let memo: { readonly snapshot: S; readonly value: T } | undefined;
    const select = (snapshot: S): T => {
      if (memo !== undefined && memo.snapshot === snapshot) return memo.value;
      const next = selector(snapshot);
      const previous = memo ?? rendered.current;
      const value = previous !== null && isEqual(previous.value, next) ? previous.value : next;
      memo = { snapshot, value };
      return value;
    };
    return [() => select(source.getSnapshot()), () => select(serverSnapshot)];
  }, [source, serverSnapshot, selector, isEqual]);
  const value = useSyncExternalStore(source.subscribe, getSelection, getServerSelection);
  useEffect(() => {
    rendered.current = { value };
  }, [value]);
  return value;
}
