import type { Strategy } from './algorithms/strategy.js';
import { allow, type Decision, deny } from './decision.js';

/**
 * A key never heard from (a paced fetch's, configured or not): as TCP's slow start, one request
 * in flight until the first answer, then one more per answer that was not a refusal (the window
 * doubles every round trip), halved by a refusal. It paces nothing by time: the server's first
 * word (an advertised policy, a refusal that teaches a rate, or an answer that confirms the
 * key's own limit) replaces or ends it (learning.ts).
 */
export const SLOW_START = Object.freeze({
  /** The most requests in flight it grows to; past it the key is as free as its own policy. */
  MAX_WINDOW: 1_024,
  /** Quiet ms after the last answer before the key forgets its window (and starts at 1 again). */
  FORGET_MS: 10_000,
  /** The wait reported behind requests in flight: a lower bound, the pacer looks again at each answer. */
  WAIT_MS: 1_000,
});

export class SlowStart implements Strategy {
  /** Requests in flight now. */
  private open = 0;
  /** Most requests in flight at once. */
  window = 1;
  private lastAt = Number.NEGATIVE_INFINITY;

  get capacity(): number {
    return SLOW_START.MAX_WINDOW;
  }

  tryAcquire(now: number, cost: number): Decision {
    const decision = this.peek(now, cost);
    if (decision.allowed) {
      this.open += cost;
      this.lastAt = now;
    }
    return decision;
  }

  peek(_now: number, cost: number): Decision {
    // A request bigger than the window goes alone.
    const fits = this.open === 0 || this.open + cost <= this.window;
    const left = Math.max(0, this.window - this.open - cost);
    return fits
      ? allow(left, 0, this.window)
      : deny('in-flight', SLOW_START.WAIT_MS, Math.max(0, this.window - this.open), 0, this.window);
  }

  level(): number {
    return Math.max(0, this.window - this.open);
  }

  isAtRest(now: number): boolean {
    return this.open === 0 && now >= this.lastAt + SLOW_START.FORGET_MS;
  }

  restsAt(now: number): number {
    if (this.open > 0) return Number.POSITIVE_INFINITY;
    const at = this.lastAt + SLOW_START.FORGET_MS;
    return at > now ? at : now;
  }

  lowerRemaining(): void {}

  settle(now: number, cost: number): void {
    this.open = cost < this.open ? this.open - cost : 0;
    this.lastAt = now;
  }

  /** An answer that was not a refusal: one more in flight. */
  grow(): void {
    if (this.window < SLOW_START.MAX_WINDOW) this.window++;
  }

  /** A refusal: half as many in flight (at least one). */
  cut(): void {
    this.window = Math.max(1, Math.floor(this.window / 2));
  }
}
