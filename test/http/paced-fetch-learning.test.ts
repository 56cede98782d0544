import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { tokenBucket } from '../../src/index.js';
import { createPacer } from '../../src/pacer/pacer.js';
import { createManualClock } from '../../src/testing/index.js';
import { stampedFetch } from '../support/backends.js';
import { drive, until } from '../support/flush.js';
import { server } from '../support/msw.js';

describe('createPacedFetch learning from RateLimit headers', () => {
  it.each([
    ['IETF draft', { ratelimit: '"api";r=0;t=5', 'ratelimit-policy': '"api";q=3;w=60' }],
    ['draft-7', { ratelimit: 'limit=3, remaining=0, reset=5' }],
    ['draft-6', { 'ratelimit-limit': '3', 'ratelimit-remaining': '0', 'ratelimit-reset': '5' }],
    [
      'X-RateLimit',
      { 'x-ratelimit-limit': '3', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '5' },
    ],
  ])('waits for the reset when the server says 0 remaining (%s)', async (_dialect, headers) => {
    const clock = createManualClock();
    let served = 0;
    server.use(
      http.get('https://api.test/*', () => {
        served++;
        return HttpResponse.json({ served }, { headers: served === 1 ? headers : {} });
      }),
    );
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({
      limits: { limit: 100, windowMs: 1000, algorithm: tokenBucket },
      fetch,
      clock,
    });
    await pacedFetch('https://api.test/first');
    const second = pacedFetch('https://api.test/second');
    await drive(clock, pacedFetch.pacer, 10_000);
    expect((await second).status).toBe(200);
    // The local policy allowed 100/s, but the server had none left until its reset in 5 s.
    expect(sent.map((call) => call.at)).toEqual([0, 5000]);
  });

  it('ignores garbage headers and keeps pacing by its own policy', async () => {
    const clock = createManualClock();
    server.use(
      http.get('https://api.test/*', () =>
        HttpResponse.json(
          {},
          {
            headers: {
              ratelimit: 'remaining=banana',
              'x-ratelimit-remaining': '-3',
              'retry-after': 'tomorrow',
            },
          },
        ),
      ),
    );
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({
      limits: { limit: 2, windowMs: 1000, algorithm: tokenBucket },
      fetch,
      clock,
    });
    const calls = [1, 2, 3].map((n) => pacedFetch(`https://api.test/${n}`));
    await drive(clock, pacedFetch.pacer, 5000);
    await Promise.all(calls);
    expect(sent.map((call) => call.at)).toEqual([0, 0, 500]);
  });

  it('can be told not to read the headers', async () => {
    const clock = createManualClock();
    server.use(
      http.get('https://api.test/*', () =>
        HttpResponse.json(
          {},
          { headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '9' } },
        ),
      ),
    );
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({
      limits: { limit: 5, windowMs: 1000, algorithm: tokenBucket },
      fetch,
      clock,
      readRateLimitHeaders: false,
    });
    await Promise.all([1, 2].map((n) => pacedFetch(`https://api.test/${n}`)));
    expect(sent.map((call) => call.at)).toEqual([0, 0]);
  });
});

describe('createPacedFetch keys, costs and sharing', () => {
  it('keys by origin by default, so one origin does not slow another', async () => {
    const clock = createManualClock();
    server.use(http.get('https://*.test/*', () => HttpResponse.json({})));
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({
      limits: { limit: 1, windowMs: 1000, algorithm: tokenBucket },
      fetch,
      clock,
    });
    const calls = [
      pacedFetch('https://a.test/1'),
      pacedFetch('https://b.test/1'),
      pacedFetch('https://a.test/2'),
    ];
    await drive(clock, pacedFetch.pacer, 2000);
    await Promise.all(calls);
    expect(sent.map((call) => [call.url, call.at])).toEqual([
      ['https://a.test/1', 0],
      ['https://b.test/1', 0],
      ['https://a.test/2', 1000],
    ]);
  });

  it('takes the key, cost and priority from the request when told how', async () => {
    const clock = createManualClock();
    server.use(http.all('https://api.test/*', () => HttpResponse.json({})));
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({
      limits: { limit: 4, windowMs: 1000, algorithm: tokenBucket },
      learn: { slowStart: false },
      fetch,
      clock,
      key: (request) => request.headers.get('x-user') ?? 'anonymous',
      cost: (request) => (request.method === 'POST' ? 4 : 1),
      priority: (request) => (request.url.endsWith('/urgent') ? 1 : 0),
    });
    const asAnn = { headers: { 'x-user': 'ann' } };
    const calls = [
      pacedFetch('https://api.test/a', asAnn),
      pacedFetch('https://api.test/export', { ...asAnn, method: 'POST', body: 'x' }),
      pacedFetch('https://api.test/b', asAnn),
      pacedFetch('https://api.test/urgent', asAnn),
      pacedFetch('https://api.test/c', { headers: { 'x-user': 'bob' } }),
    ];
    await drive(clock, pacedFetch.pacer, 5000);
    await Promise.all(calls);
    expect(sent.map((call) => [new URL(call.url).pathname, call.at])).toEqual([
      ['/a', 0],
      // Priority 1 overtakes ann's queued export and /b, and 3 permits are left for it.
      ['/urgent', 0],
      // bob has a bucket of his own.
      ['/c', 0],
      // The export (cost 4) waits for 2 more permits at 4/s; /b stays behind it.
      ['/export', 500],
      ['/b', 750],
    ]);
  });

  it('shares one pacer between wrappers and exposes it', async () => {
    const clock = createManualClock();
    server.use(http.get('https://api.test/*', () => HttpResponse.json({})));
    const pacer = createPacer({
      limits: { limit: 1, windowMs: 1000, algorithm: tokenBucket },
      clock,
    });
    const { fetch, sent } = stampedFetch(clock);
    const one = createPacedFetch({ pacer, fetch });
    const two = createPacedFetch({ pacer, fetch });
    expect(one.pacer).toBe(pacer);
    const calls = [one('https://api.test/1'), two('https://api.test/2')];
    await drive(clock, pacer, 2000);
    await Promise.all(calls);
    expect(sent.map((call) => call.at)).toEqual([0, 1000]);
  });
});

describe('createPacedFetch failures', () => {
  /** A server the network cannot reach while `down.now` is true (msw's network error). */
  function flakyNetwork() {
    const down = { now: true };
    server.use(
      http.all('https://api.test/*', () =>
        down.now ? HttpResponse.error() : HttpResponse.json({ ok: true }),
      ),
    );
    return down;
  }

  it('sends a GET again after a network error, the key waiting out a backoff', async () => {
    const clock = createManualClock();
    const down = flakyNetwork();
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({
      limits: { limit: 100, windowMs: 1000, algorithm: tokenBucket },
      fetch,
      clock,
      retry: { random: () => 0 },
    });
    const call = pacedFetch('https://api.test/items');
    await until(() => pacedFetch.pacer.inspect('https://api.test').blockedUntil === 500);
    expect(sent).toHaveLength(1);
    // A call made during the backoff waits for it too: the network is the key's, not the call's.
    const later = pacedFetch('https://api.test/other');
    await clock.advanceAsync(499);
    expect(sent).toHaveLength(1);
    await clock.advanceAsync(1);
    // The retry failed too, and blocked the key again before the call behind it could go.
    await until(() => pacedFetch.pacer.inspect('https://api.test').blockedUntil === 1500);
    expect(sent).toHaveLength(2);
    down.now = false;
    await drive(clock, pacedFetch.pacer, 10_000);
    expect((await call).status).toBe(200);
    expect((await later).status).toBe(200);
    // Backoffs of 500, then 1,000 ms (retry.backoffMs, halved by the jitter of random 0).
    const sentAt = (path: string) =>
      sent.filter(({ url }) => url.endsWith(path)).map(({ at }) => at);
    expect(sentAt('/items')).toEqual([0, 500, 1500]);
    expect(sentAt('/other')).toEqual([1500]);
  });

  it('rejects with the network error once the retries are spent; a POST and retry: false at once', async () => {
    const clock = createManualClock();
    flakyNetwork();
    const { fetch, sent } = stampedFetch(clock);
    const options = {
      limits: { limit: 100, windowMs: 1000, algorithm: tokenBucket },
      fetch,
      clock,
    };
    const pacedFetch = createPacedFetch(options);
    const get = pacedFetch('https://api.test/get').catch((error: unknown) => error);
    await drive(clock, pacedFetch.pacer, 60_000);
    expect(await get).toBeInstanceOf(TypeError);
    // retry.limit (2): three sends, and nothing learned from them (an outage says no rate):
    // the key still starts slow, as before any answer.
    expect(sent).toHaveLength(3);
    expect(pacedFetch.pacer.inspect('https://api.test').learned).toEqual({
      limit: 1,
      windowMs: 0,
      source: 'start',
    });
    // A POST may have been processed before the connection was lost: sent once.
    const post = pacedFetch('https://api.test/post', { method: 'POST', body: 'x' });
    await expect(post).rejects.toThrow(TypeError);
    expect(sent).toHaveLength(4);
    const noRetry = createPacedFetch({ ...options, retry: false });
    await expect(noRetry('https://api.test/once')).rejects.toThrow(TypeError);
    expect(sent).toHaveLength(5);
  });

  it('spends one retry budget on unexplained refusals and network errors together', async () => {
    const clock = createManualClock();
    let hits = 0;
    server.use(
      http.get('https://api.test/*', () =>
        ++hits === 1 ? new HttpResponse(null, { status: 503 }) : HttpResponse.error(),
      ),
    );
    const pacedFetch = createPacedFetch({
      limits: { limit: 100, windowMs: 1000, algorithm: tokenBucket },
      clock,
      retry: { limit: 2 },
    });
    const call = pacedFetch('https://api.test/x').catch((error: unknown) => error);
    await drive(clock, pacedFetch.pacer, 60_000);
    expect(await call).toBeInstanceOf(TypeError);
    expect(hits).toBe(3);
  });

  it('does not send again a call aborted during its backoff', async () => {
    const clock = createManualClock();
    flakyNetwork();
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({
      limits: { limit: 100, windowMs: 1000, algorithm: tokenBucket },
      fetch,
      clock,
    });
    const controller = new AbortController();
    const call = pacedFetch('https://api.test/x', { signal: controller.signal });
    await until(() => sent.length === 1);
    await until(() => pacedFetch.pacer.getSnapshot().inFlight === 0);
    controller.abort(new Error('gone'));
    await expect(call).rejects.toThrow('gone');
    await drive(clock, pacedFetch.pacer, 60_000);
    expect(sent).toHaveLength(1);
  });

  it('rejects with the abort reason before the call, in the queue and in flight', async () => {
    const clock = createManualClock();
    let release: () => void = () => {};
    let hits = 0;
    server.use(
      http.get('https://api.test/*', async () => {
        hits++;
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return HttpResponse.json({});
      }),
    );
    const pacedFetch = createPacedFetch({
      limits: { limit: 1, windowMs: 1000, algorithm: tokenBucket },
      clock,
    });
    const reason = new Error('user left');
    await expect(
      pacedFetch('https://api.test/0', { signal: AbortSignal.abort(reason) }),
    ).rejects.toBe(reason);

    const inFlight = new AbortController();
    const queued = new AbortController();
    const first = pacedFetch('https://api.test/1', { signal: inFlight.signal });
    const second = pacedFetch('https://api.test/2', { signal: queued.signal });
    expect(pacedFetch.pacer.getSnapshot().queued).toBe(1);
    queued.abort(reason);
    await expect(second).rejects.toBe(reason);
    expect(pacedFetch.pacer.getSnapshot().queued).toBe(0);

    await until(() => hits === 1);
    inFlight.abort(reason);
    await expect(first).rejects.toBe(reason);
    release();
    expect(hits).toBe(1);
  });

  it('throws at creation for bad options, naming them', () => {
    // No limits is zero configuration; it learns, so `learn: false` needs limits, as a store does.
    expect(() => createPacedFetch({ learn: false })).toThrow(/`learn: false` needs `limits`/);
    expect(() => createPacedFetch({ learn: { slowStart: false } })).toThrow(
      /`learn.slowStart: false` needs `limits`/,
    );
    expect(() =>
      createPacedFetch({ limits: { limit: 1, windowMs: 1 }, learn: { slowStart: 'no' as never } }),
    ).toThrow(/Expected `learn`.*slowStart.*`\{"slowStart":"no"\}`|Expected `learn`/);
    expect(() => createPacedFetch({ store: {} as never })).toThrow(/`limits`|store/);
    expect(() => createPacedFetch({ limits: { limit: 0, windowMs: 1 } })).toThrow(
      /`limits.limit`|`limit`/,
    );
    expect(() =>
      createPacedFetch({ limits: { limit: 1, windowMs: 1 }, key: 'origin' as never }),
    ).toThrow(/`key` to be a function/);
    expect(() =>
      createPacedFetch({ limits: { limit: 1, windowMs: 1 }, retry: { limit: -1 } }),
    ).toThrow(/`retry.limit`.*`-1`/);
    expect(() =>
      createPacedFetch({ limits: { limit: 1, windowMs: 1 }, retry: { statuses: [200] } }),
    ).toThrow(/`retry.statuses`/);
    const pacer = createPacer({ limits: { limit: 1, windowMs: 1 } });
    expect(() => createPacedFetch({ pacer, limits: { limit: 1, windowMs: 1 } })).toThrow(
      /not both/,
    );
  });
});

describe('createPacedFetch slow start', () => {
  it("waits for the reset when an answer says nothing is left: not a lone try, nor the key's own whole window", async () => {
    const clock = createManualClock();
    server.use(
      http.get('https://api.test/*', () =>
        HttpResponse.json(
          {},
          {
            headers: {
              'ratelimit-limit': '100',
              'ratelimit-remaining': clock.now() < 5_000 ? '0' : '99',
              'ratelimit-reset': String(Math.max(1, Math.ceil((5_000 - clock.now()) / 1_000))),
            },
          },
        ),
      ),
    );
    const { fetch, sent } = stampedFetch(clock);
    // Its own window is a minute; the server's count resets in 5 s.
    const pacedFetch = createPacedFetch({ limits: { limit: 100, windowMs: 60_000 }, fetch, clock });
    await pacedFetch('https://api.test/first');
    const second = pacedFetch('https://api.test/second');
    await drive(clock, pacedFetch.pacer, 20_000);
    expect((await second).status).toBe(200);
    // Before: sent at once past the slow start's count of 0 (a refusal from a real server), or,
    // blocked, held until its own window of 60 s had passed.
    expect(sent.map((request) => request.at)).toEqual([0, 5_000]);
  });

  it('starts a key with one request in flight, one more per answer, and rejects none for `maxWaitMs` behind it', async () => {
    const clock = createManualClock();
    let inFlight = 0;
    let most = 0;
    const releases: (() => void)[] = [];
    server.use(
      http.get('https://api.test/*', async () => {
        most = Math.max(most, ++inFlight);
        await new Promise<void>((resolve) => releases.push(resolve));
        inFlight--;
        return HttpResponse.json({});
      }),
    );
    // Configured generously, and no call may wait more than 200 ms for its permits: the wait
    // behind answers still to come is not a projection, so it is not judged.
    const pacedFetch = createPacedFetch({
      limits: { limit: 100, windowMs: 1000 },
      maxWaitMs: 200,
      clock,
    });
    const calls = Array.from({ length: 7 }, (_, i) => pacedFetch(`https://api.test/${i}`));
    // Each round lets the answers in flight back: 1, then 2, then 4 in flight.
    for (const expected of [1, 2, 4]) {
      await until(() => releases.length === expected);
      expect(inFlight).toBe(expected);
      for (const release of releases.splice(0)) release();
    }
    const statuses = (await Promise.all(calls)).map((response) => response.status);
    expect(statuses).toEqual(Array(7).fill(200));
    expect(most).toBe(4);
  });

  it('reports no projected start behind requests in flight: when their answers come is unknown', async () => {
    const clock = createManualClock();
    let release = () => {};
    let arrived = 0;
    server.use(
      http.get('https://api.test/*', async () => {
        arrived++;
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return HttpResponse.json({});
      }),
    );
    const pacedFetch = createPacedFetch({ limits: { limit: 100, windowMs: 1000 }, clock });
    const first = pacedFetch('https://api.test/1');
    const seen: unknown[] = [];
    const second = pacedFetch('https://api.test/2', {
      pacing: { onProgress: (progress) => seen.push(progress) },
    });
    await until(() => arrived === 1);
    // Queued with no start it could be told (a lower bound of 1 s was reported before).
    expect(seen.every((progress) => (progress as { startAt?: number }).startAt === undefined)).toBe(
      true,
    );
    expect(pacedFetch.pacer.getSnapshot().queued).toBe(1);
    release();
    await first;
    await until(() => arrived === 2);
    release();
    expect((await second).status).toBe(200);
  });

  it('ends for good once an answer confirms the key’s own limit: later calls do not start slow again', async () => {
    const clock = createManualClock();
    const epoch = 1_700_000_000_000;
    let served = 0;
    const releases: (() => void)[] = [];
    server.use(
      http.get('https://api.test/*', async () => {
        served++;
        await new Promise<void>((resolve) => releases.push(resolve));
        // koa-ratelimit's headers: the limit the client was given, a fractional Unix reset.
        const reset = ((epoch + clock.now() + 1_000) / 1000).toFixed(3);
        const headers = {
          'x-ratelimit-limit': '100',
          'x-ratelimit-remaining': String(100 - served),
          'x-ratelimit-reset': reset,
        };
        return HttpResponse.json({}, { headers });
      }),
    );
    const pacedFetch = createPacedFetch({
      limits: { limit: 100, windowMs: 1000 },
      clock,
      wallClock: () => epoch + clock.now(),
    });
    const first = pacedFetch('https://api.test/1');
    await until(() => releases.length === 1);
    for (const release of releases.splice(0)) release();
    await first;
    expect(pacedFetch.pacer.inspect('https://api.test').learned).toBeUndefined();
    // Two calls after the confirmation go at once (a restarted slow start held the second).
    const later = [pacedFetch('https://api.test/2'), pacedFetch('https://api.test/3')];
    await until(() => releases.length === 2);
    for (const release of releases.splice(0)) release();
    expect((await Promise.all(later)).map((response) => response.status)).toEqual([200, 200]);
  });

  it('is off in reject mode and with `learn: { slowStart: false }`: the policy alone decides', async () => {
    server.use(http.get('https://api.test/*', () => HttpResponse.json({})));
    for (const options of [{ mode: 'reject' as const }, { learn: { slowStart: false } }]) {
      const clock = createManualClock();
      const { fetch, sent } = stampedFetch(clock);
      const pacedFetch = createPacedFetch({
        limits: { limit: 5, windowMs: 1000 },
        fetch,
        clock,
        ...options,
      });
      await Promise.all(Array.from({ length: 5 }, (_, i) => pacedFetch(`https://api.test/${i}`)));
      expect(sent.map((call) => call.at)).toEqual([0, 0, 0, 0, 0]);
    }
  });
});
