import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import { describe, expect, it } from 'vitest';
import {
  indexedDBStorage,
  memoryStorage,
  type OutboxRecord,
  type OutboxStorage,
} from '../../src/offline/index.js';

function record(n: number, body: ArrayBuffer | null = null): OutboxRecord {
  return {
    v: 1,
    id: `id-${n}`,
    key: 'https://api.test',
    method: 'POST',
    url: `https://api.test/items/${n}`,
    headers: [['content-type', 'text/plain']],
    body,
    credentials: 'same-origin',
    mode: 'cors',
    redirect: 'follow',
    referrerPolicy: '',
    createdAt: 1000 + n,
    attempts: 0,
    nextAttemptAt: 0,
    lastFailure: null,
  };
}

const kinds: Array<[string, () => OutboxStorage]> = [
  ['memoryStorage', () => memoryStorage()],
  ['indexedDBStorage', () => indexedDBStorage({ name: 'contract', indexedDB: new IDBFactory() })],
];

describe.each(kinds)('%s keeps the OutboxStorage contract', (_, create) => {
  it('numbers records in the order they were added and lists them in that order', async () => {
    const storage = create();
    const seqs = [];
    for (let n = 0; n < 5; n++) seqs.push(await storage.add(record(n), Number.POSITIVE_INFINITY));
    expect(seqs).toEqual([...seqs].sort((a, b) => (a ?? 0) - (b ?? 0)));
    expect(new Set(seqs).size).toBe(5);
    const listed = await storage.list();
    expect(listed.map((stored) => stored.seq)).toEqual(seqs);
    expect(listed.map((stored) => stored.record)).toEqual([0, 1, 2, 3, 4].map((n) => record(n)));
    await storage.close?.();
  });

  it('keeps the body bytes, and hands out copies', async () => {
    const storage = create();
    const bytes = new Uint8Array([1, 2, 3, 255]);
    const seq = (await storage.add(record(1, bytes.buffer), 10)) as number;
    bytes[0] = 9;
    const [stored] = await storage.list();
    expect(stored?.seq).toBe(seq);
    const body = (stored as { record: OutboxRecord }).record.body as ArrayBuffer;
    expect(Object.prototype.toString.call(body)).toBe('[object ArrayBuffer]');
    expect([...new Uint8Array(body)]).toEqual([1, 2, 3, 255]);
    new Uint8Array(body)[1] = 7;
    const [again] = await storage.list();
    expect([
      ...new Uint8Array((again as { record: OutboxRecord }).record.body as ArrayBuffer),
    ]).toEqual([1, 2, 3, 255]);
    await storage.close?.();
  });

  it('adds nothing at maxEntries, and says so with undefined', async () => {
    const storage = create();
    await storage.add(record(1), 2);
    await storage.add(record(2), 2);
    const results = await Promise.all([storage.add(record(3), 2), storage.add(record(4), 2)]);
    expect(results).toEqual([undefined, undefined]);
    expect(await storage.list()).toHaveLength(2);
    await storage.close?.();
  });

  it('updates a record only while it is there, deletes idempotently, never reuses a seq', async () => {
    const storage = create();
    const a = (await storage.add(record(1), 10)) as number;
    const b = (await storage.add(record(2), 10)) as number;
    await storage.update(a, { ...record(1), attempts: 3, nextAttemptAt: 99 });
    await storage.delete(b);
    await storage.delete(b);
    await storage.update(b, record(2));
    const listed = await storage.list();
    expect(listed.map((stored) => stored.seq)).toEqual([a]);
    expect(listed[0]?.record).toMatchObject({ attempts: 3, nextAttemptAt: 99 });
    const c = (await storage.add(record(3), 10)) as number;
    expect(c).toBeGreaterThan(b);
    await storage.close?.();
  });
});

describe('indexedDBStorage', () => {
  it('shares one store and one order between two tabs of the origin', async () => {
    const indexedDB = new IDBFactory();
    const tabA = indexedDBStorage({ name: 'shared', indexedDB });
    const tabB = indexedDBStorage({ name: 'shared', indexedDB });
    const seqs = [
      await tabA.add(record(1), 10),
      await tabB.add(record(2), 10),
      await tabA.add(record(3), 10),
    ];
    expect((await tabB.list()).map((stored) => stored.seq)).toEqual(seqs);
    expect(await tabA.add(record(4), 3)).toBeUndefined();
    await tabA.close?.();
    await tabB.close?.();
  });

  it('reopens after close(), and steps aside when another tab deletes or upgrades the database', async () => {
    const indexedDB = new IDBFactory();
    const storage = indexedDBStorage({ name: 'reopen', indexedDB });
    await storage.add(record(1), 10);
    await storage.close?.();
    expect(await storage.list()).toHaveLength(1);
    // Another tab deletes the database: our connection gets `versionchange` and closes itself,
    // so the delete is not blocked, and the next call opens a fresh database.
    await new Promise<void>((resolve, reject) => {
      const request = indexedDB.deleteDatabase('fetch-pacer-outbox:reopen');
      request.onsuccess = () => resolve();
      request.onerror = () => reject(request.error);
      request.onblocked = () => reject(new Error('blocked'));
    });
    expect(await storage.list()).toEqual([]);
    await storage.add(record(2), 10);
    expect(await storage.list()).toHaveLength(1);
    await storage.close?.();
  });

  it('rejects when IndexedDB is missing, so the outbox can say so', async () => {
    const storage = indexedDBStorage({ name: 'none' });
    const saved = globalThis.indexedDB;
    // @ts-expect-error: removing the global on purpose
    delete globalThis.indexedDB;
    try {
      await expect(storage.list()).rejects.toThrow('IndexedDB is not available here');
    } finally {
      globalThis.indexedDB = saved;
    }
  });
});
