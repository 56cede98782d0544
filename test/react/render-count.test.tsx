// @vitest-environment jsdom
import { act, cleanup, render } from '@testing-library/react';
import { Profiler } from 'react';
import { afterEach, expect, it } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { createPacedFetch, type PacedFetch } from '../../src/http/paced-fetch.js';
import { tokenBucket } from '../../src/index.js';
import { PacerProvider, useRateLimitedFetch } from '../../src/react/index.js';
import { createManualClock } from '../../src/testing/index.js';
import { server } from '../support/msw.js';
import { API, advance, itemsApi, pacedOnClock, renderCounting, settle } from './support.js';

afterEach(cleanup);

function Item({ id }: { id: number }) {
  // Reads only what a list row shows: the projected start is none of its business.
  const { status, data } = useRateLimitedFetch<{ id: string }>(`${API}/items/${id}`);
  return <li>{status === 'success' ? data.id : status}</li>;
}

const ITEMS = 200;

it('renders each of 200 paced rows a bounded number of times on a clock with real noise', {
  timeout: 30_000,
}, async () => {
  // 50 µs of noise per reading, as a browser's performance.now() has (100 µs by default in
  // Chrome, 5 µs cross-origin isolated). Without it, a manual clock hides the O(N²) shape.
  const clock = createManualClock({ jitter: 0.05, seed: 42 });
  const api = createPacedFetch({ limits: perSecond(10, { algorithm: tokenBucket }), clock });
  const backend = itemsApi();
  server.use(backend.handler);
  const renders = new Array<number>(ITEMS).fill(0);
  const count = (id: string) => {
    renders[Number(id)] = (renders[Number(id)] ?? 0) + 1;
  };
  const ids = Array.from({ length: ITEMS }, (_, id) => id);
  const view = render(
    <PacerProvider fetch={api}>
      <ul>
        {ids.map((id) => (
          <Profiler key={id} id={String(id)} onRender={count}>
            <Item id={id} />
          </Profiler>
        ))}
      </ul>
    </PacerProvider>,
  );
  // Time moves in small steps, each its own task as in a browser (React renders per step).
  const done = () => view.container.textContent === ids.join('');
  for (let step = 0; step < 2_000 && !done(); step++) {
    await act(async () => {
      await clock.advanceAsync(25);
    });
  }
  expect(done()).toBe(true);
  expect(backend.hits).toHaveLength(ITEMS);
  const sorted = [...renders].sort((a, b) => a - b);
  const median = sorted[ITEMS / 2] as number;
  // Mount, loading, success: 3 (today's code: median 93, max 192). Bounded per row whatever
  // the length of the list: no row re-renders for what another row did.
  expect(median).toBeLessThanOrEqual(3);
  expect(sorted.at(-1)).toBeLessThanOrEqual(6);
});

interface RowProps {
  readonly api: PacedFetch;
  readonly id: number;
  readonly count: () => void;
}

function StatusRow({ api, id, count }: RowProps) {
  count();
  const { status, data } = useRateLimitedFetch(`${API}/items/${id}`, { fetch: api });
  return <p>{`${status} ${String(data)}`}</p>;
}

function StartRow({ api, id, count }: RowProps) {
  count();
  const { startAt } = useRateLimitedFetch(`${API}/items/${id}`, { fetch: api });
  return <p>{String(startAt)}</p>;
}

it('re-renders a row for a new startAt only if the row reads it', async () => {
  // A token bucket's projections are exact: what this checks is the rendering.
  const { clock, api } = pacedOnClock({
    limits: { limit: 1, windowMs: 1000, algorithm: tokenBucket },
  });
  const backend = itemsApi();
  server.use(backend.handler);
  const first = renderCounting((count) => <StatusRow api={api} id={1} count={count} />);
  await settle(() => first.container.textContent === 'success [object Object]');
  const statusOnly = renderCounting((count) => <StatusRow api={api} id={2} count={count} />);
  const withStart = renderCounting((count) => <StartRow api={api} id={3} count={count} />);
  await settle(() => withStart.container.textContent === '2000');
  const before = [statusOnly.counter.renders, withStart.counter.renders];
  // A task of higher priority cuts in: both requests are now projected a second later.
  void api.pacer.schedule(() => 'urgent', { key: API, priority: 1 });
  await advance(clock, 0);
  expect(withStart.container.textContent).toBe('3000');
  expect(withStart.counter.renders).toBe((before[1] as number) + 1);
  expect(statusOnly.counter.renders).toBe(before[0]);
  expect(statusOnly.container.textContent).toBe('queued undefined');
});
