import { AllOf, type Strategy, strategyFor } from './algorithms/index.js';
import { type Policy, type ResolvedPolicy, resolvePolicy } from './policy.js';
import type { UnitLimits, UnitPolicy } from './units.js';

/**
 * One policy, several that must all allow (`[perSecond(10), perDay(1000)]`), or limits per
 * unit (`{ requests: perMinute(500), tokens: perMinute(200_000) }`, see units.ts).
 */
export type PolicyInput = Policy | readonly Policy[] | UnitLimits;

/** Picks the policy of a key when its state is created, for per-tier limits. */
export type PolicyResolver = (key: string) => PolicyInput;

/** What a key's policy allows, whatever its algorithms (the tightest of several policies). */
export interface PolicySummary {
  /** Most permits at once: the smallest `burst ?? limit` (a learned policy's included). */
  readonly capacity: number;
  /** The smallest `limit` (a learned policy's included). */
  readonly limit: number;
  /** Sustained permits per ms: the slowest `limit / windowMs` (a learned policy's included). */
  readonly ratePerMs: number;
}

/**
 * A policy input validated once: its policies with defaults filled in (one frozen array per
 * distinct input, so a store may cache what it derives from it), how to make a key's state,
 * and what it allows.
 */
export interface CompiledPolicy extends PolicySummary {
  readonly policies: readonly ResolvedPolicy[];
  /** A fresh, at-rest state of a key under these policies. */
  readonly create: () => Strategy;
  /** The fastest `limit / windowMs`: the rate a learned rate (AIMD) starts from and ends at. */
  readonly peakPerMs: number;
  /** With limits per unit: each unit's policy (the summary above is the first unit's). */
  readonly units?: readonly UnitPolicy[];
}

/**
 * Compiles limits per unit (unit-limits.ts), for the limiters that count them (a pacer's): a
 * bare limiter's bundle carries none of it.
 */
export type UnitsCompiler = (input: UnitLimits, field: string) => CompiledPolicy;

/** True for `{ requests: ..., tokens: ... }`, false for a policy or an array of them. */
export function isUnitLimits(input: unknown): input is UnitLimits {
  return (
    typeof input === 'object' &&
    input !== null &&
    !Array.isArray(input) &&
    !('limit' in input) &&
    !('windowMs' in input)
  );
}

/**
 * Validates `input`, naming `field` in errors (`limits`, `limits[1].windowMs`); limits per unit
 * are compiled by `units`, where given.
 */
export function compilePolicy(
  input: PolicyInput,
  field: string,
  units?: UnitsCompiler,
): CompiledPolicy {
  if (isUnitLimits(input)) {
    if (units !== undefined) return units(input, field);
    if (Object.values(input).some((unit) => typeof unit === 'object' && unit !== null)) {
      throw new TypeError(
        `[fetch-pacer] \`${field}\` gives limits per unit: a pacer counts those (createPacer, createPacedFetch), a bare limiter one policy`,
      );
    }
  }
  const several = Array.isArray(input);
  if (several && input.length === 0) {
    throw new TypeError(`[fetch-pacer] Expected \`${field}\` to hold at least one policy, got []`);
  }
  const list: readonly Policy[] = several ? input : [input as Policy];
  const policies = Object.freeze(
    list.map((policy, index) => resolvePolicy(policy, several ? `${field}[${index}]` : field)),
  );
  const rates = policies.map((policy) => policy.limit / policy.windowMs);
  const only = policies.length === 1 ? policies[0] : undefined;
  return {
    policies,
    create:
      only !== undefined ? () => strategyFor(only) : () => new AllOf(policies.map(strategyFor)),
    capacity: Math.min(...policies.map((policy) => policy.capacity)),
    limit: Math.min(...policies.map((policy) => policy.limit)),
    ratePerMs: Math.min(...rates),
    peakPerMs: Math.max(...rates),
  };
}

/**
 * The compiled policy of each key, from a policy or a resolver. A resolver's answers are
 * usually a few shared objects (tiers): each is compiled (and given to `check`, a store's test
 * of what it can count) once.
 */
export function policyResolver(
  input: PolicyInput | PolicyResolver,
  field: string,
  check?: (compiled: CompiledPolicy, field: string) => void,
  units?: UnitsCompiler,
): (key: string) => CompiledPolicy {
  const compile = (policy: PolicyInput, name: string) => {
    const compiled = compilePolicy(policy, name, units);
    check?.(compiled, name);
    return compiled;
  };
  if (typeof input !== 'function') {
    const fixed = compile(input, field);
    return () => fixed;
  }
  const cache = new WeakMap<object, CompiledPolicy>();
  return (key) => {
    const policy = input(key);
    const name = `${field}('${key}')`;
    if (typeof policy !== 'object' || policy === null) return compile(policy, name);
    let found = cache.get(policy);
    if (found === undefined) {
      found = compile(policy, name);
      cache.set(policy, found);
    }
    return found;
  };
}
