import type { PacedFetch } from 'fetch-pacer';
import { createStore } from '../lib/store';
import type { Lane } from '../mock/server';

/** How one request ended. */
export type Outcome = 'ok' | 'refused' | 'denied' | 'cancelled' | 'failed';

/** A burst: `size` requests fired at once down each lane. */
export interface Burst {
  readonly id: string;
  readonly size: number;
  readonly firedAt: number;
  /** The paced fetch the paced lane goes through (the one of the controls at the time). */
  readonly client: PacedFetch;
}

export interface LaneProgress {
  readonly settled: number;
  readonly outcomes: Readonly<Record<Outcome, number>>;
  /** `performance.now()` when the last request of the lane settled. */
  readonly doneAt: number | undefined;
}

export interface BurstsState {
  /** The latest burst, and older ones still running (their requests live in their dots). */
  readonly list: readonly Burst[];
  readonly progress: Readonly<Record<string, Readonly<Record<Lane, LaneProgress>>>>;
  /** Paced requests started so far, and their total wait from firing to start, in ms. */
  readonly waits: { readonly count: number; readonly totalMs: number };
}

const NONE: Readonly<Record<Outcome, number>> = {
  ok: 0,
  refused: 0,
  denied: 0,
  cancelled: 0,
  failed: 0,
};
const FRESH: LaneProgress = { settled: 0, outcomes: NONE, doneAt: undefined };

export const bursts = createStore<BurstsState>({
  list: [],
  progress: {},
  waits: { count: 0, totalMs: 0 },
});

let next = 1;

export function fire(size: number, client: PacedFetch): void {
  const burst: Burst = { id: `b${next++}`, size, firedAt: performance.now(), client };
  bursts.set((state) => ({
    ...state,
    list: [...state.list.filter((b) => !isDone(state, b)), burst],
    progress: { ...state.progress, [burst.id]: { paced: FRESH, unpaced: FRESH } },
  }));
}

export function isDone(state: BurstsState, burst: Burst): boolean {
  const progress = state.progress[burst.id];
  return (
    progress !== undefined &&
    progress.paced.settled === burst.size &&
    progress.unpaced.settled === burst.size
  );
}

export function settle(burst: Burst, lane: Lane, outcome: Outcome): void {
  const now = performance.now();
  bursts.set((state) => {
    const progress = state.progress[burst.id];
    if (progress === undefined) return state;
    const lanes = progress[lane];
    const settled = lanes.settled + 1;
    const updated: LaneProgress = {
      settled,
      outcomes: { ...lanes.outcomes, [outcome]: lanes.outcomes[outcome] + 1 },
      doneAt: settled === burst.size ? now : undefined,
    };
    const next = {
      ...state,
      progress: { ...state.progress, [burst.id]: { ...progress, [lane]: updated } },
    };
    // A burst that is done and no longer the latest has nothing left to show.
    const latest = state.list[state.list.length - 1];
    return { ...next, list: next.list.filter((b) => b === latest || !isDone(next, b)) };
  });
}

export function recordWait(ms: number): void {
  bursts.set((state) => ({
    ...state,
    waits: { count: state.waits.count + 1, totalMs: state.waits.totalMs + ms },
  }));
}
