import { isPacerError, isRateLimitError } from 'fetch-pacer';
import { type FetchStatus, isHttpError, useRateLimitedFetch } from 'fetch-pacer/react';
import { useEffect, useRef, useState } from 'react';
import { type Burst, type Outcome, recordWait, settle } from '../client/bursts';
import { recordDenial } from '../client/timeline-events';
import type { Lane } from '../mock/server';
import { DOT_LABELS, type DotState } from './dot-state';

function outcomeOf(status: FetchStatus, error: unknown): DotState {
  switch (status) {
    case 'idle':
    case 'queued':
      return 'queued';
    case 'blocked':
      return 'blocked';
    case 'loading':
      return 'loading';
    case 'success':
      return 'ok';
    case 'error':
      if (isHttpError(error) && error.status === 429) return 'refused';
      if (isRateLimitError(error)) return 'denied';
      if (isPacerError(error) && error.name === 'PacerDisposedError') return 'cancelled';
      return 'failed';
  }
}

function isSettled(state: DotState): state is Outcome {
  return state !== 'queued' && state !== 'blocked' && state !== 'loading';
}

/** Tells the burst (once) how the request ended. */
function useSettle(burst: Burst, lane: Lane, state: DotState): void {
  const told = useRef(false);
  useEffect(() => {
    if (told.current || !isSettled(state)) return;
    told.current = true;
    settle(burst, lane, state);
    if (state === 'denied') recordDenial(performance.now());
  }, [burst, lane, state]);
}

function Dot({ state, index }: { state: DotState; index: number }) {
  return <i className={`dot dot-${state}`} title={`#${index + 1}: ${DOT_LABELS[state]}`} />;
}

/** One request through the pacer: the way an app would load data. */
export function PacedDot({ burst, index }: { burst: Burst; index: number }) {
  const { status, error } = useRateLimitedFetch(`api/paced/items/${burst.id}-${index}`, {
    fetch: burst.client,
  });
  const state = outcomeOf(status, error);
  useSettle(burst, 'paced', state);
  // How long it waited for its permit, for the mean wait.
  const started = useRef(false);
  useEffect(() => {
    if (started.current || (state !== 'loading' && state !== 'ok')) return;
    started.current = true;
    recordWait(performance.now() - burst.firedAt);
  }, [state, burst]);
  return <Dot state={state} index={index} />;
}

/**
 * One request with plain fetch: sent at once, no pacing, no retry. Started a microtask after
 * mount, so that StrictMode's extra mount does not send it twice (the trick the hook uses).
 */
function usePlainFetch(url: string): DotState {
  const [state, setState] = useState<DotState>('loading');
  useEffect(() => {
    const controller = new AbortController();
    let live = true;
    queueMicrotask(() => {
      if (!live) return;
      fetch(url, { signal: controller.signal }).then(
        (response) => {
          if (live) setState(response.ok ? 'ok' : response.status === 429 ? 'refused' : 'failed');
        },
        () => {
          if (live) setState('failed');
        },
      );
    });
    return () => {
      live = false;
      controller.abort();
    };
  }, [url]);
  return state;
}

export function PlainDot({ burst, index }: { burst: Burst; index: number }) {
  const state = usePlainFetch(`api/unpaced/items/${burst.id}-${index}`);
  useSettle(burst, 'unpaced', state);
  return <Dot state={state} index={index} />;
}

/** The colours, explained. */
export function DotLegend({ states }: { states: readonly DotState[] }) {
  return (
    <ul className="legend" aria-label="Legend">
      {states.map((state) => (
        <li key={state}>
          <i className={`dot dot-${state}`} aria-hidden="true" />
          {DOT_LABELS[state]}
        </li>
      ))}
    </ul>
  );
}
