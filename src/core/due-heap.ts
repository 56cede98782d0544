/** An item of the heap: it carries its own position, so it can be moved or removed in place. */
export interface DueItem {
  /** Ticker time the item is due at. */
  due: number;
  /** Tie-breaker among equal `due`: lower first (enqueue order). */
  order: number;
  /** Position in the heap; -1 when not in it. */
  heapIndex: number;
}

/**
 * An indexed binary min-heap of the keys that have tasks waiting, by due time.
 *
 * Why a heap: the pacer keeps one timer, set to the earliest due key, and each event (a task
 * queued, started, aborted, a server block) moves one key's due time. With thousands of keys
 * waiting, a scan per event would be O(keys) and a sorted array O(keys) per move; the heap reads
 * the earliest in O(1) and moves or removes a key in O(log keys). Each item stores its index, so
 * no search is needed to find it. A timing wheel would be cheaper still but needs a fixed tick,
 * and due times here are float ms.
 */
export class DueHeap<T extends DueItem> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  /** The earliest item, or undefined when empty. */
  peek(): T | undefined {
    return this.items[0];
  }

  /** Inserts `item`, or moves it to where its (changed) `due`/`order` now put it. */
  update(item: T): void {
    if (item.heapIndex < 0) {
      item.heapIndex = this.items.length;
      this.items.push(item);
      this.up(item.heapIndex);
      return;
    }
    this.down(this.up(item.heapIndex));
  }

  remove(item: T): void {
    const index = item.heapIndex;
    if (index < 0) return;
    item.heapIndex = -1;
    const last = this.items.pop() as T;
    if (index === this.items.length) return;
    this.items[index] = last;
    last.heapIndex = index;
    this.down(this.up(index));
  }

  clear(): void {
    for (const item of this.items) item.heapIndex = -1;
    this.items.length = 0;
  }

  private before(a: T, b: T): boolean {
    return a.due < b.due || (a.due === b.due && a.order < b.order);
  }

  private up(start: number): number {
    const { items } = this;
    const item = items[start] as T;
    let index = start;
    while (index > 0) {
      const parentIndex = (index - 1) >>> 1;
      const parent = items[parentIndex] as T;
      if (!this.before(item, parent)) break;
      items[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    items[index] = item;
    item.heapIndex = index;
    return index;
  }

  private down(start: number): void {
    const { items } = this;
    const item = items[start] as T;
    const length = items.length;
    let index = start;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      let child = left;
      if (right < length && this.before(items[right] as T, items[left] as T)) child = right;
      const smallest = items[child] as T;
      if (!this.before(smallest, item)) break;
      items[index] = smallest;
      smallest.heapIndex = index;
      index = child;
    }
    items[index] = item;
    item.heapIndex = index;
  }
}
