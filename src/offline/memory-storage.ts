import type { OutboxRecord, OutboxStorage, StoredRecord } from './types.js';

/**
 * An outbox storage in this process's memory: for tests, Node and server rendering. A reload
 * forgets it. Records are copied in and out with `structuredClone`, as IndexedDB would, so
 * nothing the caller keeps can change what is stored.
 */
export function memoryStorage(): OutboxStorage {
  const records = new Map<number, OutboxRecord>();
  let next = 1;
  return {
    async add(record, maxEntries) {
      if (records.size >= maxEntries) return undefined;
      const seq = next++;
      records.set(seq, structuredClone(record));
      return seq;
    },
    async list(): Promise<readonly StoredRecord[]> {
      // A Map iterates in insertion order, which is `seq` order.
      return [...records].map(([seq, record]) => ({ seq, record: structuredClone(record) }));
    },
    async update(seq, record) {
      if (records.has(seq)) records.set(seq, structuredClone(record));
    },
    async delete(seq) {
      records.delete(seq);
    },
  };
}
