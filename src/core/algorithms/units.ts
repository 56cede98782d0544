import { allow, type Decision, deny, wholeMs } from '../decision.js';
import type { ReserveTimes, UnitPolicy } from '../units.js';
import { combine } from './all-of.js';
import type { Strategy } from './strategy.js';
import { WithLearned } from '../learned.js';
import { noteRoom, roomSince } from '../low-room.js';
import { TokenBucket, whole } from './token-bucket.js';

/**
 * A key counted in several units at once (requests and tokens): one state per unit, under that
 * unit's policy. A request is allowed only when every unit allows its amount, and then each is
 * charged; otherwise none is (as `AllOf`, per unit). As a `Strategy` it counts in its main
 * (first) unit, so a plain number cost, `level` and what the learning sees are in that unit.
 *
 * A cost is often known only after the answer (an LLM's `usage`), so each unit also keeps a
 * ledger of adjustments (`adjust`): a charge that does not fit yet is a debt, taken from the
 * unit's state as its permits come back (at each decision, peeks too: that changes no answer,
 * it only keeps the books), and no request is allowed in that unit before it is paid; a give-back first cancels debt, then is credit on top of a token bucket's tokens, never
 * above its capacity (a window algorithm's permits come back when they leave the window, so a
 * give-back there is not kept: it could only let through more than the server counts).
 */
export class Units implements Strategy {
  /** Each unit's state, in the order of `units`; the learning may wrap one (see `statesOfUnit`). */
  readonly parts: Strategy[];
  /** Per unit: permits charged after the fact that did not fit yet. */
  readonly #debt: number[];
  /** Per unit: permits given back, on top of its token bucket's (clamped to its capacity). */
  readonly #credit: number[];
  /** Per unit counted until the answer (`UnitPolicy.untilAnswer`): permits taken, not answered. */
  readonly #open: number[];
  /** Per unit: its least room to capacity since each charge (see low-room.ts). */
  readonly #low: number[][];

  constructor(readonly units: readonly UnitPolicy[]) {
    this.parts = units.map((unit) => unit.compiled.create());
    this.#debt = units.map(() => 0);
    this.#credit = units.map(() => 0);
    this.#open = units.map(() => 0);
    this.#low = units.map(() => []);
  }

  get capacity(): number {
    return (this.parts[0] as Strategy).capacity;
  }

  tryAcquire(now: number, cost: number): Decision {
    return this.decide(now, this.mainOnly(cost), true);
  }

  peek(now: number, cost: number): Decision {
    return this.decide(now, this.mainOnly(cost), false);
  }

  /**
   * Decides for one amount per unit (`take`: and charges them all when every unit allows). The
   * decision is the binding unit's: the longest wait when denied.
   */
  decide(now: number, amounts: readonly number[], take: boolean): Decision {
    // A peek pays debt too: the debt is owed whatever is asked, and a permit that came back
    // and is not taken would be lost to a full bucket's cap.
    for (let i = 0; i < this.parts.length; i++) this.payDebt(i, now);
    const decisions: Decision[] = [];
    let allowed = true;
    for (let i = 0; i < this.parts.length; i++) {
      const decision = this.peekUnit(i, now, amounts[i] ?? 0);
      if (!decision.allowed) allowed = false;
      decisions.push(decision);
    }
    if (allowed && take) {
      for (let i = 0; i < this.parts.length; i++) this.takeUnit(i, now, amounts[i] ?? 0);
    }
    return combine(decisions);
  }

  /**
   * The real cost is known: charge `amounts` more (positive) or give them back (negative), one
   * per unit. Applied at once; a charge beyond what a unit holds now is its debt. With the
   * `reserved` times, a give-back is at most the least room the unit had to its capacity since
   * it charged the reserve: a token bucket that filled up meanwhile has absorbed the
   * over-charge (its refill was capped), as the server's did, charged the real cost, and
   * crediting it again would put this limiter ahead of the server. Without them, a give-back is
   * credited up to the room the unit has now.
   */
  adjust(now: number, amounts: readonly number[], reserved?: ReserveTimes): void {
    for (let i = 0; i < this.parts.length; i++) {
      const amount = amounts[i] ?? 0;
      if (amount > 0) this.charge(i, now, amount);
      else if (amount < 0) {
        // A unit counted until the answer charged the reserve then (see `answered`).
        const since = (this.units[i] as UnitPolicy).untilAnswer
          ? reserved?.answeredAt
          : reserved?.startedAt;
        const low =
          since === undefined
            ? Number.POSITIVE_INFINITY
            : roomSince(this.#low[i] as number[], since);
        const given = low < -amount ? low : -amount;
        const debt = this.#debt[i] as number;
        const cancelled = debt < given ? debt : given;
        this.#debt[i] = debt - cancelled;
        const back = given - cancelled;
        const room = roomOf(this.parts[i] as Strategy, now);
        if (back > 0 && room > 0) {
          const credit = this.creditAt(i, now) + back;
          this.#credit[i] = credit < room ? credit : room;
        }
      }
    }
  }

  /** Permits of unit `index` available at `now`, given-back credit in, debt and open out. */
  levelOf(index: number, now: number): number {
    const part = this.parts[index] as Strategy;
    const held = (this.#debt[index] as number) + (this.#open[index] as number);
    const level = part.level(now) + this.creditAt(index, now) - held;
    return level > 0 ? level : 0;
  }

  level(now: number): number {
    return this.levelOf(0, now);
  }

  isAtRest(now: number): boolean {
    for (let i = 0; i < this.parts.length; i++) {
      const busy = this.#debt[i] !== 0 || this.#open[i] !== 0;
      if (busy || !(this.parts[i] as Strategy).isAtRest(now)) return false;
    }
    return true;
  }

  restsAt(now: number): number {
    let at = now;
    for (let i = 0; i < this.parts.length; i++) {
      if (this.#open[i] !== 0) return Number.POSITIVE_INFINITY;
      const part = this.parts[i] as Strategy;
      const rate = (this.units[i] as UnitPolicy).compiled.ratePerMs;
      const rests = part.restsAt(now) + (this.#debt[i] as number) / rate;
      if (rests > at) at = rests;
    }
    return at;
  }

  /** The main unit catches up (see `Strategy.catchUp`). */
  catchUp(now: number, lateMs: number): void {
    (this.parts[0] as Strategy).catchUp?.(now, lateMs);
  }

  /** Permits of the main unit taken earlier were answered (see `Strategy.settle`). */
  settle(now: number, cost: number): void {
    (this.parts[0] as Strategy).settle?.(now, cost);
  }

  /**
   * A request that took `amounts` (one per unit) was answered: a unit counted until the answer
   * charges them to its bucket now (more than are open is ignored); an `arrival-safe` main unit
   * counts them from now.
   */
  answered(now: number, amounts: readonly number[]): void {
    for (let i = 0; i < this.parts.length; i++) {
      const amount = amounts[i] ?? 0;
      if (amount <= 0) continue;
      if ((this.units[i] as UnitPolicy).untilAnswer !== true) {
        (this.parts[i] as Strategy).settle?.(now, amount);
        continue;
      }
      const open = this.#open[i] as number;
      const answered = amount < open ? amount : open;
      this.#open[i] = open - answered;
      if (answered > 0) this.charge(i, now, answered);
    }
  }

  /** The server's count in the main unit (a signal that names none). */
  lowerRemaining(now: number, remaining: number, sentAt?: number, backAt?: number): void {
    (this.parts[0] as Strategy).lowerRemaining(now, remaining, sentAt, backAt);
    this.heardCount(now, undefined, remaining);
  }

  withdrawCounts(): void {
    (this.parts[0] as Strategy).withdrawCounts?.();
  }

  /**
   * The server counted `remaining` in `unit` (the main one if none): credit given back to it
   * before is in that count, so together with the unit's own level it may not exceed it.
   */
  heardCount(now: number, unit: string | undefined, remaining: number): void {
    const index = unit === undefined ? 0 : this.units.findIndex((each) => each.name === unit);
    if (index < 0) return;
    const room = remaining - (this.parts[index] as Strategy).level(now);
    const credit = this.#credit[index] as number;
    this.#credit[index] = room <= 0 ? 0 : credit < room ? credit : room;
  }

  private mainOnly(cost: number): number[] {
    const amounts = this.parts.map(() => 0);
    amounts[0] = cost;
    return amounts;
  }

  private peekUnit(index: number, now: number, amount: number): Decision {
    const part = this.parts[index] as Strategy;
    const { name, compiled } = this.units[index] as UnitPolicy;
    if (amount > part.capacity) {
      throw new RangeError(
        `[fetch-pacer] A cost of ${amount} ${name} can never be allowed: the \`${name}\` limit holds at most ${part.capacity} at once. Raise its \`burst\` or \`limit\`, or split the request.`,
      );
    }
    const credit = this.creditAt(index, now);
    const held = (this.#debt[index] as number) + (this.#open[index] as number);
    const need = held + amount - credit;
    if (amount === 0 || need <= 0) {
      const left = part.level(now) + credit - amount;
      return allow(whole(left), 0, compiled.limit);
    }
    if (need <= part.capacity) return part.peek(now, need);
    // A debt beyond what the unit holds at once is paid as its permits come back: look again
    // when it holds all it can (that decision pays a capacity of it and says what is left).
    const first = part.peek(now, part.capacity);
    if (!first.allowed) return first;
    const wait = wholeMs((need - part.capacity) / compiled.ratePerMs);
    return deny('rate', Math.max(1, wait), 0, wait, compiled.limit);
  }

  private takeUnit(index: number, now: number, amount: number): void {
    if (amount === 0) return;
    // Counted until the answer: the bucket is charged then, so it refills only from then.
    if ((this.units[index] as UnitPolicy).untilAnswer === true) {
      this.#open[index] = (this.#open[index] as number) + amount;
      return;
    }
    this.noteRoomOf(index, now);
    const credit = this.creditAt(index, now);
    const used = credit < amount ? credit : amount;
    this.#credit[index] = credit - used;
    if (amount > used) (this.parts[index] as Strategy).tryAcquire(now, amount - used);
  }

  /** Charges `amount` to unit `index` now: given-back credit first, then its state or debt. */
  private charge(index: number, now: number, amount: number): void {
    this.noteRoomOf(index, now);
    const credit = this.creditAt(index, now);
    const cancelled = credit < amount ? credit : amount;
    this.#credit[index] = credit - cancelled;
    this.#debt[index] = (this.#debt[index] as number) + amount - cancelled;
    this.payDebt(index, now);
  }

  /** Takes as much of unit `index`'s debt as its state holds now (whole permits). */
  private payDebt(index: number, now: number): void {
    const debt = this.#debt[index] as number;
    if (debt === 0) return;
    const part = this.parts[index] as Strategy;
    const held = whole(part.level(now));
    const paid = held < debt ? held : debt;
    if (paid > 0) this.noteRoomOf(index, now);
    if (paid > 0 && part.tryAcquire(now, paid).allowed) this.#debt[index] = debt - paid;
  }

  /** Keeps the room unit `index` has now, before a charge (see low-room.ts). */
  private noteRoomOf(index: number, now: number): void {
    const room = roomOf(this.parts[index] as Strategy, now) - this.creditAt(index, now);
    noteRoom(this.#low[index] as number[], now, room);
  }

  /**
   * Given-back permits still usable: only while the unit counts in token buckets (its own, and
   * a learned one if any: a window algorithm keeps its permits until they leave the window),
   * and never beyond its room to capacity.
   */
  private creditAt(index: number, now: number): number {
    const credit = this.#credit[index] as number;
    if (credit === 0) return 0;
    const room = roomOf(this.parts[index] as Strategy, now);
    return credit < room ? credit : room;
  }
}

/** Permits a token-bucket unit lacks to be full (0 for any other algorithm). */
function roomOf(part: Strategy, now: number): number {
  let capacity = part.capacity;
  if (part instanceof WithLearned) {
    const counter = part.learned?.counter;
    if (
      !(part.base instanceof TokenBucket) ||
      !(counter === undefined || counter instanceof TokenBucket)
    ) {
      return 0;
    }
    if (counter !== undefined && counter.capacity < capacity) capacity = counter.capacity;
  } else if (!(part instanceof TokenBucket)) {
    return 0;
  }
  return capacity - part.level(now);
}
