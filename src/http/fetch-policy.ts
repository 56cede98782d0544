import { arrivalSafe } from '../core/algorithms/arrival-safe.js';
import { gcra } from '../core/algorithms/gcra.js';
import { tokenBucket } from '../core/algorithms/token-bucket.js';
import type { PolicyInput, PolicyResolver } from '../core/compile.js';
import type { Policy } from '../core/policy.js';
import { isUnitLimits } from '../core/compile.js';

/**
 * The paced fetch's own `limits` count `arrivalSafe` unless they name an algorithm: the server
 * counts requests when they arrive, and only that accounting stays under "N per window" as any
 * server counts it, whatever the network's jitter (see `ArrivalSafe`). A policy whose `burst`
 * exceeds its limit describes a token bucket and is left as it is. Anything that is no policy
 * passes unchanged, for the pacer to reject with its own message.
 */
export function arrivalSafeByDefault(
  limits: PolicyInput | PolicyResolver | undefined,
): PolicyInput | PolicyResolver | undefined {
  return mapInputs(limits, arrivalSafeInput);
}

/**
 * A store's `limits` (shared by every tab or process) count what a shared bucket can: a policy
 * that names no algorithm is a GCRA of its rate without a burst, one permit every `windowMs /
 * limit`. A store counts at the send and never hears the answers, so it cannot count
 * `arrivalSafe`; the default token bucket let its first window's burst and then its refill
 * through, twice the limit in one window, which HAProxy's sliding-window counter and nginx
 * refuse (three processes on one Redis store configured to the published limit: 17-32 and
 * 13-23 refusals in 300 calls, `npm run bench:servers:store`). Spaced, no window holds more than the limit as a server counts
 * at the send; the price is the first window's burst. A `burst` up to the limit says the
 * server takes bursts, and is kept. Limits per unit pass unchanged.
 */
export function spacedForStores(
  limits: PolicyInput | PolicyResolver | undefined,
): PolicyInput | PolicyResolver | undefined {
  return mapInputs(limits, (input) =>
    isUnitLimits(input) ? input : mapPolicies(input as Policy | readonly Policy[], spaced),
  );
}

/** `map` on `limits`, or on what a resolver returns (once per distinct input object). */
function mapInputs(
  limits: PolicyInput | PolicyResolver | undefined,
  map: (input: PolicyInput) => PolicyInput,
): PolicyInput | PolicyResolver | undefined {
  if (typeof limits === 'function') {
    const resolved = new WeakMap<object, PolicyInput>();
    return (key) => {
      const input = limits(key);
      if (typeof input !== 'object' || input === null) return input;
      let mapped = resolved.get(input);
      if (mapped === undefined) {
        mapped = map(input);
        resolved.set(input, mapped);
      }
      return mapped;
    };
  }
  return limits === undefined ? limits : map(limits);
}

/**
 * With limits per unit every unit counts `arrivalSafe` unless it names an algorithm: the
 * requests as above, the other units (tokens) as buckets charged at the answer (see
 * `arrivalSafeUnit`), as OpenAI and Anthropic count tokens, in O(1) memory per key.
 */
function arrivalSafeInput(input: PolicyInput): PolicyInput {
  if (!isUnitLimits(input)) return arrivalSafePolicies(input, true);
  const units: Record<string, Policy | readonly Policy[]> = {};
  Object.keys(input).forEach((name, index) => {
    units[name] = arrivalSafePolicies(input[name] as Policy | readonly Policy[], index === 0);
  });
  return units;
}

function arrivalSafePolicies(
  input: Policy | readonly Policy[],
  requests: boolean,
): Policy | readonly Policy[] {
  return mapPolicies(input, (policy) => arrivalSafeUnlessNamed(policy, requests));
}

function mapPolicies(
  input: Policy | readonly Policy[],
  map: (policy: Policy) => Policy,
): Policy | readonly Policy[] {
  return Array.isArray(input) ? input.map(map) : map(input as Policy);
}

/**
 * One permit at a time is a token bucket of 1, which admits what a GCRA without a burst admits:
 * its refill since the last take is counted over the window of the next ask, which the store
 * spreads by the round trip its clients told since (`spreadAt` in stores/bucket-state.ts), where
 * a GCRA's debt is set at the take: the permit taken before the first answer is spread too.
 */
function spaced(policy: Policy): Policy {
  if (typeof policy !== 'object' || policy === null || policy.algorithm !== undefined) {
    return policy;
  }
  const { burst, limit } = policy;
  if (burst !== undefined && burst > 1) {
    return burst <= limit ? { ...policy, algorithm: gcra } : policy;
  }
  return { ...policy, algorithm: tokenBucket, burst: 1 };
}

/**
 * `arrivalSafe` for a policy that names no algorithm. A `slidingLog` of the requests is counted
 * at arrival too, as the server keeps it: `arrivalSafe` with a burst of the whole limit (a permit
 * counts from its send until its answer, then for a window; any `limit` of them at once). Counted
 * at the send, jitter bunched arrivals past the log: 1-19 refusals through 5-60 ms of it from
 * real koa, fastify and rate-limiter-flexible. Told by its name: importing the `slidingLog` value
 * would put it in the paced fetch's bundle.
 */
function arrivalSafeUnlessNamed(policy: Policy, requests: boolean): Policy {
  if (typeof policy !== 'object' || policy === null) return policy;
  const { algorithm, burst, limit } = policy;
  if (requests && algorithm?.name === 'sliding-log') {
    return { ...policy, algorithm: arrivalSafe, burst: limit };
  }
  if (algorithm !== undefined || (burst !== undefined && !(burst <= limit))) return policy;
  return { ...policy, algorithm: arrivalSafe };
}
