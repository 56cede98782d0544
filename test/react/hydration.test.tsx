// @vitest-environment jsdom
import { act } from '@testing-library/react';
import type { ReactNode } from 'react';
import { hydrateRoot } from 'react-dom/client';
import { renderToString } from 'react-dom/server';
import { afterEach, expect, it, vi } from 'vitest';
import type { PacedFetch } from '../../src/http/paced-fetch.js';
import { createPacer, type Pacer } from '../../src/pacer/index.js';
import { useBucketLevel, usePacerState, useRateLimitedFetch } from '../../src/react/index.js';
import { createManualClock } from '../../src/testing/index.js';
import { server } from '../support/msw.js';
import { API, itemsApi, pacedOnClock, settle } from './support.js';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Hydrates `html` (the server's) with `ui` in a container; what React complained of, if anything. */
async function hydrate(html: string, ui: ReactNode) {
  const container = document.createElement('div');
  container.innerHTML = html;
  document.body.append(container);
  const errors = vi.spyOn(console, 'error');
  const recoverable = vi.fn();
  await act(async () => {
    hydrateRoot(container, ui, { onRecoverableError: recoverable });
  });
  return { container, errors, recoverable };
}

function Panel({ pacer }: { pacer: Pacer }) {
  const admitted = usePacerState(pacer, (state) => state.admitted);
  const { level } = useBucketLevel(pacer, 'api');
  return <p>{`${admitted} sent, ${level} left`}</p>;
}

it('hydrates server HTML with no mismatch, then shows the live state', async () => {
  const clock = createManualClock();
  const onServer = createPacer({ limits: { limit: 5, windowMs: 1000 }, clock });
  const html = renderToString(<Panel pacer={onServer} />);
  expect(html).toBe('<p>0 sent, 5 left</p>');

  // The browser's pacer has been busy before hydration.
  const client = createPacer({ limits: { limit: 5, windowMs: 1000 }, clock });
  client.tryAcquire('api');
  client.tryAcquire('api');
  const { container, errors, recoverable } = await hydrate(html, <Panel pacer={client} />);
  expect(recoverable).not.toHaveBeenCalled();
  expect(errors).not.toHaveBeenCalled();
  expect(container.textContent).toBe('2 sent, 3 left');
  container.remove();
});

function Row({ api }: { api: PacedFetch }) {
  const { status, data } = useRateLimitedFetch<{ id: string }>(`${API}/items/7`, { fetch: api });
  return <p>{status === 'success' ? `item ${data.id}` : status}</p>;
}

it('renders a request idle on the server and hydrates it with no mismatch, then loads it', async () => {
  const { api: onServer } = pacedOnClock({ limits: { limit: 5, windowMs: 1000 } });
  const html = renderToString(<Row api={onServer} />);
  expect(html).toBe('<p>idle</p>');
  expect(onServer.pacer.getSnapshot().admitted).toBe(0);

  const backend = itemsApi();
  server.use(backend.handler);
  const { api } = pacedOnClock({ limits: { limit: 5, windowMs: 1000 } });
  const { container, errors, recoverable } = await hydrate(html, <Row api={api} />);
  await settle(() => container.textContent === 'item 7');
  expect(recoverable).not.toHaveBeenCalled();
  expect(errors).not.toHaveBeenCalled();
  expect(backend.hits).toHaveLength(1);
  container.remove();
});
