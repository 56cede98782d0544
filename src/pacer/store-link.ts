import type { Decision } from '../core/decision.js';
import {
  type CompiledPolicy,
  type PolicyInput,
  type PolicyResolver,
  type PolicySummary,
  policyResolver,
} from '../core/compile.js';
import type { ServerSignal } from '../core/signal.js';
import { StoreLevels } from './store-levels.js';
import { behind, projectFrom } from './projection.js';
import { report } from './snapshots.js';
import type { Store, StoreCall, StoreEvent } from './store-contract.js';

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

  constructor(
    readonly store: Store,
    limits: PolicyInput | PolicyResolver,
    onEvent: (event: StoreEvent) => void,
  ) {
    // A store that cannot count a static policy says so now, from createPacer.
    // Always a check, even for a store without its own: limits per unit are refused there.
    this.limitsOf = policyResolver(limits, 'limits', (policies) => store.check?.(policies));
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
      const decision = answeredNow(this.store.take(key, cost, call));
      this.echoes.record(key, decision.remaining, now, info);
      return decision;
    }
    const total = queuedCost + cost;
    const first = answeredNow(this.store.peek(key, Math.min(total, info.capacity), call));
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
  ask(key: string, costs: readonly number[], stopAtDenial: boolean): Answers {
    const { store } = this;
    try {
      const call = this.call(key);
      if (costs.length > 1 && store.takeMany !== undefined) {
        return store.takeMany(key, costs, stopAtDenial, call);
      }
      const answer = store.take(key, costs[0] as number, call);
      return isPromise(answer) ? answer.then((decision) => [decision]) : [answer];
    } catch (error) {
      return Promise.reject(error);
    }
  }

  peek(key: string, cost: number): Decision | Promise<Decision> {
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

  /** Passes the server's word on to the store, as it came; best effort, like `block`. */
  observe(key: string, signal: ServerSignal): void {
    const { store } = this;
    if (store.observe !== undefined) {
      this.quietly(() => store.observe?.(key, signal, this.call(key)));
    }
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

  private call(key: string): StoreCall {
    return { limits: this.limitsOf(key).policies, signal: this.lifetime.signal };
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
