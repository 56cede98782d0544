import { HttpResponse, http } from 'msw';
import { describe, expect, it } from 'vitest';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { createManualClock, type ManualClock } from '../../src/testing/index.js';
import { perSecond } from '../../src/index.js';
import { stampedFetch } from '../support/backends.js';
import { driveNetwork, network, trackCalls } from '../support/counting-servers.js';
import { fakeStore } from '../support/fake-store.js';
import { drive } from '../support/flush.js';
import { server } from '../support/msw.js';

const limits = { limit: 10, windowMs: 1000 };
const EPOCH = Date.UTC(2026, 11, 1, 10, 0, 0);

/** A paced fetch on `clock` whose wall clock is EPOCH (plus `skewMs`) at manual time 0. */
function pacedOnWall(clock: ManualClock, skewMs = 0) {
  const { fetch, sent } = stampedFetch(clock);
  const pacedFetch = createPacedFetch({
    limits,
    fetch,
    clock,
    wallClock: () => EPOCH + skewMs + clock.now(),
  });
  return { pacedFetch, sent };
}

/** `https://api.test/dated` answers its `hit`-th request (from 1) at `now`, epoch ms. */
function servesDated(clock: ManualClock, answer: (hit: number, now: number) => Response): void {
  let hits = 0;
  server.use(http.get('https://api.test/dated', () => answer(++hits, EPOCH + clock.now())));
}

/** A 503 dated `now` (epoch ms) saying, as an HTTP-date, to come back 2 s later. */
function datedRefusal(now: number): Response {
  return new HttpResponse(null, {
    status: 503,
    headers: {
      date: new Date(now).toUTCString(),
      'retry-after': new Date(now + 2000).toUTCString(),
    },
  });
}

describe('what counts as a refusal, and how long it waits', () => {
  it('returns a plain 403 at once: a permission error is final', async () => {
    const clock = createManualClock();
    let hits = 0;
    server.use(
      http.get('https://api.test/private', () => {
        hits++;
        return HttpResponse.json(
          { message: 'Must have admin rights to Repository.' },
          {
            status: 403,
            headers: { 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '4999' },
          },
        );
      }),
    );
    const pacedFetch = createPacedFetch({ limits, clock });
    const response = await pacedFetch('https://api.test/private');
    expect(response.status).toBe(403);
    expect(hits).toBe(1);
    expect(pacedFetch.pacer.inspect('https://api.test').blockedUntil).toBeUndefined();
  });

  it("waits out GitHub's 403 with nothing remaining until its reset, then sends the POST again", async () => {
    const clock = createManualClock();
    const resetS = Math.ceil((EPOCH + 30_000) / 1000);
    const bodies: string[] = [];
    server.use(
      http.post('https://api.test/issues', async ({ request }) => {
        bodies.push(await request.text());
        return bodies.length === 1
          ? HttpResponse.json(
              { message: 'API rate limit exceeded' },
              {
                status: 403,
                headers: {
                  'x-ratelimit-limit': '60',
                  'x-ratelimit-remaining': '0',
                  'x-ratelimit-reset': String(resetS),
                },
              },
            )
          : HttpResponse.json({ number: 1 }, { status: 201 });
      }),
    );
    const { pacedFetch, sent } = pacedOnWall(clock);
    const call = pacedFetch('https://api.test/issues', { method: 'POST', body: 'title' });
    await drive(clock, pacedFetch.pacer, 60_000);
    expect((await call).status).toBe(201);
    expect(sent.map((request) => request.at)).toEqual([0, 30_000]);
    expect(bodies).toEqual(['title', 'title']);
  });

  it("waits the refusal's own Retry-After, not the later whole-second reset it carries (rate-limiter-flexible)", async () => {
    const clock = createManualClock();
    // Refused 50 ms before its window ends; the Unix reset, rounded up, is 1.95 s away.
    const resetS = Math.ceil((EPOCH + 1_000) / 1000) + 1;
    let hits = 0;
    server.use(
      http.get('https://api.test/flexible', () => {
        hits++;
        if (hits > 1) return HttpResponse.json({ ok: true });
        return new HttpResponse(null, {
          status: 429,
          headers: {
            'retry-after': '0.05',
            'x-ratelimit-limit': '60',
            'x-ratelimit-remaining': '0',
            'x-ratelimit-reset': String(resetS),
          },
        });
      }),
    );
    const { pacedFetch, sent } = pacedOnWall(clock);
    const call = pacedFetch('https://api.test/flexible');
    await drive(clock, pacedFetch.pacer, 10_000);
    expect((await call).status).toBe(200);
    expect(sent.map((request) => request.at)).toEqual([0, 50]);
  });

  it("reads koa-ratelimit's Retry-After: 0 (rounded down) as no word: the call waits for the reset", async () => {
    const clock = createManualClock();
    let hits = 0;
    server.use(
      http.get('https://api.test/koa', () => {
        hits++;
        if (hits > 1 && clock.now() >= 400) return HttpResponse.json({ ok: true });
        return new HttpResponse(null, {
          status: 429,
          headers: {
            'retry-after': '0',
            'x-ratelimit-limit': '60',
            'x-ratelimit-remaining': '0',
            'x-ratelimit-reset': ((EPOCH + 400) / 1000).toFixed(6),
          },
        });
      }),
    );
    const { pacedFetch, sent } = pacedOnWall(clock);
    const call = pacedFetch('https://api.test/koa');
    await drive(clock, pacedFetch.pacer, 10_000);
    expect((await call).status).toBe(200);
    // Sent again at the reset, not a backoff later (before: at 1,001 ms).
    expect(sent.map((request) => request.at)).toEqual([0, 400]);
  });

  it('reads an HTTP-date Retry-After against the server Date: a client an hour slow waits 2 s', async () => {
    const clock = createManualClock();
    servesDated(clock, (hit, now) =>
      hit > 1 ? HttpResponse.json({ ok: true }) : datedRefusal(now),
    );
    const { pacedFetch, sent } = pacedOnWall(clock, -3_600_000);
    const call = pacedFetch('https://api.test/dated');
    await drive(clock, pacedFetch.pacer, 10_000);
    expect((await call).status).toBe(200);
    expect(sent.map((request) => request.at)).toEqual([0, 2000]);
  });

  it('reads the server clock from fresh answers only: a cached one (Age) is dated when first sent', async () => {
    const clock = createManualClock();
    servesDated(clock, (hit, now) => {
      // Two answers from a cache, stored 1.5 s ago, before the refusal.
      if (hit <= 2) {
        return HttpResponse.json(
          { ok: true },
          { headers: { date: new Date(now - 1500).toUTCString(), age: '1' } },
        );
      }
      return hit > 3 ? HttpResponse.json({ ok: true }) : datedRefusal(now);
    });
    const { pacedFetch, sent } = pacedOnWall(clock);
    for (let i = 0; i < 2; i++) {
      const cached = pacedFetch('https://api.test/dated');
      await drive(clock, pacedFetch.pacer, 1_000);
      expect((await cached).status).toBe(200);
    }
    const start = clock.now();
    const call = pacedFetch('https://api.test/dated');
    await drive(clock, pacedFetch.pacer, 10_000);
    // Read by the cached answers' dates (our clock taken for 1.5 s fast), the wait was 3.9 s.
    expect((await call).status).toBe(200);
    expect(sent.slice(2).map((request) => request.at - start)).toEqual([100, 2000]);
  });

  it("retries Anthropic's 529 (overloaded) for a POST: the request was not processed", async () => {
    const clock = createManualClock();
    let hits = 0;
    server.use(
      http.post('https://api.test/v1/messages', () => {
        hits++;
        return hits === 1
          ? HttpResponse.json(
              { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
              { status: 529 },
            )
          : HttpResponse.json({ id: 'msg_1' });
      }),
    );
    const pacedFetch = createPacedFetch({ limits, clock, retry: { random: () => 0.5 } });
    const call = pacedFetch('https://api.test/v1/messages', { method: 'POST', body: '{}' });
    await drive(clock, pacedFetch.pacer, 10_000);
    expect((await call).status).toBe(200);
    expect(hits).toBe(2);
  });
});

describe('body hints', () => {
  it('waits the retryDelay of a Google error body, and leaves the body readable for the caller', async () => {
    const clock = createManualClock();
    const body = {
      error: {
        code: 429,
        status: 'RESOURCE_EXHAUSTED',
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '90s' }],
      },
    };
    server.use(http.get('https://api.test/quota', () => HttpResponse.json(body, { status: 429 })));
    const pacedFetch = createPacedFetch({ limits, clock, retry: { maxRetryAfterMs: 60_000 } });
    // 90 s is beyond maxRetryAfterMs: the refusal comes back, its body unread, the key blocked.
    const response = await pacedFetch('https://api.test/quota');
    expect(response.status).toBe(429);
    expect(await response.json()).toEqual(body);
    expect(pacedFetch.pacer.inspect('https://api.test').blockedUntil).toBe(90_000);
  });

  it('ignores a refusal body beyond 16 kB and backs off instead', async () => {
    const clock = createManualClock();
    const padding = 'x'.repeat(20_000);
    server.use(
      http.get('https://api.test/huge', () =>
        HttpResponse.json({ retry_after: 90, padding }, { status: 429 }),
      ),
    );
    const pacedFetch = createPacedFetch({
      limits,
      clock,
      retry: { limit: 0, random: () => 0.5, backoffMs: 1000 },
    });
    const response = await pacedFetch('https://api.test/huge');
    expect(response.status).toBe(429);
    expect((await response.json()).padding).toBe(padding);
    // The backoff of a refusal it cannot explain (750 ms at jitter 0.5), not the body's 90 s.
    expect(pacedFetch.pacer.inspect('https://api.test').blockedUntil).toBe(750);
  });
});

describe('a rate a long wait taught', () => {
  it('grows back within seconds once a minute at it passed without a refusal', async () => {
    // A hundred admitted at once, then `Retry-After: 120` (a penalty, a maintenance window),
    // then everything admitted: the wait taught a hundred per two minutes, far too slow.
    const clock = createManualClock();
    const net = network({ clock, delayMs: [10, 10] });
    let served = 0;
    const admittedAt: number[] = [];
    server.use(
      http.get('https://api.test/*', () => {
        if (++served === 101) {
          return new HttpResponse(null, { status: 429, headers: { 'retry-after': '120' } });
        }
        admittedAt.push(clock.now());
        return HttpResponse.json({ ok: true });
      }),
    );
    const pacedFetch = createPacedFetch({ limits: perSecond(100), fetch: net.fetch, clock });
    const calls = Array.from({ length: 400 }, (_, i) => pacedFetch(`https://api.test/n/${i}`));
    const { statuses, done, all } = trackCalls(calls);
    await driveNetwork(clock, net, done, 3_600_000);
    await all;
    // The refused call's wait is past `retry.maxRetryAfterMs` (60 s): it returns its 429.
    expect(statuses.filter((status) => status === 200)).toHaveLength(399);
    const after = admittedAt.filter((at) => at > 120_000);
    expect(after).toHaveLength(298);
    // Held to the taught rate for a minute, then raised by more each second while admitted:
    // the 298 take under a minute and a half (a tenth more a minute: 275 s).
    expect((after.at(-1) as number) - 120_000).toBeLessThan(90_000);
    pacedFetch.pacer.dispose();
  });
});

describe('a call queued behind a refused one', () => {
  /** `https://api.test` refuses its first request with a 429 saying `headers`, then admits. */
  function refusesFirst(headers: Record<string, string>): void {
    let hits = 0;
    server.use(
      http.get('https://api.test/*', () =>
        ++hits > 1 ? HttpResponse.json({}) : new HttpResponse(null, { status: 429, headers }),
      ),
    );
  }

  // The answer is read inside the refused request's task, so its wait blocks the key before the
  // pacer starts the next call: read after the task settled, the call behind a slow start's
  // first request went out at once behind a `Retry-After: 5` and earned the same refusal (one
  // more refusal per refusal, `measure:arrivals`: 1,101 -> 1,073 over its rows).
  it.each([
    ['a Retry-After of 5 s', '5', 5000],
    ['a Retry-After of 0.1 s, as Azure', undefined, 100],
  ] as const)('waits for %s, which it did not earn', async (_wait, retryAfter, waitMs) => {
    const clock = createManualClock();
    refusesFirst(
      retryAfter === undefined ? { 'retry-after-ms': '100' } : { 'retry-after': retryAfter },
    );
    const { fetch, sent } = stampedFetch(clock);
    const pacedFetch = createPacedFetch({ limits: { limit: 100, windowMs: 1000 }, fetch, clock });
    const calls = [pacedFetch('https://api.test/a'), pacedFetch('https://api.test/b')];
    await drive(clock, pacedFetch.pacer, 20_000);
    expect((await Promise.all(calls)).map((response) => response.status)).toEqual([200, 200]);
    expect(sent.map(({ at, url }) => `${at} ${url.slice(16)}`).sort()).toEqual(
      [`0 /a`, `${waitMs} /a`, `${waitMs} /b`].sort(),
    );
  });

  it('asks a shared store to block once for a wait it read in the task', async () => {
    // The task blocks the key for the stated wait before it settles; told the same refusal
    // after, the pacer asked the store again (a Redis round trip per refusal) for the same wait.
    const clock = createManualClock();
    refusesFirst({ 'retry-after': '5' });
    // Synchronous: `drive` moves the clock only once nothing is awaited.
    const shared = fakeStore({ now: clock.now, synchronous: true });
    const pacedFetch = createPacedFetch({
      limits: { limit: 100, windowMs: 1000 },
      store: shared.store,
      clock,
    });
    const call = pacedFetch('https://api.test/a');
    await drive(clock, pacedFetch.pacer, 20_000);
    expect((await call).status).toBe(200);
    expect(shared.blocks).toEqual([{ key: 'https://api.test', ms: 5000 }]);
    pacedFetch.pacer.dispose();
  });
});

describe('a refusal whose body never ends', () => {
  it('holds no permit of its key: its body hint is read after its task settled', async () => {
    // A 429 without a wait in its headers has its JSON body read for a hint (Discord's
    // `retry_after`), which a hostile or broken server may trickle forever: read inside the
    // task, it held the key's only permit of a slow start, and every call behind it waited.
    const clock = createManualClock();
    server.use(
      http.get('https://api.test/stuck', () => {
        const body = new ReadableStream({ start() {} });
        return new HttpResponse(body, {
          status: 429,
          headers: { 'content-type': 'application/json' },
        });
      }),
      http.get('https://api.test/ok', () => HttpResponse.json({})),
    );
    const pacedFetch = createPacedFetch({ limits: { limit: 100, windowMs: 1000 }, clock });
    void pacedFetch('https://api.test/stuck');
    const behind = pacedFetch('https://api.test/ok');
    await drive(clock, pacedFetch.pacer, 10_000);
    expect((await behind).status).toBe(200);
  });
});
