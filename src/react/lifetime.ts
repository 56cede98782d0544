import { useEffect, useRef } from 'react';

/**
 * Whether the component can still start work. Before its first commit it can (a child's effect
 * runs before its parent's); after it unmounts it cannot. StrictMode's unmount-and-mount-again
 * happens in one turn, so an unmount counts only if no mount follows before the next microtask.
 */
export interface Lifetime {
  readonly alive: () => boolean;
}

export function useLifetime(onUnmount?: () => void): Lifetime {
  const state = useRef<{ phase: 'new' | 'mounted' | 'leaving' | 'dead'; lifetime?: Lifetime }>({
    phase: 'new',
  });
  const latestOnUnmount = useRef(onUnmount);
  useEffect(() => {
    latestOnUnmount.current = onUnmount;
  });
  useEffect(() => {
    const life = state.current;
    life.phase = 'mounted';
    return () => {
      life.phase = 'leaving';
      queueMicrotask(() => {
        if (life.phase !== 'leaving') return;
        life.phase = 'dead';
        latestOnUnmount.current?.();
      });
    };
  }, []);
  state.current.lifetime ??= { alive: () => state.current.phase !== 'dead' };
  return state.current.lifetime;
}
