import type { OutboxCorruptEntryError, OutboxError, OutboxSendError } from './errors.js';

/**
 * A request as the outbox stores it: everything needed to send it again after a reload.
 * Plain data (structured-cloneable), so any storage can keep it. Times are wall-clock epoch ms,
 * because they must mean the same after a reload, when the monotonic clock starts again.
 */
export interface OutboxRecord {
  /** Format version. A record of a later version is left alone (and reported), not sent. */
  readonly v: 1;
  /** A random UUID; also the `Idempotency-Key` unless the request brought its own. */
  readonly id: string;
  /** The line the entry waits in: one entry of a key at a time, in enqueue order. */
  readonly key: string;
  readonly method: string;
  readonly url: string;
  /** Every header, lowercased names, in the order the Request gave them. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  /** The body's bytes, or null when the request has none. */
  readonly body: ArrayBuffer | null;
  readonly credentials: NonNullable<RequestInit['credentials']>;
  readonly mode: NonNullable<RequestInit['mode']>;
  readonly redirect: NonNullable<RequestInit['redirect']>;
  readonly referrerPolicy: NonNullable<RequestInit['referrerPolicy']>;
  /** When it was enqueued, epoch ms. Retention counts from here. */
  readonly createdAt: number;
  /** Sends so far that got no definitive answer (network error, 408, 429, 5xx). */
  readonly attempts: number;
  /** Not sent before this epoch ms (backoff or the server's Retry-After); 0 when due at once. */
  readonly nextAttemptAt: number;
  /** What the last attempt met: the network failed, or the server said "not now". */
  readonly lastFailure: 'network' | 'status' | null;
}

/** A stored entry: its record and its place in the outbox (`seq`, increasing in enqueue order). */
export interface OutboxEntry extends OutboxRecord {
  readonly seq: number;
}

/** One stored value as a storage returns it: the outbox checks `record` before trusting it. */
export interface StoredRecord {
  readonly seq: number;
  readonly record: unknown;
}

/**
 * Where an outbox keeps its entries. `indexedDBStorage()` (browsers) and `memoryStorage()`
 * (tests, Node) implement it; bring your own for anything else (SQLite in Capacitor, a file).
 *
 * Contract:
 * - `add` is atomic with its count check and resolves only once the record is durable: the
 *   outbox tells its caller "stored" on the strength of it.
 * - `seq` numbers are integers that increase in the order adds commit, across every tab or
 *   process sharing the store, and are never reused.
 * - `list` returns what is stored, in `seq` order, as it is stored: the outbox validates each
 *   record and reports (then deletes) the corrupt ones, so return undecodable values as they are.
 * - `update` replaces the record at `seq` only if it is still there; `delete` of a missing
 *   `seq` is not an error.
 * - A failure rejects; a full disk rejects with a `QuotaExceededError` DOMException (or any
 *   error named so) so the outbox can say so.
 */
export interface OutboxStorage {
  /** Stores `record` unless `maxEntries` records are stored already. The new `seq`, or undefined when full. */
  add(record: OutboxRecord, maxEntries: number): Promise<number | undefined>;
  list(): Promise<readonly StoredRecord[]>;
  update(seq: number, record: OutboxRecord): Promise<void>;
  delete(seq: number): Promise<void>;
  /** Releases connections. The outbox calls it from `close()`. */
  close?(): void | Promise<void>;
}

/** Why an entry left the outbox without a definitive answer. Always reported, never silent. */
export type OutboxDrop =
  /** Older than `maxRetentionMs` when the outbox next looked at it. */
  | { readonly reason: 'expired'; readonly entry: OutboxEntry }
  /** `maxAttempts` sends got no definitive answer; `error` is the last one's. */
  | { readonly reason: 'attempts'; readonly entry: OutboxEntry; readonly error: OutboxSendError }
  /** A stored value that is not a valid record; `record` is what was stored, for salvage. */
  | {
      readonly reason: 'corrupt';
      readonly seq: number;
      readonly record: unknown;
      readonly error: OutboxCorruptEntryError;
    };

/** Immutable state of an outbox, for `useSyncExternalStore`: a new object only on change. */
export interface OutboxSnapshot {
  /** Whether the store has been read once; before that `pending` is 0 because nothing is known. */
  readonly ready: boolean;
  /** Entries stored and not yet settled, those in flight included. */
  readonly pending: number;
  /** Entries this tab is sending now (handed to the paced fetch, no answer yet). */
  readonly inFlight: number;
  /** This tab holds the flush lock and is working through the store. */
  readonly flushing: boolean;
  /** What the platform says (`navigator.onLine`); offline, nothing is sent. */
  readonly online: boolean;
  /** Epoch ms at which this tab will try again (backoff or Retry-After), when it waits for that. */
  readonly nextAttemptAt: number | undefined;
  /** The latest failure (a send, the storage); cleared by the next entry that is sent. */
  readonly lastError: OutboxError | undefined;
  /** Entries this tab sent (2xx), rejected (4xx) and dropped since it was created. */
  readonly sent: number;
  readonly rejected: number;
  readonly dropped: number;
  readonly closed: boolean;
}

export interface Outbox {
  /** The outbox's name: one store, one lock, one channel per name. */
  readonly name: string;
  /**
   * Stores the request (fetch's arguments) and resolves with its entry once it is durably
   * stored; it is then sent when the outbox is online and the entry's turn comes.
   * The request's `signal` is not kept: an entry outlives the page.
   *
   * Rejects with `OutboxBodyError` (the body could not be read), `OutboxFullError`
   * (`maxEntries` reached), `OutboxStorageError` (quota exceeded, storage unavailable),
   * `OutboxClosedError`, or the `TypeError` of `new Request()` for a bad URL or method.
   * Nothing is stored when it rejects, and nothing else is touched.
   */
  enqueue(input: string | URL | Request, init?: RequestInit): Promise<OutboxEntry>;
  /**
   * Sends every entry that is due, now, and resolves once none is (each sent, rejected, dropped
   * or waiting for its next attempt). Entries whose last attempt failed in the network are due
   * again at once; those the server told to wait (408, 429, 5xx) keep waiting. Offline, it only
   * reads the store. Never rejects: failures go to `onError` and `lastError`.
   */
  flush(): Promise<void>;
  /** The valid stored entries in enqueue order (a fresh read of the store). */
  list(): Promise<readonly OutboxEntry[]>;
  /** Calls `listener` after each change of the snapshot. Bound. */
  subscribe(listener: () => void): () => void;
  /** The current snapshot. Bound, for `useSyncExternalStore(outbox.subscribe, outbox.getSnapshot)`. */
  getSnapshot(): OutboxSnapshot;
  /**
   * Stops: no more sends, listeners and timers removed, sends in flight aborted (their entries
   * stay and go after the next start), the storage closed. Resolves once all that is done.
   */
  close(): Promise<void>;
}

/** Wall-clock time and timers. A `ManualClock` (started at an epoch time) satisfies it. */
export interface OutboxClock {
  /** Epoch ms. */
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Whether the platform is online, and when that changes. */
export interface OutboxNetwork {
  isOnline(): boolean;
  /** Calls `listener` when the platform goes online or offline; returns the unsubscribe. */
  subscribe(listener: () => void): () => void;
}

/** The part of the Web Locks API (`navigator.locks`) the outbox uses. */
export interface OutboxLocks {
  request(
    name: string,
    options: { signal?: AbortSignal },
    callback: (lock: unknown) => Promise<void>,
  ): Promise<unknown>;
}
