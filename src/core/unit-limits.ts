import type { Strategy } from './algorithms/strategy.js';
import { Units } from './algorithms/units.js';
import { type CompiledPolicy, compilePolicy, isUnitLimits } from './compile.js';
import { type Decision, deny } from './decision.js';
import type { KeyedLimiter } from './limiter.js';
import type { Policy } from './policy.js';
import {
  arrivalSafeUnit,
  compileUnits,
  inspectUnits,
  noUnitsError,
  type ReserveTimes,
  type UnitCosts,
  type UnitInspection,
  type UnitLimits,
  unitVector,
} from './units.js';
import { assertKey, fail } from './validate.js';

/**
 * Limits per unit as a part of a limiter (`LimiterParts.units`): how they compile, and how a
 * cost in amounts per unit is decided and settled. A pacer's limiter has it; a bare
 * `createRateLimiter` counts one unit and carries none of this.
 */
export interface UnitLimitsPart {
  compile(input: UnitLimits, field: string): CompiledPolicy;
  /** `tryAcquire` (`take`) or `peek` of `key` with amounts per unit: as for a number, in every unit. */
  decide(limiter: KeyedLimiter, key: string, costs: UnitCosts, take: boolean): Decision;
  /** `settle` of `key`'s state with amounts per unit. */
  settle(state: Strategy, now: number, costs: UnitCosts): void;
}

export const unitLimits: UnitLimitsPart = {
  compile: compileUnitLimits,
  decide: decideUnits,
  settle(state, now, costs) {
    if (state instanceof Units) state.answered(now, unitVector(state.units, costs, 'cost'));
  },
};

/**
 * Compiles limits per unit, each unit naming `field.unit` in errors. The first unit is the main
 * one; an `arrival-safe` policy in another unit counts as a bucket charged at the answer (see
 * `arrivalSafeUnit`).
 */
function compileUnitLimits(input: UnitLimits, field: string): CompiledPolicy {
  const units = Object.keys(input).map((name, index) => {
    const unit = input[name];
    if (isUnitLimits(unit)) fail(`${field}.${name}`, 'a policy such as `perMinute(500)`', unit);
    const policies = unit as Policy | readonly Policy[];
    const counted =
      index === 0 ? { input: policies, untilAnswer: false } : arrivalSafeUnit(policies);
    const compiled = compilePolicy(counted.input, `${field}.${name}`);
    return counted.untilAnswer ? { name, compiled, untilAnswer: true } : { name, compiled };
  });
  return compileUnits(units, field);
}

function decideUnits(
  limiter: KeyedLimiter,
  key: string,
  costs: UnitCosts,
  take: boolean,
): Decision {
  assertKey(key);
  const compiled = limiter.compiled(key);
  if (compiled.units === undefined) throw noUnitsError(key, 'cost');
  const amounts = unitVector(compiled.units, costs, 'cost');
  const now = limiter.now();
  let state = limiter.stateOf(key);
  if (state === undefined && take) {
    if (!limiter.roomFor(now)) return limiter.keyLimitDecision(now, compiled.limit);
    state = limiter.add(key, compiled, now);
  } else if (state === undefined && limiter.size >= limiter.maxKeys && !limiter.anyAtRest(now)) {
    return limiter.keyLimitDecision(now, compiled.limit);
  }
  const units = state instanceof Units ? state : new Units(compiled.units);
  const blocked = limiter.feedback?.blocked(key, now, 0, undefined, compiled.limit);
  if (blocked === undefined) return units.decide(now, amounts, take);
  // Past the block every unit must still allow it: wait for both, as for a key of one unit.
  const rate = units.decide(now, amounts, false);
  const retryAfterMs = Math.max(rate.retryAfterMs, blocked.retryAfterMs);
  return deny('blocked', retryAfterMs, 0, Math.max(rate.resetMs, blocked.resetMs), rate.limit);
}

/**
 * The real cost of a request of `key` is known (an LLM answer's `usage`): charges `delta` more
 * in each unit it names, or gives it back where negative (see `Units.adjust`: `reserved` says
 * when the reserve was charged, on the limiter's clock). For keys with limits per unit.
 */
export function adjustUnits(
  limiter: KeyedLimiter,
  key: string,
  delta: UnitCosts,
  reserved?: ReserveTimes,
): void {
  assertKey(key);
  const { units } = limiter.compiled(key);
  if (units === undefined) throw noUnitsError(key, 'delta');
  const amounts = unitVector(units, delta, 'delta', true);
  // A give-back to a key at rest (no state) changes nothing.
  if (limiter.stateOf(key) === undefined && amounts.every((amount) => amount <= 0)) return;
  const state = limiter.stateFor(key, limiter.now());
  if (state instanceof Units) state.adjust(limiter.now(), amounts, reserved);
}

/** Each unit of `key` (limits per unit only, else undefined): level, capacity, learned. */
export function unitsOf(
  limiter: KeyedLimiter,
  key: string,
): Readonly<Record<string, UnitInspection>> | undefined {
  assertKey(key);
  return inspectUnits(limiter.compiled(key), limiter.stateOf(key), limiter.now());
}
