import { wholeMs } from '../core/decision.js';
import type { Task, WaitingKey } from './task.js';
import type { TaskProgress } from './types.js';

/** What the reports need to know of a key at the moment they are computed. */
export interface KeyState {
  /** Ticker time now. */
  readonly now: number;
  /** Ticker time the server's block on the key ends, if one holds. */
  readonly blockedUntil: number | undefined;
  /** Permits per ms of the key's tightest policy (how fast a backlog drains). */
  readonly ratePerMs: number;
  /** Reject mode: a waiting task waits for a slot only, its rate is decided then. */
  readonly rejectMode: boolean;
}

/**
 * Tells tasks with an `onProgress` listener where they stand. The scheduler calls `refresh` at
 * the end of every flush while such tasks wait: each event that could move them (a task queued,
 * started or aborted ahead, a server block set or ended, a re-timed key) ends in a flush, so no
 * change is missed, and a report is made only when its value changed. Keys without listeners
 * cost nothing: only keys that got one are walked.
 *
 * The projected start of a task is its key's due time (when the head gets its permits) plus
 * the time the permits of the tasks between the head and it take at the key's rate: exact for a
 * token bucket or GCRA with a steady backlog, an estimate for the window algorithms and after a
 * block (credit saved up during a block lets the line start sooner). It is computed from the
 * due time, never from "now + wait", so it does not jitter as time passes.
 */
export class ProgressReports {
  /** Keys that had a listening task queued at the last look. */
  private readonly keys = new Set<string>();
  private refreshing = false;
  private again = false;

  get active(): boolean {
    return this.keys.size > 0;
  }

  /** A task with a listener was queued under `key`. */
  track(key: string): void {
    this.keys.add(key);
  }

  /**
   * Reports to every listening task whose progress changed. `lookup` gives a key's waiting
   * state (undefined when nothing waits) and `stateOf` what is known of the key now.
   * Listeners may schedule or abort synchronously: their flush asks for another round, run
   * here once the current one is over instead of nesting.
   */
  refresh(
    lookup: (key: string) => WaitingKey | undefined,
    stateOf: (key: string) => KeyState,
  ): void {
    if (this.refreshing) {
      this.again = true;
      return;
    }
    this.refreshing = true;
    try {
      do {
        this.again = false;
        // Collected first, told after: a listener that aborts a task must not cut the walk short.
        const due: [Task, TaskProgress][] = [];
        for (const key of this.keys) {
          const waiting = lookup(key);
          if (waiting === undefined || !collect(waiting, stateOf(key), due)) this.keys.delete(key);
        }
        for (const [task, progress] of due) {
          if (task.state === 'queued') tell(task, progress);
        }
      } while (this.again);
    } finally {
      this.refreshing = false;
    }
  }
}

/** A task is starting: the last report its listener gets (nothing to remember after it). */
export function reportStarted(listener: ((progress: TaskProgress) => void) | undefined): void {
  if (listener !== undefined) call(listener, STARTED);
}

const STARTED: TaskProgress = Object.freeze({ state: 'started' });

/** Adds the changed reports of a key's listening tasks; false when none of them listens. */
function collect(waiting: WaitingKey, state: KeyState, due: [Task, TaskProgress][]): boolean {
  const head = waiting.line.head;
  if (head === undefined) return false;
  let listening = false;
  let ahead = 0;
  for (const task of waiting.line) {
    if (task.onProgress !== undefined) {
      listening = true;
      const progress = progressOf(waiting, task, ahead - head.cost, state);
      if (!same(task.reported, progress)) due.push([task, progress]);
    }
    ahead += task.cost;
  }
  return listening;
}

/** Where `task` stands, `between` permits of other tasks between the key's head and it. */
function progressOf(
  waiting: WaitingKey,
  task: Task,
  between: number,
  state: KeyState,
): TaskProgress {
  if (state.blockedUntil !== undefined) return { state: 'blocked', until: state.blockedUntil };
  if (state.rejectMode || !Number.isFinite(waiting.due)) return UNKNOWN;
  const isHead = task === waiting.line.head;
  const extra = isHead ? 0 : wholeMs((between + task.cost) / state.ratePerMs);
  const startAt = waiting.due + extra;
  // Due already, yet not started: it waits for a slot, `resume()` or a store's answer.
  return startAt > state.now ? { state: 'queued', startAt } : UNKNOWN;
}

const UNKNOWN: TaskProgress = Object.freeze({ state: 'queued', startAt: undefined });

function same(a: TaskProgress | undefined, b: TaskProgress): boolean {
  if (a === undefined || a.state !== b.state) return false;
  if (a.state === 'queued') return a.startAt === (b as typeof a).startAt;
  if (a.state === 'blocked') return a.until === (b as typeof a).until;
  return true;
}

/** Reports a change to a waiting task's listener, remembering it so it is told only once. */
function tell(task: Task, progress: TaskProgress): void {
  task.reported = progress;
  if (task.onProgress !== undefined) call(task.onProgress, progress);
}

/** A throwing listener is the app's bug, not the pacer's: report it and go on. */
function call(listener: (progress: TaskProgress) => void, progress: TaskProgress): void {
  try {
    listener(progress);
  } catch (error) {
    reportListenerError(error);
  }
}

function reportListenerError(error: unknown): void {
  const report = (globalThis as { reportError?: (error: unknown) => void }).reportError;
  if (typeof report === 'function') report(error);
  else
    queueMicrotask(() => {
      throw error;
    });
}
