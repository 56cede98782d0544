import { describe } from './validate.js';

/**
 * The longest wait anything a server says can impose, in ms: 2^31 - 1 (about 24.8 days), the
 * longest `setTimeout` honours. A block or a learned window beyond it is cut to it, so
 * `w=999999999999` cannot hold a key for 31,000 years.
 */
export const MAX_DELAY_MS = 2_147_483_647;

/** The server's count for a key (`RateLimit-Remaining`/`-Reset`, `X-RateLimit-*`). */
export interface QuotaSignal {
  readonly kind: 'quota';
  /**
   * Permits the server says are left: lowers local credit to at most this, never raises it. With
   * `limit` and `sentAt`, room for an arrival-safe policy of that limit (`Strategy.heardRoom`).
   */
  readonly remaining: number;
  /** ms until the server's quota resets; with `remaining: 0` the key is blocked that long. */
  readonly resetMs?: number | undefined;
  /**
   * The latest the quota may reset, in ms, when `resetMs` is the earliest reading of a rounded
   * reset (a whole-second `1` resets anywhere in (0, 1000]; read as 0, `resetMs` is left out):
   * a count of the limit the key counts arrival-safe that resets within the key's window is no
   * count that outlasts it (see `learning.ts`).
   */
  readonly resetAtMostMs?: number | undefined;
  /**
   * `resetMs` is a delay the server counted from the request's arrival (`X-RateLimit-Reset-After:
   * 0.083`), not an instant by its clock read against ours (a Unix reset): the time from the
   * arrival to the reset is exactly it. @default false
   */
  readonly resetFromArrival?: boolean | undefined;
  /**
   * The server's limit, when it names one but not its window (`X-RateLimit-Limit: 60`): a rate
   * that a refusal teaches is then learned as that many per window, so the server's later
   * counts are read against a window of its size. Ignored unless a positive integer.
   */
  readonly limit?: number | undefined;
  /** The unit counted (`'tokens'`), for a key with limits per unit. @default its main unit */
  readonly unit?: string | undefined;
  /**
   * Ticker time the answered request was sent. A slow start believes the count of the request
   * sent last over earlier ones, even when it is higher (the server's window reset); without
   * it a count only lowers what the slow start allows.
   */
  readonly sentAt?: number | undefined;
}

/**
 * A policy the server advertised (`RateLimit-Policy: "p";q=20;w=1`): `limit` per `windowMs`,
 * which the key adopts as a learned policy (the tighter of its own and the learned one wins),
 * with the server's count when the answer carried one.
 */
export interface PolicySignal {
  readonly kind: 'policy';
  readonly limit: number;
  readonly windowMs: number;
  readonly remaining?: number | undefined;
  readonly resetMs?: number | undefined;
  /** See `QuotaSignal.resetFromArrival`. */
  readonly resetFromArrival?: boolean | undefined;
  /** The unit of the policy (`'tokens'`), for a key with limits per unit. @default its main unit */
  readonly unit?: string | undefined;
  /**
   * The server counts with a token bucket refilled continuously (OpenAI's and Anthropic's
   * tokens): the key learns one, its count read as a bucket's (in a pacer, counted as a GCRA of
   * that burst counts at arrival, up to `MAX_LOGGED` permits; O(1) memory beyond). Else an
   * exact window.
   */
  readonly bucket?: boolean | undefined;
  /**
   * The window was inferred from a reset, not stated: a key whose own policy has the same
   * limit keeps its own window (a sliding server's reset is when it is empty again, up to two
   * windows: such a guess halved a correctly configured client's throughput).
   */
  readonly inferred?: boolean | undefined;
  /** Ticker time the answered request was sent (a bucket's refill is read from it). */
  readonly sentAt?: number | undefined;
}

/**
 * The server refused a request (429, 503). With `retryAfterMs` (Retry-After) the key is blocked
 * that long; without it the server said only "too fast", which teaches a rate (AIMD).
 */
export interface RefusalSignal {
  readonly kind: 'refusal';
  readonly retryAfterMs?: number | undefined;
  /** Ticker time the refused request was sent: one sent before the last refusal is an echo. @default now */
  readonly sentAt?: number | undefined;
  /**
   * Sends of the same call before this one (0 for its first). A call refused a third time while
   * the server admits the key's others is no jitter, however far apart its refusals came: a
   * bare refusal then teaches a rate, as three in a row do. @default 0
   */
  readonly attempt?: number | undefined;
}

/**
 * The client probes a key it knows nothing of: until the server answers, hold the key to
 * `limit` per `windowMs` (a key that learned a policy already keeps it). Any answer with a
 * policy replaces the probe; one without (`answered`) ends it.
 */
export interface ProbeSignal {
  readonly kind: 'probe';
  readonly limit: number;
  readonly windowMs: number;
}

/**
 * A call of `key` is coming: a key new or at rest is held to one request in flight and one more
 * per answer (slow start), until the server's word teaches a policy or confirms the key's own.
 * Ignored by a key heard from already.
 */
export interface StartSignal {
  readonly kind: 'start';
}

/** The server answered without a word of its limit: a probe of the key is over. */
export interface AnsweredSignal {
  readonly kind: 'answered';
  /**
   * Ticker time the answered request was sent: a refusal's rate is measured from the first
   * request admitted since the one before (its arrival lies after it). @default now
   */
  readonly sentAt?: number | undefined;
}

/**
 * What the server said of a key, as the paced fetch reads it from a response: the one typed
 * value that goes from HTTP to the permit source (`pacer.observe(key, signal)`), unchanged
 * through a shared store, so what one process learns can be shared.
 */
export type ServerSignal =
  | QuotaSignal
  | PolicySignal
  | RefusalSignal
  | ProbeSignal
  | StartSignal
  | AnsweredSignal;

/**
 * What RateLimit headers say of a key, before it is a signal (see `signalOf` in http/adapt.ts):
 * the count, and the policy when the server advertised one.
 */
export interface ServerQuota {
  /** Permits the server says are left. */
  readonly remaining: number;
  /** ms until the server's quota resets. */
  readonly resetMs?: number;
  /** The latest it may reset, when `resetMs` is the earliest reading (see `QuotaSignal`). */
  readonly resetAtMostMs?: number | undefined;
  /** The server's limit per `windowMs` (alone, without `windowMs`, it says nothing of a rate). */
  readonly limit?: number;
  /** The server's window in ms (`RateLimit-Policy: "p";q=20;w=1` is 1000), with `limit`. */
  readonly windowMs?: number;
  /** `windowMs` was inferred from a reset, not stated (see `PolicySignal.inferred`). */
  readonly inferred?: boolean;
  /** See `QuotaSignal.resetFromArrival`. */
  readonly resetFromArrival?: boolean;
  /**
   * The server counts a token bucket of `limit` refilled over `windowMs` (see
   * `PolicySignal.bucket`), not a window.
   */
  readonly bucket?: boolean;
}

const KINDS: ReadonlySet<string> = new Set([
  'quota',
  'policy',
  'refusal',
  'probe',
  'start',
  'answered',
]);

/**
 * Checks the parts of a signal a caller controls: its `kind` and a `remaining` count. A policy
 * that is no policy (a limit of 0, a window of NaN) is ignored where it is read, not thrown:
 * headers are the server's, and a hostile one must not break a fetch.
 */
export function assertSignal(signal: unknown): asserts signal is ServerSignal {
  const kind = (signal as { kind?: unknown } | null)?.kind;
  if (typeof kind !== 'string' || !KINDS.has(kind)) {
    throw new TypeError(
      `[fetch-pacer] Expected a server signal such as \`{ kind: 'quota', remaining }\`, got ${describe(signal)}`,
    );
  }
  const { remaining, unit } = signal as { remaining?: unknown; unit?: unknown };
  if (unit !== undefined && typeof unit !== 'string') {
    throw new TypeError(`[fetch-pacer] Expected \`unit\` to be a string, got ${describe(unit)}`);
  }
  if ((kind === 'quota' || remaining !== undefined) && !isCount(remaining)) {
    throw new RangeError(
      `[fetch-pacer] Expected \`remaining\` to be an integer >= 0, got ${describe(remaining)}`,
    );
  }
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** A delay the server asked for, in ms: cut to [0, MAX_DELAY_MS]; undefined if not a number. */
export function serverDelay(ms: number | undefined): number | undefined {
  if (typeof ms !== 'number' || Number.isNaN(ms)) return undefined;
  return ms < 0 ? 0 : ms > MAX_DELAY_MS ? MAX_DELAY_MS : ms;
}
