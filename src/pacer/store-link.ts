import type { Decision } from '../core/decision.js';
import { unitLimits } from '../core/unit-limits.js';
import {
  type CompiledPolicy,
  type PolicyInput,
  type PolicyResolver,
  type PolicySummary,
  policyResolver,
} from '../core/compile.js';
import { longestWindow, type ResolvedPolicy } from '../core/policy.js';
import type { ServerSignal } from '../core/signal.js';
import {
  type Cost,
  noUnitsError,
  type UnitCosts,
  type UnitPolicy,
  unitVector,
} from '../core/units.js';
import { RoundTrips } from './round-trips.js';
import { StoreLevels } from './store-levels.js';
import { behind, projectFrom, splitUnits } from './projection.js';
import { report } from './snapshots.js';
import type { Store, StoreCall, StoreCost, StoreEvent } from './store-contract.js';

/** Most tasks of one key decided in one store call: bounds the work a lock or script holds. */
export const MAX_BATCH = 64;

/** The answers to one store call, in task order; synchronous from a synchronous store. */
export type Answers = readonly Decision[] | Promise<readonly Decision[]>;

/**
 * A pacer's link to its store: the key's policies for each call, the pacer's lifetime (aborted
 * on dispose), the store's events, and what it last said of each key (for `inspect`).
 */
export class StoreLink {
  private readonly limitsOf: (key: string) => CompiledPolicy;
  private readonly lifetime = new AbortController();
  private readonly unsubscribe: (() => void) | undefined;
  private readonly echoes = new StoreLevels();
  /** The key's recent round trips, told to the store with each call (`StoreCall.roundTripMs`). */
  private readonly roundTrips = new RoundTrips();

  constructor(
    readonly store: Store,
    limits: PolicyInput | PolicyResolver,
    onEvent: (event: StoreEvent) => void,
    /** The pacer's ticker. */
    private readonly now: () => number,
  ) {
    // A store that cannot count a static policy says so now, from createPacer.
    this.limitsOf = policyResolver(
      limits,
      'limits',
      (compiled, field) => checkStoreLimits(store, compiled, field),
      unitLimits.compile,
    );
    this.unsubscribe = store.subscribe?.((event) => {
      if (!this.lifetime.signal.aborted) onEvent(event);
    });
  }

  get synchronous(): boolean {
    return this.store.synchronous === true;
  }

  /**
   * `tryAcquire`: a take, or behind `queuedCost` permits of waiting tasks a denial with their
   * wait (it never jumps the line). Only a synchronous store can answer at once.
   */
  tryNow(
    key: string,
    cost: number,
    queuedCost: number | undefined,
    info: PolicySummary,
    now: number,
  ): Decision {
    if (!this.synchronous) {
      throw new TypeError(
        "[fetch-pacer] `tryAcquire` answers at once, and this pacer's store answers with a Promise. Use `await pacer.acquire({ key })` (with `mode: 'reject'` to fail instead of waiting).",
      );
    }
    const call = this.call(key);
    if (queuedCost === undefined) {
      const decision = answeredNow(this.store.take(key, this.costOf(key, cost), call));
      this.echoes.record(key, decision.remaining, now, info);
      return decision;
    }
    const total = queuedCost + cost;
    const fits = this.costOf(key, Math.min(total, info.capacity));
    const first = answeredNow(this.store.peek(key, fits, call));
    return behind(projectFrom(first, info, total));
  }

  /** Checks that the store can count `key`'s policy (a resolver's answer); throws if not. */
  prepare(key: string): void {
    this.limitsOf(key);
  }

  /**
   * Decides `costs` (tasks of `key` in line order) in one call: `takeMany` for several when the
   * store has it, else `take` for the first alone. A store that throws answers a rejection.
   */
  ask(key: string, costs: readonly StoreCost[], stopAtDenial: boolean): Answers {
    const { store } = this;
    try {
      const call = this.call(key);
      if (costs.length > 1 && store.takeMany !== undefined) {
        return store.takeMany(key, costs, stopAtDenial, call);
      }
      const answer = store.take(key, costs[0] as StoreCost, call);
      return isPromise(answer) ? answer.then((decision) => [decision]) : [answer];
    } catch (error) {
      return Promise.reject(error);
    }
  }

  peek(key: string, cost: StoreCost): Decision | Promise<Decision> {
    try {
      return this.store.peek(key, cost, this.call(key));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Shares a server block; best effort, its failure is reported, never thrown. */
  block(key: string, ms: number): void {
    this.quietly(() => this.store.block(key, ms, this.call(key)));
  }

  /**
   * Passes the server's word on to the store, as it came; best effort, like `block`. An answer
   * that says when its request was sent (`sentAt`, relative) times the key's round trip.
   */
  observe(key: string, signal: ServerSignal): void {
    const { sentAt } = signal as { readonly sentAt?: number };
    if (sentAt !== undefined && sentAt < 0) {
      this.roundTrips.heard(
        key,
        -sentAt,
        this.now(),
        2 * longestWindow(storeLimitsOf(this.limitsOf(key)).limits),
      );
    }
    const { store } = this;
    if (store.observe !== undefined) {
      this.quietly(() => store.observe?.(key, signal, this.call(key)));
    }
  }

  /**
   * `cost` as the store of `key` is asked for it: a number for a key of one unit; for limits
   * per unit one amount per policy, each its unit's (a number is in the main unit). Throws, as
   * the limiter does, for a unit the key does not count.
   */
  costOf(key: string, cost: Cost): StoreCost {
    const { units } = this.limitsOf(key);
    if (units === undefined) {
      if (typeof cost !== 'number') throw noUnitsError(key, 'cost');
      return cost;
    }
    return perPolicy(units, typeof cost === 'number' ? [cost] : unitVector(units, cost, 'cost'));
  }

  /**
   * `maxWaitMs` for a key with limits per unit (see `projectUnits`): of `totals`, the amounts
   * per unit of the tasks ahead and the task's own, what a peek can ask for (each policy's
   * capacity), and the ms the slowest policy needs for the rest at its sustained rate.
   */
  unitsFit(
    key: string,
    totals: Readonly<Record<string, number>>,
  ): { readonly fits: StoreCost; readonly restMs: number } {
    const { units = [] } = this.limitsOf(key);
    const summaries: Record<string, PolicySummary> = {};
    for (const unit of units) summaries[unit.name] = unit.compiled;
    const { fits, restMs } = splitUnits(summaries, (name) => totals[name] ?? 0);
    return {
      fits: perPolicy(
        units,
        units.map((unit) => fits[unit.name] ?? 0),
      ),
      restMs,
    };
  }

  /**
   * `pacer.adjust` of a key with limits per unit: the store charges or gives back `delta`
   * (`Store.adjust`; `reservedAt`: when the reserve was taken, ms from now); best effort, like
   * `block`. A store without `adjust` keeps what each request was paced on.
   */
  adjust(key: string, delta: UnitCosts, reservedAt?: number): void {
    const { units } = this.limitsOf(key);
    if (units === undefined) throw noUnitsError(key, 'delta');
    const amounts = unitVector(units, delta, 'delta', true);
    const { store } = this;
    if (store.adjust === undefined || amounts.every((amount) => amount === 0)) return;
    const each = perPolicy(units, amounts);
    this.quietly(() => store.adjust?.(key, each, this.call(key), reservedAt));
  }

  record(key: string, decision: Decision, at: number, info: PolicySummary): void {
    this.echoes.record(key, decision.remaining, at, info);
  }

  level(key: string, now: number, info: PolicySummary): number {
    return this.echoes.level(key, now, info);
  }

  /** The pacer is disposed: stop listening, and let the store drop waits and retries. */
  close(): void {
    this.unsubscribe?.();
    this.lifetime.abort();
  }

  /** What the store is told with each call of `key`. */
  private call(key: string): StoreCall {
    const roundTripMs = this.roundTrips.of(key, this.now());
    return { ...storeLimitsOf(this.limitsOf(key)), roundTripMs, signal: this.lifetime.signal };
  }

  private quietly(work: () => void | Promise<void>): void {
    try {
      const result = work();
      if (isPromise(result)) result.catch(report);
    } catch (error) {
      report(error);
    }
  }
}

/** A key's policies as a store gets them (see `StoreCall`): every unit's, and each one's unit. */
export interface StoreLimits {
  readonly limits: readonly ResolvedPolicy[];
  readonly units?: readonly string[];
}

const storeLimits = new WeakMap<CompiledPolicy, StoreLimits>();

/**
 * The policies of `compiled` as a store counts them: one flat, frozen list (the main unit's
 * first) with the unit of each, for limits per unit; the policies themselves otherwise. The
 * same object for the same compiled policy, so a store may cache what it derives from it.
 */
export function storeLimitsOf(compiled: CompiledPolicy): StoreLimits {
  let found = storeLimits.get(compiled);
  if (found === undefined) {
    const { units } = compiled;
    found =
      units === undefined
        ? { limits: compiled.policies }
        : {
            limits: Object.freeze(units.flatMap((unit) => unit.compiled.policies)),
            units: Object.freeze(
              units.flatMap((unit) => unit.compiled.policies.map(() => unit.name)),
            ),
          };
    storeLimits.set(compiled, found);
  }
  return found;
}

/**
 * Throws unless `store` can count `compiled` (named `field` in errors): an `arrival-safe` unit
 * counts each request until its answer, in the pacer's own memory only; the store's own
 * `check` says what else it cannot count.
 */
function checkStoreLimits(store: Store, compiled: CompiledPolicy, field: string): void {
  const untilAnswer = compiled.units?.find((unit) => unit.untilAnswer === true);
  if (untilAnswer !== undefined) {
    throw new TypeError(
      `[fetch-pacer] \`${field}.${untilAnswer.name}\` counts with \`arrivalSafe\`, which counts until each answer in the pacer's own memory only: a shared store counts with \`tokenBucket\` or \`gcra\`. Name one of those, or leave out \`store\`.`,
    );
  }
  store.check?.(storeLimitsOf(compiled).limits);
}

/** One amount per unit (`amounts`, in the order of `units`) as one per policy of each unit. */
function perPolicy(units: readonly UnitPolicy[], amounts: readonly number[]): number[] {
  return units.flatMap((unit, index) => unit.compiled.policies.map(() => amounts[index] ?? 0));
}

/** The value a store that says it is synchronous answered; a Promise breaks that promise. */
function answeredNow(answer: Decision | Promise<Decision>): Decision {
  if (isPromise(answer)) {
    answer.catch(() => {});
    throw new TypeError(
      '[fetch-pacer] A store with `synchronous: true` answered with a Promise: set `synchronous` only on a store whose every answer is a plain value.',
    );
  }
  return answer;
}

export function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** What to do with the tasks of one store call once it answered (see `sortAnswers`). */
export interface Sorted<T> {
  /** Granted and still waiting: start them, in this order. */
  readonly starts: T[];
  /** Denied in reject mode and still waiting: reject each with its decision. */
  readonly rejects: [T, Decision][];
  /** Denied in queue mode: the first such task still waiting, and its wait. */
  readonly waitFor: T | undefined;
  readonly retryAfterMs: number;
  /** The longest server block the answers reported, in ms from now (0: none). */
  readonly blockedMs: number;
}

/**
 * Sorts a store's answers for `batch` (tasks in line order; `answers` may be a prefix). A task
 * that left meanwhile (aborted, rejected by `maxWaitMs`) is skipped: a grant for it goes unused,
 * as the store has no way to give a permit back. So does a grant that comes back while the
 * pacer is paused or the key blocked: a task never starts then.
 */
export function sortAnswers<T extends { readonly state: string }>(
  batch: readonly T[],
  answers: readonly Decision[],
  reject: boolean,
  hold: boolean,
): Sorted<T> {
  const starts: T[] = [];
  const rejects: [T, Decision][] = [];
  let waitFor: T | undefined;
  let retryAfterMs = 0;
  let blockedMs = 0;
  const count = Math.min(batch.length, answers.length);
  for (let index = 0; index < count; index++) {
    const task = batch[index] as T;
    const decision = answers[index] as Decision;
    if (decision.reason === 'blocked' && decision.retryAfterMs > blockedMs) {
      blockedMs = decision.retryAfterMs;
    }
    if (task.state !== 'queued') continue;
    if (decision.allowed) {
      if (!hold && blockedMs === 0) starts.push(task);
    } else if (reject) {
      rejects.push([task, decision]);
    } else {
      // Nothing behind a waiting task may start: a store that decided past it is not heard.
      waitFor = task;
      retryAfterMs = decision.retryAfterMs;
      break;
    }
  }
  return { starts, rejects, waitFor, retryAfterMs, blockedMs };
}
