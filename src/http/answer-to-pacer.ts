/**
 * The one place a server's answer becomes pacing, on today's seam: `pacer.observe(key, quota)`
 * (through the adapter, for learning) and `pacer.blockUntil`. The typed signal of the redesign
 * replaces this file, not the readers. Caps live here, at the boundary: whatever a server
 * claims, the core is told a bounded policy.
 */
import type { ServerQuota } from '../core/limiter.js';
import type { Pacer } from '../pacer/types.js';
import { endProbe, reportAnswer, signalOf } from './probes.js';
import type { ServerQuotaReport } from './ratelimit-headers.js';
import type { Refusal } from './retry-policy.js';
import type { ServerAnswer } from './server-answer.js';

/**
 * Most permits per window a learned policy is told: the core's learned sliding log keeps one
 * entry per permit (`q=1e8` was 800 MB, `q=999999999999999` a RangeError). A bigger policy is
 * told at the same rate over a proportionally shorter window (80 kB per key at most).
 */
export const MAX_LEARNED_LIMIT = 10_000;

/** What `applyServerAnswer` needs besides the answer. */
export interface ApplyOptions {
  /** Adopt advertised policies and AIMD (`learn`), or only lower credit. */
  readonly learning: boolean;
  /** Pacer time the request was sent (the task's start). */
  readonly sentAt?: number;
  /** Sends of the same call before this one (`RefusalSignal.attempt`). */
  readonly attempt?: number;
  /**
   * The pacer is the paced fetch's own (not a shared one): a rate AIMD learned in its limiter
   * paces the key (with a store too, which it is asked after, see `StorePermits`), so a bare
   * "too fast" under it is the pacer's to explain.
   */
  readonly pacesRefusals?: boolean;
  /**
   * The pacer's store learns the rate of bare refusals for every client and paces the key by it
   * (`Store.pacesRefusals`): a bare "too fast" is the store's to explain, from its first.
   */
  readonly storePaces?: boolean;
  /**
   * The wait the key was already blocked for when the answer's headers were read (the paced
   * fetch blocks a stated wait in the request's task): the same refusal is not blocked again,
   * which a store would be asked for once more (a round trip to Redis) for a block a few ms
   * longer, counted from when the body was read rather than when the answer came.
   */
  readonly blockedMs?: number | undefined;
}

/**
 * Tells the pacer what the answer of a request of `key` means: its quota (capped, resets
 * rounded to the second read as bounds, see `quotaForCore`), a refusal's block until its wait,
 * and a bare refusal (no wait, no quota) for AIMD. Returns the refusal as the key now waits for
 * it: a bare "too fast" that the key's learned AIMD rate paces (`pacesRefusals`; its pauses and
 * probes, see `AIMD`) is the pacer's to explain, so its retry waits for that rate, not a backoff,
 * and spends no retry (`maxAttempts` still bounds it).
 */
export function applyServerAnswer(
  pacer: Pacer,
  key: string,
  answer: ServerAnswer | undefined,
  refusal: Refusal | undefined,
  options: ApplyOptions,
): Refusal | undefined {
  const report = answer?.quota;
  const roundTripMs = options.sentAt === undefined ? 0 : pacer.now() - options.sentAt;
  const quota =
    report === undefined ? undefined : quotaForCore(report, refusal !== undefined, roundTripMs);
  const teaches = quota?.limit !== undefined && quota.windowMs !== undefined;
  if (refusal !== undefined && !teaches && options.learning) {
    // A refusal says "too fast" even when it says when to come back, and a quota without a
    // policy does not say how fast is right: the count lowers credit, and the refusal teaches
    // the key a rate (the requests admitted before it over the time until its wait ends; AIMD
    // without a wait), so the queue does not flood back after each block.
    // A wait the server stated is its own word on when it counts afresh: the refusal's count
    // (nothing left) and reset (a whole Unix second, up to a second later) would only hold the
    // key longer than it asked (rate-limiter-flexible: 1.3 s past a Retry-After of 0.05).
    if (quota !== undefined && !refusal.explained) {
      pacer.observe(key, signalOf(quota, false, options.sentAt));
    }
    endProbe(pacer, key);
    // Without a wait, AIMD; zero configuration's first rate is the sample's (see `refused`).
    const { sentAt, attempt } = options;
    pacer.observe(
      key,
      refusal.explained
        ? { kind: 'refusal', retryAfterMs: refusal.waitMs, sentAt }
        : { kind: 'refusal', sentAt, attempt },
    );
    if (
      !refusal.explained &&
      refusal.tooFast &&
      options.pacesRefusals === true &&
      (options.storePaces === true || pacedByAimd(pacer, key))
    ) {
      return { ...refusal, waitMs: 0, explained: true };
    }
  } else {
    reportAnswer(
      pacer,
      key,
      quota as ServerQuotaReport | undefined,
      refusal !== undefined,
      options.learning,
      options.sentAt,
    );
    // Each admitted request: a sample of the rate the next refusal teaches, and zero
    // configuration's slow start grows by one.
    if (options.learning && refusal === undefined && !teaches) {
      pacer.observe(key, { kind: 'answered', sentAt: options.sentAt });
    }
  }
  // The whole key waits, so calls queued behind this one do not earn the same refusal.
  if (refusal !== undefined && refusal.waitMs !== options.blockedMs) {
    pacer.blockUntil(key, pacer.now() + refusal.waitMs);
  }
  return refusal;
}

/**
 * Whether `key` is paced by a rate AIMD learned: one permit per window, taught by refusals (a
 * rate taught by a Retry-After counts its sample's permits per window, not one).
 */
function pacedByAimd(pacer: Pacer, key: string): boolean {
  const learned = pacer.inspect(key).learned;
  return learned?.source === 'rate' && learned.limit === 1;
}

/**
 * A report as the core should take it today:
 *
 * - a limit without a window learns one when a single answer tells it (see `windowOf`), said
 *   to be `inferred`;
 * - a policy beyond `MAX_LEARNED_LIMIT` permits keeps its rate on a shorter window, and one
 *   whose window would be under 1 ms is no limit worth learning (dropped);
 * - `resetFull` (a bucket: OpenAI, Anthropic): with nothing left the next permit comes after
 *   `resetMs / limit`, not when the bucket is full again;
 * - a reset known to the second or coarser, within two of its units, with nothing left and no
 *   window known, is read as its earliest: one unit sooner (a whole-second Unix reset on a 1 s
 *   window otherwise holds every window up to a second long, 1.84x the ideal time). Not on a
 *   refusal, which proves the window had not ended: its wait is the upper bound.
 */
export function quotaForCore(
  report: ServerQuotaReport,
  refused: boolean,
  roundTripMs = 0,
): ServerQuota {
  const { remaining, limit, resetFull, resetPrecisionMs = 1000 } = report;
  let { resetMs } = report;
  let resetAtMostMs: number | undefined;
  const windowMs = report.windowMs ?? windowOf(report, resetPrecisionMs, roundTripMs);
  const policy =
    limit !== undefined && windowMs !== undefined ? cappedPolicy(limit, windowMs) : undefined;
  if (remaining === 0 && resetMs !== undefined) {
    if (resetFull === true) resetMs = Math.ceil(resetMs / Math.max(1, limit ?? 1));
    else if (
      !refused &&
      policy === undefined &&
      resetPrecisionMs > 1 &&
      resetMs <= 2 * resetPrecisionMs
    ) {
      resetAtMostMs = resetMs;
      resetMs = Math.max(0, resetMs - resetPrecisionMs);
    }
  }
  return {
    remaining,
    ...(resetMs === undefined || resetMs === 0 ? {} : { resetMs }),
    resetAtMostMs,
    ...(policy !== undefined && report.windowMs === undefined ? { inferred: true } : {}),
    ...(policy !== undefined && report.bucket === true ? { bucket: true } : {}),
    ...(report.resetFromArrival === true ? { resetFromArrival: true } : {}),
    // A limit without a window (or with one too short to learn) changes nothing in the core.
    ...(policy ??
      (limit === undefined || windowMs !== undefined
        ? {}
        : { limit: Math.min(limit, MAX_LEARNED_LIMIT) })),
  };
}

/**
 * The window of a limit whose headers do not say it, when one answer tells it to within 10%:
 * for a bucket (`resetFull`), the time to refill the whole limit (`resetMs` per permit used);
 * for a window, the reset of the answer that opened it (`remaining = limit - 1`), rounded up to
 * its precision so the learned window is never shorter than the server's. A reset under ten of
 * its units is learned only as a whole count of them: a delta in whole seconds, which servers
 * round up (fastify's `x-ratelimit-reset: 1`, express-rate-limit's draft-6), so the window is at
 * most that. An absolute reset (Unix seconds) read against the clock falls anywhere in the
 * second after the window's end (rounded up, a 1 s window would be learned as 2 s): the window
 * is the shortest whole second the reset and the request's round trip allow (see below).
 */
function windowOf(
  report: ServerQuotaReport,
  precisionMs: number,
  roundTripMs: number,
): number | undefined {
  const { remaining, limit, resetMs, resetFull } = report;
  if (limit === undefined || resetMs === undefined || remaining >= limit) return undefined;
  const precise = resetMs >= 10 * precisionMs || resetMs % precisionMs === 0;
  if (resetFull === true) return precise ? (resetMs * limit) / (limit - remaining) : undefined;
  if (remaining !== limit - 1) return undefined;
  if (precise) return wholeSecondAbove(Math.ceil(resetMs / precisionMs) * precisionMs);
  // An absolute reset (Unix seconds) is the window's end rounded up to its second, read here
  // less the way back: the window is a whole number of seconds (as servers set them) in
  // (resetMs - precision, resetMs + the round trip], the shortest of them. Left unread,
  // express-rate-limit's default headers held a 10x generous client to 0.79x of the rate: it
  // waited for each reset read as its earliest, and a refusal a second long. A second one fits
  // only when the request arrived within the way there of a whole second: learned too short
  // then, the next window's opening answer learns it again. The longer taken, three processes
  // on one store ran at 0.72-0.91x (a window learned twice too long); neither, a lone client
  // against a simulated sliding log (10x generous, seed 7) ran at 0.78x with a late refusal.
  const whole = Math.max(precisionMs, Math.floor(resetMs / precisionMs) * precisionMs);
  return whole <= resetMs + roundTripMs ? whole : undefined;
}

/**
 * A fixed window read from the reset of the answer that opened it is short of the server's by
 * the time that answer took to be read (koa-ratelimit's 1 s read as 991 ms when the client was
 * busy at its first answer, and 60 per 991 ms put a 61st request in a window now and then).
 * Servers set whole seconds: a window within a tenth under one is taken to be it. Rounding up
 * only ever paces slower.
 */
function wholeSecondAbove(windowMs: number): number {
  const whole = Math.ceil(windowMs / 1000) * 1000;
  return whole <= windowMs * 1.1 ? whole : windowMs;
}

function cappedPolicy(
  limit: number,
  windowMs: number,
): { limit: number; windowMs: number } | undefined {
  if (limit <= MAX_LEARNED_LIMIT) return { limit, windowMs };
  const scaled = (windowMs * MAX_LEARNED_LIMIT) / limit;
  return scaled >= 1 ? { limit: MAX_LEARNED_LIMIT, windowMs: scaled } : undefined;
}
