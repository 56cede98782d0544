import type { ServerQuota, ServerSignal } from '../core/signal.js';
import { IncrementalSweep } from '../core/sweep.js';
import { assertKnownOptions, describe } from '../core/validate.js';
import type { Pacer } from '../pacer/types.js';
import type { ServerQuotaReport } from './ratelimit-headers.js';

/** What a paced fetch learns besides the server's count (`learn: true` is `{}`). */
export interface LearnOptions {
  /**
   * A key at rest (never heard from, or idle since) sends one request and waits for its answer
   * before the others go: a burst never reaches a server whose limit is unknown, at the price
   * of one round trip before the first burst. For a policy you are not sure of; in reject mode
   * the calls behind the probe are rejected.
   * @default false
   */
  readonly probe?: boolean;
  /**
   * A key never heard from (or idle since) starts as TCP does: one request in flight until the
   * first answer, one more per answer, halved by a refusal, until the server's headers or
   * refusals say its limit. A client configured too generously then meets no wall of refusals
   * in its first window, at the price of a few round trips before its first window is out.
   * Always on without `limits`; a paced fetch with its own `limits` and no store.
   * @default true
   */
  readonly slowStart?: boolean;
}

/** `learn` checked: whether to learn at all, and whether to probe. */
export function resolveLearn(learn: boolean | LearnOptions | undefined): {
  readonly learning: boolean;
  readonly probing: boolean;
  readonly slowStart: boolean;
} {
  if (learn === undefined || typeof learn === 'boolean') {
    return { learning: learn !== false, probing: false, slowStart: learn !== false };
  }
  const isObject = typeof learn === 'object' && learn !== null && !Array.isArray(learn);
  if (isObject) assertKnownOptions('`learn`', learn, ['probe', 'slowStart']);
  const probe = isObject ? learn.probe : 'not an object';
  const slowStart = isObject ? learn.slowStart : undefined;
  if (
    (probe === undefined || typeof probe === 'boolean') &&
    (slowStart === undefined || typeof slowStart === 'boolean')
  ) {
    return { learning: true, probing: probe === true, slowStart: slowStart !== false };
  }
  throw new TypeError(
    `[fetch-pacer] Expected \`learn\` to be a boolean or \`{ probe?: boolean, slowStart?: boolean }\`, got ${describe(learn)}`,
  );
}

/**
 * How long a probe holds an unknown key to one request while it waits for the server's first
 * answer (ms). A lost answer (a network error) so costs at most this; a slower one lets one more
 * request through per `PROBE_MS`.
 */
export const PROBE_MS = 1_000;

/** One request per `PROBE_MS`: what a key may send until its server has answered once. */
const PROBE: ServerSignal = Object.freeze({ kind: 'probe', limit: 1, windowMs: PROBE_MS });

export const ANSWERED: ServerSignal = Object.freeze({ kind: 'answered' });

/** Zero configuration: a key never heard from starts slow (see `SlowStart`). */
export const START: ServerSignal = Object.freeze({ kind: 'start' });

const REFUSAL: ServerSignal = Object.freeze({ kind: 'refusal' });

/** A probe without an answer after this long is forgotten by the prober (ms). */
const PROBE_FORGOTTEN_MS = 10 * PROBE_MS;

/**
 * The RateLimit headers of an answer as a signal: an advertised policy (`limit` per `windowMs`)
 * when the server sent one and the paced fetch learns, else its count alone.
 */
export function signalOf(
  quota: ServerQuota,
  learning: boolean,
  sentAt: number | undefined,
): ServerSignal {
  const { remaining, resetMs, resetAtMostMs, resetFromArrival, limit, windowMs, inferred, bucket } =
    quota;
  if (learning && limit !== undefined && windowMs !== undefined) {
    return {
      kind: 'policy',
      limit,
      windowMs,
      remaining,
      resetMs,
      resetFromArrival,
      inferred,
      bucket,
      sentAt,
    };
  }
  return learning && limit !== undefined
    ? { kind: 'quota', remaining, resetMs, resetAtMostMs, resetFromArrival, limit, sentAt }
    : { kind: 'quota', remaining, resetMs, sentAt };
}

/**
 * The probes of one pacer's keys (`learn: { probe: true }`): a key at rest (unknown, or idle
 * long enough to have forgotten) first sends one request and waits for its answer, so a burst
 * never reaches a server whose limit is unknown. One per pacer, shared by every paced fetch on
 * it; a probe whose answer never came (a network error) is dropped after a while.
 */
export class Prober {
  /** Keys probed and not answered yet: pacer time the probe was set. */
  private readonly probing = new Map<string, number>();
  private readonly sweep = new IncrementalSweep(
    this.probing,
    (since: number, now) => now - since > PROBE_FORGOTTEN_MS,
  );

  constructor(private readonly pacer: Pacer) {}

  /** Before a call of `key` is queued: a key at rest is probed. */
  calling(key: string): void {
    if (this.probing.has(key)) return;
    const { level, capacity, queued, blockedUntil } = this.pacer.inspect(key);
    // Busy: requests of it are out, waiting, or held by the server; its answers teach it.
    if (level < capacity || queued > 0 || blockedUntil !== undefined) return;
    const now = this.pacer.now();
    this.sweep.step(now);
    this.probing.set(key, now);
    this.pacer.observe(key, PROBE);
  }

  /** An answer of `key` came: true if it was probed (and is not any more). */
  answered(key: string): boolean {
    return this.probing.delete(key);
  }
}

const probers = new WeakMap<Pacer, Prober>();

/**
 * What a paced fetch tells its pacer of an answer of `key`: its RateLimit headers (`quota`, if
 * read and usable) as a signal, and with `learning` a refusal without any header or Retry-After
 * (`refused`: the server said only "too fast", AIMD) and the end of a probe. (A refusal with a
 * Retry-After says when to come back, which the key's block does.) `sentAt`: pacer time the
 * request was sent (see `QuotaSignal.sentAt`). Returns nothing, for `return reportAnswer(...)`.
 */
export function reportAnswer(
  pacer: Pacer,
  key: string,
  quota: ServerQuotaReport | undefined,
  refused: boolean,
  learning: boolean,
  sentAt?: number,
): undefined {
  if (!learning) {
    if (quota !== undefined) pacer.observe(key, signalOf(quota, false, sentAt));
    return;
  }
  const probed = probers.get(pacer)?.answered(key) === true;
  if (quota !== undefined) {
    const signal = signalOf(quota, true, sentAt);
    pacer.observe(key, signal);
    // An advertised policy replaces the probe (and any learned rate).
    if (signal.kind === 'policy') return;
  }
  if (probed) pacer.observe(key, ANSWERED);
  if (refused && quota === undefined) pacer.observe(key, REFUSAL);
}

/** An answer of `key` came, a refusal: a probe of it ends (the refusal itself is told apart). */
export function endProbe(pacer: Pacer, key: string): void {
  if (probers.get(pacer)?.answered(key) === true) pacer.observe(key, ANSWERED);
}

/** The prober of `pacer`, made on first use. */
export function proberOf(pacer: Pacer): Prober {
  let prober = probers.get(pacer);
  if (prober === undefined) {
    prober = new Prober(pacer);
    probers.set(pacer, prober);
  }
  return prober;
}
