import { HttpResponse, http } from 'msw';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { tokenBucket } from '../../src/index.js';
import { createManualClock } from '../../src/testing/index.js';
import { stampedFetch } from '../support/backends.js';
import { drive, until } from '../support/flush.js';
import { server } from '../support/msw.js';

/**
 * A page that says it is offline (`navigator.onLine === false`, its `online` event) and a
 * server the network cannot reach until `goOnline()` (msw's network error: fetch's TypeError,
 * as a browser's offline fetch throws). `listening()`: `online` listeners still registered.
 */
function offlinePage() {
  const events = new EventTarget();
  const navigator = { onLine: false };
  let listening = 0;
  vi.stubGlobal('navigator', navigator);
  vi.stubGlobal('addEventListener', (type: string, listener: () => void) => {
    if (type === 'online') listening++;
    events.addEventListener(type, listener);
  });
  vi.stubGlobal('removeEventListener', (type: string, listener: () => void) => {
    if (type === 'online') listening--;
    events.removeEventListener(type, listener);
  });
  server.use(
    http.all('https://api.test/*', () =>
      navigator.onLine ? HttpResponse.json({ ok: true }) : HttpResponse.error(),
    ),
  );
  return {
    listening: () => listening,
    goOnline() {
      navigator.onLine = true;
      events.dispatchEvent(new Event('online'));
    },
  };
}

/** The call's outcome so far: its status, its error, or undefined while it is pending. */
function watch(call: Promise<Response>) {
  const seen: { status?: number; error?: unknown } = {};
  call.then(
    (response) => {
      seen.status = response.status;
    },
    (error: unknown) => {
      seen.error = error;
    },
  );
  return seen;
}

const limits = { limit: 100, windowMs: 1000, algorithm: tokenBucket };

afterEach(() => {
  vi.unstubAllGlobals();
});

// Before, a call whose send failed while the browser was offline spent its retries on backoffs
// that could not succeed (500 ms, then 1 s) and was lost 1.5 s in.
describe('a paced fetch while the page says it is offline', () => {
  it('sends a GET again once the page is online, spending no retry', async () => {
    const clock = createManualClock();
    const page = offlinePage();
    const { fetch, sent } = stampedFetch(clock);
    // No retry at all for a network error: the offline wait is not one.
    const pacedFetch = createPacedFetch({ limits, fetch, clock, retry: { limit: 0 } });
    const call = watch(pacedFetch('https://api.test/items'));
    await until(() => page.listening() === 1);
    await clock.advanceAsync(30_000);
    expect(sent).toHaveLength(1);
    expect(call).toEqual({});
    page.goOnline();
    await drive(clock, pacedFetch.pacer, 40_000);
    await until(() => call.status !== undefined);
    expect(call.status).toBe(200);
    expect(sent.map(({ at }) => at)).toEqual([0, 30_000]);
    expect(page.listening()).toBe(0);
  });

  it('rejects with the network error after `retry.maxRetryAfterMs` offline', async () => {
    const clock = createManualClock();
    const page = offlinePage();
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({
      limits,
      fetch,
      clock,
      retry: { maxRetryAfterMs: 10_000 },
    });
    const call = watch(pacedFetch('https://api.test/items'));
    await until(() => page.listening() === 1);
    await clock.advanceAsync(9_999);
    expect(call).toEqual({});
    await clock.advanceAsync(1);
    await until(() => call.error !== undefined);
    expect(call.error).toBeInstanceOf(TypeError);
    expect(sent).toHaveLength(1);
    expect(page.listening()).toBe(0);
  });

  it('rejects a POST and a call with `retry: false` at once, and an aborted call with its reason', async () => {
    const clock = createManualClock();
    const page = offlinePage();
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({ limits, fetch, clock });
    // A POST may have been processed before the connection was lost: sent once, as online.
    await expect(
      pacedFetch('https://api.test/post', { method: 'POST', body: 'x' }),
    ).rejects.toThrow(TypeError);
    const once = createPacedFetch({ limits, fetch, clock, retry: false });
    await expect(once('https://api.test/once')).rejects.toThrow(TypeError);
    expect(page.listening()).toBe(0);
    const controller = new AbortController();
    const call = pacedFetch('https://api.test/get', { signal: controller.signal });
    await until(() => page.listening() === 1);
    controller.abort(new Error('gone'));
    await expect(call).rejects.toThrow('gone');
    expect(page.listening()).toBe(0);
    page.goOnline();
    await drive(clock, pacedFetch.pacer, 60_000);
    expect(sent).toHaveLength(3);
  });
});
