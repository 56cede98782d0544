import { type Decision, deny, wholeMs } from '../core/decision.js';
import type { LearnedPolicy, PolicySummary } from '../core/limiter.js';
import type { PacerLimiter } from '../core/pacer-limiter.js';
import { unitsOf as unitsOfKey } from '../core/unit-limits.js';
import type { UnitCosts, UnitInspection } from '../core/units.js';
import type { KeyInspection } from './types.js';

/**
 * When `total` permits of `key` (the tasks ahead of a task plus its own) would all have been
 * granted, as a Decision: allowed if they all fit now, else denied with that wait.
 *
 * `peek` answers for what fits in the capacity (it knows the current credit and any server
 * block); the sustained rate covers the rest. That is exact for a token bucket or GCRA with a
 * steady backlog (each task takes its permits as soon as they exist, so the bucket never
 * refills past what the line needs) and an estimate for the window algorithms. It ignores
 * `concurrency`, tasks of higher priority that arrive later, and server blocks to come.
 */
export function project(
  limiter: PacerLimiter,
  info: PolicySummary,
  key: string,
  total: number,
): Decision {
  return projectFrom(limiter.peek(key, Math.min(total, info.capacity)), info, total);
}

/**
 * `project` for a task with amounts per unit (`own`) behind the `ahead` amounts of the tasks
 * before it: when they would all have been granted in every unit. The peek covers what fits in
 * each unit's capacity, each unit's sustained rate the rest, and the slowest unit decides (a
 * line of long prompts waits for its tokens, not its requests).
 */
export function projectUnits(
  limiter: PacerLimiter,
  key: string,
  ahead: Readonly<Record<string, number>>,
  own: UnitCosts,
  units: Readonly<Record<string, UnitInspection>> | undefined = unitsOfKey(limiter, key),
): Decision {
  if (units === undefined) return limiter.peek(key, own); // throws: the key counts one unit
  const { fits, restMs } = splitUnits(units, (name) => (ahead[name] ?? 0) + (own[name] ?? 0));
  return projectRest(limiter.peek(key, fits), restMs);
}

/**
 * Of the amounts per unit `totalOf` gives, what a peek can ask for (each unit's capacity) and
 * the ms the slowest unit needs for the rest at its sustained rate: the two halves of a
 * projection for limits per unit, in the pacer's memory or a store's.
 */
export function splitUnits(
  units: Readonly<Record<string, Pick<UnitInspection, 'capacity' | 'ratePerMs'>>>,
  totalOf: (unit: string) => number,
): { readonly fits: Record<string, number>; readonly restMs: number } {
  const fits: Record<string, number> = Object.create(null);
  let restMs = 0;
  for (const name of Object.keys(units)) {
    const { capacity, ratePerMs } = units[name] as UnitInspection;
    const total = totalOf(name);
    const fit = Math.min(total, Math.floor(capacity));
    fits[name] = fit;
    if (total > fit) restMs = Math.max(restMs, (total - fit) / ratePerMs);
  }
  return { fits, restMs };
}

/**
 * A projection from `first`, what a peek for the amounts that fit each unit's capacity
 * answered, and `restMs`, the time the slowest unit needs for the rest at its sustained rate.
 */
export function projectRest(first: Decision, restMs: number): Decision {
  if (first.allowed && restMs === 0) return first;
  const wait = first.retryAfterMs + wholeMs(restMs);
  const remaining = first.allowed ? 0 : first.remaining;
  return deny(first.reason ?? 'rate', wait, remaining, Math.max(first.resetMs, wait), first.limit);
}

/**
 * `project` from `first`, what a peek for `min(total, capacity)` permits answered (a store's
 * peek, when the state is not local).
 */
export function projectFrom(first: Decision, info: PolicySummary, total: number): Decision {
  const fits = Math.min(total, info.capacity);
  if (first.allowed && total === fits) return first;
  const wait = first.retryAfterMs + wholeMs((total - fits) / info.ratePerMs);
  // A denial reports the whole permits there are now; an allowed peek reported them minus `fits`.
  const remaining = first.allowed ? first.remaining + fits : first.remaining;
  return deny(first.reason ?? 'rate', wait, remaining, Math.max(first.resetMs, wait), first.limit);
}

/**
 * The answer to `tryAcquire` while tasks of `key` wait: denied (it must not jump the line), with
 * the wait behind all `total` permits of the line and its own. At least 1 ms, even when the line
 * waits only for a concurrency slot and the permits exist.
 */
export function denyBehind(
  limiter: PacerLimiter,
  info: PolicySummary,
  key: string,
  total: number,
): Decision {
  return behind(project(limiter, info, key, total));
}

/** A projection as the denial `tryAcquire` answers behind waiting tasks: at least 1 ms. */
export function behind(projected: Decision): Decision {
  const { retryAfterMs, remaining, resetMs, limit, reason = 'rate' } = projected;
  return deny(reason, Math.max(1, retryAfterMs), remaining, resetMs, limit);
}

/** `inspect(key)` at ticker time `at`; `head` is the task of the key that goes next, if any. */
export function inspectKey(
  limiter: PacerLimiter,
  info: PolicySummary & { readonly learned?: LearnedPolicy },
  key: string,
  at: number,
  queued: number,
  head: { readonly cost: number; readonly units: UnitCosts | undefined } | undefined,
): KeyInspection {
  const inspection = {
    at,
    level: limiter.level(key),
    capacity: info.capacity,
    limit: info.limit,
    queued,
    blockedUntil: limiter.feedback.blockedUntil(key),
    ...(info.learned === undefined ? {} : { learned: info.learned }),
    ...unitsOf(limiter, key),
  };
  if (head === undefined) return Object.freeze(inspection);
  const nextStartAt = at + limiter.peek(key, head.units ?? head.cost).retryAfterMs;
  return Object.freeze({ ...inspection, nextStartAt });
}

/** `{ units }` for a key with limits per unit, else nothing (a plain key's inspection is unchanged). */
function unitsOf(limiter: PacerLimiter, key: string): Pick<KeyInspection, 'units'> {
  const units = unitsOfKey(limiter, key);
  return units === undefined ? {} : { units };
}
