import { describe, expect, it } from 'vitest';
import { memoryStorage } from '../../src/offline/index.js';
import { EPOCH, enqueueWrites, harness, recordingServer, tracked } from './support.js';

describe('createOutbox: draining in order, at the pace', () => {
  it('keeps 50 writes made offline and, once online, sends each once, in order, on its ideal slot', async () => {
    const h = harness({ online: false, limit: 10, windowMs: 1000 });
    const { arrivals } = recordingServer(h.clock);
    const entries = await enqueueWrites(h.outbox, 50);
    await h.drive(60_000);
    expect(arrivals).toHaveLength(0);
    expect(h.outbox.getSnapshot().pending).toBe(50);

    h.network.set(true);
    const online = h.clock.now() - EPOCH;
    await h.drive(120_000);

    expect(arrivals.map((arrival) => arrival.body)).toEqual(
      Array.from({ length: 50 }, (_, i) => JSON.stringify({ n: i })),
    );
    // 10 per second, as the server allows: 10 at once, 10 a second later, ...
    expect(arrivals.map((arrival) => arrival.at)).toEqual(
      Array.from({ length: 50 }, (_, i) => online + Math.floor(i / 10) * 1000),
    );
    expect(arrivals.every((arrival) => arrival.status === 200)).toBe(true);
    expect(h.sent.map((entry) => entry.id)).toEqual(entries.map((entry) => entry.id));
    expect(h.outbox.getSnapshot()).toMatchObject({ pending: 0, inFlight: 0, sent: 50 });
    expect(await h.outbox.list()).toEqual([]);
  });

  it('sends what a previous page stored when a new outbox opens over the same database', async () => {
    const first = harness({ online: false });
    const { arrivals } = recordingServer(first.clock);
    const entries = await enqueueWrites(first.outbox, 5);
    // The page goes away without a word (a reload); the database stays.
    const second = harness({ online: true, indexedDB: first.indexedDB });
    await second.drive(10_000);

    expect(arrivals.map((arrival) => arrival.body)).toEqual(
      entries.map((_, i) => JSON.stringify({ n: i })),
    );
    // The same idempotency keys as the first page stored: a server can tell a repeat.
    expect(arrivals.map((arrival) => arrival.idempotencyKey)).toEqual(
      entries.map((entry) => entry.id),
    );
    expect(second.sent.map((entry) => entry.seq)).toEqual(entries.map((entry) => entry.seq));
    expect(await second.outbox.list()).toEqual([]);
  });

  it('starts sending on the online event, on flush(), and right after an enqueue while online', async () => {
    const h = harness({ online: false });
    const { arrivals } = recordingServer(h.clock);
    await enqueueWrites(h.outbox, 1);
    await h.drive(1000);
    expect(arrivals).toHaveLength(0);
    // flush() while offline reads the store and sends nothing.
    await h.outbox.flush();
    expect(arrivals).toHaveLength(0);
    h.network.set(true);
    await h.drive(2000);
    expect(arrivals).toHaveLength(1);
    await enqueueWrites(h.outbox, 1);
    await h.drive(3000);
    expect(arrivals).toHaveLength(2);
    expect(h.outbox.getSnapshot().pending).toBe(0);
  });

  it('sends each key in its own order while one key waits on a failing entry', async () => {
    const h = harness({ online: false, limit: 100 });
    const a = recordingServer(h.clock, (index) => (index === 0 ? 500 : 200), 'https://a.test');
    const b = recordingServer(h.clock, () => 200, 'https://b.test');
    await enqueueWrites(h.outbox, 3, 'https://a.test/items');
    await enqueueWrites(h.outbox, 3, 'https://b.test/items');
    h.network.set(true);
    await h.drive(100);
    // a.test's first entry failed: its key waits (its later entries must not overtake it).
    expect(a.arrivals.map((arrival) => [arrival.body, arrival.status])).toEqual([['{"n":0}', 500]]);
    // b.test did not wait for a.test.
    expect(b.arrivals.map((arrival) => arrival.body)).toEqual(['{"n":0}', '{"n":1}', '{"n":2}']);
    // random() = 0: the first backoff is half of `retryDelayMs` (1000 ms).
    await h.drive(1000);
    expect(a.arrivals.map((arrival) => [arrival.at, arrival.body, arrival.status])).toEqual([
      [0, '{"n":0}', 500],
      [500, '{"n":0}', 200],
      [500, '{"n":1}', 200],
      [500, '{"n":2}', 200],
    ]);
  });

  it('sends unrelated writes in parallel when keyed by URL, still paced', async () => {
    const h = harness({ online: false, limit: 2, key: (request) => request.url });
    let failedA = false;
    const { arrivals } = recordingServer(h.clock, (_, request) => {
      if (failedA || !request.url.endsWith('/a')) return 200;
      failedA = true;
      // A 500, which the outbox retries and the paced fetch does not: a 503 would block the
      // paced fetch's key (the origin) for /b too.
      return 500;
    });
    await h.outbox.enqueue('https://api.test/a', { method: 'PUT', body: 'a' });
    await h.outbox.enqueue('https://api.test/b', { method: 'PUT', body: 'b' });
    h.network.set(true);
    await h.drive(3000);
    // /a failed first; /b did not wait behind it. /a's retry takes the third permit of 2/s.
    expect(
      arrivals.map((arrival) => `${arrival.at} ${arrival.path} ${arrival.status}`).sort(),
    ).toEqual(['0 /a 500', '0 /b 200', '1000 /a 200']);
  });

  it('replays every body type a Request can carry byte for byte, with its content type', async () => {
    const h = harness({ online: false, storage: tracked(memoryStorage()) });
    const seen: Array<[string | null, string]> = [];
    recordingServer(h.clock, (_, request) => {
      seen.push([request.headers.get('content-type'), '']);
      return 200;
    });
    const bytes = new Uint8Array([0, 1, 2, 253, 254, 255]);
    const form = new FormData();
    form.set('field', 'value');
    form.set('file', new Blob(['file body'], { type: 'text/plain' }), 'a.txt');
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('streamed'));
        controller.close();
      },
    });
    const bodies: BodyInit[] = [
      'text',
      JSON.stringify({ a: 1 }),
      new Blob(['blob'], { type: 'application/x-blob' }),
      bytes,
      bytes.buffer,
      new URLSearchParams({ q: 'a b' }),
      form,
    ];
    const entries = [];
    for (const body of bodies) {
      entries.push(await h.outbox.enqueue('https://api.test/body', { method: 'POST', body }));
    }
    entries.push(
      await h.outbox.enqueue('https://api.test/body', {
        method: 'POST',
        body: stream,
        duplex: 'half',
      } as RequestInit),
    );
    const expected = await Promise.all(
      [...bodies, 'streamed'].map(async (body) => {
        const request = new Request('https://api.test/body', { method: 'POST', body });
        return new Uint8Array(await request.arrayBuffer());
      }),
    );
    entries.forEach((entry, i) => {
      // FormData's bytes hold a random boundary: that one is checked by parsing, below.
      if (i !== 6) expect(new Uint8Array(entry.body ?? new ArrayBuffer(0))).toEqual(expected[i]);
    });
    // FormData's multipart boundary is in the stored content type, so the bytes still parse.
    const multipart = new Request('https://api.test', {
      method: 'POST',
      headers: entries[6]?.headers as [string, string][],
      body: entries[6]?.body ?? null,
    });
    const parsed = await multipart.formData();
    expect(parsed.get('field')).toBe('value');
    expect(await (parsed.get('file') as File).text()).toBe('file body');
    h.network.set(true);
    await h.drive(5000);
    expect(seen.map(([type]) => type)).toEqual([
      'text/plain;charset=UTF-8',
      'text/plain;charset=UTF-8',
      'application/x-blob',
      null,
      null,
      'application/x-www-form-urlencoded;charset=UTF-8',
      expect.stringMatching(/^multipart\/form-data; boundary=/),
      null,
    ]);
  });
});
