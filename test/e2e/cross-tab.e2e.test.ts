import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pacer } from '../../src/pacer/index.js';
import { bundleForBrowser } from './bundle.js';
import { launchChromium } from './chromium.js';

const SRC = resolve(import.meta.dirname, '../../src');

/** The page: pacers on a `crossTabStore`, driven by the test through `window.harness`. */
const PAGE_SCRIPT = `
import { createPacer, defineStore } from '${SRC}/pacer/index.ts';
import { resolvePolicy } from '${SRC}/core/policy.ts';
import { crossTabStore } from '${SRC}/stores/cross-tab/index.ts';

const sharedNow = () => performance.timeOrigin + performance.now();

window.harness = {
  /**
   * Fires \`calls\` tasks at once in reject mode at a bucket of \`capacity\` a day. Unbatched, the
   * store hides \`takeMany\`: the pacer then takes one task per lock, the most interleaving.
   */
  async reject(budget, key, calls, capacity, batched = true) {
    const shared = crossTabStore({ name: budget });
    const store = batched ? shared : defineStore({
      check: (limits) => shared.check(limits),
      take: (...args) => shared.take(...args),
      peek: (...args) => shared.peek(...args),
      block: (...args) => shared.block(...args),
    });
    const pacer = createPacer({ limits: { limit: capacity, windowMs: 86_400_000 }, mode: 'reject', store });
    const outcomes = await Promise.allSettled(
      Array.from({ length: calls }, () => pacer.schedule(() => true, { key })),
    );
    pacer.dispose();
    shared.close();
    const errors = outcomes
      .filter((o) => o.status === 'rejected' && o.reason?.name !== 'RateLimitError')
      .map((o) => String(o.reason));
    return { admitted: outcomes.filter((o) => o.status === 'fulfilled').length, errors, mode: shared.mode };
  },
  /** Queues \`calls\` tasks; returns each start time on the shared time base. */
  async queue(budget, key, calls, policy) {
    const store = crossTabStore({ name: budget });
    const pacer = createPacer({ limits: policy, store });
    const starts = await Promise.all(
      Array.from({ length: calls }, () => pacer.schedule(() => sharedNow(), { key })),
    );
    pacer.dispose();
    store.close();
    return starts;
  },
  /**
   * Stuck mid-operation: takes the key's Web Lock and, inside it, opens a readwrite transaction
   * that writes a drained bucket and is kept open forever (a request chained on each success).
   */
  async stall(budget, key) {
    const db = await new Promise((ok, fail) => {
      const open = indexedDB.open('fetch-pacer:' + budget);
      open.onsuccess = () => ok(open.result);
      open.onerror = () => fail(open.error);
    });
    await new Promise((locked) => {
      navigator.locks.request('fetch-pacer:' + budget + ':' + key, () => {
        const tx = db.transaction('buckets', 'readwrite');
        const objects = tx.objectStore('buckets');
        objects.put({ stamps: [sharedNow()], values: [0], blockedUntil: 0, expiresAt: sharedNow() + 1e9 }, key);
        const spin = () => { objects.get(key).onsuccess = spin; };
        spin();
        locked();
        return new Promise(() => {});
      });
    });
  },
  /** Starts one take of \`key\` (queue mode); \`taken\` holds its decision once it comes. */
  startTake(budget, key, capacity) {
    const store = crossTabStore({ name: budget });
    window.taken = undefined;
    store
      .take(key, 1, { limits: [resolvePolicy({ limit: capacity, windowMs: 86_400_000 })], signal: new AbortController().signal })
      .then((decision) => { window.taken = decision; });
  },
  /** The same burst from a dedicated worker this page starts. */
  workerReject(budget, key, calls, capacity) {
    const worker = new Worker('/worker.js', { type: 'module' });
    return new Promise((done) => {
      worker.onmessage = ({ data }) => {
        worker.terminate();
        done(data);
      };
      worker.postMessage({ budget, key, calls, capacity });
    });
  },
  /** This page's client of the store hears the server advertise \`learned\` for \`key\`. */
  async learn(budget, key, policy, learned) {
    const store = crossTabStore({ name: budget });
    const call = { limits: [resolvePolicy(policy)], signal: new AbortController().signal };
    await store.observe(key, { kind: 'policy', ...learned }, call);
    store.close();
  },
  /**
   * \`granted\` permits of \`key\` taken at once, then a refusal as a pacer reports it, bare (a
   * 429 without a wait) or with \`retryAfterMs\`: the store makes the key's shared rate.
   * Resolves with the refusal's time.
   */
  async refuse(budget, key, policy, granted, retryAfterMs) {
    const store = crossTabStore({ name: budget });
    const call = { limits: [resolvePolicy(policy)], signal: new AbortController().signal };
    await store.takeMany(key, Array(granted).fill(1), false, call);
    const at = sharedNow();
    const wait = retryAfterMs === undefined ? {} : { retryAfterMs, sentAt: 0 };
    await store.observe(key, { kind: 'refusal', ...wait }, call);
    store.close();
    return at;
  },
  /**
   * Limits per unit: \`calls\` tasks at once in reject mode, each costing one request and
   * \`tokens\` tokens, at \`capacity\` tokens a day (requests plentiful).
   */
  async unitsReject(budget, key, calls, tokens, capacity) {
    const store = crossTabStore({ name: budget });
    const limits = { requests: { limit: 100_000, windowMs: 86_400_000 }, tokens: { limit: capacity, windowMs: 86_400_000 } };
    const pacer = createPacer({ limits, mode: 'reject', store });
    const outcomes = await Promise.allSettled(
      Array.from({ length: calls }, () => pacer.schedule(() => true, { key, cost: { requests: 1, tokens } })),
    );
    pacer.dispose();
    store.close();
    return outcomes.filter((o) => o.status === 'fulfilled').length;
  },
  /** Queues one task costing \`tokens\` of \`capacity\` a day; resolves with its start time. */
  unitsStart(budget, key, tokens, capacity) {
    const store = crossTabStore({ name: budget });
    const limits = { requests: { limit: 100_000, windowMs: 86_400_000 }, tokens: { limit: capacity, windowMs: 86_400_000 } };
    window.unitPacer = createPacer({ limits, store });
    return window.unitPacer.schedule(() => sharedNow(), { key, cost: { requests: 1, tokens } });
  },
  /** The task this page started used \`amount\` tokens fewer: gives them back; returns when. */
  unitsGiveBack(key, amount) {
    window.unitPacer.adjust(key, { tokens: -amount });
    return sharedNow();
  },
  /** Requests waiting for a Web Lock of this origin, by name. */
  async pendingLocks() {
    const { pending = [] } = await navigator.locks.query();
    return pending.map((lock) => lock.name);
  },
};
window.ready = true;
`;

/** A dedicated worker of the same origin: the same store, from a worker's scope. */
const WORKER_SCRIPT = `
import { createPacer } from '${SRC}/pacer/index.ts';
import { crossTabStore } from '${SRC}/stores/cross-tab/index.ts';

self.onmessage = async ({ data: { budget, key, calls, capacity } }) => {
  const store = crossTabStore({ name: budget });
  const pacer = createPacer({ limits: { limit: capacity, windowMs: 86_400_000 }, mode: 'reject', store });
  const outcomes = await Promise.allSettled(
    Array.from({ length: calls }, () => pacer.schedule(() => true, { key })),
  );
  pacer.dispose();
  store.close();
  self.postMessage({ admitted: outcomes.filter((o) => o.status === 'fulfilled').length, mode: store.mode });
};
`;

const PAGE_HTML =
  '<!doctype html><meta charset="utf-8"><title>cross-tab e2e</title><script type="module" src="/main.js"></script>';

interface Harness {
  reject(
    budget: string,
    key: string,
    calls: number,
    capacity: number,
    batched?: boolean,
  ): Promise<{
    admitted: number;
    errors: string[];
    mode: string;
  }>;
  queue(budget: string, key: string, calls: number, policy: object): Promise<number[]>;
  stall(budget: string, key: string): Promise<void>;
  workerReject(
    budget: string,
    key: string,
    calls: number,
    capacity: number,
  ): Promise<{ admitted: number; mode: string }>;
  startTake(budget: string, key: string, capacity: number): void;
  learn(budget: string, key: string, policy: object, learned: object): Promise<void>;
  refuse(
    budget: string,
    key: string,
    policy: object,
    granted: number,
    retryAfterMs?: number,
  ): Promise<number>;
  pendingLocks(): Promise<string[]>;
  unitsReject(
    budget: string,
    key: string,
    calls: number,
    tokens: number,
    capacity: number,
  ): Promise<number>;
  unitsStart(budget: string, key: string, tokens: number, capacity: number): Promise<number>;
  unitsGiveBack(key: string, amount: number): Promise<number>;
}

type Call<K extends keyof Harness> = Parameters<Harness[K]>;

function harness<K extends keyof Harness>(page: Page, method: K, ...args: Call<K>) {
  return page.evaluate(
    ([name, list]) =>
      (window as unknown as { harness: Record<string, (...a: unknown[]) => unknown> }).harness[
        name as string
      ]?.(...(list as unknown[])),
    [method, args] as const,
  ) as Promise<Awaited<ReturnType<Harness[K]>>>;
}

/** Five tasks of key `k` queued at once in each of `tabs`: all the starts in order, and the gaps. */
async function fiveEach(tabs: readonly Page[], budget: string, policy: object) {
  const lists = await Promise.all(tabs.map((tab) => harness(tab, 'queue', budget, 'k', 5, policy)));
  const starts = lists.flat().sort((x, y) => x - y);
  const gaps = starts.slice(1).map((at, i) => at - (starts[i] as number));
  return { starts, gaps };
}

describe('crossTabStore in chromium: four tabs, one bucket', () => {
  let dir: string;
  let server: Server;
  let origin: string;
  let browser: Browser;
  let context: BrowserContext;
  let pages: Page[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fetch-pacer-cross-tab-e2e-'));
    const scripts: Record<string, string> = {
      '/main.js': await bundleForBrowser(dir, 'main', PAGE_SCRIPT),
      '/worker.js': await bundleForBrowser(dir, 'worker', WORKER_SCRIPT),
    };
    server = createServer((request, response) => {
      const script = scripts[request.url ?? ''];
      if (script !== undefined) {
        response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(script);
      } else {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE_HTML);
      }
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
    context = await browser.newContext();
    pages = await Promise.all([0, 1, 2, 3].map(() => open()));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    server?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  async function open(): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${origin}/`);
    await page.waitForFunction('window.ready === true');
    return page;
  }

  it('admits exactly 1,000 of 4 x 500 calls (reject mode) at a capacity of 1,000, in 20 trials', async () => {
    const admitted: number[] = [];
    const ms: number[] = [];
    for (let trial = 0; trial < 20; trial++) {
      const started = performance.now();
      const results = await Promise.all(
        pages.map((page) => harness(page, 'reject', 'trials', `trial-${trial}`, 500, 1_000)),
      );
      ms.push(performance.now() - started);
      for (const result of results) {
        expect(result.errors).toEqual([]);
        expect(result.mode).toBe('shared');
      }
      admitted.push(results.reduce((sum, result) => sum + result.admitted, 0));
    }
    console.info(
      `[cross-tab] admitted per trial (4 pages x 500 calls, capacity 1,000): ${admitted.join(', ')}; min ${Math.min(...admitted)}, max ${Math.max(...admitted)}; ${Math.round(Math.min(...ms))}..${Math.round(Math.max(...ms))} ms per trial`,
    );
    expect(admitted).toEqual(Array(20).fill(1_000));
  }, 300_000);

  it('admits exactly 1,000 with one take per lock too (no batching), in 3 trials', async () => {
    const admitted: number[] = [];
    for (let trial = 0; trial < 3; trial++) {
      const results = await Promise.all(
        pages.map((page) => harness(page, 'reject', 'single', `trial-${trial}`, 500, 1_000, false)),
      );
      for (const result of results) expect(result.errors).toEqual([]);
      admitted.push(results.reduce((sum, result) => sum + result.admitted, 0));
    }
    console.info(`[cross-tab] unbatched, admitted per trial: ${admitted.join(', ')}`);
    expect(admitted).toEqual([1_000, 1_000, 1_000]);
  }, 300_000);

  it('shares the bucket with a dedicated worker too', async () => {
    const [a, b] = pages as [Page, Page];
    const results = await Promise.all([
      harness(a, 'reject', 'workers', 'k', 300, 500),
      harness(b, 'workerReject', 'workers', 'k', 300, 500),
    ]);
    expect(results[1].mode).toBe('shared');
    expect(results[0].admitted + results[1].admitted).toBe(500);
    expect(results[1].admitted).toBeGreaterThan(0);
  }, 60_000);

  it('keeps the combined starts of all pages within the policy in every window (queue mode)', async () => {
    const capacity = 10;
    const perMs = 20 / 1_000;
    const policy = { limit: 20, windowMs: 1_000, burst: capacity };
    const lists = await Promise.all(
      pages.map((page) => harness(page, 'queue', 'queued', 'k', 20, policy)),
    );
    const starts = lists.flat().sort((a, b) => a - b);
    expect(starts).toHaveLength(80);
    // A token bucket admits at most `capacity + span * rate` in any span: check every span
    // between two starts. The store decides inside its lock; a task reads the clock a hop later
    // (lock release, promise jobs, the pacer), which in a busy renderer took up to ~8 ms here.
    // TOLERANCE_MS forgives half a permit of that hop, never a whole extra permit.
    const TOLERANCE_MS = 25;
    let worst = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < starts.length; i++) {
      for (let j = i; j < starts.length; j++) {
        const span = (starts[j] as number) - (starts[i] as number);
        worst = Math.max(worst, j - i + 1 - (capacity + span * perMs));
        expect(j - i + 1).toBeLessThanOrEqual(
          Math.floor(capacity + (span + TOLERANCE_MS) * perMs + 1e-9),
        );
      }
    }
    // And about as fast as allowed: the last start (80 - 10) / 20 per second after the first.
    const took = (starts.at(-1) as number) - (starts[0] as number);
    console.info(
      `[cross-tab] queue mode: 80 starts over ${Math.round(took)} ms (the policy's minimum: ${Math.round((80 - capacity) / perMs)} ms); worst excess over the bucket ${worst.toFixed(3)} permits`,
    );
    expect(took).toBeGreaterThanOrEqual((80 - capacity) / perMs - TOLERANCE_MS);
    expect(took).toBeLessThan((80 - capacity) / perMs + 2_000);
  }, 120_000);

  it('paces every tab by the policy one tab heard the server advertise, spread evenly', async () => {
    const [a, b, c] = pages as [Page, Page, Page];
    // Every tab is configured far too generously; only the first heard the server: 5 a second.
    const policy = { limit: 1_000, windowMs: 1_000 };
    await harness(a, 'learn', 'learned', 'k', policy, { limit: 5, windowMs: 1_000 });
    const { starts, gaps } = await fiveEach([b, c], 'learned', policy);
    console.info(
      `[cross-tab] a learned 5 per second, 2 tabs x 5 calls: gaps ${gaps.map((gap) => Math.round(gap)).join(', ')} ms`,
    );
    // One start per 200 ms between both tabs (the hop from the store's decision to the task's
    // clock reading forgives a little), where the generous policy alone started all 10 at once.
    const TOLERANCE_MS = 25;
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(200 - TOLERANCE_MS);
    expect((starts.at(-1) as number) - (starts[0] as number)).toBeLessThan(9 * 200 + 1_000);
  }, 60_000);

  it('paces every tab by the rate one tab’s bare refusal made in the store', async () => {
    const [a, b, c] = pages as [Page, Page, Page];
    // Every tab is configured far too generously (1,000 a second). The first took 10 permits,
    // then heard a bare 429: the store's rate for the key starts at what it granted over the
    // last second, 10 a second at most, after a pause of one permit, and doubles each second.
    const policy = { limit: 1_000, windowMs: 1_000 };
    const refusedAt = await harness(a, 'refuse', 'refused', 'k', policy, 10);
    const { starts, gaps } = await fiveEach([b, c], 'refused', policy);
    console.info(
      `[cross-tab] a bare refusal after 10 granted, 2 tabs x 5 calls: first start ${Math.round((starts[0] as number) - refusedAt)} ms after it, gaps ${gaps.map((gap) => Math.round(gap)).join(', ')} ms`,
    );
    // One permit per 1 / rate between both tabs, the rate at most 10 per second doubled each
    // second since the refusal (the hop from the store's decision to the task's clock reading
    // forgives a little); the generous policy alone started all 10 at once.
    const TOLERANCE_MS = 25;
    const spacingAt = (at: number) => 1_000 / (10 * 2 ** ((at - refusedAt) / 1_000));
    expect(starts[0] as number).toBeGreaterThanOrEqual(refusedAt + 100 - TOLERANCE_MS);
    gaps.forEach((gap, i) => {
      expect(gap).toBeGreaterThanOrEqual(spacingAt(starts[i + 1] as number) - TOLERANCE_MS);
    });
    expect((starts.at(-1) as number) - refusedAt).toBeLessThan(10 * 100 + 1_000);
  }, 60_000);

  it('paces every tab by the rate one tab’s refusal with a wait made in the store, once the wait ends', async () => {
    const [a, b, c] = pages as [Page, Page, Page];
    // Every tab is configured far too generously. The first took 11 permits, then heard a 429
    // with `Retry-After: 1` for the last of them: the server admitted 10 in a window of a
    // second, so the store blocks the key for the second and paces it at 95% of 10 a second.
    const policy = { limit: 1_000, windowMs: 1_000 };
    const refusedAt = await harness(a, 'refuse', 'waited', 'k', policy, 11, 1_000);
    const { starts, gaps } = await fiveEach([b, c], 'waited', policy);
    console.info(
      `[cross-tab] a refusal with a wait after 11 granted, 2 tabs x 5 calls: first start ${Math.round((starts[0] as number) - refusedAt)} ms after it, gaps ${gaps.map((gap) => Math.round(gap)).join(', ')} ms`,
    );
    const TOLERANCE_MS = 25;
    const spacing = 1_000 / (10 * 0.95);
    expect(starts[0] as number).toBeGreaterThanOrEqual(refusedAt + 1_000 - TOLERANCE_MS);
    // One permit per spacing between both tabs, but for one more at once for a client that came
    // late for its permit (the store's credit of one); the generous policy alone started all 10
    // at once.
    const close = gaps.filter((gap) => gap < spacing - TOLERANCE_MS);
    expect(close.length).toBeLessThanOrEqual(1);
    expect((starts.at(-1) as number) - (starts[0] as number)).toBeGreaterThanOrEqual(
      8 * spacing - TOLERANCE_MS,
    );
    expect((starts.at(-1) as number) - refusedAt).toBeLessThan(1_000 + 10 * spacing + 1_000);
  }, 60_000);

  it('counts the tokens of every tab: exactly the tokens allowed are spent, whatever the requests', async () => {
    const admitted: number[] = [];
    for (let trial = 0; trial < 5; trial++) {
      const results = await Promise.all(
        pages.map((page) => harness(page, 'unitsReject', 'units', `trial-${trial}`, 50, 10, 1_000)),
      );
      admitted.push(results.reduce((sum, count) => sum + count, 0));
    }
    // 1,000 tokens a day at 10 a call: 100 calls of the 200, in every trial.
    expect(admitted).toEqual([100, 100, 100, 100, 100]);
  }, 120_000);

  it("starts another tab's waiting call as soon as a tab gives its tokens back", async () => {
    const [a, b] = pages as [Page, Page];
    // a spends all 100 tokens of the day; b's call of 50 waits (the refill would take 12 h).
    await harness(a, 'unitsStart', 'giveback', 'k', 100, 100);
    const waiting = harness(b, 'unitsStart', 'giveback', 'k', 50, 100);
    let started = false;
    void waiting.then(() => {
      started = true;
    });
    // The store denied it: b's pacer holds it until the refill (hours away), not a timer soon.
    await b.waitForFunction(() => {
      const pacer = (window as unknown as { unitPacer?: Pacer }).unitPacer;
      const inspection = pacer?.inspect('k');
      return inspection?.queued === 1 && (inspection.nextStartAt ?? 0) - inspection.at > 3_600_000;
    });
    expect(started).toBe(false);
    // a's answer used 40: it gives 60 back, and the store announces it to every tab.
    const givenAt = await harness(a, 'unitsGiveBack', 'k', 60);
    const startedAt = await waiting;
    console.info(
      `[cross-tab] a gave 60 tokens back; b's waiting call started ${Math.round(startedAt - givenAt)} ms later`,
    );
    expect(startedAt).toBeGreaterThanOrEqual(givenAt);
    expect(startedAt - givenAt).toBeLessThan(2_000);
  }, 60_000);

  it('is not wedged by a tab that closes mid-operation: its lock is released, its write undone', async () => {
    const [a, b] = pages as [Page, Page];
    // Ten permits taken, through the store as usual.
    expect((await harness(a, 'reject', 'wedge', 'k', 10, 100)).admitted).toBe(10);
    const stuck = await open();
    await harness(stuck, 'stall', 'wedge', 'k');
    harness(b, 'startTake', 'wedge', 'k', 100);
    // b waits for the lock the stuck tab holds: no decision while it lives.
    const deadline = performance.now() + 30_000;
    while (!(await harness(b, 'pendingLocks')).includes('fetch-pacer:wedge:k')) {
      if (performance.now() > deadline) throw new Error("b's take never queued for the lock");
    }
    expect(await b.evaluate(() => (window as unknown as { taken: unknown }).taken)).toBeUndefined();
    await stuck.close();
    // The browser released the lock and aborted the open transaction: b decides on the state
    // committed before, not the stuck tab's drained bucket.
    await b.waitForFunction(() => (window as unknown as { taken: unknown }).taken !== undefined);
    const taken = await b.evaluate(
      () => (window as unknown as { taken: { allowed: boolean; remaining: number } }).taken,
    );
    expect(taken).toMatchObject({ allowed: true, remaining: 89 });
  }, 60_000);
});
