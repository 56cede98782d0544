// @vitest-environment jsdom
import { cleanup, renderHook } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { afterEach, describe, expect, it } from 'vitest';
import { createPacedFetch, type FetchFunction } from '../../src/http/paced-fetch.js';
import { tokenBucket } from '../../src/index.js';
import { createPacer } from '../../src/pacer/index.js';
import type { TaskProgress } from '../../src/pacer/types.js';
import { usePacedFetch, useRateLimitedFetch } from '../../src/react/index.js';
import { fetchOf } from '../../src/react/source.js';
import { createManualClock } from '../../src/testing/index.js';
import { server } from '../support/msw.js';
import { API, advance, history, itemsApi, settle } from './support.js';

afterEach(cleanup);

// Exact projections of a token bucket: what these tests check is the hook, not the accounting.
const limits = { limit: 5, windowMs: 1000, algorithm: tokenBucket } as const;

/** A fetch of the caller's own, which stamps what it sends: proof that it was the one called. */
function ownFetch() {
  const sent: string[] = [];
  const fetch: FetchFunction = (request) => {
    sent.push(new URL(request.url).pathname);
    request.headers.set('x-sent-by', 'own-fetch');
    return globalThis.fetch(request);
  };
  return { fetch, sent };
}

/** A promise the test resolves when it wants the server to answer. */
function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('useRateLimitedFetch calls the paced fetch it is given, as it is', () => {
  it('sends through its own fetch', async () => {
    const own = ownFetch();
    let header: string | null = null;
    server.use(
      http.get(`${API}/me`, ({ request }) => {
        header = request.headers.get('x-sent-by');
        return HttpResponse.json({ name: 'Ada' });
      }),
    );
    const api = createPacedFetch({ limits, clock: createManualClock(), fetch: own.fetch });
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/me`, { fetch: api }));
    await settle(() => result.current.status === 'success');
    expect(result.current.data).toEqual({ name: 'Ada' });
    expect(own.sent).toEqual(['/me']);
    expect(header).toBe('own-fetch');
  });

  it('lets its key function decide the key, unless the hook gives one', async () => {
    server.use(itemsApi().handler);
    const api = createPacedFetch({
      limits,
      learn: { slowStart: false }, // the levels are the bucket's, not a slow start's
      clock: createManualClock(),
      key: () => 'tenant-a',
    });
    const derived = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: api }));
    await settle(() => derived.result.current.status === 'success');
    expect(api.pacer.inspect('tenant-a').level).toBe(4);
    expect(api.pacer.inspect(API).level).toBe(5);
    const given = renderHook(() =>
      useRateLimitedFetch(`${API}/items/2`, { fetch: api, key: 'tenant-b' }),
    );
    await settle(() => given.result.current.status === 'success');
    expect(api.pacer.inspect('tenant-b').level).toBe(4);
    expect(api.pacer.inspect('tenant-a').level).toBe(4);
  });

  it('returns the 429 without a retry when its retry is false', async () => {
    let calls = 0;
    server.use(
      http.get(`${API}/busy`, () => {
        calls++;
        return new HttpResponse('slow down', { status: 429, headers: { 'retry-after': '1' } });
      }),
    );
    const clock = createManualClock();
    const api = createPacedFetch({ limits, clock, retry: false });
    const statuses = history<string>();
    const { result } = renderHook(() => {
      const state = useRateLimitedFetch(`${API}/busy`, { fetch: api, parse: 'response' });
      statuses.record(state.status);
      return state;
    });
    await settle(() => result.current.status === 'success');
    expect(result.current.data?.status).toBe(429);
    await advance(clock, 5000);
    expect(calls).toBe(1);
    expect(statuses.seen).not.toContain('blocked');
  });

  it('shows each attempt of its retries: blocked with the Retry-After of each 429', async () => {
    let calls = 0;
    server.use(
      http.get(`${API}/busy`, () => {
        calls++;
        return calls < 3
          ? new HttpResponse(null, { status: 429, headers: { 'retry-after': String(calls) } })
          : HttpResponse.json({ ok: true });
      }),
    );
    const clock = createManualClock();
    const api = createPacedFetch({ limits, clock, retry: { limit: 2 } });
    const retryAts: number[] = [];
    const { result } = renderHook(() => {
      const state = useRateLimitedFetch(`${API}/busy`, { fetch: api });
      if (state.status === 'blocked' && retryAts.at(-1) !== state.retryAt) {
        retryAts.push(state.retryAt);
      }
      return state;
    });
    await settle(() => result.current.status === 'blocked');
    await advance(clock, 1000);
    await settle(() => calls === 2 && result.current.status === 'blocked');
    await advance(clock, 2000);
    await settle(() => result.current.status === 'success');
    // The second 429 came at 1000 and asked for 2 s more.
    expect(retryAts).toEqual([1000, 3000]);
    expect(calls).toBe(3);
  });
});

describe('useRateLimitedFetch and a refused attempt', () => {
  it('stays loading until the 429 arrives, then is blocked until its Retry-After', async () => {
    let calls = 0;
    const refusal = gate();
    const success = gate();
    server.use(
      http.get(`${API}/busy`, async () => {
        calls++;
        if (calls > 1) {
          await success.opened;
          return HttpResponse.json({ ok: true });
        }
        await refusal.opened;
        return new HttpResponse(null, { status: 429, headers: { 'retry-after': '2' } });
      }),
    );
    const clock = createManualClock();
    const api = createPacedFetch({ limits, clock });
    const statuses = history<string>();
    const { result } = renderHook(() => {
      const state = useRateLimitedFetch(`${API}/busy`, { fetch: api });
      statuses.record(state.status);
      return state;
    });
    await settle(() => calls === 1 && result.current.status === 'loading');
    refusal.open();
    await settle(() => result.current.status === 'blocked');
    expect(result.current.retryAt).toBe(2000);
    await advance(clock, 2000);
    await settle(() => calls === 2 && result.current.status === 'loading');
    success.open();
    await settle(() => result.current.status === 'success');
    expect(statuses.seen).toEqual(['queued', 'loading', 'blocked', 'loading', 'success']);
  });
});

describe('a bare pacer as the source', () => {
  it('gets one default paced fetch, shared by every hook of that pacer', async () => {
    const pacer = createPacer({ limits, clock: createManualClock() });
    expect(fetchOf(pacer)).toBe(fetchOf(pacer));
    expect(fetchOf(pacer).pacer).toBe(pacer);
    expect(fetchOf(createPacer({ limits }))).not.toBe(fetchOf(pacer));
    server.use(itemsApi().handler);
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/items/1`, { fetch: pacer }));
    await settle(() => result.current.status === 'success');
    // The default paced fetch keys by origin.
    expect(pacer.inspect(API).level).toBe(4);
  });

  it('returns a paced fetch as it is', () => {
    const api = createPacedFetch({ limits, clock: createManualClock() });
    expect(fetchOf(api)).toBe(api);
  });
});

describe('usePacedFetch calls the paced fetch it is given, as it is', () => {
  it('sends through its own fetch and passes per-call pacing on, onProgress included', async () => {
    const own = ownFetch();
    server.use(itemsApi().handler);
    const clock = createManualClock();
    const api = createPacedFetch({
      limits: { limit: 1, windowMs: 1000, algorithm: tokenBucket },
      clock,
      fetch: own.fetch,
    });
    const { result } = renderHook(() => usePacedFetch(api));
    await result.current(`${API}/items/1`, { pacing: { key: 'reports' } });
    const seen: TaskProgress[] = [];
    const call = result.current(`${API}/items/2`, {
      pacing: { key: 'reports', onProgress: (progress) => seen.push(progress) },
    });
    await settle(() => seen.length === 1);
    expect(seen).toEqual([{ state: 'queued', startAt: 1000 }]);
    await advance(clock, 1000);
    expect((await call).status).toBe(200);
    expect(seen).toEqual([{ state: 'queued', startAt: 1000 }, { state: 'started' }]);
    expect(own.sent).toEqual(['/items/1', '/items/2']);
  });

  it('rejects a malformed pacing with the paced fetch’s TypeError', async () => {
    const api = createPacedFetch({ limits, clock: createManualClock() });
    const { result } = renderHook(() => usePacedFetch(api));
    await expect(
      result.current(`${API}/items/1`, { pacing: { key: 7 as unknown as string } }),
    ).rejects.toThrow('[fetch-pacer] Expected `pacing.key` to be a string, got `7` (number)');
  });
});
