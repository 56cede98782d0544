import { type DBSchema, type IDBPDatabase, wrap } from 'idb';
import { describe } from '../core/validate.js';
import type { IDBFactoryLike } from '../dom-types.js';
import type { OutboxRecord, OutboxStorage, StoredRecord } from './types.js';

export interface IndexedDBStorageOptions {
  /** The outbox's name; the database is `fetch-pacer-outbox:<name>`. A non-empty string. */
  readonly name: string;
  /** The IndexedDB to use (a worker's, or `fake-indexeddb` in tests). @default globalThis.indexedDB */
  readonly indexedDB?: IDBFactoryLike;
}

interface OutboxSchema extends DBSchema {
  entries: { key: number; value: unknown };
}

type Database = IDBPDatabase<OutboxSchema>;

const VERSION = 1;
const STORE = 'entries';

/**
 * An outbox storage in IndexedDB: one database per outbox name, one object store whose
 * auto-increment key is the entry's `seq`, so every tab of the origin shares one order.
 *
 * `add` commits with `durability: 'strict'`, so "stored" means on disk, not in a write cache.
 * Updates and deletes commit `'relaxed'`: a delete lost in a crash means one repeat, which the
 * idempotency key covers, and a strict commit per sent entry would slow the drain to the disk's
 * flush rate. The connection opens on first use, closes when another tab
 * upgrades the database, and reopens on the next call.
 */
export function indexedDBStorage(options: IndexedDBStorageOptions): OutboxStorage {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(
      `[fetch-pacer] Expected IndexedDB storage options \`{ name }\`, got ${describe(options)}`,
    );
  }
  const { name, indexedDB: factory } = options;
  if (typeof name !== 'string' || name === '') {
    throw new TypeError(
      `[fetch-pacer] Expected \`name\` to be a non-empty string, got ${describe(name)}`,
    );
  }
  if (factory !== undefined && typeof (factory as Partial<IDBFactory>)?.open !== 'function') {
    throw new TypeError(
      `[fetch-pacer] Expected \`indexedDB\` to be an IDBFactory, got ${describe(factory)}`,
    );
  }
  const databaseName = `fetch-pacer-outbox:${name}`;
  let opening: Promise<Database> | undefined;

  function open(): Promise<Database> {
    if (opening !== undefined) return opening;
    const idb = factory ?? globalThis.indexedDB;
    if (idb === undefined) {
      return Promise.reject(new Error('IndexedDB is not available here; pass another storage'));
    }
    const request = idb.open(databaseName, VERSION);
    request.addEventListener('upgradeneeded', () => {
      const db = request.result;
      if (!db.objectStoreNames.contains(STORE)) {
        db.createObjectStore(STORE, { autoIncrement: true });
      }
    });
    const pending = (wrap(request) as unknown as Promise<Database>).then((db) => {
      const forget = () => {
        if (opening === pending) opening = undefined;
      };
      // Another tab wants to upgrade: step aside, reopen on the next call.
      db.addEventListener('versionchange', () => {
        db.close();
        forget();
      });
      // The browser closed it (storage cleared, disk error): reopen on the next call.
      db.addEventListener('close', forget);
      return db;
    });
    pending.catch(() => {
      if (opening === pending) opening = undefined;
    });
    opening = pending;
    return pending;
  }

  return {
    async add(record: OutboxRecord, maxEntries: number) {
      const db = await open();
      const tx = db.transaction(STORE, 'readwrite', { durability: 'strict' });
      // Count and add in one transaction: tabs adding at once cannot both pass the bound.
      const count = await tx.store.count();
      const seq = count < maxEntries ? await tx.store.add(record) : undefined;
      await tx.done;
      return seq;
    },

    async list(): Promise<readonly StoredRecord[]> {
      const db = await open();
      const tx = db.transaction(STORE, 'readonly');
      try {
        const [keys, values] = await Promise.all([tx.store.getAllKeys(), tx.store.getAll()]);
        await tx.done;
        return keys.map((seq, index) => ({ seq, record: values[index] }));
      } catch {
        // One value the browser cannot read back fails the whole getAll: read them one by one,
        // so that one is reported as corrupt and the others still go.
        return listOneByOne(db);
      }
    },

    async update(seq: number, record: OutboxRecord) {
      const db = await open();
      const tx = db.transaction(STORE, 'readwrite', { durability: 'relaxed' });
      if ((await tx.store.getKey(seq)) !== undefined) await tx.store.put(record, seq);
      await tx.done;
    },

    async delete(seq: number) {
      const db = await open();
      const tx = db.transaction(STORE, 'readwrite', { durability: 'relaxed' });
      await tx.store.delete(seq);
      await tx.done;
    },

    async close() {
      const current = opening;
      opening = undefined;
      if (current !== undefined) (await current.catch(() => undefined))?.close();
    },
  };
}

async function listOneByOne(db: Database): Promise<readonly StoredRecord[]> {
  const keys = await db.getAllKeys(STORE);
  const out: StoredRecord[] = [];
  for (const seq of keys) {
    let record: unknown;
    try {
      record = await db.get(STORE, seq);
    } catch {
      record = undefined;
    }
    out.push({ seq, record });
  }
  return out;
}
