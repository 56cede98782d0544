// @vitest-environment jsdom
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createOutbox, memoryStorage } from '../../src/offline/index.js';
import { platformLocks, platformNetwork, uuid } from '../../src/offline/platform.js';
import { until } from './support.js';

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
});

describe('the platform defaults of the outbox', () => {
  it("follows navigator.onLine and the window's online/offline events", async () => {
    let onLine = false;
    vi.spyOn(navigator, 'onLine', 'get').mockImplementation(() => onLine);
    const sent: string[] = [];
    const outbox = createOutbox({
      name: 'platform',
      fetch: async (request) => {
        sent.push(await request.text());
        return new Response(null, { status: 204 });
      },
      storage: memoryStorage(),
    });
    await outbox.enqueue('https://api.test/a', { method: 'POST', body: 'offline write' });
    await until(() => outbox.getSnapshot().ready);
    expect(outbox.getSnapshot()).toMatchObject({ online: false, pending: 1 });
    onLine = true;
    window.dispatchEvent(new Event('online'));
    await until(() => outbox.getSnapshot().pending === 0);
    expect(sent).toEqual(['offline write']);
    onLine = false;
    window.dispatchEvent(new Event('offline'));
    expect(outbox.getSnapshot().online).toBe(false);
    await outbox.close();
    // Closed: the events reach it no more.
    onLine = true;
    window.dispatchEvent(new Event('online'));
    expect(outbox.getSnapshot().online).toBe(false);
  });

  it('reads no navigator where there is none (Node): online, no locks', () => {
    vi.stubGlobal('navigator', undefined);
    expect(platformNetwork().isOnline()).toBe(true);
    expect(platformLocks()).toBeUndefined();
  });

  it('makes v4 UUIDs without crypto.randomUUID (an insecure context)', () => {
    const real = globalThis.crypto;
    vi.stubGlobal('crypto', {
      getRandomValues: (bytes: Uint8Array) => real.getRandomValues(bytes),
    });
    const ids = new Set(Array.from({ length: 100 }, () => uuid()));
    expect(ids.size).toBe(100);
    for (const id of ids) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
  });
});
