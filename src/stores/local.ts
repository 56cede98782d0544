import type { Decision } from '../core/decision.js';
import { createPacerLimiter, type PacerLimiter } from '../core/pacer-limiter.js';
import { adjustUnits } from '../core/unit-limits.js';
import type { Policy, ResolvedPolicy } from '../core/policy.js';
import type { AnsweredSignal, RefusalSignal, ServerSignal } from '../core/signal.js';
import type { UnitCosts, UnitLimits } from '../core/units.js';
import type { StoreCall, StoreCost } from '../pacer/store-contract.js';
import { amountOf, effectOn } from './bucket-state.js';

type Limits = readonly ResolvedPolicy[];

/** What the limiter counts a store call's key with: its policies, per unit if it has units. */
interface Counted {
  readonly input: readonly Policy[] | UnitLimits;
  /** The units in their order, each with the index of its first policy in `limits`. */
  readonly units: readonly (readonly [name: string, first: number])[] | undefined;
}

type Call = Pick<StoreCall, 'limits' | 'units'>;

/**
 * Counting in this process alone, with the core's limiter: what a shared store falls back to
 * when it cannot share (a browser without Web Locks or IndexedDB; Redis out, with
 * `onError: 'fail-open'`). One limiter, each key under the policies its calls come with (per
 * unit when they have units), so a process alone keeps to the limit; several processes together
 * do not. Its server blocks are the limiter's, kept once.
 */
export class LocalLimits {
  private readonly limiter: PacerLimiter;
  /** The policies of the call under way: what a key that has no state yet is made with. */
  private current: Counted = { input: [], units: undefined };
  /** A pacer's limits come as one frozen array per policy: each is converted once. */
  private readonly converted = new WeakMap<Limits, Counted>();

  constructor(clock: () => number = () => performance.now()) {
    this.limiter = createPacerLimiter({ limits: () => this.current.input, clock: { now: clock } });
  }

  takeMany(key: string, costs: readonly StoreCost[], stopAtDenial: boolean, call: Call) {
    this.use(call);
    const decisions: Decision[] = [];
    for (const cost of costs) {
      const decision = this.limiter.tryAcquire(key, this.costOf(cost));
      decisions.push(decision);
      if (stopAtDenial && !decision.allowed) break;
    }
    return decisions;
  }

  peek(key: string, cost: StoreCost, call: Call): Decision {
    this.use(call);
    return this.limiter.peek(key, this.costOf(cost));
  }

  block(key: string, ms: number): void {
    this.limiter.feedback.blockUntil(key, this.limiter.now() + ms);
  }

  /** As the shared bucket takes it (`effectOn`), so counting alone changes nothing of it. */
  observe(key: string, signal: ServerSignal, call: Call): void {
    this.use(call);
    if (teachesRate(signal)) {
      // A store that paces refusals learns their rate for its pacers (they learn none):
      // counting alone, the limiter here learns it from them and the admissions between, as a
      // pacer without a store does (its block too).
      const { sentAt } = signal;
      const at = sentAt === undefined ? {} : { sentAt: this.limiter.now() + Math.min(0, sentAt) };
      this.limiter.feedback.observe(key, { ...signal, ...at });
      return;
    }
    const effect = effectOn(signal, call.limits.length, call.units);
    if (effect === undefined) return;
    const { remaining, blockMs, learns } = effect;
    const unit = 'unit' in signal ? signal.unit : undefined;
    const named = unit === undefined ? {} : { unit };
    if (learns !== undefined) {
      const { limit, windowMs } = learns;
      this.limiter.feedback.observe(key, { kind: 'policy', limit, windowMs, ...named });
    }
    if (remaining !== undefined)
      this.limiter.feedback.observe(key, { kind: 'quota', remaining, ...named });
    if (blockMs > 0) this.block(key, blockMs);
  }

  /** `Store.adjust`, for a key with limits per unit (a key of one unit has no ledger here). */
  adjust(key: string, amounts: readonly number[], call: Call, reservedAt?: number): void {
    this.use(call);
    const { units } = this.current;
    if (units === undefined) return;
    const delta: Record<string, number> = {};
    for (const [name, first] of units) delta[name] = amounts[first] ?? 0;
    const startedAt = reservedAt === undefined ? undefined : this.limiter.now() + reservedAt;
    adjustUnits(this.limiter, key, delta, startedAt === undefined ? undefined : { startedAt });
  }

  reset(key: string): void {
    this.limiter.reset(key);
  }

  /** A store's cost as the limiter takes it: per unit, the amount of the unit's first policy. */
  private costOf(cost: StoreCost): number | UnitCosts {
    const { units } = this.current;
    if (units === undefined) return typeof cost === 'number' ? cost : amountOf(cost, 0);
    const amounts: Record<string, number> = {};
    for (const [name, first] of units) amounts[name] = amountOf(cost, first);
    return amounts;
  }

  private use({ limits, units }: Call): void {
    let counted = this.converted.get(limits);
    if (counted === undefined) {
      counted = countedOf(limits, units);
      this.converted.set(limits, counted);
    }
    this.current = counted;
  }
}

/** A refusal, or an admission: what a rate is learned from (`refused` in core). */
function teachesRate(signal: ServerSignal): signal is AnsweredSignal | RefusalSignal {
  return signal.kind === 'answered' || signal.kind === 'refusal';
}

function countedOf(limits: Limits, units: readonly string[] | undefined): Counted {
  const policies = limits.map(asPolicy);
  if (units === undefined) return { input: policies, units: undefined };
  const input: Record<string, Policy[]> = {};
  const firsts: [string, number][] = [];
  policies.forEach((policy, index) => {
    const name = units[index] ?? '';
    let list = input[name];
    if (list === undefined) {
      list = [];
      input[name] = list;
      firsts.push([name, index]);
    }
    list.push(policy);
  });
  return { input, units: firsts };
}

function asPolicy({ limit, windowMs, counting, capacity }: ResolvedPolicy): Policy {
  return counting.burst === 'capacity' && capacity !== limit
    ? { limit, windowMs, algorithm: counting, burst: capacity }
    : { limit, windowMs, algorithm: counting };
}
