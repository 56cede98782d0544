// @vitest-environment jsdom
import { act, cleanup, renderHook } from '@testing-library/react';
import { StrictMode } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tokenBucket } from '../../src/index.js';
import { useRateLimitedFetch } from '../../src/react/index.js';
import { RequestRunner } from '../../src/react/request-runner.js';
import { server } from '../support/msw.js';
import { API, advance, itemsApi, pacedOnClock, settle } from './support.js';

afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
});

// Exact projections of a token bucket: what these tests check is the hook, not the accounting.
const oneASecond = { limits: { limit: 1, windowMs: 1000, algorithm: tokenBucket } } as const;

/** A paced fetch whose only permit is spent, so the next request waits in the queue. */
async function spentPacer() {
  const paced = pacedOnClock(oneASecond);
  await paced.api.pacer.acquire({ key: API });
  return paced;
}

function setup() {
  const backend = itemsApi();
  server.use(backend.handler);
  return backend;
}

describe('useRateLimitedFetch and the lifecycle of its request', () => {
  it('sends exactly one request under StrictMode (mount, unmount, mount)', async () => {
    const { api } = pacedOnClock(oneASecond);
    const backend = setup();
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: api }), {
      wrapper: StrictMode,
    });
    await settle(() => result.current.status === 'success');
    expect(backend.hits).toHaveLength(1);
    expect(api.pacer.getSnapshot()).toMatchObject({ admitted: 1, queued: 0 });
  });

  it('queues exactly one request under StrictMode when it has to wait', async () => {
    const { clock, api } = await spentPacer();
    const backend = setup();
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: api }), {
      wrapper: StrictMode,
    });
    await settle(() => result.current.status === 'queued' && api.pacer.getSnapshot().queued > 0);
    expect(api.pacer.getSnapshot().queued).toBe(1);
    await advance(clock, 1000);
    await settle(() => result.current.status === 'success');
    expect(backend.hits).toHaveLength(1);
  });

  it('takes a changed input out of the queue, and sends only the new one', async () => {
    const { clock, api } = await spentPacer();
    const backend = setup();
    const { result, rerender } = renderHook(
      ({ id }) => useRateLimitedFetch(`${API}/items/${id}`, { fetch: api }),
      { initialProps: { id: 1 } },
    );
    await settle(() => api.pacer.getSnapshot().queued === 1);
    rerender({ id: 2 });
    expect(result.current).toMatchObject({ status: 'queued', data: undefined });
    await settle(() => api.pacer.getSnapshot().queued === 1);
    await advance(clock, 1000);
    await settle(() => result.current.status === 'success');
    expect(result.current.data).toEqual({ id: '2' });
    expect(backend.paths()).toEqual(['/items/2']);
    expect(api.pacer.getSnapshot().admitted).toBe(2); // the acquire, then item 2 only
  });

  it('aborts a request in flight when the input changes, and ignores its answer', async () => {
    const { api } = pacedOnClock({
      limits: { limit: 10, windowMs: 1000, algorithm: tokenBucket },
    });
    const backend = setup();
    backend.hold();
    const seen: unknown[] = [];
    const { result, rerender } = renderHook(
      ({ id }) => {
        const state = useRateLimitedFetch(`${API}/items/${id}`, { fetch: api });
        seen.push(state.data);
        return state;
      },
      { initialProps: { id: 1 } },
    );
    await settle(() => backend.hits.length === 1);
    rerender({ id: 2 });
    await settle(() => backend.hits.length === 2);
    expect(backend.hits[0]?.signal.aborted).toBe(true);
    backend.release();
    await settle(() => result.current.status === 'success');
    expect(result.current.data).toEqual({ id: '2' });
    expect(seen).not.toContainEqual({ id: '1' });
  });

  it('frees its place in the queue when the component unmounts', async () => {
    const { clock, api } = await spentPacer();
    const backend = setup();
    const { unmount } = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: api }));
    await settle(() => api.pacer.getSnapshot().queued === 1);
    unmount();
    expect(api.pacer.getSnapshot().queued).toBe(0);
    await advance(clock, 5000);
    expect(backend.hits).toHaveLength(0);
    // The permit it never took is still there for others.
    expect(api.pacer.inspect(API).level).toBe(1);
  });

  it('aborts its request in flight when the component unmounts, without a state update', async () => {
    const { api } = pacedOnClock(oneASecond);
    const backend = setup();
    backend.hold();
    const errors = vi.spyOn(console, 'error');
    let renders = 0;
    const { unmount } = renderHook(() => {
      renders++;
      return useRateLimitedFetch(`${API}/items/1`, { fetch: api });
    });
    await settle(() => backend.hits.length === 1);
    const before = renders;
    unmount();
    expect(backend.hits[0]?.signal.aborted).toBe(true);
    backend.release();
    await settle(() => api.pacer.getSnapshot().inFlight === 0);
    expect(renders).toBe(before);
    expect(errors).not.toHaveBeenCalled();
  });

  it('refetch() sends again and keeps the data meanwhile', async () => {
    const { clock, api } = pacedOnClock(oneASecond);
    const backend = setup();
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: api }));
    await settle(() => result.current.status === 'success');
    let done: Promise<void> = Promise.resolve();
    act(() => {
      done = result.current.refetch();
    });
    await settle(() => result.current.status === 'queued');
    expect(result.current.data).toEqual({ id: '1' });
    await advance(clock, 1000);
    await act(() => done);
    expect(result.current.status).toBe('success');
    expect(backend.hits).toHaveLength(2);
  });

  it('abort() takes a waiting request out of the queue and goes idle', async () => {
    const { clock, api } = await spentPacer();
    const backend = setup();
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: api }));
    await settle(() => api.pacer.getSnapshot().queued === 1);
    act(() => result.current.abort());
    expect(result.current.status).toBe('idle');
    expect(api.pacer.getSnapshot().queued).toBe(0);
    await advance(clock, 2000);
    expect(backend.hits).toHaveLength(0);
    // Nothing to abort now: no change.
    const before = result.current;
    act(() => result.current.abort());
    expect(result.current.status).toBe(before.status);
  });

  it('treats an abort through init.signal like abort(): idle, not an error', async () => {
    const { api } = await spentPacer();
    setup();
    const controller = new AbortController();
    const { result } = renderHook(() =>
      useRateLimitedFetch(`${API}/items/1`, { fetch: api, init: { signal: controller.signal } }),
    );
    await settle(() => api.pacer.getSnapshot().queued === 1);
    act(() => controller.abort());
    await settle(() => result.current.status === 'idle');
    expect(result.current.error).toBeUndefined();
    expect(api.pacer.getSnapshot().queued).toBe(0);
  });

  it('sends nothing while enabled is false, then loads when it turns true', async () => {
    const { api } = pacedOnClock(oneASecond);
    const backend = setup();
    const { result, rerender } = renderHook(
      ({ enabled }) => useRateLimitedFetch(`${API}/items/1`, { fetch: api, enabled }),
      { initialProps: { enabled: false } },
    );
    await settle(() => true);
    expect(result.current.status).toBe('idle');
    expect(backend.hits).toHaveLength(0);
    rerender({ enabled: true });
    await settle(() => result.current.status === 'success');
    expect(backend.hits).toHaveLength(1);
  });

  it('goes back to idle, with no data, when the input becomes null', async () => {
    const { api } = pacedOnClock(oneASecond);
    setup();
    const { result, rerender } = renderHook(
      ({ url }: { url: string | null }) => useRateLimitedFetch(url, { fetch: api }),
      { initialProps: { url: `${API}/items/1` as string | null } },
    );
    await settle(() => result.current.status === 'success');
    rerender({ url: null });
    expect(result.current).toMatchObject({ status: 'idle', data: undefined });
  });

  it('with keepPreviousData, shows the previous data while the new input waits', async () => {
    const { clock, api } = pacedOnClock(oneASecond);
    setup();
    const { result, rerender } = renderHook(
      ({ id }) => useRateLimitedFetch(`${API}/items/${id}`, { fetch: api, keepPreviousData: true }),
      { initialProps: { id: 1 } },
    );
    await settle(() => result.current.status === 'success');
    rerender({ id: 2 });
    expect(result.current).toMatchObject({ status: 'queued', data: { id: '1' } });
    await advance(clock, 1000);
    await settle(() => result.current.status === 'success');
    expect(result.current.data).toEqual({ id: '2' });
  });

  it('compares init by value: a new inline object sends nothing, a new header refetches', async () => {
    const { clock, api } = pacedOnClock({
      limits: { limit: 10, windowMs: 1000, algorithm: tokenBucket },
    });
    const backend = setup();
    const { result, rerender } = renderHook(
      ({ lang }) =>
        useRateLimitedFetch(`${API}/items/1`, {
          fetch: api,
          init: { headers: { 'accept-language': lang }, signal: AbortSignal.timeout(60_000) },
        }),
      { initialProps: { lang: 'en' } },
    );
    await settle(() => result.current.status === 'success');
    rerender({ lang: 'en' });
    rerender({ lang: 'en' });
    await settle(() => true);
    expect(backend.hits).toHaveLength(1);
    rerender({ lang: 'fr' });
    await advance(clock, 0);
    await settle(() => backend.hits.length === 2 && result.current.status === 'success');
  });

  it('compares a Request input by value too', async () => {
    const { api } = pacedOnClock({
      limits: { limit: 10, windowMs: 1000, algorithm: tokenBucket },
    });
    const backend = setup();
    const { result, rerender } = renderHook(
      ({ id }) => useRateLimitedFetch(new Request(`${API}/items/${id}`), { fetch: api }),
      { initialProps: { id: 1 } },
    );
    await settle(() => result.current.status === 'success');
    rerender({ id: 1 });
    await settle(() => true);
    expect(backend.hits).toHaveLength(1);
    rerender({ id: 2 });
    await settle(() => result.current.status === 'success' && backend.hits.length === 2);
    expect(result.current.data).toEqual({ id: '2' });
  });
});

describe('RequestRunner', () => {
  it('reports nothing from a run once it was stopped, even when its answer arrives', async () => {
    const { api } = pacedOnClock(oneASecond);
    const backend = setup();
    backend.hold();
    const report = vi.fn();
    const runner = new RequestRunner<unknown>(report);
    const done = runner.start({
      input: `${API}/items/1`,
      init: undefined,
      source: api,
      pacer: api.pacer,
      request: 'r1',
      pacing: {},
      parse: 'json',
    });
    await settle(() => backend.hits.length === 1);
    const reports = report.mock.calls.length;
    expect(runner.stop()).toBe(true);
    backend.release();
    await done;
    await settle(() => api.pacer.getSnapshot().inFlight === 0);
    expect(report).toHaveBeenCalledTimes(reports);
    expect(runner.stop()).toBe(false);
  });
});
