/**
 * `fetch-pacer/offline`: a durable outbox for writes made offline, flushed through a paced
 * fetch when the network returns, in order, at a pace the server accepts.
 */
export {
  isOutboxBodyError,
  isOutboxClosedError,
  isOutboxCorruptEntryError,
  isOutboxError,
  isOutboxFullError,
  isOutboxSendError,
  isOutboxStorageError,
  OutboxBodyError,
  OutboxClosedError,
  OutboxCorruptEntryError,
  OutboxError,
  OutboxFullError,
  OutboxSendError,
  OutboxStorageError,
} from './errors.js';
export { type IndexedDBStorageOptions, indexedDBStorage } from './indexeddb-storage.js';
export { memoryStorage } from './memory-storage.js';
export type { OutboxOptions } from './options.js';
export { createOutbox } from './outbox.js';
export type {
  Outbox,
  OutboxClock,
  OutboxDrop,
  OutboxEntry,
  OutboxLocks,
  OutboxNetwork,
  OutboxRecord,
  OutboxSnapshot,
  OutboxStorage,
  StoredRecord,
} from './types.js';
