import { assertFiniteNumber, assertKnownOptions, fail } from '../core/validate.js';

export interface ManualClockOptions {
  /** The time the clock starts at, in ms. @default 0 */
  readonly start?: number;
  /**
   * The noise of a real clock, in ms: each reading of `now()` runs ahead of the time the test
   * set by up to `jitter`, a little further with each reading (time passes while code runs),
   * and never goes back. Code that reads the clock twice and expects the same answer, or
   * compares floats derived from two readings, shows it here as it would in a browser. Timers
   * still fire at the time the test set. 0 reads the set time exactly.
   * @default 0
   */
  readonly jitter?: number;
  /** Seed of the jitter's pseudo-random steps, so that a failing run repeats. @default 1 */
  readonly seed?: number;
}

/** A timer handle of the manual clock. */
export type ManualTimer = number;

interface PendingTimer {
  readonly id: ManualTimer;
  readonly due: number;
  readonly callback: () => void;
}

/**
 * A clock that only moves when the test says so, with timers that fire in due order as it
 * moves: the `clock` of a limiter or a pacer.
 *
 * ```ts
 * const clock = createManualClock();
 * const limiter = createRateLimiter({ limits: perSecond(5), clock });
 * clock.advance(200);
 * ```
 */
export class ManualClock {
  private time: number;
  private timers: PendingTimer[] = [];
  private nextId = 1;
  private readonly jitter: number;
  private readonly random: () => number;
  /** With jitter: how far readings run ahead of `time`, and the last reading given out. */
  private ahead = 0;
  private aheadOf = Number.NaN;
  private lastReading = Number.NEGATIVE_INFINITY;

  constructor(options: ManualClockOptions = {}) {
    assertKnownOptions('createManualClock()', options, ['start', 'jitter', 'seed']);
    const { start = 0, jitter = 0, seed = 1 } = options;
    assertFiniteNumber('start', start);
    if (typeof jitter !== 'number' || !Number.isFinite(jitter) || jitter < 0) {
      fail('jitter', 'a finite number >= 0 (ms)', jitter);
    }
    if (typeof seed !== 'number' || !Number.isInteger(seed)) fail('seed', 'an integer', seed);
    this.time = start;
    this.jitter = jitter;
    this.random = lcg(seed);
  }

  /** The current time in ms. Bound, so `clock.now` can be passed around as a ticker. */
  readonly now = (): number => (this.jitter === 0 ? this.time : this.noisyReading());

  private noisyReading(): number {
    if (this.aheadOf !== this.time) {
      // The test moved time: the noise starts again from the new time (never going back).
      this.aheadOf = this.time;
      this.ahead = 0;
    }
    // Up to a quarter of the jitter per reading, capped at the jitter.
    this.ahead = Math.min(this.jitter, this.ahead + (this.random() * this.jitter) / 4);
    const reading = Math.max(this.lastReading, this.time + this.ahead);
    this.lastReading = reading;
    return reading;
  }

  /** Timers not yet fired or cleared. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /** When the earliest pending timer is due, or undefined when none is pending. */
  get nextTimerAt(): number | undefined {
    return this.timers[0]?.due;
  }

  /** Like the global `setTimeout`: runs `callback` once the clock has moved `ms` on. */
  readonly setTimeout = (callback: () => void, ms = 0): ManualTimer => {
    const id = this.nextId++;
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
    const timer = { id, due: this.time + delay, callback };
    // Keep the list sorted by due time, first come first served among equals.
    let index = this.timers.length;
    while (index > 0 && (this.timers[index - 1] as PendingTimer).due > timer.due) index--;
    this.timers.splice(index, 0, timer);
    return id;
  };

  readonly clearTimeout = (id: ManualTimer | undefined): void => {
    const index = this.timers.findIndex((timer) => timer.id === id);
    if (index !== -1) this.timers.splice(index, 1);
  };

  /**
   * Moves time forward by `ms`, firing each timer that falls due, in order, with the clock set
   * to its due time. Timers that those callbacks set within the span fire too.
   */
  advance(ms: number): void {
    if (!(Number.isFinite(ms) && ms >= 0)) {
      throw new RangeError(
        `[fetch-pacer] Expected \`ms\` to be a finite number >= 0, got \`${String(ms)}\``,
      );
    }
    this.runUntil(this.time + ms);
  }

  /**
   * Sets the time. Forwards, it fires due timers like `advance`; backwards, it fires nothing
   * (to test code that must cope with a clock that steps back).
   */
  set(ms: number): void {
    assertFiniteNumber('ms', ms);
    if (ms < this.time) {
      this.time = ms;
      this.lastReading = Number.NEGATIVE_INFINITY;
    } else this.runUntil(ms);
  }

  /**
   * `advance(ms)` for async code: after each timer it lets promise callbacks run, so a task a
   * timer resolved has started (and set its own timers) before the clock moves on.
   */
  async advanceAsync(ms: number): Promise<void> {
    if (!(Number.isFinite(ms) && ms >= 0)) {
      throw new RangeError(
        `[fetch-pacer] Expected \`ms\` to be a finite number >= 0, got \`${String(ms)}\``,
      );
    }
    const target = this.time + ms;
    await settle();
    for (;;) {
      const next = this.timers[0];
      if (next === undefined || next.due > target) break;
      this.timers.shift();
      if (next.due > this.time) this.time = next.due;
      next.callback();
      await settle();
    }
    this.time = target;
  }

  /** Fires every pending timer (and those they set), moving time to each; returns the count. */
  runAll(limit = 10_000): number {
    let fired = 0;
    for (; fired < limit; fired++) {
      const next = this.timers.shift();
      if (next === undefined) return fired;
      if (next.due > this.time) this.time = next.due;
      next.callback();
    }
    throw new Error(
      `[fetch-pacer] runAll fired ${limit} timers and more are pending: a timer loop?`,
    );
  }

  private runUntil(target: number): void {
    for (;;) {
      const next = this.timers[0];
      if (next === undefined || next.due > target) break;
      this.timers.shift();
      if (next.due > this.time) this.time = next.due;
      next.callback();
    }
    this.time = target;
  }
}

/**
 * Lets queued promise callbacks run: a macrotask turn, which drains every microtask first. Not a
 * sleep: no time passes. (Exported for the repository's own tests, not from the entry point.)
 */
export function settle(): Promise<void> {
  return new Promise((resolve) => {
    // Edge runtimes have no MessageChannel: a zero timeout is their macrotask turn (a faked
    // setTimeout would not fire, which is why the channel comes first where it exists).
    if (typeof MessageChannel !== 'function') {
      setTimeout(resolve, 0);
      return;
    }
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(undefined);
  });
}

/** A small seeded generator (an LCG, ample for noise): the same seed, the same noise. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 4_294_967_296;
  };
}

/** A manual clock starting at `options.start` (0). */
export function createManualClock(options?: ManualClockOptions): ManualClock {
  return new ManualClock(options);
}
