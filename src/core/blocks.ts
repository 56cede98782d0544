import { DueHeap, type DueItem } from './due-heap.js';

interface Block extends DueItem {
  readonly key: string;
}

const NONE: readonly string[] = Object.freeze([]);

/**
 * The server's blocks ("not before t", from Retry-After) of a permit source's keys, kept once:
 * a map for the lookup of each decision and a heap by end time, so setting, ending or dropping
 * a block costs O(log n) however many keys are blocked, and the earliest end (what a pacer's
 * timer wakes for) is read in O(1).
 *
 * At most `maxKeys` blocks: a server that blocks more keys than the bound first has the ended
 * ones dropped, then the one that ends first (it is the least harmful to forget). The sorted
 * list of blocked keys, for a snapshot, is built only when asked after a change.
 */
export class ServerBlocks {
  readonly #blocks = new Map<string, Block>();
  readonly #heap = new DueHeap<Block>();
  #order = 0;
  #list: readonly string[] | undefined = NONE;

  constructor(private readonly maxKeys: number) {}

  get size(): number {
    return this.#blocks.size;
  }

  /** The earliest time a block ends (Infinity when there is none). */
  get nextEnd(): number {
    return this.#heap.peek()?.due ?? Number.POSITIVE_INFINITY;
  }

  /** Ticker time `key` is blocked until, if a block is kept (ended or not). */
  get(key: string): number | undefined {
    return this.#blocks.get(key)?.due;
  }

  /**
   * Blocks `key` until `until`; a later block wins over an earlier one, none shortens one.
   * Returns the key whose block was dropped to make room (at `maxKeys`), if one was: its waits
   * are shorter now.
   */
  set(key: string, until: number, now: number): string | undefined {
    const found = this.#blocks.get(key);
    if (found !== undefined) {
      if (until <= found.due) return undefined;
      found.due = until;
      this.#heap.update(found);
      return undefined;
    }
    if (until <= now) return undefined;
    let dropped: string | undefined;
    if (this.#blocks.size >= this.maxKeys) {
      this.sweep(now);
      const first = this.#heap.peek();
      if (first !== undefined && this.#blocks.size >= this.maxKeys) {
        if (first.due >= until) return undefined;
        dropped = first.key;
        this.delete(first.key);
      }
    }
    const block: Block = { key, due: until, order: this.#order++, heapIndex: -1 };
    this.#blocks.set(key, block);
    this.#heap.update(block);
    this.#list = undefined;
    return dropped;
  }

  delete(key: string): void {
    const block = this.#blocks.get(key);
    if (block === undefined) return;
    this.#blocks.delete(key);
    this.#heap.remove(block);
    this.#list = undefined;
  }

  /** Drops the blocks that have ended by `now`: O(log n) each, nothing when none has. */
  sweep(now: number): void {
    for (let first = this.#heap.peek(); first !== undefined && first.due <= now; ) {
      this.delete(first.key);
      first = this.#heap.peek();
    }
  }

  /** The keys blocked at `now`, sorted, frozen: the same array while the set is unchanged. */
  keys(now: number): readonly string[] {
    this.sweep(now);
    this.#list ??= this.#blocks.size === 0 ? NONE : Object.freeze([...this.#blocks.keys()].sort());
    return this.#list;
  }

  clear(): void {
    this.#blocks.clear();
    this.#heap.clear();
    this.#list = NONE;
  }
}
