import { describe, expect, it } from 'vitest';
import type { OutboxEntry, OutboxLocks } from '../../src/offline/index.js';
import { enqueueWrites, fakeLocks, harness, recordingServer, until } from './support.js';

describe('createOutbox across tabs', () => {
  it('lets exactly one of two tabs flush: every entry goes once, in enqueue order', async () => {
    const { locks, log } = fakeLocks();
    const a = harness({ online: false, locks, limit: 5 });
    const sentByB: OutboxEntry[] = [];
    const b = a.reopen({ locks, onSent: (entry) => sentByB.push(entry) });
    const { arrivals } = recordingServer(a.clock);
    // Both tabs write, interleaved, into the one store.
    for (let i = 0; i < 10; i++) {
      await (i % 2 === 0 ? a.outbox : b).enqueue('https://api.test/items', {
        method: 'POST',
        body: String(i),
      });
    }
    // Both hear `online` (one network, as two tabs of one browser).
    a.network.set(true);
    await a.drive(10_000);
    expect(arrivals.map((arrival) => arrival.body)).toEqual(
      Array.from({ length: 10 }, (_, i) => String(i)),
    );
    expect(new Set(arrivals.map((arrival) => arrival.idempotencyKey)).size).toBe(10);
    // One tab sent them all; the other took the lock after and found nothing due.
    expect([a.sent.length, sentByB.length].sort()).toEqual([0, 10]);
    expect(log.length).toBeGreaterThanOrEqual(2);
    expect(arrivals.map((arrival) => arrival.at)).toEqual([
      0, 0, 0, 0, 0, 1000, 1000, 1000, 1000, 1000,
    ]);
  });

  it("follows the other tab's changes in its snapshot (BroadcastChannel)", async () => {
    const { locks } = fakeLocks();
    const a = harness({ online: false, locks });
    const b = a.reopen({ locks });
    recordingServer(a.clock);
    await enqueueWrites(a.outbox, 3);
    await until(() => b.getSnapshot().pending === 3);
    a.network.set(true);
    await a.drive(5000);
    await until(() => b.getSnapshot().pending === 0);
    expect(a.outbox.getSnapshot().pending).toBe(0);
  });

  it('flushes from this tab alone when Web Locks refuse, and says so once', async () => {
    const refusing: OutboxLocks = {
      request: () => Promise.reject(new DOMException('opaque origin', 'SecurityError')),
    };
    const h = harness({ online: false, locks: refusing });
    const { arrivals } = recordingServer(h.clock);
    await enqueueWrites(h.outbox, 2);
    h.network.set(true);
    await h.drive(5000);
    await h.outbox.flush();
    expect(arrivals).toHaveLength(2);
    expect(h.errors.map((error) => error.message)).toEqual([
      expect.stringMatching(
        /^\[fetch-pacer\] The outbox 'test' could not take its Web Lock .*; this tab flushes without coordinating with other tabs\.$/,
      ),
    ]);
  });

  it('waits for the lock another tab holds, and stops waiting on close()', async () => {
    const { locks } = fakeLocks();
    let release = () => {};
    const holder = locks.request(
      'fetch-pacer-outbox:test',
      {},
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
        }),
    );
    const h = harness({ online: false, locks });
    const { arrivals } = recordingServer(h.clock);
    await enqueueWrites(h.outbox, 1);
    h.network.set(true);
    await h.drive(1000);
    expect(arrivals).toHaveLength(0);
    // It read the store without the lock, for its snapshot, and waits to send.
    expect(h.outbox.getSnapshot()).toMatchObject({ ready: true, pending: 1, flushing: false });
    release();
    await holder;
    await h.drive(2000);
    expect(arrivals).toHaveLength(1);
    // Blocked again, a closing tab does not hang on the lock.
    const again = locks.request('fetch-pacer-outbox:test', {}, () => new Promise<void>(() => {}));
    void again;
    await enqueueWrites(h.outbox, 1);
    await h.outbox.close();
    expect(h.outbox.getSnapshot().closed).toBe(true);
  });
});
