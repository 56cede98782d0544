import { allow, type Decision, deny, EPSILON, wholeMs } from '../decision.js';
import type { Algorithm, ResolvedPolicy } from '../policy.js';
import { SlidingLog } from './sliding-log.js';
import type { Strategy } from './strategy.js';

/**
 * "`limit` per `windowMs`" as a server counts it **at arrival**, whatever the network does in
 * between, and whatever way the server counts (a sliding log, fixed windows, a sliding-window
 * counter, a GCRA of the same rate). The default of a paced fetch's own limits.
 *
 * - **A permit counts from its send until its answer, then for a window.** A request arrives
 *   between the two, so it leaves the server's window no later than this log's: jitter that
 *   bunches sends on the way cannot put more than `limit` arrivals in any window. A permit is
 *   "in flight" from `tryAcquire` until `settle` (the pacer settles it when its task ends); the
 *   price is about one round trip per window of throughput.
 * - **Spaced after the first window.** A fresh state may send `limit` at once (the server's first
 *   window; a pause within it ends it, see `lapse`); after that permits come one per
 *   `windowMs / limit`, as the strictest of those
 *   servers needs: a sliding-window counter weighs the previous window as if its requests were
 *   spread evenly, so a second burst right after a full window is refused. `burst` lets bursts
 *   of that many through at any time (for a server known to allow them), as a GCRA server
 *   counts them at arrival: see `answeredTat`.
 * - **A window and 1 ms**: see the constructor.
 * - **A late pacer catches up** (`catchUp`): a due request reached late (a hidden page's timers
 *   wake once a second) gets the spacing credit of the time it was late, up to a window's worth.
 * - **Fresh again only after two quiet windows**, so a new burst never lands in a window whose
 *   predecessor the server still remembers.
 * - **The server's own count is room** (`heardRoom`): what it said it admits, less every permit
 *   that may arrive after its count, is taken without waiting for answers (the spacing holds).
 *
 * A wait behind permits still in flight cannot be known (it depends on their answers); it is
 * reported as its lower bound, one window, and the pacer looks again when an answer settles.
 */
export class ArrivalSafe implements Strategy {
  /** Answered permits, stamped with their answer time. */
  private log: SlidingLog;
  /** Permits taken and not answered yet. */
  private open = 0;
  /** Spacing credit (may go negative: a cost above the burst is paid for afterwards). */
  private tokens: number;
  private stamp = Number.NEGATIVE_INFINITY;
  /** Ticker time of the last take or answer: the state is fresh two windows after it. */
  private lastAt = Number.NEGATIVE_INFINITY;
  /**
   * Spacing burst: `burst` if the policy gives one, else 1. Above 1 it is a GCRA server's burst
   * too (`answeredTat`); a burst of 1 only spaces the sends from the first (a rate a refusal
   * taught, see learned-policy.ts): nothing says the server is a GCRA, and one at a time in
   * flight would be its only arrival-safe count.
   */
  private readonly spacing: number;
  private readonly perMs: number;
  /** Credit of a fresh state: the first window, or the burst. */
  private readonly fresh: number;
  /** What the log's window is longer than the policy's (see the constructor). */
  private readonly margin: number;
  /**
   * With a `burst` (a GCRA server, nginx's `limit_req burst=`): the answers' theoretical
   * arrival time, `max(it, answer) + interval` per permit answered. A GCRA admits every arrival
   * when no span of time holds more than `span / interval + burst` of them, in any order. A
   * permit arrives between its send and its answer, so a span up to now may hold every permit
   * answered in it and every one still open: a permit may go when, for every answer time `u`,
   * those since `u`, the open ones and it fit in `now - u`, which is
   * `max(answeredTat, now) + (open + cost - burst) × interval <= now`. Behind answers still to
   * come (`open + cost > burst`) it waits for them. Spacing at the send alone let a burst whose
   * first request arrived late meet requests sent after it that arrived early (a refusal in 4 of
   * 10 seeded runs against an nginx-like GCRA, 5-60 ms each way).
   */
  private answeredTat = Number.NEGATIVE_INFINITY;
  /**
   * When the first window of a fresh state ends: its credit beyond the spacing burst lapses
   * then. Kept, it let a state that sent 2 of 5 in its first window send 3 more at once a window
   * later, which a sliding-window counter refuses (it still weighs the first window's 2 there).
   */
  private freshEnds = Number.POSITIVE_INFINITY;
  /** Ticker time of the last take. */
  private takenAt = Number.NEGATIVE_INFINITY;
  /** Permits taken since the state was last fresh. */
  private freshTaken = 0;
  /** Ticker time of the first answer since the state was last fresh. */
  private heardAt = Number.POSITIVE_INFINITY;
  /** Permits the server's count still allows beyond every permit taken since (`heardRoom`). */
  private room = 0;
  /**
   * The stand-ins the last count that lowered the log put there (`lowerRemaining`), and when.
   * A count of a request sent after it was heard is the server's newer state, and replaces
   * them: left to stand a window each, the counts of a bucket that refilled between them (a
   * GCRA naming its burst of 5, whose full bucket reads 3) filled a log of 600 per second with
   * stand-ins, and held it a whole second (`lowerRemaining`).
   */
  private standIns = 0;
  private standInAt = Number.NEGATIVE_INFINITY;
  /** Whether a permit was taken the instant `standInAt` before its count was heard. */
  private standInTied = false;
  /** When the server said the permits its count took are back (its reset), if it did. */
  private standInsBackAt = Number.POSITIVE_INFINITY;
  /**
   * The server named the `burst` as its limit (`heardRoom`): it is a GCRA of that burst, and the
   * GCRA of the answers (`answeredTat`) is all the key counts. The log of `limit` per window is
   * for a server that may count windows: through 5-60 ms of jitter it held the key to 60 per
   * a second and a round trip, 0.93x of redis-gcra's rate at a burst of 15.
   */
  private bucketNamed = false;
  /**
   * A learned bucket (`countAsBucket`): counted as one named, and each count of it is its credit,
   * since the key counts what the server says of the bucket, not a window of its own.
   */
  private learnedBucket = false;

  constructor(readonly policy: ResolvedPolicy) {
    // A hair longer than the window: a sliding-window counter refuses the request that comes
    // exactly one window after a full one (its estimate equals the limit there), and integer-ms
    // clocks make such ties common. 1 ms, or a tenth of the spacing for a sub-ms spacing. None
    // with a burst of the whole limit: no sliding-window counter admits that (it weighs the
    // window before), and a sliding log's entry one window old is out (a paced fetch's named
    // `slidingLog`, see fetch-policy.ts).
    this.margin =
      policy.burst === policy.limit ? 0 : Math.min(1, policy.windowMs / policy.limit / 10);
    this.log = new SlidingLog({ ...policy, windowMs: policy.windowMs + this.margin });
    this.spacing = policy.burst ?? 1;
    this.perMs = policy.limit / policy.windowMs;
    // The first window may be sent at once; with a `burst`, that burst (a GCRA server, nginx's
    // `limit_req burst=`, admits no more at once).
    this.fresh = policy.burst ?? policy.limit;
    this.tokens = this.fresh;
  }

  get capacity(): number {
    return this.policy.limit;
  }

  /** Fresh: nothing in flight and two quiet windows since the last take or answer. */
  private isFresh(now: number): boolean {
    return this.open === 0 && now >= this.lastAt + 2 * this.policy.windowMs;
  }

  /** Most spacing credit now: a fresh state's while fresh or unspent, else the burst. */
  private capAt(now: number): number {
    if (this.isFresh(now)) return this.fresh;
    return this.tokens > this.spacing ? this.tokens : this.spacing;
  }

  private tokensAt(now: number): number {
    if (this.isFresh(now)) return this.fresh;
    const elapsed = now - this.stamp;
    if (!(elapsed > 0)) return this.tokens;
    const refilled = this.tokens + elapsed * this.perMs;
    const cap = this.capAt(now);
    return refilled < cap ? refilled : cap;
  }

  /**
   * The first window's credit beyond the spacing burst lapses when that window ends, or after
   * a pause within it long enough that what went before could still weigh in a sliding-window
   * counter's next window: the permits taken so far times the pause reach half a window. The
   * pause counts from a take that came after an answer (a key's first request waits for its
   * answer, then the rest go at once: that wait is no pause). Kept, the credit let 2 taken
   * early and 28 at once late in that window arrive after the counter's window turned, next to
   * the 2 it still weighed: the permits after them, counted free a window after the 2 were
   * answered, were refused.
   */
  private lapse(now: number): void {
    this.standInsBack(now);
    if (
      now < this.freshEnds &&
      this.heardAt <= this.takenAt &&
      (now - this.takenAt) * this.freshTaken * 2 >= this.policy.windowMs
    ) {
      this.freshEnds = now;
    }
    if (now < this.freshEnds) return;
    if (this.tokens > this.spacing) {
      this.tokens = this.spacing;
      if (this.freshEnds > this.stamp) this.stamp = this.freshEnds;
    }
    this.freshEnds = Number.POSITIVE_INFINITY;
  }

  level(now: number): number {
    this.lapse(now);
    const counted = this.countedAt(now);
    const spaced = this.tokensAt(now);
    return Math.max(0, counted < spaced ? counted : spaced);
  }

  /** Permits the log leaves beside those open, or the room if more: never the spacing's. */
  private countedAt(now: number): number {
    if (this.bucketNamed) return Number.POSITIVE_INFINITY;
    const counted = this.log.level(now) - this.open;
    return counted > this.room ? counted : this.room;
  }

  tryAcquire(now: number, cost: number): Decision {
    return this.decide(now, cost, true);
  }

  peek(now: number, cost: number): Decision {
    return this.decide(now, cost, false);
  }

  /** `tryAcquire` when `take`, else `peek`: one decision, so the two cannot disagree. */
  private decide(now: number, cost: number, take: boolean): Decision {
    this.lapse(now);
    const { limit, windowMs } = this.policy;
    const open = this.open;
    const tokens = this.tokensAt(now);
    const cap = this.capAt(now);
    const short = (cost < cap ? cost : cap) - tokens;
    const spacedMs = short > EPSILON ? short / this.perMs : 0;
    // Room the server's count gave waits for no answer (see `heardRoom`), only for the spacing.
    const roomy = this.room >= cost;
    const logged = !roomy && !this.bucketNamed;
    let countedMs = 0;
    if (logged && open + cost > limit) {
      countedMs = windowMs; // behind answers still to come: at least a window from now
    } else if (logged) {
      const logged = this.log.peek(now, open + cost);
      if (!logged.allowed) countedMs = logged.retryAfterMs;
    }
    // The stand-ins of a count whose permits the server said are back by then hold no longer.
    const backMs = this.standIns > 0 ? this.standInsBackAt - now : Number.POSITIVE_INFINITY;
    if (countedMs > backMs) countedMs = wholeMs(backMs);
    const burst = this.spacing;
    if (burst > 1 && countedMs === 0 && !roomy) {
      // Behind answers still to come, the next one frees it: an interval is its lower bound.
      const interval = 1 / this.perMs;
      if (open > 0 && open + cost > burst) countedMs = wholeMs(interval);
      else countedMs = wholeMs(this.tatAt(now) + (open + cost - burst) * interval - now);
    }
    const counted = this.countedAt(now);
    const remaining = Math.max(0, Math.floor(counted < tokens ? counted : tokens));
    // Behind answers still to come the state rests two windows after them at the earliest.
    const resetMs = wholeMs(open > 0 ? 2 * windowMs : this.restsAt(now) - now);
    if (spacedMs === 0 && countedMs === 0) {
      if (take) {
        if (this.isFresh(now)) {
          this.freshEnds = now + windowMs;
          this.heardAt = Number.POSITIVE_INFINITY;
          this.freshTaken = 0;
        }
        this.takenAt = now;
        this.freshTaken += cost;
        this.room = this.room > cost ? this.room - cost : 0;
        this.tokens = tokens - cost;
        if (now > this.stamp) this.stamp = now;
        this.open += cost;
        this.lastAt = now;
      }
      return allow(Math.max(0, remaining - cost), resetMs, limit);
    }
    return deny('rate', Math.max(wholeMs(spacedMs), countedMs, 1), remaining, resetMs, limit);
  }

  /**
   * The permits open and answered within `windowMs` (at most the log's): its level is the
   * spacing's after the first window (when the next may go), and read as what is in use it
   * carried a whole window of permits into a policy learned after a pause (a client whose first
   * requests a spent window refused, then told the server's policy, waited a window more).
   */
  inUse(now: number, windowMs: number): number {
    this.standInsBack(now);
    // Over no window, the permits in flight alone: one answered just now is counted no more.
    if (!(windowMs > 0)) return this.open;
    const logged = this.log.policy.windowMs;
    return this.open + this.log.countSince(now - (windowMs < logged ? windowMs : logged));
  }

  /**
   * The server counted `remaining` more of `limit` at the arrival of a request sent at `sentAt`
   * (see `Strategy.heardRoom`). Every permit that may arrive after that count takes from it: the
   * ones open now and the ones answered since `sentAt`, the request itself among them (so a
   * count taken before its own request, not after, is still one too many). What is left the
   * server admits whatever way it counts, since no scheme's room shrinks as time passes without
   * arrivals: those permits need not wait for the log, whose hold past each answer costs about a
   * round trip per window. They keep to the spacing: taken at once, they were admitted, but a
   * sliding-window counter still weighed them in its next window, and the permits the log then
   * allowed were refused (a property run of issue 12). Through 5-60 ms of jitter, on the manual
   * clock (`npm run measure:arrivals`), 20 per second with counts: a GCRA went from 0.92x of its
   * rate to 1.00x, fixed windows from 0.91-0.92x to 0.93x, a sliding-window counter from
   * 0.82-0.84x to 0.85x (the published limit, one seed).
   *
   * Only a count of this policy's own limit is room (one of its `burst` caps the spacing credit,
   * below), and only one sent within the last window:
   * the log still holds every answer since. (Of an older one, it may have dropped some, and the
   * room would be too large; while the log is full that cannot lift it, as the permits it holds
   * leave no room, but with a `burst` the room passes the GCRA's count of the answers too.)
   * Another client that spends the same server's window is not seen until its permits show in a
   * later count.
   */
  heardRoom(now: number, remaining: number, limit: number, sentAt: number): void {
    if (limit === this.policy.burst && limit !== this.policy.limit) {
      // A GCRA server that names its burst as its limit (throttled, redis-cell): its bucket
      // holds at most the count and what it refilled since (the arrival came after the send).
      // The spacing credit is capped to that: it counts the key's own permits, and the count
      // every client's on the bucket. Permits in flight are not taken off (the count may hold
      // them already): a lone client's credit, which they left lower, is not lowered twice.
      this.bucketNamed = true;
      const most = Math.floor(remaining) + (now - sentAt) * this.perMs;
      this.lapse(now);
      if (most < this.tokensAt(now)) {
        this.tokens = most;
        this.stamp = now;
      }
      return;
    }
    if (limit !== this.policy.limit || !(sentAt > now - this.policy.windowMs)) return;
    const room = Math.floor(remaining) - this.open - this.log.countSince(sentAt);
    if (room > this.room) this.room = room;
    this.lapse(now);
    const tokens = this.tokensAt(now);
    if (this.learnedBucket) {
      // A learned bucket's count is its level: room at once, not at the spacing.
      if (room > tokens) {
        this.tokens = room;
        this.stamp = now;
      }
    } else if (tokens > this.spacing && tokens > room + 1) {
      // Nor may the first window's credit beyond the spacing outlast the count, which is of the
      // state after the counted request (the room keeps a permit for it as well): a GCRA of 60
      // per second with a burst of 16, stating the IETF count of its 60 (15 left after one),
      // refused 40-44 of the first window a key told its 60 per second sent at once.
      this.tokens = room + 1 > this.spacing ? room + 1 : this.spacing;
      if (now > this.stamp) this.stamp = now;
    }
  }

  /**
   * The server is a bucket of this policy's limit, its burst (a learned one, see `adopt`): the
   * GCRA of the answers alone counts, and each count of it is its credit (`heardRoom`,
   * `lowerRemaining`). Counted as a log of its limit per window as well, each permit held from
   * its send until a window after its answer, a bucket of 5 at 60 per second found by its
   * fractional resets ran at 0.52-0.55x of its rate through 5-60 ms of jitter; and a key that
   * paced it slower than it refills learned no faster refill, its counts all of a full bucket.
   */
  countAsBucket(): void {
    this.bucketNamed = true;
    this.learnedBucket = true;
  }

  /** The server said the permits its last count took are back by now: its stand-ins go. */
  private standInsBack(now: number): void {
    if (now < this.standInsBackAt) return;
    this.withdrawCounts();
    this.standInsBackAt = Number.POSITIVE_INFINITY;
  }

  withdrawCounts(): void {
    if (this.standIns > 0) this.log.withdraw(this.standInAt, this.standIns);
    this.standIns = 0;
  }

  /**
   * `cost` permits taken earlier are answered at `now`: from here they count for one window, as
   * the server may have counted them as late as now. More than are open is ignored.
   */
  settle(now: number, cost: number): void {
    const answered = cost < this.open ? cost : this.open;
    if (answered <= 0) return;
    this.open -= answered;
    this.log.record(now, answered);
    this.lastAt = now;
    if (now < this.heardAt) this.heardAt = now;
    if (this.spacing > 1) this.answeredTat = this.tatAt(now) + answered / this.perMs;
  }

  /** `answeredTat`, or `now` once it passed. */
  private tatAt(now: number): number {
    return this.answeredTat > now ? this.answeredTat : now;
  }

  isAtRest(now: number): boolean {
    return this.isFresh(now);
  }

  restsAt(now: number): number {
    if (this.open > 0) return Number.POSITIVE_INFINITY;
    const at = this.lastAt + 2 * this.policy.windowMs;
    return at > now ? at : now;
  }

  catchUp(now: number, lateMs: number): void {
    if (!(lateMs > 0)) return;
    this.lapse(now);
    const tokens = this.tokensAt(now);
    const owed = tokens + lateMs * this.perMs;
    const most = this.policy.limit;
    if (owed > tokens) {
      this.tokens = owed < most ? owed : most;
      if (now > this.stamp) this.stamp = now;
    }
  }

  retimed(windowMs: number): ArrivalSafe {
    const next = new ArrivalSafe(Object.freeze({ ...this.policy, windowMs }));
    next.log = this.log.retimed(windowMs + next.margin);
    next.open = this.open;
    next.tokens = this.tokens;
    next.stamp = this.stamp;
    next.lastAt = this.lastAt;
    next.answeredTat = this.answeredTat;
    next.freshEnds = this.freshEnds;
    next.takenAt = this.takenAt;
    next.heardAt = this.heardAt;
    next.freshTaken = this.freshTaken;
    next.room = this.room;
    next.bucketNamed = this.bucketNamed;
    next.learnedBucket = this.learnedBucket;
    next.standIns = this.standIns;
    next.standInAt = this.standInAt;
    next.standInTied = this.standInTied;
    next.standInsBackAt = this.standInsBackAt;
    return next;
  }

  /**
   * The server counts `limit - remaining` in use: the permits in flight are taken to be among
   * them (they may have arrived), the rest stand in the log from now. Of a request sent at
   * `sentAt`, after the last count that put stand-ins there was heard, the count is newer than
   * that one's and replaces it (see `standIns`): a window's counts go down as it fills (the
   * stand-ins the newer one puts there are as many as the older one's and those taken since),
   * a bucket's come back up as it refills.
   */
  lowerRemaining(now: number, remaining: number, sentAt?: number, backAt?: number): void {
    this.lapse(now);
    const newer =
      sentAt !== undefined &&
      (sentAt > this.standInAt || (sentAt === this.standInAt && !this.standInTied));
    // An older count keeps the newer one's stand-ins, and may lower past them: they are taken
    // back and put again with its own, at one stamp, so that a newer count (or the reset) takes
    // all of them back. Left where they were and no longer counted, they stood a window: a log
    // of 600 per second was full for 700 ms at a time behind counts of a bucket of 6.
    const older = sentAt !== undefined && !newer && this.standIns > 0;
    const kept = this.log.level(now);
    if (newer || older) this.withdrawCounts();
    const level = this.log.level(now);
    const counted = Math.min(this.policy.limit, remaining + this.open);
    this.log.lowerRemaining(now, older && kept < counted ? kept : counted);
    const added = level - this.log.level(now);
    if (added > 0 && sentAt !== undefined) {
      const lastBackAt = this.standInsBackAt;
      this.standIns = added;
      this.standInAt = now;
      this.standInTied = this.takenAt === now;
      this.standInsBackAt = backAt ?? Number.POSITIVE_INFINITY;
      if (older && lastBackAt > this.standInsBackAt) this.standInsBackAt = lastBackAt;
    }
    // Nor may the first window's burst credit outlast what the server has left (the spacing
    // credit after it is the server's rate, which its count does not change).
    const tokens = this.tokensAt(now);
    if (this.learnedBucket && tokens > remaining) {
      // A bucket's count is all its credit. (Its stand-ins stay in the log: a count's room is
      // what it says less every permit that may arrive after it, theirs among them.)
      this.tokens = remaining;
      if (now > this.stamp) this.stamp = now;
    } else if (tokens > this.spacing && tokens > remaining) {
      this.tokens = remaining > this.spacing ? remaining : Math.min(tokens, this.spacing);
      if (now > this.stamp) this.stamp = now;
    }
    this.lastAt = now > this.lastAt ? now : this.lastAt;
  }
}

/**
 * Counts as a server does at arrival, whatever the network's jitter (see `ArrivalSafe`): the
 * default of a paced fetch's own limits. `burst` (at most `limit`) lets bursts of that many
 * through at any time; without it, permits are spaced after the first window.
 */
export const arrivalSafe: Algorithm = /* @__PURE__ */ Object.freeze({
  name: 'arrival-safe',
  burst: 'spacing',
  create: (policy: ResolvedPolicy) => new ArrivalSafe(policy),
});
