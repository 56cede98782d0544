import { HttpResponse, http } from 'msw';
import type { ManualClock } from '../../src/testing/index.js';

/** One request as the mocked server saw it. */
export interface Arrival {
  readonly at: number;
  readonly method: string;
  readonly url: string;
  readonly body: string;
  readonly status: number;
}

export interface LimitedBackendOptions {
  readonly clock: ManualClock;
  /** Requests the server accepts per window (an exact sliding log, like a strict API). */
  readonly limit: number;
  readonly windowMs: number;
  /** What a 429 says: `Retry-After` in seconds, as an HTTP-date, or nothing (nginx). */
  readonly retryAfter?: 'seconds' | 'date' | 'none';
  /** Wall-clock epoch ms at manual time 0, for HTTP-dates. */
  readonly epoch?: number;
  readonly origin?: string;
}

/**
 * A server that enforces its own limit with an exact sliding log, independent of the
 * library's code, and answers 429 when a client exceeds it. Time is the test's manual clock.
 */
export function limitedBackend(options: LimitedBackendOptions) {
  const { clock, limit, windowMs, retryAfter = 'seconds', epoch = 0 } = options;
  const origin = options.origin ?? 'https://api.test';
  const arrivals: Arrival[] = [];
  const accepted: number[] = [];
  const handler = http.all(`${origin}/*`, async ({ request }) => {
    // The time the client sent it (see `sentAt`), so msw's own scheduling cannot blur it.
    const at = Number(request.headers.get('x-sent-at') ?? clock.now());
    const body = await request.text();
    while (accepted.length > 0 && (accepted[0] as number) <= at - windowMs) accepted.shift();
    const refused = accepted.length >= limit;
    arrivals.push({
      at,
      method: request.method,
      url: request.url,
      body,
      status: refused ? 429 : 200,
    });
    if (!refused) {
      accepted.push(at);
      return HttpResponse.json({ ok: true, body });
    }
    const waitMs = (accepted[0] as number) + windowMs - at;
    const headers: Record<string, string> = {};
    if (retryAfter === 'seconds') headers['retry-after'] = String(Math.ceil(waitMs / 1000));
    if (retryAfter === 'date') {
      headers['retry-after'] = new Date(epoch + at + Math.ceil(waitMs / 1000) * 1000).toUTCString();
    }
    return new HttpResponse('Too Many Requests', { status: 429, headers });
  });
  return {
    handler,
    arrivals,
    count: (status: number) => arrivals.filter((arrival) => arrival.status === status).length,
  };
}

/**
 * A fetch for the paced client that stamps each request with the manual time it was sent,
 * then hands it to the global fetch (msw).
 */
export function stampedFetch(clock: ManualClock) {
  const sent: Array<{ at: number; method: string; url: string }> = [];
  const fetch = (request: Request) => {
    sent.push({ at: clock.now(), method: request.method, url: request.url });
    request.headers.set('x-sent-at', String(clock.now()));
    return globalThis.fetch(request);
  };
  return { fetch, sent };
}
