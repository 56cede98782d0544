import type { Decision } from '../../core/decision.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import type { ServerSignal } from '../../core/signal.js';
import { assertKnownOptions, describe } from '../../core/validate.js';
import type { IDBFactoryLike, LockManagerLike } from '../../dom-types.js';
import { defineStore } from '../../pacer/define-store.js';
import type { StoreCall, StoreCost, StoreEvent } from '../../pacer/store-contract.js';
import { LocalLimits } from '../local.js';
import {
  adjust,
  assertShareable,
  block,
  decide,
  effectOn,
  observe,
  peek,
} from '../bucket-state.js';
import type { RemoteStore } from '../remote-store.js';
import { openDatabase, read, remove, sweep, transact } from './database.js';

/** The platform pieces a cross-tab store uses; the globals unless given (tests, odd hosts). */
export interface CrossTabPlatform {
  readonly indexedDB?: IDBFactoryLike | undefined;
  readonly locks?: LockManagerLike | undefined;
  readonly BroadcastChannel?: typeof BroadcastChannel | undefined;
  /**
   * The time base shared by every tab and worker of the origin, in ms.
   * @default `performance.timeOrigin + performance.now()`
   */
  readonly now?: (() => number) | undefined;
}

export interface CrossTabStoreOptions {
  /**
   * Names the shared budget: every tab and worker of the origin whose store has this name draws
   * on the same buckets (keyed by the pacer's keys). A non-empty string.
   */
  readonly name: string;
  /** Advanced: the platform pieces to use instead of the globals. */
  readonly platform?: CrossTabPlatform;
}

/** A store shared by the tabs and workers of an origin. Pass it to `createPacer({ store })`. */
export interface CrossTabStore extends RemoteStore {
  readonly name: string;
  /**
   * `'shared'` while the budget is shared; `'per-tab'` once the store fell back to counting in
   * this tab alone (the platform lacks Web Locks or IndexedDB, or IndexedDB would not open).
   */
  readonly mode: 'shared' | 'per-tab';
  /** Forgets `key` for every tab (its bucket starts full); waiting tabs ask again at once. */
  reset(key: string): Promise<void>;
  /** Hears blocks and resets made by other tabs (the pacer subscribes by itself). */
  subscribe(listener: (event: StoreEvent) => void): () => void;
  /** Closes the database and the channel. Pacers using the store must be disposed first. */
  close(): void;
}

/** A message on the store's BroadcastChannel. `until` (shared ms): the key is blocked. */
interface Message {
  readonly key: string;
  readonly until?: number;
}

let warned = false;

/**
 * One bucket per key for every tab and worker of an origin. A take holds the key's Web Lock
 * (`navigator.locks`) around one IndexedDB transaction that reads, decides and writes the key's
 * state; blocks from Retry-After are stored the same way and announced on a BroadcastChannel.
 *
 * IndexedDB, not localStorage: workers have no localStorage, and a tab reads localStorage from
 * its own cache, which other tabs' writes reach asynchronously: a tab taking the lock just after
 * another released it could read the state before that tab's write. IndexedDB transactions go
 * through one backend per origin, so a transaction begun after another committed reads its write.
 *
 * The time base is `performance.timeOrigin + performance.now()`: each context's monotonic clock
 * set against the same wall clock at its start, so tabs and workers agree, and none jumps when
 * the system time is corrected mid-life, as `Date.now()` would (refilling a bucket in one step,
 * or freezing it). Contexts started on either side of such a correction disagree by it: a
 * negative elapsed time counts as zero (no early refill for the one behind).
 */
export function crossTabStore(options: CrossTabStoreOptions): CrossTabStore {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(
      `[fetch-pacer] Expected crossTabStore options \`{ name }\`, got ${describe(options)}`,
    );
  }
  assertKnownOptions('crossTabStore()', options, ['name', 'platform']);
  const { name, platform = {} } = options;
  if (typeof name !== 'string' || name === '') {
    throw new TypeError(
      `[fetch-pacer] Expected \`name\` to be a non-empty string, got ${describe(name)}`,
    );
  }
  return defineStore(new CrossTab(name, platform));
}

class CrossTab implements CrossTabStore {
  readonly synchronous = false;
  /** One rate per key from its clients' bare refusals, paced for all (`SharedRate`). */
  readonly pacesRefusals = true;
  private readonly indexedDB: IDBFactory | undefined;
  private readonly locks: LockManager | undefined;
  private readonly now: () => number;
  private readonly channel: BroadcastChannel | undefined;
  private readonly listeners = new Set<(event: StoreEvent) => void>();
  private database: Promise<IDBDatabase | undefined> | undefined;
  private local: LocalLimits | undefined;
  private closed = false;

  constructor(
    readonly name: string,
    platform: CrossTabPlatform,
  ) {
    const scope = globalThis as {
      indexedDB?: IDBFactory;
      navigator?: { locks?: LockManager };
      BroadcastChannel?: typeof BroadcastChannel;
    };
    this.indexedDB = 'indexedDB' in platform ? platform.indexedDB : scope.indexedDB;
    this.locks = 'locks' in platform ? platform.locks : scope.navigator?.locks;
    this.now = platform.now ?? (() => performance.timeOrigin + performance.now());
    const Channel =
      'BroadcastChannel' in platform ? platform.BroadcastChannel : scope.BroadcastChannel;
    if (this.indexedDB === undefined || this.locks === undefined) {
      const missing = this.locks === undefined ? 'Web Locks (navigator.locks)' : 'IndexedDB';
      this.degrade(`${missing} is not available here`);
    }
    if (Channel !== undefined && this.local === undefined) {
      this.channel = new Channel(`fetch-pacer:${name}`);
      this.channel.onmessage = (event: MessageEvent) => this.tellListeners(event.data);
    }
  }

  get mode(): 'shared' | 'per-tab' {
    return this.local === undefined ? 'shared' : 'per-tab';
  }

  check(limits: readonly ResolvedPolicy[]): void {
    assertShareable(limits, 'crossTabStore');
  }

  async take(key: string, cost: StoreCost, call: StoreCall): Promise<Decision> {
    const [decision] = await this.takeMany(key, [cost], false, call);
    return decision as Decision;
  }

  async takeMany(
    key: string,
    costs: readonly StoreCost[],
    stopAtDenial: boolean,
    call: StoreCall,
  ): Promise<readonly Decision[]> {
    const { limits, roundTripMs } = call;
    const decisions = await this.locked(key, call, (state, now) => {
      const told = state.roundTripAt;
      const result = decide(state, limits, now, costs, stopAtDenial, roundTripMs);
      // A denial changes nothing but a longer round trip told (`spreadAt`).
      const changed = result.some((decision) => decision.allowed) || state.roundTripAt !== told;
      return { result, changed };
    });
    return decisions ?? (this.local as LocalLimits).takeMany(key, costs, stopAtDenial, call);
  }

  async peek(key: string, cost: StoreCost, call: StoreCall): Promise<Decision> {
    const db = await this.open();
    if (db === undefined) return (this.local as LocalLimits).peek(key, cost, call);
    const { state, at } = await read(db, key, call.limits, this.now);
    return peek(state, call.limits, at, cost, call.roundTripMs);
  }

  async block(key: string, ms: number, call: StoreCall): Promise<void> {
    this.local?.block(key, ms);
    const until = await this.locked(key, call, (state, now) => {
      block(state, now + ms);
      return { result: state.blockedUntil, changed: true };
    });
    // Counting per tab: this tab's other pacers still hear of it.
    if (until === undefined) this.tellListeners({ key, until: this.now() + ms });
    else this.announce({ key, until });
  }

  async observe(key: string, signal: ServerSignal, call: StoreCall): Promise<void> {
    this.local?.observe(key, signal, call);
    const { limits, units, roundTripMs } = call;
    const effect = effectOn(signal, limits.length, units, roundTripMs);
    if (effect === undefined) return;
    const { blockMs } = effect;
    const until = await this.locked(key, call, (state, now) => {
      observe(state, limits, now, signal, units, roundTripMs);
      return { result: state.blockedUntil, changed: true };
    });
    // No block (or none longer: a count of 0 the key's own count agreed with blocks nothing).
    if (blockMs === 0 || (until !== undefined && !(until > this.now()))) return;
    // Counting per tab: this tab's other pacers still hear of it.
    if (until === undefined) this.tellListeners({ key, until: this.now() + blockMs });
    else this.announce({ key, until });
  }

  async adjust(
    key: string,
    amounts: readonly number[],
    call: StoreCall,
    reservedAt?: number,
  ): Promise<void> {
    this.local?.adjust(key, amounts, call, reservedAt);
    const shared = await this.locked(key, call, (state, now) => {
      adjust(state, call.limits, now, amounts, reservedAt);
      return { result: true, changed: true };
    });
    // Credit given back may start a waiting request now: in every tab, or in this one's pacers.
    if (!amounts.some((amount) => amount < 0)) return;
    if (shared === undefined) this.tellListeners({ key });
    else this.announce({ key });
  }

  async reset(key: string): Promise<void> {
    this.local?.reset(key);
    const db = await this.open();
    if (db !== undefined) {
      await (this.locks as LockManager).request(this.lockName(key), () => remove(db, key));
    }
    this.announce({ key });
  }

  subscribe(listener: (event: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  close(): void {
    this.closed = true;
    this.channel?.close();
    this.listeners.clear();
    this.database?.then((db) => db?.close());
  }

  private lockName(key: string): string {
    return `fetch-pacer:${this.name}:${key}`;
  }

  /**
   * Runs `step` on `key`'s state under its Web Lock, in one transaction; undefined when the store
   * counts per tab. A tab that closes or crashes mid-step loses its lock (the browser releases
   * it) and its uncommitted transaction: the next holder reads the last committed state.
   */
  private async locked<T>(
    key: string,
    call: StoreCall,
    step: Parameters<typeof transact<T>>[4],
  ): Promise<T | undefined> {
    const db = await this.open();
    if (db === undefined) return undefined;
    const locks = this.locks as LockManager;
    return locks.request(this.lockName(key), { signal: call.signal }, () =>
      transact(db, key, call.limits, this.now, step),
    );
  }

  /** The database, opened once; undefined (and per-tab counting) when it cannot be opened. */
  private open(): Promise<IDBDatabase | undefined> {
    if (this.local !== undefined) return Promise.resolve(undefined);
    if (this.closed) return Promise.reject(new Error('[fetch-pacer] This crossTabStore is closed'));
    this.database ??= openDatabase(this.indexedDB as IDBFactory, `fetch-pacer:${this.name}`).then(
      (db) => {
        // The browser may close it (storage cleared): open again on the next call.
        db.onclose = () => {
          this.database = undefined;
        };
        sweep(db, this.now()).catch(() => {});
        return db;
      },
      (error: unknown) => {
        this.degrade(`IndexedDB would not open (${String(error)})`);
        return undefined;
      },
    );
    return this.database;
  }

  private degrade(why: string): void {
    this.local ??= new LocalLimits();
    if (warned) return;
    warned = true;
    console.warn(
      `[fetch-pacer] crossTabStore('${this.name}') counts in this tab alone: ${why}. Each tab keeps to the limit by itself, so several tabs together may exceed it.`,
    );
  }

  private announce(message: Message): void {
    this.channel?.postMessage(message);
    // A BroadcastChannel does not deliver to its own sender: tell this tab's pacers directly.
    this.tellListeners(message);
  }

  private tellListeners(data: unknown): void {
    const message = data as Partial<Message> | null;
    if (typeof message?.key !== 'string') return;
    const { key, until } = message;
    const blockedMs = typeof until === 'number' ? until - this.now() : 0;
    const event: StoreEvent = blockedMs > 0 ? { key, blockedMs } : { key };
    for (const listener of [...this.listeners]) listener(event);
  }
}
