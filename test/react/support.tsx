import { act, render } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import type { ReactNode } from 'react';
import {
  createPacedFetch,
  type PacedFetch,
  type PacedFetchOptions,
} from '../../src/http/paced-fetch.js';
import { createManualClock, type ManualClock } from '../../src/testing/index.js';
import { turn } from '../support/flush.js';

export const API = 'https://api.test';

/** A paced fetch on a manual clock. */
export function pacedOnClock(options: Omit<PacedFetchOptions, 'clock'>): {
  readonly clock: ManualClock;
  readonly api: PacedFetch;
} {
  const clock = createManualClock();
  return { clock, api: createPacedFetch({ ...options, clock }) };
}

/** One request as the mocked server saw it. */
export interface Hit {
  readonly url: string;
  readonly method: string;
  readonly signal: AbortSignal;
}

/**
 * An API answering `GET /items/:id` with `{ id }`. `hold()` makes the next answers wait until
 * `release()`, to catch a request in flight.
 */
export function itemsApi() {
  const hits: Hit[] = [];
  let gate: { promise: Promise<void>; open: () => void } | undefined;
  const handler = http.all(`${API}/items/:id`, async ({ request, params }) => {
    hits.push({ url: request.url, method: request.method, signal: request.signal });
    if (gate !== undefined) await gate.promise;
    return HttpResponse.json({ id: params['id'] });
  });
  return {
    handler,
    hits,
    paths: () => hits.map((hit) => new URL(hit.url).pathname),
    hold() {
      let open = () => {};
      const promise = new Promise<void>((resolve) => {
        open = resolve;
      });
      gate = { promise, open };
    },
    release() {
      gate?.open();
      gate = undefined;
    },
  };
}

/**
 * Lets async work (msw, response bodies) run, one macrotask turn per `act` so React renders in
 * between, until `condition` holds. No clock moves. Fails loudly instead of hanging.
 */
export async function settle(condition: () => boolean, turns = 200): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (condition()) return;
    await act(turn);
  }
  throw new Error(`condition still false after ${turns} turns: ${condition.toString()}`);
}

/** Moves the manual clock inside `act`, letting promise callbacks run after each timer. */
export async function advance(clock: ManualClock, ms: number): Promise<void> {
  await act(async () => {
    await clock.advanceAsync(ms);
  });
}

/** Renders `ui` and counts the renders of the component calling `count()`. */
export function renderCounting(ui: (count: () => void) => ReactNode) {
  const counter = { renders: 0 };
  const view = render(ui(() => counter.renders++));
  return { ...view, counter };
}

/** Every distinct value a hook rendered, in order (consecutive repeats collapsed). */
export function history<T>() {
  const seen: T[] = [];
  return {
    seen,
    record(value: T): T {
      if (seen.length === 0 || seen[seen.length - 1] !== value) seen.push(value);
      return value;
    },
  };
}
