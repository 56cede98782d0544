import type { Cost } from '../core/units.js';
import { reportStarted } from './progress.js';
import type { Task } from './task.js';
import type { TaskProgress } from './types.js';

/**
 * What the running tasks tell their scheduler: its methods, not closures made per pacer. The fast
 * path calls them for every task, and V8 drops optimized code that inlined a closure once that
 * closure's pacer is collected, so each new pacer started on cold code (issue 11).
 */
export interface TaskEvents {
  /** After each end: the scheduler's flush. */
  taskEnded(): void;
  /** After an asynchronous start: publish the running count. */
  taskStarted(): void;
  /** A started task settled (see `Permits.settled`). */
  taskSettled(key: string, cost: Cost): void;
  /**
   * Whether `taskSettled` wants to hear of a task started now: until it does, the fast path makes
   * no closure per task.
   */
  hearsSettled(): boolean;
}

/**
 * The tasks of a pacer from their start to their end: how many run (`count`, what
 * `concurrency` bounds), and the one way each settles. Every task settles exactly once,
 * whatever it returns or throws: a result whose `then` cannot even be read (a throwing getter,
 * a revoked Proxy) is the task's failure, and its slot is free. A synchronous task is over when
 * it returns, so its slot is free at once.
 */
export class RunningTasks {
  count = 0;

  constructor(private readonly events: TaskEvents) {}

  /** Runs a task with no queue entry (the fast path): the caller's promise is all it costs. */
  runNow<T>(
    run: () => T | PromiseLike<T>,
    key: string,
    cost: Cost,
    onProgress: ((progress: TaskProgress) => void) | undefined,
  ): Promise<T> {
    this.count++;
    reportStarted(onProgress);
    // A listener to the settling needs the key: closures per task only when there is one.
    if (this.events.hearsSettled()) return this.runTold(run, key, cost);
    return this.settleNow(run, this.ended0, this.done, this.failed);
  }

  /**
   * `runNow` for a task whose end `settled` hears of. Its own method: the closures below capture
   * `key` and `cost`, and V8 allocates the context holding captured variables on entry to the
   * function that declares them, taken branch or not (72 bytes a task on the fast path, issue 11).
   */
  private runTold<T>(run: () => T | PromiseLike<T>, key: string, cost: Cost): Promise<T> {
    const end = () => {
      this.events.taskSettled(key, cost);
      this.end();
    };
    return this.settleNow(
      run,
      end,
      (value: T) => {
        end();
        return value;
      },
      (error: unknown) => {
        end();
        throw error;
      },
    );
  }

  private settleNow<T>(
    run: () => T | PromiseLike<T>,
    end: () => void,
    done: (value: T) => T,
    failed: (error: unknown) => never,
  ): Promise<T> {
    let result: T | PromiseLike<T>;
    let thenable: boolean;
    try {
      result = run();
      thenable = isThenable(result);
    } catch (error) {
      end();
      return Promise.reject(error);
    }
    if (!thenable) {
      end();
      return Promise.resolve(result as T);
    }
    this.events.taskStarted();
    return Promise.resolve(result).then(done, failed);
  }

  /** Starts a queued task that left its line with its permit. */
  start(task: Task): void {
    task.state = 'running';
    // The signal has no say once the task runs (the task never sees it): drop the listener now.
    detach(task);
    reportStarted(task.onProgress);
    this.count++;
    let result: unknown;
    let thenable: boolean;
    try {
      result = task.run();
      thenable = isThenable(result);
    } catch (error) {
      this.finish(task, false, error);
      return;
    }
    if (!thenable) {
      this.finish(task, true, result);
      return;
    }
    Promise.resolve(result).then(
      (value) => this.finish(task, true, value),
      (error: unknown) => this.finish(task, false, error),
    );
  }

  /** Bound once, shared by every fast-path task. */
  private readonly ended0 = (): void => this.end();

  private readonly done = <T>(value: T): T => {
    this.end();
    return value;
  };

  private readonly failed = (error: unknown): never => {
    this.end();
    throw error;
  };

  private end(): void {
    this.count--;
    this.events.taskEnded();
  }

  private finish(task: Task, ok: boolean, value: unknown): void {
    this.events.taskSettled(task.key, task.units ?? task.cost);
    this.count--;
    settle(task, ok, value);
    this.events.taskEnded();
  }
}

/** Settles a task that has not started or has finished; exactly once, listener removed. */
export function settle(task: Task, ok: boolean, value: unknown): void {
  if (task.state === 'done') return;
  task.state = 'done';
  detach(task);
  if (ok) task.resolve(value);
  else task.reject(value);
}

function detach(task: Task): void {
  task.onAbort?.();
  task.onAbort = undefined;
}

/** Whether `value` is a promise or promise-like (reading `then` may throw: the caller's catch). */
function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<T>).then === 'function'
  );
}
