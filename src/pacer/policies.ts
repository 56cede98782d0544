import type { PolicyInput, PolicyResolver } from '../core/limiter.js';
import { type Policy, type ResolvedPolicy, resolvePolicy } from '../core/policy.js';

/** A key's policies as a store counts them: validated, defaults filled in, frozen. */
export type Limits = readonly ResolvedPolicy[];

/**
 * The policies of each key for a store, with one frozen array per distinct policy input, so
 * the store can cache what it derives from it. `check` (the store's) runs once per array.
 */
export function limitsResolver(
  limits: PolicyInput | PolicyResolver,
  check: ((limits: Limits) => void) | undefined,
): (key: string) => Limits {
  const compile = (input: PolicyInput, field: string): Limits => {
    const list = Array.isArray(input) ? (input as readonly Policy[]) : [input as Policy];
    const resolved = Object.freeze(
      list.map((policy, index) =>
        resolvePolicy(policy, Array.isArray(input) ? `${field}[${index}]` : field),
      ),
    );
    check?.(resolved);
    return resolved;
  };
  if (typeof limits !== 'function') {
    const fixed = compile(limits, 'limits');
    return () => fixed;
  }
  const compiled = new WeakMap<object, Limits>();
  return (key) => {
    const input = limits(key);
    const field = `limits('${key}')`;
    if (typeof input !== 'object' || input === null) return compile(input, field);
    let found = compiled.get(input);
    if (found === undefined) {
      found = compile(input, field);
      compiled.set(input, found);
    }
    return found;
  };
}
