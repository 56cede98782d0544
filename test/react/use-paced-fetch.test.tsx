// @vitest-environment jsdom
import { act, cleanup, renderHook } from '@testing-library/react';
import { StrictMode } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { tokenBucket } from '../../src/index.js';
import { isAbortError, usePacedFetch, useRateLimitedFetch } from '../../src/react/index.js';
import { server } from '../support/msw.js';
import { API, advance, itemsApi, pacedOnClock, settle } from './support.js';

afterEach(cleanup);

// Exact projections of a token bucket: what these tests check is the hook, not the accounting.
const oneASecond = { limits: { limit: 1, windowMs: 1000, algorithm: tokenBucket } } as const;

/** Where a promise stands, without awaiting it. */
function track<T>(promise: Promise<T>) {
  const state: { settled: boolean; value?: T; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  );
  return state;
}

describe('usePacedFetch, the fetch bound to a component', () => {
  it('is paced like every request of its pacer', async () => {
    const { clock, api } = pacedOnClock(oneASecond);
    const backend = itemsApi();
    server.use(backend.handler);
    const { result } = renderHook(() => usePacedFetch(api));
    const first = track(result.current(`${API}/items/1`));
    const second = track(result.current(`${API}/items/2`, { method: 'POST' }));
    await settle(() => first.settled);
    expect((first.value as Response).status).toBe(200);
    expect(second.settled).toBe(false);
    expect(api.pacer.getSnapshot().queued).toBe(1);
    await advance(clock, 1000);
    await settle(() => second.settled);
    expect(backend.hits.map((hit) => hit.method)).toEqual(['GET', 'POST']);
  });

  it('keeps its identity across renders', () => {
    const { api } = pacedOnClock(oneASecond);
    const { result, rerender } = renderHook(() => usePacedFetch(api));
    const first = result.current;
    rerender();
    expect(result.current).toBe(first);
  });

  it('aborts what it sent when the component unmounts, and refuses calls afterwards', async () => {
    const { api } = pacedOnClock(oneASecond);
    const backend = itemsApi();
    server.use(backend.handler);
    backend.hold();
    const { result, unmount } = renderHook(() => usePacedFetch(api));
    const bound = result.current;
    const inFlight = track(bound(`${API}/items/1`));
    const waiting = track(bound(`${API}/items/2`));
    await settle(() => backend.hits.length === 1);
    expect(api.pacer.getSnapshot()).toMatchObject({ inFlight: 1, queued: 1 });
    unmount();
    await settle(() => inFlight.settled && waiting.settled);
    expect(isAbortError(inFlight.error)).toBe(true);
    expect(isAbortError(waiting.error)).toBe(true);
    expect(String((waiting.error as Error).message)).toMatch(/component unmounted/);
    expect(api.pacer.getSnapshot().queued).toBe(0);
    const late = track(bound(`${API}/items/3`));
    await settle(() => late.settled);
    expect(isAbortError(late.error)).toBe(true);
    backend.release();
    expect(backend.hits).toHaveLength(1);
  });

  it('still works after StrictMode mounts, unmounts and mounts the component', async () => {
    const { api } = pacedOnClock(oneASecond);
    const backend = itemsApi();
    server.use(backend.handler);
    const { result } = renderHook(() => usePacedFetch(api), { wrapper: StrictMode });
    await settle(() => true);
    const call = track(result.current(`${API}/items/1`));
    await settle(() => call.settled);
    expect((call.value as Response).status).toBe(200);
  });

  it('honours the caller signal and per-call pacing', async () => {
    const { clock, api } = pacedOnClock(oneASecond);
    const backend = itemsApi();
    server.use(backend.handler);
    const { result } = renderHook(() => usePacedFetch(api));
    const controller = new AbortController();
    const a = track(result.current(`${API}/items/1`, { pacing: { key: 'reports', cost: 1 } }));
    const b = track(
      result.current(`${API}/items/2`, { pacing: { key: 'reports' }, signal: controller.signal }),
    );
    await settle(() => a.settled);
    expect(api.pacer.inspect('reports').queued).toBe(1);
    act(() => controller.abort());
    await settle(() => b.settled);
    expect(isAbortError(b.error)).toBe(true);
    await advance(clock, 1000);
    expect(backend.hits).toHaveLength(1);
  });

  it('comes with useRateLimitedFetch, for the clicks of a component that also loads', async () => {
    const { api } = pacedOnClock({
      limits: { limit: 5, windowMs: 1000, algorithm: tokenBucket },
    });
    const backend = itemsApi();
    server.use(backend.handler);
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: api }));
    await settle(() => result.current.status === 'success');
    const post = track(result.current.fetch(`${API}/items/1`, { method: 'PUT' }));
    await settle(() => post.settled);
    expect(backend.hits.map((hit) => hit.method)).toEqual(['GET', 'PUT']);
  });
});
