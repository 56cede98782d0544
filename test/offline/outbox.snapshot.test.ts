import { afterEach, describe, expect, it, vi } from 'vitest';
import type { OutboxSnapshot } from '../../src/offline/index.js';
import { EPOCH, enqueueWrites, harness, recordingServer } from './support.js';

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('createOutbox: the observable state', () => {
  it('publishes frozen snapshots, a new one only when something changed', async () => {
    const h = harness({ online: false });
    const first = h.outbox.getSnapshot();
    expect(Object.isFrozen(first)).toBe(true);
    expect(first).toMatchObject({ ready: false, pending: 0, online: false });
    await h.settle();
    const ready = h.outbox.getSnapshot();
    expect(ready).not.toBe(first);
    expect(ready.ready).toBe(true);
    expect(first.ready).toBe(false);
    // Nothing changed: the same object, however often it is asked for.
    expect(h.outbox.getSnapshot()).toBe(ready);
    await h.outbox.flush();
    expect(h.outbox.getSnapshot()).toBe(ready);
  });

  it('tells listeners each change: pending, in flight, flushing, sent', async () => {
    const h = harness({ online: false, limit: 1 });
    recordingServer(h.clock);
    await h.settle();
    const seen: OutboxSnapshot[] = [];
    const unsubscribe = h.outbox.subscribe(() => seen.push(h.outbox.getSnapshot()));
    await enqueueWrites(h.outbox, 2);
    expect(seen.map((snapshot) => snapshot.pending)).toEqual([1, 2]);
    h.network.set(true);
    await h.drive(100);
    // The second entry waits in the pacer for its permit: handed over, so in flight.
    expect(h.outbox.getSnapshot()).toMatchObject({
      pending: 1,
      inFlight: 1,
      flushing: true,
      online: true,
      sent: 1,
    });
    await h.drive(1000);
    expect(h.outbox.getSnapshot()).toMatchObject({
      pending: 0,
      inFlight: 0,
      flushing: false,
      sent: 2,
      nextAttemptAt: undefined,
    });
    expect(seen.some((snapshot) => snapshot.flushing)).toBe(true);
    expect(seen.every((snapshot) => Object.isFrozen(snapshot))).toBe(true);
    const count = seen.length;
    unsubscribe();
    await enqueueWrites(h.outbox, 1);
    expect(seen).toHaveLength(count);
  });

  it('shows the last error and the next attempt while an entry waits, and clears them on success', async () => {
    const h = harness({ retry: false });
    recordingServer(h.clock, (index) => (index === 0 ? 500 : 200));
    await enqueueWrites(h.outbox, 1);
    await h.drive(100);
    expect(h.outbox.getSnapshot()).toMatchObject({
      pending: 1,
      inFlight: 0,
      nextAttemptAt: EPOCH + 500,
      lastError: { name: 'OutboxSendError', status: 500 },
    });
    await h.drive(1000);
    expect(h.outbox.getSnapshot()).toMatchObject({
      pending: 0,
      nextAttemptAt: undefined,
      lastError: undefined,
    });
  });

  it('forgets the next attempt while offline, and retries at once when back', async () => {
    const h = harness({ retry: false });
    const { arrivals } = recordingServer(h.clock, (index) => (index === 0 ? 503 : 200));
    await enqueueWrites(h.outbox, 1);
    await h.drive(100);
    expect(h.outbox.getSnapshot().nextAttemptAt).toBe(EPOCH + 500);
    h.network.set(false);
    expect(h.outbox.getSnapshot()).toMatchObject({ online: false, nextAttemptAt: undefined });
    await h.drive(10_000);
    expect(arrivals).toHaveLength(1);
    h.network.set(true);
    await h.drive(10_100);
    // A 503 is the server's "not now", not the network's: it kept its wait, which is over.
    expect(arrivals.map((arrival) => arrival.at)).toEqual([0, 10_000]);
  });

  it('reports a listener or callback that throws, and goes on', async () => {
    const reportError = vi.fn();
    vi.stubGlobal('reportError', reportError);
    const h = harness({
      onSent: () => {
        throw new Error('app bug in onSent');
      },
    });
    recordingServer(h.clock);
    const calls: string[] = [];
    const unsubscribe = h.outbox.subscribe(() => {
      throw new Error('listener bug');
    });
    h.outbox.subscribe(() => calls.push('second'));
    await enqueueWrites(h.outbox, 2);
    await h.drive(1000);
    expect(h.outbox.getSnapshot()).toMatchObject({ pending: 0, sent: 2 });
    expect(calls.length).toBeGreaterThan(0);
    const messages = reportError.mock.calls.map(([error]) => (error as Error).message);
    expect(messages).toContain('listener bug');
    expect(messages.filter((message) => message === 'app bug in onSent')).toHaveLength(2);
    unsubscribe();
    expect(() => h.outbox.subscribe(42 as unknown as () => void)).toThrow(
      '[fetch-pacer] Expected `listener` to be a function',
    );
  });

  it('lists the stored entries in order, with bodies, without changing anything', async () => {
    const h = harness({ online: false });
    const entries = await enqueueWrites(h.outbox, 3);
    const before = h.outbox.getSnapshot();
    const listed = await h.outbox.list();
    expect(listed.map((entry) => entry.id)).toEqual(entries.map((entry) => entry.id));
    expect(listed.map((entry) => new TextDecoder().decode(entry.body ?? undefined))).toEqual([
      '{"n":0}',
      '{"n":1}',
      '{"n":2}',
    ]);
    expect(listed[0]).toMatchObject({
      method: 'POST',
      url: 'https://api.test/items',
      key: 'https://api.test',
      createdAt: EPOCH,
      attempts: 0,
      nextAttemptAt: 0,
      lastFailure: null,
    });
    expect(Object.isFrozen(listed[0])).toBe(true);
    expect(h.outbox.getSnapshot()).toBe(before);
  });
});
