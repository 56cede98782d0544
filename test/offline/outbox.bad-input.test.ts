import { openDB } from 'idb';
import { describe, expect, it, vi } from 'vitest';
import {
  isOutboxBodyError,
  isOutboxClosedError,
  isOutboxCorruptEntryError,
  isOutboxFullError,
  isOutboxStorageError,
  OutboxBodyError,
  OutboxStorageError,
} from '../../src/offline/index.js';
import { PacerError } from '../../src/pacer/errors.js';
import { EPOCH, enqueueWrites, harness, recordingServer } from './support.js';

const quotaError = () => new DOMException('The quota has been exceeded.', 'QuotaExceededError');

/** Writes raw values straight into the outbox's object store, as a bug or a bit flip would. */
async function writeRaw(indexedDB: IDBFactory, values: unknown[]): Promise<void> {
  vi.stubGlobal('indexedDB', indexedDB);
  try {
    const db = await openDB('fetch-pacer-outbox:test');
    for (const value of values) await db.add('entries', value);
    db.close();
  } finally {
    vi.unstubAllGlobals();
  }
}

describe('createOutbox: bad input is reported, and nothing else is lost', () => {
  it('rejects a request whose body cannot be read with OutboxBodyError and stores nothing', async () => {
    const h = harness({ online: false });
    await enqueueWrites(h.outbox, 1);
    const broken = new ReadableStream({
      pull(controller) {
        controller.error(new Error('disk unplugged'));
      },
    });
    const error = await h.outbox
      .enqueue('https://api.test/upload', {
        method: 'POST',
        body: broken,
        duplex: 'half',
      } as RequestInit)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OutboxBodyError);
    expect(error).toBeInstanceOf(PacerError);
    expect(isOutboxBodyError(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /^\[fetch-pacer\] The outbox 'test' could not read the body of POST https:\/\/api\.test\/upload: nothing was stored/,
    );
    expect(((error as Error).cause as Error).message).toBe('disk unplugged');
    // A body already read elsewhere, too.
    const used = new Request('https://api.test/x', { method: 'POST', body: 'once' });
    await used.text();
    await expect(h.outbox.enqueue(used)).rejects.toSatisfy(isOutboxBodyError);
    expect(await h.outbox.list()).toHaveLength(1);
  });

  it('rejects with OutboxStorageError (quotaExceeded) when the storage is full, keeping every stored entry', async () => {
    const h = harness({ online: false });
    const stored = await enqueueWrites(h.outbox, 2);
    h.storage.failNext('add', quotaError());
    const error = await h.outbox
      .enqueue('https://api.test/big', { method: 'POST', body: 'x'.repeat(1000) })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OutboxStorageError);
    expect(error).toMatchObject({ quotaExceeded: true, operation: 'add', outbox: 'test' });
    expect((error as Error).message).toMatch(
      "[fetch-pacer] The outbox 'test' could not store the request: nothing was stored: the storage quota is exceeded.",
    );
    expect(h.outbox.getSnapshot().lastError).toBe(error);
    // The next write goes in, and all are sent once online.
    await enqueueWrites(h.outbox, 1);
    const { arrivals } = recordingServer(h.clock);
    h.network.set(true);
    await h.drive(5000);
    expect(arrivals.map((arrival) => arrival.idempotencyKey).slice(0, 2)).toEqual(
      stored.map((entry) => entry.id),
    );
    expect(arrivals).toHaveLength(3);
  });

  it('rejects with OutboxFullError at maxEntries, atomically, storing nothing', async () => {
    const h = harness({ online: false, maxEntries: 3 });
    await enqueueWrites(h.outbox, 3);
    const results = await Promise.allSettled([
      h.outbox.enqueue('https://api.test/4', { method: 'POST' }),
      h.outbox.enqueue('https://api.test/5', { method: 'POST' }),
    ]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    const reason = (results[0] as PromiseRejectedResult).reason;
    expect(isOutboxFullError(reason)).toBe(true);
    expect(reason.message).toBe(
      "[fetch-pacer] The outbox 'test' holds `maxEntries` (3) entries: the request was not stored. Wait until it drains, or raise `maxEntries`.",
    );
    expect(await h.outbox.list()).toHaveLength(3);
  });

  it('reports a corrupt stored entry with its value, deletes it, and sends the others', async () => {
    const h = harness({ online: false });
    await enqueueWrites(h.outbox, 1);
    await writeRaw(h.indexedDB, [{ v: 1, id: 'x', url: 42 }, 'garbage']);
    await enqueueWrites(h.outbox, 1);
    const { arrivals } = recordingServer(h.clock);
    h.network.set(true);
    await h.drive(5000);
    expect(arrivals.map((arrival) => arrival.body)).toEqual(['{"n":0}', '{"n":0}']);
    expect(h.dropped.map((drop) => drop.reason)).toEqual(['corrupt', 'corrupt']);
    const [first, second] = h.dropped;
    expect(first).toMatchObject({ seq: 2, record: { v: 1, id: 'x', url: 42 } });
    expect(second).toMatchObject({ seq: 3, record: 'garbage' });
    if (first?.reason !== 'corrupt') throw new Error('expected a corrupt drop');
    expect(isOutboxCorruptEntryError(first.error)).toBe(true);
    expect(first.error.message).toBe(
      "[fetch-pacer] The outbox 'test' found a corrupt entry (seq 2): `key` is not a string. It was removed and reported with its stored value; the other entries are untouched.",
    );
    expect(await h.outbox.list()).toEqual([]);
    expect(h.outbox.getSnapshot()).toMatchObject({ dropped: 2, sent: 2 });
  });

  it('leaves an entry of a later format version alone, reported once, unsent', async () => {
    const h = harness({ online: false });
    await h.settle();
    await writeRaw(h.indexedDB, [{ v: 2, id: 'future' }]);
    await enqueueWrites(h.outbox, 1);
    const { arrivals } = recordingServer(h.clock);
    h.network.set(true);
    await h.drive(5000);
    await h.outbox.flush();
    await h.settle();
    expect(arrivals).toHaveLength(1);
    expect(h.errors.map((error) => error.message)).toEqual([
      "[fetch-pacer] The outbox 'test' holds an entry (seq 1) of a later fetch-pacer (format version 2 is newer than 1): it is left in the store, unsent. Update the library in this tab.",
    ]);
    expect(h.dropped).toEqual([]);
  });

  it('stops a flush when the storage fails, keeps every entry, and tries again after a backoff', async () => {
    const h = harness({ online: false });
    await enqueueWrites(h.outbox, 2);
    const { arrivals } = recordingServer(h.clock);
    h.storage.failNext('delete', new DOMException('disk I/O error', 'UnknownError'));
    h.network.set(true);
    await h.drive(100);
    // Sent, but the delete failed: the entry is still stored (the server may see it twice,
    // with the same idempotency key), and the flush stopped.
    expect(arrivals).toHaveLength(1);
    expect(h.errors).toHaveLength(1);
    expect(isOutboxStorageError(h.errors[0])).toBe(true);
    expect(h.errors[0]?.message).toBe(
      "[fetch-pacer] The outbox 'test' could not delete its entries: they stay as they are and the outbox tries again later: the storage failed (disk I/O error).",
    );
    expect(h.outbox.getSnapshot().nextAttemptAt).toBe(EPOCH + 500);
    await h.drive(5000);
    expect(arrivals.map((arrival) => arrival.body)).toEqual(['{"n":0}', '{"n":0}', '{"n":1}']);
    expect(arrivals[0]?.idempotencyKey).toBe(arrivals[1]?.idempotencyKey);
    expect(await h.outbox.list()).toEqual([]);
  });

  it('drops an entry older than maxRetentionMs, reports it, and never sends it', async () => {
    const h = harness({ online: false, maxRetentionMs: 60_000 });
    await enqueueWrites(h.outbox, 1);
    await h.drive(30_000);
    await enqueueWrites(h.outbox, 1);
    await h.drive(61_000);
    const { arrivals } = recordingServer(h.clock);
    h.network.set(true);
    await h.drive(70_000);
    expect(arrivals.map((arrival) => arrival.at)).toEqual([61_000]);
    expect(h.dropped).toMatchObject([{ reason: 'expired', entry: { createdAt: EPOCH } }]);
    expect(h.outbox.getSnapshot()).toMatchObject({ pending: 0, dropped: 1, sent: 1 });
  });

  it('drops an entry that expires while it waits for a retry, and its key goes on', async () => {
    const h = harness({ retry: false, maxRetentionMs: 10_000, maxRetryDelayMs: 4000, limit: 100 });
    const { arrivals } = recordingServer(h.clock, (_, request) =>
      request.url.endsWith('/poison') ? 500 : 200,
    );
    await h.outbox.enqueue('https://api.test/poison', { method: 'POST' });
    await h.drive(5000);
    await enqueueWrites(h.outbox, 1);
    await h.drive(30_000);
    // 0, 500, 1500, 3500, 5500, 7500, 9500; at 11_500 it is too old.
    expect(arrivals.filter((arrival) => arrival.path === '/poison')).toHaveLength(7);
    expect(arrivals.at(-1)).toMatchObject({ path: '/items', at: 11_500 });
    expect(h.dropped).toMatchObject([{ reason: 'expired', entry: { attempts: 7 } }]);
  });

  it('rejects enqueue after close() and settles a flush in progress', async () => {
    const h = harness({ limit: 1 });
    recordingServer(h.clock);
    await enqueueWrites(h.outbox, 3);
    await h.settle();
    // The second entry waits in the pacer for its permit; close aborts it, the entry stays.
    await h.outbox.close();
    expect(h.outbox.getSnapshot()).toMatchObject({ closed: true, flushing: false, inFlight: 0 });
    await expect(h.outbox.enqueue('https://api.test/x')).rejects.toSatisfy(isOutboxClosedError);
    const again = h.reopen({ network: { isOnline: () => false, subscribe: () => () => {} } });
    expect(
      (await again.list()).map((entry) => entry.body && new TextDecoder().decode(entry.body)),
    ).toEqual(['{"n":1}', '{"n":2}']);
  });
});
