import { IDBFactory } from 'fake-indexeddb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Policy, perSecond, resolvePolicy } from '../../src/core/policy.js';
import { slidingLog } from '../../src/index.js';
import { createPacer, type Pacer, type StoreCall, type StoreEvent } from '../../src/pacer/index.js';
import type { CrossTabPlatform, CrossTabStore } from '../../src/stores/cross-tab/index.js';
import { crossTabStore } from '../../src/stores/cross-tab/index.js';
import { createManualClock, type ManualClock } from '../../src/testing/index.js';
import { fakeLocks } from '../support/fake-locks.js';
import { turn, until } from '../support/flush.js';

const EPOCH = 1_732_000_000_000;
const opened: CrossTabStore[] = [];

afterEach(() => {
  for (const store of opened.splice(0)) store.close();
});

/** Several "tabs" of one origin: stores on one IndexedDB, one lock manager, one shared clock. */
function origin(name = `budget-${Math.random()}`) {
  const indexedDB = new IDBFactory();
  const lockManager = fakeLocks();
  const clock = createManualClock({ start: EPOCH });
  const platform: CrossTabPlatform = { indexedDB, locks: lockManager.locks, now: clock.now };
  const tab = (overrides: Partial<CrossTabPlatform> = {}) => {
    const store = crossTabStore({ name, platform: { ...platform, ...overrides } });
    opened.push(store);
    return store;
  };
  return { name, tab, clock, lockManager, indexedDB };
}

/** Two tabs of one origin, each with a pacer under `policy` on one manual clock. */
function twoTabs(policy: Policy) {
  const { tab } = origin();
  const clock = createManualClock();
  const stores = [tab({ now: () => EPOCH + clock.now() }), tab({ now: () => EPOCH + clock.now() })];
  const pacers = stores.map((store) => createPacer({ limits: policy, store, clock })) as [
    Pacer,
    Pacer,
  ];
  return { clock, stores, pacers };
}

/**
 * Waits for each count of `starts` in turn, with every pacer then `waiting` for its timer (it
 * heard from the store), and moves the clock `stepMs` between them.
 */
async function stepThrough(
  clock: ManualClock,
  starts: readonly number[],
  counts: readonly number[],
  waiting: () => boolean,
  stepMs = 500,
): Promise<void> {
  for (const [index, count] of counts.entries()) {
    const last = index === counts.length - 1;
    await until(() => starts.length === count && (last || waiting()), 5_000);
    if (!last) await clock.advanceAsync(stepMs);
  }
}

const limits = [resolvePolicy({ limit: 3, windowMs: 60_000 })];
const call = (signal = new AbortController().signal): StoreCall => ({ limits, signal });

describe('crossTabStore (IndexedDB + Web Locks, in Node with fakes)', () => {
  it('shares one bucket between tabs', async () => {
    const { tab } = origin();
    const a = tab();
    const b = tab();
    expect((await a.takeMany('k', [1, 1], false, call())).map((d) => d.allowed)).toEqual([
      true,
      true,
    ]);
    const [second, third] = await b.takeMany('k', [1, 1], false, call());
    expect(second).toMatchObject({ allowed: true, remaining: 0 });
    expect(third).toMatchObject({ allowed: false, reason: 'rate', retryAfterMs: 20_000 });
    expect(await a.peek('k', 1, call())).toMatchObject({ allowed: false, retryAfterMs: 20_000 });
    expect(a.mode).toBe('shared');
  });

  it('admits exactly the capacity to many concurrent takes from several tabs', async () => {
    const { tab } = origin();
    const tabs = [tab(), tab(), tab(), tab()];
    const big = [resolvePolicy({ limit: 50, windowMs: 3_600_000 })];
    const answers = await Promise.all(
      tabs.flatMap((store) =>
        Array.from({ length: 30 }, () =>
          store.take('k', 1, { limits: big, signal: new AbortController().signal }),
        ),
      ),
    );
    expect(answers.filter((d) => d.allowed)).toHaveLength(50);
  });

  it('stops at the first denial when asked to, and charges nothing for a denial', async () => {
    const { tab } = origin();
    const a = tab();
    const decisions = await a.takeMany('k', [2, 2, 1], true, call());
    expect(decisions.map((d) => d.allowed)).toEqual([true, false]);
    expect(await a.take('k', 1, call())).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('shares a block: stored for every take, announced to the other tabs', async () => {
    const { tab } = origin();
    const a = tab();
    const b = tab();
    const heard: StoreEvent[] = [];
    b.subscribe((event) => heard.push(event));
    await a.block('k', 5_000, call());
    expect(await b.take('k', 1, call())).toMatchObject({
      allowed: false,
      reason: 'blocked',
      retryAfterMs: 5_000,
    });
    await until(() => heard.length > 0);
    expect(heard).toEqual([{ key: 'k', blockedMs: 5_000 }]);
  });

  it('gives back only what a policy did not absorb since the reserve, for every tab', async () => {
    const { tab, clock } = origin();
    const [a, b] = [tab(), tab()];
    // Limits per unit: requests, and 100 tokens a second.
    const units = [
      resolvePolicy({ limit: 10, windowMs: 1_000 }),
      resolvePolicy({ limit: 100, windowMs: 1_000 }),
    ];
    const unitCall = { limits: units, signal: new AbortController().signal };
    expect(await a.take('u', [1, 90], unitCall)).toMatchObject({ allowed: true });
    // Full again by 900 ms, and a take at 1 s finds it so: the 60 reserved beyond the real
    // cost (as the server's bucket, charged 30, was full long before) are absorbed.
    await clock.advanceAsync(1_000);
    expect(await b.take('u', [1, 50], unitCall)).toMatchObject({ allowed: true });
    await a.adjust('u', [0, -60], unitCall, -1_000);
    expect(await b.peek('u', [1, 100], unitCall)).toMatchObject({
      allowed: false,
      retryAfterMs: 500,
    });
    // A reserve taken with or after the last take is given back whole.
    await a.adjust('u', [0, -50], unitCall, 0);
    expect(await b.peek('u', [1, 100], unitCall)).toMatchObject({ allowed: true });
  });

  it('lowers credit to the server count, and a reset lets every tab start fresh', async () => {
    const { tab } = origin();
    const a = tab();
    const b = tab();
    const heard: StoreEvent[] = [];
    b.subscribe((event) => heard.push(event));
    await a.observe('k', { kind: 'quota', remaining: 0 }, call());
    expect(await b.take('k', 1, call())).toMatchObject({ allowed: false, reason: 'rate' });
    await a.reset('k');
    expect(await b.take('k', 1, call())).toMatchObject({ allowed: true, remaining: 2 });
    await until(() => heard.length > 0);
    expect(heard).toEqual([{ key: 'k' }]);
  });

  it('waits for a lock another tab holds, and goes on once that tab is gone', async () => {
    const { tab, name, lockManager } = origin();
    const a = tab();
    await a.take('k', 1, call());
    // A tab stuck mid-operation holds the key's lock (closing it would release it).
    const release = await lockManager.hold(`fetch-pacer:${name}:k`);
    let answered = false;
    const pending = a.take('k', 1, call()).then((decision) => {
      answered = true;
      return decision;
    });
    await until(() => lockManager.waiting(`fetch-pacer:${name}:k`) === 1);
    expect(answered).toBe(false);
    release();
    expect(await pending).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('gives up waiting for the lock when the pacer is disposed', async () => {
    const { tab, name, lockManager } = origin();
    const a = tab();
    await a.take('k', 1, call());
    const release = await lockManager.hold(`fetch-pacer:${name}:k`);
    const controller = new AbortController();
    const pending = a.take('k', 1, call(controller.signal));
    await until(() => lockManager.waiting(`fetch-pacer:${name}:k`) === 1);
    controller.abort(new Error('disposed'));
    await expect(pending).rejects.toThrow('disposed');
    release();
  });

  it('deletes a key at rest, and sweeps keys that came to rest unvisited when it opens', async () => {
    const { tab, clock, indexedDB, name } = origin();
    const a = tab();
    await a.take('k', 3, call());
    await a.take('other', 1, call());
    const count = () =>
      new Promise<number>((resolve) => {
        const open = indexedDB.open(`fetch-pacer:${name}`);
        open.onsuccess = () => {
          const request = open.result.transaction('buckets').objectStore('buckets').count();
          request.onsuccess = () => {
            open.result.close();
            resolve(request.result);
          };
        };
      });
    expect(await count()).toBe(2);
    clock.advance(60_000);
    // A take on a full-again key finds it at rest: nothing is stored for it afterwards.
    await a.peek('k', 1, call());
    await a.observe('k', { kind: 'quota', remaining: 5 }, call());
    expect(await count()).toBe(1);
    // 'other' rested unvisited: a new tab's store sweeps it when it opens the database.
    const b = tab();
    await b.peek('x', 1, call());
    for (let i = 0; i < 100 && (await count()) > 0; i++) await turn();
    expect(await count()).toBe(0);
  });

  it('degrades to per-tab counting, with one warning, where Web Locks are missing', async () => {
    vi.resetModules();
    const { crossTabStore: fresh } = await import('../../src/stores/cross-tab/index.js');
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const { indexedDB } = origin();
    const a = fresh({ name: 'no-locks', platform: { indexedDB, locks: undefined } });
    const b = fresh({ name: 'no-locks', platform: { indexedDB, locks: undefined } });
    opened.push(a, b);
    expect(a.mode).toBe('per-tab');
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]?.[0]).toMatch(
      /^\[fetch-pacer\] crossTabStore\('no-locks'\) counts in this tab alone: Web Locks \(navigator\.locks\) is not available here\./,
    );
    // Each tab has its own bucket now.
    for (const store of [a, b]) {
      const decisions = await store.takeMany('k', [1, 1, 1, 1], false, call());
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    }
    warn.mockRestore();
  });

  it('degrades when IndexedDB will not open', async () => {
    vi.resetModules();
    const { crossTabStore: fresh } = await import('../../src/stores/cross-tab/index.js');
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const refusing = {
      open: () => {
        throw new DOMException('denied', 'SecurityError');
      },
    } as unknown as IDBFactory;
    const store = fresh({
      name: 'no-idb',
      platform: { indexedDB: refusing, locks: fakeLocks().locks },
    });
    opened.push(store);
    expect(await store.take('k', 1, call())).toMatchObject({ allowed: true });
    expect(store.mode).toBe('per-tab');
    expect(warn).toHaveBeenCalledTimes(1);
    warn.mockRestore();
  });

  it('paces two pacers in two tabs under one budget', async () => {
    const { clock, pacers } = twoTabs(perSecond(2));
    const starts: number[] = [];
    const done = pacers.flatMap((pacer) =>
      [0, 1].map(() => pacer.schedule(() => starts.push(clock.now()))),
    );
    // Every waiting pacer has heard from the store and waits for its timer.
    const answered = () =>
      pacers.every(
        (p) => p.getSnapshot().queued === 0 || (p.inspect().nextStartAt ?? 0) > clock.now(),
      );
    await stepThrough(clock, starts, [2, 3, 4], answered);
    await Promise.all(done);
    // Two permits at once between both tabs, then one every 500 ms: the policy, not twice it.
    expect(starts).toEqual([0, 0, 500, 1_000]);
    for (const pacer of pacers) pacer.dispose();
  });

  it('paces every tab by the policy one tab heard the server advertise, spread evenly', async () => {
    // Both configured far too generously; only the first hears the server's policy.
    const { clock, stores, pacers } = twoTabs(perSecond(1_000));
    const [heard, other] = pacers;
    heard.observe('api', { kind: 'policy', limit: 2, windowMs: 1_000, remaining: 2 });
    // The store writes it in the background: wait until the other tab's store reads it.
    const own = { limits: [resolvePolicy(perSecond(1_000))], signal: new AbortController().signal };
    for (let turns = 0; (await stores[1]?.peek('api', 1, own))?.limit !== 2; turns++) {
      if (turns > 1_000) throw new Error('the learned policy never reached the other tab');
    }
    const starts: number[] = [];
    const done = [0, 1, 2].map(() =>
      other.schedule(() => starts.push(clock.now()), { key: 'api' }),
    );
    const waiting = () => (other.inspect('api').nextStartAt ?? 0) > clock.now();
    await stepThrough(clock, starts, [1, 2, 3], waiting, 502);
    await Promise.all(done);
    // One every 502 ms (a window and a late client's 4 ms, per 2): 2 per second, never a burst
    // of the generous 1,000.
    expect(starts).toEqual([0, 502, 1_004]);
    for (const pacer of [heard, other]) pacer.dispose();
  });

  it('validates its options', () => {
    expect(() => crossTabStore({ name: '' })).toThrow(/`name` to be a non-empty string/);
    expect(() => crossTabStore(undefined as never)).toThrow(TypeError);
    const { tab } = origin();
    expect(() =>
      tab().check?.([resolvePolicy({ limit: 1, windowMs: 1, algorithm: slidingLog })]),
    ).toThrow(/crossTabStore counts with `tokenBucket` or `gcra`, got `slidingLog`/);
  });
});
