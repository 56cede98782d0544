import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { createPacedFetch, type PacedFetchOptions } from '../../src/http/paced-fetch.js';
import { createPacer, type Pacer, slidingLog } from '../../src/index.js';
import { isRateLimitError } from '../../src/pacer/errors.js';
import { createManualClock, type ManualClock } from '../../src/testing/index.js';
import { limitedBackend, stampedFetch } from '../support/backends.js';
import { servedThroughNetwork, settleAll } from '../support/counting-servers.js';
import { drive } from '../support/flush.js';
import { server } from '../support/msw.js';

describe('createPacedFetch in reject mode', () => {
  it('lets exactly the capacity through when 10,000 calls arrive at once with no refill', async () => {
    const clock = createManualClock();
    let hits = 0;
    server.use(
      http.get('https://api.test/items/:id', () => {
        hits++;
        return HttpResponse.json({ ok: true });
      }),
    );
    const pacedFetch = createPacedFetch({
      limits: { limit: 1000, windowMs: 1e12 },
      mode: 'reject',
      clock,
    });
    const results = await Promise.allSettled(
      Array.from({ length: 10_000 }, (_, i) => pacedFetch(`https://api.test/items/${i}`)),
    );
    const fulfilled = results.filter((result) => result.status === 'fulfilled');
    const refused = results.filter(
      (result) => result.status === 'rejected' && isRateLimitError(result.reason),
    );
    expect(hits).toBe(1000);
    expect(fulfilled).toHaveLength(1000);
    expect(refused).toHaveLength(9000);
  }, 30_000);
});

describe('createPacedFetch in queue mode', () => {
  it('earns no 429 from a server limited to 20/s and starts each call on its ideal slot', async () => {
    const clock = createManualClock();
    const backend = limitedBackend({ clock, limit: 20, windowMs: 1000 });
    server.use(backend.handler);
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({
      limits: { limit: 20, windowMs: 1000, algorithm: slidingLog },
      fetch,
      clock,
    });
    const calls = Array.from({ length: 500 }, (_, i) => pacedFetch(`https://api.test/n/${i}`));
    await drive(clock, pacedFetch.pacer, 30_000);
    const responses = await Promise.all(calls);
    expect(responses.every((response) => response.status === 200)).toBe(true);
    expect(backend.count(429)).toBe(0);
    // 20 at 0 ms, 20 at 1000 ms, ...: the ideal schedule, to the ms.
    expect(sent.map((call) => call.at)).toEqual(
      Array.from({ length: 500 }, (_, i) => Math.floor(i / 20) * 1000),
    );
    // In request order, too.
    expect(sent.map((call) => call.url)).toEqual(
      Array.from({ length: 500 }, (_, i) => `https://api.test/n/${i}`),
    );
  });
});

describe('a paced fetch naming slidingLog', () => {
  /** 300 calls at once to a sliding log of 60 per second, 5-60 ms away each way, seed 8. */
  async function throughJitter(pacerOn?: (clock: ManualClock) => Pacer) {
    const { clock, backend, net } = servedThroughNetwork({
      scheme: 'sliding-log',
      limit: 60,
      windowMs: 1_000,
      dialect: 'none',
      delayMs: [5, 60],
      seed: 8,
    });
    const pacer = pacerOn?.(clock);
    const pacedFetch = createPacedFetch({
      ...(pacer === undefined
        ? { limits: { limit: 60, windowMs: 1_000, algorithm: slidingLog }, clock }
        : { pacer }),
      fetch: net.fetch,
      learn: false,
      retry: { maxAttempts: 5 },
    });
    const statuses = await settleAll(
      clock,
      net,
      Array.from({ length: 300 }, (_, i) => pacedFetch(`https://api.test/n/${i}`)),
      120_000,
    );
    server.resetHandlers();
    return { statuses, refusals: backend.refusals() };
  }

  it('counts it at arrival, as the server does: no refusal through jitter, where counted at the send it is refused', async () => {
    const atArrival = await throughJitter();
    expect(atArrival.statuses.every((status) => status === 200)).toBe(true);
    expect(atArrival.refusals).toBe(0);
    // Not vacuous: the same log counted at the send (a pacer's own, which hears no answers).
    const atSend = await throughJitter((clock) =>
      createPacer({ limits: { limit: 60, windowMs: 1_000, algorithm: slidingLog }, clock }),
    );
    expect(atSend.refusals).toBeGreaterThan(0);
  });
});

describe('createPacedFetch and Retry-After', () => {
  it('blocks every queued call of the origin for 3 s, none of another, and retries the POST with its body', async () => {
    const clock = createManualClock();
    let refusedOnce = false;
    const arrivalsA: Array<[string, number, string]> = [];
    const arrivalsB: Array<[string, number]> = [];
    server.use(
      http.all('https://a.test/*', async ({ request }) => {
        const at = Number(request.headers.get('x-sent-at'));
        const line = `${request.method} ${new URL(request.url).pathname}`;
        arrivalsA.push([line, at, await request.text()]);
        if (!refusedOnce) {
          refusedOnce = true;
          return new HttpResponse(null, { status: 429, headers: { 'retry-after': '3' } });
        }
        return HttpResponse.json({ ok: true });
      }),
      http.get('https://b.test/*', ({ request }) => {
        const at = Number(request.headers.get('x-sent-at'));
        arrivalsB.push([new URL(request.url).pathname, at]);
        return HttpResponse.json({ ok: true });
      }),
    );
    const { fetch } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({ limits: { limit: 1, windowMs: 1000 }, fetch, clock });
    const post = pacedFetch('https://a.test/orders', { method: 'POST', body: '{"item":42}' });
    const nextA = pacedFetch('https://a.test/list');
    const b1 = pacedFetch('https://b.test/1');
    const b2 = pacedFetch('https://b.test/2');
    await drive(clock, pacedFetch.pacer, 5000);
    const responses = await Promise.all([post, nextA, b1, b2]);
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 200]);
    expect(arrivalsA).toEqual([
      ['POST /orders', 0, '{"item":42}'],
      ['POST /orders', 3000, '{"item":42}'],
      // One window and 1 ms after the answer to the retried POST (the default, arrival-safe).
      ['GET /list', 4001, ''],
    ]);
    expect(arrivalsB).toEqual([
      ['/1', 0],
      ['/2', 1001],
    ]);
  });

  it('reads Retry-After as an HTTP-date against the wall clock', async () => {
    const clock = createManualClock();
    const epoch = Date.UTC(2026, 10, 29, 12, 0, 0);
    const backend = limitedBackend({ clock, limit: 1, windowMs: 2000, retryAfter: 'date', epoch });
    server.use(backend.handler);
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({
      limits: perSecondBurst(10),
      fetch,
      clock,
      wallClock: () => epoch + clock.now(),
    });
    const first = pacedFetch('https://api.test/1');
    const second = pacedFetch('https://api.test/2');
    await drive(clock, pacedFetch.pacer, 3000);
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    // Refused at 0 with "retry at 0 + 2 s" as a date: the retry goes at exactly 2000.
    expect(sent.map((call) => call.at)).toEqual([0, 0, 2000]);
  });

  it('returns the 429 without retrying when Retry-After is beyond maxRetryAfterMs', async () => {
    const clock = createManualClock();
    let hits = 0;
    server.use(
      http.get('https://api.test/slow-down', () => {
        hits++;
        return new HttpResponse('later', { status: 429, headers: { 'retry-after': '120' } });
      }),
    );
    const pacedFetch = createPacedFetch({ limits: perSecondBurst(10), clock });
    const response = await pacedFetch('https://api.test/slow-down');
    expect(response.status).toBe(429);
    expect(await response.text()).toBe('later');
    expect(hits).toBe(1);
    // The server's word still holds for the key: the next call waits the two minutes.
    expect(pacedFetch.pacer.inspect('https://api.test').blockedUntil).toBe(120_000);
  });

  it('gives up after retry.limit retries of refusals it cannot explain and returns the last response', async () => {
    const clock = createManualClock();
    let hits = 0;
    server.use(
      http.get('https://api.test/busy', () => {
        hits++;
        return new HttpResponse(`refusal ${hits}`, { status: 503 });
      }),
    );
    const pacedFetch = createPacedFetch({
      limits: perSecondBurst(10),
      clock,
      retry: { limit: 2, random: () => 0.5 },
    });
    const call = pacedFetch('https://api.test/busy');
    await drive(clock, pacedFetch.pacer, 10_000);
    const response = await call;
    expect(hits).toBe(3);
    expect(await response.text()).toBe('refusal 3');
  });

  it('waits out every refusal that says when to come back without spending retry.limit', async () => {
    const clock = createManualClock();
    let hits = 0;
    server.use(
      http.get('https://api.test/busy', () => {
        hits++;
        return hits <= 5
          ? new HttpResponse(null, { status: 503, headers: { 'retry-after': '1' } })
          : HttpResponse.json({ hits });
      }),
    );
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({
      limits: perSecondBurst(10),
      fetch,
      clock,
      retry: { limit: 1 },
    });
    const call = pacedFetch('https://api.test/busy');
    await drive(clock, pacedFetch.pacer, 10_000);
    expect((await call).status).toBe(200);
    expect(sent.map((request) => request.at)).toEqual([0, 1000, 2000, 3000, 4000, 5000]);
  });

  it('stops at retry.maxAttempts requests against a server that always says to come back', async () => {
    const clock = createManualClock();
    let hits = 0;
    server.use(
      http.get('https://api.test/never', () => {
        hits++;
        return new HttpResponse(`refusal ${hits}`, {
          status: 429,
          headers: { 'retry-after': '1' },
        });
      }),
    );
    const pacedFetch = createPacedFetch({
      limits: perSecondBurst(10),
      clock,
      retry: { maxAttempts: 4 },
    });
    const call = pacedFetch('https://api.test/never');
    await drive(clock, pacedFetch.pacer, 60_000);
    expect(hits).toBe(4);
    expect(await (await call).text()).toBe('refusal 4');
  });

  it('spends retry.limit on a Retry-After of 0, so a server answering 429 + 0 cannot spin it', async () => {
    const clock = createManualClock();
    let hits = 0;
    server.use(
      http.get('https://api.test/spin', () => {
        hits++;
        return new HttpResponse(null, { status: 429, headers: { 'retry-after': '0' } });
      }),
    );
    const pacedFetch = createPacedFetch({ limits: perSecondBurst(10), clock, retry: { limit: 2 } });
    const call = pacedFetch('https://api.test/spin');
    await drive(clock, pacedFetch.pacer, 10_000);
    expect((await call).status).toBe(429);
    expect(hits).toBe(3);
  });

  it('returns the refusal instead of throwing when the pacer will not queue the retry (maxWaitMs)', async () => {
    const clock = createManualClock();
    let hits = 0;
    server.use(
      http.get('https://api.test/later', () => {
        hits++;
        return new HttpResponse('come back in 5 s', {
          status: 429,
          headers: { 'retry-after': '5' },
        });
      }),
    );
    const pacedFetch = createPacedFetch({ limits: perSecondBurst(10), clock, maxWaitMs: 2000 });
    const response = await pacedFetch('https://api.test/later');
    expect(response.status).toBe(429);
    expect(await response.text()).toBe('come back in 5 s');
    expect(hits).toBe(1);
  });

  it('rejects the calls waiting behind a block past maxWaitMs at once, not when it ends', async () => {
    const clock = createManualClock();
    let hits = 0;
    server.use(
      http.get('https://api.test/closed', () => {
        hits++;
        return new HttpResponse('closed for an hour', {
          status: 429,
          headers: { 'retry-after': '3600' },
        });
      }),
    );
    const pacedFetch = createPacedFetch({
      limits: { limit: 1, windowMs: 1_000 },
      clock,
      maxWaitMs: 10_000,
    });
    // One goes at once; the other four wait their turns (at 1, 2, 3 and 4 s: within 10 s).
    const calls = Array.from({ length: 5 }, () =>
      pacedFetch('https://api.test/closed').then(
        (response) => response.status,
        (error: unknown) => (isRateLimitError(error) ? error.decision.reason : error),
      ),
    );
    await drive(clock, pacedFetch.pacer, 0);
    // The hour is past `retry.maxRetryAfterMs`: the first call returns its refusal, and the
    // four waiting would wait past their 10 s, so they reject now and send nothing.
    expect(await Promise.all(calls)).toEqual([429, 'blocked', 'blocked', 'blocked', 'blocked']);
    expect(hits).toBe(1);
    expect(clock.now()).toBe(0);
  });

  it('retries a 429 for any method but a 503 only for idempotent ones', async () => {
    const clock = createManualClock();
    const seen: string[] = [];
    server.use(
      http.all('https://api.test/once/:status', ({ request, params }) => {
        seen.push(request.method);
        const first = seen.filter((method) => method === request.method).length === 1;
        return first
          ? new HttpResponse(null, {
              status: Number(params['status']),
              headers: { 'retry-after': '0' },
            })
          : HttpResponse.json({ ok: true });
      }),
    );
    // Not learning: three refusals in a second would cut the rate (AIMD), which is not the point.
    const pacedFetch = createPacedFetch({ limits: perSecondBurst(10), clock, learn: false });
    // `Retry-After: 0` says nothing: the retry waits its backoff.
    const settled = async (url: string, init?: RequestInit) => {
      const call = pacedFetch(url, init);
      await drive(clock, pacedFetch.pacer, clock.now() + 10_000);
      return call;
    };
    const post503 = await settled('https://api.test/once/503', { method: 'POST', body: 'x' });
    expect(post503.status).toBe(503);
    const patch429 = await settled('https://api.test/once/429', { method: 'PATCH', body: 'x' });
    expect(patch429.status).toBe(200);
    const get503 = await settled('https://api.test/once/503');
    expect(get503.status).toBe(200);
    expect(seen).toEqual(['POST', 'PATCH', 'PATCH', 'GET', 'GET']);
  });

  /** A server of one request a minute that refuses with a bare 429, its first admitted. */
  async function oneAMinuteBare(options: Partial<PacedFetchOptions>) {
    const clock = createManualClock();
    const backend = limitedBackend({ clock, limit: 1, windowMs: 60_000, retryAfter: 'none' });
    server.use(backend.handler);
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({ limits: perSecondBurst(10), fetch, clock, ...options });
    await pacedFetch('https://api.test/first');
    return { clock, pacedFetch, sent };
  }

  it('backs off exponentially with jitter when the 429 has no Retry-After', async () => {
    const { clock, pacedFetch, sent } = await oneAMinuteBare({
      retry: { limit: 3, backoffMs: 1000, random: () => 0.5 },
      // Without learning: three refusals in a row would make a rate pace the call (below).
      learn: false,
    });
    const refused = pacedFetch('https://api.test/second');
    // Backoffs of 750, 1500 and 3000 ms (half fixed, half jitter at 0.5), then the 429 is returned.
    await drive(clock, pacedFetch.pacer, 20_000);
    expect((await refused).status).toBe(429);
    const second = sent.slice(1).map((call) => call.at);
    const gaps = second.slice(1).map((at, i) => at - (second[i] as number));
    expect(gaps).toEqual([750, 1500, 3000]);
  });

  it('learns a rate from bare 429s in a row, however slowly they come, and paces the call to its 200', async () => {
    // One per minute, refused bare: the backoffs spread the refusals over seconds, never three
    // within one, and the call's retries ran out before a rate paced it.
    const { clock, pacedFetch, sent } = await oneAMinuteBare({ retry: { random: () => 0.5 } });
    const second = pacedFetch('https://api.test/second');
    await drive(clock, pacedFetch.pacer, 180_000);
    expect((await second).status).toBe(200);
    expect(pacedFetch.pacer.inspect('https://api.test').learned?.source).toBe('rate');
    // Within `maxAttempts` (20): the rate's pauses grow while its probes are refused.
    expect(sent.length - 1).toBeLessThanOrEqual(20);
  });
});

function perSecondBurst(limit: number) {
  return { limit, windowMs: 1000 };
}
