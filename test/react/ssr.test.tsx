// @vitest-environment node
import { renderToString } from 'react-dom/server';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPacedFetch, type PacedFetch } from '../../src/http/paced-fetch.js';
import { createPacer, type Pacer } from '../../src/pacer/index.js';
import { usePacerState, useRateLimitedFetch } from '../../src/react/index.js';

function Status({ pacer }: { pacer: Pacer }) {
  const { queued, admitted } = usePacerState(pacer);
  return <p>{`${queued} queued, ${admitted} sent`}</p>;
}

function User({ url, api }: { url: string | null; api: PacedFetch }) {
  const { status } = useRateLimitedFetch(url, { fetch: api });
  return <p>{status}</p>;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('fetch-pacer/react on the server', () => {
  it('reads no clock and starts no timer when imported', async () => {
    const now = vi.spyOn(performance, 'now');
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    const setIntervalSpy = vi.spyOn(globalThis, 'setInterval');
    vi.resetModules();
    const react = await import('../../src/react/index.js');
    expect(typeof react.useRateLimitedFetch).toBe('function');
    expect(now).not.toHaveBeenCalled();
    expect(setTimeoutSpy).not.toHaveBeenCalled();
    expect(setIntervalSpy).not.toHaveBeenCalled();
  });

  it('renders usePacerState from the idle snapshot, without reading the pacer or its clock', () => {
    const clock = { now: vi.fn(() => 0), setTimeout: vi.fn(), clearTimeout: vi.fn() };
    const pacer = createPacer({ limits: { limit: 1, windowMs: 1000 }, clock });
    const getSnapshot = vi.fn(pacer.getSnapshot);
    const watched: Pacer = { ...pacer, getSnapshot };
    clock.now.mockClear();
    expect(renderToString(<Status pacer={watched} />)).toBe('<p>0 queued, 0 sent</p>');
    expect(getSnapshot).not.toHaveBeenCalled();
    expect(clock.now).not.toHaveBeenCalled();
    expect(clock.setTimeout).not.toHaveBeenCalled();
  });

  it('renders useRateLimitedFetch as idle, and sends nothing', async () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    const api = createPacedFetch({ limits: { limit: 1, windowMs: 1000 } });
    expect(renderToString(<User url="https://api.test/user" api={api} />)).toBe('<p>idle</p>');
    expect(renderToString(<User url={null} api={api} />)).toBe('<p>idle</p>');
    await Promise.resolve();
    expect(fetchSpy).not.toHaveBeenCalled();
    expect(setTimeoutSpy).not.toHaveBeenCalled();
    expect(api.pacer.getSnapshot().admitted).toBe(0);
  });
});
