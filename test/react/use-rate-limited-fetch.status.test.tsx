// @vitest-environment jsdom
import { act, cleanup, renderHook } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { afterEach, describe, expect, it } from 'vitest';
import { createPacedFetch } from '../../src/http/index.js';
import { tokenBucket } from '../../src/index.js';
import { isRateLimitError } from '../../src/pacer/index.js';
import { isQueueFullError } from '../../src/pacer/errors.js';
import { isHttpError, useRateLimitedFetch } from '../../src/react/index.js';
import { createManualClock } from '../../src/testing/index.js';
import { server } from '../support/msw.js';
import { API, advance, history, itemsApi, pacedOnClock, settle } from './support.js';

afterEach(cleanup);

// Exact projections of a token bucket: what these tests check is the hook, not the accounting.
const oneASecond = { limits: { limit: 1, windowMs: 1000, algorithm: tokenBucket } } as const;

describe('useRateLimitedFetch statuses', () => {
  it('is idle and sends nothing for a null input', async () => {
    const { api } = pacedOnClock(oneASecond);
    const backend = itemsApi();
    server.use(backend.handler);
    const { result } = renderHook(() => useRateLimitedFetch(null, { fetch: api }));
    await settle(() => true);
    expect(result.current).toMatchObject({ status: 'idle', data: undefined, error: undefined });
    expect(backend.hits).toHaveLength(0);
    expect(api.pacer.getSnapshot().admitted).toBe(0);
  });

  it('goes queued, loading, success when the bucket has a permit', async () => {
    const { api } = pacedOnClock(oneASecond);
    const backend = itemsApi();
    server.use(backend.handler);
    backend.hold();
    const statuses = history<string>();
    const { result } = renderHook(() => {
      const state = useRateLimitedFetch(`${API}/items/1`, { fetch: api });
      statuses.record(state.status);
      return state;
    });
    await settle(() => backend.hits.length === 1 && result.current.status === 'loading');
    expect(result.current.status).toBe('loading');
    backend.release();
    await settle(() => result.current.status === 'success');
    expect(statuses.seen).toEqual(['queued', 'loading', 'success']);
    expect(result.current.data).toEqual({ id: '1' });
    expect(result.current.response?.status).toBe(200);
  });

  it('waits queued with the projected start time, then loads on the dot', async () => {
    const { clock, api } = pacedOnClock(oneASecond);
    const backend = itemsApi();
    server.use(backend.handler);
    const first = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: api }));
    await settle(() => first.result.current.status === 'success');
    const second = renderHook(() => useRateLimitedFetch(`${API}/items/2`, { fetch: api }));
    const third = renderHook(() => useRateLimitedFetch(`${API}/items/3`, { fetch: api }));
    await settle(() => api.pacer.getSnapshot().queued === 2);
    // Each knows when it starts: the pacer projects the whole line, one permit a second.
    expect(second.result.current).toMatchObject({ status: 'queued', startAt: 1000 });
    expect(third.result.current).toMatchObject({ status: 'queued', startAt: 2000 });
    await advance(clock, 999);
    expect(backend.hits).toHaveLength(1);
    await advance(clock, 1);
    await settle(() => second.result.current.status === 'success');
    expect(backend.paths()).toEqual(['/items/1', '/items/2']);
    expect(third.result.current).toMatchObject({ status: 'queued', startAt: 2000 });
    await advance(clock, 1000);
    await settle(() => third.result.current.status === 'success');
    expect(third.result.current.data).toEqual({ id: '3' });
  });

  it('is blocked until the Retry-After of a 429, then retries and succeeds', async () => {
    const { clock, api } = pacedOnClock({
      limits: { limit: 10, windowMs: 1000, algorithm: tokenBucket },
    });
    let calls = 0;
    let answer = () => {};
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    server.use(
      http.get(`${API}/busy`, async () => {
        calls++;
        if (calls === 1) {
          return new HttpResponse('slow down', { status: 429, headers: { 'retry-after': '2' } });
        }
        await answered;
        return HttpResponse.json({ ok: true });
      }),
    );
    const statuses = history<string>();
    const { result } = renderHook(() => {
      const state = useRateLimitedFetch(`${API}/busy`, { fetch: api });
      statuses.record(state.status);
      return state;
    });
    await settle(() => result.current.status === 'blocked');
    expect(result.current.retryAt).toBe(2000);
    await advance(clock, 1999);
    expect(calls).toBe(1);
    expect(result.current.status).toBe('blocked');
    await advance(clock, 1);
    await settle(() => calls === 2 && result.current.status === 'loading');
    answer();
    await settle(() => result.current.status === 'success');
    // Each attempt is sent (loading) before the server's answer blocks the key.
    expect(statuses.seen).toEqual(['queued', 'loading', 'blocked', 'loading', 'success']);
  });

  it('ends in error with the last 429 once the attempts are spent', async () => {
    // A 429 with Retry-After does not spend `retry.limit`: `maxAttempts` bounds it.
    const clock = createManualClock();
    const api = createPacedFetch({
      limits: { limit: 10, windowMs: 1000, algorithm: tokenBucket },
      clock,
      retry: { maxAttempts: 3 },
    });
    let calls = 0;
    server.use(
      http.get(`${API}/always-busy`, () => {
        calls++;
        return new HttpResponse('no', { status: 429, headers: { 'retry-after': '1' } });
      }),
    );
    const statuses = history<string>();
    const { result } = renderHook(() => {
      const state = useRateLimitedFetch(`${API}/always-busy`, { fetch: api });
      statuses.record(state.status);
      return state;
    });
    await settle(() => result.current.status === 'blocked');
    await advance(clock, 1000);
    await settle(() => calls === 2 && result.current.status === 'blocked');
    await advance(clock, 1000);
    await settle(() => result.current.status === 'error');
    expect(calls).toBe(3); // the first try and two retries: maxAttempts 3
    expect(result.current.error).toMatchObject({ name: 'HttpError', status: 429 });
    expect(statuses.seen).toEqual([
      'queued',
      ...['loading', 'blocked', 'loading', 'blocked', 'loading'],
      'error',
    ]);
  });

  it('recovers from an error on refetch', async () => {
    // Told not to retry, so that the first network error is the call's end.
    const { api } = pacedOnClock({
      limits: { limit: 10, windowMs: 1000, algorithm: tokenBucket },
      retry: false,
    });
    let calls = 0;
    server.use(
      http.get(`${API}/flaky`, () => {
        calls++;
        return calls === 1 ? HttpResponse.error() : HttpResponse.json({ ok: true });
      }),
    );
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/flaky`, { fetch: api }));
    await settle(() => result.current.status === 'error');
    await act(() => result.current.refetch());
    expect(result.current).toMatchObject({
      status: 'success',
      data: { ok: true },
      error: undefined,
    });
  });

  it('reports a queued request as blocked while the server blocks its key', async () => {
    const { clock, api } = pacedOnClock(oneASecond);
    const backend = itemsApi();
    server.use(backend.handler);
    api.pacer.blockUntil(API, 5000);
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: api }));
    await settle(() => result.current.status === 'blocked');
    expect(result.current.retryAt).toBe(5000);
    await advance(clock, 5000);
    await settle(() => result.current.status === 'success');
    expect(backend.hits).toHaveLength(1);
  });

  it('waits queued, with no projected start, for a concurrency slot', async () => {
    const { api } = pacedOnClock({
      limits: { limit: 10, windowMs: 1000, algorithm: tokenBucket },
      concurrency: 1,
      learn: { slowStart: false }, // the slot, not a slow start, is what it waits for
    });
    const backend = itemsApi();
    server.use(backend.handler);
    backend.hold();
    const first = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: api }));
    await settle(() => first.result.current.status === 'loading');
    const second = renderHook(() => useRateLimitedFetch(`${API}/items/2`, { fetch: api }));
    await settle(() => api.pacer.getSnapshot().queued === 1);
    // It has its permit's worth of credit; what it waits for is the slot, whose time is unknown.
    expect(second.result.current).toMatchObject({ status: 'queued', startAt: undefined });
    backend.release();
    await settle(() => second.result.current.status === 'success');
    expect(backend.paths()).toEqual(['/items/1', '/items/2']);
  });

  it('ends in error with an HttpError for a 500, keeping the response', async () => {
    const { api } = pacedOnClock(oneASecond);
    server.use(http.get(`${API}/broken`, () => new HttpResponse('oops', { status: 500 })));
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/broken`, { fetch: api }));
    await settle(() => result.current.status === 'error');
    const { error, response } = result.current;
    expect(isHttpError(error)).toBe(true);
    expect(error).toMatchObject({ name: 'HttpError', status: 500 });
    expect(String((error as Error).message)).toMatch(
      /answered 500 Internal Server Error to https:\/\/api\.test\/broken/,
    );
    expect(response?.status).toBe(500);
    expect(await response?.text()).toBe('oops');
  });

  it('ends in error with the TypeError of a network failure once its retries are spent', async () => {
    const { clock, api } = pacedOnClock({
      limits: { limit: 10, windowMs: 1000, algorithm: tokenBucket },
      retry: { random: () => 0 },
    });
    let hits = 0;
    server.use(
      http.get(`${API}/down`, () => {
        hits++;
        return HttpResponse.error();
      }),
    );
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/down`, { fetch: api }));
    // Sent again after backoffs of 500 and 1,000 ms (retry.limit 2), the key blocked meanwhile.
    await settle(() => hits === 1 && result.current.status === 'blocked');
    expect(result.current.retryAt).toBe(500);
    await advance(clock, 500);
    await settle(() => hits === 2 && result.current.status === 'blocked');
    expect(result.current.retryAt).toBe(1500);
    await advance(clock, 1000);
    await settle(() => result.current.status === 'error');
    expect(hits).toBe(3);
    expect(result.current.error).toBeInstanceOf(TypeError);
    expect(result.current.response).toBeUndefined();
  });

  it('is blocked while the page is offline, and succeeds once it is online', async () => {
    const { api } = pacedOnClock({ limits: { limit: 10, windowMs: 1000, algorithm: tokenBucket } });
    let offline = true;
    // jsdom's `navigator.onLine` is always true: shadowed on the instance, deleted after.
    Object.defineProperty(window.navigator, 'onLine', { configurable: true, get: () => !offline });
    try {
      let hits = 0;
      server.use(
        http.get(`${API}/items`, () => {
          hits++;
          return offline ? HttpResponse.error() : HttpResponse.json({ ok: true });
        }),
      );
      const { result } = renderHook(() => useRateLimitedFetch(`${API}/items`, { fetch: api }));
      // Waiting for the network, at most `retry.maxRetryAfterMs` (a minute): not 'loading'.
      await settle(() => hits === 1 && result.current.status === 'blocked');
      expect(result.current.retryAt).toBe(60_000);
      offline = false;
      act(() => {
        window.dispatchEvent(new Event('online'));
      });
      await settle(() => result.current.status === 'success');
      expect(hits).toBe(2);
      expect(result.current.data).toEqual({ ok: true });
    } finally {
      delete (window.navigator as { onLine?: boolean }).onLine;
    }
  });

  it('ends in error with the RateLimitError of a reject-mode pacer', async () => {
    const { api } = pacedOnClock({ ...oneASecond, mode: 'reject' });
    const backend = itemsApi();
    server.use(backend.handler);
    const first = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: api }));
    await settle(() => first.result.current.status === 'success');
    const second = renderHook(() => useRateLimitedFetch(`${API}/items/2`, { fetch: api }));
    await settle(() => second.result.current.status === 'error');
    expect(isRateLimitError(second.result.current.error)).toBe(true);
    expect(second.result.current.error).toMatchObject({ retryAfterMs: 1000 });
    expect(backend.hits).toHaveLength(1);
  });

  it('ends in error with a QueueFullError when the queue is full', async () => {
    const { api } = pacedOnClock({ ...oneASecond, maxQueue: 0 });
    const backend = itemsApi();
    server.use(backend.handler);
    const first = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: api }));
    await settle(() => first.result.current.status === 'success');
    const second = renderHook(() => useRateLimitedFetch(`${API}/items/2`, { fetch: api }));
    await settle(() => second.result.current.status === 'error');
    expect(isQueueFullError(second.result.current.error)).toBe(true);
  });

  it('paces by the key, cost and priority it is given', async () => {
    const { clock, api } = pacedOnClock({
      limits: { limit: 2, windowMs: 1000, algorithm: tokenBucket },
    });
    const backend = itemsApi();
    server.use(backend.handler);
    const heavy = renderHook(() =>
      useRateLimitedFetch(`${API}/items/heavy`, { fetch: api, key: 'tenant-a', cost: 2 }),
    );
    await settle(() => heavy.result.current.status === 'success');
    expect(api.pacer.inspect('tenant-a').level).toBe(0);
    expect(api.pacer.inspect(API).level).toBe(2);
    const low = renderHook(() =>
      useRateLimitedFetch(`${API}/items/low`, { fetch: api, key: 'tenant-a' }),
    );
    const high = renderHook(() =>
      useRateLimitedFetch(`${API}/items/high`, { fetch: api, key: 'tenant-a', priority: 1 }),
    );
    await settle(() => api.pacer.inspect('tenant-a').queued === 2);
    await advance(clock, 500);
    await settle(() => high.result.current.status === 'success');
    expect(low.result.current.status).toBe('queued');
    await advance(clock, 500);
    await settle(() => low.result.current.status === 'success');
    expect(backend.paths()).toEqual(['/items/heavy', '/items/high', '/items/low']);
  });
});
