import type { PolicyInput, PolicyResolver } from '../core/compile.js';
import type { Policy } from '../core/policy.js';
import { isUnitLimits } from '../core/units.js';

/**
 * The paced fetch's own `limits` count `arrival-safe` unless they name an algorithm: the server
 * counts requests when they arrive, and only that accounting stays under "N per window" as any
 * server counts it, whatever the network's jitter (see `ArrivalSafe`). A policy whose `burst`
 * exceeds its limit describes a token bucket and is left as it is. Anything that is no policy
 * passes unchanged, for the pacer to reject with its own message.
 */
export function arrivalSafeByDefault(
  limits: PolicyInput | PolicyResolver | undefined,
): PolicyInput | PolicyResolver | undefined {
  if (typeof limits === 'function') {
    const resolved = new WeakMap<object, PolicyInput>();
    return (key) => {
      const input = limits(key);
      if (typeof input !== 'object' || input === null) return input;
      let mapped = resolved.get(input);
      if (mapped === undefined) {
        mapped = arrivalSafeInput(input);
        resolved.set(input, mapped);
      }
      return mapped;
    };
  }
  return limits === undefined ? limits : arrivalSafeInput(limits);
}

/**
 * With limits per unit every unit counts `arrival-safe` unless it names an algorithm: the
 * requests as above, the other units (tokens) as buckets charged at the answer (see
 * `arrivalSafeUnit`), as OpenAI and Anthropic count tokens, in O(1) memory per key.
 */
function arrivalSafeInput(input: PolicyInput): PolicyInput {
  if (!isUnitLimits(input)) return arrivalSafePolicies(input);
  const units: Record<string, Policy | readonly Policy[]> = {};
  for (const name of Object.keys(input)) {
    units[name] = arrivalSafePolicies(input[name] as Policy | readonly Policy[]);
  }
  return units;
}

function arrivalSafePolicies(input: Policy | readonly Policy[]): Policy | readonly Policy[] {
  return Array.isArray(input) ? input.map(arrivalSafe) : arrivalSafe(input as Policy);
}

function arrivalSafe(policy: Policy): Policy {
  if (typeof policy !== 'object' || policy === null || policy.algorithm !== undefined) {
    return policy;
  }
  const { burst, limit } = policy;
  if (burst !== undefined && !(burst <= limit)) return policy;
  return { ...policy, algorithm: 'arrival-safe' };
}
