import type { Pacer } from '../pacer/types.js';
import { abortReason, isHttpError } from './errors.js';
import type { RequestInput } from './fingerprint.js';
import { type Parse, parseResponse } from './parse.js';
import type { Change } from './request-state.js';
import { anySignal, signalOf } from './signals.js';
import { fetchOf, type PacerSource } from './source.js';
import type { Pacing } from './use-paced-fetch.js';

/** Everything one run needs, fixed when it starts. */
export interface RunSpec<T> {
  readonly input: RequestInput;
  readonly init: RequestInit | undefined;
  readonly source: PacerSource;
  readonly pacer: Pacer;
  /** The request's fingerprint: which request the run's changes belong to. */
  readonly request: string;
  /** The hook's `key`, `cost` and `priority`; the run adds its own `onProgress`. */
  readonly pacing: Omit<Pacing, 'onProgress'>;
  readonly parse: Parse<T>;
}

/**
 * Runs one request at a time for a hook. Starting a run stops the previous one: it is aborted
 * (it leaves the pacer's queue, or its fetch is cancelled) and nothing it reports afterwards
 * reaches the hook. So a changed input, a refetch and an unmount never race.
 */
export class RequestRunner<T> {
  private run = 0;
  private controller: AbortController | undefined;
  private settle: (() => void) | undefined;
  /** A debounced start still waiting for its time, and what its caller awaits. */
  private pending:
    | { readonly timer: ReturnType<typeof setTimeout>; readonly resolve: () => void }
    | undefined;

  constructor(private readonly report: (spec: RunSpec<T>, change: Change<T>) => void) {}

  /**
   * `start(spec)` once `delayMs` pass with no other call (a trailing debounce, for search as you
   * type): a start still waiting is dropped, having sent nothing, and the run in progress is
   * left alone until the new one starts (which stops it, as `start` does). Resolves when the
   * run settles, or when it is dropped or stopped before it starts.
   */
  startAfter(spec: RunSpec<T>, delayMs: number): Promise<void> {
    this.cancelPending();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.pending = undefined;
        void this.start(spec).then(resolve);
      }, delayMs);
      this.pending = { timer, resolve };
    });
  }

  /** Drops the debounced start still waiting, if any; the run in progress goes on. */
  cancelPending(): boolean {
    const pending = this.pending;
    if (pending === undefined) return false;
    this.pending = undefined;
    clearTimeout(pending.timer);
    pending.resolve();
    return true;
  }

  /** Stops the current run and starts `spec`; resolves when that run settles or is stopped. */
  start(spec: RunSpec<T>): Promise<void> {
    this.stop();
    const run = this.run;
    const controller = new AbortController();
    this.controller = controller;
    return new Promise<void>((resolve) => {
      this.settle = resolve;
      // A microtask later, so that StrictMode's mount, unmount and mount again (one turn) stops
      // this run before it sends anything: exactly one request goes out, not two.
      queueMicrotask(() => {
        if (run !== this.run) return;
        void this.execute(run, spec, controller.signal).finally(() => {
          if (run === this.run) {
            this.controller = undefined;
            this.settle = undefined;
          }
          resolve();
        });
      });
    });
  }

  /** Stops the current run and any debounced start. Returns whether either was in progress. */
  stop(why = 'The request changed, or its component unmounted.'): boolean {
    const cancelled = this.cancelPending();
    this.run++;
    const controller = this.controller;
    this.controller = undefined;
    controller?.abort(abortReason(why));
    const settle = this.settle;
    this.settle = undefined;
    settle?.();
    return controller !== undefined || cancelled;
  }

  private async execute(run: number, spec: RunSpec<T>, signal: AbortSignal): Promise<void> {
    const report = (change: Change<T>) => {
      if (run === this.run) this.report(spec, change);
    };
    const own = signalOf(spec.input, spec.init);
    let response: Response | undefined;
    let settled = false;
    try {
      // The source's own paced fetch, as it is: its key, retry and fetch options hold. Each of
      // its attempts reports through `onProgress`, so a retried 429 shows `blocked` in between.
      response = await fetchOf(spec.source)(spec.input, {
        ...spec.init,
        signal: anySignal([signal, own]),
        pacing: {
          ...spec.pacing,
          onProgress: (progress) => {
            if (!settled) report({ kind: 'progress', progress });
          },
        },
      });
      settled = true;
      report({ kind: 'success', data: await parseResponse(spec.parse, response), response });
    } catch (error) {
      settled = true;
      if (run !== this.run) return;
      // The caller's own signal aborted it: like `abort()`, not a failure.
      if (own?.aborted === true) report({ kind: 'aborted' });
      else
        report({ kind: 'error', error, response: isHttpError(error) ? error.response : response });
    }
  }
}
