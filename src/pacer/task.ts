import { assertCost, type UnitCosts } from '../core/units.js';
import { describe } from '../core/validate.js';
import type { DueItem } from '../core/due-heap.js';
import type { Line, LineNode } from './line.js';
import type { ScheduleOptions, TaskProgress } from './types.js';

/** The key of a task scheduled without one. */
export const DEFAULT_KEY = 'default';

/** A scheduled task, from `schedule()` until it settles. */
export interface Task extends LineNode {
  readonly run: () => unknown;
  readonly key: string;
  readonly cost: number;
  /** A cost in named units (the limiter decides on it; `cost` is then 1, see TaskOptions). */
  readonly units: UnitCosts | undefined;
  readonly priority: number;
  /** Enqueue order over the whole pacer: breaks ties between keys due at the same time. */
  readonly order: number;
  readonly signal: AbortSignal | undefined;
  /** Told where the task stands while it waits (see `ScheduleOptions.onProgress`). */
  readonly onProgress: ((progress: TaskProgress) => void) | undefined;
  /** What `onProgress` was last told, so a change is reported once. */
  reported: TaskProgress | undefined;
  /**
   * Permits of its key's line up to and including its own, counted from the line's start
   * (`WaitingKey.taken` included): what its projected start is measured in. Set when it joins
   * the end of the line; after a task joins or leaves in the middle, renumbered by the progress
   * reports when they next look (see `WaitingKey.reorders`).
   */
  position: number;
  /**
   * The latest start `maxWaitMs` allows it (from when it was queued); Infinity without one. A
   * server block that ends later rejects it at once (see `Scheduler.rejectPastBlocks`).
   */
  startBy: number;
  /** The abort listener while the task waits; removed when it leaves the queue. */
  onAbort: (() => void) | undefined;
  /** Queued until it leaves the line; then running or done. Settles exactly once. */
  state: 'queued' | 'running' | 'done';
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

/** A key with tasks waiting: its line, and its place in the pacer's due heap. */
export interface WaitingKey extends DueItem {
  readonly key: string;
  readonly line: Line<Task>;
  /**
   * With a store only (never set without one): a store call for this key's head tasks is out,
   * so the key waits for its answer and no second call for it starts.
   */
  taking?: boolean;
  /** Permits of the tasks that call is for (0 when none is out). */
  claimed?: number;
  /** Their amounts per unit, for a key with limits per unit (undefined when none is out). */
  claimedUnits?: Record<string, number> | undefined;
  /** Permits of the tasks that left the line from its head (started, aborted, dropped). */
  taken: number;
  /** `taken` plus the permits of every task in the line: the position the next task gets. */
  end: number;
  /**
   * Counts the tasks that joined anywhere but the end or left from anywhere but the head: the
   * changes that move the tasks behind them, after which positions are renumbered.
   */
  reorders: number;
  /** Its credit changed elsewhere while a call was out: ask again at once if that call denies. */
  changedMeanwhile?: boolean;
}

/** Schedule options checked, defaults filled in. */
export interface TaskOptions {
  readonly key: string;
  /**
   * Permits in the key's main unit: what the line counts positions and projects waits in. A
   * cost in named units counts 1 there (one request), and is decided on as `units`.
   */
  readonly cost: number;
  readonly units: UnitCosts | undefined;
  readonly priority: number;
  readonly signal: AbortSignal | undefined;
  readonly front: boolean;
  readonly onProgress: ((progress: TaskProgress) => void) | undefined;
}

/**
 * Checks what `schedule()` got. Malformed arguments are programming errors and throw at the
 * call, like the core does; conditions of the moment (queue full, rate, abort) reject instead.
 */
export function resolveTaskOptions(options: ScheduleOptions | undefined): TaskOptions {
  if (options === undefined) {
    return NO_OPTIONS;
  }
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(
      `[fetch-pacer] Expected schedule options \`{ key, cost, priority, signal, front, onProgress }\`, got ${describe(options)}`,
    );
  }
  const { key = DEFAULT_KEY, cost = 1, priority = 0, signal, front = false, onProgress } = options;
  assertKey(key);
  assertCost('cost', cost);
  if (typeof priority !== 'number' || !Number.isFinite(priority)) {
    const message = `[fetch-pacer] Expected \`priority\` to be a finite number, got ${describe(priority)}`;
    throw typeof priority === 'number' ? new RangeError(message) : new TypeError(message);
  }
  if (signal !== undefined && !isSignal(signal)) {
    throw new TypeError(
      `[fetch-pacer] Expected \`signal\` to be an AbortSignal, got ${describe(signal)}`,
    );
  }
  if (typeof front !== 'boolean') {
    throw new TypeError(`[fetch-pacer] Expected \`front\` to be a boolean, got ${describe(front)}`);
  }
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw new TypeError(
      `[fetch-pacer] Expected \`onProgress\` to be a function, got ${describe(onProgress)}`,
    );
  }
  if (typeof cost === 'object') {
    return { key, cost: 1, units: cost, priority, signal, front, onProgress };
  }
  return { key, cost, units: undefined, priority, signal, front, onProgress };
}

/** The options of a task scheduled without any: one shared frozen object. */
const NO_OPTIONS: TaskOptions = Object.freeze({
  key: DEFAULT_KEY,
  cost: 1,
  units: undefined,
  priority: 0,
  signal: undefined,
  front: false,
  onProgress: undefined,
});

/**
 * A TypeError for any non-string (the core's `assertKey` throws a RangeError for a number, as
 * its shared `fail` picks the class by the value's type rather than by what was expected).
 */
export function assertKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') {
    throw new TypeError(`[fetch-pacer] Expected \`key\` to be a string, got ${describe(key)}`);
  }
}

/** Duck-typed: a signal from another realm (an iframe, a polyfill) fails `instanceof`. */
function isSignal(value: unknown): value is AbortSignal {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as AbortSignal).aborted === 'boolean' &&
    typeof (value as AbortSignal).addEventListener === 'function' &&
    typeof (value as AbortSignal).removeEventListener === 'function'
  );
}

/** A queued task and the promise `schedule()` returns for it. */
export function createTask<T>(
  run: () => T | PromiseLike<T>,
  options: Pick<TaskOptions, 'key' | 'cost' | 'units' | 'priority' | 'signal' | 'onProgress'>,
  order: number,
): { readonly task: Task; readonly promise: Promise<T> } {
  // `Promise.withResolvers`, which Node 20 lacks.
  let resolve: ((value: unknown) => void) | undefined;
  let reject: ((reason: unknown) => void) | undefined;
  const promise = new Promise<T>((onResolve, onReject) => {
    resolve = onResolve as (value: unknown) => void;
    reject = onReject;
  });
  // Fields spelled out: spreading `options` here made each schedule() ~20 µs slower in V8
  // (measured with 100,000 tasks), the task objects taking a slow shape.
  const task: Task = {
    key: options.key,
    cost: options.cost,
    units: options.units,
    priority: options.priority,
    signal: options.signal,
    onProgress: options.onProgress,
    reported: undefined,
    position: 0,
    startBy: Number.POSITIVE_INFINITY,
    run,
    order,
    onAbort: undefined,
    state: 'queued',
    resolve: resolve as (value: unknown) => void,
    reject: reject as (reason: unknown) => void,
    prev: undefined,
    next: undefined,
  };
  return { task, promise };
}
