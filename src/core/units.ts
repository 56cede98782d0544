import type { Strategy } from './algorithms/strategy.js';
import { tokenBucket } from './algorithms/token-bucket.js';
import { Units } from './algorithms/units.js';
import type { CompiledPolicy } from './compile.js';
import {
  type LearnedPolicy,
  learnedCounterOf,
  learnedPolicyOf,
  learnedRatePerMs,
} from './learned.js';
import type { KeyStates } from './learned-policy.js';
import type { Policy } from './policy.js';
import { fail } from './validate.js';

/**
 * Limits in named units, all of which must allow a request (`{ requests: perMinute(500),
 * tokens: perMinute(200_000) }`: an LLM API counts both). The first unit is the key's main one:
 * a plain number cost, `level` and a signal that names no unit are in it.
 */
export type UnitLimits = { readonly [unit: string]: Policy | readonly Policy[] };

/** A request's cost in the units of its key's limits (`{ requests: 1, tokens: 812 }`); 0 if left out. */
export type UnitCosts = { readonly [unit: string]: number };

/**
 * When a task's reserve was charged, for a give-back of it (`pacer.adjust`), on the pacer's
 * clock: `startedAt` its start (a unit counted from the start), `answeredAt` when its answer
 * came (a unit counted until the answer, `arrival-safe`, is charged then; now if left out).
 */
export interface ReserveTimes {
  readonly startedAt: number;
  readonly answeredAt?: number;
}

/** A cost: permits of a key's main unit, or an amount in each of its units. */
export type Cost = number | UnitCosts;

/** A unit's compiled policy, by name, in the order the limits named them. */
export interface UnitPolicy {
  readonly name: string;
  readonly compiled: CompiledPolicy;
  /**
   * An `arrival-safe` unit other than the main one: a token bucket charged when a request's
   * answer comes, not when it is sent (see `arrivalSafeUnit`).
   */
  readonly untilAnswer?: boolean;
}

/**
 * A unit's policies as they are compiled. `arrivalSafe` in a unit other than the main one
 * (the requests) is counted as a token bucket whose permits count from the send and refill only
 * from the answer: the server counts arrivals, which lie between, so network jitter cannot
 * bunch them past its bucket (how OpenAI and Anthropic count tokens), and a bucket keeps O(1)
 * state where a log would keep one entry per token.
 */
export function arrivalSafeUnit(input: Policy | readonly Policy[]): {
  readonly input: Policy | readonly Policy[];
  readonly untilAnswer: boolean;
} {
  const list: readonly Policy[] = Array.isArray(input) ? input : [input as Policy];
  if (!list.some(isArrivalSafe)) return { input, untilAnswer: false };
  const buckets = list.map(
    (policy): Policy => (isArrivalSafe(policy) ? { ...policy, algorithm: tokenBucket } : policy),
  );
  return { input: Array.isArray(input) ? buckets : (buckets[0] as Policy), untilAnswer: true };
}

/** Told by its name: importing the `arrivalSafe` value here would put it in every bundle. */
function isArrivalSafe(policy: Policy | undefined): boolean {
  return policy?.algorithm?.name === 'arrival-safe';
}

/**
 * The compiled policy of limits per unit (each unit compiled already, naming `field.unit`): it
 * summarises as its main unit (what projections and `level` are in), and its states are `Units`.
 */
export function compileUnits(units: readonly UnitPolicy[], field: string): CompiledPolicy {
  const main = units[0];
  if (main === undefined) {
    throw new TypeError(
      `[fetch-pacer] Expected \`${field}\` to name at least one unit, such as \`{ requests: perMinute(500), tokens: perMinute(200_000) }\`, got {}`,
    );
  }
  const frozen = Object.freeze([...units]);
  return {
    ...main.compiled,
    create: () => new Units(frozen),
    units: frozen,
  };
}

/**
 * Checks a cost object (`field` names it in errors) and returns it as one amount per unit of
 * `units`, in their order. A unit the key does not count is a mistake (a typo would otherwise
 * charge nothing), as is an amount that is not an integer >= 0 (any integer when `signed`: a
 * settlement gives back with a negative one).
 */
export function unitVector(
  units: readonly UnitPolicy[],
  costs: UnitCosts,
  field: string,
  signed = false,
): number[] {
  const vector = units.map(() => 0);
  for (const name of Object.keys(costs)) {
    const index = units.findIndex((unit) => unit.name === name);
    if (index < 0) {
      const known = units.map((unit) => unit.name).join('`, `');
      throw new TypeError(
        `[fetch-pacer] Unknown unit \`${name.slice(0, 64)}\` in \`${field}\`: the key's limits count \`${known}\``,
      );
    }
    const amount = costs[name];
    if (typeof amount !== 'number' || !Number.isInteger(amount) || (!signed && amount < 0)) {
      fail(
        `${field}.${name}`,
        signed ? 'an integer (negative to give back)' : 'an integer >= 0',
        amount,
      );
    }
    vector[index] = amount;
  }
  return vector;
}

/**
 * Checks that a cost is a positive integer or an object of amounts, each an integer >= 0 (its
 * units are checked against the key's when it is decided).
 */
export function assertCost(field: string, cost: unknown): asserts cost is Cost {
  if (typeof cost === 'object' && cost !== null && !Array.isArray(cost)) {
    for (const [name, amount] of Object.entries(cost)) {
      if (typeof amount !== 'number' || !Number.isInteger(amount) || amount < 0) {
        fail(`${field}.${name.slice(0, 64)}`, 'an integer >= 0', amount);
      }
    }
    return;
  }
  if (typeof cost !== 'number' || !Number.isInteger(cost) || cost < 1) {
    fail(
      field,
      'a positive integer or amounts per unit such as `{ requests: 1, tokens: 812 }`',
      cost,
    );
  }
}

/**
 * Where a signal of the server lands for `key`: a key with limits per unit learns in the unit
 * the signal names (its main unit if it names none), as a key of its own would (the same
 * `applySignal`, on a view of that unit); a key of one unit takes the signals that name none or
 * `'requests'`. Undefined: the key does not count that unit, and the signal is ignored.
 */
export function statesOfUnit(
  states: KeyStates,
  key: string,
  unit: string | undefined,
): KeyStates | undefined {
  const units = states.compiled(key).units;
  if (units === undefined) return unit === undefined || unit === 'requests' ? states : undefined;
  const index = unit === undefined ? 0 : units.findIndex((each) => each.name === unit);
  const found = units[index];
  if (found === undefined) return undefined;
  const holder = (now: number) => {
    const state = states.stateFor(key, now);
    return state instanceof Units ? state : undefined;
  };
  return {
    stateFor: (_key, now) => holder(now)?.parts[index],
    stateOf: () => {
      const state = states.stateOf(key);
      return state instanceof Units ? state.parts[index] : undefined;
    },
    replace: (_key, part) => {
      const state = states.stateOf(key);
      if (!(state instanceof Units)) return;
      state.parts[index] = part;
      states.replace(key, state);
    },
    compiled: () => found.compiled,
    blockUntil: (_key, until) => states.blockUntil(key, until),
    unblock: () => states.unblock(key),
    // A unit's learned window counts at the send, as measured for issue 14 (bench:llm).
    answered: () => false,
    sharesRates: () => states.sharesRates(),
    storeHearsCounts: () => states.storeHearsCounts(),
  };
}

/** One unit of a key as `inspect(key).units` shows it. */
export interface UnitInspection {
  /** Permits of the unit available now, as a float (given-back credit in, debt out). */
  readonly level: number;
  /** Most the unit holds at once (its tightest `burst ?? limit`, a learned policy's included). */
  readonly capacity: number;
  /** Its tightest `limit` (a learned policy's included). */
  readonly limit: number;
  /** Its sustained rate, permits per ms (a learned policy's included). */
  readonly ratePerMs: number;
  /** The policy the unit learned from the server's headers in that unit, if any. */
  readonly learned?: LearnedPolicy;
}

/** Each unit of a key with limits per unit, by name, at `now` (`state`: its live one, if any). */
export function inspectUnits(
  compiled: CompiledPolicy,
  state: Strategy | undefined,
  now: number,
): Readonly<Record<string, UnitInspection>> | undefined {
  const { units } = compiled;
  if (units === undefined) return undefined;
  const holder = state instanceof Units ? state : new Units(units);
  const inspection: Record<string, UnitInspection> = {};
  units.forEach((unit, index) => {
    const part = holder.parts[index] as Strategy;
    const learned = learnedPolicyOf(part);
    const { capacity, limit, ratePerMs } = unit.compiled;
    inspection[unit.name] = Object.freeze({
      level: holder.levelOf(index, now),
      capacity: Math.min(capacity, learnedCounterOf(part)?.capacity ?? capacity),
      limit: Math.min(limit, learned?.limit ?? limit),
      ratePerMs: learnedRatePerMs(ratePerMs, learned),
      ...(learned === undefined ? {} : { learned }),
    });
  });
  return Object.freeze(inspection);
}

/** The mistake of giving amounts per unit (`field`) for a key whose limits have no units. */
export function noUnitsError(key: string, field: string): TypeError {
  return new TypeError(
    `[fetch-pacer] \`${field}\` gives amounts per unit, but the limits of key '${key.slice(0, 64)}' count one: give \`limits\` per unit, such as \`{ requests: perMinute(500), tokens: perMinute(200_000) }\``,
  );
}
