import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import { type HttpHandler, HttpResponse, http } from 'msw';
import { afterEach } from 'vitest';
import { createPacedFetch, type PacedFetch } from '../../src/http/paced-fetch.js';
import { slidingLog } from '../../src/index.js';
import {
  createOutbox,
  indexedDBStorage,
  type Outbox,
  type OutboxDrop,
  type OutboxEntry,
  type OutboxLocks,
  type OutboxNetwork,
  type OutboxOptions,
  type OutboxStorage,
} from '../../src/offline/index.js';
import { createManualClock, type ManualClock } from '../../src/testing/index.js';
import { turn } from '../support/flush.js';
import { server } from '../support/msw.js';

const opened: Outbox[] = [];

// Every outbox a test opened is closed after it: no timer, listener or channel outlives its test.
afterEach(async () => {
  await Promise.all(opened.splice(0).map((outbox) => outbox.close()));
});

/** Wall-clock time at manual time 0: the outbox's times are epoch ms. */
export const EPOCH = Date.UTC(2026, 10, 29, 12, 0, 0);

/** `until` with a budget for IndexedDB work (fake-indexeddb answers on later macrotasks). */
export async function until(condition: () => boolean, turns = 20_000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (condition()) return;
    await turn();
  }
  throw new Error(`condition still false after ${turns} turns: ${condition.toString()}`);
}

/**
 * A storage wrapper that counts calls in progress (so a test knows when only time can move the
 * outbox on) and can be told to fail the next call of an operation.
 */
export interface TrackedStorage extends OutboxStorage {
  readonly busy: number;
  readonly calls: Record<string, number>;
  failNext(operation: keyof OutboxStorage, error: unknown, times?: number): void;
}

export function tracked(inner: OutboxStorage): TrackedStorage {
  let busy = 0;
  const calls: Record<string, number> = {};
  const failures = new Map<string, { error: unknown; times: number }>();
  const wrap =
    <A extends unknown[], R>(name: keyof OutboxStorage, run: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      busy++;
      calls[name] = (calls[name] ?? 0) + 1;
      try {
        const failure = failures.get(name);
        if (failure !== undefined && failure.times > 0) {
          failure.times--;
          // Fail the way a storage does: asynchronously.
          await Promise.resolve();
          throw failure.error;
        }
        return await run(...args);
      } finally {
        busy--;
      }
    };
  return {
    get busy() {
      return busy;
    },
    calls,
    failNext(operation, error, times = 1) {
      failures.set(operation, { error, times });
    },
    add: wrap('add', (record, max) => inner.add(record, max)),
    list: wrap('list', () => inner.list()),
    update: wrap('update', (seq, record) => inner.update(seq, record)),
    delete: wrap('delete', (seq) => inner.delete(seq)),
    close: wrap('close', async () => {
      await inner.close?.();
    }),
  };
}

/** A network the test switches; listeners hear each change, like the window's events. */
export function fakeNetwork(online = true) {
  const listeners = new Set<() => void>();
  const network: OutboxNetwork & { set(online: boolean): void } = {
    isOnline: () => online,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    set(next) {
      online = next;
      for (const listener of [...listeners]) listener();
    },
  };
  return network;
}

/** An exclusive lock manager shared by outboxes in one test, as tabs share `navigator.locks`. */
export function fakeLocks() {
  const held = new Set<string>();
  const waiting = new Map<string, (() => void)[]>();
  const log: string[] = [];
  const locks: OutboxLocks = {
    async request(name, options, callback) {
      while (held.has(name)) {
        await new Promise<void>((resolve, reject) => {
          const queue = waiting.get(name) ?? [];
          queue.push(resolve);
          waiting.set(name, queue);
          options.signal?.addEventListener('abort', () => reject(options.signal?.reason), {
            once: true,
          });
        });
      }
      options.signal?.throwIfAborted();
      held.add(name);
      log.push(`take ${name}`);
      try {
        return await callback({ name });
      } finally {
        held.delete(name);
        waiting.get(name)?.shift()?.();
      }
    },
  };
  return { locks, log };
}

/** A fresh IndexedDB per test: nothing leaks between tests. */
export function freshIndexedDB(): IDBFactory {
  return new IDBFactory();
}

export interface Arrival {
  readonly at: number;
  readonly method: string;
  readonly path: string;
  readonly body: string;
  readonly idempotencyKey: string | null;
  readonly status: number;
}

/**
 * A server at https://api.test that answers each request with `answer(arrival index)`
 * (a status, or a Response), recording when (manual time) and what it received.
 */
export function recordingServer(
  clock: ManualClock,
  answer: (index: number, request: Request) => number | Response = () => 200,
  origin = 'https://api.test',
) {
  const arrivals: Arrival[] = [];
  const handler: HttpHandler = http.all(`${origin}/*`, async ({ request }) => {
    const index = arrivals.length;
    const body = await request.text();
    const reply = answer(index, request);
    const response = typeof reply === 'number' ? new HttpResponse(null, { status: reply }) : reply;
    arrivals.push({
      at: Number(request.headers.get('x-sent-at') ?? clock.now() - EPOCH),
      method: request.method,
      path: new URL(request.url).pathname,
      body,
      idempotencyKey: request.headers.get('idempotency-key'),
      status: response.status,
    });
    return response;
  });
  server.use(handler);
  return { arrivals };
}

export interface Harness {
  readonly clock: ManualClock;
  readonly pacedFetch: PacedFetch;
  readonly network: ReturnType<typeof fakeNetwork>;
  readonly storage: TrackedStorage;
  readonly indexedDB: IDBFactory;
  readonly outbox: Outbox;
  readonly sent: OutboxEntry[];
  readonly rejected: Array<{ entry: OutboxEntry; status: number; body: string }>;
  readonly dropped: OutboxDrop[];
  readonly errors: Error[];
  /** Opens another outbox over the same database (a reload, or another tab). */
  reopen(overrides?: Partial<OutboxOptions>): Outbox;
  /** Lets the outbox work, moving the clock only when nothing but time can move it, to `endMs`. */
  drive(endMs: number): Promise<void>;
  /** Lets the outbox work without moving the clock. */
  settle(): Promise<void>;
}

export interface HarnessOptions extends Partial<OutboxOptions> {
  readonly limit?: number;
  readonly windowMs?: number;
  readonly online?: boolean;
  readonly retry?: false | { readonly limit?: number };
  readonly indexedDB?: IDBFactory;
}

/**
 * An outbox over a fresh fake IndexedDB, sending through a paced fetch (sliding log,
 * `limit` per `windowMs`) to msw, with a manual clock at EPOCH and a fake network.
 */
export function harness(options: HarnessOptions = {}): Harness {
  const {
    limit = 10,
    windowMs = 1000,
    online = true,
    retry,
    indexedDB = freshIndexedDB(),
    ...overrides
  } = options;
  const clock = createManualClock({ start: EPOCH });
  const network = fakeNetwork(online);
  const pacedFetch = createPacedFetch({
    limits: { limit, windowMs, algorithm: slidingLog },
    clock,
    wallClock: clock.now,
    ...(retry === undefined ? {} : { retry }),
    fetch: (request) => {
      // The manual time it was sent, so msw's own scheduling cannot blur it.
      request.headers.set('x-sent-at', String(clock.now() - EPOCH));
      return globalThis.fetch(request);
    },
  });
  const sent: OutboxEntry[] = [];
  const rejected: Harness['rejected'] = [];
  const dropped: OutboxDrop[] = [];
  const errors: Error[] = [];
  const storages: TrackedStorage[] = [];
  const pacers = [pacedFetch.pacer];
  const make = (extra: Partial<OutboxOptions> = {}): Outbox => {
    const storage = tracked(indexedDBStorage({ name: 'test', indexedDB }));
    storages.push(storage);
    const merged = { ...overrides, ...extra };
    if (merged.fetch !== undefined && 'pacer' in merged.fetch) {
      pacers.push((merged.fetch as PacedFetch).pacer);
    }
    const outbox = createOutbox({
      name: 'test',
      fetch: pacedFetch,
      storage,
      clock,
      network,
      locks: false,
      random: () => 0,
      onSent: (entry) => sent.push(entry),
      onRejected: (entry, response) => {
        void response
          .text()
          .then((body) => rejected.push({ entry, status: response.status, body }));
      },
      onDropped: (drop) => dropped.push(drop),
      onError: (error) => errors.push(error),
      ...merged,
    });
    opened.push(outbox);
    return outbox;
  };
  const outbox = make();
  const quiet = () =>
    storages.every((storage) => storage.busy === 0) &&
    pacers.every((pacer) => pacer.getSnapshot().inFlight === 0);
  // One turn first: work just started (an event, an enqueue) reaches storage in microtasks.
  const settle = async () => {
    await turn();
    await until(quiet);
  };
  return {
    clock,
    pacedFetch,
    network,
    get storage() {
      return storages[0] as TrackedStorage;
    },
    indexedDB,
    outbox,
    sent,
    rejected,
    dropped,
    errors,
    reopen: make,
    settle,
    async drive(endMs) {
      const end = EPOCH + endMs;
      for (;;) {
        await settle();
        const next = clock.nextTimerAt;
        if (next === undefined || next > end) break;
        await clock.advanceAsync(Math.max(0, next - clock.now()));
      }
      await settle();
      if (clock.now() < end) clock.set(end);
    },
  };
}

/** `n` POST bodies `{"n":i}` enqueued in order to /items. */
export async function enqueueWrites(outbox: Outbox, n: number, path = 'https://api.test/items') {
  const entries: OutboxEntry[] = [];
  for (let i = 0; i < n; i++) {
    entries.push(
      await outbox.enqueue(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ n: i }),
      }),
    );
  }
  return entries;
}

export { HttpResponse };
