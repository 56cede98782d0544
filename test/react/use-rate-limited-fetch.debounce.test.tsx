// @vitest-environment jsdom
import { act, cleanup, renderHook } from '@testing-library/react';
import { StrictMode } from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { useRateLimitedFetch } from '../../src/react/index.js';
import { server } from '../support/msw.js';
import { API, itemsApi, pacedOnClock, settle } from './support.js';

// Only the debounce's timers are fake: the pacer runs on its manual clock, msw and React on
// their own macrotasks.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
});

afterEach(() => {
  cleanup();
  vi.useRealTimers();
});

function search(debounceMs: number, options: { strict?: boolean } = {}) {
  const { api } = pacedOnClock({ limits: { limit: 10, windowMs: 1000 } });
  const backend = itemsApi();
  server.use(backend.handler);
  const hook = renderHook(
    ({ query }: { query: string | null }) =>
      useRateLimitedFetch(query === null ? null : `${API}/items/${query}`, {
        fetch: api,
        debounceMs,
      }),
    {
      initialProps: { query: 'a' as string | null },
      ...(options.strict === true ? { wrapper: StrictMode } : {}),
    },
  );
  return { api, backend, ...hook };
}

/** Moves the fake timers inside `act`. */
async function wait(ms: number): Promise<void> {
  await act(async () => {
    await vi.advanceTimersByTimeAsync(ms);
  });
}

describe('useRateLimitedFetch with debounceMs', () => {
  it('sends only the last input once the typing stops for debounceMs', async () => {
    const { backend, result, rerender } = search(300);
    await wait(200);
    rerender({ query: 'ab' });
    await wait(200);
    rerender({ query: 'abc' });
    await wait(299);
    expect(backend.hits).toHaveLength(0);
    // Waiting for the debounce is waiting to be sent: queued, no projection yet.
    expect(result.current).toMatchObject({ status: 'queued', startAt: undefined });
    await wait(1);
    await settle(() => result.current.status === 'success');
    expect(backend.paths()).toEqual(['/items/abc']);
    expect(result.current.data).toEqual({ id: 'abc' });
  });

  it('leaves the request in flight alone while the next one waits, and aborts it on sending', async () => {
    const { backend, result, rerender } = search(300);
    backend.hold();
    await wait(300);
    await settle(() => backend.hits.length === 1);
    const inFlight = backend.hits[0]?.signal;
    rerender({ query: 'ab' });
    await wait(299);
    expect(inFlight?.aborted).toBe(false);
    await wait(1);
    await settle(() => backend.hits.length === 2);
    // Superseded by the request now sent, as without a debounce.
    expect(inFlight?.aborted).toBe(true);
    backend.release();
    await settle(() => result.current.status === 'success');
    expect(result.current.data).toEqual({ id: 'ab' });
  });

  it('sends nothing when the input goes away, or the component unmounts, within the wait', async () => {
    const first = search(300);
    first.rerender({ query: null });
    await wait(1_000);
    expect(first.result.current.status).toBe('idle');
    expect(first.backend.hits).toHaveLength(0);
    const second = search(300);
    second.unmount();
    await wait(1_000);
    expect(second.backend.hits).toHaveLength(0);
    expect(second.api.pacer.getSnapshot().admitted).toBe(0);
  });

  it('sends once under StrictMode, after the wait', async () => {
    const { backend, result } = search(100, { strict: true });
    await wait(100);
    await settle(() => result.current.status === 'success');
    expect(backend.hits).toHaveLength(1);
  });

  it('sends at once on refetch(), and abort() drops the waiting request (idle)', async () => {
    const { backend, result, rerender } = search(300);
    await act(() => result.current.refetch());
    expect(backend.paths()).toEqual(['/items/a']);
    rerender({ query: 'ab' });
    act(() => result.current.abort());
    expect(result.current.status).toBe('idle');
    await wait(1_000);
    expect(backend.paths()).toEqual(['/items/a']);
  });

  it('rejects a debounceMs that is not a finite number >= 0, and a misspelt option, naming it', () => {
    const { api } = pacedOnClock({ limits: { limit: 1, windowMs: 1000 } });
    const render = (debounceMs: unknown) => () =>
      renderHook(() =>
        useRateLimitedFetch(`${API}/items/1`, { fetch: api, debounceMs: debounceMs as number }),
      );
    expect(render(-1)).toThrow(/Expected `debounceMs` to be a finite number >= 0 \(ms\), got `-1`/);
    expect(render(Number.NaN)).toThrow(RangeError);
    expect(render('300')).toThrow(TypeError);
    const misspelt = () =>
      renderHook(() =>
        useRateLimitedFetch(`${API}/items/1`, { fetch: api, debounce: 300 } as {
          fetch: typeof api;
        }),
      );
    expect(misspelt).toThrow(
      /Unknown option `debounce` in useRateLimitedFetch\(\): did you mean `debounceMs`\?/,
    );
  });
});
