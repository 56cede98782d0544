// @vitest-environment jsdom
import { cleanup, render, renderHook, screen } from '@testing-library/react';
import type { ReactNode } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PacedFetch } from '../../src/http/paced-fetch.js';
import { createPacer } from '../../src/pacer/index.js';
import {
  PacerProvider,
  type PacerProviderProps,
  usePacer,
  useRateLimitedFetch,
} from '../../src/react/index.js';
import { server } from '../support/msw.js';
import { API, itemsApi, pacedOnClock, settle } from './support.js';

afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
});

const limits = { limit: 5, windowMs: 1000 } as const;

describe('PacerProvider', () => {
  it('hands its paced fetch to the hooks below it', async () => {
    const { api } = pacedOnClock({ limits });
    server.use(itemsApi().handler);
    const wrapper = ({ children }: { children: ReactNode }) => (
      <PacerProvider fetch={api}>{children}</PacerProvider>
    );
    const { result } = renderHook(() => useRateLimitedFetch(`${API}/items/7`), { wrapper });
    await settle(() => result.current.status === 'success');
    expect(result.current.data).toEqual({ id: '7' });
    expect(api.pacer.getSnapshot().admitted).toBe(1);
  });

  it('takes a pacer instead, and paces the hooks below it with it', async () => {
    const { api } = pacedOnClock({ limits });
    server.use(itemsApi().handler);
    const wrapper = ({ children }: { children: ReactNode }) => (
      <PacerProvider pacer={api.pacer}>{children}</PacerProvider>
    );
    const { result } = renderHook(
      () => ({ pacer: usePacer(), state: useRateLimitedFetch(`${API}/items/1`) }),
      { wrapper },
    );
    expect(result.current.pacer).toBe(api.pacer);
    await settle(() => result.current.state.status === 'success');
    expect(api.pacer.getSnapshot().admitted).toBe(1);
  });

  it('gives way to a source passed to the hook', async () => {
    const outer = pacedOnClock({ limits });
    const inner = pacedOnClock({ limits });
    server.use(itemsApi().handler);
    const wrapper = ({ children }: { children: ReactNode }) => (
      <PacerProvider fetch={outer.api}>{children}</PacerProvider>
    );
    const { result } = renderHook(
      () => useRateLimitedFetch(`${API}/items/1`, { fetch: inner.api }),
      { wrapper },
    );
    await settle(() => result.current.status === 'success');
    expect(inner.api.pacer.getSnapshot().admitted).toBe(1);
    expect(outer.api.pacer.getSnapshot().admitted).toBe(0);
  });

  it('refuses both a fetch and a pacer, and neither', () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const { api } = pacedOnClock({ limits });
    const both = { fetch: api, pacer: api.pacer } as unknown as PacerProviderProps;
    expect(() => render(<PacerProvider {...both} />)).toThrow(
      'Give <PacerProvider> either `fetch` or `pacer`, not both',
    );
    const neither = {} as unknown as PacerProviderProps;
    expect(() => render(<PacerProvider {...neither} />)).toThrow(
      'Expected `pacer` to be a paced fetch (createPacedFetch) or a pacer (createPacer), got `undefined`',
    );
    const plain = { fetch: globalThis.fetch as unknown as PacedFetch };
    expect(() => render(<PacerProvider {...plain} />)).toThrow(
      'Expected `fetch` to be a paced fetch',
    );
  });

  it('names the hook that found no pacer', () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    expect(() => renderHook(() => useRateLimitedFetch(`${API}/x`))).toThrow(
      '[fetch-pacer] useRateLimitedFetch found no pacer: wrap the tree in <PacerProvider fetch={pacedFetch}> or pass a paced fetch (or a pacer) to the hook.',
    );
  });

  it('renders its children', () => {
    render(
      <PacerProvider pacer={createPacer({ limits })}>
        <p>inside</p>
      </PacerProvider>,
    );
    expect(screen.getByText('inside')).toBeTruthy();
  });
});
