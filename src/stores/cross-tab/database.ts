import type { ResolvedPolicy } from '../../core/policy.js';
import { type BucketState, normalize, restsAt } from '../bucket-state.js';

const STORE = 'buckets';
const EXPIRES = 'expiresAt';

/** A key's record: its state, and the shared time it is at rest (then it may be deleted). */
interface StoredBucket extends BucketState {
  readonly expiresAt: number;
}

/** What one locked step did to a key's state: its result, and whether it must be written. */
export interface Step<T> {
  readonly result: T;
  readonly changed: boolean;
}

/**
 * Opens (creating on first use) the database of a cross-tab store: one object store of bucket
 * states by key, indexed by the time each is at rest. Closes itself when another tab upgrades
 * or deletes it, so that never blocks.
 */
export function openDatabase(factory: IDBFactory, name: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = factory.open(name, 1);
    request.onupgradeneeded = () => {
      const objects = request.result.createObjectStore(STORE);
      objects.createIndex(EXPIRES, EXPIRES);
    };
    request.onsuccess = () => {
      const db = request.result;
      db.onversionchange = () => db.close();
      resolve(db);
    };
    request.onerror = () => reject(request.error);
    request.onblocked = () => reject(new Error(`[fetch-pacer] IndexedDB '${name}' is blocked`));
  });
}

/**
 * One read-modify-write of `key` in a single readwrite transaction, resolved once it committed.
 * The caller holds the key's Web Lock, so no other tab is between the read and the write; the
 * time is read inside, after the lock was granted, so each holder's clock follows the last.
 * A state at rest is deleted rather than stored: a fresh one is identical.
 */
export function transact<T>(
  db: IDBDatabase,
  key: string,
  limits: readonly ResolvedPolicy[],
  now: () => number,
  step: (state: BucketState, now: number) => Step<T>,
): Promise<T> {
  return new Promise((resolve, reject) => {
    // 'relaxed': no fsync per take. A bucket lost to a power cut only starts fresh.
    const tx = db.transaction(STORE, 'readwrite', { durability: 'relaxed' });
    const objects = tx.objectStore(STORE);
    const read = objects.get(key);
    let result: T;
    let failure: unknown;
    read.onsuccess = () => {
      const at = now();
      const state = normalize(read.result, limits, at);
      try {
        const done = step(state, at);
        result = done.result;
        if (!done.changed) return;
      } catch (error) {
        failure = error;
        tx.abort();
        return;
      }
      const expiresAt = restsAt(state, limits, at);
      if (expiresAt <= at) objects.delete(key);
      else objects.put({ ...state, expiresAt } satisfies StoredBucket, key);
    };
    tx.oncomplete = () => resolve(result);
    tx.onabort = () =>
      reject(failure ?? tx.error ?? new Error('[fetch-pacer] transaction aborted'));
  });
}

/** `key`'s state as last committed, read without the lock (a read-only snapshot). */
export function read(
  db: IDBDatabase,
  key: string,
  limits: readonly ResolvedPolicy[],
  now: () => number,
): Promise<{ state: BucketState; at: number }> {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, 'readonly');
    const request = tx.objectStore(STORE).get(key);
    request.onsuccess = () => {
      const at = now();
      resolve({ state: normalize(request.result, limits, at), at });
    };
    tx.onabort = () => reject(tx.error ?? new Error('[fetch-pacer] transaction aborted'));
  });
}

/** Deletes `key`'s record (every tab then sees it fresh). */
export function remove(db: IDBDatabase, key: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, 'readwrite', { durability: 'relaxed' });
    tx.objectStore(STORE).delete(key);
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new Error('[fetch-pacer] transaction aborted'));
  });
}

/**
 * Deletes every record at rest by `now`: keys no tab used since they filled up again, which
 * no take would otherwise visit. Run once per store, when it opens the database.
 */
export function sweep(db: IDBDatabase, now: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, 'readwrite', { durability: 'relaxed' });
    // In `expiresAt` order, stopping at the first one still busy.
    const cursor = tx.objectStore(STORE).index(EXPIRES).openCursor();
    let deleted = 0;
    cursor.onsuccess = () => {
      const at = cursor.result;
      if (at === null || !((at.key as number) <= now)) return;
      at.delete();
      deleted++;
      at.continue();
    };
    tx.oncomplete = () => resolve(deleted);
    tx.onabort = () => reject(tx.error ?? new Error('[fetch-pacer] transaction aborted'));
  });
}
