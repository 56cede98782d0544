import { createContext, createElement, type ReactElement, type ReactNode, useContext } from 'react';
import type { PacedFetch } from '../http/paced-fetch.js';
import type { Pacer } from '../pacer/types.js';
import { assertPacerSource, type PacerSource, pacerOf } from './source.js';

const PacerContext = createContext<PacerSource | undefined>(undefined);
PacerContext.displayName = 'PacerContext';

/** Give it a paced fetch or a pacer: exactly one. */
export type PacerProviderProps = { readonly children?: ReactNode } & (
  | {
      /** The paced fetch the hooks below send through (its `pacer` is the one they watch). */
      readonly fetch: PacedFetch;
      readonly pacer?: undefined;
    }
  | {
      /** The pacer the hooks below send through and watch. */
      readonly pacer: Pacer;
      readonly fetch?: undefined;
    }
);

/**
 * Puts a paced fetch (or a pacer) in context for `useRateLimitedFetch`, `usePacedFetch`,
 * `usePacerState` and `useBucketLevel`. Optional: every hook also takes one directly.
 *
 * ```tsx
 * const api = createPacedFetch({ limits: perSecond(5) });
 * <PacerProvider fetch={api}><App /></PacerProvider>
 * ```
 */
export function PacerProvider(props: PacerProviderProps): ReactElement {
  const { fetch, pacer, children } = props;
  if (fetch !== undefined && pacer !== undefined) {
    throw new TypeError('[fetch-pacer] Give <PacerProvider> either `fetch` or `pacer`, not both');
  }
  const source = fetch ?? pacer;
  assertPacerSource(fetch === undefined ? 'pacer' : 'fetch', source);
  return createElement(PacerContext.Provider, { value: source }, children);
}

/**
 * The source a hook uses: the one it was given, else the provider's. Throws, naming the hook,
 * when there is neither: that is a setup mistake, better seen at the first render.
 */
export function usePacerSource(
  given: PacerSource | undefined,
  hook: string,
  field = 'fetch',
): PacerSource {
  const provided = useContext(PacerContext);
  const source = given ?? provided;
  if (source === undefined) {
    throw new Error(
      `[fetch-pacer] ${hook} found no pacer: wrap the tree in <PacerProvider fetch={pacedFetch}> or pass a paced fetch (or a pacer) to the hook.`,
    );
  }
  if (given !== undefined) assertPacerSource(field, given);
  return source;
}

/** The pacer of the nearest `<PacerProvider>` (or of `source` when given). */
export function usePacer(source?: PacerSource): Pacer {
  return pacerOf(usePacerSource(source, 'usePacer', 'source'));
}
