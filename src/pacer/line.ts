import type { UnitCosts } from '../core/units.js';

/** What a line holds: a waiting task, linked in place so that removal (abort) is O(1). */
export interface LineNode {
  readonly priority: number;
  readonly cost: number;
  /** Its amounts in named units, for a key with limits per unit. */
  readonly units?: UnitCosts | undefined;
  prev: LineNode | undefined;
  next: LineNode | undefined;
}

/** The tasks of one priority, FIFO, as a doubly linked list with their total cost. */
interface Bucket {
  readonly priority: number;
  head: LineNode | undefined;
  tail: LineNode | undefined;
  cost: number;
  /** Total amount per unit of its tasks with `units` (made at the first). */
  units: Record<string, number> | undefined;
}

/**
 * The waiting tasks of one key: higher priority first, FIFO within a priority. Strict order is
 * what keeps a big task at the head from being starved: nothing behind it may start first.
 *
 * Buckets are kept sorted by priority (descending) and found by binary search; apps use a few
 * priorities, so the array stays tiny. Within a bucket a linked list gives O(1) push, shift,
 * `front` insertion and removal of an aborted task from anywhere.
 */
export class Line<T extends LineNode> {
  private readonly buckets: Bucket[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** The task that goes next. */
  get head(): T | undefined {
    return this.buckets[0]?.head as T | undefined;
  }

  /** The task that goes last. */
  get tail(): T | undefined {
    return this.buckets.at(-1)?.tail as T | undefined;
  }

  /** Appends `node` to its priority, or with `front` puts it before every task of that priority. */
  push(node: T, front = false): void {
    const bucket = this.bucketFor(node.priority);
    if (front) {
      node.prev = undefined;
      node.next = bucket.head;
      if (bucket.head === undefined) bucket.tail = node;
      else bucket.head.prev = node;
      bucket.head = node;
    } else {
      node.next = undefined;
      node.prev = bucket.tail;
      if (bucket.tail === undefined) bucket.head = node;
      else bucket.tail.next = node;
      bucket.tail = node;
    }
    bucket.cost += node.cost;
    if (node.units !== undefined) {
      bucket.units ??= Object.create(null) as Record<string, number>;
      addUnits(bucket.units, node.units, 1);
    }
    this.count++;
  }

  /** Takes `node` out; it must be in this line. */
  remove(node: T): void {
    const index = this.indexOf(node.priority);
    const bucket = this.buckets[index];
    if (bucket === undefined || bucket.priority !== node.priority) return;
    if (node.prev === undefined) bucket.head = node.next;
    else node.prev.next = node.next;
    if (node.next === undefined) bucket.tail = node.prev;
    else node.next.prev = node.prev;
    node.prev = undefined;
    node.next = undefined;
    bucket.cost -= node.cost;
    if (node.units !== undefined && bucket.units !== undefined) {
      addUnits(bucket.units, node.units, -1);
    }
    this.count--;
    if (bucket.head === undefined) this.buckets.splice(index, 1);
  }

  /** Whether a task of `priority` would be next (ahead of the current head). */
  wouldLead(priority: number, front: boolean): boolean {
    const first = this.buckets[0];
    return (
      first === undefined || priority > first.priority || (front && priority === first.priority)
    );
  }

  /** Total cost of the tasks a new task of `priority` would wait behind. */
  costAhead(priority: number, front: boolean): number {
    let cost = 0;
    for (const bucket of this.buckets) {
      if (bucket.priority < priority || (front && bucket.priority === priority)) break;
      cost += bucket.cost;
    }
    return cost;
  }

  /** Total amount per unit of the tasks a new task of `priority` would wait behind. */
  unitsAhead(priority: number, front: boolean): Record<string, number> {
    const total: Record<string, number> = Object.create(null);
    for (const bucket of this.buckets) {
      if (bucket.priority < priority || (front && bucket.priority === priority)) break;
      if (bucket.units !== undefined) addUnits(total, bucket.units, 1);
    }
    return total;
  }

  /** Total cost of every waiting task. */
  get totalCost(): number {
    let cost = 0;
    for (const bucket of this.buckets) cost += bucket.cost;
    return cost;
  }

  /** Every waiting task, in order. */
  *[Symbol.iterator](): IterableIterator<T> {
    for (const bucket of this.buckets) {
      for (let node = bucket.head; node !== undefined; node = node.next) yield node as T;
    }
  }

  /** First index whose priority is <= `priority` (buckets are sorted descending). */
  private indexOf(priority: number): number {
    let low = 0;
    let high = this.buckets.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.buckets[mid] as Bucket).priority > priority) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  private bucketFor(priority: number): Bucket {
    const index = this.indexOf(priority);
    const found = this.buckets[index];
    if (found !== undefined && found.priority === priority) return found;
    const bucket: Bucket = {
      priority,
      head: undefined,
      tail: undefined,
      cost: 0,
      units: undefined,
    };
    this.buckets.splice(index, 0, bucket);
    return bucket;
  }
}

/** Adds `sign` times each amount of `amounts` to `total`. */
export function addUnits(total: Record<string, number>, amounts: UnitCosts, sign: 1 | -1): void {
  for (const unit of Object.keys(amounts)) {
    total[unit] = (total[unit] ?? 0) + sign * (amounts[unit] ?? 0);
  }
}
