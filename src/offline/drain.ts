import { parseRetryAfter } from '../http/retry-after.js';
import { isQueueFullError, isRateLimitError } from '../pacer/errors.js';
import { call, type Entries } from './entries.js';
import { OutboxCorruptEntryError, OutboxSendError } from './errors.js';
import { MAX_TIMER_MS, type ResolvedOutboxOptions } from './options.js';
import { backoffMs, verdictOf } from './outcome.js';
import { toRequest } from './record.js';
import type { OutboxState } from './state.js';
import type { OutboxEntry } from './types.js';

/** Why an attempt got no definitive answer. */
interface Failure {
  readonly status: number | undefined;
  /** The server's or the pacer's own wait, in ms, if it named one. */
  readonly waitMs: number | undefined;
  /** Counts as an attempt (backoff, `maxAttempts`); a local pacer refusal does not. */
  readonly counts: boolean;
  readonly network: boolean;
  readonly cause?: unknown;
}

/**
 * One flush pass of the tab that holds the lock: read the store, then one lane per key whose
 * first entry is due, all at once (the paced fetch paces them together), until nothing is due.
 */
export class Drain {
  constructor(
    private readonly options: ResolvedOutboxOptions,
    private readonly entries: Entries,
    private readonly state: OutboxState,
    private readonly signal: AbortSignal,
    private readonly active: () => boolean,
  ) {}

  /** Runs until nothing is due, the outbox goes offline or closes. Rejects on storage failure. */
  async run(resetNetworkWaits: boolean): Promise<void> {
    let entries = await this.entries.load(true, resetNetworkWaits);
    while (this.active()) {
      const now = this.options.clock.now();
      const lanes = new Map<string, OutboxEntry[]>();
      for (const entry of entries) {
        const lane = lanes.get(entry.key);
        if (lane === undefined) lanes.set(entry.key, [entry]);
        else lane.push(entry);
      }
      const due = [...lanes.values()].filter(
        (lane) => (lane[0] as OutboxEntry).nextAttemptAt <= now,
      );
      if (due.length === 0) return;
      await Promise.all(due.map((lane) => this.lane(lane)));
      entries = await this.entries.load(true);
    }
  }

  /**
   * Sends one key's entries one at a time, in order. It stops at an entry that must wait (so
   * the later ones of its key wait too), and when its list runs out it reads the store again
   * for entries of its key enqueued since.
   */
  private async lane(first: readonly OutboxEntry[]): Promise<void> {
    let queue = first;
    const key = (first[0] as OutboxEntry).key;
    for (;;) {
      let last = -1;
      for (const entry of queue) {
        if (!this.active()) return;
        last = entry.seq;
        if (this.entries.expired(entry, this.options.clock.now())) {
          await this.entries.remove(entry);
          this.entries.drop({ reason: 'expired', entry });
          continue;
        }
        if (entry.nextAttemptAt > this.options.clock.now()) return;
        if (!(await this.send(entry))) return;
      }
      const fresh = await this.entries.load(true);
      queue = fresh.filter((entry) => entry.key === key && entry.seq > last);
      if (queue.length === 0) return;
    }
  }

  /** One attempt. True when the entry left the outbox, false when it stays. */
  private async send(entry: OutboxEntry): Promise<boolean> {
    let request: Request;
    try {
      request = toRequest(entry, this.signal);
    } catch (error) {
      // Valid field by field, yet no Request can be made of it (a header value with a newline).
      const problem = `it cannot be made into a request (${(error as Error).message})`;
      await this.entries.remove(entry);
      const corrupt = new OutboxCorruptEntryError(this.options.name, entry.seq, problem);
      this.state.set({ lastError: corrupt });
      this.entries.drop({ reason: 'corrupt', seq: entry.seq, record: entry, error: corrupt });
      return true;
    }
    this.state.set({ inFlight: this.state.current.inFlight + 1 });
    try {
      let response: Response;
      try {
        response = await this.options.fetch(request);
      } catch (error) {
        // Aborted by `close()`: the entry stays exactly as it was.
        if (this.signal.aborted) return false;
        return await this.failed(entry, failureOf(error, this.options.retryDelayMs));
      }
      const verdict = verdictOf(response.status);
      if (verdict === 'retry') {
        const waitMs = parseRetryAfter(
          response.headers.get('retry-after'),
          this.options.clock.now(),
        );
        response.body?.cancel().catch(() => {});
        return await this.failed(entry, {
          status: response.status,
          waitMs,
          counts: true,
          network: false,
        });
      }
      await this.entries.remove(entry);
      if (verdict === 'sent') {
        this.state.set({ sent: this.state.current.sent + 1, lastError: undefined });
        call(this.options.onSent, entry, response);
      } else {
        this.state.set({ rejected: this.state.current.rejected + 1 });
        call(this.options.onRejected, entry, response);
      }
      return true;
    } finally {
      this.state.set({ inFlight: this.state.current.inFlight - 1 });
    }
  }

  private async failed(entry: OutboxEntry, failure: Failure): Promise<boolean> {
    const { clock, maxAttempts, name } = this.options;
    const attempts = failure.counts ? entry.attempts + 1 : entry.attempts;
    const backoff = failure.counts ? backoffMs(attempts, this.options) : 0;
    // At least 1 ms: an entry that failed is never due again in the same instant.
    const waitMs = Math.min(MAX_TIMER_MS, Math.max(1, backoff, failure.waitMs ?? 0));
    const error = new OutboxSendError(name, entry, failure.status, waitMs, failure.cause);
    const updated: OutboxEntry = Object.freeze({
      ...entry,
      attempts,
      nextAttemptAt: clock.now() + waitMs,
      lastFailure: failure.network ? 'network' : 'status',
    });
    if (failure.counts && attempts >= maxAttempts) {
      await this.entries.remove(entry);
      this.state.set({ lastError: error });
      this.entries.drop({ reason: 'attempts', entry: updated, error });
      return true;
    }
    await this.entries.update(updated);
    this.state.set({ lastError: error });
    return false;
  }
}

/** What a rejected fetch means: a local pacer refusal waits without counting; anything else
 * (a network error, a disposed pacer) counts as an attempt that failed in the network. */
function failureOf(error: unknown, retryDelayMs: number): Failure {
  if (isRateLimitError(error)) {
    return {
      status: undefined,
      waitMs: error.retryAfterMs,
      counts: false,
      network: false,
      cause: error,
    };
  }
  if (isQueueFullError(error)) {
    return { status: undefined, waitMs: retryDelayMs, counts: false, network: false, cause: error };
  }
  return { status: undefined, waitMs: undefined, counts: true, network: true, cause: error };
}
