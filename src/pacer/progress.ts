import { addUnits } from './line.js';
import type { Task, WaitingKey } from './task.js';
import type { TaskProgress } from './types.js';

/** What the reports need to know of a key at the moment they are computed. */
export interface KeyState {
  /** Ticker time the server's block on the key ends, if one holds. */
  readonly blockedUntil: number | undefined;
  /** Permits per ms of the key's tightest policy (how fast a backlog drains). */
  readonly ratePerMs: number;
  /** Reject mode: a waiting task waits for a slot only, its rate is decided then. */
  readonly rejectMode: boolean;
  /** The key waits for answers of requests in flight (a slow start): when, nobody knows. */
  readonly awaitingAnswers: boolean;
  /**
   * A key counted in several units (requests and tokens), whose line drains at the pace of the
   * slowest unit for each task's amounts, which one rate cannot project: when a task would get
   * its amounts (`UnitStarts`), or `'unknown'` where nobody can say (a store's key, whose state
   * is the store's). Undefined: the key counts one unit.
   */
  readonly units: UnitStarts | 'unknown' | undefined;
}

/** Projected starts for a key with limits per unit (see `KeyState.units`). */
export interface UnitStarts {
  /** The unit a plain number cost is in (the key's main unit). */
  readonly main: string;
  /**
   * Ticker ms at which a task of amounts `own` would have them behind the `ahead` amounts of
   * the tasks before it, each unit at its own rate (see `projectUnits`, which `maxWaitMs` uses).
   */
  startAt(ahead: Readonly<Record<string, number>>, own: Readonly<Record<string, number>>): number;
}

/**
 * A projected start that moved by less than this is not reported again. It is far above the
 * float error of an exact projection and covers the whole-ms waits of the window algorithms
 * (their due time is `now` plus a rounded-up wait, so it wanders within 1 ms of the truth).
 */
export const PROJECTION_NOISE_MS = 1;

/**
 * What every report of a key follows from. With `projected`, a task's start is
 * `anchor + position / ratePerMs`: the head's due time minus the time its own position takes.
 */
type Basis =
  | { readonly kind: 'blocked'; readonly until: number }
  | { readonly kind: 'unknown' }
  | { readonly kind: 'projected'; readonly anchor: number; readonly ratePerMs: number }
  | { readonly kind: 'units'; readonly starts: UnitStarts };

/** A key with listening tasks: what its reports were last computed from. */
interface KeyReports {
  basis: Basis | undefined;
  /** `WaitingKey.reorders` when positions were last renumbered. */
  reorders: number;
  /** Listening tasks queued since the last look, not told anything yet. */
  fresh: Task[];
}

/**
 * Tells tasks with an `onProgress` listener where they stand. The scheduler calls `refresh` at
 * the end of every flush while such tasks wait: each event that could move them (a task queued,
 * started or aborted ahead, a server block set or ended, a re-timed key) ends in a flush, so no
 * change is missed, and a report is made only when its value changed. Keys without listeners
 * cost nothing: only keys that got one are looked at.
 *
 * The projected start of a task is its key's due time (when the head gets its permits) plus
 * the time the permits between the head and it take at the key's rate: exact for a token bucket
 * or GCRA with a steady backlog, an estimate for the window algorithms and after a block. Every
 * task's start follows from one number per key, the anchor (the head's due time less its own
 * position at the key's rate), and the task's position in permits since the line began. When
 * the head starts on time, the next head is due exactly as projected, so the anchor stays and
 * nothing is done for the tasks behind: a start costs O(1), not O(queue). Only a real change
 * (a block, a new rate, a task joining or leaving in the middle, a late start that the bucket
 * could not absorb) walks the line and tells the tasks whose start moved.
 */
export class ProgressReports {
  private readonly keys = new Map<string, KeyReports>();
  private refreshing = false;
  private again = false;

  get active(): boolean {
    return this.keys.size > 0;
  }

  /** A task with a listener was queued (its first report comes with the next `refresh`). */
  track(task: Task): void {
    let reports = this.keys.get(task.key);
    if (reports === undefined) {
      reports = { basis: undefined, reorders: -1, fresh: [] };
      this.keys.set(task.key, reports);
    }
    reports.fresh.push(task);
  }

  /**
   * Reports to every listening task whose progress changed. `lookup` gives a key's waiting
   * state (undefined when nothing waits), `stateOf` what is known of the key, `now` the one
   * time all of this flush's reports are judged at. Listeners may schedule or abort
   * synchronously: their flush asks for another round, run here once the current one is over
   * instead of nesting.
   */
  refresh(
    lookup: (key: string) => WaitingKey | undefined,
    stateOf: (key: string) => KeyState,
    now: number,
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
        for (const [key, reports] of this.keys) {
          const waiting = lookup(key);
          if (waiting === undefined || !collect(waiting, reports, stateOf(key), now, due)) {
            this.keys.delete(key);
          }
        }
        for (const [task, progress] of due) {
          if (task.state === 'queued') reportProgress(task, progress);
        }
      } while (this.again);
    } finally {
      this.refreshing = false;
    }
  }
}

/** A task is starting: the last report its listener gets (nothing to remember after it). */
export function reportStarted(listener: ((progress: TaskProgress) => void) | undefined): void {
  reportTo(listener, STARTED);
}

/** Tells `listener` (if any) of `progress`, a throw reported, not thrown (see `call`). */
export function reportTo(
  listener: ((progress: TaskProgress) => void) | undefined,
  progress: TaskProgress,
): void {
  if (listener !== undefined) call(listener, progress);
}

const STARTED: TaskProgress = Object.freeze({ state: 'started' });

/**
 * Adds the changed reports of a key's listening tasks; false when none of them listens (the key
 * is forgotten until one does again).
 */
function collect(
  waiting: WaitingKey,
  reports: KeyReports,
  state: KeyState,
  now: number,
  due: [Task, TaskProgress][],
): boolean {
  const head = waiting.line.head;
  if (head === undefined) return false;
  const basis = basisOf(waiting, head, state);
  const fresh = reports.fresh;
  reports.fresh = [];
  if (basis.kind === 'units') {
    reports.basis = basis;
    return reportUnits(waiting, basis.starts, now, due);
  }
  const kept = reports.basis;
  if (kept !== undefined && reports.reorders === waiting.reorders && close(kept, basis)) {
    // Nothing moved for the tasks already told: only the new ones hear, and those whose start
    // passed while they wait for something else (a slot, `resume()`) learn it is unknown.
    for (const task of fresh) {
      if (task.state === 'queued') report(task, kept, waiting, now, due);
    }
    if (kept.kind === 'projected' && waiting.due <= now) {
      for (const task of waiting.line) {
        if (startOf(kept, task) > now) break;
        if (task.onProgress !== undefined) report(task, kept, waiting, now, due);
      }
    }
    return true;
  }
  // Renumber while walking: a task that joined or left in the middle moved those behind it.
  let listening = false;
  let position = waiting.taken;
  for (const task of waiting.line) {
    position += task.cost;
    task.position = position;
    if (task.onProgress !== undefined) {
      listening = true;
      report(task, basis, waiting, now, due);
    }
  }
  reports.basis = basis;
  reports.reorders = waiting.reorders;
  return listening;
}

/**
 * The reports of a key with limits per unit: no one anchor projects its line, so each refresh
 * walks it, summing the amounts per unit ahead of each listening task (O(queue) per flush for
 * such a key, where a key of one unit costs O(1) per start). In line order, no task is
 * projected to start before one ahead of it.
 */
function reportUnits(
  waiting: WaitingKey,
  starts: UnitStarts,
  now: number,
  due: [Task, TaskProgress][],
): boolean {
  const ahead: Record<string, number> = Object.create(null);
  let listening = false;
  let earliest = waiting.due;
  for (const task of waiting.line) {
    const own = task.units ?? { [starts.main]: task.cost };
    if (task.onProgress !== undefined) {
      listening = true;
      earliest = Math.max(earliest, starts.startAt(ahead, own));
      const startAt = Math.round(earliest * 1_000) / 1_000;
      // Due already, yet not started: it waits for a slot or `resume()` (see `progressOf`).
      const progress: TaskProgress =
        startAt > now || waiting.due > now ? { state: 'queued', startAt } : UNKNOWN;
      if (!same(task.reported, progress)) due.push([task, progress]);
    }
    addUnits(ahead, own, 1);
  }
  return listening;
}

/** What the reports of `waiting` follow from now. */
function basisOf(waiting: WaitingKey, head: Task, state: KeyState): Basis {
  if (state.blockedUntil !== undefined) return { kind: 'blocked', until: state.blockedUntil };
  if (
    state.rejectMode ||
    state.awaitingAnswers ||
    state.units === 'unknown' ||
    !Number.isFinite(waiting.due)
  ) {
    return UNKNOWN_BASIS;
  }
  if (state.units !== undefined) return { kind: 'units', starts: state.units };
  // The head's position is always `taken` plus its own cost, renumbered or not.
  const anchor = waiting.due - (waiting.taken + head.cost) / state.ratePerMs;
  return { kind: 'projected', anchor, ratePerMs: state.ratePerMs };
}

const UNKNOWN_BASIS: Basis = Object.freeze({ kind: 'unknown' });

/** Whether two bases give the same reports, clock noise aside. */
function close(a: Basis, b: Basis): boolean {
  if (a.kind === 'blocked') return b.kind === 'blocked' && a.until === b.until;
  if (a.kind === 'unknown') return b.kind === 'unknown';
  if (a.kind === 'units' || b.kind === 'units') return false;
  return (
    b.kind === 'projected' &&
    a.ratePerMs === b.ratePerMs &&
    Math.abs(a.anchor - b.anchor) < PROJECTION_NOISE_MS
  );
}

/** Ticker ms at which `task`'s permits are projected to exist, to the µs. */
function startOf(basis: Basis & { kind: 'projected' }, task: Task): number {
  return Math.round((basis.anchor + task.position / basis.ratePerMs) * 1_000) / 1_000;
}

/** Adds `task`'s report under `basis` if it differs from what the task was last told. */
function report(
  task: Task,
  basis: Basis,
  waiting: WaitingKey,
  now: number,
  due: [Task, TaskProgress][],
): void {
  const progress = progressOf(task, basis, waiting, now);
  if (!same(task.reported, progress)) due.push([task, progress]);
}

function progressOf(task: Task, basis: Basis, waiting: WaitingKey, now: number): TaskProgress {
  if (basis.kind === 'blocked') return { state: 'blocked', until: basis.until };
  if (basis.kind === 'unknown' || basis.kind === 'units') return UNKNOWN;
  const startAt = startOf(basis, task);
  // Due already, yet not started: it waits for a slot, `resume()` or a store's answer. Judged
  // by the head's own due time too: a projection within the noise before it is not overdue.
  return startAt > now || waiting.due > now ? { state: 'queued', startAt } : UNKNOWN;
}

const UNKNOWN: TaskProgress = Object.freeze({ state: 'queued', startAt: undefined });

function same(a: TaskProgress | undefined, b: TaskProgress): boolean {
  if (a === undefined || a.state !== b.state) return false;
  if (a.state === 'queued') {
    const x = a.startAt;
    const y = (b as typeof a).startAt;
    if (x === undefined || y === undefined) return x === y;
    return Math.abs(x - y) < PROJECTION_NOISE_MS;
  }
  if (a.state === 'blocked') return a.until === (b as typeof a).until;
  return true;
}

/** Reports a change to a waiting task's listener, remembering it so it is told only once. */
function reportProgress(task: Task, progress: TaskProgress): void {
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

/** A listener's error, reported (`reportError`, or thrown from a microtask) so the pacer goes on. */
export function reportListenerError(error: unknown): void {
  const report = (globalThis as { reportError?: (error: unknown) => void }).reportError;
  if (typeof report === 'function') report(error);
  else
    queueMicrotask(() => {
      throw error;
    });
}
