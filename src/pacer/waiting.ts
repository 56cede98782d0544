import { DueHeap } from '../core/due-heap.js';
import type { Cost } from '../core/units.js';
import { Line } from './line.js';
import type { Task, WaitingKey } from './task.js';

/**
 * Every waiting task of a pacer: a line per key, and the keys in a heap by when their head task
 * gets its permit. A key is in the heap iff it has tasks waiting, so `earliest()` is what the one
 * timer is set to.
 */
export class WaitingTasks {
  private readonly keys = new Map<string, WaitingKey>();
  private readonly heap = new DueHeap<WaitingKey>();
  private count = 0;

  /**
   * @param waitOf ms after `now` at which a task of `key` costing `cost` gets its permit (0 if
   *   now), judged at that one time; may throw (a policy resolver changed its answer and the
   *   cost no longer fits).
   * @param dropped called with a head task whose `waitOf` threw: it has left the line.
   */
  constructor(
    private readonly waitOf: (key: string, cost: Cost, now: number) => number,
    private readonly now: () => number,
    private readonly dropped: (task: Task, error: unknown) => void,
  ) {}

  /** Tasks waiting, over all keys. */
  get size(): number {
    return this.count;
  }

  line(key: string): Line<Task> | undefined {
    return this.keys.get(key)?.line;
  }

  /** The key whose head is due first (ties: the earlier enqueued head). */
  earliest(): WaitingKey | undefined {
    return this.heap.peek();
  }

  add(task: Task, front: boolean): void {
    let waiting = this.keys.get(task.key);
    if (waiting === undefined) {
      waiting = {
        key: task.key,
        line: new Line<Task>(),
        due: 0,
        order: 0,
        heapIndex: -1,
        taken: 0,
        end: 0,
        reorders: 0,
      };
      this.keys.set(task.key, waiting);
    }
    const head = waiting.line.head;
    waiting.line.push(task, front);
    this.count++;
    waiting.end += task.cost;
    task.position = waiting.end;
    if (waiting.line.tail !== task) waiting.reorders++;
    if (waiting.line.head !== head) this.retime(waiting);
  }

  /** Takes a waiting task out of its line; re-times its key if it was the head. */
  remove(task: Task): void {
    const waiting = this.keys.get(task.key);
    if (waiting === undefined) return;
    const wasHead = waiting.line.head === task;
    waiting.line.remove(task);
    this.count--;
    if (wasHead) {
      waiting.taken += task.cost;
      this.retime(waiting);
    } else {
      waiting.end -= task.cost;
      waiting.reorders++;
    }
  }

  /** Re-times `key` after its credit changed (a server block, observe). */
  retimeKey(key: string): void {
    const waiting = this.keys.get(key);
    if (waiting !== undefined) this.retime(waiting);
  }

  /** The head of `waiting` was denied at `due`-time after all: look again at `due`. */
  postpone(waiting: WaitingKey, due: number): void {
    waiting.due = due;
    this.heap.update(waiting);
  }

  /** The waiting key of `key`, if any task of it waits. */
  waitingKey(key: string): WaitingKey | undefined {
    return this.keys.get(key);
  }

  /** Empties everything and returns the tasks that were waiting, in line order per key. */
  drain(): Task[] {
    const tasks: Task[] = [];
    for (const { line } of this.keys.values()) tasks.push(...line);
    this.keys.clear();
    this.heap.clear();
    this.count = 0;
    return tasks;
  }

  /** Sets `due` of a key from its head task, or forgets the key once its line is empty. */
  private retime(waiting: WaitingKey): void {
    for (;;) {
      const head = waiting.line.head;
      if (head === undefined) {
        this.heap.remove(waiting);
        // A store call out for it still answers to this key: keep it until the answer.
        if (waiting.taking !== true) this.keys.delete(waiting.key);
        return;
      }
      if (waiting.taking === true) return;
      // One reading: the wait is judged at `now` and counted from it, so the due time is where
      // the permits really are, not off by the time between two readings of a real clock.
      const now = this.now();
      let wait: number;
      try {
        wait = this.waitOf(waiting.key, head.units ?? head.cost, now);
      } catch (error) {
        waiting.line.remove(head);
        this.count--;
        waiting.taken += head.cost;
        this.dropped(head, error);
        continue;
      }
      waiting.due = now + wait;
      waiting.order = head.order;
      this.heap.update(waiting);
      return;
    }
  }
}
