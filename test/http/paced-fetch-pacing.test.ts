import { HttpResponse, http } from 'msw';
import { describe, expect, it, vi } from 'vitest';
import { createPacedFetch, type PacingInit } from '../../src/http/paced-fetch.js';
import { tokenBucket } from '../../src/index.js';
import type { TaskProgress } from '../../src/pacer/types.js';
import { createManualClock } from '../../src/testing/index.js';
import { stampedFetch } from '../support/backends.js';
import { drive, until } from '../support/flush.js';
import { server } from '../support/msw.js';

const API = 'https://api.test';

/** An API answering every path with 200 and counting what it got. */
function okApi() {
  const paths: string[] = [];
  server.use(
    http.all(`${API}/*`, ({ request }) => {
      paths.push(new URL(request.url).pathname);
      return HttpResponse.json({ ok: true });
    }),
  );
  return paths;
}

/** A paced fetch of `limit` per second on a manual clock. */
function pacedOnClock(limit: number, options: { key?: (request: Request) => string } = {}) {
  const clock = createManualClock();
  const { fetch, sent } = stampedFetch(clock);
  const api = createPacedFetch({
    limits: { limit, windowMs: 1000, algorithm: tokenBucket },
    // Its calls go out at once, as its bucket allows (no slow start to wait behind).
    learn: { slowStart: false },
    clock,
    fetch,
    ...options,
  });
  return { clock, api, sent };
}

/** Every progress report of one call, in order. */
function progressLog() {
  const seen: TaskProgress[] = [];
  return { seen, onProgress: (progress: TaskProgress) => seen.push(progress) };
}

describe('init.pacing: one call paced its own way', () => {
  it('takes the key it is given, without asking the key function', async () => {
    okApi();
    const keyOf = vi.fn((request: Request) => new URL(request.url).origin);
    const { api } = pacedOnClock(5, { key: keyOf });
    const response = await api(`${API}/reports/1`, { pacing: { key: 'reports' } });
    expect(response.status).toBe(200);
    expect(keyOf).not.toHaveBeenCalled();
    expect(api.pacer.inspect('reports').level).toBe(4);
    expect(api.pacer.inspect(API).level).toBe(5);
  });

  it('takes the cost it is given over the cost function', async () => {
    okApi();
    const clock = createManualClock();
    const api = createPacedFetch({
      limits: { limit: 5, windowMs: 1000, algorithm: tokenBucket },
      clock,
      cost: () => 1,
    });
    await api(`${API}/export`, { pacing: { cost: 3 } });
    expect(api.pacer.inspect(API).level).toBe(2);
    await api(`${API}/small`);
    expect(api.pacer.inspect(API).level).toBe(1);
  });

  it('takes the priority it is given: the urgent call starts first when the permit comes', async () => {
    okApi();
    const { clock, api, sent } = pacedOnClock(1);
    await api(`${API}/first`);
    const later = api(`${API}/later`);
    const urgent = api(`${API}/urgent`, { pacing: { priority: 5 } });
    await drive(clock, api.pacer, 3000);
    await Promise.all([later, urgent]);
    expect(sent.map((call) => [new URL(call.url).pathname, call.at])).toEqual([
      ['/first', 0],
      ['/urgent', 1000],
      ['/later', 2000],
    ]);
  });

  it('sends the rest of init as it is (method, headers, body)', async () => {
    let got: [string, string | null, string] | undefined;
    server.use(
      http.post(`${API}/orders`, async ({ request }) => {
        got = [request.method, request.headers.get('x-trace'), await request.text()];
        return HttpResponse.json({ ok: true });
      }),
    );
    const { api } = pacedOnClock(5);
    const init: PacingInit = {
      method: 'POST',
      headers: { 'x-trace': 'abc' },
      body: 'item=42',
      pacing: { key: 'orders' },
    };
    expect((await api(`${API}/orders`, init)).status).toBe(200);
    expect(got).toEqual(['POST', 'abc', 'item=42']);
    // The caller's init is not touched.
    expect(init.pacing).toEqual({ key: 'orders' });
  });

  it('treats pacing: undefined like no pacing', async () => {
    okApi();
    const { api } = pacedOnClock(5);
    expect((await api(`${API}/x`, { pacing: undefined })).status).toBe(200);
    expect(api.pacer.inspect(API).level).toBe(4);
  });

  it.each([
    [
      'fast',
      TypeError,
      "Expected `pacing` to be an object `{ key, cost, priority, onProgress }`, got `'fast'` (string)",
    ],
    [
      null,
      TypeError,
      'Expected `pacing` to be an object `{ key, cost, priority, onProgress }`, got `null`',
    ],
    [
      ['reports'],
      TypeError,
      'Expected `pacing` to be an object `{ key, cost, priority, onProgress }`, got an array',
    ],
    [{ key: 42 }, TypeError, 'Expected `pacing.key` to be a string, got `42` (number)'],
    [
      { cost: { tokens: -3 } },
      RangeError,
      'Expected `pacing.cost.tokens` to be an integer >= 0, got `-3` (number)',
    ],
    [
      { cost: 0 },
      RangeError,
      'Expected `pacing.cost` to be a positive integer or amounts per unit such as `{ requests: 1, tokens: 812 }`, got `0` (number)',
    ],
    [
      { cost: '2' },
      TypeError,
      "Expected `pacing.cost` to be a positive integer or amounts per unit such as `{ requests: 1, tokens: 812 }`, got `'2'` (string)",
    ],
    [
      { priority: Number.NaN },
      RangeError,
      'Expected `pacing.priority` to be a finite number, got `NaN` (number)',
    ],
    [
      { priority: 'high' },
      TypeError,
      "Expected `pacing.priority` to be a finite number, got `'high'` (string)",
    ],
    [
      { onProgress: 'log' },
      TypeError,
      "Expected `pacing.onProgress` to be a function, got `'log'` (string)",
    ],
  ])(
    'rejects pacing %j with a %o naming the field, and sends nothing',
    async (pacing, type, message) => {
      const paths = okApi();
      const { api } = pacedOnClock(5);
      const call = api(`${API}/x`, { pacing } as unknown as PacingInit);
      await expect(call).rejects.toThrow(type);
      await expect(call).rejects.toThrow(`[fetch-pacer] ${message}`);
      expect(paths).toEqual([]);
      expect(api.pacer.getSnapshot().admitted).toBe(0);
    },
  );
});

describe('init.pacing.onProgress', () => {
  it('reports only started for a call that starts at once', async () => {
    okApi();
    const { api } = pacedOnClock(5);
    const log = progressLog();
    await api(`${API}/now`, { pacing: { onProgress: log.onProgress } });
    expect(log.seen).toEqual([{ state: 'started' }]);
  });

  it('reports queued with the exact start, then started on the dot', async () => {
    okApi();
    const { clock, api, sent } = pacedOnClock(1);
    await api(`${API}/first`);
    clock.set(250);
    const log = progressLog();
    const call = api(`${API}/second`, { pacing: { onProgress: log.onProgress } });
    expect(log.seen).toEqual([{ state: 'queued', startAt: 1000 }]);
    await clock.advanceAsync(749);
    expect(log.seen).toHaveLength(1);
    await clock.advanceAsync(1);
    expect(log.seen).toEqual([{ state: 'queued', startAt: 1000 }, { state: 'started' }]);
    expect((await call).status).toBe(200);
    expect(sent.map((request) => request.at)).toEqual([0, 1000]);
  });

  it('reports started, blocked until the Retry-After, then started again for a retried 429', async () => {
    let calls = 0;
    server.use(
      http.get(`${API}/busy`, () => {
        calls++;
        return calls === 1
          ? new HttpResponse('slow down', { status: 429, headers: { 'retry-after': '2' } })
          : HttpResponse.json({ ok: true });
      }),
    );
    const { clock, api, sent } = pacedOnClock(10);
    const log = progressLog();
    const call = api(`${API}/busy`, { pacing: { onProgress: log.onProgress } });
    await until(() => log.seen.length === 2);
    expect(log.seen).toEqual([{ state: 'started' }, { state: 'blocked', until: 2000 }]);
    await drive(clock, api.pacer, 5000);
    expect((await call).status).toBe(200);
    expect(log.seen).toEqual([
      { state: 'started' },
      { state: 'blocked', until: 2000 },
      { state: 'started' },
    ]);
    expect(sent.map((request) => request.at)).toEqual([0, 2000]);
  });

  it('reports nothing more once the call is aborted while queued', async () => {
    const paths = okApi();
    const { clock, api } = pacedOnClock(1);
    await api(`${API}/first`);
    const controller = new AbortController();
    const log = progressLog();
    const call = api(`${API}/second`, {
      signal: controller.signal,
      pacing: { onProgress: log.onProgress },
    });
    expect(log.seen).toEqual([{ state: 'queued', startAt: 1000 }]);
    const reason = new DOMException('changed my mind', 'AbortError');
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
    await clock.advanceAsync(5000);
    expect(log.seen).toEqual([{ state: 'queued', startAt: 1000 }]);
    expect(paths).toEqual(['/first']);
  });
});
