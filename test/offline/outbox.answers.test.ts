import { describe, expect, it } from 'vitest';
import { isOutboxSendError } from '../../src/offline/index.js';
import { enqueueWrites, HttpResponse, harness, recordingServer } from './support.js';

describe('createOutbox: what an answer does to an entry', () => {
  it.each([200, 201, 204])(
    'removes the entry after %i and hands the response to onSent',
    async (status) => {
      const h = harness();
      const { arrivals } = recordingServer(h.clock, () => status);
      const [entry] = await enqueueWrites(h.outbox, 1);
      await h.drive(1000);
      expect(arrivals).toHaveLength(1);
      expect(h.sent.map((sent) => sent.id)).toEqual([entry?.id]);
      expect(await h.outbox.list()).toEqual([]);
      expect(h.outbox.getSnapshot()).toMatchObject({ pending: 0, sent: 1, rejected: 0 });
    },
  );

  it.each([400, 401, 403, 404, 409, 410, 422])(
    'removes the entry after %i and reports it to onRejected with the response, unsent again',
    async (status) => {
      const h = harness();
      const { arrivals } = recordingServer(h.clock, () =>
        HttpResponse.json({ error: 'no' }, { status }),
      );
      const [entry] = await enqueueWrites(h.outbox, 2);
      await h.drive(60_000);
      // Both were tried once: a refused entry does not hold back the next one of its key.
      expect(arrivals.map((arrival) => arrival.body)).toEqual(['{"n":0}', '{"n":1}']);
      expect(h.rejected[0]).toMatchObject({ status, body: '{"error":"no"}' });
      expect(h.rejected[0]?.entry.id).toBe(entry?.id);
      expect(h.outbox.getSnapshot()).toMatchObject({ pending: 0, sent: 0, rejected: 2 });
    },
  );

  it.each([408, 429, 500, 502, 503, 504])(
    'keeps the entry after %i, holds its key, and sends it again after the backoff',
    async (status) => {
      const h = harness({ retry: false });
      let failures = 0;
      const { arrivals } = recordingServer(h.clock, () => (failures++ === 0 ? status : 200));
      await enqueueWrites(h.outbox, 2);
      await h.drive(100);
      expect(arrivals.map((arrival) => [arrival.body, arrival.status])).toEqual([
        ['{"n":0}', status],
      ]);
      const snapshot = h.outbox.getSnapshot();
      expect(snapshot.pending).toBe(2);
      expect(isOutboxSendError(snapshot.lastError)).toBe(true);
      expect(snapshot.lastError).toMatchObject({ status, retryAfterMs: 500 });
      expect(snapshot.lastError?.message).toMatch(`got ${status}`);
      const [stored] = await h.outbox.list();
      expect(stored).toMatchObject({ attempts: 1, lastFailure: 'status' });
      await h.drive(5_000);
      // Where the paced fetch blocked the key after 429/503 (its random backoff, up to
      // 1000 ms), the entry waits for that too: never earlier than the outbox's 500 ms.
      expect(arrivals.slice(1).map((arrival) => [arrival.body, arrival.status])).toEqual([
        ['{"n":0}', 200],
        ['{"n":1}', 200],
      ]);
      expect(arrivals[1]?.at).toBeGreaterThanOrEqual(500);
      expect(h.outbox.getSnapshot()).toMatchObject({ pending: 0, lastError: undefined });
    },
  );

  it('waits the Retry-After of a 503 (which the paced fetch does not retry for a POST) before the next attempt', async () => {
    const h = harness();
    let failures = 0;
    const { arrivals } = recordingServer(h.clock, () =>
      failures++ === 0
        ? new HttpResponse(null, { status: 503, headers: { 'retry-after': '7' } })
        : new HttpResponse(null, { status: 201 }),
    );
    await enqueueWrites(h.outbox, 3);
    await h.drive(100);
    expect(h.outbox.getSnapshot().nextAttemptAt).toBe(h.clock.now() - 100 + 7000);
    await h.drive(20_000);
    expect(arrivals.map((arrival) => [arrival.at, arrival.body, arrival.status])).toEqual([
      [0, '{"n":0}', 503],
      [7000, '{"n":0}', 201],
      [7000, '{"n":1}', 201],
      [7000, '{"n":2}', 201],
    ]);
  });

  it('lets the paced fetch retry a 429 after its Retry-After, first in line: the entry goes once', async () => {
    const h = harness();
    let refused = false;
    const { arrivals } = recordingServer(h.clock, () => {
      if (refused) return 200;
      refused = true;
      return new HttpResponse(null, { status: 429, headers: { 'retry-after': '2' } });
    });
    await enqueueWrites(h.outbox, 3);
    await h.drive(10_000);
    expect(arrivals.map((arrival) => [arrival.at, arrival.body, arrival.status])).toEqual([
      [0, '{"n":0}', 429],
      [2000, '{"n":0}', 200],
      [2000, '{"n":1}', 200],
      [2000, '{"n":2}', 200],
    ]);
    expect(h.sent).toHaveLength(3);
  });

  it('backs off 0.5 s, 1 s, 2 s, ... capped at maxRetryDelayMs for an entry that keeps failing', async () => {
    // random() = 0 in the harness: each wait is half its ceiling (equal jitter).
    const h = harness({ retry: false, retryDelayMs: 1000, maxRetryDelayMs: 8000, limit: 100 });
    const { arrivals } = recordingServer(h.clock, (index) => (index < 7 ? 500 : 200));
    await enqueueWrites(h.outbox, 2);
    await h.drive(60_000);
    expect(arrivals.map((arrival) => arrival.at)).toEqual([
      0, 500, 1500, 3500, 7500, 11_500, 15_500, 19_500, 19_500,
    ]);
    expect(arrivals.map((arrival) => arrival.body).slice(-2)).toEqual(['{"n":0}', '{"n":1}']);
  });

  it('keeps the entry after a network error and retries it at once when the network comes back', async () => {
    const h = harness();
    let down = true;
    const { arrivals } = recordingServer(h.clock, () => 200);
    const { server } = await import('../support/msw.js');
    const { http } = await import('msw');
    server.use(http.all('https://api.test/*', () => (down ? HttpResponse.error() : undefined)));
    await enqueueWrites(h.outbox, 2);
    await h.drive(100);
    const snapshot = h.outbox.getSnapshot();
    expect(snapshot.lastError).toMatchObject({ status: undefined, retryAfterMs: 500 });
    expect(snapshot.lastError?.message).toMatch('failed in the network');
    expect(await h.outbox.list()).toMatchObject([
      { attempts: 1, lastFailure: 'network' },
      { attempts: 0 },
    ]);
    // The network comes back at 300 ms, before the backoff ends: no need to wait it out.
    down = false;
    h.clock.set(h.clock.now() + 200);
    h.network.set(false);
    h.network.set(true);
    await h.settle();
    expect(arrivals.map((arrival) => arrival.at)).toEqual([300, 300]);
  });

  it('drops an entry after maxAttempts answers without a definitive one, reports it, and lets its key go on', async () => {
    const h = harness({ retry: false, maxAttempts: 3, limit: 100 });
    const { arrivals } = recordingServer(h.clock, (_, request) =>
      request.headers.get('x-poison') === null ? 200 : 500,
    );
    await h.outbox.enqueue('https://api.test/poison', {
      method: 'POST',
      headers: { 'x-poison': '1' },
      body: 'x',
    });
    await enqueueWrites(h.outbox, 1);
    await h.drive(60_000);
    expect(arrivals.map((arrival) => [arrival.path, arrival.status])).toEqual([
      ['/poison', 500],
      ['/poison', 500],
      ['/poison', 500],
      ['/items', 200],
    ]);
    expect(h.dropped).toHaveLength(1);
    expect(h.dropped[0]).toMatchObject({ reason: 'attempts', entry: { attempts: 3 } });
    expect(h.outbox.getSnapshot()).toMatchObject({ dropped: 1, sent: 1, pending: 0 });
  });

  it('sends one Idempotency-Key per entry, the same on every attempt and after a reload', async () => {
    const first = harness({ retry: false, online: false });
    const { arrivals } = recordingServer(first.clock, (index) => (index === 0 ? 500 : 200));
    const [a, b] = await enqueueWrites(first.outbox, 2);
    first.network.set(true);
    await first.drive(100);
    expect(arrivals.map((arrival) => arrival.idempotencyKey)).toEqual([a?.id]);
    // A reload before the retry: a new page, the same stored key.
    await first.outbox.close();
    const second = harness({ retry: false, indexedDB: first.indexedDB });
    await second.drive(10_000);
    expect(arrivals.map((arrival) => arrival.idempotencyKey)).toEqual([a?.id, a?.id, b?.id]);
    expect(a?.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a?.id).not.toBe(b?.id);
  });

  it("keeps a request's own Idempotency-Key, uses a custom header name, or none at all", async () => {
    const own = harness({ online: false });
    const entry = await own.outbox.enqueue('https://api.test/x', {
      method: 'POST',
      headers: { 'Idempotency-Key': 'mine' },
    });
    expect(entry.headers).toContainEqual(['idempotency-key', 'mine']);
    const custom = harness({ online: false, idempotencyKeyHeader: 'X-Request-Id' });
    const second = await custom.outbox.enqueue('https://api.test/x', { method: 'POST' });
    expect(second.headers).toContainEqual(['x-request-id', second.id]);
    expect(second.headers.some(([name]) => name === 'idempotency-key')).toBe(false);
    const none = harness({ online: false, idempotencyKeyHeader: false });
    const third = await none.outbox.enqueue('https://api.test/x', { method: 'POST' });
    expect(third.headers).toEqual([]);
  });
});
