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
