// @vitest-environment jsdom
import { cleanup, renderHook } from '@testing-library/react';
import { HttpResponse, http } from 'msw';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isHttpError, useRateLimitedFetch } from '../../src/react/index.js';
import { server } from '../support/msw.js';
import { API, pacedOnClock, settle } from './support.js';

afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
});

function api() {
  return pacedOnClock({ limits: { limit: 10, windowMs: 1000 } }).api;
}

describe('useRateLimitedFetch parse modes', () => {
  it('parses JSON by default', async () => {
    const fetch = api();
    server.use(http.get(`${API}/user`, () => HttpResponse.json({ name: 'Ada' })));
    const { result } = renderHook(() =>
      useRateLimitedFetch<{ name: string }>(`${API}/user`, { fetch }),
    );
    await settle(() => result.current.status === 'success');
    expect(result.current.data).toEqual({ name: 'Ada' });
  });

  it('gives undefined for an empty body (204) instead of a JSON SyntaxError', async () => {
    const fetch = api();
    server.use(http.delete(`${API}/user`, () => new HttpResponse(null, { status: 204 })));
    const { result } = renderHook(() =>
      useRateLimitedFetch(`${API}/user`, { fetch, init: { method: 'DELETE' } }),
    );
    await settle(() => result.current.status === 'success');
    expect(result.current.data).toBeUndefined();
  });

  it('ends in error with the SyntaxError of a body that is not JSON', async () => {
    const fetch = api();
    server.use(http.get(`${API}/user`, () => HttpResponse.text('<html>')));
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/user`, { fetch }));
    await settle(() => result.current.status === 'error');
    expect(result.current.error).toBeInstanceOf(SyntaxError);
    expect(result.current.response?.status).toBe(200);
  });

  it("reads text with parse: 'text', and still fails on a 404", async () => {
    const fetch = api();
    server.use(
      http.get(`${API}/readme`, () => HttpResponse.text('# hello')),
      http.get(`${API}/missing`, () => new HttpResponse('nope', { status: 404 })),
    );
    const ok = renderHook(() => useRateLimitedFetch(`${API}/readme`, { fetch, parse: 'text' }));
    const missing = renderHook(() =>
      useRateLimitedFetch(`${API}/missing`, { fetch, parse: 'text' }),
    );
    await settle(() => ok.result.current.status === 'success');
    expect(ok.result.current.data).toBe('# hello');
    await settle(() => missing.result.current.status === 'error');
    expect(isHttpError(missing.result.current.error)).toBe(true);
  });

  it("hands over the Response, whatever its status, with parse: 'response'", async () => {
    const fetch = api();
    server.use(http.get(`${API}/missing`, () => new HttpResponse('nope', { status: 404 })));
    const { result } = renderHook(() =>
      useRateLimitedFetch(`${API}/missing`, { fetch, parse: 'response' }),
    );
    await settle(() => result.current.status === 'success');
    expect(result.current.data).toBeInstanceOf(Response);
    expect(result.current.data?.status).toBe(404);
    expect(await result.current.data?.text()).toBe('nope');
  });

  it('runs a parse function on every response, and reports what it throws', async () => {
    const fetch = api();
    server.use(
      http.get(`${API}/count`, () => HttpResponse.text('41')),
      http.get(`${API}/bad`, () => HttpResponse.text('x')),
    );
    const toNumber = async (response: Response) => {
      const value = Number(await response.text());
      if (Number.isNaN(value)) throw new RangeError('not a number');
      return value + 1;
    };
    const ok = renderHook(() => useRateLimitedFetch(`${API}/count`, { fetch, parse: toNumber }));
    const bad = renderHook(() => useRateLimitedFetch(`${API}/bad`, { fetch, parse: toNumber }));
    await settle(() => ok.result.current.status === 'success');
    expect(ok.result.current.data).toBe(42);
    await settle(() => bad.result.current.status === 'error');
    expect(bad.result.current.error).toBeInstanceOf(RangeError);
  });

  it('throws at render for a parse mode it does not know', () => {
    const fetch = api();
    vi.spyOn(console, 'error').mockImplementation(() => {});
    expect(() =>
      renderHook(() =>
        useRateLimitedFetch(`${API}/x`, { fetch, parse: 'xml' as unknown as 'text' }),
      ),
    ).toThrow("Expected `parse` to be 'json', 'text', 'response' or a function, got `'xml'`");
  });
});
