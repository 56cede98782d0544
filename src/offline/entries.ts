import { OutboxCorruptEntryError, OutboxError, OutboxStorageError } from './errors.js';
import type { ResolvedOutboxOptions } from './options.js';
import type { ChangeChannel } from './platform.js';
import { decode, toRecord } from './record.js';
import { type OutboxState, report } from './state.js';
import type { OutboxDrop, OutboxEntry, OutboxRecord, OutboxStorage } from './types.js';

/**
 * The outbox's view of its storage: every storage call (its failures wrapped in
 * `OutboxStorageError`), a mirror of the valid entries for the snapshot, and the reports of
 * entries that leave without an answer (corrupt, expired, out of attempts).
 */
export class Entries {
  /** The valid entries as last read or written by this tab, by `seq`. */
  private mirror = new Map<number, OutboxEntry>();
  /** Deleted by this tab; a list that started before the delete may still hold them. */
  private gone = new Set<number>();
  /** Owner reads run one after another, so a corrupt record is reported once. */
  private reading: Promise<unknown> = Promise.resolve();
  private readonly laterReported = new Set<number>();
  /** Bumped by every change this tab makes, so a read that raced one does not overwrite it. */
  private version = 0;

  constructor(
    private readonly options: ResolvedOutboxOptions,
    private readonly storage: OutboxStorage,
    private readonly state: OutboxState,
    private readonly channel: ChangeChannel,
  ) {}

  async io<T>(operation: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw new OutboxStorageError(this.options.name, operation, error);
    }
  }

  /**
   * Reads the store. The owner (the tab holding the flush lock) also cleans it: corrupt and
   * expired entries are deleted and reported; with `resetNetworkWaits`, entries whose last
   * attempt failed in the network are due at once (in memory: nothing to write).
   * Returns the valid entries in `seq` order.
   */
  load(owner: boolean, resetNetworkWaits = false): Promise<readonly OutboxEntry[]> {
    if (!owner) return this.read(false, false, true);
    const next = this.reading.then(() => this.read(true, resetNetworkWaits, true));
    this.reading = next.catch(() => {});
    return next;
  }

  /** The valid stored entries, read without touching anything (for `list()`). */
  peek(): Promise<readonly OutboxEntry[]> {
    return this.read(false, false, false);
  }

  private async read(
    owner: boolean,
    resetNetworkWaits: boolean,
    apply: boolean,
  ): Promise<readonly OutboxEntry[]> {
    const version = this.version;
    const stored = await this.io('list', () => this.storage.list());
    const now = this.options.clock.now();
    const valid: OutboxEntry[] = [];
    const listed = new Set<number>();
    for (const { seq, record } of stored) {
      listed.add(seq);
      if (this.gone.has(seq)) continue;
      const decoded = decode(seq, record);
      if (!decoded.ok) {
        if (owner) await this.reject(seq, record, decoded.later, decoded.problem);
        continue;
      }
      let entry = decoded.entry;
      if (owner && this.expired(entry, now)) {
        await this.remove(entry);
        this.drop({ reason: 'expired', entry });
        continue;
      }
      if (resetNetworkWaits && entry.lastFailure === 'network' && entry.nextAttemptAt > now) {
        entry = Object.freeze({ ...entry, nextAttemptAt: 0 });
      }
      valid.push(entry);
    }
    // A seq deleted before this list began is not in it: forget it (seqs are never reused).
    for (const seq of this.gone) if (!listed.has(seq)) this.gone.delete(seq);
    valid.sort((a, b) => a.seq - b.seq);
    if (owner || (apply && version === this.version)) {
      if (owner) this.version++;
      this.mirror = new Map(valid.map((entry) => [entry.seq, entry]));
      this.state.set({ ready: true, pending: this.mirror.size });
    }
    return valid;
  }

  private async reject(seq: number, record: unknown, later: boolean, problem: string) {
    const { name } = this.options;
    if (later) {
      if (this.laterReported.has(seq)) return;
      this.laterReported.add(seq);
      this.report(
        new OutboxError(
          name,
          `[fetch-pacer] The outbox '${name}' holds an entry (seq ${seq}) of a later fetch-pacer (${problem}): it is left in the store, unsent. Update the library in this tab.`,
        ),
      );
      return;
    }
    await this.io('delete', () => this.storage.delete(seq));
    this.version++;
    this.gone.add(seq);
    this.channel.post();
    const error = new OutboxCorruptEntryError(name, seq, problem);
    this.state.set({ lastError: error });
    this.drop({ reason: 'corrupt', seq, record, error });
  }

  expired(entry: OutboxEntry, now: number): boolean {
    return now - entry.createdAt > this.options.maxRetentionMs;
  }

  /** Stores a new record; undefined when `maxEntries` are stored already. */
  async add(record: OutboxRecord): Promise<OutboxEntry | undefined> {
    const seq = await this.io('add', () => this.storage.add(record, this.options.maxEntries));
    if (seq === undefined) return undefined;
    this.version++;
    const entry: OutboxEntry = Object.freeze({
      ...record,
      headers: Object.freeze(record.headers.map((pair) => Object.freeze([...pair] as const))),
      seq,
    });
    this.mirror.set(seq, entry);
    this.state.set({ pending: this.mirror.size });
    this.channel.post();
    return entry;
  }

  async update(entry: OutboxEntry): Promise<void> {
    await this.io('update', () => this.storage.update(entry.seq, toRecord(entry)));
    this.version++;
    this.mirror.set(entry.seq, entry);
    this.channel.post();
  }

  async remove(entry: OutboxEntry): Promise<void> {
    await this.io('delete', () => this.storage.delete(entry.seq));
    this.version++;
    this.gone.add(entry.seq);
    this.mirror.delete(entry.seq);
    this.state.set({ pending: this.mirror.size });
    this.channel.post();
  }

  /** The first entry of each key: the ones that decide when the outbox next has work. */
  heads(): OutboxEntry[] {
    const heads = new Map<string, OutboxEntry>();
    for (const entry of this.mirror.values()) {
      const head = heads.get(entry.key);
      if (head === undefined || entry.seq < head.seq) heads.set(entry.key, entry);
    }
    return [...heads.values()];
  }

  drop(drop: OutboxDrop): void {
    this.state.set({ dropped: this.state.current.dropped + 1 });
    call(this.options.onDropped, drop);
  }

  report(error: OutboxError): void {
    this.state.set({ lastError: error });
    call(this.options.onError, error);
  }
}

/** Calls a user's callback; one that throws is reported and breaks nothing. */
export function call<A extends unknown[]>(callback: (...args: A) => void, ...args: A): void {
  try {
    callback(...args);
  } catch (error) {
    report(error);
  }
}
