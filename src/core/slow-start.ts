import type { Strategy } from './algorithms/strategy.js';
import { allow, type Decision, deny } from './decision.js';

/**
 * A key never heard from (a paced fetch's, configured or not): as TCP's slow start, one request
 * in flight until the first answer, then one more per answer that was not a refusal (the window
 * doubles every round trip) up to `LIMITED_FROM`, slower past it, halved by a refusal. It paces
 * nothing by time: the server's first word (an advertised policy, a refusal that teaches a
 * rate, or an answer that confirms the key's own limit) replaces or ends it (learning.ts). A server's count (`remaining`) bounds it
 * meanwhile: it never sends more than the last count still allows, so a window that opened at
 * its first request is not overrun while it grows (fastify's whole-second reset states no
 * window to learn: the slow start doubled past 60 and earned 36 refusals).
 */
export const SLOW_START = Object.freeze({
  /** The most requests in flight it grows to; past it the key is as free as its own policy. */
  MAX_WINDOW: 1_024,
  /**
   * Past this many in flight it grows by half of it per round trip, not by doubling (RFC 3742's
   * limited slow start): what it sent past the server's limit before the first refusal came
   * back is at most about that much, where doubling sent a whole window more (62 refusals from
   * a server of 60 per second that answered at once).
   */
  LIMITED_FROM: 16,
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
  /** Sends the server's last count still allows; unbounded until a count is heard. */
  private allowance = Number.POSITIVE_INFINITY;
  /** When the latest-sent request whose count was heard was sent (see `lowerRemaining`). */
  private countSentAt = Number.NEGATIVE_INFINITY;
  /** The count that set `allowance`, and the most requests in flight since (see `lowerRemaining`). */
  private allowedBy = Number.POSITIVE_INFINITY;
  private peakOpen = 0;
  /**
   * When a request went alone past the window or the count: the next one past them waits for
   * its answer (which the pacer reads only after the request settled and its slot freed), or
   * for `WAIT_MS` if it never tells anything. Only an answer heard with nothing in flight is
   * its answer: an earlier request's, read late, must not let another go alone.
   */
  private aloneAt = Number.NEGATIVE_INFINITY;

  get capacity(): number {
    return SLOW_START.MAX_WINDOW;
  }

  tryAcquire(now: number, cost: number): Decision {
    const decision = this.peek(now, cost);
    if (decision.allowed) {
      if (cost > this.room()) this.aloneAt = now;
      this.open += cost;
      if (this.open > this.peakOpen) this.peakOpen = this.open;
      this.lastAt = now;
      this.allowance = cost < this.allowance ? this.allowance - cost : 0;
    }
    return decision;
  }

  peek(now: number, cost: number): Decision {
    // A request bigger than the window goes alone, and so does one past the server's count:
    // alone, it asks the server again (a count of 0 with a reset blocks the key until then).
    const room = this.room();
    const fits = cost <= room || (this.open === 0 && now >= this.aloneAt + SLOW_START.WAIT_MS);
    const left = Math.floor(Math.max(0, room - cost));
    const window = Math.floor(this.window);
    return fits
      ? allow(left, 0, window)
      : deny('in-flight', SLOW_START.WAIT_MS, Math.floor(Math.max(0, room)), 0, window);
  }

  level(): number {
    return Math.max(0, this.room());
  }

  /** The requests in flight: what a policy that replaces it starts with (see `Strategy.inUse`). */
  inUse(): number {
    return this.open;
  }

  /** Requests that may start now: the window's free places, at most what the count allows. */
  private room(): number {
    const free = this.window - this.open;
    return free < this.allowance ? free : this.allowance;
  }

  isAtRest(now: number): boolean {
    return this.open === 0 && now >= this.lastAt + SLOW_START.FORGET_MS;
  }

  restsAt(now: number): number {
    if (this.open > 0) return Number.POSITIVE_INFINITY;
    const at = this.lastAt + SLOW_START.FORGET_MS;
    return at > now ? at : now;
  }

  /**
   * The server admits `remaining` more, said of a request sent at `sentAt` (-Infinity when
   * unknown): it counted every request that arrived before that one, and any request still in
   * flight may arrive after it, so those are spent of it. Answers arrive out of order, so a
   * count only lowers what is allowed, except one heard with nothing in flight (the request
   * that went alone), or the count of a request sent after every one whose count was heard
   * before that is higher than the count that set the allowance by more than the requests in
   * flight since: within one window, a request that overtook others on the way reads at most
   * that many more; beyond, the server's window reset. (Held to lower counts, a key went one
   * request at a time for about 150 ms of every window of rate-limiter-flexible's, until an
   * answer came alone.)
   */
  lowerRemaining(_now: number, remaining: number, sentAt = Number.NEGATIVE_INFINITY): void {
    const left = remaining > this.open ? remaining - this.open : 0;
    const latest = sentAt > this.countSentAt;
    if (latest) this.countSentAt = sentAt;
    const reset = latest && remaining > this.allowedBy + this.peakOpen;
    if (this.open === 0 || reset || left < this.allowance) {
      this.allowance = left;
      this.allowedBy = remaining;
      this.peakOpen = this.open;
    }
    this.heardAlone();
  }

  settle(now: number, cost: number): void {
    this.open = cost < this.open ? this.open - cost : 0;
    this.lastAt = now;
  }

  /** An answer that was not a refusal: one more in flight, or a share of it past `LIMITED_FROM`. */
  grow(): void {
    const { window } = this;
    if (window < SLOW_START.MAX_WINDOW) {
      this.window += window < SLOW_START.LIMITED_FROM ? 1 : SLOW_START.LIMITED_FROM / 2 / window;
    }
    this.heardAlone();
  }

  /** A refusal: half as many in flight (at least one). */
  cut(): void {
    this.window = Math.max(1, Math.floor(this.window / 2));
    this.heardAlone();
  }

  /** An answer with nothing in flight: the request that went alone was answered. */
  private heardAlone(): void {
    if (this.open === 0) this.aloneAt = Number.NEGATIVE_INFINITY;
  }
}
