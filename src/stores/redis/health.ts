import { backoffMs } from '../../core/backoff.js';
import { PacerError } from '../../pacer/errors.js';
import { onAbort } from '../../pacer/abort.js';

/** Shared stores' answer when the store has been out too long (fail-closed). */
export class StoreUnavailableError extends PacerError {
  override readonly name = 'StoreUnavailableError' as const;
  /** How long the store had been failing, in ms. */
  readonly outageMs: number;

  constructor(outageMs: number, options: { readonly cause?: unknown } = {}) {
    super(
      `[fetch-pacer] Redis has not answered for ${Math.round(outageMs)} ms (\`onError: 'fail-closed'\`): the task was not started. Check the connection, raise \`maxOutageMs\`, or choose \`onError: 'fail-open'\` to pace locally meanwhile.`,
      options,
    );
    this.outageMs = outageMs;
  }
}

export function isStoreUnavailableError(value: unknown): value is StoreUnavailableError {
  return (
    value instanceof StoreUnavailableError ||
    (typeof value === 'object' &&
      value !== null &&
      (value as { name?: unknown }).name === 'StoreUnavailableError')
  );
}

/** Our own timeout: the call may still run on the server later (it can only take, never give). */
class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * Redis replies that say "try again" (loading, busy, failover): an outage. Any other reply
 * (`ERR`, `WRONGTYPE`, `NOPERM`...) is a mistake to report, not to wait out.
 */
const TRANSIENT = /^(LOADING|BUSY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|READONLY|NOREPLICAS)\b/;
const REPLY = /^[A-Z][A-Z_]+ /;

/** True when `error` means "Redis is not there now" rather than "this call is wrong". */
export function isOutage(error: unknown): boolean {
  if (error instanceof TimeoutError) return true;
  const message = String((error as Error | undefined)?.message ?? error);
  return TRANSIENT.test(message) || !REPLY.test(message);
}

const now = () => performance.now();

/** A timer that does not hold a Node process open (browsers' numeric handles have no unref). */
function unref(timer: unknown): void {
  (timer as { unref?: () => void } | undefined)?.unref?.();
}

/** The probes' backoff: 50 ms doubling to 1 s, with equal jitter (core/backoff.ts). */
function probeBackoffMs(attempt: number): number {
  return backoffMs(attempt, 50, 1_000, Math.random);
}

/** A timer that never holds a Node process open, cancelled by `signal`. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal.throwIfAborted();
    const forget = onAbort(signal, () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
    const timer = setTimeout(() => {
      forget();
      resolve();
    }, ms);
    unref(timer);
  });
}

/**
 * Whether Redis is answering, shared by every call of a store: when it stops, calls wait for a
 * probe (one at a time, with backoff) instead of each hammering the server, and after
 * `maxOutageMs` of outage they fail at once until a probe gets through again.
 */
export class Health {
  /** `now()` when the outage began; undefined while Redis answers. */
  private since: number | undefined;
  private lastError: unknown;
  private probing: Promise<boolean> | undefined;
  private nextProbeAt = 0;
  private attempt = 0;

  constructor(
    private readonly timeoutMs: number,
    private readonly maxOutageMs: number,
    private readonly ping: () => Promise<unknown>,
  ) {}

  get down(): boolean {
    return this.since !== undefined;
  }

  up(): void {
    this.since = undefined;
    this.attempt = 0;
  }

  failed(error: unknown): void {
    this.lastError = error;
    if (this.since !== undefined) return;
    this.since = now();
    this.attempt = 0;
    this.nextProbeAt = this.since + probeBackoffMs(0);
  }

  /**
   * Awaits the reply of a call already sent. Past `timeoutMs` Redis counts as out: calls not yet
   * sent wait for a probe instead of piling up. With `giveUp` (fail-open, best-effort writes) this
   * call then rejects; otherwise it keeps waiting for this very reply (sending the script again
   * could take twice) until the outage is `maxOutageMs` old. `signal` aborts the wait.
   */
  watch<T>(work: Promise<T>, signal: AbortSignal, giveUp: boolean): Promise<T> {
    return new Promise((resolve, reject) => {
      let deadline: ReturnType<typeof setTimeout> | undefined;
      const finish = (settle: () => void) => {
        clearTimeout(slow);
        clearTimeout(deadline);
        forget();
        settle();
      };
      const forget = onAbort(signal, () => finish(() => reject(signal.reason)));
      const slow = setTimeout(() => {
        const timeout = new TimeoutError(`Redis did not answer in ${this.timeoutMs} ms`);
        this.failed(timeout);
        if (giveUp) {
          finish(() => reject(timeout));
          return;
        }
        const left = (this.since ?? now()) + this.maxOutageMs - now();
        deadline = setTimeout(() => finish(() => reject(this.unavailable())), Math.max(0, left));
        unref(deadline);
      }, this.timeoutMs);
      unref(slow);
      work.then(
        (value) => finish(() => resolve(value)),
        (error: unknown) => finish(() => reject(error)),
      );
    });
  }

  /** `work` bounded by `timeoutMs` (a probe: a late answer does no harm). */
  private timed<T>(work: Promise<T>): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          finish(() => reject(new TimeoutError(`Redis did not answer in ${this.timeoutMs} ms`))),
        this.timeoutMs,
      );
      unref(timer);
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        settle();
      };
      work.then(
        (value) => finish(() => resolve(value)),
        (error: unknown) => finish(() => reject(error)),
      );
    });
  }

  /** Starts a probe in the background if one is due (fail-open: to notice Redis is back). */
  probeSoon(): void {
    this.probe();
  }

  /**
   * Fail-closed: resolves once Redis answers again. Rejects with `StoreUnavailableError` once the
   * outage is older than `maxOutageMs` and the latest probe failed, or with `signal.reason`.
   */
  async waitUp(signal: AbortSignal): Promise<void> {
    while (this.since !== undefined) {
      signal.throwIfAborted();
      const late = now() - this.since >= this.maxOutageMs;
      const probe = this.probe();
      if (probe !== undefined) {
        const ok = await this.race(probe, signal);
        if (!ok && late) throw this.unavailable();
      } else if (late) {
        throw this.unavailable();
      } else {
        await sleep(Math.max(1, this.nextProbeAt - now()), signal);
      }
    }
  }

  private unavailable(): StoreUnavailableError {
    return new StoreUnavailableError(now() - (this.since ?? now()), { cause: this.lastError });
  }

  private race(probe: Promise<boolean>, signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve, reject) => {
      const forget = onAbort(signal, () => reject(signal.reason));
      probe.then((ok) => {
        forget();
        resolve(ok);
      });
    });
  }

  /** The probe running, or a new one if its backoff has passed; undefined while waiting. */
  private probe(): Promise<boolean> | undefined {
    if (this.probing !== undefined) return this.probing;
    if (this.since === undefined || now() < this.nextProbeAt) return undefined;
    const probing = this.timed(Promise.resolve().then(this.ping)).then(
      () => {
        this.up();
        return true;
      },
      (error: unknown) => {
        this.lastError = error;
        this.attempt++;
        this.nextProbeAt = now() + probeBackoffMs(this.attempt);
        return false;
      },
    );
    this.probing = probing;
    probing.then(() => {
      this.probing = undefined;
    });
    return probing;
  }
}
