import { createPacedFetch, type PacedFetchOptions } from '../http/paced-fetch.js';
import type { Pacer } from '../pacer/types.js';
import { type PacerSource, pacerOf } from './source.js';

/** Per-request pacing, overriding what the paced fetch would derive from the request. */
export interface Pacing {
  /** The rate-limit key. @default the request's origin */
  readonly key?: string | undefined;
  /** Permits the request takes. @default 1 */
  readonly cost?: number | undefined;
  /** Higher starts first among the waiting requests of its key. @default 0 */
  readonly priority?: number | undefined;
}

/** Where a paced request is. Each change is reported once, in this order, per attempt. */
export type RequestProgress =
  | {
      /** Waiting for a permit (or a concurrency slot). */
      readonly state: 'queued';
      /** Pacer-clock ms at which it is projected to start; undefined while unknown. */
      readonly startAt: number | undefined;
    }
  | {
      /** Waiting because the server said so (`Retry-After`, or a backoff after a 429/503). */
      readonly state: 'blocked';
      /** Pacer-clock ms at which the server's block ends. */
      readonly until: number;
    }
  | { readonly state: 'started' };

export interface SendOptions extends Pacing {
  readonly onProgress?: ((progress: RequestProgress) => void) | undefined;
}

/** The statuses a default paced fetch treats as a refusal (it blocks the key, then retries). */
const REFUSALS: ReadonlySet<number> = new Set([429, 503]);

/**
 * Sends `request` through the source's pacer, with the paced fetch's Retry-After and RateLimit
 * handling, reporting its progress.
 *
 * Interim: the pacer does not yet report per-task progress, and a paced fetch takes no
 * per-call pacing. So this builds a paced fetch over the source's pacer for each request, with
 * `pacing` as its key/cost/priority and a tapped inner fetch that tells when the request
 * actually starts; while the request waits, its state is derived from `pacer.inspect(key)`.
 * A given paced fetch thus lends its pacer, not its other options (`retry`, `key`, `fetch`).
 * Once the pacer reports progress and the paced fetch takes `init.pacing`, this becomes
 * `source(request, { pacing: { ...pacing, onProgress } })`.
 */
export function sendPaced(
  source: PacerSource,
  request: Request,
  options: SendOptions = {},
): Promise<Response> {
  const pacer = pacerOf(source);
  const { key = originOf(request), cost, priority, onProgress } = options;
  const fetchOptions: { -readonly [K in keyof PacedFetchOptions]: PacedFetchOptions[K] } = {
    pacer,
    key: () => key,
  };
  if (cost !== undefined) fetchOptions.cost = () => cost;
  if (priority !== undefined) fetchOptions.priority = () => priority;
  if (onProgress === undefined) {
    fetchOptions.fetch = (sent) => globalThis.fetch(sent);
    return createPacedFetch(fetchOptions)(request);
  }
  const tracker = new ProgressTracker(pacer, key, onProgress);
  fetchOptions.fetch = async (sent) => {
    tracker.started();
    const response = await globalThis.fetch(sent);
    if (REFUSALS.has(response.status)) tracker.refused();
    return response;
  };
  const unsubscribe = pacer.subscribe(tracker.update);
  // Tasks of the key already waiting are ahead of this one (or behind, if of lower priority:
  // then the count only errs on the side of "start time unknown").
  tracker.enqueued(pacer.inspect(key).queued);
  const response = createPacedFetch(fetchOptions)(request);
  tracker.update();
  return response.finally(unsubscribe);
}

/** Derives a waiting request's progress from the pacer's view of its key. */
class ProgressTracker {
  private phase: 'waiting' | 'sending' | 'refused' = 'waiting';
  /** Most tasks of the key that can be ahead of ours: once 0, ours is next. */
  private ahead = Number.POSITIVE_INFINITY;
  private last: RequestProgress | undefined;

  constructor(
    private readonly pacer: Pacer,
    private readonly key: string,
    private readonly report: (progress: RequestProgress) => void,
  ) {}

  enqueued(ahead: number): void {
    this.ahead = ahead;
  }

  started(): void {
    this.phase = 'sending';
    this.emit({ state: 'started' });
  }

  /** A 429/503: the paced fetch now blocks the key and, if it may, queues a retry in front. */
  refused(): void {
    this.phase = 'refused';
    this.ahead = 0;
  }

  /** On every change of the pacer: where does our waiting request stand now? */
  readonly update = (): void => {
    if (this.phase === 'sending') return;
    const inspection = this.pacer.inspect(this.key);
    const { blockedUntil, nextStartAt, queued, at } = inspection;
    if (this.phase === 'refused') {
      // Still "loading" until the paced fetch has acted on the refusal (blocked the key).
      if (blockedUntil === undefined) return;
      this.phase = 'waiting';
    }
    if (blockedUntil !== undefined) {
      this.emit({ state: 'blocked', until: blockedUntil });
      return;
    }
    this.ahead = Math.min(this.ahead, Math.max(0, queued - 1));
    const known = this.ahead === 0 && nextStartAt !== undefined && nextStartAt > at;
    this.emit({ state: 'queued', startAt: known ? nextStartAt : undefined });
  };

  private emit(progress: RequestProgress): void {
    if (this.last !== undefined && sameProgress(this.last, progress)) return;
    this.last = progress;
    this.report(progress);
  }
}

function sameProgress(a: RequestProgress, b: RequestProgress): boolean {
  if (a.state === 'queued' && b.state === 'queued') return a.startAt === b.startAt;
  if (a.state === 'blocked' && b.state === 'blocked') return a.until === b.until;
  return a.state === b.state && a.state === 'started';
}

/** The paced fetch's default key. */
function originOf(request: Request): string {
  return new URL(request.url).origin;
}
