import type { Decision } from '../decision.js';
import { inUseOf, type Strategy } from './strategy.js';

/**
 * Several policies on one key (`[perSecond(10), perDay(1000)]`): a request is allowed only if
 * every policy allows it, and then it is charged to all of them; otherwise to none.
 */
export class AllOf implements Strategy {
  readonly capacity: number;
  readonly #parts: readonly Strategy[];

  constructor(parts: readonly Strategy[]) {
    this.#parts = parts;
    this.capacity = Math.min(...parts.map((part) => part.capacity));
  }

  tryAcquire(now: number, cost: number): Decision {
    const verdict = this.peek(now, cost);
    if (!verdict.allowed) return verdict;
    return combine(this.#parts.map((part) => part.tryAcquire(now, cost)));
  }

  peek(now: number, cost: number): Decision {
    return combine(this.#parts.map((part) => part.peek(now, cost)));
  }

  level(now: number): number {
    return Math.min(...this.#parts.map((part) => part.level(now)));
  }

  isAtRest(now: number): boolean {
    return this.#parts.every((part) => part.isAtRest(now));
  }

  restsAt(now: number): number {
    return Math.max(...this.#parts.map((part) => part.restsAt(now)));
  }

  lowerRemaining(now: number, remaining: number, sentAt?: number, backAt?: number): void {
    for (const part of this.#parts) part.lowerRemaining(now, remaining, sentAt, backAt);
  }

  withdrawCounts(): void {
    for (const part of this.#parts) part.withdrawCounts?.();
  }

  settle(now: number, cost: number): void {
    for (const part of this.#parts) part.settle?.(now, cost);
  }

  inUse(now: number, windowMs: number): number {
    return Math.max(...this.#parts.map((part) => inUseOf(part, now, windowMs)));
  }

  heardRoom(now: number, remaining: number, limit: number, sentAt: number): void {
    for (const part of this.#parts) part.heardRoom?.(now, remaining, limit, sentAt);
  }

  catchUp(now: number, lateMs: number): void {
    for (const part of this.#parts) part.catchUp?.(now, lateMs);
  }
}

/**
 * One decision from several. Denied if any part denies, with the longest wait: every algorithm
 * here only ever admits more as time passes, so at that moment all parts admit, and before it
 * the slowest does not. The reported limit is the binding part's: the slowest when denied, the
 * one with the fewest permits left when allowed.
 */
export function combine(decisions: readonly Decision[]): Decision {
  let binding = decisions[0] as Decision;
  let remaining = binding.remaining;
  let resetMs = binding.resetMs;
  for (const decision of decisions) {
    if (decision.remaining < remaining) remaining = decision.remaining;
    if (decision.resetMs > resetMs) resetMs = decision.resetMs;
    const tighter = binding.allowed
      ? !decision.allowed || decision.remaining < binding.remaining
      : !decision.allowed && decision.retryAfterMs > binding.retryAfterMs;
    if (tighter) binding = decision;
  }
  return { ...binding, remaining, resetMs };
}
