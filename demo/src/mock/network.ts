/** The header that carries when a request was sent, in `performance.now()` ms. */
export const SENT_AT = 'x-demo-sent-at';

/**
 * The simulated network is instant. msw answers in this very tab, so a burst of requests
 * queues for a while between `fetch()` and the handler, and would reach the mock server
 * bunched together, a jitter no client-side timing can avoid. So each API request carries the
 * moment it was sent, and the mock server counts it then: what you see is the pacer's own
 * timing. (A real API should get a little margin for jitter.)
 */
export function installInstantNetwork(): void {
  const send = globalThis.fetch.bind(globalThis);
  globalThis.fetch = (input, init) => {
    const request = new Request(input, init);
    if (new URL(request.url).pathname.includes('/api/')) {
      request.headers.set(SENT_AT, String(performance.now()));
    }
    return send(request);
  };
}

/**
 * The outbox panel's own network switch, so a visitor can go offline without DevTools: the
 * outbox reads it as the platform's online state (its `network` option), and a write sent
 * while it is off fails as a real offline fetch does (a `TypeError`), so the entry stays.
 */
const OFFLINE = 'fetch-pacer-demo:offline';

export const demoNetwork = (() => {
  // Kept for the tab's reloads: "go offline, queue writes, reload" must find it still off.
  let online = readSession(OFFLINE) !== '1';
  const listeners = new Set<() => void>();
  return {
    isOnline: () => online,
    setOnline(next: boolean): void {
      if (next === online) return;
      online = next;
      writeSession(OFFLINE, next ? '0' : '1');
      for (const listener of [...listeners]) listener();
    },
    subscribe(listener: () => void): () => void {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    send(request: Request, fetch: (request: Request) => Promise<Response>): Promise<Response> {
      if (!online) return Promise.reject(new TypeError('Failed to fetch (the demo is offline)'));
      return fetch(request);
    },
  };
})();

/** The database of the demo's outbox (`createOutbox({ name: 'fetch-pacer-demo' })`). */
const OUTBOX_DATABASE = 'fetch-pacer-outbox:fetch-pacer-demo';
const VISITED = 'fetch-pacer-demo:visited';

/**
 * The outbox starts empty on a new visit: writes queued in this tab survive its reloads (the
 * point of the panel), but not into another visit, where the visitor would find writes they
 * never queued. Resolves once the old database is gone (or another tab holds it open).
 */
export function forgetEarlierVisits(): Promise<void> {
  if (readSession(VISITED) !== null) return Promise.resolve();
  writeSession(VISITED, String(Date.now()));
  return new Promise((done) => {
    const request = indexedDB.deleteDatabase(OUTBOX_DATABASE);
    request.onsuccess = () => done();
    request.onerror = () => done();
    request.onblocked = () => done();
  });
}

function readSession(key: string): string | null {
  try {
    return sessionStorage.getItem(key);
  } catch {
    return null;
  }
}

function writeSession(key: string, value: string): void {
  try {
    sessionStorage.setItem(key, value);
  } catch {
    // Storage disabled: the switch still works, only not across a reload.
  }
}
