import type { Decision } from '../core/decision.js';

const BRAND: unique symbol = Symbol.for('fetch-pacer.PacerError') as never;

/**
 * The base of every error the pacer (and the paced fetch built on it) rejects with.
 *
 * `name` is typed `string` here, not a literal, so that each subclass can narrow it to its own
 * literal (`'RateLimitError'`); a literal in the base would forbid that.
 */
export class PacerError extends Error {
  override readonly name: string = 'PacerError';
  /**
   * Types a PacerError apart from a plain Error (they would be the same shape otherwise), so that
   * `isPacerError(error)` on a value typed `Error` leaves `Error` in its false branch, not `never`.
   */
  declare readonly [BRAND]: true;

  constructor(message: string, options?: { readonly cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
  }

  static {
    // Inherited by every subclass, in any layer (the outbox's errors too), and `Symbol.for` is
    // the same symbol in every realm: `isPacerError` needs no list of subclass names.
    Object.defineProperty(PacerError.prototype, BRAND, { value: true });
  }
}

export interface RateLimitErrorOptions {
  /** The key the denied task was scheduled under. */
  readonly key?: string;
  /** Set when the rejection comes from `maxWaitMs`: the bound the projected wait exceeded. */
  readonly maxWaitMs?: number;
  /** Replaces the default message. */
  readonly message?: string;
  readonly cause?: unknown;
}

/**
 * A task was denied by the rate limit: in `mode: 'reject'` when no permit exists now, or in
 * `mode: 'queue'` when its projected wait exceeds `maxWaitMs` (then `maxWaitMs` is set and
 * `decision.retryAfterMs` is the projected wait, not the next permit of the key alone).
 *
 * One class for both: to a caller both say "not within your tolerance; try again in
 * `retryAfterMs`", and `decision.reason` tells a server block (`'blocked'`) from the local rate.
 */
export class RateLimitError extends PacerError {
  override readonly name = 'RateLimitError' as const;
  /** The denial: `reason`, `remaining`, `resetMs`, `limit` and `retryAfterMs`. */
  readonly decision: Decision;
  /** Whole ms after which the same task would be allowed if nothing else happened. */
  readonly retryAfterMs: number;
  readonly key: string | undefined;
  /** The `maxWaitMs` the projected wait exceeded; undefined for a reject-mode denial. */
  readonly maxWaitMs: number | undefined;

  constructor(decision: Decision, options: RateLimitErrorOptions = {}) {
    const { key, maxWaitMs, message, cause } = options;
    super(message ?? rateLimitMessage(decision, key, maxWaitMs), { cause });
    this.decision = decision;
    this.retryAfterMs = decision.retryAfterMs;
    this.key = key;
    this.maxWaitMs = maxWaitMs;
  }
}

function rateLimitMessage(
  decision: Decision,
  key: string | undefined,
  maxWaitMs: number | undefined,
): string {
  const of = forKey(key);
  const why = decision.reason === 'blocked' ? 'the server asked to wait' : decision.reason;
  if (maxWaitMs !== undefined) {
    return `[fetch-pacer] A task${of} would wait about ${decision.retryAfterMs} ms to start (${why}), more than \`maxWaitMs\` (${maxWaitMs}). Retry later, raise \`maxWaitMs\`, or lower the load.`;
  }
  return `[fetch-pacer] Rate limit reached${of} (${why ?? 'rate'}): retry in ${decision.retryAfterMs} ms, or use \`mode: 'queue'\` to wait for the permit.`;
}

/** ` for key 'k'`, to say which key in a message; nothing without one. */
function forKey(key: string | undefined): string {
  return key === undefined ? '' : ` for key '${key}'`;
}

export interface QueueFullErrorOptions {
  readonly key?: string;
  readonly cause?: unknown;
}

/** A task had to wait but `maxQueue` tasks were already waiting. It was not queued. */
export class QueueFullError extends PacerError {
  override readonly name = 'QueueFullError' as const;
  /** The bound that was reached. */
  readonly maxQueue: number;
  readonly key: string | undefined;

  constructor(maxQueue: number, options: QueueFullErrorOptions = {}) {
    const { key, cause } = options;
    super(
      `[fetch-pacer] The queue is full (\`maxQueue\`: ${maxQueue}): a task${forKey(key)} was not queued. Raise \`maxQueue\`, or produce tasks more slowly.`,
      { cause },
    );
    this.maxQueue = maxQueue;
    this.key = key;
  }
}

/** The pacer was disposed: its queued tasks and any later `schedule()` reject with this. */
export class PacerDisposedError extends PacerError {
  override readonly name = 'PacerDisposedError' as const;

  constructor(options: { readonly cause?: unknown } = {}) {
    super(
      '[fetch-pacer] The pacer was disposed: its queued tasks were rejected and it takes no new ones. Create a new pacer.',
      options,
    );
  }
}

const PACER_ERROR_NAMES: ReadonlySet<string> = new Set([
  'PacerError',
  'RateLimitError',
  'QueueFullError',
  'PacerDisposedError',
]);

/** `name` of an error-like value; errors from another realm fail `instanceof`, not this. */
function nameOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const name = (value as { name?: unknown }).name;
  return typeof name === 'string' ? name : undefined;
}

/**
 * True for any error of fetch-pacer, subclasses included, from this realm or another (an
 * iframe, a second copy of the package): by its brand, or by name for the pacer's own errors
 * (a structured clone keeps the name but loses the brand).
 */
export function isPacerError(value: unknown): value is PacerError {
  if (value instanceof PacerError) return true;
  if (typeof value !== 'object' || value === null) return false;
  return (
    (value as { [BRAND]?: unknown })[BRAND] === true || PACER_ERROR_NAMES.has(nameOf(value) ?? '')
  );
}

export function isRateLimitError(value: unknown): value is RateLimitError {
  return value instanceof RateLimitError || nameOf(value) === 'RateLimitError';
}

export function isQueueFullError(value: unknown): value is QueueFullError {
  return value instanceof QueueFullError || nameOf(value) === 'QueueFullError';
}

export function isPacerDisposedError(value: unknown): value is PacerDisposedError {
  return value instanceof PacerDisposedError || nameOf(value) === 'PacerDisposedError';
}
