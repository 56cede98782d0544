import { Drain } from './drain.js';
import { Entries } from './entries.js';
import {
  OutboxBodyError,
  OutboxClosedError,
  OutboxError,
  OutboxFullError,
  OutboxStorageError,
} from './errors.js';
import { indexedDBStorage } from './indexeddb-storage.js';
import { memoryStorage } from './memory-storage.js';
import { type OutboxOptions, type ResolvedOutboxOptions, resolveOutboxOptions } from './options.js';
import { backoffMs } from './outcome.js';
import { ChangeChannel, platformLocks, platformNetwork, uuid } from './platform.js';
import { recordOf } from './record.js';
import { OutboxState } from './state.js';
import type { Outbox, OutboxEntry, OutboxLocks, OutboxNetwork, OutboxStorage } from './types.js';

/**
 * A durable outbox for writes: `enqueue` stores a request (surviving reloads), and the outbox
 * sends it through the paced fetch when online, in enqueue order per key, until the server
 * gives a definitive answer. See `OutboxOptions` for the rules.
 *
 * @example
 * const pacedFetch = createPacedFetch({ limits: perSecond(5) });
 * const outbox = createOutbox({ name: 'orders', fetch: pacedFetch });
 * await outbox.enqueue('/api/orders', { method: 'POST', body: JSON.stringify(order) });
 */
export function createOutbox(options: OutboxOptions): Outbox {
  const live = new LiveOutbox(resolveOutboxOptions(options));
  return Object.freeze({
    name: live.options.name,
    enqueue: (input: RequestInfo | URL, init?: RequestInit) => live.enqueue(input, init),
    flush: () => live.flush(true),
    list: () => live.list(),
    subscribe: live.state.subscribe,
    getSnapshot: live.state.getSnapshot,
    close: () => live.close(),
  });
}

class LiveOutbox {
  readonly state = new OutboxState();
  private readonly storage: OutboxStorage;
  private readonly entries: Entries;
  private readonly drain: Drain;
  private readonly network: OutboxNetwork;
  private locks: OutboxLocks | undefined;
  private readonly channel: ChangeChannel;
  private readonly controller = new AbortController();
  private readonly unsubscribe: () => void;
  private running: Promise<void> | undefined;
  private again = false;
  private resetNetworkWaits = false;
  /** This tab holds the lock and runs a pass: it keeps the mirror fresh itself. */
  private passing = false;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  private storageFailures = 0;
  private timer: unknown;
  private closing: Promise<void> | undefined;

  constructor(readonly options: ResolvedOutboxOptions) {
    const { name } = options;
    this.storage =
      options.storage ??
      (typeof globalThis.indexedDB === 'undefined' ? memoryStorage() : indexedDBStorage({ name }));
    this.network = options.network ?? platformNetwork();
    this.locks = options.locks === false ? undefined : (options.locks ?? platformLocks());
    this.channel = new ChangeChannel(name, () => void this.refresh());
    this.entries = new Entries(options, this.storage, this.state, this.channel);
    this.drain = new Drain(
      options,
      this.entries,
      this.state,
      this.controller.signal,
      () => this.state.current.online && !this.closed,
    );
    this.state.set({ online: this.network.isOnline() });
    this.unsubscribe = this.network.subscribe(() => this.onNetwork());
    // Read the store at once for the snapshot; the flush may first wait for another tab's lock.
    void this.refresh();
    void this.flush(true);
  }

  private get closed(): boolean {
    return this.closing !== undefined;
  }

  async enqueue(input: RequestInfo | URL, init?: RequestInit): Promise<OutboxEntry> {
    const { name, clock, key, idempotencyKeyHeader } = this.options;
    if (this.closed) throw new OutboxClosedError(name);
    if (input instanceof Request && input.bodyUsed && init?.body == null) {
      throw new OutboxBodyError(name, input.method, input.url, new TypeError('Body already used'));
    }
    const request = new Request(input, init);
    let body: ArrayBuffer | null = null;
    if (request.body !== null) {
      try {
        body = await request.arrayBuffer();
      } catch (error) {
        throw new OutboxBodyError(name, request.method, request.url, error);
      }
    }
    const lane = key(request);
    if (typeof lane !== 'string') {
      throw new TypeError(`[fetch-pacer] Expected \`key\` to return a string, got ${typeof lane}`);
    }
    const record = recordOf(request, body, {
      id: uuid(),
      key: lane,
      createdAt: clock.now(),
      idempotencyKeyHeader,
    });
    let entry: OutboxEntry | undefined;
    try {
      entry = await this.entries.add(record);
    } catch (error) {
      if (error instanceof OutboxStorageError) this.state.set({ lastError: error });
      throw error;
    }
    if (entry === undefined) throw new OutboxFullError(name, this.options.maxEntries);
    if (this.state.current.online && !this.closed) void this.flush(false);
    return entry;
  }

  /**
   * Starts a pass (or one more after the current one). `resetNetworkWaits`: the trigger says
   * the network may be back (start, `online`, `flush()`), so entries that failed in the network
   * are due now; a timer or an enqueue does not.
   */
  flush(resetNetworkWaits: boolean): Promise<void> {
    if (this.closed) return this.closing ?? Promise.resolve();
    if (resetNetworkWaits) this.resetNetworkWaits = true;
    if (this.running !== undefined) {
      this.again = true;
      return this.running;
    }
    // `running` is cleared in the same turn as the last `again` check, so a flush asked for
    // after that check starts a new run instead of joining one that is over.
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.withLock(() => this.pass());
        } while (this.again && !this.closed);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /** One tab at a time: wait for the lock (a tab that flushed before us leaves nothing due). */
  private async withLock(pass: () => Promise<void>): Promise<void> {
    const locks = this.locks;
    if (locks === undefined) return pass();
    try {
      await locks.request(
        `fetch-pacer-outbox:${this.options.name}`,
        { signal: this.controller.signal },
        () => pass(),
      );
    } catch (error) {
      if (this.closed) return;
      // Web Locks refused (an opaque origin, a sandboxed frame): flush from this tab alone.
      this.locks = undefined;
      this.entries.report(
        new OutboxError(
          this.options.name,
          `[fetch-pacer] The outbox '${this.options.name}' could not take its Web Lock (${String(error)}); this tab flushes without coordinating with other tabs.`,
          { cause: error },
        ),
      );
      await pass();
    }
  }

  private async pass(): Promise<void> {
    if (this.closed) return;
    const reset = this.resetNetworkWaits;
    this.resetNetworkWaits = false;
    this.passing = true;
    this.clearTimer();
    this.state.set({ flushing: this.state.current.online });
    try {
      await this.drain.run(reset);
      this.storageFailures = 0;
      this.armTimer(undefined);
    } catch (error) {
      const failure =
        error instanceof OutboxError
          ? error
          : new OutboxStorageError(this.options.name, 'flush', error);
      this.storageFailures++;
      this.entries.report(failure);
      this.armTimer(this.options.clock.now() + backoffMs(this.storageFailures, this.options));
    } finally {
      this.passing = false;
      this.state.set({ flushing: false });
    }
  }

  /** Arms the one timer for the earliest waiting first-of-its-key entry (or `at`). */
  private armTimer(at: number | undefined): void {
    this.clearTimer();
    if (this.closed || !this.state.current.online) return;
    // After a storage failure, `at` (its backoff) rules: the entries look due, but the store is not.
    let next = at ?? Number.POSITIVE_INFINITY;
    if (at === undefined) {
      for (const head of this.entries.heads()) next = Math.min(next, head.nextAttemptAt);
    }
    if (next === Number.POSITIVE_INFINITY) return;
    const { clock } = this.options;
    this.timer = clock.setTimeout(
      () => {
        this.timer = undefined;
        this.state.set({ nextAttemptAt: undefined });
        void this.flush(false);
      },
      Math.max(0, next - clock.now()),
    );
    this.state.set({ nextAttemptAt: next });
  }

  private clearTimer(): void {
    if (this.timer === undefined) return;
    this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.state.set({ nextAttemptAt: undefined });
  }

  private onNetwork(): void {
    if (this.closed) return;
    const online = this.network.isOnline();
    this.state.set({ online });
    if (online) void this.flush(true);
    else this.clearTimer();
  }

  /** Another tab changed the store: read it again for the snapshot (not while we flush). */
  private refresh(): Promise<void> {
    if (this.closed || this.passing) return Promise.resolve();
    if (this.refreshing !== undefined) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      try {
        do {
          this.refreshAgain = false;
          try {
            await this.entries.load(false);
          } catch {
            // The flushing tab reports storage failures; a snapshot refresh waits for the next.
          }
        } while (this.refreshAgain && !this.closed && !this.passing);
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }

  async list(): Promise<readonly OutboxEntry[]> {
    return this.entries.peek();
  }

  close(): Promise<void> {
    if (this.closing !== undefined) return this.closing;
    this.clearTimer();
    this.unsubscribe();
    this.channel.close();
    this.controller.abort(new OutboxClosedError(this.options.name));
    this.closing = (async () => {
      await this.running?.catch(() => {});
      await this.refreshing;
      try {
        await this.storage.close?.();
      } catch {
        // Closing is best effort: nothing is lost by a connection left to the garbage collector.
      }
      this.state.set({ closed: true, flushing: false, nextAttemptAt: undefined });
    })();
    return this.closing;
  }
}
